//! How long ago a timestamp was, as the API server's printers write it (`5s`, `3m20s`, `4h`,
//! `2d3h`, `3y`): apimachinery's `HumanDuration`.

use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

/// The age of an RFC 3339 timestamp at `now`; `<unknown>` when there is none and `<invalid>`
/// when it does not parse or lies more than a second in the future.
pub fn since(timestamp: Option<&str>, now: OffsetDateTime) -> String {
    match timestamp.filter(|t| !t.is_empty()) {
        None => "<unknown>".to_string(),
        Some(t) => match OffsetDateTime::parse(t, &Rfc3339) {
            Ok(at) => human((now - at).whole_seconds()),
            Err(_) => "<invalid>".to_string(),
        },
    }
}

/// A duration of `seconds` with two or three significant figures.
pub fn human(seconds: i64) -> String {
    if seconds < -1 {
        return "<invalid>".to_string();
    }
    if seconds < 0 {
        return "0s".to_string();
    }
    if seconds < 60 * 2 {
        return format!("{seconds}s");
    }
    let minutes = seconds / 60;
    if minutes < 10 {
        let s = seconds % 60;
        return if s == 0 {
            format!("{minutes}m")
        } else {
            format!("{minutes}m{s}s")
        };
    }
    if minutes < 60 * 3 {
        return format!("{minutes}m");
    }
    let hours = seconds / 3600;
    if hours < 8 {
        let m = minutes % 60;
        return if m == 0 {
            format!("{hours}h")
        } else {
            format!("{hours}h{m}m")
        };
    }
    if hours < 48 {
        return format!("{hours}h");
    }
    if hours < 24 * 8 {
        let h = hours % 24;
        return if h == 0 {
            format!("{}d", hours / 24)
        } else {
            format!("{}d{h}h", hours / 24)
        };
    }
    if hours < 24 * 365 * 2 {
        return format!("{}d", hours / 24);
    }
    if hours < 24 * 365 * 8 {
        let dy = (hours / 24) % 365;
        return if dy == 0 {
            format!("{}y", hours / 24 / 365)
        } else {
            format!("{}y{dy}d", hours / 24 / 365)
        };
    }
    format!("{}y", hours / 24 / 365)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_keep_two_or_three_significant_figures() {
        let cases = [
            (-5, "<invalid>"),
            (-1, "0s"),
            (0, "0s"),
            (119, "119s"),
            (120, "2m"),
            (200, "3m20s"),
            (600, "10m"),
            (3 * 3600 - 1, "179m"),
            (3 * 3600 + 60, "3h1m"),
            (8 * 3600, "8h"),
            (50 * 3600, "2d2h"),
            (10 * 24 * 3600, "10d"),
            (3 * 365 * 24 * 3600 + 24 * 3600, "3y1d"),
            (9 * 365 * 24 * 3600, "9y"),
        ];
        for (s, want) in cases {
            assert_eq!(human(s), want, "{s}s");
        }
    }

    #[test]
    fn ages_of_missing_and_malformed_timestamps_are_marked() {
        let now = OffsetDateTime::parse("2026-01-01T00:01:00Z", &Rfc3339)
            .unwrap_or(OffsetDateTime::UNIX_EPOCH);
        assert_eq!(since(Some("2026-01-01T00:00:00Z"), now), "60s");
        assert_eq!(since(None, now), "<unknown>");
        assert_eq!(since(Some("yesterday"), now), "<invalid>");
    }
}
