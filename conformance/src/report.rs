//! What a run found: every trial's outcome and duration, the capability table in the provider
//! page's form, and the same as text, JSON and JUnit XML.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::process::ExitCode;
use std::time::Duration;

use sandbox_contract::{Capabilities, Capability};
use serde_json::{Value, json};

use crate::trials::{Group, TrialKind};

/// How one trial ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// It ran and every check held.
    Passed,
    /// It ran and a check failed, with what went wrong.
    Failed {
        /// What went wrong.
        message: String,
    },
    /// It did not run, with why.
    Skipped {
        /// Why it did not run.
        reason: String,
    },
}

impl Outcome {
    /// Returns `passed`, `failed` or `skipped`.
    pub const fn as_str(&self) -> &'static str {
        match self {
            Outcome::Passed => "passed",
            Outcome::Failed { .. } => "failed",
            Outcome::Skipped { .. } => "skipped",
        }
    }
}

/// One trial of a run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TrialRecord {
    /// The trial's full name, as `--list` prints it (`exec::nonzero_exit_is_data`, with a
    /// `pool::` prefix when the suite has several pools).
    pub name: String,
    /// The pool it ran against.
    pub pool: String,
    /// Its group: the first part of its name.
    pub group: Group,
    /// Its name within the group.
    pub rule: String,
    /// Promise or coherence.
    pub kind: TrialKind,
    /// The capability table rows it stands behind: its group and any further capability.
    pub rows: Vec<Group>,
    /// How it ended.
    pub outcome: Outcome,
    /// How long it took, cleanup included (zero when skipped).
    pub duration: Duration,
}

/// What a pool declared, as the report shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PoolSummary {
    /// The pool's name in the suite.
    pub name: String,
    /// The provider's own name, from `info`, or `None` when `info` failed.
    pub provider: Option<String>,
    /// The capabilities it declared.
    pub declared: Capabilities,
    /// The declared capabilities its configuration opted in to.
    pub opt_in: Capabilities,
}

/// The result of a run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Report {
    /// The pools, in the order given.
    pub pools: Vec<PoolSummary>,
    /// Every trial that ran or was skipped, in list order; filtered-out trials are absent.
    pub trials: Vec<TrialRecord>,
    /// How many trials name filters left out.
    pub filtered_out: u64,
    /// How long the run took.
    pub duration: Duration,
}

/// Counts of outcomes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    /// Trials that passed.
    pub passed: usize,
    /// Trials that failed.
    pub failed: usize,
    /// Trials that were skipped.
    pub skipped: usize,
}

impl Counts {
    /// Counts the outcomes of `records`.
    fn of<'a>(records: impl IntoIterator<Item = &'a TrialRecord>) -> Counts {
        let mut counts = Counts::default();
        for record in records {
            match record.outcome {
                Outcome::Passed => counts.passed += 1,
                Outcome::Failed { .. } => counts.failed += 1,
                Outcome::Skipped { .. } => counts.skipped += 1,
            }
        }
        counts
    }
}

/// The rows of the capability table, in order.
fn table_rows() -> Vec<Group> {
    let mut rows = vec![
        Group::Core,
        Group::Templates,
        Group::Resources,
        Group::Concurrency,
    ];
    rows.extend(Capability::ALL.into_iter().map(Group::Capability));
    rows
}

/// Returns whether a capability is a property the suite does not check.
fn declared_only(capability: Capability) -> bool {
    matches!(
        capability,
        Capability::IsolationContainer | Capability::IsolationMicrovm
    )
}

impl Report {
    /// Returns the counts over every trial.
    pub fn counts(&self) -> Counts {
        Counts::of(&self.trials)
    }

    /// Returns whether any trial failed.
    pub fn has_failed(&self) -> bool {
        self.counts().failed > 0
    }

    /// Returns the failed trials.
    pub fn failures(&self) -> Vec<&TrialRecord> {
        self.trials
            .iter()
            .filter(|t| matches!(t.outcome, Outcome::Failed { .. }))
            .collect()
    }

    /// Returns the trial named `name`.
    pub fn trial(&self, name: &str) -> Option<&TrialRecord> {
        self.trials.iter().find(|t| t.name == name)
    }

    /// Returns the process exit code: failure when any trial failed.
    pub fn exit_code(&self) -> ExitCode {
        if self.has_failed() {
            ExitCode::from(101)
        } else {
            ExitCode::SUCCESS
        }
    }

    /// Returns the records of `pool` behind `row`.
    fn cell_records(&self, pool: &str, row: Group) -> Vec<&TrialRecord> {
        self.trials
            .iter()
            .filter(|t| t.pool == pool && t.rows.contains(&row))
            .collect()
    }

    /// Returns the text of one cell: the declaration, then what the trials behind it found.
    fn cell(&self, pool: &PoolSummary, row: Group) -> String {
        let status = match row {
            Group::Capability(capability) if pool.opt_in.contains(capability) => "opt-in",
            Group::Capability(capability) if pool.declared.contains(capability) => "yes",
            Group::Capability(_) => "no",
            _ => "required",
        };
        if let Group::Capability(capability) = row
            && declared_only(capability)
            && pool.declared.contains(capability)
        {
            return format!("{status}: declared, not checked");
        }
        let records = self.cell_records(&pool.name, row);
        let counts = Counts::of(records.iter().copied());
        let ran = counts.passed + counts.failed;
        let coherence = status == "no" && ran > 0;
        let mut text = status.to_owned();
        if ran == 0 && counts.skipped == 0 {
            return text;
        }
        text.push_str(": ");
        if coherence {
            text.push_str("coherence ");
        }
        let _ = write!(text, "{}/{ran} passed", counts.passed);
        if counts.failed > 0 {
            let _ = write!(text, ", {} FAILED", counts.failed);
        }
        if counts.skipped > 0 {
            let _ = write!(text, ", {} skipped", counts.skipped);
        }
        text
    }

    /// Returns the capability table as aligned text: a row per capability (and the core
    /// groups), a column per pool, each cell saying yes, no or opt-in and what its trials found.
    pub fn capability_table_text(&self) -> String {
        let mut rows: Vec<Vec<String>> = Vec::new();
        let mut header = vec!["capability".to_owned()];
        header.extend(self.pools.iter().map(|p| p.name.clone()));
        rows.push(header);
        for row in table_rows() {
            let mut line = vec![row.as_str().to_owned()];
            line.extend(self.pools.iter().map(|pool| self.cell(pool, row)));
            rows.push(line);
        }
        let columns = rows.first().map_or(0, Vec::len);
        let widths: Vec<usize> = (0..columns)
            .map(|c| {
                rows.iter()
                    .map(|r| r.get(c).map_or(0, |s| s.chars().count()))
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        let mut text = String::new();
        for (index, row) in rows.iter().enumerate() {
            let cells: Vec<String> = row
                .iter()
                .zip(&widths)
                .map(|(cell, width)| format!("{cell:<width$}"))
                .collect();
            let _ = writeln!(text, "{}", cells.join(" | ").trim_end());
            if index == 0 {
                let rule: Vec<String> = widths.iter().map(|w| "-".repeat(*w)).collect();
                let _ = writeln!(text, "{}", rule.join("-|-"));
            }
        }
        text
    }

    /// Returns the capability table as Markdown, in the form of a provider page's
    /// "Capabilities" section: a row per capability, a column per pool, each cell `yes`, `no`
    /// or `opt-in` with the verdict of the trials behind it, so the page claims only what the
    /// run showed. The rows for what every provider must do (`core`, `templates`, ...) say
    /// `required`.
    pub fn capability_table_markdown(&self) -> String {
        let escape = |cell: &str| cell.replace('|', "\\|");
        let mut text = String::from("| Capability |");
        for pool in &self.pools {
            let _ = write!(text, " {} |", escape(&pool.name));
        }
        text.push_str("\n| --- |");
        for _ in &self.pools {
            text.push_str(" --- |");
        }
        text.push('\n');
        for row in table_rows() {
            let _ = write!(text, "| {} |", row.as_str());
            for pool in &self.pools {
                let _ = write!(text, " {} |", escape(&self.cell(pool, row)));
            }
            text.push('\n');
        }
        let counts = self.counts();
        let _ = writeln!(
            text,
            "\nVerdicts of one conformance run: {} passed, {} failed, {} skipped.",
            counts.passed, counts.failed, counts.skipped
        );
        text
    }

    /// Returns the whole report as text: the table, the counts, and the trials behind each
    /// cell with outcome, duration and any reason or failure.
    pub fn to_text(&self) -> String {
        let mut text = String::from("\ncapability conformance\n\n");
        for pool in &self.pools {
            let _ = writeln!(
                text,
                "pool {}: provider {}, declares {}",
                pool.name,
                pool.provider.as_deref().unwrap_or("(info failed)"),
                if pool.declared.is_empty() {
                    "nothing".to_owned()
                } else {
                    pool.declared.to_string()
                }
            );
        }
        text.push('\n');
        text.push_str(&self.capability_table_text());
        let counts = self.counts();
        let _ = writeln!(
            text,
            "\n{} passed, {} failed, {} skipped, {} filtered out, in {:.2} s\n",
            counts.passed,
            counts.failed,
            counts.skipped,
            self.filtered_out,
            self.duration.as_secs_f64()
        );
        for pool in &self.pools {
            for row in table_rows() {
                let records = self.cell_records(&pool.name, row);
                if records.is_empty() {
                    continue;
                }
                let _ = writeln!(text, "{} [{}: {}]", row, pool.name, self.cell(pool, row));
                for record in records {
                    let millis = record.duration.as_secs_f64() * 1000.0;
                    match &record.outcome {
                        Outcome::Passed => {
                            let _ = writeln!(text, "  ok    {} ({millis:.0} ms)", record.name);
                        }
                        Outcome::Failed { message } => {
                            let _ = writeln!(
                                text,
                                "  FAIL  {} ({millis:.0} ms): {message}",
                                record.name
                            );
                        }
                        Outcome::Skipped { reason } => {
                            let _ = writeln!(text, "  skip  {}: {reason}", record.name);
                        }
                    }
                }
            }
        }
        text
    }

    /// Returns the report as a JSON value: pools, counts, the capability table with the
    /// trials behind each cell, and every trial with outcome and duration.
    pub fn to_json(&self) -> Value {
        let counts = self.counts();
        let pools: Vec<Value> = self
            .pools
            .iter()
            .map(|p| {
                json!({
                    "name": p.name,
                    "provider": p.provider,
                    "declared": p.declared.iter().map(Capability::as_str).collect::<Vec<_>>(),
                    "opt_in": p.opt_in.iter().map(Capability::as_str).collect::<Vec<_>>(),
                })
            })
            .collect();
        let table: Vec<Value> = table_rows()
            .into_iter()
            .map(|row| {
                let mut cells = serde_json::Map::new();
                for pool in &self.pools {
                    let records = self.cell_records(&pool.name, row);
                    let c = Counts::of(records.iter().copied());
                    let declared = match row {
                        Group::Capability(cap) if pool.opt_in.contains(cap) => "opt-in",
                        Group::Capability(cap) if pool.declared.contains(cap) => "yes",
                        Group::Capability(_) => "no",
                        _ => "required",
                    };
                    cells.insert(
                        pool.name.clone(),
                        json!({
                            "declared": declared,
                            "cell": self.cell(pool, row),
                            "passed": c.passed,
                            "failed": c.failed,
                            "skipped": c.skipped,
                            "trials": records.iter().map(|r| r.name.as_str()).collect::<Vec<_>>(),
                        }),
                    );
                }
                json!({ "row": row.as_str(), "pools": Value::Object(cells) })
            })
            .collect();
        let trials: Vec<Value> = self
            .trials
            .iter()
            .map(|t| {
                let mut value = json!({
                    "name": t.name,
                    "pool": t.pool,
                    "group": t.group.as_str(),
                    "rule": t.rule,
                    "kind": t.kind.as_str(),
                    "outcome": t.outcome.as_str(),
                    "duration_ms": t.duration.as_secs_f64() * 1000.0,
                });
                match &t.outcome {
                    Outcome::Failed { message } => value["message"] = json!(message),
                    Outcome::Skipped { reason } => value["reason"] = json!(reason),
                    Outcome::Passed => {}
                }
                value
            })
            .collect();
        json!({
            "pools": pools,
            "counts": {
                "passed": counts.passed,
                "failed": counts.failed,
                "skipped": counts.skipped,
                "filtered_out": self.filtered_out,
            },
            "duration_ms": self.duration.as_secs_f64() * 1000.0,
            "capabilities": table,
            "trials": trials,
        })
    }

    /// Returns the report as JUnit XML: a test suite per pool, a test case per trial, with
    /// `<failure>` and `<skipped>` carrying the message or reason.
    pub fn to_junit(&self) -> String {
        let counts = self.counts();
        let mut xml = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
        let _ = writeln!(
            xml,
            "<testsuites name=\"sandbox-conformance\" tests=\"{}\" failures=\"{}\" skipped=\"{}\" time=\"{:.3}\">",
            self.trials.len(),
            counts.failed,
            counts.skipped,
            self.duration.as_secs_f64()
        );
        let mut by_pool: BTreeMap<usize, Vec<&TrialRecord>> = BTreeMap::new();
        for record in &self.trials {
            let index = self
                .pools
                .iter()
                .position(|p| p.name == record.pool)
                .unwrap_or(usize::MAX);
            by_pool.entry(index).or_default().push(record);
        }
        for (index, records) in by_pool {
            let name = self.pools.get(index).map_or("unknown", |p| p.name.as_str());
            let c = Counts::of(records.iter().copied());
            let time: f64 = records.iter().map(|r| r.duration.as_secs_f64()).sum();
            let _ = writeln!(
                xml,
                "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{}\" skipped=\"{}\" time=\"{time:.3}\">",
                escape(name),
                records.len(),
                c.failed,
                c.skipped
            );
            for record in records {
                let _ = write!(
                    xml,
                    "    <testcase name=\"{}\" classname=\"{}\" time=\"{:.3}\"",
                    escape(&record.name),
                    escape(&format!("{}.{}", record.pool, record.group)),
                    record.duration.as_secs_f64()
                );
                match &record.outcome {
                    Outcome::Passed => xml.push_str("/>\n"),
                    Outcome::Failed { message } => {
                        let _ = writeln!(
                            xml,
                            ">\n      <failure message=\"{}\">{}</failure>\n    </testcase>",
                            escape(first_line(message)),
                            escape(message)
                        );
                    }
                    Outcome::Skipped { reason } => {
                        let _ = writeln!(
                            xml,
                            ">\n      <skipped message=\"{}\"/>\n    </testcase>",
                            escape(reason)
                        );
                    }
                }
            }
            xml.push_str("  </testsuite>\n");
        }
        xml.push_str("</testsuites>\n");
        xml
    }
}

/// Returns the first line of `text`.
fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or_default()
}

/// Escapes text for XML attributes and content; characters XML 1.0 forbids become U+FFFD.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for ch in text.chars() {
        match ch {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\n' => out.push_str("&#10;"),
            '\t' | '\r' => {
                let _ = write!(out, "&#{};", u32::from(ch));
            }
            c if (c as u32) < 0x20 || c == '\u{fffe}' || c == '\u{ffff}' => out.push('\u{fffd}'),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(name: &str, group: Group, outcome: Outcome) -> TrialRecord {
        TrialRecord {
            name: name.to_owned(),
            pool: "direct".to_owned(),
            group,
            rule: name.to_owned(),
            kind: TrialKind::Promise,
            rows: vec![group],
            outcome,
            duration: Duration::from_millis(12),
        }
    }

    fn sample() -> Report {
        let exec = Group::Capability(Capability::Exec);
        let ports = Group::Capability(Capability::PortsExpose);
        let mut declared = Capabilities::new();
        declared.insert(Capability::Exec);
        declared.insert(Capability::IsolationContainer);
        Report {
            pools: vec![PoolSummary {
                name: "direct".to_owned(),
                provider: Some("ref".to_owned()),
                declared,
                opt_in: Capabilities::new(),
            }],
            trials: vec![
                record("exec::a", exec, Outcome::Passed),
                record(
                    "exec::b",
                    exec,
                    Outcome::Failed {
                        message: "exit <0> & \"1\"\nmore".to_owned(),
                    },
                ),
                record(
                    "ports.expose::undeclared_answers_unsupported",
                    ports,
                    Outcome::Passed,
                ),
                record(
                    "ports.expose::x",
                    ports,
                    Outcome::Skipped {
                        reason: "not declared".to_owned(),
                    },
                ),
            ],
            filtered_out: 3,
            duration: Duration::from_secs(1),
        }
    }

    #[test]
    fn table_cells_say_declaration_and_trial_counts() {
        let table = sample().capability_table_text();
        let exec = table.lines().find(|l| l.starts_with("exec ")).unwrap();
        assert!(exec.ends_with("yes: 1/2 passed, 1 FAILED"), "{exec}");
        let ports = table
            .lines()
            .find(|l| l.starts_with("ports.expose"))
            .unwrap();
        assert!(
            ports.ends_with("no: coherence 1/1 passed, 1 skipped"),
            "{ports}"
        );
        let isolation = table
            .lines()
            .find(|l| l.starts_with("isolation.container"))
            .unwrap();
        assert!(
            isolation.ends_with("yes: declared, not checked"),
            "{isolation}"
        );
        let fork = table.lines().find(|l| l.starts_with("fork")).unwrap();
        assert!(fork.ends_with("| no"), "{fork}");
    }

    #[test]
    fn markdown_table_has_a_column_per_pool_and_the_verdict_in_each_cell() {
        let mut report = sample();
        let mut warm = report.pools[0].clone();
        warm.name = "warm".to_owned();
        warm.opt_in.insert(Capability::Exec);
        report.pools.push(warm);
        let markdown = report.capability_table_markdown();
        let lines: Vec<&str> = markdown.lines().collect();
        assert_eq!(lines[0], "| Capability | direct | warm |");
        assert_eq!(lines[1], "| --- | --- | --- |");
        let exec = lines.iter().find(|l| l.starts_with("| exec |")).unwrap();
        assert_eq!(
            *exec, "| exec | yes: 1/2 passed, 1 FAILED | opt-in |",
            "{markdown}"
        );
        let ports = lines
            .iter()
            .find(|l| l.starts_with("| ports.expose |"))
            .unwrap();
        assert_eq!(
            *ports,
            "| ports.expose | no: coherence 1/1 passed, 1 skipped | no |"
        );
        assert!(
            markdown.contains("Verdicts of one conformance run"),
            "{markdown}"
        );
    }

    #[test]
    fn junit_escapes_messages_and_counts_outcomes() {
        let xml = sample().to_junit();
        assert!(
            xml.contains("tests=\"4\" failures=\"1\" skipped=\"1\""),
            "{xml}"
        );
        assert!(
            xml.contains("message=\"exit &lt;0&gt; &amp; &quot;1&quot;\""),
            "{xml}"
        );
        assert!(xml.contains("<skipped message=\"not declared\"/>"), "{xml}");
        assert_eq!(escape("a\u{1}b"), "a\u{fffd}b");
    }

    #[test]
    fn json_lists_each_trial_with_its_outcome() {
        let json = sample().to_json();
        assert_eq!(json["counts"]["failed"], 1);
        assert_eq!(json["counts"]["filtered_out"], 3);
        assert_eq!(json["trials"][1]["outcome"], "failed");
        assert_eq!(json["trials"][3]["reason"], "not declared");
        let exec_row = json["capabilities"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["row"] == "exec")
            .unwrap();
        assert_eq!(
            exec_row["pools"]["direct"]["trials"]
                .as_array()
                .unwrap()
                .len(),
            2
        );
    }

    #[test]
    fn exit_code_fails_only_with_a_failure() {
        let mut report = sample();
        assert!(report.has_failed());
        report
            .trials
            .retain(|t| !matches!(t.outcome, Outcome::Failed { .. }));
        assert!(!report.has_failed());
        assert_eq!(report.exit_code(), ExitCode::SUCCESS);
    }
}
