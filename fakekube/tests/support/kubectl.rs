//! A kubectl binary pointed at a fakekube process: each command runs with a fresh `HOME` (no
//! discovery cache shared between commands) and is killed if it runs for a minute.

use std::fmt;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

/// Where the Cloud SDK keeps its versioned kubectl binaries.
const SDK: &str = "/usr/lib/google-cloud-sdk/bin";
/// How long one command may run.
const COMMAND_TIMEOUT: Duration = Duration::from_secs(60);

/// `kubectl.1.<minor>` of the Cloud SDK, if installed; prints why a test skips otherwise.
pub fn installed(minor: u32) -> Option<String> {
    let bin = format!("{SDK}/kubectl.1.{minor}");
    if Path::new(&bin).exists() {
        Some(bin)
    } else {
        println!("skipping: {bin} not installed");
        None
    }
}

/// What a finished command did.
pub struct Output {
    pub command: String,
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

impl fmt::Display for Output {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "`{}` exited with {:?}\n--- stdout ---\n{}\n--- stderr ---\n{}",
            self.command, self.code, self.stdout, self.stderr
        )
    }
}

impl Output {
    /// Asserts that the command exited 0.
    #[track_caller]
    pub fn success(self) -> Output {
        assert_eq!(self.code, Some(0), "expected success: {self}");
        self
    }

    /// Asserts that the command failed.
    #[track_caller]
    pub fn failure(self) -> Output {
        assert_ne!(self.code, Some(0), "expected a failure: {self}");
        self
    }

    /// Asserts that stdout is exactly `expected`.
    #[track_caller]
    pub fn stdout_is(self, expected: &str) -> Output {
        assert_eq!(self.stdout, expected, "unexpected stdout: {self}");
        self
    }

    /// Asserts that stderr has `text` somewhere.
    #[track_caller]
    pub fn stderr_has(self, text: &str) -> Output {
        assert!(
            self.stderr.contains(text),
            "expected {text:?} in stderr: {self}"
        );
        self
    }

    /// Parses stdout as JSON.
    #[track_caller]
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {self}"))
    }
}

/// One kubectl binary pointed at one kubeconfig.
#[derive(Debug, Clone)]
pub struct Kubectl {
    pub bin: String,
    pub kubeconfig: PathBuf,
}

impl Kubectl {
    /// Runs kubectl to completion.
    pub fn run(&self, args: &[&str]) -> Output {
        self.run_with(None, args)
    }

    /// Runs kubectl with `input` on stdin.
    pub fn run_input(&self, input: &str, args: &[&str]) -> Output {
        self.run_with(Some(input), args)
    }

    fn run_with(&self, input: Option<&str>, args: &[&str]) -> Output {
        let home = tempfile::tempdir().expect("a temporary HOME");
        let mut child = Command::new(&self.bin)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", home.path())
            .arg("--kubeconfig")
            .arg(&self.kubeconfig)
            .args(args)
            .stdin(if input.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("{} starts: {e}", self.bin));
        if let (Some(text), Some(mut stdin)) = (input, child.stdin.take()) {
            stdin
                .write_all(text.as_bytes())
                .expect("kubectl reads stdin");
        }
        let read_all = |mut r: Box<dyn Read + Send>| {
            std::thread::spawn(move || {
                let mut s = String::new();
                let _ = r.read_to_string(&mut s);
                s
            })
        };
        let out = read_all(Box::new(child.stdout.take().expect("stdout is piped")));
        let err = read_all(Box::new(child.stderr.take().expect("stderr is piped")));
        // The exit is awaited on a thread, so that a command that hangs can be killed.
        let pid = child.id();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(child.wait().ok().and_then(|s| s.code()));
        });
        let code = match rx.recv_timeout(COMMAND_TIMEOUT) {
            Ok(code) => code,
            Err(_) => {
                let _ = Command::new("kill")
                    .arg("-KILL")
                    .arg(pid.to_string())
                    .status();
                let _ = rx.recv();
                None
            }
        };
        Output {
            command: format!("{} {}", self.bin, args.join(" ")),
            code,
            stdout: out.join().unwrap_or_default(),
            stderr: err.join().unwrap_or_default(),
        }
    }
}

/// A kubectl that runs in the background (`logs -f`, `get -w`); its stdout lines arrive as
/// it prints them. Killed when dropped.
pub struct Background {
    command: String,
    child: std::process::Child,
    lines: std::sync::mpsc::Receiver<String>,
    seen: Vec<String>,
    _home: tempfile::TempDir,
}

impl Kubectl {
    /// Starts kubectl in the background.
    pub fn spawn(&self, args: &[&str]) -> Background {
        let home = tempfile::tempdir().expect("a temporary HOME");
        let mut child = Command::new(&self.bin)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", home.path())
            .arg("--kubeconfig")
            .arg(&self.kubeconfig)
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("{} starts: {e}", self.bin));
        let stdout = child.stdout.take().expect("stdout is piped");
        let (tx, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            use std::io::BufRead;
            for line in std::io::BufReader::new(stdout).lines() {
                let Ok(l) = line else { break };
                if tx.send(l).is_err() {
                    break;
                }
            }
        });
        Background {
            command: format!("{} {}", self.bin, args.join(" ")),
            child,
            lines,
            seen: Vec::new(),
            _home: home,
        }
    }
}

impl Background {
    /// Waits for the next stdout line and returns it; panics with what was printed if none
    /// comes within the command timeout.
    #[track_caller]
    pub fn next_line(&mut self) -> String {
        match self.lines.recv_timeout(COMMAND_TIMEOUT) {
            Ok(line) => {
                self.seen.push(line.clone());
                line
            }
            Err(e) => panic!(
                "`{}` printed no further line ({e}); it printed: {:?}",
                self.command, self.seen
            ),
        }
    }

    /// Waits for the command to end by itself (its stdout closes, then it exits) and returns
    /// its exit code and the lines it printed since the last [`Background::next_line`].
    #[track_caller]
    pub fn finish(mut self) -> (Option<i32>, Vec<String>) {
        let mut rest = Vec::new();
        loop {
            match self.lines.recv_timeout(COMMAND_TIMEOUT) {
                Ok(line) => rest.push(line),
                Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => break,
                Err(e) => panic!(
                    "`{}` did not end ({e}); it printed: {:?} then {rest:?}",
                    self.command, self.seen
                ),
            }
        }
        let code = self.child.wait().ok().and_then(|s| s.code());
        (code, rest)
    }
}

impl Drop for Background {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}
