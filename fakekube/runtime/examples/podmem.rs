//! Heap bytes per running pod in the runtime, as the kubelet starts the scale bench's pods: a
//! container filesystem from [`Programs::pod_fs`](fakekube_runtime::Programs::pod_fs), then its main process (the adapter's
//! keep-alive `sh` loop with a background `sleep`), then one exec of `sh -c 'echo $HOSTNAME'`
//! run to its end. dhat's counting global allocator measures what each step leaves allocated,
//! averaged over N pods kept alive together.
//!
//! `cargo run --release -p fakekube-runtime --example podmem [-- N [--profile]]` (N: 2000 by
//! default). With `--profile` it also writes `dhat-heap.json` while the pods still run: its
//! "t-end" blocks are what they hold, by allocation site (build with debug info to read the
//! sites, e.g. without `--release`; dhat's viewer or any JSON tool reads the file).

use fakekube_runtime::{ExecIo, ExecSpec, ExitStatus, PodFs, ProcessTable, exec};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

#[global_allocator]
static ALLOC: dhat::Alloc = dhat::Alloc;

/// The adapter's keep-alive command (adapter/src/manifest.rs `KEEP_ALIVE`).
const KEEP_ALIVE: &str = "trap 'exit 0' TERM; while true; do sleep 3600 & wait; done";

/// Output chunks the kubelet buffers per stream of a container.
const OUTPUT_CHUNKS: usize = 16;

/// Heap bytes live now.
fn live() -> isize {
    isize::try_from(dhat::HeapStats::get().curr_bytes).unwrap_or(isize::MAX)
}

/// The environment the kubelet gives a container of pod `name` (kubelet/env.rs).
fn pod_env(name: &str) -> Vec<(String, String)> {
    let ip = "10.96.0.1";
    let mut env = vec![
        (
            "PATH".to_string(),
            fakekube_runtime::DEFAULT_PATH.to_string(),
        ),
        ("HOSTNAME".to_string(), name.to_string()),
    ];
    for (k, v) in [
        ("KUBERNETES_SERVICE_HOST", ip.to_string()),
        ("KUBERNETES_SERVICE_PORT", "443".to_string()),
        ("KUBERNETES_SERVICE_PORT_HTTPS", "443".to_string()),
        ("KUBERNETES_PORT", format!("tcp://{ip}:443")),
        ("KUBERNETES_PORT_443_TCP", format!("tcp://{ip}:443")),
        ("KUBERNETES_PORT_443_TCP_PROTO", "tcp".to_string()),
        ("KUBERNETES_PORT_443_TCP_PORT", "443".to_string()),
        ("KUBERNETES_PORT_443_TCP_ADDR", ip.to_string()),
    ] {
        env.push((k.to_string(), v));
    }
    env.push(("HOME".to_string(), "/root".to_string()));
    env
}

/// One pod's running container.
struct Pod {
    fs: PodFs,
    processes: ProcessTable,
    cancel: CancellationToken,
    env: Vec<(String, String)>,
    /// The container's output, kept open as the kubelet's log drain does.
    _out: mpsc::Receiver<bytes::Bytes>,
    _err: mpsc::Receiver<bytes::Bytes>,
}

/// Lets the spawned tasks run until every pod's keep-alive loop waits for its `sleep`, and
/// no exec is left in its table.
async fn settle(pods: &[Pod]) {
    let steady = |p: &Pod| {
        let list = p.processes.list();
        list.iter()
            .any(|p| p.argv.first().is_some_and(|a| a == "sleep"))
            && !list
                .iter()
                .any(|p| p.argv.iter().any(|a| a.contains("HOSTNAME")))
    };
    while !pods.iter().all(steady) {
        tokio::task::yield_now().await;
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let n: usize = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(2000);
    let profile = args.iter().any(|a| a == "--profile");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let profiler = if profile {
        dhat::Profiler::builder().build()
    } else {
        dhat::Profiler::builder().testing().build()
    };
    rt.block_on(async move {
        let programs = fakekube_programs::registry();
        // The first filesystem builds what every later one may share; not a per-pod cost.
        drop(programs.pod_fs(vec![]));
        let start = live();

        let fss: Vec<PodFs> = (0..n).map(|_| programs.pod_fs(vec![])).collect();
        let after_fs = live();

        let mut pods = Vec::with_capacity(n);
        for (i, fs) in fss.into_iter().enumerate() {
            let name = format!("many-{i}");
            let env = pod_env(&name);
            let processes = ProcessTable::new();
            let cancel = CancellationToken::new();
            let (stdout, out) = mpsc::channel(OUTPUT_CHUNKS);
            let (stderr, err) = mpsc::channel(OUTPUT_CHUNKS);
            let spec = ExecSpec {
                argv: vec!["sh".into(), "-c".into(), KEEP_ALIVE.into()],
                env: env.clone(),
                cwd: "/".into(),
                fs: fs.clone(),
                programs: programs.clone(),
                processes: processes.clone(),
                cancel: cancel.clone(),
                network: Default::default(),
            };
            let io = ExecIo {
                stdin: None,
                stdout,
                stderr,
                tty: None,
            };
            tokio::spawn(exec(spec, io));
            pods.push(Pod {
                fs,
                processes,
                cancel,
                env,
                _out: out,
                _err: err,
            });
        }
        // `sh`, its background job and the job's `sleep`.
        settle(&pods).await;
        let after_main = live();

        for pod in &pods {
            let (stdout, mut out) = mpsc::channel(8);
            let (stderr, _err) = mpsc::channel(8);
            let spec = ExecSpec {
                argv: vec!["sh".into(), "-c".into(), "echo $HOSTNAME".into()],
                env: pod.env.clone(),
                cwd: "/".into(),
                fs: pod.fs.clone(),
                programs: programs.clone(),
                processes: pod.processes.clone(),
                cancel: pod.cancel.child_token(),
                network: Default::default(),
            };
            let io = ExecIo {
                stdin: None,
                stdout,
                stderr,
                tty: None,
            };
            let status = fakekube_runtime::exec_session(spec, io).await;
            assert_eq!(status, ExitStatus::Code(0));
            assert!(out.recv().await.is_some());
        }
        settle(&pods).await;
        let after_exec = live();

        let per = |a: isize, b: isize| (b - a) as f64 / n as f64;
        let fs = per(start, after_fs);
        let main = per(after_fs, after_main);
        let exec = per(after_main, after_exec);
        println!("{n} pods, heap bytes per pod:");
        println!("  filesystem:                        {fs:>8.0}");
        println!("  main process (sh + sleep):         {main:>8.0}");
        println!("  after one exec of `echo $HOSTNAME`: {exec:>7.0}");
        println!(
            "  total:                             {:>8.0}",
            fs + main + exec
        );

        // Writes the profile (with `--profile`) while the pods still hold what they hold.
        drop(profiler);
        for pod in &pods {
            pod.cancel.cancel();
        }
    });
}
