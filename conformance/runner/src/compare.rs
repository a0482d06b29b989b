//! `conformance compare A.json B.json`: two runs' JSON reports (`--json`, or the live run's
//! `SANDBOX_CONFORMANCE_JSON` and `LIVE_CHECKS_JSON`) compared trial by trial: a table of the
//! trials whose outcome differs, or is missing from one run, then the counts. Exit status 0
//! when every trial has the same outcome in both, 1 when some differ, 2 when a report cannot
//! be read.
//!
//! With `--known FILE`, the differences the file lists are expected: each line names a trial
//! and, after whitespace, the written cause of its difference (`#` starts a comment). The run
//! then fails only on a difference the file does not list; a listed trial whose verdicts now
//! agree is reported as stale, so that the file can be trimmed, without failing.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;
use std::process::ExitCode;

use serde_json::Value;

/// The usage line of the subcommand.
pub(crate) const USAGE: &str = "conformance compare A.json B.json [--known FILE]";

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
    let (a, b, known) = match args {
        [a, b] => (a, b, None),
        [a, b, flag, file] if flag == "--known" => (a, b, Some(file)),
        _ => {
            eprintln!("conformance: usage: {USAGE}");
            return ExitCode::from(2);
        }
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
    let Some(file) = known else {
        return if same {
            ExitCode::SUCCESS
        } else {
            ExitCode::FAILURE
        };
    };
    let known = match std::fs::read_to_string(file) {
        Ok(text) => parse_known(&text),
        Err(e) => {
            eprintln!("conformance compare: {file}: {e}");
            return ExitCode::from(2);
        }
    };
    let (text, unexplained) = against_known(&differing(&left, &right), &known);
    print!("{text}");
    if unexplained {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

/// The known differences of a file: trial name and cause, in the file's order.
pub(crate) fn parse_known(text: &str) -> Vec<(String, String)> {
    text.lines()
        .map(|l| l.split_once('#').map_or(l, |(before, _)| before).trim())
        .filter(|l| !l.is_empty())
        .map(|l| match l.split_once(char::is_whitespace) {
            Some((name, cause)) => (name.to_owned(), cause.trim().to_owned()),
            None => (l.to_owned(), String::new()),
        })
        .collect()
}

/// The names of the trials whose verdicts differ (or that one run lacks).
fn differing(left: &[(String, Verdict)], right: &[(String, Verdict)]) -> Vec<String> {
    differences(left, right)
        .into_iter()
        .map(|(name, _, _)| name.to_owned())
        .collect()
}

/// The trials whose outcome differs, or that one run lacks, with both verdicts: the left
/// run's order, then the trials only the right run has.
fn differences<'a>(
    left: &'a [(String, Verdict)],
    right: &'a [(String, Verdict)],
) -> Vec<(&'a str, Option<&'a Verdict>, Option<&'a Verdict>)> {
    let right_by_name: BTreeMap<&str, &Verdict> =
        right.iter().map(|(n, v)| (n.as_str(), v)).collect();
    let left_names: BTreeMap<&str, ()> = left.iter().map(|(n, _)| (n.as_str(), ())).collect();
    let mut rows = Vec::new();
    for (name, l) in left {
        match right_by_name.get(name.as_str()) {
            Some(r) if r.outcome == l.outcome => {}
            r => rows.push((name.as_str(), Some(l), r.copied())),
        }
    }
    for (name, r) in right {
        if !left_names.contains_key(name.as_str()) {
            rows.push((name.as_str(), None, Some(r)));
        }
    }
    rows
}

/// The differences checked against the known ones: the report, and whether any difference is
/// not known (or known without a written cause).
pub(crate) fn against_known(differ: &[String], known: &[(String, String)]) -> (String, bool) {
    let cause = |name: &str| {
        known
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, c)| c.as_str())
    };
    let mut out = String::new();
    let mut unexplained = false;
    for name in differ {
        match cause(name) {
            Some(c) if !c.is_empty() => {
                let _ = writeln!(out, "known difference: {name}: {c}");
            }
            Some(_) => {
                unexplained = true;
                let _ = writeln!(out, "KNOWN WITHOUT A CAUSE: {name}: write why it differs");
            }
            None => {
                unexplained = true;
                let _ = writeln!(out, "NEW DIFFERENCE: {name}");
            }
        }
    }
    for (name, _) in known {
        if !differ.iter().any(|d| d == name) {
            let _ = writeln!(
                out,
                "stale: {name} no longer differs (remove it from the file)"
            );
        }
    }
    let new = differ
        .iter()
        .filter(|n| cause(n).is_none_or(str::is_empty))
        .count();
    let _ = writeln!(
        out,
        "{} differences: {} known, {} new",
        differ.len(),
        differ.len() - new,
        new
    );
    (out, unexplained)
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
    let diffs = differences(left, right);
    let only_right = diffs.iter().filter(|(_, l, _)| l.is_none()).count();
    let rows: Vec<(&str, String, String)> = diffs
        .into_iter()
        .map(|(name, l, r)| (name, cell(l), cell(r)))
        .collect();
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
    fn only_a_difference_the_known_file_does_not_explain_fails() {
        let known = parse_known(
            "# fake vs upstream\nwarm::a  upstream's controller adopts later # why\n\nwarm::gone  was fixed\nwarm::bare\n",
        );
        assert_eq!(
            known[0],
            (
                "warm::a".into(),
                "upstream's controller adopts later".into()
            )
        );
        assert_eq!(known[2], ("warm::bare".into(), String::new()));
        let (text, unexplained) = against_known(&["warm::a".into()], &known);
        assert!(!unexplained, "{text}");
        assert!(text.contains("known difference: warm::a: upstream's controller adopts later"));
        assert!(
            text.contains("stale: warm::gone no longer differs"),
            "{text}"
        );
        let (text, unexplained) = against_known(&["warm::a".into(), "exec::new".into()], &known);
        assert!(unexplained);
        assert!(text.contains("NEW DIFFERENCE: exec::new"), "{text}");
        assert!(text.ends_with("2 differences: 1 known, 1 new\n"), "{text}");
        let (text, unexplained) = against_known(&["warm::bare".into()], &known);
        assert!(
            unexplained,
            "a difference listed without a cause is not explained: {text}"
        );
    }

    #[test]
    fn differing_names_changed_and_one_sided_trials() {
        let a = report(json!([{"name": "x", "outcome": "passed"},
            {"name": "y", "outcome": "passed"}, {"name": "z", "outcome": "passed"}]));
        let b = report(json!([{"name": "x", "outcome": "failed"},
            {"name": "y", "outcome": "passed"}, {"name": "w", "outcome": "passed"}]));
        assert_eq!(differing(&a, &b), ["x", "z", "w"]);
    }

    #[test]
    fn a_report_without_trials_is_refused() {
        assert!(verdicts(&json!({"counts": {}})).is_none());
    }
}
