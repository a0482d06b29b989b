//! Random numbers for what a container expects to be unpredictable: `/dev/random` and
//! `/dev/urandom`, `mktemp`'s names, awk's `srand()` without a seed. A splitmix64 sequence over
//! one process-wide counter, seeded from the clock at first use: unpredictable enough for
//! names and test data, and not cryptographic (nothing in a hermetic pod needs that).

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

/// The splitmix64 increment (the golden ratio in 64 bits).
const GAMMA: u64 = 0x9e37_79b9_7f4a_7c15;

/// The counter the sequence is drawn from.
fn state() -> &'static AtomicU64 {
    static STATE: OnceLock<AtomicU64> = OnceLock::new();
    STATE.get_or_init(|| {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        // The low and high halves of the clock, folded.
        AtomicU64::new((nanos as u64) ^ ((nanos >> 64) as u64) ^ u64::from(std::process::id()))
    })
}

/// splitmix64's output function: a well-mixed value from a counter value.
pub fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The next random 64-bit number.
pub fn next_u64() -> u64 {
    mix(state()
        .fetch_add(GAMMA, Ordering::Relaxed)
        .wrapping_add(GAMMA))
}

/// `len` random bytes.
pub fn bytes(len: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(len + 8);
    while out.len() < len {
        out.extend_from_slice(&next_u64().to_le_bytes());
    }
    out.truncate(len);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn draws_differ_and_bytes_come_in_the_length_asked() {
        assert_ne!(next_u64(), next_u64());
        assert_eq!(bytes(13).len(), 13);
        assert_eq!(mix(0), 0, "splitmix64 maps 0 to 0");
    }
}
