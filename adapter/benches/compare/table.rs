//! The side-by-side table: rows of timed samples (or the reason a row has none), their median
//! and p90 (nearest rank), and each row's ratio to its section's reference row, the adapter.

use std::time::Duration;

/// What a row shows.
pub enum Outcome {
    /// Timed samples (unsorted).
    Samples(Vec<Duration>),
    /// Why the row was not measured.
    Skipped(String),
}

/// One row of a section.
pub struct Row {
    /// What was measured.
    pub label: String,
    /// Its samples, or why there are none.
    pub outcome: Outcome,
}

impl Row {
    /// A measured row.
    pub fn measured(label: impl Into<String>, samples: Vec<Duration>) -> Row {
        Row {
            label: label.into(),
            outcome: Outcome::Samples(samples),
        }
    }

    /// A row that could not be measured, and why.
    pub fn skipped(label: impl Into<String>, why: impl Into<String>) -> Row {
        Row {
            label: label.into(),
            outcome: Outcome::Skipped(why.into()),
        }
    }

    /// The median and p90 of the samples, when there are any.
    fn stats(&self) -> Option<(usize, Duration, Duration)> {
        match &self.outcome {
            Outcome::Samples(samples) if !samples.is_empty() => {
                let mut sorted = samples.clone();
                sorted.sort();
                Some((
                    sorted.len(),
                    percentile(&sorted, 50.0),
                    percentile(&sorted, 90.0),
                ))
            }
            _ => None,
        }
    }
}

/// How a section reads its samples.
#[derive(Clone, Copy)]
pub enum Kind {
    /// Latencies: median and p90 of the time, and the ratio of medians.
    Latency,
    /// Transfers of this many bytes: the time's median and p90, MB/s at each, and the ratio of
    /// median times.
    Throughput(usize),
    /// Latencies without a reference row.
    Plain,
}

/// A titled group of rows; the first row is the reference of the ratios (unless
/// [`Kind::Plain`]).
pub struct Section {
    /// The heading.
    pub title: String,
    /// How to read the samples.
    pub kind: Kind,
    /// The rows, reference first.
    pub rows: Vec<Row>,
}

/// The width of the label column.
const LABEL: usize = 56;

impl Section {
    /// Prints the section.
    pub fn print(&self) {
        let reference = match self.kind {
            Kind::Plain => None,
            _ => self.rows.first().and_then(Row::stats).map(|(_, m, _)| m),
        };
        match self.kind {
            Kind::Throughput(_) => println!(
                "{:<LABEL$} {:>4} {:>9} {:>9} {:>10} {:>10} {:>8}",
                self.title, "n", "median", "p90", "MB/s med", "MB/s p90", "ratio"
            ),
            Kind::Latency => println!(
                "{:<LABEL$} {:>4} {:>9} {:>9} {:>8}",
                self.title, "n", "median", "p90", "ratio"
            ),
            Kind::Plain => println!(
                "{:<LABEL$} {:>4} {:>9} {:>9}",
                self.title, "n", "median", "p90"
            ),
        }
        for row in &self.rows {
            let Some((n, median, p90)) = row.stats() else {
                let why = match &row.outcome {
                    Outcome::Skipped(why) => why.as_str(),
                    Outcome::Samples(_) => "no samples",
                };
                println!("{:<LABEL$} skipped: {why}", row.label);
                continue;
            };
            let ratio = reference
                .map(|r| format!("{:.2}", median.as_secs_f64() / r.as_secs_f64().max(1e-9)))
                .unwrap_or_default();
            match self.kind {
                Kind::Throughput(bytes) => println!(
                    "{:<LABEL$} {n:>4} {:>9} {:>9} {:>10.0} {:>10.0} {ratio:>8}",
                    row.label,
                    fmt_duration(median),
                    fmt_duration(p90),
                    mb_per_s(bytes, median),
                    mb_per_s(bytes, p90),
                ),
                Kind::Latency => println!(
                    "{:<LABEL$} {n:>4} {:>9} {:>9} {ratio:>8}",
                    row.label,
                    fmt_duration(median),
                    fmt_duration(p90),
                ),
                Kind::Plain => println!(
                    "{:<LABEL$} {n:>4} {:>9} {:>9}",
                    row.label,
                    fmt_duration(median),
                    fmt_duration(p90),
                ),
            }
        }
    }
}

/// Megabytes (10^6 bytes) per second of `bytes` moved in `time`.
fn mb_per_s(bytes: usize, time: Duration) -> f64 {
    bytes as f64 / 1e6 / time.as_secs_f64().max(1e-9)
}

/// The `p`th percentile of sorted `times` (nearest rank).
fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let rank = ((p / 100.0) * (sorted.len().saturating_sub(1)) as f64).round() as usize;
    sorted
        .get(rank.min(sorted.len().saturating_sub(1)))
        .copied()
        .unwrap_or_default()
}

/// A duration in the unit that reads best.
fn fmt_duration(d: Duration) -> String {
    let us = d.as_secs_f64() * 1e6;
    if us < 1000.0 {
        format!("{us:.0} µs")
    } else if us < 1e6 {
        format!("{:.2} ms", us / 1000.0)
    } else {
        format!("{:.2} s", us / 1e6)
    }
}

/// The machine's load averages (1, 5 and 15 minutes) from `/proc/loadavg`.
pub fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|| "unknown".to_owned())
}
