//! The message a replay stops with: the request (or frame) that matched nothing, beside the
//! nearest recorded one, line by line, differing lines marked with `!`.

use std::fmt::Write as _;

use crate::book::{Asked, Miss};
use crate::format::{Body, Recorded};

/// The widest a column gets, in characters.
const WIDTH: usize = 72;

/// The message for a request that matched no recorded exchange.
pub(crate) fn request(miss: &Miss, number: u64) -> String {
    let asked = &miss.asked;
    let mut out = format!(
        "fakekube replay: request {number} of this replay (client `{}`) matches no recorded \
         exchange, so the replay stops here.\n",
        asked.client
    );
    let Some(nearest) = &miss.nearest else {
        let _ = writeln!(
            out,
            "The cassette records no exchange of client `{}`.",
            asked.client
        );
        out.push_str(&columns(
            "this request",
            &lines(asked),
            "(nothing recorded)",
            &[],
        ));
        return out;
    };
    let recorded = &nearest.recorded;
    if let Some((blocker, blocker_asked)) = &nearest.blocked_by {
        let _ = writeln!(
            out,
            "Exchange {} matches it, but comes after exchange {} ({} {}, cassette line {}) on the \
             same resource, which was not asked for.",
            recorded.exchange.id,
            blocker.exchange.id,
            blocker_asked.method,
            blocker_asked.path,
            blocker.line
        );
    }
    let _ = writeln!(
        out,
        "The nearest recorded request differs in {} part(s); recorded names are shown as this \
         run's.",
        nearest.differences
    );
    out.push_str(&columns(
        "this request",
        &lines(asked),
        &title(recorded),
        &lines(&nearest.asked),
    ));
    out
}

/// The message for an upgraded connection's frame that differs from the recorded one.
pub(crate) fn frame(
    recorded: &Recorded,
    index: usize,
    live: &[String],
    expected: &[String],
) -> String {
    let mut out = format!(
        "fakekube replay: on the upgraded connection of exchange {} ({} {}, cassette line {}), \
         the client's frame {} differs from the recording, so the replay stops here.\n",
        recorded.exchange.id,
        recorded.exchange.request.method,
        recorded.exchange.request.path,
        recorded.line,
        index + 1
    );
    out.push_str(&columns("this frame", live, "recorded frame", expected));
    out
}

fn title(recorded: &Recorded) -> String {
    format!(
        "recorded: exchange {} (cassette line {})",
        recorded.exchange.id, recorded.line
    )
}

/// A request as lines: method, path, one line per query pair, content type, body.
fn lines(asked: &Asked) -> Vec<String> {
    let mut out = vec![
        if asked.upgrade {
            format!("{} (upgrade)", asked.method)
        } else {
            asked.method.clone()
        },
        asked.path.clone(),
    ];
    for (k, v) in &asked.query {
        out.push(format!("?{k}={v}"));
    }
    if let Some(ct) = &asked.content_type {
        out.push(format!("content-type: {ct}"));
    }
    out.extend(body_lines(&asked.body));
    out
}

/// A body as lines: pretty JSON, text, or its size in base64.
pub(crate) fn body_lines(body: &Body) -> Vec<String> {
    if let Some(value) = &body.body {
        return serde_json::to_string_pretty(value)
            .unwrap_or_default()
            .lines()
            .map(str::to_owned)
            .collect();
    }
    if let Some(text) = body.payload.whole_text() {
        return text.lines().map(|l| format!("{l:?}")).collect();
    }
    if !body.is_empty() {
        return vec![format!(
            "({} bytes, not text)",
            body.payload.to_bytes().len()
        )];
    }
    vec!["(no body)".to_owned()]
}

/// Two columns side by side, rows marked `!` where they differ.
fn columns(left_title: &str, left: &[String], right_title: &str, right: &[String]) -> String {
    let width = left
        .iter()
        .map(|l| l.chars().count())
        .chain([left_title.chars().count()])
        .max()
        .unwrap_or(0)
        .min(WIDTH);
    let mut out = String::new();
    let _ = writeln!(out, "  {} | {}", cut(left_title, width), right_title);
    let _ = writeln!(
        out,
        "  {}-+-{}",
        "-".repeat(width),
        "-".repeat(width.min(40))
    );
    for row in 0..left.len().max(right.len()) {
        let l = left.get(row).map_or("", String::as_str);
        let r = right.get(row).map_or("", String::as_str);
        let mark = if l == r { ' ' } else { '!' };
        let _ = writeln!(
            out,
            "{mark} {} | {}",
            cut(l, width),
            cut(r, WIDTH).trim_end()
        );
    }
    out
}

/// `text` cut or padded to `width` characters.
fn cut(text: &str, width: usize) -> String {
    let count = text.chars().count();
    if count > width {
        let mut s: String = text.chars().take(width.saturating_sub(1)).collect();
        s.push('…');
        s
    } else {
        format!("{text}{}", " ".repeat(width - count))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn differing_rows_are_marked_and_equal_rows_are_not() {
        let text = columns(
            "this request",
            &["GET".into(), "/api/v1/pods/a".into()],
            "recorded",
            &["GET".into(), "/api/v1/pods/b".into()],
        );
        let rows: Vec<&str> = text.lines().collect();
        assert!(rows[2].starts_with("  GET"));
        assert!(rows[3].starts_with("! /api/v1/pods/a"));
        assert!(rows[3].ends_with("| /api/v1/pods/b"));
    }

    #[test]
    fn long_cells_are_cut_with_an_ellipsis() {
        assert_eq!(cut("abcdef", 4), "abc…");
        assert_eq!(cut("ab", 4), "ab  ");
    }
}
