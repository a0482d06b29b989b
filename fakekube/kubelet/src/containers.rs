//! Starting containers as the kubelet does: init containers one after the other, then the
//! containers; pulling the image (with its Events and back-offs), building the filesystem,
//! environment and command line, running the main process; and what follows its exit (the
//! restart policy, `CrashLoopBackOff`).

use crate::client::{Client, Kind};
use crate::env::{self, Lookup};
use crate::events::EventType;
use crate::images::{self, Mark};
use crate::kubelet::Kubelet;
use crate::limits;
use crate::meta::meta_str;
use crate::meta::str_at;
use crate::output::OutputLog;
use crate::pod::{CState, PodRun, Running, Term, go_duration, nominal_backoff_secs};
use crate::probe::{Probe, ProbeKind, ProbeSpec};
use crate::run::{Exit, Pass};
use fakekube_runtime::{ExecIo, ExecSpec, ExitStatus, PodFs, ProcessTable, Volume};
use serde_json::Value;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;

/// How many chunks of a main process's output may wait for the log.
const OUTPUT_CHUNKS: usize = 16;

/// How long the exit of a main process waits for its output to reach the log.
const DRAIN_GRACE: Duration = Duration::from_secs(1);

/// Secrets looked up through the API, and the node's address.
struct ApiLookup<'a> {
    api: &'a dyn Client,
    host_ip: &'a str,
}

impl Lookup for ApiLookup<'_> {
    fn secret(&self, ns: &str, name: &str) -> Option<Value> {
        self.api
            .get(Kind::Secret, ns, name)
            .map(|v| Value::clone(&v))
    }

    fn host_ip(&self) -> &str {
        self.host_ip
    }
}

/// The made-up size of an image, for the `Pulled` Event.
fn image_size(image: &str) -> u64 {
    let hex = images::hex64(image);
    let n = u64::from_str_radix(hex.get(..6).unwrap_or("0"), 16).unwrap_or(0);
    1_000_000 + n * 7
}

impl Kubelet {
    /// Records an Event about container `name` of `run`'s pod.
    pub(super) fn container_event(
        &self,
        run: &PodRun,
        name: &str,
        init: bool,
        type_: EventType,
        reason: &str,
        message: &str,
    ) {
        let list = if init { "initContainers" } else { "containers" };
        self.recorder.record(
            &*self.api,
            &run.pod,
            Some(&format!("spec.{list}{{{name}}}")),
            type_,
            reason,
            message,
        );
    }

    /// Starts what comes next in the pod: the first init container not done (one at a time),
    /// or, once they are, every container not started yet.
    pub(super) fn start_next(&self, pass: &mut Pass<'_>, run: &mut PodRun) {
        if run.deleting || run.terminal || run.start_at.is_some() {
            return;
        }
        let init_count = run.containers.iter().filter(|c| c.init).count();
        for idx in 0..init_count {
            let Some(c) = run.containers.get(idx) else {
                return;
            };
            if c.init_done() {
                continue;
            }
            if matches!(c.state, CState::Creating) {
                self.start_container(pass, run, idx);
            }
            if !run.containers.get(idx).is_some_and(|c| c.init_done()) {
                return;
            }
        }
        for idx in init_count..run.containers.len() {
            if run
                .containers
                .get(idx)
                .is_some_and(|c| matches!(c.state, CState::Creating))
            {
                self.start_container(pass, run, idx);
            }
        }
    }

    /// The pod's volumes: claim storage (kept by claim uid), fresh emptyDirs, and the files of
    /// Secret, ConfigMap, downward API and projected volumes (`volumes`).
    pub(super) fn make_volumes(
        &self,
        run: &mut PodRun,
        claims: &mut std::collections::HashMap<String, Volume>,
    ) {
        let list = run
            .pod
            .get("spec")
            .and_then(|s| s.get("volumes"))
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        for v in list {
            let Some(name) = v.get("name").and_then(Value::as_str) else {
                continue;
            };
            let volume = if let Some(claim) = str_at(&v, &["persistentVolumeClaim", "claimName"]) {
                match self.api.get(Kind::PersistentVolumeClaim, &run.ns, claim) {
                    Some(pvc) => claims
                        .entry(meta_str(&pvc, "uid").unwrap_or("").to_string())
                        .or_default()
                        .clone(),
                    None => Volume::new(),
                }
            } else {
                let vol = Volume::new();
                let pod = crate::volumes::PodRef {
                    ns: &run.ns,
                    name: &run.name,
                    uid: &run.uid,
                    pod: &run.pod,
                };
                crate::volumes::fill(self.api.as_ref(), pod, &v, &vol);
                vol
            };
            run.volumes.insert(name.to_string(), volume);
        }
    }

    /// A failed pull's retry is due: the container waits in `ImagePullBackOff`.
    pub(super) fn pull_backoff(&self, run: &mut PodRun, idx: usize) {
        let now = self.api.clock().now();
        let Some(c) = run.containers.get_mut(idx) else {
            return;
        };
        let n = c.pull_backoffs;
        c.pull_backoffs = c.pull_backoffs.saturating_add(1);
        let (name, init, image) = (c.name.clone(), c.init, c.image.clone());
        c.state = CState::Waiting {
            reason: "ImagePullBackOff",
            message: format!("Back-off pulling image \"{image}\""),
            at: now + self.backoff(n),
        };
        self.container_event(
            run,
            &name,
            init,
            EventType::Normal,
            "BackOff",
            &format!("Back-off pulling image \"{image}\""),
        );
        self.container_event(
            run,
            &name,
            init,
            EventType::Warning,
            "Failed",
            "Error: ImagePullBackOff",
        );
    }

    /// Pulls the image of container `idx` (or finds it present), with the kubelet's Events;
    /// false when the pull failed and the container waits in `ErrImagePull`.
    fn pull(&self, run: &mut PodRun, idx: usize) -> bool {
        let now = self.api.clock().now();
        let Some(c) = run.containers.get(idx) else {
            return false;
        };
        let (name, init, image) = (c.name.clone(), c.init, c.image.clone());
        let normalized = images::normalize(&image);
        let policy = c
            .spec
            .get("imagePullPolicy")
            .and_then(Value::as_str)
            .unwrap_or("IfNotPresent")
            .to_string();
        let event = |type_, reason: &str, message: &str| {
            self.container_event(run, &name, init, type_, reason, message);
        };
        if self.images.mark(&image) == Some(Mark::Missing) {
            let message = format!(
                "rpc error: code = NotFound desc = failed to pull and unpack image \"{normalized}\": failed to resolve reference \"{normalized}\": {normalized}: not found"
            );
            event(
                EventType::Normal,
                "Pulling",
                &format!("Pulling image \"{image}\""),
            );
            event(
                EventType::Warning,
                "Failed",
                &format!("Failed to pull image \"{image}\": {message}"),
            );
            event(EventType::Warning, "Failed", "Error: ErrImagePull");
            if let Some(c) = run.containers.get_mut(idx) {
                c.state = CState::Waiting {
                    reason: "ErrImagePull",
                    message,
                    at: now + self.config.backoff,
                };
            }
            return false;
        }
        let present = self.pulled().contains(&normalized);
        if policy == "Always" || (!present && policy != "Never") {
            event(
                EventType::Normal,
                "Pulling",
                &format!("Pulling image \"{image}\""),
            );
            event(
                EventType::Normal,
                "Pulled",
                &format!(
                    "Successfully pulled image \"{image}\" in 0s (0s including waiting). Image size: {} bytes.",
                    image_size(&normalized)
                ),
            );
            self.pulled().insert(normalized);
        } else {
            event(
                EventType::Normal,
                "Pulled",
                &format!("Container image \"{image}\" already present on machine"),
            );
        }
        true
    }

    /// Starts (or restarts) container `idx`: pulls its image, builds its filesystem and
    /// environment, and runs its main process.
    pub(super) fn start_container(&self, pass: &mut Pass<'_>, run: &mut PodRun, idx: usize) {
        let clock = self.api.clock();
        let now = clock.now();
        if !self.pull(run, idx) {
            return;
        }
        let Some(c) = run.containers.get(idx) else {
            return;
        };
        let mark = self.images.mark(&c.image);
        let (cname, init) = (c.name.clone(), c.init);
        let lookup = ApiLookup {
            api: &*self.api,
            host_ip: &self.config.host_ip,
        };
        let env = match env::container_env(&run.pod, &c.spec, run.ip.as_deref(), &lookup) {
            Ok(env) => env,
            Err(message) => {
                let n = c.pull_backoffs;
                let at = now + self.backoff(n);
                self.container_event(
                    run,
                    &cname,
                    init,
                    EventType::Warning,
                    "Failed",
                    &format!("Error: {message}"),
                );
                if let Some(c) = run.containers.get_mut(idx) {
                    c.pull_backoffs = n.saturating_add(1);
                    c.state = CState::Waiting {
                        reason: "CreateContainerConfigError",
                        message,
                        at,
                    };
                }
                return;
            }
        };
        let mounts: Vec<(String, Volume)> = c
            .spec
            .get("volumeMounts")
            .and_then(Value::as_array)
            .map(|l| {
                l.iter()
                    .filter_map(|m| {
                        let path = m.get("mountPath").and_then(Value::as_str)?;
                        let vol = run.volumes.get(m.get("name").and_then(Value::as_str)?)?;
                        Some((path.to_string(), vol.clone()))
                    })
                    .collect()
            })
            .unwrap_or_default();
        let cwd = c
            .spec
            .get("workingDir")
            .and_then(Value::as_str)
            .filter(|w| !w.is_empty())
            .unwrap_or("/")
            .to_string();
        let argv = env::image_argv(&c.spec, &env, self.images.program(&c.image).as_deref());
        let wants_stdin = c.spec.get("stdin").and_then(Value::as_bool) == Some(true);
        let pod_ip = run.ip.clone().unwrap_or_default();
        let probes: Vec<Probe> = {
            let startup = ProbeSpec::of(&c.spec, ProbeKind::Startup, &pod_ip);
            let gated = startup.is_some();
            ProbeKind::ALL
                .into_iter()
                .filter_map(|kind| {
                    let spec = match kind {
                        ProbeKind::Startup => startup.clone(),
                        _ => ProbeSpec::of(&c.spec, kind, &pod_ip),
                    }?;
                    Some(Probe::new(
                        kind,
                        spec,
                        now,
                        gated && kind != ProbeKind::Startup,
                    ))
                })
                .collect()
        };
        let uid = run.uid.clone();
        let pod_cancel = run.cancel.clone();
        self.container_event(
            run,
            &cname,
            init,
            EventType::Normal,
            "Created",
            &format!("Created container: {cname}"),
        );
        let Some(c) = run.containers.get_mut(idx) else {
            return;
        };
        c.pull_backoffs = 0;
        if c.runs > 0 {
            c.restarts = c.restarts.saturating_add(1);
        }
        c.runs += 1;
        let container_id = format!(
            "containerd://{}",
            images::hex64(&uuid::Uuid::new_v4().to_string())
        );
        let started_at = clock.now_rfc3339();
        let log = Arc::new(OutputLog::with_clock(clock.clone()));
        c.previous_output = c.output.replace(log.clone());
        if mark == Some(Mark::Crashing) {
            log.finish();
            let term = Term {
                exit_code: 1,
                reason: "Error".to_string(),
                message: None,
                started_at: started_at.clone(),
                finished_at: started_at,
                container_id,
            };
            self.container_event(
                run,
                &cname,
                init,
                EventType::Normal,
                "Started",
                &format!("Started container {cname}"),
            );
            self.after_exit(pass, run, idx, term, Duration::ZERO, false);
            return;
        }
        let fs = self.commands.pod_fs(mounts);
        let processes =
            ProcessTable::with_limits(limits::container_limits(&c.spec, self.config.process_limit));
        let ephemeral = limits::ephemeral_limit(&c.spec)
            .map(|(bytes, text)| (fs.set_ephemeral_limit(bytes), text));
        if cwd != "/"
            && let Err(e) = fs.mkdir_all(&cwd, 0o755)
        {
            tracing::debug!(cwd = %cwd, error = %e, "working directory");
        }
        let cancel = pod_cancel.child_token();
        let (stdin_tx, stdin_rx) = if wants_stdin {
            let (tx, rx) = mpsc::channel(OUTPUT_CHUNKS);
            (Some(tx), Some(rx))
        } else {
            (None, None)
        };
        let (out_tx, out_rx) = mpsc::channel(OUTPUT_CHUNKS);
        let (err_tx, err_rx) = mpsc::channel(OUTPUT_CHUNKS);
        let drain_log = log.clone();
        let drained = tokio::spawn(async move { drain_log.drain(out_rx, err_rx).await });
        let ended_log = log.clone();
        let spec = ExecSpec {
            argv,
            env: env.clone(),
            cwd: cwd.clone(),
            fs: fs.clone(),
            programs: self.commands.clone(),
            processes: processes.clone(),
            cancel: cancel.clone(),
            network: run.network.clone(),
        };
        let io = ExecIo {
            stdin: stdin_rx,
            stdout: out_tx,
            stderr: err_tx,
            tty: None,
        };
        let exits = pass.exits.clone();
        let run_no = c.runs;
        if let Some((exceeded, limit)) = ephemeral {
            let (exits, uid, cancel) = (exits.clone(), uid.clone(), cancel.clone());
            let message = limits::eviction_message(&c.name, &limit);
            tokio::spawn(async move {
                tokio::select! {
                    () = exceeded.cancelled() => {
                        let _ = exits.send(Exit {
                            uid,
                            container: idx,
                            run: run_no,
                            status: ExitStatus::Killed,
                            evicted: Some(message),
                        });
                        cancel.cancel();
                    }
                    () = cancel.cancelled() => {}
                }
            });
        }
        let container_gone = cancel.clone();
        tokio::spawn(async move {
            let status = fakekube_runtime::exec(spec, io).await;
            // The container dies with its main process: background jobs and execs end, their
            // output is in the log before the exit is reported.
            container_gone.cancel();
            if tokio::time::timeout(DRAIN_GRACE, drained).await.is_err() {
                tracing::debug!("output of a finished container still open");
            }
            // The run is over: `logs -f` ends even if something still holds its output open.
            ended_log.finish();
            let _ = exits.send(Exit {
                uid,
                container: idx,
                run: run_no,
                status,
                evicted: None,
            });
        });
        c.state = CState::Running(Running {
            run: run_no,
            started_at,
            since: now,
            container_id,
            cancel,
            fs,
            env,
            cwd,
            stdin: stdin_tx,
            processes,
            probes,
            kill_at: None,
            restart_after_kill: false,
        });
        self.container_event(
            run,
            &cname,
            init,
            EventType::Normal,
            "Started",
            &format!("Started container {cname}"),
        );
    }

    /// A main process ended: the restart policy decides what follows.
    pub(super) fn on_exit(&self, pass: &mut Pass<'_>, exit: Exit) {
        let now = self.api.clock();
        let mut st = self.lock();
        let Some(run) = st.pods.get_mut(&exit.uid) else {
            return;
        };
        let Some(c) = run.containers.get_mut(exit.container) else {
            return;
        };
        let CState::Running(r) = &c.state else {
            return;
        };
        if r.run != exit.run {
            return;
        }
        let r = r.clone();
        r.cancel.cancel();
        if let Some(message) = exit.evicted {
            run.evicted.get_or_insert(message);
        }
        let (exit_code, reason, mut message) = match exit.status {
            ExitStatus::Code(0) => (0, "Completed", None),
            ExitStatus::Code(137) if r.processes.oom_kills() > 0 => (137, "OOMKilled", None),
            ExitStatus::Code(n) => (n, "Error", None),
            ExitStatus::CannotStart(m) => (128, "StartError", Some(start_error(&m))),
            ExitStatus::Killed => (137, "Error", None),
        };
        if let (Some(m), "StartError") = (&message, reason) {
            let (name, init) = (c.name.clone(), c.init);
            let text = format!("Error: {m}");
            self.container_event(run, &name, init, EventType::Warning, "Failed", &text);
        }
        let Some(c) = run.containers.get_mut(exit.container) else {
            return;
        };
        if message.is_none() {
            message = termination_message(&c.spec, &r.fs, exit_code, c.output.as_deref());
        }
        let term = Term {
            exit_code,
            reason: reason.to_string(),
            message,
            started_at: r.started_at.clone(),
            finished_at: now.now_rfc3339(),
            container_id: r.container_id.clone(),
        };
        let ran = now.now().duration_since(r.since).unwrap_or_default();
        let forced = r.restart_after_kill;
        self.after_exit(pass, run, exit.container, term, ran, forced);
        pass.dirty.insert(exit.uid);
    }

    /// After a container ended: a back-off then a restart, or the end (and maybe the pod's);
    /// the next init container or the containers when an init container completed.
    /// `probe_killed`: it was killed for a failed probe with a restart promised, which holds
    /// whatever its exit code.
    pub(super) fn after_exit(
        &self,
        pass: &mut Pass<'_>,
        run: &mut PodRun,
        idx: usize,
        term: Term,
        ran: Duration,
        probe_killed: bool,
    ) {
        let now = self.api.clock().now();
        let (pod_name, ns, uid) = (run.name.clone(), run.ns.clone(), run.uid.clone());
        let policy = run.policy;
        let deleting = run.deleting || run.evicted.is_some();
        let Some(c) = run.containers.get_mut(idx) else {
            return;
        };
        let code = term.exit_code;
        let restart = !deleting
            && if c.sidecar || probe_killed {
                true
            } else if c.init {
                code != 0 && policy.restarts(code)
            } else {
                policy.restarts(code)
            };
        let (name, init) = (c.name.clone(), c.init);
        if restart {
            if ran >= self.backoff_cap().saturating_mul(2) {
                c.crash_backoffs = 0;
            }
            let n = c.crash_backoffs;
            c.crash_backoffs = c.crash_backoffs.saturating_add(1);
            let message = format!(
                "back-off {} restarting failed container={} pod={pod_name}_{ns}({uid})",
                go_duration(nominal_backoff_secs(n)),
                c.name
            );
            c.last = Some(term);
            c.state = CState::BackOff {
                message,
                at: now + self.backoff(n),
            };
            self.container_event(
                run,
                &name,
                init,
                EventType::Warning,
                "BackOff",
                &format!(
                    "Back-off restarting failed container {name} in pod {pod_name}_{ns}({uid})"
                ),
            );
        } else {
            c.state = CState::Terminated(term);
        }
        if run.deleting {
            self.check_stopped(pass, run);
            return;
        }
        if matches!(run.phase(), "Succeeded" | "Failed") {
            run.terminal = true;
            run.cancel.cancel();
            return;
        }
        if init && code == 0 {
            self.start_next(pass, run);
        }
    }

    /// The `n`-th back-off (from 0): the base doubling, at most [`Kubelet::backoff_cap`].
    pub(super) fn backoff(&self, n: u32) -> Duration {
        let factor = 1u32 << n.min(5);
        self.config
            .backoff
            .saturating_mul(factor)
            .min(self.backoff_cap())
    }

    /// The longest back-off: 30 times the base (5 minutes for a real kubelet's 10 s).
    fn backoff_cap(&self) -> Duration {
        self.config.backoff.saturating_mul(30)
    }
}

/// containerd's wording for a container whose process could not start.
fn start_error(runtime_message: &str) -> String {
    let detail = runtime_message
        .strip_prefix("OCI runtime exec failed: exec failed: ")
        .unwrap_or(runtime_message);
    format!(
        "failed to create containerd task: failed to create shim task: OCI runtime create failed: runc create failed: {detail}"
    )
}

/// The termination message: the file at `terminationMessagePath`, else (with
/// `FallbackToLogsOnError` and a failure) the end of the output.
fn termination_message(
    spec: &Value,
    fs: &PodFs,
    exit_code: i32,
    log: Option<&OutputLog>,
) -> Option<String> {
    let path = spec
        .get("terminationMessagePath")
        .and_then(Value::as_str)
        .unwrap_or("/dev/termination-log");
    if let Ok(data) = fs.read(path)
        && !data.is_empty()
    {
        let cut = data.len().min(4096);
        return Some(String::from_utf8_lossy(data.get(..cut).unwrap_or_default()).into_owned());
    }
    let fallback = spec.get("terminationMessagePolicy").and_then(Value::as_str)
        == Some("FallbackToLogsOnError");
    if fallback && exit_code != 0 {
        let tail = log.map(OutputLog::tail).unwrap_or_default();
        let start = tail.len().saturating_sub(2048);
        let text = String::from_utf8_lossy(tail.get(start..).unwrap_or_default()).into_owned();
        let lines: Vec<&str> = text.lines().collect();
        let from = lines.len().saturating_sub(80);
        let joined = lines.get(from..).unwrap_or_default().join("\n");
        return (!joined.is_empty()).then_some(joined);
    }
    None
}
