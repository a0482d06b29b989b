//! Container probes, as the kubelet's prober runs them: `exec` in the container, `tcpSocket`
//! and `httpGet` against the pod's network, with `initialDelaySeconds`, `periodSeconds`,
//! `timeoutSeconds`, `successThreshold` and `failureThreshold`, all on the cluster's clock.
//!
//! A startup probe gates the others: readiness and liveness start once it has succeeded. A
//! readiness result decides the container's `ready`; `failureThreshold` liveness (or startup)
//! failures in a row get the container killed and restarted. Failures are reported as the
//! prober words them (`Readiness probe failed: HTTP probe failed with statuscode: 503`).

use crate::clock::Clock;
use fakekube_runtime::{ExecIo, ExecSpec, ExitStatus, PodFs, PodNetwork, ProcessTable, Programs};
use serde_json::Value;
use std::time::{Duration, SystemTime};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// Which probe.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ProbeKind {
    /// `startupProbe`.
    Startup,
    /// `readinessProbe`.
    Readiness,
    /// `livenessProbe`.
    Liveness,
}

impl ProbeKind {
    /// Every kind, in the order they are looked at.
    pub const ALL: [ProbeKind; 3] = [
        ProbeKind::Startup,
        ProbeKind::Readiness,
        ProbeKind::Liveness,
    ];

    /// The container field.
    fn field(self) -> &'static str {
        match self {
            ProbeKind::Startup => "startupProbe",
            ProbeKind::Readiness => "readinessProbe",
            ProbeKind::Liveness => "livenessProbe",
        }
    }

    /// The word the kubelet's Events use (`Readiness probe failed: …`).
    pub fn title(self) -> &'static str {
        match self {
            ProbeKind::Startup => "Startup",
            ProbeKind::Readiness => "Readiness",
            ProbeKind::Liveness => "Liveness",
        }
    }

    /// The word the kill message uses (`failed liveness probe`).
    pub fn lower(self) -> &'static str {
        match self {
            ProbeKind::Startup => "startup",
            ProbeKind::Readiness => "readiness",
            ProbeKind::Liveness => "liveness",
        }
    }
}

/// What a probe checks.
#[derive(Debug, Clone, PartialEq)]
enum Handler {
    /// Runs a command in the container: exit 0 is success.
    Exec(Vec<String>),
    /// Connects to a port of the pod.
    Tcp(u16),
    /// GETs a path on a port of the pod: 200 to 399 is success.
    Http {
        port: u16,
        path: String,
        headers: Vec<(String, String)>,
    },
    /// A handler fakekube cannot run (gRPC, HTTPS, another host, an unknown named port): it
    /// fails with this output.
    Unsupported(String),
}

/// A probe of a container's spec, with the API server's defaults.
#[derive(Debug, Clone, PartialEq)]
pub struct ProbeSpec {
    handler: Handler,
    initial_delay: Duration,
    period: Duration,
    timeout: Duration,
    success_threshold: u32,
    failure_threshold: u32,
    /// `terminationGracePeriodSeconds` of the probe (liveness and startup kills).
    pub termination_grace: Option<i64>,
}

fn secs(probe: &Value, field: &str, default: u64) -> u64 {
    probe.get(field).and_then(Value::as_u64).unwrap_or(default)
}

/// A port given as a number or as the name of one of the container's ports.
fn port(container: &Value, v: Option<&Value>) -> Result<u16, String> {
    match v {
        Some(Value::Number(n)) => n
            .as_u64()
            .and_then(|p| u16::try_from(p).ok())
            .ok_or_else(|| format!("invalid port number: {n}")),
        Some(Value::String(name)) => {
            if let Ok(n) = name.parse::<u16>() {
                return Ok(n);
            }
            container
                .get("ports")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .find(|p| p.get("name").and_then(Value::as_str) == Some(name))
                .and_then(|p| p.get("containerPort"))
                .and_then(Value::as_u64)
                .and_then(|p| u16::try_from(p).ok())
                .ok_or_else(|| format!("couldn't find port: {name} in container"))
        }
        _ => Err("no port given".into()),
    }
}

impl ProbeSpec {
    /// The probe of `kind` of `container`, if it has one.
    pub fn of(container: &Value, kind: ProbeKind, pod_ip: &str) -> Option<ProbeSpec> {
        let p = container.get(kind.field()).filter(|p| p.is_object())?;
        let handler = if let Some(exec) = p.get("exec") {
            Handler::Exec(
                exec.get("command")
                    .and_then(Value::as_array)
                    .map(|l| {
                        l.iter()
                            .filter_map(|a| a.as_str().map(str::to_string))
                            .collect()
                    })
                    .unwrap_or_default(),
            )
        } else if let Some(tcp) = p.get("tcpSocket") {
            match (port(container, tcp.get("port")), host_ok(tcp, pod_ip)) {
                (Ok(n), true) => Handler::Tcp(n),
                (Err(e), _) => Handler::Unsupported(e),
                (_, false) => Handler::Unsupported(unreachable_host(tcp)),
            }
        } else if let Some(http) = p.get("httpGet") {
            let scheme = http.get("scheme").and_then(Value::as_str).unwrap_or("HTTP");
            match (port(container, http.get("port")), host_ok(http, pod_ip)) {
                (Err(e), _) => Handler::Unsupported(e),
                (_, false) => Handler::Unsupported(unreachable_host(http)),
                (Ok(_), true) if scheme == "HTTPS" => Handler::Unsupported(
                    "fakekube's prober speaks no TLS: HTTPS probes fail".into(),
                ),
                (Ok(n), true) => Handler::Http {
                    port: n,
                    path: http
                        .get("path")
                        .and_then(Value::as_str)
                        .filter(|p| !p.is_empty())
                        .unwrap_or("/")
                        .to_string(),
                    headers: http
                        .get("httpHeaders")
                        .and_then(Value::as_array)
                        .into_iter()
                        .flatten()
                        .filter_map(|h| {
                            Some((
                                h.get("name")?.as_str()?.to_string(),
                                h.get("value")?.as_str()?.to_string(),
                            ))
                        })
                        .collect(),
                },
            }
        } else if p.get("grpc").is_some() {
            Handler::Unsupported("fakekube's prober does not run gRPC health checks".into())
        } else {
            Handler::Unsupported("the probe has no handler".into())
        };
        Some(ProbeSpec {
            handler,
            initial_delay: Duration::from_secs(secs(p, "initialDelaySeconds", 0)),
            period: Duration::from_secs(secs(p, "periodSeconds", 10).max(1)),
            timeout: Duration::from_secs(secs(p, "timeoutSeconds", 1).max(1)),
            success_threshold: u32::try_from(secs(p, "successThreshold", 1).max(1)).unwrap_or(1),
            failure_threshold: u32::try_from(secs(p, "failureThreshold", 3).max(1)).unwrap_or(3),
            termination_grace: p
                .get("terminationGracePeriodSeconds")
                .and_then(Value::as_i64),
        })
    }
}

/// Whether a probe's `host` is the pod itself (empty, the pod IP or loopback).
fn host_ok(handler: &Value, pod_ip: &str) -> bool {
    handler
        .get("host")
        .and_then(Value::as_str)
        .is_none_or(|h| h.is_empty() || h == pod_ip || h == "127.0.0.1" || h == "localhost")
}

fn unreachable_host(handler: &Value) -> String {
    let host = handler.get("host").and_then(Value::as_str).unwrap_or("");
    format!("dial tcp {host}: connect: no route to host")
}

/// A probe of a running container: its spec and where it stands.
#[derive(Debug, Clone)]
pub struct Probe {
    /// Which probe.
    pub kind: ProbeKind,
    /// Its spec.
    pub spec: ProbeSpec,
    /// When it runs next (`None` while a run is in flight or the probe waits for startup).
    pub next_at: Option<SystemTime>,
    /// Successes in a row.
    successes: u32,
    /// Failures in a row.
    failures: u32,
    /// The settled result: `None` until the thresholds decide one.
    pub result: Option<bool>,
}

/// What a probe's thresholds make of one more result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// The probe now counts as succeeded (it did not before).
    Succeeded,
    /// The probe now counts as failed.
    Failed,
    /// Nothing changed.
    Same,
}

impl Probe {
    /// A probe of a container started at `started`: it first runs after its initial delay
    /// (readiness and liveness only once `gated` is lifted by the startup probe).
    pub fn new(kind: ProbeKind, spec: ProbeSpec, started: SystemTime, gated: bool) -> Self {
        let next_at = (!gated).then(|| started + spec.initial_delay);
        Probe {
            kind,
            spec,
            next_at,
            successes: 0,
            failures: 0,
            result: None,
        }
    }

    /// Counts one result and schedules the next run from `now`.
    pub fn observe(&mut self, ok: bool, now: SystemTime) -> Verdict {
        self.next_at = Some(now + self.spec.period);
        if ok {
            self.failures = 0;
            self.successes = self.successes.saturating_add(1);
            if self.successes >= self.spec.success_threshold && self.result != Some(true) {
                self.result = Some(true);
                return Verdict::Succeeded;
            }
        } else {
            self.successes = 0;
            self.failures = self.failures.saturating_add(1);
            if self.failures >= self.spec.failure_threshold && self.result != Some(false) {
                self.result = Some(false);
                return Verdict::Failed;
            }
        }
        Verdict::Same
    }

    /// Starts probing from `now` plus the initial delay (a gate lifted).
    pub fn ungate(&mut self, started: SystemTime, now: SystemTime) {
        if self.next_at.is_none() && self.result.is_none() && self.successes + self.failures == 0 {
            self.next_at = Some((started + self.spec.initial_delay).max(now));
        }
    }

    /// Resets the failure count after a kill, so a restarted container starts afresh.
    pub fn stop(&mut self) {
        self.next_at = None;
    }
}

/// The container a probe runs against.
#[derive(Debug, Clone)]
pub struct Target {
    /// The pod's network.
    pub network: PodNetwork,
    /// The pod's IP, for messages.
    pub pod_ip: String,
    /// The container's files.
    pub fs: PodFs,
    /// Its programs.
    pub programs: Programs,
    /// Its processes (an exec probe is one more).
    pub processes: ProcessTable,
    /// Its environment.
    pub env: Vec<(String, String)>,
    /// Its working directory.
    pub cwd: String,
    /// Fires when the container stops.
    pub cancel: CancellationToken,
}

/// The outcome of one probe run: success, and the output the kubelet reports on failure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    /// Whether it succeeded.
    pub ok: bool,
    /// What the failure Event says after `… probe failed: `.
    pub output: String,
}

/// Runs a probe once, within its timeout on the cluster's clock.
pub async fn run(spec: &ProbeSpec, target: Target, clock: &Clock) -> Outcome {
    let timeout = spec.timeout;
    let work = run_handler(&spec.handler, &target);
    tokio::select! {
        out = work => out,
        () = clock.sleep(timeout) => Outcome {
            ok: false,
            output: match &spec.handler {
                Handler::Exec(argv) => format!("command \"{}\" timed out", argv.join(" ")),
                Handler::Http { port, path, .. } => format!(
                    "Get \"http://{}:{port}{path}\": context deadline exceeded (Client.Timeout exceeded while awaiting headers)",
                    target.pod_ip
                ),
                Handler::Tcp(port) => format!("dial tcp {}:{port}: i/o timeout", target.pod_ip),
                Handler::Unsupported(m) => m.clone(),
            },
        },
    }
}

async fn run_handler(handler: &Handler, target: &Target) -> Outcome {
    match handler {
        Handler::Unsupported(m) => Outcome {
            ok: false,
            output: m.clone(),
        },
        Handler::Tcp(port) => match target.network.connect(*port) {
            Ok(_) => Outcome {
                ok: true,
                output: String::new(),
            },
            Err(e) => Outcome {
                ok: false,
                output: format!(
                    "dial tcp {}:{port}: connect: {}",
                    target.pod_ip,
                    e.to_string().to_lowercase()
                ),
            },
        },
        Handler::Http {
            port,
            path,
            headers,
        } => http_get(target, *port, path, headers).await,
        Handler::Exec(argv) => exec(target, argv).await,
    }
}

/// The kubelet's probe User-Agent.
const USER_AGENT: &str = "kube-probe/1.33";

async fn http_get(target: &Target, port: u16, path: &str, headers: &[(String, String)]) -> Outcome {
    let url = format!("http://{}:{port}{path}", target.pod_ip);
    let mut conn = match target.network.connect(port) {
        Ok(c) => c,
        Err(e) => {
            return Outcome {
                ok: false,
                output: format!(
                    "Get \"{url}\": dial tcp {}:{port}: connect: {}",
                    target.pod_ip,
                    e.to_string().to_lowercase()
                ),
            };
        }
    };
    let mut request = format!(
        "GET {path} HTTP/1.1\r\nHost: {}:{port}\r\nUser-Agent: {USER_AGENT}\r\nAccept: */*\r\nConnection: close\r\n",
        target.pod_ip
    );
    for (k, v) in headers {
        request.push_str(&format!("{k}: {v}\r\n"));
    }
    request.push_str("\r\n");
    if conn.write_all(request.as_bytes()).await.is_err() {
        return Outcome {
            ok: false,
            output: format!("Get \"{url}\": connection reset by peer"),
        };
    }
    let mut head = Vec::new();
    let mut buf = [0u8; 1024];
    while !head.windows(2).any(|w| w == b"\r\n") && head.len() < 8192 {
        match conn.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => head.extend_from_slice(buf.get(..n).unwrap_or_default()),
        }
    }
    let line = String::from_utf8_lossy(&head);
    let code = line
        .lines()
        .next()
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|c| c.parse::<u16>().ok());
    match code {
        Some(c) if (200..400).contains(&c) => Outcome {
            ok: true,
            output: String::new(),
        },
        Some(c) => Outcome {
            ok: false,
            output: format!("HTTP probe failed with statuscode: {c}"),
        },
        None => Outcome {
            ok: false,
            output: format!("Get \"{url}\": EOF"),
        },
    }
}

/// How much of an exec probe's output is kept (the kubelet keeps 10 KiB).
const EXEC_OUTPUT: usize = 10 * 1024;

async fn exec(target: &Target, argv: &[String]) -> Outcome {
    let (out_tx, mut out_rx) = mpsc::channel(16);
    let (err_tx, mut err_rx) = mpsc::channel(16);
    let spec = ExecSpec {
        argv: argv.to_vec(),
        env: target.env.clone(),
        cwd: target.cwd.clone(),
        fs: target.fs.clone(),
        programs: target.programs.clone(),
        processes: target.processes.clone(),
        cancel: target.cancel.child_token(),
        network: target.network.clone(),
    };
    let io = ExecIo {
        stdin: None,
        stdout: out_tx,
        stderr: err_tx,
        tty: None,
    };
    let collect = async {
        let mut output = Vec::new();
        let (mut out_open, mut err_open) = (true, true);
        while out_open || err_open {
            tokio::select! {
                c = out_rx.recv(), if out_open => match c {
                    Some(b) => output.extend_from_slice(&b),
                    None => out_open = false,
                },
                c = err_rx.recv(), if err_open => match c {
                    Some(b) => output.extend_from_slice(&b),
                    None => err_open = false,
                },
            }
        }
        output
    };
    let (status, mut output) = tokio::join!(fakekube_runtime::exec(spec, io), collect);
    output.truncate(EXEC_OUTPUT);
    let text = String::from_utf8_lossy(&output).into_owned();
    match status {
        ExitStatus::Code(0) => Outcome {
            ok: true,
            output: text,
        },
        ExitStatus::CannotStart(m) => Outcome {
            ok: false,
            output: m,
        },
        _ => Outcome {
            ok: false,
            output: text,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn spec(probe: Value) -> ProbeSpec {
        let c = json!({ "name": "c", "ports": [ { "name": "http", "containerPort": 8080 } ],
                        "readinessProbe": probe });
        ProbeSpec::of(&c, ProbeKind::Readiness, "10.244.0.2").expect("a probe")
    }

    #[test]
    fn probes_take_the_api_defaults_and_resolve_named_ports() {
        let s = spec(json!({ "httpGet": { "port": "http" } }));
        assert_eq!(s.period, Duration::from_secs(10));
        assert_eq!(s.timeout, Duration::from_secs(1));
        assert_eq!((s.success_threshold, s.failure_threshold), (1, 3));
        assert_eq!(
            s.handler,
            Handler::Http {
                port: 8080,
                path: "/".into(),
                headers: vec![]
            }
        );
        let s = spec(json!({ "tcpSocket": { "port": "nope" } }));
        assert!(matches!(s.handler, Handler::Unsupported(_)));
    }

    #[test]
    fn thresholds_settle_a_result_only_after_enough_runs_in_a_row() {
        let t0 = SystemTime::UNIX_EPOCH;
        let s = spec(
            json!({ "exec": { "command": ["true"] }, "successThreshold": 2, "failureThreshold": 2 }),
        );
        let mut p = Probe::new(ProbeKind::Readiness, s, t0, false);
        assert_eq!(p.next_at, Some(t0));
        assert_eq!(p.observe(true, t0), Verdict::Same);
        assert_eq!(p.observe(true, t0), Verdict::Succeeded);
        assert_eq!(p.observe(false, t0), Verdict::Same);
        assert_eq!(p.observe(true, t0), Verdict::Same);
        assert_eq!(p.observe(false, t0), Verdict::Same);
        assert_eq!(p.observe(false, t0), Verdict::Failed);
        assert_eq!(p.next_at, Some(t0 + Duration::from_secs(10)));
    }

    #[tokio::test]
    async fn tcp_and_http_probes_reach_listeners_of_the_pod() {
        let network = PodNetwork::new();
        let programs = fakekube_programs::registry();
        let target = Target {
            network: network.clone(),
            pod_ip: "10.244.0.2".into(),
            fs: programs.pod_fs(vec![]),
            programs,
            processes: ProcessTable::new(),
            env: vec![],
            cwd: "/".into(),
            cancel: CancellationToken::new(),
        };
        let clock = Clock::default();
        let tcp = spec(json!({ "tcpSocket": { "port": 8080 } }));
        let refused = run(&tcp, target.clone(), &clock).await;
        assert_eq!(
            refused,
            Outcome {
                ok: false,
                output: "dial tcp 10.244.0.2:8080: connect: connection refused".into()
            }
        );
        let listener = network.listen(8080).expect("the port is free");
        let server = tokio::spawn(async move {
            let mut conn = listener.accept().await.expect("a connection");
            let mut buf = [0u8; 512];
            let _ = conn.read(&mut buf).await;
            let _ = conn
                .write_all(b"HTTP/1.1 503 Service Unavailable\r\n\r\n")
                .await;
            conn
        });
        let http = spec(json!({ "httpGet": { "port": 8080, "path": "/healthz" } }));
        let out = run(&http, target.clone(), &clock).await;
        assert_eq!(out.output, "HTTP probe failed with statuscode: 503");
        drop(server.await);
        let exec = spec(json!({ "exec": { "command": ["sh", "-c", "echo not yet; exit 1"] } }));
        let out = run(&exec, target, &clock).await;
        assert_eq!(
            out,
            Outcome {
                ok: false,
                output: "not yet\n".into()
            }
        );
    }
}
