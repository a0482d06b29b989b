//! The string formats the API server checks that occur in these CRDs: `date-time` and `date`.

/// kube-openapi's `date-time` check: a full date, a `t`, then `hh:mm:ss`, an optional
/// fraction and a zone, compared case-insensitively.
pub(super) fn is_date_time(text: &str) -> bool {
    if text.len() < 4 {
        return false;
    }
    let lower = text.to_lowercase();
    let mut parts = lower.split('t');
    let (Some(date), Some(clock)) = (parts.next(), parts.next()) else {
        return false;
    };
    is_date(date) && is_clock(clock)
}

/// `^(\d\d):(\d\d):(\d\d)(.[0-9]+)?(z|[+-]\d\d:\d\d)$` with hour <= 23, minute and second <= 59.
fn is_clock(clock: &str) -> bool {
    let b = clock.as_bytes();
    let two = |i: usize| b.get(i..i + 2).filter(|d| d.iter().all(u8::is_ascii_digit));
    let (Some(h), Some(m), Some(sec)) = (two(0), two(3), two(6)) else {
        return false;
    };
    if b.get(2) != Some(&b':') || b.get(5) != Some(&b':') {
        return false;
    }
    if h > b"23".as_slice() || m > b"59".as_slice() || sec > b"59".as_slice() {
        return false;
    }
    let Some(rest) = clock.get(8..) else {
        return false;
    };
    if is_zone(rest) {
        return true;
    }
    let mut chars = rest.chars();
    match chars.next() {
        Some(c) if c != '\n' => {}
        _ => return false,
    }
    let after = chars.as_str();
    let digits = after.bytes().take_while(u8::is_ascii_digit).count();
    digits > 0 && after.get(digits..).is_some_and(is_zone)
}

/// `z` or `+hh:mm`/`-hh:mm` (already lower-cased).
fn is_zone(z: &str) -> bool {
    let b = z.as_bytes();
    z == "z"
        || (b.len() == 6
            && matches!(b.first(), Some(b'+' | b'-'))
            && b.get(1..3)
                .is_some_and(|d| d.iter().all(u8::is_ascii_digit))
            && b.get(3) == Some(&b':')
            && b.get(4..6)
                .is_some_and(|d| d.iter().all(u8::is_ascii_digit)))
}

/// Go's `time.Parse("2006-01-02", s)`: four-digit year, two-digit month and day of that month.
pub(super) fn is_date(text: &str) -> bool {
    let b = text.as_bytes();
    if b.len() != 10 || b.get(4) != Some(&b'-') || b.get(7) != Some(&b'-') {
        return false;
    }
    let num = |r: std::ops::Range<usize>| -> Option<u32> {
        let d = b.get(r)?;
        d.iter()
            .all(u8::is_ascii_digit)
            .then(|| d.iter().fold(0u32, |acc, c| acc * 10 + u32::from(c - b'0')))
    };
    let (Some(year), Some(month), Some(day)) = (num(0..4), num(5..7), num(8..10)) else {
        return false;
    };
    let leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
    let days = match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return false,
    };
    (1..=days).contains(&day)
}
