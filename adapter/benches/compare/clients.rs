//! The clients compared, each running one command in the bench pod and checking what came
//! back: the adapter (`exec`, `exec_stream`), kube-rs (`Api::<Pod>::exec`), kubectl (a process
//! per exec) and the Python client (one process running all its execs, `python_exec.py`).

use agentsandbox::AgentSandbox;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, AttachParams};
use sandbox_contract::{ExecEvent, ExecRequest, Provider, SandboxId};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt};

use crate::BoxError;

/// kubectl 1.33, the newest minor installed.
pub const KUBECTL: &str = "/usr/lib/google-cloud-sdk/bin/kubectl.1.33";

/// The pod every client execs in.
pub struct Target {
    /// Its namespace.
    pub namespace: String,
    /// Its name.
    pub pod: String,
    /// The container.
    pub container: String,
}

/// The command that writes `bytes` zero bytes to stdout.
pub fn zeros(bytes: usize) -> [String; 4] {
    [
        "head".to_owned(),
        "-c".to_owned(),
        bytes.to_string(),
        "/dev/zero".to_owned(),
    ]
}

/// `argv` through the adapter's `exec`; returns the stdout bytes, failing on a non-zero exit.
pub async fn adapter_exec(
    p: &AgentSandbox,
    id: &SandboxId,
    argv: &[String],
) -> Result<usize, BoxError> {
    let out = p.exec(id, ExecRequest::new(argv.iter().cloned())).await?;
    if out.exit_code != 0 {
        return Err(format!("the adapter's exec exited {}", out.exit_code).into());
    }
    Ok(out.stdout.len())
}

/// `argv` through the adapter's `exec_stream`, counting stdout as it arrives; failing on a
/// non-zero exit.
pub async fn adapter_stream(
    p: &AgentSandbox,
    id: &SandboxId,
    argv: &[String],
) -> Result<usize, BoxError> {
    let mut session = p
        .exec_stream(id, ExecRequest::new(argv.iter().cloned()))
        .await?;
    let mut bytes = 0;
    while let Some(event) = session.next_event().await {
        match event? {
            ExecEvent::Stdout(chunk) => bytes += chunk.len(),
            ExecEvent::Stderr(_) => {}
            ExecEvent::Exit(0) => return Ok(bytes),
            ExecEvent::Exit(code) => {
                return Err(format!("the adapter's exec_stream exited {code}").into());
            }
        }
    }
    Err("the adapter's exec_stream ended without an exit".into())
}

/// `argv` through kube-rs's `Api::<Pod>::exec`, reading stdout and stderr to their end;
/// returns the stdout bytes, failing unless the status says Success.
pub async fn kube_exec(
    pods: &Api<Pod>,
    target: &Target,
    argv: &[String],
) -> Result<usize, BoxError> {
    let params = AttachParams::default()
        .container(target.container.as_str())
        .stdout(true)
        .stderr(true);
    let mut attached = pods
        .exec(&target.pod, argv.iter().cloned(), &params)
        .await?;
    let status = attached.take_status().ok_or("kube-rs gave no status")?;
    let stdout = attached.stdout().ok_or("kube-rs gave no stdout")?;
    let stderr = attached.stderr().ok_or("kube-rs gave no stderr")?;
    let (stdout, stderr) = tokio::join!(drain(stdout), drain(stderr));
    let (bytes, _) = (stdout?, stderr?);
    let status = status.await;
    attached.join().await?;
    match status.as_ref().and_then(|s| s.status.as_deref()) {
        Some("Success") => Ok(bytes),
        _ => Err(format!("kube-rs's exec ended with {status:?}").into()),
    }
}

/// Reads `reader` to its end; returns how many bytes it gave.
async fn drain(mut reader: impl AsyncRead + Unpin) -> std::io::Result<usize> {
    let mut buf = vec![0u8; 64 * 1024];
    let mut total = 0;
    loop {
        match reader.read(&mut buf).await? {
            0 => return Ok(total),
            n => total += n,
        }
    }
}

/// A kubectl process with its own discovery cache directory and the kubeconfig given.
pub fn kubectl(kubeconfig: &Path, cache: &Path) -> Command {
    let mut command = Command::new(KUBECTL);
    command
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .arg("--cache-dir")
        .arg(cache)
        .stdin(Stdio::null());
    command
}

/// `kubectl get ns`, failing unless it succeeds.
pub fn kubectl_get_ns(kubeconfig: &Path, cache: &Path) -> Result<(), BoxError> {
    let out = kubectl(kubeconfig, cache)
        .args(["get", "ns", "-o", "name"])
        .output()?;
    if !out.status.success() {
        return Err(format!(
            "kubectl get ns: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        )
        .into());
    }
    Ok(())
}

/// `kubectl exec` of `argv`, reading its stdout as it comes; returns the stdout bytes,
/// failing unless kubectl exits 0.
pub fn kubectl_exec(
    kubeconfig: &Path,
    cache: &Path,
    target: &Target,
    argv: &[String],
) -> Result<usize, BoxError> {
    let mut child = kubectl(kubeconfig, cache)
        .args([
            "-n",
            &target.namespace,
            "exec",
            &target.pod,
            "-c",
            &target.container,
            "--",
        ])
        .args(argv)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    let mut stdout = child.stdout.take().ok_or("kubectl's stdout")?;
    let mut buf = vec![0u8; 64 * 1024];
    let mut bytes = 0;
    loop {
        match stdout.read(&mut buf)? {
            0 => break,
            n => bytes += n,
        }
    }
    let mut stderr = String::new();
    if let Some(mut err) = child.stderr.take() {
        err.read_to_string(&mut stderr)?;
    }
    let status = child.wait()?;
    if !status.success() {
        return Err(format!("kubectl exec: {status}: {}", stderr.trim()).into());
    }
    Ok(bytes)
}

/// The Python interpreter of the venv `ci/python-venv.sh` makes with the newest client.
pub fn python() -> Option<PathBuf> {
    let bin = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()?
        .join("target/py-venv-current/bin/python");
    bin.is_file().then_some(bin)
}

/// What the Python process measured.
pub struct PythonRuns {
    /// The client's version.
    pub version: String,
    /// The `exec true` round trips.
    pub round_trips: Vec<Duration>,
    /// The transfers of the throughput runs.
    pub transfers: Vec<Duration>,
}

/// Runs `python_exec.py` with `python`: `warm_up` untimed execs of `true`, `round_trips` timed
/// ones, then `transfers` execs of `bytes` of stdout, all in one process.
pub fn python_runs(
    python: &Path,
    kubeconfig: &Path,
    target: &Target,
    (warm_up, round_trips, transfers): (usize, usize, usize),
    bytes: usize,
) -> Result<PythonRuns, BoxError> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/compare/python_exec.py");
    let out = Command::new(python)
        .arg(script)
        .arg(kubeconfig)
        .args([&target.namespace, &target.pod, &target.container])
        .args([warm_up, round_trips, transfers, bytes].map(|n| n.to_string()))
        .stdin(Stdio::null())
        .output()?;
    if !out.status.success() {
        return Err(format!(
            "python_exec.py: {}: {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        )
        .into());
    }
    let report: serde_json::Value = serde_json::from_slice(&out.stdout)?;
    let times = |key: &str| -> Vec<Duration> {
        report[key]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(serde_json::Value::as_f64)
                    .map(Duration::from_secs_f64)
                    .collect()
            })
            .unwrap_or_default()
    };
    Ok(PythonRuns {
        version: report["version"].as_str().unwrap_or("?").to_owned(),
        round_trips: times("round_trips"),
        transfers: times("transfers"),
    })
}
