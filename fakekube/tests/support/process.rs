//! The `fakekube` binary as a child process, for tests that drive real clients through a
//! kubeconfig file.

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use kube::config::{KubeConfigOptions, Kubeconfig};

/// A running fakekube binary and its kubeconfig; killed when dropped.
pub struct Process {
    child: Child,
    dir: tempfile::TempDir,
    /// The kubeconfig the binary wrote (admin token, namespace `default`).
    pub kubeconfig: PathBuf,
}

impl Process {
    /// Starts the binary with `extra` arguments, its log in its directory, and waits for its
    /// first line.
    pub fn start(extra: &[&str]) -> Process {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let kubeconfig = dir.path().join("kubeconfig");
        let log = std::fs::File::create(dir.path().join("fakekube.log")).expect("a log file");
        let mut child = Command::new(env!("CARGO_BIN_EXE_fakekube"))
            .arg("--kubeconfig")
            .arg(&kubeconfig)
            .args(extra)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(log)
            .spawn()
            .expect("fakekube starts");
        let stdout = child.stdout.take().expect("stdout is piped");
        let mut reader = BufReader::new(stdout);
        let mut first = String::new();
        let _ = reader.read_line(&mut first);
        assert!(
            first.starts_with("fakekube listening on https://"),
            "unexpected first line {first:?}"
        );
        // Keep draining stdout so fakekube never writes into a closed pipe.
        std::thread::spawn(move || {
            let _ = std::io::copy(&mut reader, &mut std::io::sink());
        });
        Process {
            child,
            dir,
            kubeconfig,
        }
    }

    /// The process id of the binary.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// A scratch directory that lives as long as the process.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts the binary with exactly `args`, stdout and stderr piped, for tests that read what it
/// prints or signal it; returns it with its first line on stdout.
pub fn spawn(args: &[&str]) -> (Child, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_fakekube"))
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("fakekube starts");
    let mut first = String::new();
    BufReader::new(child.stdout.as_mut().expect("stdout is piped"))
        .read_line(&mut first)
        .expect("a first line");
    (child, first)
}

/// Sends the signal named `sig` (`TERM`, `INT`, `USR1`, ...) to `child` with kill(1).
pub fn signal(child: &Child, sig: &str) {
    let sent = Command::new("kill")
        .arg(format!("-{sig}"))
        .arg(child.id().to_string())
        .status()
        .expect("kill runs");
    assert!(sent.success(), "kill -{sig} failed");
}

/// Stops `child` with SIGTERM; returns its exit code and the rest of its stdout and stderr.
pub fn terminate(mut child: Child) -> (Option<i32>, String, String) {
    signal(&child, "TERM");
    finish(&mut child)
}

/// Waits for `child` to exit; returns its exit code and the rest of its stdout and stderr.
pub fn finish(child: &mut Child) -> (Option<i32>, String, String) {
    let status = child.wait().expect("it exits");
    let (mut out, mut err) = (String::new(), String::new());
    if let Some(mut stdout) = child.stdout.take() {
        stdout.read_to_string(&mut out).expect("stdout read");
    }
    if let Some(mut stderr) = child.stderr.take() {
        stderr.read_to_string(&mut err).expect("stderr read");
    }
    (status.code(), out, err)
}

/// A kube-rs client through the kubeconfig file the binary wrote at `path`.
pub async fn kube_client(path: &Path) -> kube::Client {
    let text = std::fs::read_to_string(path).expect("the kubeconfig was written");
    let config = kube::Config::from_custom_kubeconfig(
        Kubeconfig::from_yaml(&text).expect("it parses"),
        &KubeConfigOptions::default(),
    )
    .await
    .expect("kube accepts it");
    kube::Client::try_from(config).expect("a client")
}
