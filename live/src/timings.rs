//! The table of live checks printed at the end of a run: each check's outcome, how long it
//! took and what it noted.

use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How one check ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// It passed.
    Passed,
    /// It failed, with the message.
    Failed(String),
    /// It did not run, with the reason.
    Skipped(String),
    /// Under `LIVE_CHAOS=1`: it failed with a message quoting a contract code a fault
    /// explains (the message).
    Explained(String),
}

impl Outcome {
    /// The word the table prints.
    fn word(&self) -> &'static str {
        match self {
            Outcome::Passed => "passed",
            Outcome::Failed(_) => "FAILED",
            Outcome::Skipped(_) => "skipped",
            Outcome::Explained(_) => "explained",
        }
    }
}

/// One row of the table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Timing {
    /// Where the check comes in the run's order; the table is sorted by it.
    pub order: usize,
    /// The check's trial name.
    pub name: String,
    /// How it ended.
    pub outcome: Outcome,
    /// How long it took.
    pub took: Duration,
    /// What it measured or noted (a create's time, what was not checked here).
    pub note: Option<String>,
}

/// The rows recorded so far, shared by the trials of a run.
#[derive(Debug, Clone, Default)]
pub struct Timings(Arc<Mutex<Vec<Timing>>>);

impl Timings {
    /// Adds a row.
    pub fn record(&self, timing: Timing) {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(timing);
    }

    /// Returns the rows in the run's order (a skipped check is recorded before the run, but
    /// listed where it would have run).
    pub fn rows(&self) -> Vec<Timing> {
        let mut rows = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone();
        rows.sort_by_key(|row| row.order);
        rows
    }
}

/// Formats `rows` as a text table with a total line; notes and reasons are cut to one line.
pub fn table(rows: &[Timing]) -> String {
    let width = rows
        .iter()
        .map(|r| r.name.chars().count())
        .max()
        .unwrap_or(0)
        .max("live check".len());
    let mut out = format!(
        "{:<width$} | {:<7} | {:>8} | note\n{}-|-{}-|-{}-|-{}\n",
        "live check",
        "outcome",
        "seconds",
        "-".repeat(width),
        "-".repeat(7),
        "-".repeat(8),
        "-".repeat(4),
    );
    let mut total = Duration::ZERO;
    for row in rows {
        total += row.took;
        let note = match (&row.outcome, &row.note) {
            (
                Outcome::Failed(message) | Outcome::Skipped(message) | Outcome::Explained(message),
                _,
            ) => Some(message.as_str()),
            (Outcome::Passed, note) => note.as_deref(),
        };
        let note: String = note
            .unwrap_or("")
            .lines()
            .next()
            .unwrap_or("")
            .chars()
            .take(100)
            .collect();
        out.push_str(&format!(
            "{:<width$} | {:<7} | {:>8.3} | {note}\n",
            row.name,
            row.outcome.word(),
            row.took.as_secs_f64(),
        ));
    }
    let count = |f: fn(&Outcome) -> bool| rows.iter().filter(|r| f(&r.outcome)).count();
    let explained = count(|o| matches!(o, Outcome::Explained(_)));
    out.push_str(&format!(
        "{:<width$} | {:<7} | {:>8.3} | {} passed, {} failed, {} skipped{}\n",
        "total",
        "",
        total.as_secs_f64(),
        count(|o| matches!(o, Outcome::Passed)),
        count(|o| matches!(o, Outcome::Failed(_))),
        count(|o| matches!(o, Outcome::Skipped(_))),
        if explained > 0 {
            format!(", {explained} failed with a code a fault explains")
        } else {
            String::new()
        },
    ));
    out
}

/// The rows as JSON in the trial shape of the suite's report (`name`, `outcome`, and
/// `message` or `reason`), so that `conformance compare` reads both.
pub fn to_json(rows: &[Timing]) -> serde_json::Value {
    let trials: Vec<serde_json::Value> = rows
        .iter()
        .map(|row| {
            let mut trial = serde_json::json!({
                "name": row.name,
                "outcome": match row.outcome {
                    Outcome::Passed => "passed",
                    Outcome::Failed(_) | Outcome::Explained(_) => "failed",
                    Outcome::Skipped(_) => "skipped",
                },
                "duration_ms": row.took.as_secs_f64() * 1000.0,
            });
            match &row.outcome {
                Outcome::Failed(message) => trial["message"] = message.as_str().into(),
                Outcome::Explained(message) => {
                    trial["message"] = message.as_str().into();
                    trial["explained"] = true.into();
                }
                Outcome::Skipped(reason) => trial["reason"] = reason.as_str().into(),
                Outcome::Passed => {}
            }
            if let Some(note) = &row.note {
                trial["note"] = note.as_str().into();
            }
            trial
        })
        .collect();
    serde_json::json!({ "trials": trials })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(order: usize, name: &str, outcome: Outcome, millis: u64, note: Option<&str>) -> Timing {
        Timing {
            order,
            name: name.to_owned(),
            outcome,
            took: Duration::from_millis(millis),
            note: note.map(str::to_owned),
        }
    }

    #[test]
    fn table_lists_checks_in_run_order_with_seconds_and_a_total() {
        let timings = Timings::default();
        timings.record(row(
            2,
            "live::direct::missing_image",
            Outcome::Skipped("not marked".into()),
            0,
            None,
        ));
        timings.record(row(
            0,
            "live::direct::create",
            Outcome::Passed,
            4213,
            Some("ready"),
        ));
        timings.record(row(
            1,
            "live::direct::exec",
            Outcome::Failed("exit 1\nsecond line".into()),
            250,
            None,
        ));
        let text = table(&timings.rows());
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 6, "{text}");
        assert!(lines[2].starts_with("live::direct::create "), "{text}");
        assert!(lines[2].contains("| passed  |    4.213 | ready"), "{text}");
        assert!(lines[3].contains("| FAILED  |    0.250 | exit 1"), "{text}");
        assert!(!text.contains("second line"), "{text}");
        assert!(lines[4].contains("skipped") && lines[4].contains("not marked"));
        assert!(lines[5].starts_with("total"), "{text}");
        assert!(
            lines[5].contains("4.463 | 1 passed, 1 failed, 1 skipped"),
            "{text}"
        );
    }

    #[test]
    fn json_has_each_check_with_its_outcome_and_why() {
        let json = to_json(&[
            row(0, "live::a", Outcome::Passed, 5, Some("took 5 ms")),
            row(1, "live::b", Outcome::Failed("boom".into()), 1, None),
            row(2, "live::c", Outcome::Skipped("no DNS".into()), 0, None),
        ]);
        assert_eq!(json["trials"][0]["outcome"], "passed");
        assert_eq!(json["trials"][0]["note"], "took 5 ms");
        assert_eq!(json["trials"][1]["message"], "boom");
        assert_eq!(json["trials"][2]["reason"], "no DNS");
    }

    #[test]
    fn an_explained_failure_is_counted_apart_and_kept_as_a_failure_in_json() {
        let rows = [
            row(0, "live::a", Outcome::Passed, 5, None),
            row(
                1,
                "live::b",
                Outcome::Explained("exec: unavailable: reset".into()),
                1,
                None,
            ),
        ];
        let text = table(&rows);
        assert!(
            text.contains("1 passed, 0 failed, 0 skipped, 1 failed with a code a fault explains"),
            "{text}"
        );
        assert!(text.contains("| explained |"), "{text}");
        let json = to_json(&rows);
        assert_eq!(json["trials"][1]["outcome"], "failed");
        assert_eq!(json["trials"][1]["explained"], true);
        assert_eq!(json["trials"][1]["message"], "exec: unavailable: reset");
    }

    #[test]
    fn an_empty_table_still_has_its_header_and_total() {
        let text = table(&[]);
        assert_eq!(text.lines().count(), 3);
        assert!(text.contains("0 passed, 0 failed, 0 skipped"));
    }
}
