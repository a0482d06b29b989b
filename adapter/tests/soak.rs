//! The fault soak: the main job's operations (create, exec, files, delete) from several workers
//! at once through the adapter, while fakekube injects a seeded random mix of faults
//! (connection resets, 429 and 503 with Retry-After, 500s, slow answers, exec streams dropped
//! mid-output, watch 410s, pods deleted under running execs), the token is rotated (the one
//! replaced revoked at the next rotation) and the workers delete pods under their own running
//! execs as well; a kube-rs watcher of the pods lists again after each 410. Every operation must end in success or one of the contract's codes a
//! fault explains, within its timeout; after chaos stops, a reconcile deletes what the run
//! created and nothing is left.
//!
//! It runs from `ci/soak.sh` only (ignored by a plain `cargo test`: a soak is long by design).
//! Settings (environment): `SOAK_SECONDS` (default 60; longer by hand), `SOAK_SEED` (default
//! 1; printed), `SOAK_RATE` (each fault's probability per occasion, default 0.03),
//! `SOAK_WORKERS` (default 4).

mod support;

use agentsandbox::{AgentSandbox, ConnectOptions, PoolConfig};
use fakekube::{Chaos, ChaosRates, FakeKube, Token};
use futures_util::StreamExt;
use kube::ResourceExt;
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind};
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher::{self, Event};
use sandbox_contract::{CreateRequest, ErrorCode, ExecRequest, Provider, SandboxId};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use support::{NS, pool_yaml, seed_role};

/// The longest any one operation may take (the adapter's ready timeout is within it).
const OP_TIMEOUT: Duration = Duration::from_secs(60);

/// How often the token is rotated; a replaced token is revoked at the next rotation.
const ROTATION: Duration = Duration::from_secs(2);

/// The codes a fault can explain: the server unavailable, throttled or failing, a sandbox
/// whose pod went (failed, or not running until its new pod is), an object gone meanwhile, a
/// create that raced its own retry.
const EXPLAINED: [ErrorCode; 7] = [
    ErrorCode::Unavailable,
    ErrorCode::RateLimited,
    ErrorCode::Internal,
    ErrorCode::SandboxFailed,
    ErrorCode::InvalidState,
    ErrorCode::NotFound,
    ErrorCode::Conflict,
];

fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// What the workers saw.
#[derive(Debug, Default)]
struct Tally {
    ops: u64,
    ok: u64,
    errors: BTreeMap<String, u64>,
    /// Outcomes (`ok`, a code, `timeout`) by operation.
    by_op: BTreeMap<String, BTreeMap<String, u64>>,
    unexplained: Vec<String>,
    created: BTreeSet<String>,
}

impl Tally {
    fn record<T>(
        &mut self,
        op: &str,
        outcome: &Result<Result<T, sandbox_contract::Error>, tokio::time::error::Elapsed>,
    ) {
        self.ops += 1;
        let name = match outcome {
            Ok(Ok(_)) => "ok".to_string(),
            Ok(Err(e)) => e.code().to_string(),
            Err(_) => "timeout".to_string(),
        };
        *self
            .by_op
            .entry(op.to_string())
            .or_default()
            .entry(name)
            .or_default() += 1;
        match outcome {
            Ok(Ok(_)) => self.ok += 1,
            Ok(Err(e)) => {
                *self.errors.entry(e.code().to_string()).or_default() += 1;
                if !EXPLAINED.contains(&e.code()) {
                    self.unexplained.push(format!("{op}: {} {}", e.code(), e));
                }
            }
            Err(_) => {
                *self.errors.entry("timeout".into()).or_default() += 1;
                self.unexplained
                    .push(format!("{op}: no answer within {OP_TIMEOUT:?}"));
            }
        }
    }
}

/// What a watching client saw through the chaos: a kube-rs watcher on the namespace's pods, as
/// a controller runs one (the adapter itself polls; its Role has no `watch`).
#[derive(Debug, Default)]
struct Observed {
    /// Lists it completed: the first, then one after each 410 (and after any other failure
    /// that made it start over).
    lists: u64,
    /// Errors its stream reported (it backs off and goes on).
    errors: u64,
    /// The pods it believes exist.
    pods: BTreeSet<String>,
}

/// Watches the pods of [`NS`] with `client` until aborted, keeping what it sees in `seen`.
fn observe(client: kube::Client, seen: Arc<Mutex<Observed>>) -> tokio::task::JoinHandle<()> {
    let gvk = GroupVersionKind::gvk("", "v1", "Pod");
    let pods: Api<DynamicObject> =
        Api::namespaced_with(client, NS, &ApiResource::from_gvk_with_plural(&gvk, "pods"));
    tokio::spawn(async move {
        // Watches of a second: many watch starts for chaos to end with a 410.
        let config = watcher::Config::default().timeout(1);
        let mut stream = std::pin::pin!(watcher::watcher(pods, config).default_backoff());
        let mut listing = BTreeSet::new();
        while let Some(event) = stream.next().await {
            let mut s = seen.lock().expect("what the watcher saw");
            match event {
                Ok(Event::Init) => listing.clear(),
                Ok(Event::InitApply(pod)) => {
                    listing.insert(pod.name_any());
                }
                Ok(Event::InitDone) => {
                    s.lists += 1;
                    s.pods = std::mem::take(&mut listing);
                }
                Ok(Event::Apply(pod)) => {
                    s.pods.insert(pod.name_any());
                }
                Ok(Event::Delete(pod)) => {
                    s.pods.remove(&pod.name_any());
                }
                Err(_) => s.errors += 1,
            }
        }
    })
}

/// A provider whose kubeconfig reads its token from `token_file` (re-read after a 401).
async fn provider(kube: &FakeKube, token: &str, token_file: &std::path::Path) -> AgentSandbox {
    let kubeconfig = kube.kubeconfig_with_token(token).replace(
        &format!("token: {token}"),
        &format!("tokenFile: {}", token_file.display()),
    );
    let pool = PoolConfig::from_yaml(&pool_yaml("soak", &[])).expect("pool config");
    let options = ConnectOptions::from_env()
        .with_kubeconfig_yaml(kubeconfig)
        .with_env(|_| None)
        .with_service_account_dir("/nonexistent")
        .with_ready_timeout(Duration::from_secs(30));
    // The connection itself may meet a fault: try until it holds.
    for _ in 0..50 {
        if let Ok(p) = AgentSandbox::connect(pool.clone(), options.clone()).await {
            return p;
        }
    }
    panic!("the provider never connected");
}

/// One worker's loop until `deadline`.
async fn worker(
    n: usize,
    provider: Arc<AgentSandbox>,
    kube: Arc<FakeKube>,
    tally: Arc<Mutex<Tally>>,
    deadline: Instant,
) {
    let mut round = 0u64;
    while Instant::now() < deadline {
        round += 1;
        let name = format!("soak-{n}-{round}");
        let id = SandboxId::new(name.clone()).expect("a valid id");
        tally
            .lock()
            .expect("the tally")
            .created
            .insert(name.clone());
        let created =
            tokio::time::timeout(OP_TIMEOUT, provider.create(CreateRequest::new(id.clone()))).await;
        tally.lock().expect("the tally").record("create", &created);
        if matches!(created, Ok(Ok(_))) {
            let out = tokio::time::timeout(
                OP_TIMEOUT,
                provider.exec(&id, ExecRequest::new(["echo", "soak"])),
            )
            .await;
            // 137: chaos deleted the pod under it (SIGKILL); anything else is made up.
            if let Ok(Ok(o)) = &out
                && o.exit_code != 137
                && (o.exit_code != 0 || o.stdout != "soak\n")
            {
                tally
                    .lock()
                    .expect("the tally")
                    .unexplained
                    .push(format!("exec: a made-up result {o:?}"));
            }
            tally.lock().expect("the tally").record("exec", &out);
            let write = tokio::time::timeout(
                OP_TIMEOUT,
                provider.write_file(&id, "/tmp/soak.txt", bytes::Bytes::from_static(b"kept")),
            )
            .await;
            tally
                .lock()
                .expect("the tally")
                .record("write_file", &write);
            if matches!(write, Ok(Ok(()))) {
                let read = tokio::time::timeout(
                    OP_TIMEOUT,
                    provider.read_file(&id, "/tmp/soak.txt", 1024),
                )
                .await;
                if let Ok(Ok(data)) = &read
                    && data.as_ref() != b"kept"
                {
                    tally
                        .lock()
                        .expect("the tally")
                        .unexplained
                        .push(format!("read_file: {data:?}, not what was written"));
                }
                tally.lock().expect("the tally").record("read_file", &read);
            }
            if round.is_multiple_of(3) {
                // A pod deleted under a running exec: the exec must fail, not hang or lie.
                let running = {
                    let provider = provider.clone();
                    let id = id.clone();
                    tokio::spawn(async move {
                        tokio::time::timeout(
                            OP_TIMEOUT,
                            provider.exec(
                                &id,
                                ExecRequest::new([
                                    "sh",
                                    "-c",
                                    "echo up > /tmp/running; sleep 10; echo slept",
                                ]),
                            ),
                        )
                        .await
                    })
                };
                // Delete once the exec runs in this pod (its marker shows), not before: a pod
                // deleted first is recreated, and the exec would then run in the new one.
                let started = tokio::time::timeout(OP_TIMEOUT, async {
                    while !running.is_finished() {
                        if provider.read_file(&id, "/tmp/running", 16).await.is_ok() {
                            return true;
                        }
                        tokio::task::yield_now().await;
                    }
                    false
                })
                .await;
                let deleted = matches!(started, Ok(true));
                if deleted {
                    let _ = kube.delete("pods", NS, &name);
                }
                let out = running.await.expect("the exec task ends");
                // Killed with the container (137), or run to its end: a pod whose main process
                // had not yet set its TERM trap (a pod just made, after a chaos deletion) stays
                // until its 30 s grace period runs out, as pid 1 ignores an untrapped SIGTERM.
                if let Ok(Ok(o)) = &out
                    && deleted
                    && o.exit_code != 137
                    && (o.exit_code != 0 || o.stdout != "slept\n")
                {
                    tally.lock().expect("the tally").unexplained.push(format!(
                        "exec under a deleted pod: {o:?}, neither killed (137) nor run to its end"
                    ));
                }
                tally
                    .lock()
                    .expect("the tally")
                    .record("exec_under_pod_delete", &out);
            }
        }
        let deleted = tokio::time::timeout(OP_TIMEOUT, provider.delete(&id)).await;
        tally.lock().expect("the tally").record("delete", &deleted);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "the fault soak runs from ci/soak.sh, for a set time"]
async fn every_operation_under_a_fault_storm_ends_in_success_or_an_explained_code_and_nothing_is_left()
 {
    let seconds: u64 = env_or("SOAK_SECONDS", 60);
    let seed: u64 = env_or("SOAK_SEED", 1);
    let rate: f64 = env_or("SOAK_RATE", 0.03);
    let workers: usize = env_or("SOAK_WORKERS", 4);
    println!("soak: seed {seed}, rate {rate}, {workers} workers, {seconds} s");
    let kube = Arc::new(support::fake().await);
    let dir = tempfile::tempdir().expect("a temporary directory");
    let token_file = dir.path().join("token");
    let mut token = "soak-token-0".to_string();
    kube.add_token(Token::new(token.clone(), "soak-runner").with_rules(seed_role()));
    std::fs::write(&token_file, &token).expect("token file");
    let provider = Arc::new(provider(&kube, &token, &token_file).await);
    let observed = Arc::new(Mutex::new(Observed::default()));
    let observer = observe(support::admin(&kube).await, observed.clone());
    kube.faults().chaos(Some(Chaos {
        seed,
        rates: ChaosRates::uniform(rate),
    }));
    let tally = Arc::new(Mutex::new(Tally::default()));
    let deadline = Instant::now() + Duration::from_secs(seconds);
    let mut tasks = Vec::new();
    for n in 0..workers {
        tasks.push(tokio::spawn(worker(
            n,
            provider.clone(),
            kube.clone(),
            tally.clone(),
            deadline,
        )));
    }
    // The token is rotated while the workers run: the new one written, and the one it replaced
    // revoked at the next rotation. A replaced token stays valid a while, as a projected
    // token does until it expires: revoked at once, a request whose 429 and 503 retries
    // (Retry-After: 1 s) outlive two rotations fails unauthenticated, as client-go's would.
    let mut rotations = 0;
    let mut replaced: Option<String> = None;
    while Instant::now() < deadline {
        tokio::time::sleep(ROTATION).await;
        rotations += 1;
        let next = format!("soak-token-{rotations}");
        kube.add_token(Token::new(next.clone(), "soak-runner").with_rules(seed_role()));
        // Replaced at once, as the kubelet swaps a projected token: never seen half-written.
        let staged = dir.path().join("token.next");
        std::fs::write(&staged, &next).expect("token file");
        std::fs::rename(&staged, &token_file).expect("token file");
        if let Some(old) = replaced.replace(std::mem::replace(&mut token, next)) {
            kube.revoke_token(&old);
        }
    }
    for t in tasks {
        t.await.expect("a worker ends");
    }
    kube.faults().chaos(None);
    let injected = kube.faults().chaos_injected();
    // The reconcile: delete whatever the run created, until each delete holds.
    let created = tally.lock().expect("the tally").created.clone();
    for name in &created {
        let id = SandboxId::new(name.clone()).expect("id");
        let mut ok = false;
        for _ in 0..20 {
            if provider.delete(&id).await.is_ok() {
                ok = true;
                break;
            }
        }
        assert!(ok, "reconciling {name} failed");
    }
    let left = tokio::time::timeout(Duration::from_secs(60), async {
        loop {
            let leaks = kube.leaks();
            if leaks.is_empty() {
                return leaks;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    // The watcher's view comes back to the server's (no pod) through its relists and events.
    let converged = tokio::time::timeout(Duration::from_secs(60), async {
        while !observed
            .lock()
            .expect("what the watcher saw")
            .pods
            .is_empty()
        {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    observer.abort();
    let o = observed.lock().expect("what the watcher saw");
    let t = tally.lock().expect("the tally");
    match &left {
        Ok(_) => println!("soak: after the reconcile nothing is left"),
        Err(_) => println!("soak: left after the reconcile: {:?}", kube.leaks()),
    }
    println!(
        "soak: {} operations, {} ok, errors by code {:?}, faults injected {:?}, {} token rotations, {} sandboxes created",
        t.ops,
        t.ok,
        t.errors,
        injected,
        rotations,
        created.len()
    );
    for (op, outcomes) in &t.by_op {
        println!("soak:   {op}: {outcomes:?}");
    }
    println!(
        "soak: a pod watcher listed {} times ({} watches ended by a 410), {} stream errors",
        o.lists,
        injected.get("watch_gone").copied().unwrap_or(0),
        o.errors
    );
    assert!(
        o.lists > injected.get("watch_gone").copied().unwrap_or(0),
        "every 410 must be followed by a list"
    );
    assert!(
        converged.is_ok(),
        "the watcher still believes in pods the server no longer has: {:?}",
        o.pods
    );
    assert!(
        t.unexplained.is_empty(),
        "unexplained outcomes: {:#?}",
        t.unexplained
    );
    assert!(left.is_ok(), "left after the reconcile: {:?}", kube.leaks());
    assert!(t.ops > 0 && t.ok > 0, "the soak ran nothing");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_exec_whose_pod_chaos_deletes_is_killed_with_137_or_ends_in_an_explained_code() {
    let kube = support::fake().await;
    let provider = support::direct(&kube, &[]).await;
    let id = SandboxId::new("soak-pod-delete").expect("a valid id");
    provider
        .create(CreateRequest::new(id.clone()))
        .await
        .expect("create");
    kube.faults().chaos(Some(Chaos {
        seed: 5,
        rates: ChaosRates {
            pod_delete: 1.0,
            ..ChaosRates::uniform(0.0)
        },
    }));
    let out = tokio::time::timeout(
        OP_TIMEOUT,
        provider.exec(&id, ExecRequest::new(["sh", "-c", "echo up; sleep 30"])),
    )
    .await
    .expect("the exec ends within its timeout");
    kube.faults().chaos(None);
    assert_eq!(kube.faults().chaos_injected()["pod_delete"], 1);
    match out {
        // SIGKILL, as the container's processes get when the pod goes (128 + 9).
        Ok(o) => assert_eq!(o.exit_code, 137, "{o:?}"),
        Err(e) => assert!(EXPLAINED.contains(&e.code()), "{e}"),
    }
}
