//! The reference provider's command interpreter: exactly the commands the trials use.
//!
//! `sh -c SCRIPT` understands commands separated by `;` or newlines, words in single or double
//! quotes, `$NAME` and `${NAME}` (expanded, never split), backslash escapes, `exit N`, and the
//! redirections `>&2`, `1>&2`, `2>&1`, `> FILE` and `2> FILE`. The programs are `cat`, `echo`,
//! `env`, `false`, `head -c`, `ls`, `mkdir [-p]`, `printf` (`%s`, `%d`, `%%`, backslash and
//! octal escapes), `pwd`, `sh` (`-c SCRIPT`, or with no arguments or `-s`, a script read from
//! stdin one line at a time, each line run as soon as it is read), `sleep`, `test` / `[` (`-e`, `-f`, `-d`, `-n`, `-z`, `=`, `!=`),
//! `true` and `wc -c`. Nothing else exists: any other name exits 127, and a file in the sandbox
//! given as a program exits 126 (the reference runs no binaries).

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use sandbox_contract::{EXIT_NOT_EXECUTABLE, EXIT_NOT_FOUND, ExecEvent};
use tokio::sync::mpsc;

use super::fs::{Fs, Node, PathError, resolve};

/// The programs the interpreter knows, by name.
const PROGRAMS: [&str; 17] = [
    "cat", "echo", "env", "exit", "false", "head", "ls", "mkdir", "printf", "pwd", "sh", "sleep",
    "test", "[", "true", "wc", "cd",
];

/// How large a chunk `head -c` of `/dev/zero` writes at once.
const ZERO_CHUNK: usize = 64 * 1024;

/// Access to the filesystem of the sandbox a command runs in.
pub(crate) trait SandboxFs: Send + Sync {
    /// Runs `f` on the sandbox's filesystem; returns `None` when the sandbox is gone.
    fn with_fs(&self, f: &mut dyn FnMut(&mut Fs)) -> Option<()>;
}

/// A command's standard input.
pub(crate) enum Input {
    /// End of input at once.
    Empty,
    /// These bytes (taken on the first read), then end of input.
    Bytes(Option<Bytes>),
    /// Chunks from the session's stdin handle until the sender is dropped.
    Channel(mpsc::UnboundedReceiver<Bytes>),
}

impl Input {
    /// Returns the next chunk, or `None` at end of input.
    async fn read(&mut self) -> Option<Bytes> {
        match self {
            Input::Empty => None,
            Input::Bytes(bytes) => bytes.take().filter(|b| !b.is_empty()),
            Input::Channel(receiver) => loop {
                match receiver.recv().await {
                    Some(chunk) if chunk.is_empty() => continue,
                    other => break other,
                }
            },
        }
    }
}

/// Where a command's output events go.
#[derive(Clone)]
pub(crate) struct Output {
    /// The session's event channel.
    events: mpsc::UnboundedSender<ExecEvent>,
    /// With the cross-talk bug: the sandbox's most recently started command's channel, which
    /// every command writes to instead of its own.
    shared: Option<Arc<Mutex<Option<mpsc::UnboundedSender<ExecEvent>>>>>,
}

impl Output {
    /// Returns an output that sends to `events`.
    pub(crate) fn new(events: mpsc::UnboundedSender<ExecEvent>) -> Output {
        Output {
            events,
            shared: None,
        }
    }

    /// Returns an output that sends wherever `shared` points at write time.
    pub(crate) fn shared(
        events: mpsc::UnboundedSender<ExecEvent>,
        shared: Arc<Mutex<Option<mpsc::UnboundedSender<ExecEvent>>>>,
    ) -> Output {
        Output {
            events,
            shared: Some(shared),
        }
    }

    /// Sends one event; a closed channel (nobody listening) drops it.
    fn send(&self, event: ExecEvent) {
        if let Some(shared) = &self.shared
            && let Ok(slot) = shared.lock()
            && let Some(target) = slot.as_ref()
        {
            let _ = target.send(event);
            return;
        }
        let _ = self.events.send(event);
    }
}

/// Where file descriptor 1 or 2 of a command points.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Target {
    /// The session's stdout.
    Stdout,
    /// The session's stderr.
    Stderr,
    /// A file, written when the command ends.
    File(String),
}

/// How a command (or script) finished.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Flow {
    /// The command's status; the script goes on.
    Status(i32),
    /// `exit N`: the script ends with this code.
    Exit(i32),
}

impl Flow {
    /// Returns the exit code either way.
    fn code(self) -> i32 {
        match self {
            Flow::Status(code) | Flow::Exit(code) => code,
        }
    }
}

/// A running command: its environment, directory, input, output and filesystem.
pub(crate) struct Shell {
    /// Environment variables.
    env: BTreeMap<String, String>,
    /// Working directory.
    cwd: String,
    /// The sandbox's filesystem.
    fs: Arc<dyn SandboxFs>,
    /// Standard input, shared by every command of a script.
    stdin: Input,
    /// Output events.
    output: Output,
    /// File descriptor 1.
    out: Target,
    /// File descriptor 2.
    err: Target,
    /// Output redirected to files, written when the command ends.
    files: BTreeMap<String, BytesMut>,
    /// Stdin read by `sh` beyond the line it took, for the next reader.
    pending: Bytes,
    /// The [`Bug::ShellWaitsForEndOfInput`](super::Bug::ShellWaitsForEndOfInput) mutant: `sh`
    /// reads its whole script before running any of it.
    batch_stdin: bool,
}

impl Shell {
    /// Returns a shell that runs in `cwd` with `env`.
    pub(crate) fn new(
        env: BTreeMap<String, String>,
        cwd: String,
        fs: Arc<dyn SandboxFs>,
        stdin: Input,
        output: Output,
    ) -> Shell {
        Shell {
            env,
            cwd,
            fs,
            stdin,
            output,
            out: Target::Stdout,
            err: Target::Stderr,
            files: BTreeMap::new(),
            pending: Bytes::new(),
            batch_stdin: false,
        }
    }

    /// Makes `sh` read its whole script from stdin before running any of it (a mutant's bug).
    pub(crate) fn batch_stdin(mut self) -> Shell {
        self.batch_stdin = true;
        self
    }

    /// The next chunk of stdin: what `sh` left over first.
    async fn read_stdin(&mut self) -> Option<Bytes> {
        if !self.pending.is_empty() {
            return Some(std::mem::take(&mut self.pending));
        }
        self.stdin.read().await
    }

    /// One line of stdin, newline included (the last one may lack it); `None` at its end.
    async fn read_line(&mut self) -> Option<String> {
        let mut line = BytesMut::new();
        loop {
            let Some(chunk) = self.read_stdin().await else {
                return (!line.is_empty()).then(|| String::from_utf8_lossy(&line).into_owned());
            };
            match chunk.iter().position(|b| *b == b'\n') {
                Some(at) => {
                    line.extend_from_slice(&chunk[..=at]);
                    self.pending = chunk.slice(at + 1..);
                    return Some(String::from_utf8_lossy(&line).into_owned());
                }
                None => line.extend_from_slice(&chunk),
            }
        }
    }

    /// Runs `argv` to completion and returns its exit code.
    pub(crate) async fn run(mut self, argv: Vec<String>) -> i32 {
        self.program(argv).await.code()
    }

    /// Writes `data` to file descriptor 1 (`to_err` false) or 2.
    fn write(&mut self, to_err: bool, data: Bytes) {
        if data.is_empty() {
            return;
        }
        let target = if to_err { &self.err } else { &self.out };
        match target {
            Target::Stdout => self.output.send(ExecEvent::Stdout(data)),
            Target::Stderr => self.output.send(ExecEvent::Stderr(data)),
            Target::File(path) => self
                .files
                .entry(path.clone())
                .or_default()
                .extend_from_slice(&data),
        }
    }

    /// Writes a line of text to stderr.
    fn complain(&mut self, message: &str) {
        self.write(true, Bytes::from(format!("{message}\n")));
    }

    /// Runs `f` on the filesystem; `None` when the sandbox is gone.
    fn fs<R>(&self, mut f: impl FnMut(&mut Fs) -> R) -> Option<R> {
        let mut result = None;
        self.fs.with_fs(&mut |fs| result = Some(f(fs)))?;
        result
    }

    /// Resolves `path` against the working directory.
    fn path(&self, path: &str) -> String {
        resolve(&self.cwd, path)
    }

    /// Runs one program by name (boxed: `sh` runs programs in turn).
    fn program(&mut self, argv: Vec<String>) -> Pin<Box<dyn Future<Output = Flow> + Send + '_>> {
        Box::pin(async move {
            let Some((name, args)) = argv.split_first() else {
                return Flow::Status(0);
            };
            let name = match self.lookup(name) {
                Ok(name) => name,
                Err(code) => return Flow::Status(code),
            };
            let args = args.to_vec();
            match name.as_str() {
                "sh" => self.sh(&args).await,
                "exit" => Flow::Exit(args.first().and_then(|a| a.parse().ok()).unwrap_or(0)),
                "cd" => Flow::Status(self.cd(&args)),
                "echo" => Flow::Status(self.echo(&args)),
                "printf" => Flow::Status(self.printf(&args)),
                "cat" => Flow::Status(self.cat(&args).await),
                "head" => Flow::Status(self.head(&args).await),
                "wc" => Flow::Status(self.wc(&args).await),
                "env" => self.env_program(&args).await,
                "pwd" => {
                    let line = format!("{}\n", self.cwd);
                    self.write(false, Bytes::from(line));
                    Flow::Status(0)
                }
                "sleep" => Flow::Status(sleep(&args).await),
                "test" | "[" => Flow::Status(self.test(&args)),
                "ls" => Flow::Status(self.ls(&args)),
                "mkdir" => Flow::Status(self.mkdir(&args)),
                "true" => Flow::Status(0),
                _ => Flow::Status(1),
            }
        })
    }

    /// Finds the program `name`: a known name, or a path; answers 126 or 127 when it cannot run.
    fn lookup(&mut self, name: &str) -> Result<String, i32> {
        if !name.contains('/') {
            if PROGRAMS.contains(&name) {
                return Ok(name.to_owned());
            }
            self.complain(&format!("sh: {name}: not found"));
            return Err(EXIT_NOT_FOUND);
        }
        let path = self.path(name);
        for dir in ["/bin/", "/usr/bin/"] {
            if let Some(base) = path.strip_prefix(dir)
                && PROGRAMS.contains(&base)
            {
                return Ok(base.to_owned());
            }
        }
        let exists = self.fs(|fs| fs.get(&path).is_some()).unwrap_or(false);
        if exists {
            self.complain(&format!("sh: {name}: Permission denied"));
            Err(EXIT_NOT_EXECUTABLE)
        } else {
            self.complain(&format!("sh: {name}: not found"));
            Err(EXIT_NOT_FOUND)
        }
    }

    /// `sh -c SCRIPT`, or `sh [-s]` reading the script from stdin.
    async fn sh(&mut self, args: &[String]) -> Flow {
        match args {
            [flag, script, ..] if flag == "-c" => self.script(script).await,
            [] => self.stdin_script().await,
            [flag, ..] if flag == "-s" => self.stdin_script().await,
            _ => {
                self.complain("sh: only `sh -c SCRIPT` and `sh [-s]` are supported");
                Flow::Status(2)
            }
        }
    }

    /// `sh [-s]`: runs each line of stdin as soon as it is read; `exit` ends at once.
    async fn stdin_script(&mut self) -> Flow {
        let mut status = 0;
        let mut lines = Vec::new();
        if self.batch_stdin {
            while let Some(line) = self.read_line().await {
                lines.push(line);
            }
            lines.reverse();
        }
        loop {
            let line = if self.batch_stdin {
                lines.pop()
            } else {
                self.read_line().await
            };
            let Some(line) = line else {
                return Flow::Status(status);
            };
            match Box::pin(self.script(&line)).await {
                Flow::Exit(code) => return Flow::Exit(code),
                Flow::Status(code) => status = code,
            }
        }
    }

    /// Runs each command of a script in turn.
    async fn script(&mut self, script: &str) -> Flow {
        let commands = match parse(script, &self.env) {
            Ok(commands) => commands,
            Err(message) => {
                self.complain(&format!("sh: syntax error: {message}"));
                return Flow::Status(2);
            }
        };
        let mut status = 0;
        for command in commands {
            let saved = (self.out.clone(), self.err.clone());
            for redirect in &command.redirects {
                self.apply(redirect);
            }
            let flow = self.program(command.words).await;
            self.flush_files();
            (self.out, self.err) = saved;
            match flow {
                Flow::Exit(code) => return Flow::Exit(code),
                Flow::Status(code) => status = code,
            }
        }
        Flow::Status(status)
    }

    /// Points a file descriptor where a redirection says.
    fn apply(&mut self, redirect: &Redirect) {
        let target = match &redirect.to {
            RedirectTo::Fd(1) => self.out.clone(),
            RedirectTo::Fd(_) => self.err.clone(),
            RedirectTo::File(path) => {
                let path = self.path(path);
                self.files.insert(path.clone(), BytesMut::new());
                Target::File(path)
            }
        };
        if redirect.fd == 2 {
            self.err = target;
        } else {
            self.out = target;
        }
    }

    /// Writes redirected output to its files.
    fn flush_files(&mut self) {
        let files = std::mem::take(&mut self.files);
        for (path, data) in files {
            let data = data.freeze();
            let written = self.fs(|fs| fs.write(&path, data.clone(), false));
            if let Some(Err(error)) = written {
                self.complain(&format!("sh: {error}"));
            }
        }
    }

    /// `cd DIR` (for scripts; a separate exec does not keep it).
    fn cd(&mut self, args: &[String]) -> i32 {
        let Some(dir) = args.first() else { return 0 };
        let path = self.path(dir);
        let is_dir = self.fs(|fs| matches!(fs.get(&path), Some(Node::Dir { .. })));
        if is_dir == Some(true) {
            self.cwd = path;
            0
        } else {
            self.complain(&format!("cd: can't cd to {dir}"));
            2
        }
    }

    /// `echo [-n] ARGS`.
    fn echo(&mut self, args: &[String]) -> i32 {
        let (newline, args) = match args.split_first() {
            Some((flag, rest)) if flag == "-n" => (false, rest),
            _ => (true, args),
        };
        let mut line = args.join(" ");
        if newline {
            line.push('\n');
        }
        self.write(false, Bytes::from(line));
        0
    }

    /// `printf FORMAT ARGS`: the format is reused while arguments remain.
    fn printf(&mut self, args: &[String]) -> i32 {
        let Some((format, mut rest)) = args.split_first() else {
            self.complain("printf: missing format");
            return 1;
        };
        let mut out = Vec::new();
        loop {
            let before = rest.len();
            rest = format_once(format.as_bytes(), rest, &mut out);
            if rest.is_empty() || rest.len() == before {
                break;
            }
        }
        self.write(false, Bytes::from(out));
        0
    }

    /// `cat [FILE|-]...`: files from the sandbox, `-` or nothing for stdin.
    async fn cat(&mut self, args: &[String]) -> i32 {
        let mut status = 0;
        let inputs: Vec<String> = if args.is_empty() {
            vec!["-".to_owned()]
        } else {
            args.to_vec()
        };
        for input in inputs {
            if input == "-" {
                while let Some(chunk) = self.read_stdin().await {
                    self.write(false, chunk);
                }
                continue;
            }
            let path = self.path(&input);
            match self.fs(|fs| fs.read(&path)) {
                Some(Ok(data)) => self.write(false, data),
                Some(Err(error)) => {
                    self.complain(&format!("cat: {error}"));
                    status = 1;
                }
                None => status = 1,
            }
        }
        status
    }

    /// `head -c N [FILE]`: the first N bytes of a file, `/dev/zero` or stdin.
    async fn head(&mut self, args: &[String]) -> i32 {
        let (count, file) = match args {
            [flag, count, rest @ ..] if flag == "-c" && rest.len() <= 1 => {
                match count.parse::<usize>() {
                    Ok(count) => (count, rest.first().cloned()),
                    Err(_) => {
                        self.complain("head: invalid number of bytes");
                        return 1;
                    }
                }
            }
            _ => {
                self.complain("head: only `head -c N [FILE]` is supported");
                return 1;
            }
        };
        match file.as_deref() {
            Some("/dev/zero") => {
                let mut left = count;
                while left > 0 {
                    let size = left.min(ZERO_CHUNK);
                    self.write(false, Bytes::from(vec![0u8; size]));
                    left -= size;
                }
                0
            }
            Some(file) => {
                let path = self.path(file);
                match self.fs(|fs| fs.read(&path)) {
                    Some(Ok(data)) => {
                        self.write(false, data.slice(..count.min(data.len())));
                        0
                    }
                    Some(Err(error)) => {
                        self.complain(&format!("head: {error}"));
                        1
                    }
                    None => 1,
                }
            }
            None => {
                let mut left = count;
                while left > 0 {
                    let Some(chunk) = self.read_stdin().await else {
                        break;
                    };
                    let take = left.min(chunk.len());
                    self.write(false, chunk.slice(..take));
                    left -= take;
                }
                0
            }
        }
    }

    /// `wc -c [FILE]`: the byte count of a file or of stdin.
    async fn wc(&mut self, args: &[String]) -> i32 {
        let count = match args {
            [flag] if flag == "-c" => {
                let mut count = 0usize;
                while let Some(chunk) = self.read_stdin().await {
                    count = count.saturating_add(chunk.len());
                }
                count
            }
            [flag, file] if flag == "-c" => {
                let path = self.path(file);
                match self.fs(|fs| fs.read(&path)) {
                    Some(Ok(data)) => data.len(),
                    Some(Err(error)) => {
                        self.complain(&format!("wc: {error}"));
                        return 1;
                    }
                    None => return 1,
                }
            }
            _ => {
                self.complain("wc: only `wc -c [FILE]` is supported");
                return 1;
            }
        };
        self.write(false, Bytes::from(format!("{count}\n")));
        0
    }

    /// `env [NAME=VALUE]... [PROGRAM ARGS]`: prints the environment or runs a program with more.
    async fn env_program(&mut self, args: &[String]) -> Flow {
        let mut rest = args;
        while let Some((first, tail)) = rest.split_first() {
            let Some((name, value)) = first.split_once('=') else {
                break;
            };
            self.env.insert(name.to_owned(), value.to_owned());
            rest = tail;
        }
        if rest.is_empty() {
            let text: String = self
                .env
                .iter()
                .map(|(name, value)| format!("{name}={value}\n"))
                .collect();
            self.write(false, Bytes::from(text));
            return Flow::Status(0);
        }
        match self.program(rest.to_vec()).await {
            Flow::Exit(code) | Flow::Status(code) => Flow::Status(code),
        }
    }

    /// `test EXPR` / `[ EXPR ]`.
    fn test(&mut self, args: &[String]) -> i32 {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let args = match args.split_last() {
            Some((&"]", rest)) => rest.to_vec(),
            _ => args,
        };
        let (negate, args) = match args.split_first() {
            Some((&"!", rest)) => (true, rest.to_vec()),
            _ => (false, args),
        };
        let truth = match args.as_slice() {
            [] => false,
            [text] => !text.is_empty(),
            ["-n", text] => !text.is_empty(),
            ["-z", text] => text.is_empty(),
            [flag @ ("-e" | "-f" | "-d"), path] => {
                let path = self.path(path);
                let node = self.fs(|fs| fs.get(&path).cloned()).flatten();
                matches!(
                    (*flag, node),
                    ("-e", Some(_))
                        | ("-f", Some(Node::File { .. }))
                        | ("-d", Some(Node::Dir { .. }))
                )
            }
            [left, "=", right] => left == right,
            [left, "!=", right] => left != right,
            _ => {
                self.complain("test: unsupported expression");
                return 2;
            }
        };
        i32::from(truth == negate)
    }

    /// `ls [DIR]`: one name per line, sorted.
    fn ls(&mut self, args: &[String]) -> i32 {
        let dir = self.path(args.first().map_or(".", String::as_str));
        match self.fs(|fs| fs.list(&dir)) {
            Some(Ok(entries)) => {
                let text: String = entries.iter().map(|e| format!("{}\n", e.name)).collect();
                self.write(false, Bytes::from(text));
                0
            }
            Some(Err(error)) => {
                self.complain(&format!("ls: {error}"));
                2
            }
            None => 2,
        }
    }

    /// `mkdir [-p] DIR...`.
    fn mkdir(&mut self, args: &[String]) -> i32 {
        let (parents, dirs) = match args.split_first() {
            Some((flag, rest)) if flag == "-p" => (true, rest),
            _ => (false, args),
        };
        let mut status = 0;
        for dir in dirs {
            let path = self.path(dir);
            let result = self.fs(|fs| {
                if !parents && fs.get(&path).is_some() {
                    return Err(PathError::NotFound(format!("{path}: File exists")));
                }
                fs.mkdir_p(&path)
            });
            if let Some(Err(error)) = result {
                self.complain(&format!("mkdir: {error}"));
                status = 1;
            }
        }
        status
    }
}

/// `sleep SECONDS` (fractions allowed).
async fn sleep(args: &[String]) -> i32 {
    let seconds = args.first().and_then(|a| a.parse::<f64>().ok());
    match seconds.and_then(|s| Duration::try_from_secs_f64(s).ok()) {
        Some(duration) => {
            tokio::time::sleep(duration).await;
            0
        }
        None => 1,
    }
}

/// Applies `format` once, consuming arguments; returns the arguments left.
fn format_once<'a>(format: &[u8], mut args: &'a [String], out: &mut Vec<u8>) -> &'a [String] {
    let mut index = 0;
    while let Some(&byte) = format.get(index) {
        index += 1;
        match byte {
            b'\\' => {
                let (bytes, used) = escape(format.get(index..).unwrap_or_default());
                out.extend_from_slice(&bytes);
                index += used;
            }
            b'%' => {
                let conversion = format.get(index).copied();
                index += 1;
                let (arg, rest) = match args.split_first() {
                    Some((arg, rest)) => (arg.as_str(), rest),
                    None => ("", args),
                };
                match conversion {
                    Some(b'%') => out.push(b'%'),
                    Some(b's') => {
                        out.extend_from_slice(arg.as_bytes());
                        args = rest;
                    }
                    Some(b'd') => {
                        let number: i64 = arg.trim().parse().unwrap_or(0);
                        out.extend_from_slice(number.to_string().as_bytes());
                        args = rest;
                    }
                    Some(other) => {
                        out.push(b'%');
                        out.push(other);
                    }
                    None => out.push(b'%'),
                }
            }
            other => out.push(other),
        }
    }
    args
}

/// Decodes the escape after a backslash; returns its bytes and how many input bytes it used.
fn escape(after: &[u8]) -> (Vec<u8>, usize) {
    match after.first() {
        None => (vec![b'\\'], 0),
        Some(b'n') => (vec![b'\n'], 1),
        Some(b't') => (vec![b'\t'], 1),
        Some(b'r') => (vec![b'\r'], 1),
        Some(b'\\') => (vec![b'\\'], 1),
        Some(b'0'..=b'7') => {
            let digits: Vec<u8> = after
                .iter()
                .take(3)
                .take_while(|b| (b'0'..=b'7').contains(b))
                .copied()
                .collect();
            let value = digits
                .iter()
                .fold(0u32, |acc, digit| acc * 8 + u32::from(digit - b'0'));
            (vec![u8::try_from(value & 0xff).unwrap_or(0)], digits.len())
        }
        Some(&other) => (vec![b'\\', other], 1),
    }
}

/// Where a redirection points.
#[derive(Debug, Clone, PartialEq, Eq)]
enum RedirectTo {
    /// Another file descriptor (`>&2`).
    Fd(u8),
    /// A file (`> path`).
    File(String),
}

/// One redirection of a command.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Redirect {
    /// The descriptor redirected: 1 or 2.
    fd: u8,
    /// Where it now points.
    to: RedirectTo,
}

/// One simple command of a script.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
struct Command {
    /// The expanded words: the program and its arguments.
    words: Vec<String>,
    /// Its redirections, in order.
    redirects: Vec<Redirect>,
}

/// Splits a script into commands, expanding `$NAME` from `env`.
fn parse(script: &str, env: &BTreeMap<String, String>) -> Result<Vec<Command>, String> {
    let chars: Vec<char> = script.chars().collect();
    let mut commands = Vec::new();
    let mut command = Command::default();
    let mut index = 0;
    while let Some(&ch) = chars.get(index) {
        match ch {
            ' ' | '\t' => index += 1,
            ';' | '\n' => {
                index += 1;
                if !command.words.is_empty() || !command.redirects.is_empty() {
                    commands.push(std::mem::take(&mut command));
                }
            }
            _ => {
                if let Some((redirect, used)) = redirect_at(&chars, index)? {
                    command.redirects.push(redirect);
                    index += used;
                } else {
                    let (word, used) = word_at(&chars, index, env)?;
                    command.words.push(word);
                    index += used;
                }
            }
        }
    }
    if !command.words.is_empty() || !command.redirects.is_empty() {
        commands.push(command);
    }
    Ok(commands)
}

/// Reads a redirection starting at `start`, if there is one.
fn redirect_at(chars: &[char], start: usize) -> Result<Option<(Redirect, usize)>, String> {
    let (fd, arrow) = match (chars.get(start), chars.get(start + 1)) {
        (Some('>'), _) => (1, start),
        (Some('1'), Some('>')) => (1, start + 1),
        (Some('2'), Some('>')) => (2, start + 1),
        _ => return Ok(None),
    };
    let mut index = arrow + 1;
    if chars.get(index) == Some(&'&') {
        return match chars.get(index + 1) {
            Some('1') => Ok(Some((
                Redirect {
                    fd,
                    to: RedirectTo::Fd(1),
                },
                index + 2 - start,
            ))),
            Some('2') => Ok(Some((
                Redirect {
                    fd,
                    to: RedirectTo::Fd(2),
                },
                index + 2 - start,
            ))),
            _ => Err("only >&1 and >&2 are supported".to_owned()),
        };
    }
    while matches!(chars.get(index), Some(' ' | '\t')) {
        index += 1;
    }
    let (path, used) = word_at(chars, index, &BTreeMap::new())?;
    if path.is_empty() {
        return Err("redirection without a file".to_owned());
    }
    Ok(Some((
        Redirect {
            fd,
            to: RedirectTo::File(path),
        },
        index + used - start,
    )))
}

/// Reads one word starting at `start`; returns it expanded and how many characters it used.
fn word_at(
    chars: &[char],
    start: usize,
    env: &BTreeMap<String, String>,
) -> Result<(String, usize), String> {
    let mut word = String::new();
    let mut index = start;
    while let Some(&ch) = chars.get(index) {
        match ch {
            ' ' | '\t' | ';' | '\n' | '>' => break,
            '\'' => {
                index += 1;
                loop {
                    match chars.get(index) {
                        None => return Err("unterminated single quote".to_owned()),
                        Some('\'') => break,
                        Some(&c) => word.push(c),
                    }
                    index += 1;
                }
                index += 1;
            }
            '"' => {
                index += 1;
                loop {
                    match chars.get(index) {
                        None => return Err("unterminated double quote".to_owned()),
                        Some('"') => break,
                        Some('\\') => {
                            match chars.get(index + 1) {
                                Some(&c @ ('"' | '\\' | '$' | '`')) => word.push(c),
                                Some(&c) => {
                                    word.push('\\');
                                    word.push(c);
                                }
                                None => return Err("unterminated double quote".to_owned()),
                            }
                            index += 2;
                            continue;
                        }
                        Some('$') => {
                            let (value, used) = expand(chars, index, env);
                            word.push_str(&value);
                            index += used;
                            continue;
                        }
                        Some(&c) => word.push(c),
                    }
                    index += 1;
                }
                index += 1;
            }
            '\\' => {
                if let Some(&c) = chars.get(index + 1) {
                    word.push(c);
                }
                index += 2;
            }
            '$' => {
                let (value, used) = expand(chars, index, env);
                word.push_str(&value);
                index += used;
            }
            other => {
                word.push(other);
                index += 1;
            }
        }
    }
    Ok((word, index - start))
}

/// Expands `$NAME` or `${NAME}` at `start` (a `$`); a lone `$` stays as it is.
fn expand(chars: &[char], start: usize, env: &BTreeMap<String, String>) -> (String, usize) {
    let braced = chars.get(start + 1) == Some(&'{');
    let name_start = if braced { start + 2 } else { start + 1 };
    let name: String = chars
        .get(name_start..)
        .unwrap_or_default()
        .iter()
        .take_while(|c| c.is_ascii_alphanumeric() || **c == '_')
        .collect();
    if name.is_empty() {
        return ("$".to_owned(), 1);
    }
    let mut used = name_start + name.chars().count() - start;
    if braced {
        if chars.get(start + used) != Some(&'}') {
            return ("$".to_owned(), 1);
        }
        used += 1;
    }
    (env.get(&name).cloned().unwrap_or_default(), used)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A filesystem that is always there.
    struct Local(Mutex<Fs>);

    impl SandboxFs for Local {
        fn with_fs(&self, f: &mut dyn FnMut(&mut Fs)) -> Option<()> {
            let mut fs = self.0.lock().ok()?;
            f(&mut fs);
            Some(())
        }
    }

    /// Runs `argv` with `stdin`; returns (exit, stdout, stderr).
    fn run(argv: &[&str], stdin: Input) -> (i32, Vec<u8>, Vec<u8>) {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap();
        let (tx, mut rx) = mpsc::unbounded_channel();
        let fs: Arc<dyn SandboxFs> = Arc::new(Local(Mutex::new(Fs::fresh("/workspace"))));
        let env = BTreeMap::from([("HOME".to_owned(), "/root".to_owned())]);
        let shell = Shell::new(env, "/".to_owned(), fs, stdin, Output::new(tx));
        let argv = argv.iter().map(|a| (*a).to_owned()).collect();
        let code = runtime.block_on(shell.run(argv));
        let (mut out, mut err) = (Vec::new(), Vec::new());
        while let Ok(event) = rx.try_recv() {
            match event {
                ExecEvent::Stdout(b) => out.extend_from_slice(&b),
                ExecEvent::Stderr(b) => err.extend_from_slice(&b),
                ExecEvent::Exit(_) => {}
            }
        }
        (code, out, err)
    }

    #[test]
    fn sh_runs_commands_in_turn_with_redirections_and_exit() {
        let (code, out, err) = run(
            &[
                "sh",
                "-c",
                "echo out; echo 'e r' >&2; printf \"$HOME\"; exit 7; echo no",
            ],
            Input::Empty,
        );
        assert_eq!(
            (code, out.as_slice(), err.as_slice()),
            (7, &b"out\n/root"[..], &b"e r\n"[..])
        );
    }

    #[test]
    fn printf_reuses_its_format_and_decodes_octal() {
        let (_, out, _) = run(&["printf", "%s|", "a b", "", "c"], Input::Empty);
        assert_eq!(out, b"a b||c|");
        let (_, out, _) = run(&["printf", "\\000\\001\\377"], Input::Empty);
        assert_eq!(out, [0, 1, 255]);
    }

    #[test]
    fn file_redirection_writes_the_file_that_cat_reads() {
        let (code, out, _) = run(
            &[
                "sh",
                "-c",
                "mkdir -p /tmp/d; printf hi > /tmp/d/f; cat /tmp/d/f; test -f /tmp/d/f",
            ],
            Input::Empty,
        );
        assert_eq!((code, out.as_slice()), (0, &b"hi"[..]));
    }

    #[test]
    fn unknown_programs_exit_127_and_files_126() {
        assert_eq!(run(&["no-such-program"], Input::Empty).0, 127);
        assert_eq!(run(&["/tmp"], Input::Empty).0, 126);
        assert_eq!(run(&["/tmp/none"], Input::Empty).0, 127);
    }

    #[test]
    fn cat_and_wc_read_stdin() {
        let (_, out, _) = run(&["cat"], Input::Bytes(Some(Bytes::from_static(b"abc"))));
        assert_eq!(out, b"abc");
        let (_, out, _) = run(
            &["wc", "-c"],
            Input::Bytes(Some(Bytes::from_static(b"abcd"))),
        );
        assert_eq!(out, b"4\n");
        let (_, out, _) = run(&["head", "-c", "5", "/dev/zero"], Input::Empty);
        assert_eq!(out, [0; 5]);
    }

    #[test]
    fn parse_refuses_unterminated_quotes() {
        assert!(parse("echo 'open", &BTreeMap::new()).is_err());
        assert!(parse("echo \"open", &BTreeMap::new()).is_err());
    }
}
