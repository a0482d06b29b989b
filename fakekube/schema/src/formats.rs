//! The string formats the API server checks in CRDs (kube-openapi's `strfmt` registry as
//! apiextensions keeps it); any other format is ignored, as there.

use std::net::{Ipv4Addr, Ipv6Addr};

use base64::Engine;

use super::pattern;

/// Whether `text` is of `format` (names compared without dashes, as kube-openapi does);
/// `None` for a format the API server does not check.
pub(super) fn check(format: &str, text: &str) -> Option<bool> {
    let matches = |re: &str| pattern::compile(re).is_ok_and(|r| r.is_match(text));
    Some(match format.replace('-', "").as_str() {
        "bsonobjectid" => text.len() == 24 && text.bytes().all(|b| b.is_ascii_hexdigit()),
        "uri" => is_uri(text),
        "email" => matches(r"^[^@\s]+@[^@\s]+\.[^@\s]+$"),
        "hostname" => {
            text.len() <= 255
                && matches(
                    r"^[a-zA-Z0-9]([-a-zA-Z0-9]{0,61}[a-zA-Z0-9])?(\.[a-zA-Z0-9]([-a-zA-Z0-9]{0,61}[a-zA-Z0-9])?)*$",
                )
        }
        "ipv4" => text.parse::<Ipv4Addr>().is_ok(),
        "ipv6" => text.contains(':') && text.parse::<Ipv6Addr>().is_ok(),
        "cidr" => is_cidr(text),
        "mac" => is_mac(text),
        "uuid" => {
            matches(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$")
        }
        "uuid3" => {
            matches(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?3[0-9a-f]{3}-?[0-9a-f]{4}-?[0-9a-f]{12}$")
        }
        "uuid4" => matches(
            r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?4[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$",
        ),
        "uuid5" => matches(
            r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?5[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$",
        ),
        "isbn" => is_isbn10(text) || is_isbn13(text),
        "isbn10" => is_isbn10(text),
        "isbn13" => is_isbn13(text),
        "creditcard" => is_credit_card(text),
        "ssn" => matches(r"^\d{3}[- ]?\d{2}[- ]?\d{4}$"),
        "hexcolor" => matches(r"^#?([0-9a-fA-F]{3}|[0-9a-fA-F]{6})$"),
        "rgbcolor" => matches(
            r"^rgb\(\s*(0|[1-9]\d?|1\d\d?|2[0-4]\d|25[0-5])\s*,\s*(0|[1-9]\d?|1\d\d?|2[0-4]\d|25[0-5])\s*,\s*(0|[1-9]\d?|1\d\d?|2[0-4]\d|25[0-5])\s*\)$",
        ),
        "byte" => base64::engine::general_purpose::STANDARD
            .decode(text)
            .is_ok(),
        "password" => true,
        "date" => is_date(text),
        "duration" => is_duration(text),
        "datetime" => is_date_time(text),
        _ => return None,
    })
}

/// An absolute URI (`scheme:...`) or an absolute path, without spaces.
fn is_uri(text: &str) -> bool {
    if text.is_empty() || text.bytes().any(|b| b <= b' ' || b == 0x7f) {
        return false;
    }
    if text.starts_with('/') {
        return true;
    }
    text.split_once(':').is_some_and(|(scheme, _)| {
        scheme
            .bytes()
            .next()
            .is_some_and(|b| b.is_ascii_alphabetic())
            && scheme
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'-' | b'.'))
    })
}

/// `address/prefix`, as Go's `net.ParseCIDR` accepts it.
fn is_cidr(text: &str) -> bool {
    let Some((addr, prefix)) = text.split_once('/') else {
        return false;
    };
    let Ok(prefix) = prefix.parse::<u8>() else {
        return false;
    };
    match (addr.parse::<Ipv4Addr>(), addr.parse::<Ipv6Addr>()) {
        (Ok(_), _) => prefix <= 32,
        (_, Ok(_)) => prefix <= 128,
        _ => false,
    }
}

/// A MAC address as Go's `net.ParseMAC` accepts it: 6, 8 or 20 octets in pairs of hex
/// digits separated by `:` or `-`, or in fours separated by `.`.
fn is_mac(text: &str) -> bool {
    let hex = |g: &str, n: usize| g.len() == n && g.bytes().all(|b| b.is_ascii_hexdigit());
    for sep in [':', '-'] {
        let groups: Vec<&str> = text.split(sep).collect();
        if matches!(groups.len(), 6 | 8 | 20) && groups.iter().all(|g| hex(g, 2)) {
            return true;
        }
    }
    let groups: Vec<&str> = text.split('.').collect();
    matches!(groups.len(), 3 | 4 | 10) && groups.iter().all(|g| hex(g, 4))
}

/// The digits of an ISBN, without spaces and hyphens.
fn isbn_digits(text: &str) -> String {
    text.chars().filter(|c| *c != ' ' && *c != '-').collect()
}

/// An ISBN-10 with a valid check digit.
fn is_isbn10(text: &str) -> bool {
    let d = isbn_digits(text);
    let b = d.as_bytes();
    if b.len() != 10 || !b[..9].iter().all(u8::is_ascii_digit) {
        return false;
    }
    let last = match b[9] {
        b'X' => 10,
        c if c.is_ascii_digit() => u32::from(c - b'0'),
        _ => return false,
    };
    let sum: u32 = b[..9]
        .iter()
        .zip(1u32..)
        .map(|(c, i)| i * u32::from(c - b'0'))
        .sum::<u32>()
        + 10 * last;
    sum.is_multiple_of(11)
}

/// An ISBN-13 with a valid check digit.
fn is_isbn13(text: &str) -> bool {
    let d = isbn_digits(text);
    let b = d.as_bytes();
    if b.len() != 13 || !b.iter().all(u8::is_ascii_digit) {
        return false;
    }
    let sum: u32 = b
        .iter()
        .enumerate()
        .map(|(i, c)| u32::from(c - b'0') * if i % 2 == 0 { 1 } else { 3 })
        .sum();
    sum.is_multiple_of(10)
}

/// A card number: 13 to 19 digits (spaces and dashes aside) passing the Luhn check.
fn is_credit_card(text: &str) -> bool {
    let digits: Vec<u32> = text
        .chars()
        .filter(|c| *c != ' ' && *c != '-')
        .map(|c| c.to_digit(10))
        .collect::<Option<Vec<u32>>>()
        .unwrap_or_default();
    if !(13..=19).contains(&digits.len()) {
        return false;
    }
    let sum: u32 = digits
        .iter()
        .rev()
        .enumerate()
        .map(|(i, d)| {
            if i % 2 == 1 {
                let x = d * 2;
                if x > 9 { x - 9 } else { x }
            } else {
                *d
            }
        })
        .sum();
    sum.is_multiple_of(10)
}

/// A duration as kube-openapi's `strfmt.ParseDuration` takes it: Go's syntax (`1h30m`) or
/// a number and a unit (`3 days`, `1 week`).
fn is_duration(text: &str) -> bool {
    if super::cel::duration(text).is_some() {
        return true;
    }
    let t = text.trim();
    let n = t.bytes().take_while(u8::is_ascii_digit).count();
    if n == 0 {
        return false;
    }
    let unit = t[n..].trim();
    matches!(
        unit,
        "ns" | "us"
            | "µs"
            | "ms"
            | "s"
            | "m"
            | "h"
            | "d"
            | "w"
            | "nanosecond"
            | "nanoseconds"
            | "microsecond"
            | "microseconds"
            | "millisecond"
            | "milliseconds"
            | "second"
            | "seconds"
            | "sec"
            | "secs"
            | "minute"
            | "minutes"
            | "min"
            | "mins"
            | "hour"
            | "hours"
            | "hr"
            | "hrs"
            | "day"
            | "days"
            | "week"
            | "weeks"
            | "wk"
            | "wks"
    )
}

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_checked_format_accepts_and_refuses() {
        let cases: &[(&str, &str, &str)] = &[
            ("bsonobjectid", "507f1f77bcf86cd799439011", "507f1f77"),
            ("uri", "https://example.com/x", "not a uri"),
            ("email", "a@example.com", "a.example.com"),
            ("hostname", "example.com", "-bad-.com"),
            ("ipv4", "10.0.0.1", "10.0.0.256"),
            ("ipv6", "2001:db8::1", "10.0.0.1"),
            ("cidr", "10.0.0.0/8", "10.0.0.0/33"),
            ("mac", "00:1a:2b:3c:4d:5e", "00:1a:2b"),
            ("uuid", "123e4567-e89b-12d3-a456-426614174000", "123e4567"),
            (
                "uuid4",
                "123e4567-e89b-42d3-a456-426614174000",
                "123e4567-e89b-12d3-a456-426614174000",
            ),
            ("isbn10", "0-306-40615-2", "0-306-40615-3"),
            ("isbn13", "978-0-306-40615-7", "978-0-306-40615-8"),
            ("creditcard", "4111 1111 1111 1111", "4111 1111 1111 1112"),
            ("ssn", "123-45-6789", "123-456-789"),
            ("hexcolor", "#ff00aa", "#ff00a"),
            ("rgbcolor", "rgb(1, 2, 255)", "rgb(1, 2, 256)"),
            ("byte", "aGVsbG8=", "not base64!"),
            ("date", "2024-02-29", "2023-02-29"),
            ("date-time", "2024-01-01T10:00:00Z", "2024-01-01 10:00"),
            ("duration", "1h30m", "soon"),
        ];
        for (format, good, bad) in cases {
            assert_eq!(check(format, good), Some(true), "{format} {good}");
            assert_eq!(check(format, bad), Some(false), "{format} {bad}");
        }
        assert_eq!(check("int32", "x"), None);
        assert_eq!(check("password", "anything"), Some(true));
    }
}
