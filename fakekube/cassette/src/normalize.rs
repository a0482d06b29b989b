//! The normalization map of a replay: which generated names and times of the recording stand
//! for which of this run, learned while comparing requests and applied to every answer.
//!
//! Strings are compared piece by piece: timestamps (RFC 3339) match any timestamp; words
//! (runs of ASCII letters and digits) must be equal, unless they look generated, in which case
//! a recorded word may stand for a different word of this run, consistently across the whole
//! replay (the map is one-to-one). A word looks generated when it is at least five characters
//! long and touches a `-`: the random part of `cf-k3x9qa-12`, the groups of a UUID, a
//! generated name's suffix. Everything else (separators, short words, plain words such as
//! `hello`) must be equal.

use std::collections::HashMap;

use serde_json::Value;
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

/// The shortest word that may stand for another.
const MIN_GENERATED: usize = 5;

/// A piece of a string.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Piece<'a> {
    /// Text that must match exactly: separators and anything not ASCII alphanumeric.
    Other(&'a str),
    /// A run of ASCII letters and digits.
    Word(&'a str),
    /// An RFC 3339 timestamp.
    Time(&'a str),
}

/// Splits `s` into pieces.
fn pieces(s: &str) -> Vec<Piece<'_>> {
    let bytes = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let start = i;
        if bytes[i].is_ascii_alphanumeric() {
            if let Some(len) = timestamp_len(&bytes[i..]) {
                i += len;
                out.push(Piece::Time(&s[start..i]));
                continue;
            }
            while i < bytes.len() && bytes[i].is_ascii_alphanumeric() {
                i += 1;
            }
            out.push(Piece::Word(&s[start..i]));
        } else {
            while i < bytes.len() && !bytes[i].is_ascii_alphanumeric() {
                i += 1;
            }
            out.push(Piece::Other(&s[start..i]));
        }
    }
    out
}

/// The length of the RFC 3339 timestamp at the start of `b`, if there is one
/// (`2025-01-02T03:04:05Z`, with optional fraction and a `Z` or `±hh:mm` offset).
fn timestamp_len(b: &[u8]) -> Option<usize> {
    const SHAPE: &[u8] = b"dddd-dd-ddTdd:dd:dd";
    if b.len() < SHAPE.len() + 1 {
        return None;
    }
    for (c, s) in b.iter().zip(SHAPE) {
        let ok = match s {
            b'd' => c.is_ascii_digit(),
            other => c == other,
        };
        if !ok {
            return None;
        }
    }
    let mut i = SHAPE.len();
    if b.get(i) == Some(&b'.') {
        let digits = b[i + 1..].iter().take_while(|c| c.is_ascii_digit()).count();
        if digits == 0 {
            return None;
        }
        i += 1 + digits;
    }
    match b.get(i) {
        Some(b'Z') => Some(i + 1),
        Some(b'+' | b'-') => {
            let offset = b.get(i + 1..i + 6)?;
            (offset[0].is_ascii_digit()
                && offset[1].is_ascii_digit()
                && offset[2] == b':'
                && offset[3].is_ascii_digit()
                && offset[4].is_ascii_digit())
            .then_some(i + 6)
        }
        _ => None,
    }
}

/// Whether the word at `index` of `pieces` looks generated.
fn generated(pieces: &[Piece<'_>], index: usize) -> bool {
    let Some(Piece::Word(word)) = pieces.get(index) else {
        return false;
    };
    let dash_before = index
        .checked_sub(1)
        .and_then(|i| pieces.get(i))
        .is_some_and(|p| matches!(p, Piece::Other(o) if o.ends_with('-')));
    let dash_after = pieces
        .get(index + 1)
        .is_some_and(|p| matches!(p, Piece::Other(o) if o.starts_with('-')));
    word.len() >= MIN_GENERATED && (dash_before || dash_after)
}

/// The skeleton of `s`: its words of [`MIN_GENERATED`] characters or more as `*`, its
/// timestamps as `T`, everything else kept. Two strings that match under any map have the same
/// skeleton (only such words may stand for others), so it indexes what may match cheaply.
pub(crate) fn skeleton(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for piece in pieces(s) {
        match piece {
            Piece::Other(text) => out.push_str(text),
            Piece::Word(word) if word.len() >= MIN_GENERATED => out.push('*'),
            Piece::Word(word) => out.push_str(word),
            Piece::Time(_) => out.push('T'),
        }
    }
    out
}

/// A timestamp's instant, as nanoseconds since the Unix epoch (the map's key).
fn instant(text: &str) -> Option<(i128, OffsetDateTime)> {
    let t = OffsetDateTime::parse(text, &Rfc3339).ok()?;
    Some((t.unix_timestamp_nanos(), t))
}

/// Formats `t` in UTC like `like`: with as many fraction digits, and `Z`.
fn format_like(t: OffsetDateTime, like: &str) -> String {
    let t = t.to_offset(time::UtcOffset::UTC);
    let digits = like
        .split_once('.')
        .map_or(0, |(_, f)| f.bytes().take_while(u8::is_ascii_digit).count());
    let mut out = format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}",
        t.year(),
        u8::from(t.month()),
        t.day(),
        t.hour(),
        t.minute(),
        t.second()
    );
    if digits > 0 {
        let nanos = format!("{:09}", t.nanosecond());
        out.push('.');
        out.push_str(&nanos[..digits.min(9)]);
        for _ in 9..digits {
            out.push('0');
        }
    }
    out.push('Z');
    out
}

/// The normalization map: recorded words and times, and what they stand for in this run.
#[derive(Debug, Clone, Default)]
pub(crate) struct Bindings {
    /// Recorded word → this run's word.
    words: HashMap<String, String>,
    /// This run's word → recorded word.
    reverse: HashMap<String, String>,
    /// Recorded instant → this run's instant.
    times: HashMap<i128, OffsetDateTime>,
    /// How far to move a recorded time that no request bound: from the recording's start to
    /// the replay's.
    shift: time::Duration,
}

/// What a successful comparison learned, to be kept with [`Bindings::learn`].
#[derive(Debug, Default)]
pub(crate) struct Learned {
    words: Vec<(String, String)>,
    times: Vec<(i128, OffsetDateTime)>,
}

impl Bindings {
    /// An empty map that moves unbound recorded times by `shift`.
    pub(crate) fn new(shift: time::Duration) -> Bindings {
        Bindings {
            shift,
            ..Bindings::default()
        }
    }

    /// Starts comparing recorded values with this run's under the map.
    pub(crate) fn compare(&self) -> Comparison<'_> {
        Comparison {
            base: self,
            words: HashMap::new(),
            reverse: HashMap::new(),
            times: Vec::new(),
            differences: 0,
        }
    }

    /// Keeps what a comparison learned.
    pub(crate) fn learn(&mut self, learned: Learned) {
        for (recorded, live) in learned.words {
            self.reverse.insert(live.clone(), recorded.clone());
            self.words.insert(recorded, live);
        }
        for (recorded, live) in learned.times {
            self.times.entry(recorded).or_insert(live);
        }
    }

    /// The recorded word `word` stands for in this run (itself when unbound).
    pub(crate) fn word<'s>(&'s self, word: &'s str) -> &'s str {
        self.words.get(word).map_or(word, String::as_str)
    }

    /// A recorded string in this run's terms: bound words replaced, times replaced by what
    /// they were bound to or moved by the shift.
    pub(crate) fn rewrite(&self, recorded: &str) -> String {
        if self.words.is_empty() && self.times.is_empty() && self.shift.is_zero() {
            return recorded.to_owned();
        }
        let mut out = String::with_capacity(recorded.len());
        for piece in pieces(recorded) {
            match piece {
                Piece::Other(text) => out.push_str(text),
                Piece::Word(word) => out.push_str(self.word(word)),
                Piece::Time(text) => match instant(text) {
                    Some((key, t)) => {
                        let live = self.times.get(&key).copied().unwrap_or(t + self.shift);
                        out.push_str(&format_like(live, text));
                    }
                    None => out.push_str(text),
                },
            }
        }
        out
    }

    /// A recorded string of an answer in this run's terms, as [`Bindings::rewrite`]; its
    /// generated words that stand for nothing yet stand for themselves from now on. The
    /// client learns them from this answer (a name or uid the server made), so a later
    /// request that names them means these, never another recorded word.
    pub(crate) fn answer(&mut self, recorded: &str) -> String {
        let pieces = pieces(recorded);
        for i in 0..pieces.len() {
            if let Piece::Word(word) = pieces[i]
                && generated(&pieces, i)
                && !self.words.contains_key(word)
                && !self.reverse.contains_key(word)
            {
                self.words.insert(word.to_owned(), word.to_owned());
                self.reverse.insert(word.to_owned(), word.to_owned());
            }
        }
        self.rewrite(recorded)
    }

    /// A recorded JSON value of an answer in this run's terms, as [`Bindings::answer`] does
    /// for its strings.
    pub(crate) fn answer_json(&mut self, recorded: &Value) -> Value {
        match recorded {
            Value::String(s) => Value::String(self.answer(s)),
            Value::Array(items) => {
                Value::Array(items.iter().map(|v| self.answer_json(v)).collect())
            }
            Value::Object(map) => Value::Object(
                map.iter()
                    .map(|(k, v)| (k.clone(), self.answer_json(v)))
                    .collect(),
            ),
            other => other.clone(),
        }
    }

    /// A recorded JSON value in this run's terms (strings rewritten, keys kept).
    pub(crate) fn rewrite_json(&self, recorded: &Value) -> Value {
        match recorded {
            Value::String(s) => Value::String(self.rewrite(s)),
            Value::Array(items) => {
                Value::Array(items.iter().map(|v| self.rewrite_json(v)).collect())
            }
            Value::Object(map) => Value::Object(
                map.iter()
                    .map(|(k, v)| (k.clone(), self.rewrite_json(v)))
                    .collect(),
            ),
            other => other.clone(),
        }
    }
}

/// One comparison of recorded values with this run's, counting differences and the bindings
/// it would need.
pub(crate) struct Comparison<'a> {
    base: &'a Bindings,
    words: HashMap<String, String>,
    reverse: HashMap<String, String>,
    times: Vec<(i128, OffsetDateTime)>,
    /// How many differences were found so far (zero means a match).
    pub(crate) differences: usize,
}

impl Comparison<'_> {
    /// Compares a recorded string with this run's; returns whether they match.
    pub(crate) fn text(&mut self, recorded: &str, live: &str) -> bool {
        let r = pieces(recorded);
        let l = pieces(live);
        let same = r.len() == l.len()
            && r.iter()
                .zip(&l)
                .enumerate()
                .all(|(i, (a, b))| self.piece(&r, &l, i, *a, *b));
        if !same {
            self.differences += 1;
        }
        same
    }

    fn piece(
        &mut self,
        r: &[Piece<'_>],
        l: &[Piece<'_>],
        i: usize,
        a: Piece<'_>,
        b: Piece<'_>,
    ) -> bool {
        match (a, b) {
            (Piece::Other(x), Piece::Other(y)) => x == y,
            (Piece::Time(x), Piece::Time(y)) => {
                if let (Some((key, _)), Some((_, live))) = (instant(x), instant(y)) {
                    self.times.push((key, live));
                }
                true
            }
            (Piece::Word(x), Piece::Word(y)) => self.word(x, y, generated(r, i) && generated(l, i)),
            _ => false,
        }
    }

    /// Whether recorded word `x` may stand for `y`, binding them if both look generated.
    fn word(&mut self, x: &str, y: &str, may_bind: bool) -> bool {
        if let Some(bound) = self.base.words.get(x).or_else(|| self.words.get(x)) {
            return bound == y;
        }
        if self.base.reverse.contains_key(y) || self.reverse.contains_key(y) {
            return false;
        }
        if x == y {
            return true;
        }
        if !may_bind {
            return false;
        }
        self.words.insert(x.to_owned(), y.to_owned());
        self.reverse.insert(y.to_owned(), x.to_owned());
        true
    }

    /// Compares a recorded JSON value with this run's, counting each differing leaf.
    pub(crate) fn json(&mut self, recorded: &Value, live: &Value) {
        match (recorded, live) {
            (Value::Object(r), Value::Object(l)) => {
                for (key, rv) in r {
                    match l.get(key) {
                        Some(lv) => self.json(rv, lv),
                        None => self.differences += 1,
                    }
                }
                self.differences += l.keys().filter(|k| !r.contains_key(*k)).count();
            }
            (Value::Array(r), Value::Array(l)) => {
                for (rv, lv) in r.iter().zip(l) {
                    self.json(rv, lv);
                }
                self.differences += r.len().abs_diff(l.len());
            }
            (Value::String(r), Value::String(l)) => {
                self.text(r, l);
            }
            (r, l) => {
                if r != l {
                    self.differences += 1;
                }
            }
        }
    }

    /// Counts one difference found by the caller.
    pub(crate) fn differ(&mut self) {
        self.differences += 1;
    }

    /// What this comparison would bind.
    pub(crate) fn learned(self) -> Learned {
        Learned {
            words: self.words.into_iter().collect(),
            times: self.times,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn matches(b: &Bindings, recorded: &str, live: &str) -> Option<Learned> {
        let mut c = b.compare();
        c.text(recorded, live);
        (c.differences == 0).then(|| c.learned())
    }

    #[test]
    fn pieces_split_words_separators_and_timestamps() {
        assert_eq!(
            pieces("cf-ab12cd-3 at 2025-01-02T03:04:05.123Z!"),
            vec![
                Piece::Word("cf"),
                Piece::Other("-"),
                Piece::Word("ab12cd"),
                Piece::Other("-"),
                Piece::Word("3"),
                Piece::Other(" "),
                Piece::Word("at"),
                Piece::Other(" "),
                Piece::Time("2025-01-02T03:04:05.123Z"),
                Piece::Other("!"),
            ]
        );
        assert_eq!(timestamp_len(b"2025-01-02T03:04:05+02:00"), Some(25));
        assert_eq!(timestamp_len(b"2025-01-02T03:04:05"), None);
    }

    #[test]
    fn a_generated_word_binds_once_and_then_must_stay_the_same() {
        let mut b = Bindings::default();
        let learned = matches(&b, "/sandboxes/cf-ab12cd-3", "/sandboxes/cf-zz99yy-3").unwrap();
        b.learn(learned);
        assert!(matches(&b, "cf-ab12cd-4", "cf-zz99yy-4").is_some());
        assert!(
            matches(&b, "cf-ab12cd-4", "cf-qq11ww-4").is_none(),
            "bound elsewhere"
        );
        assert!(
            matches(&b, "cf-ab12cd-4", "cf-ab12cd-4").is_none(),
            "the recorded word itself"
        );
        assert!(
            matches(&b, "cf-other1-4", "cf-zz99yy-4").is_none(),
            "one to one"
        );
        assert_eq!(b.rewrite("pod cf-ab12cd-7 ready"), "pod cf-zz99yy-7 ready");
    }

    #[test]
    fn short_or_plain_words_and_separators_must_be_equal() {
        let b = Bindings::default();
        assert!(
            matches(&b, "cf-ab12cd-3", "cf-ab12cd-4").is_none(),
            "counters differ"
        );
        assert!(
            matches(&b, "echo hello", "echo world").is_none(),
            "plain words"
        );
        assert!(matches(&b, "a/b", "a.b").is_none());
        assert!(matches(&b, "v1beta1", "v1alpha1").is_none());
    }

    #[test]
    fn timestamps_match_any_timestamp_and_answers_get_the_bound_one() {
        let mut b = Bindings::new(time::Duration::hours(1));
        let learned = matches(&b, "2024-05-01T10:00:05Z", "2025-06-01T12:30:00Z").unwrap();
        b.learn(learned);
        assert_eq!(
            b.rewrite("until 2024-05-01T10:00:05Z"),
            "until 2025-06-01T12:30:00Z"
        );
        assert_eq!(
            b.rewrite("2024-05-01T10:00:05.000000Z"),
            "2025-06-01T12:30:00.000000Z",
            "the same instant in another precision"
        );
        assert_eq!(
            b.rewrite("2024-05-01T09:00:00Z"),
            "2024-05-01T10:00:00Z",
            "shifted"
        );
    }

    #[test]
    fn a_generated_word_first_seen_in_an_answer_stands_for_itself() {
        let mut b = Bindings::default();
        let learned = matches(&b, "cf-ab12cd-1", "cf-zz99yy-1").unwrap();
        b.learn(learned);
        assert_eq!(
            b.answer("pod warm-q7x2k of cf-ab12cd-1"),
            "pod warm-q7x2k of cf-zz99yy-1"
        );
        assert!(
            matches(&b, "/pods/warm-q7x2k", "/pods/warm-a1b2c").is_none(),
            "the client was told warm-q7x2k, so another name is another pod"
        );
        assert!(matches(&b, "/pods/warm-q7x2k", "/pods/warm-q7x2k").is_some());
    }

    #[test]
    fn json_counts_each_differing_leaf_and_learns_from_strings() {
        let b = Bindings::default();
        let mut c = b.compare();
        c.json(
            &json!({"metadata": {"name": "lv-abcdef-d"}, "spec": {"replicas": 1}, "gone": 1}),
            &json!({"metadata": {"name": "lv-uvwxyz-d"}, "spec": {"replicas": 2}, "new": 1}),
        );
        assert_eq!(c.differences, 3);
        let mut b = Bindings::default();
        let mut c = b.compare();
        c.json(&json!(["lv-abcdef-d"]), &json!(["lv-uvwxyz-d"]));
        assert_eq!(c.differences, 0);
        b.learn(c.learned());
        assert_eq!(
            b.rewrite_json(&json!({"items": ["lv-abcdef-w"]})),
            json!({"items": ["lv-uvwxyz-w"]})
        );
    }
}
