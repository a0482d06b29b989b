//! Terminals: what an exec with `tty=true` runs on, as a Linux pseudo-terminal in its default
//! modes behaves.
//!
//! A [`Terminal`] holds the window size (updated by the client's resize messages), the modes
//! (`stty`) and the foreground job's interrupt. Its [`Discipline`] is the line discipline
//! between what the client types and what the process reads:
//!
//! - canonical mode: input is delivered a line at a time; backspace (`^?`, `^H`) erases a
//!   character, `^U` the line, `^W` a word; `^D` delivers the line typed so far, or end of
//!   input on an empty line (the next read goes on: a terminal's end of input is not final);
//! - echo of what is typed (control characters as `^X`), `\r` read as `\n` (ICRNL);
//! - `^C` drops the line and what was typed ahead but not read yet, and interrupts the
//!   foreground job (ISIG);
//! - on output, `\n` is written as `\r\n` (ONLCR); stdout and stderr both go to the terminal.
//!
//! `stty raw` / `-icanon` / `-echo` switch canonical mode and echo off, as programs that read
//! keys one at a time do.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use bytes::Bytes;
use tokio::sync::{mpsc, watch};

/// A terminal's window size, in character cells.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct WindowSize {
    /// Rows (lines).
    pub rows: u16,
    /// Columns.
    pub cols: u16,
}

/// What interrupts the foreground job when `^C` is typed.
pub type Interrupt = Arc<dyn Fn() + Send + Sync>;

/// A terminal's modes, the subset of `termios` the runtime honours.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Modes {
    /// ICANON: line editing, input delivered by lines.
    pub icanon: bool,
    /// ECHO: typed characters are echoed.
    pub echo: bool,
    /// ISIG: `^C` interrupts the foreground job.
    pub isig: bool,
    /// ICRNL: `\r` is read as `\n`.
    pub icrnl: bool,
    /// OPOST + ONLCR: `\n` is written as `\r\n`.
    pub onlcr: bool,
}

impl Default for Modes {
    /// A fresh pseudo-terminal's modes (`stty sane`).
    fn default() -> Self {
        Modes {
            icanon: true,
            echo: true,
            isig: true,
            icrnl: true,
            onlcr: true,
        }
    }
}

/// What the terminal's users change.
struct State {
    /// The modes.
    modes: Modes,
    /// The foreground job's interrupt.
    foreground: Option<Interrupt>,
}

/// The terminal's shared state.
struct Shared {
    /// The window size as the client last reported it.
    size: watch::Receiver<WindowSize>,
    /// Modes and foreground.
    state: Mutex<State>,
    /// Bumped by each `^C`: input typed before it and not read yet is dropped.
    flushes: AtomicU64,
}

/// A terminal; clones share it.
#[derive(Clone)]
pub struct Terminal(Arc<Shared>);

impl std::fmt::Debug for Terminal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Terminal")
            .field("size", &self.size())
            .field("modes", &self.modes())
            .finish_non_exhaustive()
    }
}

/// The name `tty` prints for every terminal.
pub const TTY_NAME: &str = "/dev/pts/0";

impl Terminal {
    /// A terminal in its default modes whose size follows `size`.
    pub fn new(size: watch::Receiver<WindowSize>) -> Self {
        Terminal(Arc::new(Shared {
            size,
            state: Mutex::new(State {
                modes: Modes::default(),
                foreground: None,
            }),
            flushes: AtomicU64::new(0),
        }))
    }

    /// Locks the modes and foreground.
    fn state(&self) -> MutexGuard<'_, State> {
        self.0.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The window size.
    pub fn size(&self) -> WindowSize {
        *self.0.size.borrow()
    }

    /// The modes.
    pub fn modes(&self) -> Modes {
        self.state().modes
    }

    /// Sets the modes.
    pub fn set_modes(&self, modes: Modes) {
        self.state().modes = modes;
    }

    /// Makes `job` the foreground job (the one `^C` interrupts); returns the previous one.
    pub fn set_foreground(&self, job: Option<Interrupt>) -> Option<Interrupt> {
        std::mem::replace(&mut self.state().foreground, job)
    }

    /// How many times typed-ahead input was dropped (each `^C`); input delivered under an older
    /// count is stale.
    pub fn flushes(&self) -> u64 {
        self.0.flushes.load(Ordering::SeqCst)
    }

    /// Drops typed-ahead input and interrupts the foreground job, if any.
    fn interrupt(&self) {
        self.0.flushes.fetch_add(1, Ordering::SeqCst);
        let job = self.state().foreground.clone();
        if let Some(job) = job {
            job();
        }
    }

    /// What the terminal shows for `data` written by a process (ONLCR).
    pub fn translate_output(&self, data: Bytes) -> Bytes {
        if !self.modes().onlcr || !data.contains(&b'\n') {
            return data;
        }
        let mut out = Vec::with_capacity(data.len() + data.len() / 8);
        for &b in data.iter() {
            if b == b'\n' {
                out.push(b'\r');
            }
            out.push(b);
        }
        Bytes::from(out)
    }
}

/// What the process reads from the terminal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Delivery {
    /// Input bytes.
    Data(Bytes),
    /// End of input for one read (`^D` on an empty line).
    Eof,
}

/// What feeding typed bytes to the discipline gave.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Fed {
    /// Input for the process, in order.
    pub deliver: Vec<Delivery>,
    /// What the terminal echoes, already translated for output.
    pub echo: Vec<u8>,
}

/// The line discipline of one terminal: the line being typed, and what each typed byte does.
#[derive(Debug)]
pub struct Discipline {
    /// The terminal.
    term: Terminal,
    /// The line typed so far (canonical mode).
    line: Vec<u8>,
}

/// `^C`.
const VINTR: u8 = 0x03;
/// `^D`.
const VEOF: u8 = 0x04;
/// `^H`.
const BACKSPACE: u8 = 0x08;
/// `^U`.
const VKILL: u8 = 0x15;
/// `^W`.
const VWERASE: u8 = 0x17;
/// `^?`.
const VERASE: u8 = 0x7f;

impl Discipline {
    /// The discipline of `term`, with an empty line.
    pub fn new(term: Terminal) -> Self {
        Discipline {
            term,
            line: Vec::new(),
        }
    }

    /// Takes bytes the client typed.
    pub fn feed(&mut self, data: &[u8]) -> Fed {
        let mut fed = Fed::default();
        let mut raw = Vec::new();
        for &typed in data {
            let modes = self.term.modes();
            let b = if modes.icrnl && typed == b'\r' {
                b'\n'
            } else {
                typed
            };
            if modes.isig && b == VINTR {
                self.line.clear();
                flush_raw(&mut raw, &mut fed);
                if modes.echo {
                    fed.echo.extend_from_slice(b"^C");
                }
                self.term.interrupt();
                continue;
            }
            if !modes.icanon {
                raw.push(b);
                if modes.echo {
                    echo_char(b, modes, &mut fed.echo);
                }
                continue;
            }
            match b {
                VEOF => {
                    let line = std::mem::take(&mut self.line);
                    fed.deliver.push(if line.is_empty() {
                        Delivery::Eof
                    } else {
                        Delivery::Data(Bytes::from(line))
                    });
                }
                VERASE | BACKSPACE => {
                    if self.pop_char() && modes.echo {
                        fed.echo.extend_from_slice(b"\x08 \x08");
                    }
                }
                VKILL => {
                    while self.pop_char() {
                        if modes.echo {
                            fed.echo.extend_from_slice(b"\x08 \x08");
                        }
                    }
                }
                VWERASE => {
                    while self.line.last().is_some_and(|c| *c == b' ' || *c == b'\t') {
                        self.pop_char();
                        if modes.echo {
                            fed.echo.extend_from_slice(b"\x08 \x08");
                        }
                    }
                    while self.line.last().is_some_and(|c| *c != b' ' && *c != b'\t') {
                        self.pop_char();
                        if modes.echo {
                            fed.echo.extend_from_slice(b"\x08 \x08");
                        }
                    }
                }
                b'\n' => {
                    self.line.push(b'\n');
                    if modes.echo {
                        echo_char(b'\n', modes, &mut fed.echo);
                    }
                    let line = std::mem::take(&mut self.line);
                    fed.deliver.push(Delivery::Data(Bytes::from(line)));
                }
                other => {
                    self.line.push(other);
                    if modes.echo {
                        echo_char(other, modes, &mut fed.echo);
                    }
                }
            }
        }
        flush_raw(&mut raw, &mut fed);
        fed
    }

    /// Removes the last character (a whole UTF-8 sequence) of the line; `false` when empty.
    fn pop_char(&mut self) -> bool {
        let mut popped = false;
        while let Some(b) = self.line.pop() {
            popped = true;
            if !(0x80..0xc0).contains(&b) {
                break;
            }
        }
        popped
    }

    /// The terminal's input path: reads what the client types from `typed` until it ends,
    /// delivers cooked input on `input` (each chunk with the terminal's flush count, see
    /// [`Terminal::flushes`]; an empty chunk is `^D`) and echoes on `echo`. When `typed` ends,
    /// the input ends too (the line typed so far is delivered first).
    pub async fn run(
        mut self,
        mut typed: mpsc::Receiver<Bytes>,
        input: mpsc::Sender<(u64, Bytes)>,
        echo: mpsc::Sender<Bytes>,
    ) {
        while let Some(chunk) = typed.recv().await {
            for (from, to) in split_after_interrupts(&chunk) {
                let epoch = self.term.flushes();
                let fed = self.feed(&chunk[from..to]);
                if !fed.echo.is_empty() {
                    let _ = echo.send(Bytes::from(fed.echo)).await;
                }
                for d in fed.deliver {
                    let chunk = match d {
                        Delivery::Data(b) => b,
                        Delivery::Eof => Bytes::new(),
                    };
                    if input.send((epoch, chunk)).await.is_err() {
                        return;
                    }
                }
            }
        }
        if !self.line.is_empty() {
            let epoch = self.term.flushes();
            let line = Bytes::from(std::mem::take(&mut self.line));
            let _ = input.send((epoch, line)).await;
        }
    }
}

/// Splits typed bytes after each `^C`, so that what is typed after one is stamped with the
/// flush count it made.
fn split_after_interrupts(data: &[u8]) -> Vec<(usize, usize)> {
    let mut parts = Vec::new();
    let mut from = 0;
    for (i, b) in data.iter().enumerate() {
        if *b == VINTR {
            parts.push((from, i + 1));
            from = i + 1;
        }
    }
    if from < data.len() {
        parts.push((from, data.len()));
    }
    parts
}

/// Moves raw-mode input gathered so far into the deliveries.
fn flush_raw(raw: &mut Vec<u8>, fed: &mut Fed) {
    if !raw.is_empty() {
        fed.deliver
            .push(Delivery::Data(Bytes::from(std::mem::take(raw))));
    }
}

/// Echoes one typed byte: control characters as `^X` (ECHOCTL), a newline per ONLCR.
fn echo_char(b: u8, modes: Modes, echo: &mut Vec<u8>) {
    match b {
        b'\n' if modes.onlcr => echo.extend_from_slice(b"\r\n"),
        b'\n' | b'\t' => echo.push(b),
        0..=0x1f => {
            echo.push(b'^');
            echo.push(b + 0x40);
        }
        VERASE => echo.extend_from_slice(b"^?"),
        _ => echo.push(b),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    fn terminal() -> Terminal {
        Terminal::new(
            watch::channel(WindowSize {
                rows: 40,
                cols: 120,
            })
            .1,
        )
    }

    fn data(s: &str) -> Delivery {
        Delivery::Data(Bytes::copy_from_slice(s.as_bytes()))
    }

    #[test]
    fn a_line_is_delivered_at_enter_and_echoed_with_crlf() {
        let mut d = Discipline::new(terminal());
        let fed = d.feed(b"ec");
        assert_eq!(fed.deliver, vec![]);
        assert_eq!(fed.echo, b"ec");
        let fed = d.feed(b"ho hi\r");
        assert_eq!(fed.deliver, vec![data("echo hi\n")]);
        assert_eq!(fed.echo, b"ho hi\r\n");
    }

    #[test]
    fn backspace_kill_and_word_erase_edit_the_line() {
        let mut d = Discipline::new(terminal());
        let fed = d.feed(b"lx\x7fs -l\x17-a\n");
        assert_eq!(fed.deliver, vec![data("ls -a\n")]);
        let fed = d.feed(b"gone\x15ok\n");
        assert_eq!(fed.deliver, vec![data("ok\n")]);
        let fed = d.feed("é\x7f\n".as_bytes());
        assert_eq!(fed.deliver, vec![data("\n")]);
    }

    #[test]
    fn ctrl_d_is_end_of_input_on_an_empty_line_and_pushes_a_partial_one() {
        let mut d = Discipline::new(terminal());
        assert_eq!(d.feed(b"\x04").deliver, vec![Delivery::Eof]);
        assert_eq!(d.feed(b"part\x04").deliver, vec![data("part")]);
    }

    #[test]
    fn ctrl_c_drops_the_line_echoes_and_interrupts_the_foreground() {
        let term = terminal();
        let hits = Arc::new(AtomicUsize::new(0));
        let counter = hits.clone();
        term.set_foreground(Some(Arc::new(move || {
            counter.fetch_add(1, Ordering::SeqCst);
        })));
        let mut d = Discipline::new(term);
        let fed = d.feed(b"sleep 9\x03");
        assert_eq!(fed.deliver, vec![]);
        assert_eq!(fed.echo, b"sleep 9^C");
        assert_eq!(hits.load(Ordering::SeqCst), 1);
        assert_eq!(d.feed(b"x\n").deliver, vec![data("x\n")]);
    }

    #[test]
    fn raw_mode_delivers_each_byte_without_echo() {
        let term = terminal();
        term.set_modes(Modes {
            icanon: false,
            echo: false,
            ..Modes::default()
        });
        let mut d = Discipline::new(term);
        let fed = d.feed(b"q\x7f");
        assert_eq!(fed.deliver, vec![data("q\x7f")]);
        assert!(fed.echo.is_empty());
    }

    #[test]
    fn output_newlines_become_crlf() {
        let term = terminal();
        assert_eq!(
            term.translate_output(Bytes::from_static(b"a\nb\n")),
            Bytes::from_static(b"a\r\nb\r\n")
        );
        assert_eq!(
            term.size(),
            WindowSize {
                rows: 40,
                cols: 120
            }
        );
    }
}
