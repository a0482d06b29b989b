//! Programs that generate lines: `yes` and `seq`.

use bytes::Bytes;

use super::cli::{emit, usage};
use fakekube_runtime::io::CHUNK;
use fakekube_runtime::process::Process;

/// `yes [string…]`: repeats a line until the reader goes away.
pub(crate) async fn yes(proc: Process) -> i32 {
    let line = if proc.args().is_empty() {
        "y".to_string()
    } else {
        proc.args().join(" ")
    };
    let line = format!("{line}\n");
    let reps = (CHUNK / line.len().max(1)).max(1);
    let buf = Bytes::from(line.repeat(reps));
    loop {
        if let Err(code) = emit(&proc, buf.clone()).await {
            return code;
        }
    }
}

/// `seq [-s SEP] [-w] [FIRST [INCREMENT]] LAST`.
pub(crate) async fn seq(proc: Process) -> i32 {
    let mut sep = "\n".to_string();
    let mut equal_width = false;
    let mut nums = Vec::new();
    let args = proc.args().to_vec();
    let mut i = 0;
    while let Some(a) = args.get(i) {
        i += 1;
        match a.as_str() {
            "-s" => {
                sep = args.get(i).cloned().unwrap_or_default();
                i += 1;
            }
            "-w" => equal_width = true,
            s if s.starts_with("-s") => sep = s[2..].to_string(),
            s => nums.push(s.to_string()),
        }
    }
    let parsed: Vec<Option<f64>> = nums
        .iter()
        .map(|n| n.parse::<f64>().ok().filter(|v| v.is_finite()))
        .collect();
    if let Some(k) = parsed.iter().position(Option::is_none) {
        return usage(
            &proc,
            &format!("invalid floating point argument: '{}'", nums[k]),
            1,
        )
        .await;
    }
    let v: Vec<f64> = parsed.into_iter().flatten().collect();
    let (first, step, last) = match v.as_slice() {
        [l] => (1.0, 1.0, *l),
        [f, l] => (*f, 1.0, *l),
        [f, s, l] => (*f, *s, *l),
        [] => return usage(&proc, "missing operand", 1).await,
        _ => return usage(&proc, &format!("extra operand '{}'", nums[3]), 1).await,
    };
    if step == 0.0 {
        return usage(
            &proc,
            &format!("invalid Zero increment value: '{}'", nums[1]),
            1,
        )
        .await;
    }
    let decimals = nums
        .iter()
        .map(|n| n.split_once('.').map(|(_, d)| d.len()).unwrap_or(0))
        .max()
        .unwrap_or(0);
    let width = if equal_width {
        [first, last]
            .iter()
            .map(|x| format!("{x:.decimals$}").len())
            .max()
            .unwrap_or(0)
    } else {
        0
    };
    let mut out = String::new();
    let mut k: u64 = 0;
    loop {
        let x = first + step * k as f64;
        if (step > 0.0 && x > last + 1e-9) || (step < 0.0 && x < last - 1e-9) {
            break;
        }
        if k > 0 {
            out.push_str(&sep);
        }
        let text = format!("{x:.decimals$}");
        if equal_width && text.len() < width {
            out.push_str(&"0".repeat(width - text.len()));
        }
        out.push_str(&text);
        if out.len() >= CHUNK
            && let Err(code) = emit(&proc, std::mem::take(&mut out)).await
        {
            return code;
        }
        k += 1;
        if k == u64::MAX {
            break;
        }
    }
    if k > 0 {
        out.push('\n');
    }
    match emit(&proc, out).await {
        Ok(()) => 0,
        Err(code) => code,
    }
}
