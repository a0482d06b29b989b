//! The `fakekube` binary as a child process, for tests that drive real clients through a
//! kubeconfig file.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

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
