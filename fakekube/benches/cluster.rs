//! The cluster benchmark: the same figures, measured the same way, against any cluster a
//! kubeconfig names, so that a fakekube process and the upstream control plane of
//! `ci/upstream-up.sh` can stand side by side (`ci/bench.sh` runs both and pairs them):
//!
//! - GETs of one pod and LISTs of 100 pods per second, sequential requests from one kube-rs
//!   client (HTTP/1.1, kube's own connector, as `api.rs`'s HTTP/1.1 rows);
//! - the round trip of an exec of `true` (TLS connection, WebSocket upgrade offering
//!   `v5.channel.k8s.io`, the session, the status and the closing handshake) and the stdout
//!   throughput of `head -c 100000000 /dev/zero` through an exec, with the minimal client of
//!   `exec.rs`, beside the raw TLS floor of `support/raw_tls.rs` measured in the same run;
//! - create -> ready of a direct agent-sandbox Sandbox (`agents.x-k8s.io/v1beta1`, the
//!   adapter's pod template): from the POST to its Ready condition True seen through a watch
//!   opened before it; the first one, made as the namespace is new, on a row of its own.
//!
//! Without `-- --kubeconfig PATH` it spawns the fakekube release binary (`--port 0`) and also
//! reports its start (spawn -> the `fakekube listening on` line). Everything runs in a fresh
//! namespace, deleted at the end. `-- --quick`: fewer iterations. It prints one table, and a
//! line `row<TAB>NAME<TAB>VALUE<TAB>UNIT` per figure for a script to pair two runs. Credentials
//! (the kubeconfig's token or client key) are used, never printed.
//!
//! Run with `cargo bench -p fakekube --bench cluster [-- --kubeconfig PATH] [--quick]`.

#[path = "support/percentile.rs"]
mod percentile;
#[path = "support/raw_tls.rs"]
mod raw_tls;
#[path = "support/ws_exec.rs"]
mod ws_exec;

use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use base64::Engine;
use futures_util::{StreamExt, TryStreamExt, stream};
use k8s_openapi::api::core::v1::{Namespace, Pod, ServiceAccount};
use kube::api::{
    Api, ApiResource, DeleteParams, DynamicObject, GroupVersionKind, ListParams, PostParams,
    WatchEvent, WatchParams,
};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};
use percentile::percentile;
use raw_tls::RawServer;
use rustls::RootCertStore;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use serde_json::{Value, json};
use tokio_rustls::TlsConnector;
use ws_exec::{Endpoint, Ran};

/// Anything that can fail in the benchmark, reported and ending the run.
type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// How many pods the LIST returns (and the namespace holds).
const LISTED_PODS: usize = 100;
/// Bytes of stdout in the throughput runs.
const BIG: usize = 100_000_000;
/// The pod GET and exec use.
const TARGET_POD: &str = "bench-000";
/// The pods' container.
const CONTAINER: &str = "main";
/// The adapter's keep-alive command (adapter/src/manifest.rs): ends at once on SIGTERM.
const KEEP_ALIVE: &str = "trap 'exit 0' TERM; while true; do sleep 3600 & wait; done";
/// How long the pods or a Sandbox may take to come up before the run gives up (a limit, not a
/// measurement).
const UP_LIMIT: Duration = Duration::from_secs(300);
/// Pod creates in flight at once.
const CREATORS: usize = 8;

/// Iteration counts.
struct Counts {
    gets: usize,
    lists: usize,
    execs: usize,
    throughput_runs: usize,
    sandboxes: usize,
}

impl Counts {
    fn new(quick: bool) -> Counts {
        if quick {
            Counts {
                gets: 300,
                lists: 50,
                execs: 50,
                throughput_runs: 2,
                sandboxes: 3,
            }
        } else {
            Counts {
                gets: 2000,
                lists: 300,
                execs: 300,
                throughput_runs: 5,
                sandboxes: 10,
            }
        }
    }
}

/// The command line.
struct Args {
    quick: bool,
    kubeconfig: Option<PathBuf>,
}

impl Args {
    fn parse() -> Result<Args, BoxError> {
        let args: Vec<String> = std::env::args().skip(1).collect();
        let mut parsed = Args {
            quick: false,
            kubeconfig: None,
        };
        let mut i = 0;
        while i < args.len() {
            match args[i].as_str() {
                "--quick" => parsed.quick = true,
                "--kubeconfig" => {
                    i += 1;
                    let path = args.get(i).ok_or("--kubeconfig needs a path")?;
                    // Absolute: cargo bench runs the bench in the package's directory.
                    parsed.kubeconfig = Some(std::path::absolute(path)?);
                }
                // cargo bench's own flags (`--bench`) and libtest's take no value here.
                _ => {}
            }
            i += 1;
        }
        Ok(parsed)
    }
}

/// A fakekube process started for the run, stopped when dropped.
struct Fakekube {
    child: Child,
    _dir: tempfile::TempDir,
    kubeconfig: PathBuf,
    /// Spawn -> its `fakekube listening on` line.
    start: Duration,
}

impl Fakekube {
    fn start() -> Result<Fakekube, BoxError> {
        let dir = tempfile::tempdir()?;
        let kubeconfig = dir.path().join("kubeconfig");
        let spawned = Instant::now();
        let mut child = Command::new(env!("CARGO_BIN_EXE_fakekube"))
            .args(["--port", "0", "--kubeconfig"])
            .arg(&kubeconfig)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()?;
        let stdout = child.stdout.take().ok_or("fakekube has no stdout")?;
        let mut reader = std::io::BufReader::new(stdout);
        let mut line = String::new();
        reader.read_line(&mut line)?;
        let start = spawned.elapsed();
        if !line.starts_with("fakekube listening on ") {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!("fakekube's first line: {line:?}").into());
        }
        // Whatever else it prints is read and dropped, so that it never blocks on a full pipe.
        std::thread::spawn(move || std::io::copy(&mut reader, &mut std::io::sink()));
        Ok(Fakekube {
            child,
            _dir: dir,
            kubeconfig,
            start,
        })
    }
}

impl Drop for Fakekube {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// What the exec client needs from the kubeconfig: the server, a TLS client trusting its CA
/// (with the kubeconfig's client certificate, if it has one), and its bearer token, if any.
struct Target {
    /// `host:port`.
    authority: String,
    host: String,
    tls: TlsConnector,
    token: Option<String>,
}

/// A string at `key` of a kubeconfig map.
fn text<'a>(value: &'a Value, key: &str) -> Option<&'a str> {
    value.get(key).and_then(Value::as_str)
}

/// The entry named `name` of the kubeconfig's list `list` (`clusters`, `users`, `contexts`),
/// its inner map (`cluster`, `user`, `context`).
fn named<'a>(config: &'a Value, list: &str, inner: &str, name: &str) -> Option<&'a Value> {
    config
        .get(list)?
        .as_array()?
        .iter()
        .find(|e| text(e, "name") == Some(name))?
        .get(inner)
}

/// PEM bytes from `KEY-data` (base64) or the file at `KEY`, relative to the kubeconfig.
fn pem(map: &Value, key: &str, dir: &Path) -> Result<Option<Vec<u8>>, BoxError> {
    if let Some(data) = text(map, &format!("{key}-data")) {
        return Ok(Some(
            base64::engine::general_purpose::STANDARD.decode(data.trim())?,
        ));
    }
    match text(map, key) {
        Some(path) => Ok(Some(std::fs::read(dir.join(path))?)),
        None => Ok(None),
    }
}

impl Target {
    fn from_kubeconfig(path: &Path) -> Result<Target, BoxError> {
        let config: Value = serde_saphyr::from_str(&std::fs::read_to_string(path)?)?;
        let dir = path.parent().unwrap_or(Path::new("."));
        let context_name = text(&config, "current-context").ok_or("no current-context")?;
        let context = named(&config, "contexts", "context", context_name)
            .ok_or("the current context is not in the kubeconfig")?;
        let cluster = named(
            &config,
            "clusters",
            "cluster",
            text(context, "cluster").unwrap_or_default(),
        )
        .ok_or("the context's cluster is not in the kubeconfig")?;
        let user = text(context, "user")
            .and_then(|name| named(&config, "users", "user", name))
            .cloned()
            .unwrap_or(Value::Null);
        let server: http::Uri = text(cluster, "server").ok_or("no server")?.parse()?;
        let host = server.host().ok_or("the server has no host")?.to_string();
        let authority = format!("{host}:{}", server.port_u16().unwrap_or(443));

        let mut roots = RootCertStore::empty();
        let ca = pem(cluster, "certificate-authority", dir)?.ok_or("no certificate authority")?;
        for cert in CertificateDer::pem_slice_iter(&ca) {
            roots.add(cert?)?;
        }
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let builder = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()?
            .with_root_certificates(roots);
        let cert = pem(&user, "client-certificate", dir)?;
        let key = pem(&user, "client-key", dir)?;
        let mut tls = match (cert, key) {
            (Some(cert), Some(key)) => {
                let chain = CertificateDer::pem_slice_iter(&cert).collect::<Result<Vec<_>, _>>()?;
                builder.with_client_auth_cert(chain, PrivateKeyDer::from_pem_slice(&key)?)?
            }
            _ => builder.with_no_client_auth(),
        };
        tls.alpn_protocols = vec![b"http/1.1".to_vec()];
        let token = match (text(&user, "token"), text(&user, "tokenFile")) {
            (Some(token), _) => Some(token.to_string()),
            (None, Some(file)) => Some(std::fs::read_to_string(dir.join(file))?.trim().into()),
            (None, None) => None,
        };
        Ok(Target {
            authority,
            host,
            tls: TlsConnector::from(Arc::new(tls)),
            token,
        })
    }
}

/// One exec in `namespace`'s pod [`TARGET_POD`], container [`CONTAINER`], with the client
/// `exec.rs` uses.
async fn exec(target: &Target, namespace: &str, command: &[&str]) -> Result<Ran, BoxError> {
    let to = Endpoint {
        tls: &target.tls,
        authority: &target.authority,
        host: &target.host,
        token: target.token.as_deref(),
    };
    ws_exec::exec(&to, namespace, TARGET_POD, Some(CONTAINER), command).await
}

/// Whether an exec's status says it succeeded.
fn succeeded(ran: &Ran) -> bool {
    serde_json::from_str::<Value>(&ran.status)
        .ok()
        .and_then(|s| {
            s.get("status")
                .and_then(Value::as_str)
                .map(|s| s == "Success")
        })
        .unwrap_or(false)
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// The figures of a run, in order: machine name, label, value, unit.
struct Figures {
    rows: Vec<(String, String, f64, &'static str)>,
}

impl Figures {
    fn add(&mut self, name: &str, label: String, value: f64, unit: &'static str) {
        self.rows.push((name.into(), label, value, unit));
    }

    fn print(&self) {
        println!("{:<58} {:>12} {:<6}", "figure", "value", "unit");
        for (_, label, value, unit) in &self.rows {
            let digits = if *value >= 100.0 { 0 } else { 2 };
            println!("{label:<58} {value:>12.digits$} {unit:<6}");
        }
        println!();
        for (name, _, value, unit) in &self.rows {
            println!("row\t{name}\t{value:.3}\t{unit}");
        }
    }
}

/// A pod of the namespace: the adapter's keep-alive in busybox, no token mounted.
fn pod(name: &str) -> Result<Pod, BoxError> {
    Ok(serde_json::from_value(json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": { "name": name, "labels": { "app": "cluster-bench" } },
        "spec": {
            "automountServiceAccountToken": false,
            "containers": [{
                "name": CONTAINER,
                "image": "busybox:1.36",
                "command": ["/bin/sh", "-c", KEEP_ALIVE],
            }],
        },
    }))?)
}

/// A direct Sandbox, with the pod template the adapter sends (its container, image aside).
/// Named `sbx-*`: its pod takes its name, which must not be one of the `bench-*` pods.
fn sandbox(name: &str) -> Result<DynamicObject, BoxError> {
    Ok(serde_json::from_value(json!({
        "apiVersion": "agents.x-k8s.io/v1beta1",
        "kind": "Sandbox",
        "metadata": { "name": name },
        "spec": {
            "podTemplate": {
                "metadata": { "labels": { "app": "cluster-bench-sandbox" } },
                "spec": {
                    "automountServiceAccountToken": false,
                    "containers": [{
                        "name": "sandbox",
                        "image": "busybox:1.36",
                        "command": ["/bin/sh", "-c", KEEP_ALIVE],
                    }],
                },
            },
        },
    }))?)
}

fn sandbox_ready(object: &DynamicObject) -> bool {
    object
        .data
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .is_some_and(|conditions| {
            conditions
                .iter()
                .any(|c| text(c, "type") == Some("Ready") && text(c, "status") == Some("True"))
        })
}

/// Creates Sandbox `name` and returns the time from its POST to its Ready condition True,
/// seen through a watch opened before the POST; then deletes it.
async fn sandbox_create_ready(api: &Api<DynamicObject>, name: &str) -> Result<Duration, BoxError> {
    let version = api
        .list_metadata(&ListParams::default().limit(1))
        .await?
        .metadata
        .resource_version
        .unwrap_or_default();
    let params = WatchParams::default()
        .fields(&format!("metadata.name={name}"))
        .timeout(UP_LIMIT.as_secs() as u32);
    let events = api.watch(&params, &version).await?;
    let mut events = std::pin::pin!(events);
    let body = sandbox(name)?;
    let posted = Instant::now();
    api.create(&PostParams::default(), &body).await?;
    let took = loop {
        let event = tokio::time::timeout(UP_LIMIT, events.try_next())
            .await
            .map_err(|_| format!("Sandbox {name} not Ready after {UP_LIMIT:?}"))??
            .ok_or_else(|| format!("the watch of Sandbox {name} ended before it was Ready"))?;
        match event {
            WatchEvent::Added(o) | WatchEvent::Modified(o) if sandbox_ready(&o) => {
                break posted.elapsed();
            }
            WatchEvent::Error(status) => {
                return Err(format!("watching Sandbox {name}: {}", status.message).into());
            }
            _ => {}
        }
    };
    api.delete(name, &DeleteParams::default()).await?;
    Ok(took)
}

/// Polls until `check` holds, every 100 ms, up to [`UP_LIMIT`].
async fn poll<F, Fut>(what: &str, mut check: F) -> Result<(), BoxError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<bool, BoxError>>,
{
    let deadline = Instant::now() + UP_LIMIT;
    while !check().await? {
        if Instant::now() > deadline {
            return Err(format!("no {what} after {UP_LIMIT:?}").into());
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Ok(())
}

/// Times `count` sequential runs of `op` after `warm` untimed ones; returns requests per second
/// over the timed ones and their median.
async fn sequential<F, Fut>(
    warm: usize,
    count: usize,
    mut op: F,
) -> Result<(f64, Duration), BoxError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<(), BoxError>>,
{
    for _ in 0..warm {
        op().await?;
    }
    let mut times = Vec::with_capacity(count);
    let began = Instant::now();
    for _ in 0..count {
        let t = Instant::now();
        op().await?;
        times.push(t.elapsed());
    }
    let rate = count as f64 / began.elapsed().as_secs_f64();
    Ok((rate, percentile(&times, 50.0)))
}

/// Everything measured in `namespace` (made by the caller, deleted by it).
async fn measure(
    client: &Client,
    target: &Target,
    namespace: &str,
    counts: &Counts,
    figures: &mut Figures,
) -> Result<(), BoxError> {
    // A new namespace's pods wait for its default service account (upstream's admission).
    let accounts: Api<ServiceAccount> = Api::namespaced(client.clone(), namespace);
    poll("service account default", || async {
        Ok(accounts.get_opt("default").await?.is_some())
    })
    .await?;

    let gvk = GroupVersionKind::gvk("agents.x-k8s.io", "v1beta1", "Sandbox");
    let resource = ApiResource::from_gvk_with_plural(&gvk, "sandboxes");
    let sandboxes: Api<DynamicObject> = Api::namespaced_with(client.clone(), namespace, &resource);
    let first = sandbox_create_ready(&sandboxes, "sbx-first").await?;
    figures.add(
        "sandbox_first_ready_ms",
        "Sandbox create -> Ready, the first (new namespace)".into(),
        ms(first),
        "ms",
    );

    let pods: Api<Pod> = Api::namespaced(client.clone(), namespace);
    let creating = Instant::now();
    stream::iter(0..LISTED_PODS)
        .map(|i| {
            let pods = pods.clone();
            async move {
                pods.create(&PostParams::default(), &pod(&format!("bench-{i:03}"))?)
                    .await?;
                Ok::<_, BoxError>(())
            }
        })
        .buffer_unordered(CREATORS)
        .try_collect::<()>()
        .await?;
    let selector = ListParams::default().labels("app=cluster-bench");
    poll(&format!("{LISTED_PODS} Running pods"), || async {
        let list = pods.list(&selector).await?;
        Ok(list.items.len() == LISTED_PODS
            && list
                .items
                .iter()
                .all(|p| p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running")))
    })
    .await?;
    println!(
        "{LISTED_PODS} pods created and Running in {:.1?}",
        creating.elapsed()
    );

    let (rate, p50) = sequential(20, counts.gets, || async {
        pods.get(TARGET_POD).await?;
        Ok(())
    })
    .await?;
    figures.add(
        "get_rps",
        format!(
            "GET pod, {} sequential (median {:.2} ms)",
            counts.gets,
            ms(p50)
        ),
        rate,
        "req/s",
    );
    let everything = ListParams::default();
    let (rate, p50) = sequential(5, counts.lists, || async {
        let list = pods.list(&everything).await?;
        if list.items.len() < LISTED_PODS {
            return Err(format!("the LIST returned {} pods", list.items.len()).into());
        }
        Ok(())
    })
    .await?;
    figures.add(
        "list_rps",
        format!(
            "LIST {LISTED_PODS} pods, {} sequential (median {:.2} ms)",
            counts.lists,
            ms(p50)
        ),
        rate,
        "req/s",
    );

    let raw = RawServer::start(BIG).await?;
    let mut execs = Vec::with_capacity(counts.execs);
    for i in 0..10 + counts.execs {
        let t = Instant::now();
        let ran = exec(target, namespace, &["true"]).await?;
        let took = t.elapsed();
        if !succeeded(&ran) {
            return Err(format!("exec of true ended with {:?}", ran.status).into());
        }
        if i >= 10 {
            execs.push(took);
        }
    }
    let mut echoes = Vec::with_capacity(counts.execs);
    for i in 0..10 + counts.execs {
        let t = Instant::now();
        raw.echo().await?;
        if i >= 10 {
            echoes.push(t.elapsed());
        }
    }
    let n = counts.execs;
    figures.add(
        "exec_true_p50_ms",
        format!("exec `true` round trip, median of {n}"),
        ms(percentile(&execs, 50.0)),
        "ms",
    );
    figures.add(
        "exec_true_p90_ms",
        format!("exec `true` round trip, p90 of {n}"),
        ms(percentile(&execs, 90.0)),
        "ms",
    );
    figures.add(
        "raw_tls_echo_p50_ms",
        format!("raw TLS connect + 1-byte echo, median of {n}"),
        ms(percentile(&echoes, 50.0)),
        "ms",
    );
    figures.add(
        "raw_tls_echo_p90_ms",
        format!("raw TLS connect + 1-byte echo, p90 of {n}"),
        ms(percentile(&echoes, 90.0)),
        "ms",
    );
    figures.add(
        "exec_over_raw_p50",
        "exec `true` median / raw TLS echo median".into(),
        percentile(&execs, 50.0).as_secs_f64() / percentile(&echoes, 50.0).as_secs_f64(),
        "x",
    );

    let command = ["head", "-c", "100000000", "/dev/zero"];
    let mbps = |d: Duration| BIG as f64 / 1e6 / d.as_secs_f64().max(1e-9);
    let mut exec_runs = Vec::new();
    for _ in 0..counts.throughput_runs {
        let t = Instant::now();
        let ran = exec(target, namespace, &command).await?;
        let took = t.elapsed();
        if ran.stdout_bytes != BIG || !succeeded(&ran) {
            return Err(format!(
                "the exec delivered {} bytes, status {:?}",
                ran.stdout_bytes, ran.status
            )
            .into());
        }
        exec_runs.push(took);
    }
    let mut raw_runs = Vec::new();
    for _ in 0..counts.throughput_runs {
        let t = Instant::now();
        let got = raw.copy().await?;
        let took = t.elapsed();
        if got != BIG {
            return Err(format!("the raw copy delivered {got} bytes").into());
        }
        raw_runs.push(took);
    }
    let runs = counts.throughput_runs;
    let exec_mbps = mbps(percentile(&exec_runs, 50.0));
    let raw_mbps = mbps(percentile(&raw_runs, 50.0));
    figures.add(
        "exec_stdout_mbps",
        format!("exec stdout, 100 MB, median of {runs}"),
        exec_mbps,
        "MB/s",
    );
    figures.add(
        "raw_tls_copy_mbps",
        format!("raw TLS copy, 100 MB, median of {runs}"),
        raw_mbps,
        "MB/s",
    );
    figures.add(
        "exec_stdout_of_raw",
        "exec stdout / raw TLS copy".into(),
        exec_mbps / raw_mbps,
        "x",
    );

    let mut readies = Vec::with_capacity(counts.sandboxes);
    for i in 0..counts.sandboxes {
        readies.push(sandbox_create_ready(&sandboxes, &format!("sbx-{i:03}")).await?);
    }
    let n = counts.sandboxes;
    figures.add(
        "sandbox_ready_p50_ms",
        format!("Sandbox create -> Ready, median of {n}"),
        ms(percentile(&readies, 50.0)),
        "ms",
    );
    figures.add(
        "sandbox_ready_p90_ms",
        format!("Sandbox create -> Ready, p90 of {n}"),
        ms(percentile(&readies, 90.0)),
        "ms",
    );
    Ok(())
}

/// The 1-minute load average, for the table's heading.
fn load() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|l| l.split_whitespace().next().map(str::to_string))
        .unwrap_or_else(|| "?".into())
}

fn main() -> Result<(), BoxError> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(run())
}

async fn run() -> Result<(), BoxError> {
    let began = Instant::now();
    let args = Args::parse()?;
    let counts = Counts::new(args.quick);
    let mut figures = Figures { rows: Vec::new() };
    let fakekube = match &args.kubeconfig {
        Some(_) => None,
        None => Some(Fakekube::start()?),
    };
    let (kubeconfig, what) = match (&fakekube, &args.kubeconfig) {
        (Some(fake), _) => (
            fake.kubeconfig.clone(),
            "a fakekube process it started".into(),
        ),
        (None, path) => {
            let path = path.clone().ok_or("no kubeconfig")?;
            let what = format!("the cluster of {}", path.display());
            (path, what)
        }
    };
    if let Some(fake) = &fakekube {
        figures.add(
            "start_ms",
            "server start: fakekube spawn -> `listening on` line".into(),
            ms(fake.start),
            "ms",
        );
    }
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    println!(
        "cluster benchmark against {what} ({cores} cores, load {} at its start{})",
        load(),
        if args.quick { ", --quick" } else { "" }
    );
    let target = Target::from_kubeconfig(&kubeconfig)?;
    let config = Config::from_custom_kubeconfig(
        Kubeconfig::read_from(&kubeconfig)?,
        &KubeConfigOptions::default(),
    )
    .await?;
    let client = Client::try_from(config)?;

    let namespace = format!("cluster-bench-{}", std::process::id());
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let ns: Namespace = serde_json::from_value(json!({ "metadata": { "name": namespace } }))?;
    namespaces.create(&PostParams::default(), &ns).await?;
    let measured = measure(&client, &target, &namespace, &counts, &mut figures).await;

    // Cleanup, whether or not the measurement went through.
    let deleting = Instant::now();
    let cleanup = async {
        namespaces
            .delete(&namespace, &DeleteParams::default())
            .await?;
        poll(&format!("deletion of namespace {namespace}"), || async {
            Ok(namespaces.get_opt(&namespace).await?.is_none())
        })
        .await
    }
    .await;
    match &cleanup {
        Ok(()) => println!(
            "namespace {namespace} deleted in {:.1?}",
            deleting.elapsed()
        ),
        Err(e) => eprintln!("cluster bench: deleting namespace {namespace}: {e}"),
    }
    measured?;
    println!();
    figures.print();
    println!();
    println!(
        "total benchmark time {:.1} s (load {} at its end)",
        began.elapsed().as_secs_f64(),
        load()
    );
    drop(fakekube);
    cleanup
}
