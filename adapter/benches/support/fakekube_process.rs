//! The release `fakekube` binary run as a child process, for the benches that measure against
//! it as a user runs it: its own RSS, its start, real clients pointed at its kubeconfig.
//! Included with `#[path]` by the `provider` and `compare` benches.

use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Anything that can fail while starting the process.
type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// A running `fakekube` process, killed when dropped.
pub struct FakeKubeProcess {
    child: Child,
    kubeconfig_path: PathBuf,
    listening_after: Duration,
    _dir: tempfile::TempDir,
}

impl FakeKubeProcess {
    /// The release binary beside this bench (`target/release/fakekube`), when it is built.
    pub fn binary() -> Option<PathBuf> {
        let exe = std::env::current_exe().ok()?;
        let bin = exe.parent()?.parent()?.join("fakekube");
        bin.is_file().then_some(bin)
    }

    /// Spawns `bin` with the extra `namespaces`, writing its kubeconfig to a temporary
    /// directory, and returns once it prints its URL (it serves from then on).
    pub fn start(bin: &Path, namespaces: &[&str]) -> Result<Self, BoxError> {
        let dir = tempfile::tempdir()?;
        let kubeconfig_path = dir.path().join("kubeconfig");
        let mut command = Command::new(bin);
        for ns in namespaces {
            command.args(["--namespace", ns]);
        }
        let spawned = Instant::now();
        let mut child = command
            .arg("--kubeconfig")
            .arg(&kubeconfig_path)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .spawn()?;
        // The URL line, after any lines a wrapper (a profiler) printed first.
        let mut first = String::new();
        let mut read = Ok(0);
        if let Some(out) = child.stdout.take() {
            let mut out = std::io::BufReader::new(out);
            for _ in 0..8 {
                first.clear();
                read = out.read_line(&mut first);
                if !matches!(read, Ok(n) if n > 0) || first.starts_with("fakekube listening on ") {
                    break;
                }
            }
        }
        let listening_after = spawned.elapsed();
        if !matches!(read, Ok(n) if n > 0) || !first.starts_with("fakekube listening on ") {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!("{} did not print its URL: {first:?}", bin.display()).into());
        }
        Ok(Self {
            child,
            kubeconfig_path,
            listening_after,
            _dir: dir,
        })
    }

    /// Where the kubeconfig the server wrote is (admin token, namespace `default`).
    pub fn kubeconfig_path(&self) -> &Path {
        &self.kubeconfig_path
    }

    /// How long after the spawn the server printed its URL.
    pub fn listening_after(&self) -> Duration {
        self.listening_after
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for FakeKubeProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
