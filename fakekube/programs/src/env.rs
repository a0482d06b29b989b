//! Programs that show or change what a process runs with: `env`, `printenv`, `pwd`.

use super::cli::{emit, usage};
use fakekube_runtime::process::Process;

/// `pwd`.
pub(crate) async fn pwd(proc: Process) -> i32 {
    match emit(&proc, format!("{}\n", proc.cwd)).await {
        Ok(()) => 0,
        Err(code) => code,
    }
}

/// `env [-i] [-u NAME] [-C DIR] [NAME=VALUE…] [command [arg…]]`.
pub(crate) async fn env(proc: Process) -> i32 {
    let args = proc.args().to_vec();
    let mut env = proc.env.clone();
    let mut cwd = proc.cwd.clone();
    let mut i = 0;
    while let Some(a) = args.get(i) {
        match a.as_str() {
            "-i" | "-" | "--ignore-environment" => env.clear(),
            "-u" | "--unset" => {
                i += 1;
                let Some(name) = args.get(i) else {
                    return usage(&proc, "option requires an argument -- 'u'", 125).await;
                };
                env.retain(|(k, _)| k != name);
            }
            "-C" | "--chdir" => {
                i += 1;
                let Some(dir) = args.get(i) else {
                    return usage(&proc, "option requires an argument -- 'C'", 125).await;
                };
                cwd = fakekube_runtime::fs::join(&cwd, dir);
            }
            "--" => {
                i += 1;
                break;
            }
            s if s.starts_with("-u") && s.len() > 2 => env.retain(|(k, _)| k != &s[2..]),
            s if s.starts_with('-') && s.len() > 1 => {
                return usage(&proc, &format!("invalid option -- '{}'", &s[1..2]), 125).await;
            }
            _ => break,
        }
        i += 1;
    }
    while let Some((k, v)) = args.get(i).and_then(|a| a.split_once('=')) {
        env.retain(|(ek, _)| ek != k);
        env.push((k.to_string(), v.to_string()));
        i += 1;
    }
    if i >= args.len() {
        let out: String = env.iter().map(|(k, v)| format!("{k}={v}\n")).collect();
        return match emit(&proc, out).await {
            Ok(()) => 0,
            Err(code) => code,
        };
    }
    let mut child = proc.child(args[i..].to_vec());
    child.env = env;
    child.cwd = cwd;
    child.spawn_as("env: ").await
}

/// `printenv [NAME…]`.
pub(crate) async fn printenv(proc: Process) -> i32 {
    let mut status = 0;
    let out: String = if proc.args().is_empty() {
        proc.env.iter().map(|(k, v)| format!("{k}={v}\n")).collect()
    } else {
        let mut s = String::new();
        for name in proc.args() {
            match proc.var(name) {
                Some(v) => {
                    s.push_str(v);
                    s.push('\n');
                }
                None => status = 1,
            }
        }
        s
    };
    match emit(&proc, out).await {
        Ok(()) => status,
        Err(code) => code,
    }
}
