//! The percentile every fakekube bench reports its samples by (each includes this file with
//! `#[path]`), so that a median means the same in each table.

use std::time::Duration;

/// The `p`th percentile (nearest rank) of `samples`, in any order; zero when there are none.
pub fn percentile(samples: &[Duration], p: f64) -> Duration {
    let mut sorted = samples.to_vec();
    sorted.sort();
    let Some(last) = sorted.len().checked_sub(1) else {
        return Duration::ZERO;
    };
    let rank = ((p / 100.0) * last as f64).round() as usize;
    sorted[rank.min(last)]
}
