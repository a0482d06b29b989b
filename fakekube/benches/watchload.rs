//! The watch load benchmark: `--watches` concurrent watches (default 1,000) of ConfigMaps,
//! spread over `--namespaces` namespaces (default 10), while `--writes` ConfigMaps (default
//! 10,000) are created across them, 32 at a time, through kube-rs, a real client.
//!
//! Every watcher must see the creation of every object of its namespace exactly once, in
//! resourceVersion order, with no error event and no end of its stream before that; the bench
//! fails (exit 1) when one does not, naming it. It runs `--rounds` rounds (default 3), each in
//! fresh namespaces deleted at its end, and reports for each the write rate, the events
//! delivered and how long after the last write the last watcher had all of its own, and the
//! resident memory of the server's processes at the round's peak, as it ends (watches closed,
//! objects and namespaces deleted) and 10 s later: a server that keeps what a finished load
//! left grows from round to round; one that does not stays flat.
//!
//! The server is a fakekube process this bench starts (its release binary), or with
//! `-- --kubeconfig PATH --pid PID...` any cluster, such as the upstream stack of
//! ci/upstream-up.sh with its kube-apiserver's and etcd's pids; `ci/watch-load.sh` runs both.
//! `-- --quick`: 100 watches and 1,000 writes.
//!
//! Run with `cargo bench -p fakekube --bench watchload`.

#[path = "support/rss.rs"]
mod rss;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use futures_util::{StreamExt, TryStreamExt, stream};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::api::{Api, DeleteParams, ListParams, PostParams, WatchEvent, WatchParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};
use serde_json::json;

/// Anything that can fail in the benchmark, reported and ending the run.
type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Creates in flight at once.
const WRITERS: usize = 32;
/// How long after a round the server's memory is read again.
const SETTLE_SECS: u64 = 10;
/// How long a watcher may wait for its namespace's objects after the last write.
const DELIVERY_LIMIT: Duration = Duration::from_secs(180);

/// The run's shape, from the command line.
struct Shape {
    watches: usize,
    writes: usize,
    namespaces: usize,
    rounds: usize,
    kubeconfig: Option<PathBuf>,
    pids: Vec<u32>,
}

impl Shape {
    fn from_args() -> Result<Shape, BoxError> {
        let args: Vec<String> = std::env::args().skip(1).collect();
        let quick = args.iter().any(|a| a == "--quick");
        let mut shape = Shape {
            watches: if quick { 100 } else { 1000 },
            writes: if quick { 1000 } else { 10_000 },
            namespaces: 10,
            rounds: 3,
            kubeconfig: None,
            pids: Vec::new(),
        };
        let mut i = 0;
        while i < args.len() {
            let value = || {
                args.get(i + 1)
                    .cloned()
                    .ok_or_else(|| format!("{} needs a value", args[i]))
            };
            match args[i].as_str() {
                "--watches" => shape.watches = value()?.parse()?,
                "--writes" => shape.writes = value()?.parse()?,
                "--namespaces" => shape.namespaces = value()?.parse()?,
                "--rounds" => shape.rounds = value()?.parse()?,
                "--kubeconfig" => shape.kubeconfig = Some(value()?.into()),
                "--pid" => shape.pids.push(value()?.parse()?),
                // cargo bench's own flags (`--bench`) and --quick take no value.
                _ => {
                    i += 1;
                    continue;
                }
            }
            i += 2;
        }
        if shape.namespaces == 0 || shape.watches < shape.namespaces {
            return Err("--watches must be at least --namespaces, which must be at least 1".into());
        }
        Ok(shape)
    }
}

/// A fakekube process started for the run, stopped when dropped.
struct Fakekube {
    child: Child,
    _dir: tempfile::TempDir,
    kubeconfig: PathBuf,
}

impl Fakekube {
    fn start() -> Result<Fakekube, BoxError> {
        let dir = tempfile::tempdir()?;
        let kubeconfig = dir.path().join("kubeconfig");
        let mut child = Command::new(env!("CARGO_BIN_EXE_fakekube"))
            .arg("--kubeconfig")
            .arg(&kubeconfig)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()?;
        let stdout = child.stdout.take().ok_or("fakekube has no stdout")?;
        let mut line = String::new();
        std::io::BufRead::read_line(&mut std::io::BufReader::new(stdout), &mut line)?;
        if !line.starts_with("fakekube listening on ") {
            let _ = child.kill();
            return Err(format!("fakekube's first line: {line:?}").into());
        }
        Ok(Fakekube {
            child,
            _dir: dir,
            kubeconfig,
        })
    }
}

impl Drop for Fakekube {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The resident memory of `pids`, summed, in bytes (0 for a process that is gone).
fn rss(pids: &[u32]) -> u64 {
    pids.iter()
        .filter_map(|pid| rss::resident_bytes(&pid.to_string()))
        .sum()
}

fn mib(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / (1024.0 * 1024.0))
}

async fn client(path: &Path) -> Result<Client, BoxError> {
    let kubeconfig = Kubeconfig::read_from(path)?;
    let config = Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default()).await?;
    Ok(Client::try_from(config)?)
}

/// What one watcher saw.
struct Seen {
    namespace: usize,
    added: usize,
    problem: Option<String>,
    done_at: Option<Instant>,
}

/// Watches the ConfigMaps of `namespace` from `version` until it has seen `expected`
/// creations (then stops), or its stream ends or goes wrong.
async fn watch(
    api: Api<ConfigMap>,
    namespace: usize,
    version: String,
    expected: usize,
    ready: tokio::sync::mpsc::Sender<()>,
    delivered: Arc<AtomicU64>,
) -> Seen {
    let mut seen = Seen {
        namespace,
        added: 0,
        problem: None,
        done_at: None,
    };
    let params = WatchParams::default().timeout(290);
    let events = match api.watch(&params, &version).await {
        Ok(events) => events,
        Err(e) => {
            seen.problem = Some(format!("the watch was refused: {e}"));
            let _ = ready.send(()).await;
            return seen;
        }
    };
    let _ = ready.send(()).await;
    drop(ready);
    let mut events = std::pin::pin!(events);
    let mut names = std::collections::HashSet::new();
    let mut last_version = 0u64;
    if expected == 0 {
        seen.done_at = Some(Instant::now());
        return seen;
    }
    loop {
        let event = match tokio::time::timeout(DELIVERY_LIMIT, events.next()).await {
            Err(_) => {
                seen.problem = Some(format!(
                    "no event for {DELIVERY_LIMIT:?} with {} of {expected} seen",
                    seen.added
                ));
                return seen;
            }
            Ok(None) => {
                seen.problem = Some(format!(
                    "the stream ended with {} of {expected} seen",
                    seen.added
                ));
                return seen;
            }
            Ok(Some(Err(e))) => {
                seen.problem = Some(format!("the stream failed: {e}"));
                return seen;
            }
            Ok(Some(Ok(event))) => event,
        };
        match event {
            WatchEvent::Added(cm) => {
                delivered.fetch_add(1, Ordering::Relaxed);
                let name = cm.metadata.name.unwrap_or_default();
                let version = cm.metadata.resource_version.unwrap_or_default();
                match version.parse::<u64>() {
                    Ok(v) if v > last_version => last_version = v,
                    _ => {
                        seen.problem = Some(format!(
                            "{name} came with resourceVersion {version:?} after {last_version}"
                        ));
                        return seen;
                    }
                }
                if !names.insert(name.clone()) {
                    seen.problem = Some(format!("{name} was added twice"));
                    return seen;
                }
                seen.added += 1;
                if seen.added == expected {
                    seen.done_at = Some(Instant::now());
                    return seen;
                }
            }
            WatchEvent::Bookmark(_) => {}
            WatchEvent::Modified(_) | WatchEvent::Deleted(_) => {
                seen.problem = Some("an object nobody changed was modified or deleted".into());
                return seen;
            }
            WatchEvent::Error(status) => {
                seen.problem = Some(format!(
                    "an error event: {} {}",
                    status.code, status.message
                ));
                return seen;
            }
        }
    }
}

/// What one round of the load measured and found.
struct Round {
    /// Watchers that missed an event, saw one twice or out of order, or failed, by namespace.
    problems: BTreeMap<String, Vec<String>>,
    /// The server's memory at the round's peak and once it ended (watches closed, objects
    /// deleted).
    peak: u64,
    ended: u64,
}

/// One round: `shape.namespaces` fresh namespaces named after `prefix`, the watches opened,
/// the writes made, every watcher's events checked; then the watches close and the objects
/// and namespaces go.
async fn round(
    client: &Client,
    shape: &Shape,
    prefix: &str,
    pids: &[u32],
) -> Result<Round, BoxError> {
    let namespaces: Vec<String> = (0..shape.namespaces)
        .map(|i| format!("{prefix}-{i}"))
        .collect();
    let ns_api: Api<Namespace> = Api::all(client.clone());
    for name in &namespaces {
        let ns: Namespace = serde_json::from_value(json!({"metadata": {"name": name}}))?;
        ns_api.create(&PostParams::default(), &ns).await?;
    }

    // The memory sampler: the peak from now on.
    let peak = Arc::new(AtomicU64::new(rss(pids)));
    let sampling = {
        let (peak, pids) = (peak.clone(), pids.to_vec());
        tokio::spawn(async move {
            loop {
                peak.fetch_max(rss(&pids), Ordering::Relaxed);
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        })
    };

    // Every watcher from its namespace's current resourceVersion, all open before a write.
    let mut versions = Vec::new();
    for name in &namespaces {
        let api: Api<ConfigMap> = Api::namespaced(client.clone(), name);
        let list = api.list_metadata(&ListParams::default()).await?;
        versions.push(list.metadata.resource_version.unwrap_or_default());
    }
    let expected = |ns: usize| {
        shape.writes / shape.namespaces + usize::from(ns < shape.writes % shape.namespaces)
    };
    let delivered = Arc::new(AtomicU64::new(0));
    let (ready_tx, mut ready_rx) = tokio::sync::mpsc::channel(shape.watches);
    let opening = Instant::now();
    let mut watchers = tokio::task::JoinSet::new();
    for w in 0..shape.watches {
        let ns = w % shape.namespaces;
        watchers.spawn(watch(
            Api::namespaced(client.clone(), &namespaces[ns]),
            ns,
            versions[ns].clone(),
            expected(ns),
            ready_tx.clone(),
            delivered.clone(),
        ));
    }
    drop(ready_tx);
    for _ in 0..shape.watches {
        ready_rx
            .recv()
            .await
            .ok_or("a watcher ended before it was ready")?;
    }
    println!(
        "  {} watches open in {:.2?}",
        shape.watches,
        opening.elapsed()
    );

    let writing = Instant::now();
    stream::iter(0..shape.writes)
        .map(|i| {
            let api: Api<ConfigMap> =
                Api::namespaced(client.clone(), &namespaces[i % shape.namespaces]);
            async move {
                let cm: ConfigMap = serde_json::from_value(json!({
                    "metadata": {"name": format!("cm-{i}")},
                    "data": {"i": i.to_string()},
                }))?;
                api.create(&PostParams::default(), &cm).await?;
                Ok::<_, BoxError>(())
            }
        })
        .buffer_unordered(WRITERS)
        .try_collect::<()>()
        .await?;
    let wrote = writing.elapsed();
    let last_write = Instant::now();
    println!(
        "  writes: {} in {:.2?} ({:.0}/s)",
        shape.writes,
        wrote,
        shape.writes as f64 / wrote.as_secs_f64()
    );

    let mut problems: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut last_done = last_write;
    let mut complete = 0;
    while let Some(seen) = watchers.join_next().await {
        let seen = seen?;
        match (seen.problem, seen.done_at) {
            (None, Some(at)) => {
                complete += 1;
                last_done = last_done.max(at);
            }
            (problem, _) => problems
                .entry(namespaces[seen.namespace].clone())
                .or_default()
                .push(format!(
                    "{} ({} seen)",
                    problem.unwrap_or_default(),
                    seen.added
                )),
        }
    }
    let events = delivered.load(Ordering::Relaxed);
    let delivery = last_done.duration_since(writing);
    println!(
        "  events: {events} delivered of {} expected, in {:.2?} from the first write ({:.0}/s); \
         the last watcher had all of its own {:.0?} after the last write",
        shape.writes * shape.watches / shape.namespaces,
        delivery,
        events as f64 / delivery.as_secs_f64(),
        last_done.duration_since(last_write)
    );
    println!(
        "  watchers with every event once, in order: {complete} of {}",
        shape.watches
    );

    // The round ends: its watches are closed (their tasks ended), its objects go.
    for name in &namespaces {
        let api: Api<ConfigMap> = Api::namespaced(client.clone(), name);
        api.delete_collection(&DeleteParams::default(), &ListParams::default())
            .await?;
        ns_api.delete(name, &DeleteParams::default()).await?;
    }
    let ended = rss(pids);
    sampling.abort();
    Ok(Round {
        problems,
        peak: peak.load(Ordering::Relaxed).max(ended),
        ended,
    })
}

#[tokio::main]
async fn main() -> Result<(), BoxError> {
    let shape = Shape::from_args()?;
    let (kubeconfig, pids, _fakekube) = match &shape.kubeconfig {
        Some(path) => (path.clone(), shape.pids.clone(), None),
        None => {
            let spawned = Instant::now();
            let fake = Fakekube::start()?;
            println!("fakekube process up in {:.1?}", spawned.elapsed());
            (fake.kubeconfig.clone(), vec![fake.child.id()], Some(fake))
        }
    };
    let client = client(&kubeconfig).await?;
    println!(
        "{} rounds of {} watches over {} namespaces while {} ConfigMaps are written {} at a time",
        shape.rounds, shape.watches, shape.namespaces, shape.writes, WRITERS
    );
    let before = rss(&pids);
    println!(
        "server memory (RSS of {pids:?}) before the load: {}",
        mib(before)
    );
    let mut failed = false;
    for n in 1..=shape.rounds {
        println!("round {n}:");
        let prefix = format!("watchload-{}-{n}", std::process::id());
        let done = round(&client, &shape, &prefix, &pids).await?;
        tokio::time::sleep(Duration::from_secs(SETTLE_SECS)).await;
        println!(
            "  server memory: peak {}, as the round ended {}, {SETTLE_SECS} s later {}",
            mib(done.peak),
            mib(done.ended),
            mib(rss(&pids))
        );
        for (ns, list) in &done.problems {
            failed = true;
            println!(
                "  FAILED: {} watcher(s) of {ns}: {}",
                list.len(),
                list.first().map(String::as_str).unwrap_or("")
            );
        }
    }
    if failed {
        std::process::exit(1);
    }
    println!("every watcher of every round saw every event of its namespace once, in order");
    Ok(())
}
