//! `conformance compare A.json B.json`: two runs' JSON reports (`--json`, or the live run's
//! `SANDBOX_CONFORMANCE_JSON` and `LIVE_CHECKS_JSON`) compared trial by trial: a table of the
//! trials whose outcome differs, or is missing from one run, then the counts. Exit status 0
//! when every trial has the same outcome in both, 1 when some differ, 2 when a report cannot
//! be read.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;
use std::process::ExitCode;

use serde_json::Value;

/// The usage line of the subcommand.
pub(crate) const USAGE: &str = "conformance compare A.json B.json";

/// One trial's verdict: its outcome, and the message or reason that came with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Verdict {
    /// `passed`, `failed` or `skipped`.
    pub(crate) outcome: String,
    /// The failure message or skip reason, if any.
    pub(crate) why: Option<String>,
}

/// Runs the subcommand on its arguments (after `compare`).
pub(crate) fn main(args: &[String]) -> ExitCode {
    let [a, b] = args else {
        eprintln!("conformance: usage: {USAGE}");
        return ExitCode::from(2);
    };
    let (left, right) = match (read(Path::new(a)), read(Path::new(b))) {
        (Ok(l), Ok(r)) => (l, r),
        (Err(e), _) | (_, Err(e)) => {
            eprintln!("conformance compare: {e}");
            return ExitCode::from(2);
        }
    };
    let (text, same) = table(a, &left, b, &right);
    print!("{text}");
    if same {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// The trials of a report, by name, in the report's order.
fn read(path: &Path) -> Result<Vec<(String, Verdict)>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let report: Value =
        serde_json::from_str(&text).map_err(|e| format!("{}: not JSON: {e}", path.display()))?;
    verdicts(&report).ok_or_else(|| format!("{}: has no `trials` list", path.display()))
}

/// The trials of a report's JSON.
pub(crate) fn verdicts(report: &Value) -> Option<Vec<(String, Verdict)>> {
    let trials = report.get("trials")?.as_array()?;
    Some(
        trials
            .iter()
            .filter_map(|t| {
                let text = |key: &str| t.get(key).and_then(Value::as_str).map(str::to_owned);
                Some((
                    text("name")?,
                    Verdict {
                        outcome: text("outcome")?,
                        why: text("message").or_else(|| text("reason")),
                    },
                ))
            })
            .collect(),
    )
}

/// The table of differing trials and the closing line; true when none differs.
pub(crate) fn table(
    a: &str,
    left: &[(String, Verdict)],
    b: &str,
    right: &[(String, Verdict)],
) -> (String, bool) {
    let right_by_name: BTreeMap<&str, &Verdict> =
        right.iter().map(|(n, v)| (n.as_str(), v)).collect();
    let left_names: BTreeMap<&str, ()> = left.iter().map(|(n, _)| (n.as_str(), ())).collect();
    let mut rows: Vec<(&str, String, String)> = Vec::new();
    for (name, l) in left {
        match right_by_name.get(name.as_str()) {
            Some(r) if r.outcome == l.outcome => {}
            Some(r) => rows.push((name, cell(Some(l)), cell(Some(r)))),
            None => rows.push((name, cell(Some(l)), cell(None))),
        }
    }
    for (name, r) in right {
        if !left_names.contains_key(name.as_str()) {
            rows.push((name, cell(None), cell(Some(r))));
        }
    }
    let mut out = format!("compare: A = {a}\n         B = {b}\n");
    if rows.is_empty() {
        let count = |o: &str| left.iter().filter(|(_, v)| v.outcome == o).count();
        let _ = writeln!(
            out,
            "same verdicts: {} trials, {} passed, {} failed, {} skipped in both",
            left.len(),
            count("passed"),
            count("failed"),
            count("skipped")
        );
        return (out, true);
    }
    let width = rows
        .iter()
        .map(|(n, _, _)| n.chars().count())
        .max()
        .unwrap_or(0)
        .max("trial".len());
    let a_width = rows
        .iter()
        .map(|(_, l, _)| l.chars().count())
        .max()
        .unwrap_or(0)
        .max(1);
    let _ = writeln!(out, "{:<width$} | {:<a_width$} | B", "trial", "A");
    let _ = writeln!(
        out,
        "{}-+-{}-+-{}",
        "-".repeat(width),
        "-".repeat(a_width),
        "-".repeat(20)
    );
    for (name, l, r) in &rows {
        let _ = writeln!(out, "{name:<width$} | {l:<a_width$} | {r}");
    }
    let only_right = right
        .iter()
        .filter(|(n, _)| !left_names.contains_key(n.as_str()))
        .count();
    let _ = writeln!(
        out,
        "verdicts differ: {} of {} trials",
        rows.len(),
        left.len() + only_right
    );
    (out, false)
}

/// A verdict in a table cell: the outcome, and the first line of why, cut short.
fn cell(verdict: Option<&Verdict>) -> String {
    let Some(v) = verdict else {
        return "(absent)".to_owned();
    };
    match &v.why {
        Some(why) if v.outcome != "passed" => {
            let line: String = why.lines().next().unwrap_or("").chars().take(60).collect();
            format!("{}: {line}", v.outcome)
        }
        _ => v.outcome.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn report(trials: Value) -> Vec<(String, Verdict)> {
        verdicts(&json!({ "trials": trials })).unwrap()
    }

    #[test]
    fn identical_outcomes_are_the_same_verdicts_whatever_the_messages() {
        let a = report(json!([{"name": "x", "outcome": "passed"},
            {"name": "y", "outcome": "skipped", "reason": "not declared"}]));
        let b = report(
            json!([{"name": "y", "outcome": "skipped", "reason": "other words"},
            {"name": "x", "outcome": "passed", "duration_ms": 3}]),
        );
        let (text, same) = table("a.json", &a, "b.json", &b);
        assert!(same, "{text}");
        assert!(text.contains("same verdicts: 2 trials, 1 passed, 0 failed, 1 skipped in both"));
    }

    #[test]
    fn a_changed_outcome_and_a_missing_trial_are_rows_of_the_table() {
        let a = report(json!([{"name": "exec::a", "outcome": "passed"},
            {"name": "exec::gone", "outcome": "passed"}]));
        let b = report(
            json!([{"name": "exec::a", "outcome": "failed", "message": "exit 1\nmore"},
            {"name": "exec::new", "outcome": "skipped", "reason": "r"}]),
        );
        let (text, same) = table("a.json", &a, "b.json", &b);
        assert!(!same);
        let rows: Vec<&str> = text.lines().collect();
        assert!(
            rows[4].starts_with("exec::a ") && rows[4].ends_with("| failed: exit 1"),
            "{text}"
        );
        assert!(
            rows[5].contains("exec::gone") && rows[5].ends_with("| (absent)"),
            "{text}"
        );
        assert!(
            rows[6].contains("(absent)") && rows[6].ends_with("| skipped: r"),
            "{text}"
        );
        assert!(
            text.ends_with("verdicts differ: 3 of 2 trials\n")
                || text.contains("verdicts differ: 3")
        );
    }

    #[test]
    fn a_report_without_trials_is_refused() {
        assert!(verdicts(&json!({"counts": {}})).is_none());
    }
}
