//! awk's records: a [`Reader`] splits an input by `RS` (a byte, blank lines for `""`, or a
//! regular expression), reading through the [`Bridge`]; [`MainInput`] is where the main
//! input stands among the operands.

use regex::Regex;

use super::bridge::Bridge;
use fakekube_runtime::io::Input;

/// Longest record kept (a longer one is cut there).
const MAX_RECORD: usize = fakekube_runtime::fs::MAX_FILE_SIZE;

/// A source of records.
pub(super) struct Reader {
    input: Input,
    /// Bytes read and not yet returned.
    buf: Vec<u8>,
    /// The input has ended.
    eof: bool,
}

/// How records end.
pub(super) enum Separator {
    /// One byte.
    Byte(u8),
    /// Blank lines (`RS = ""`).
    Paragraph,
    /// A regular expression.
    Regex(Regex),
}

impl Reader {
    /// Records from an input.
    pub(super) fn new(input: Input) -> Self {
        Reader {
            input,
            buf: Vec::new(),
            eof: false,
        }
    }

    /// Reads more into the buffer; false at the end.
    fn fill(&mut self, bridge: &Bridge) -> bool {
        if self.eof {
            return false;
        }
        match bridge.read(&self.input) {
            Some(chunk) => {
                self.buf.extend_from_slice(&chunk);
                true
            }
            None => {
                self.eof = true;
                false
            }
        }
    }

    /// The next record, without its separator; `None` at the end.
    pub(super) fn next(&mut self, sep: &Separator, bridge: &Bridge) -> Option<String> {
        if let Separator::Paragraph = sep {
            // Leading newlines do not start a record.
            loop {
                let skip = self.buf.iter().take_while(|b| **b == b'\n').count();
                self.buf.drain(..skip);
                if !self.buf.is_empty() || !self.fill(bridge) {
                    break;
                }
            }
        }
        loop {
            let found = match sep {
                Separator::Byte(b) => self.buf.iter().position(|x| x == b).map(|p| (p, p + 1)),
                Separator::Paragraph => find_blank_lines(&self.buf, self.eof),
                Separator::Regex(re) => {
                    let text = String::from_utf8_lossy(&self.buf);
                    re.find(&text)
                        .filter(|m| m.end() > m.start())
                        .filter(|m| self.eof || m.end() < text.len())
                        .map(|m| (m.start(), m.end()))
                }
            };
            if let Some((start, end)) = found {
                let rec = String::from_utf8_lossy(&self.buf[..start]).into_owned();
                self.buf.drain(..end.min(self.buf.len()));
                return Some(rec);
            }
            if self.buf.len() >= MAX_RECORD || !self.fill(bridge) {
                if self.buf.is_empty() {
                    return None;
                }
                let mut rec = String::from_utf8_lossy(&std::mem::take(&mut self.buf)).into_owned();
                if let Separator::Paragraph = sep {
                    let trimmed = rec.trim_end_matches('\n').len();
                    rec.truncate(trimmed);
                }
                return Some(rec);
            }
        }
    }
}

/// The first run of two or more newlines that is known to be complete: its start and end.
fn find_blank_lines(buf: &[u8], eof: bool) -> Option<(usize, usize)> {
    let mut i = 0;
    while i + 1 < buf.len() {
        if buf[i] == b'\n' && buf[i + 1] == b'\n' {
            let mut end = i + 2;
            while buf.get(end) == Some(&b'\n') {
                end += 1;
            }
            if end == buf.len() && !eof {
                return None;
            }
            return Some((i, end));
        }
        i += 1;
    }
    None
}

/// Where the main input is.
#[derive(Default)]
pub(super) struct MainInput {
    /// The last `ARGV` index looked at.
    pub(super) argind: usize,
    /// The file being read.
    pub(super) reader: Option<Reader>,
    /// An operand named a file (so stdin is not read at the end).
    pub(super) used_file: bool,
    /// Everything has been read.
    pub(super) done: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The records of `data`, read on a thread through a bridge served here.
    async fn records(data: &str, sep: Separator) -> Vec<String> {
        let (bridge, requests) = Bridge::new();
        let data = data.to_string();
        let reading = std::thread::spawn(move || {
            let mut r = Reader::new(Input::bytes(bytes::Bytes::from(data)));
            let mut out = Vec::new();
            while let Some(rec) = r.next(&sep, &bridge) {
                out.push(rec);
            }
            out
        });
        super::super::bridge::serve(requests).await;
        reading.join().unwrap_or_default()
    }

    #[tokio::test]
    async fn records_split_by_newline_a_character_paragraphs_or_a_regex() {
        assert_eq!(records("a\nb\n", Separator::Byte(b'\n')).await, ["a", "b"]);
        assert_eq!(records("a;b", Separator::Byte(b';')).await, ["a", "b"]);
        assert_eq!(
            records("\n\na\nb\n\n\nc\n", Separator::Paragraph).await,
            ["a\nb", "c"]
        );
        let re = Regex::new("[0-9]+").expect("a regex");
        assert_eq!(
            records("x12y3z", Separator::Regex(re)).await,
            ["x", "y", "z"]
        );
    }
}
