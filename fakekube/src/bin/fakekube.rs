//! `fakekube`: runs the fake API server until SIGINT or SIGTERM and writes a kubeconfig for it;
//! `fakekube record` and `fakekube replay` record a client's exchanges with a cluster and serve
//! them back (the `fakekube-cassette` crate); `fakekube kubelet` joins a cluster as a node.

use clap::{Parser, Subcommand};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::process::ExitCode;

/// mimalloc rather than glibc's allocator: the store holds millions of small JSON nodes that
/// are replaced on every write, and glibc keeps far more memory for them.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// A TLS fake Kubernetes API server with the agent-sandbox CRDs installed, for tests.
///
/// Without a subcommand, serves: prints `fakekube listening on https://127.0.0.1:PORT` as its
/// first line on stdout once it serves, and exits 0 on SIGINT or SIGTERM.
#[derive(Debug, Parser)]
#[command(name = "fakekube", version, args_conflicts_with_subcommands = true)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    #[command(flatten)]
    serve: Args,
}

/// The subcommands; without one, `fakekube` serves.
#[derive(Debug, Subcommand)]
enum Command {
    /// Record a client's exchanges with a cluster through a TLS proxy into a cassette.
    Record(fakekube_cassette::cli::RecordArgs),
    /// Serve a cassette back, stopping at the first request it does not record.
    Replay(fakekube_cassette::cli::ReplayArgs),
    /// Join a cluster as a node: fakekube's kubelet runs the pods bound to it in the hermetic
    /// runtime, through the cluster's API only, and serves the kubelet API on 127.0.0.1.
    ///
    /// Prints `fakekube kubelet NAME serving on https://127.0.0.1:PORT` once its Node is
    /// registered; runs until SIGINT or SIGTERM.
    Kubelet(KubeletArgs),
}

/// The flags of `fakekube kubelet`.
#[derive(Debug, clap::Args)]
struct KubeletArgs {
    /// The node's kubeconfig (a client certificate for `system:node:NAME` in `system:nodes`).
    #[arg(long, value_name = "PATH")]
    kubeconfig: PathBuf,
    /// The node's name.
    #[arg(long, value_name = "NAME")]
    node_name: String,
    /// The CA whose client certificates authenticate to the kubelet API, as the kubelet's
    /// --client-ca-file (the API server's kubelet client certificate is signed by it); bearer
    /// tokens are checked with TokenReviews, callers authorized with SubjectAccessReviews, and
    /// anonymous ones refused (401).
    #[arg(long, value_name = "PATH")]
    client_ca_file: PathBuf,
    /// The kubelet API's port on 127.0.0.1 (0 picks a free one).
    #[arg(long, default_value_t = 0)]
    port: u16,
    /// The third octet of the node's pod IPs (10.244.N.x); pod IPs are reported, never dialled.
    #[arg(long, default_value_t = 1)]
    pod_subnet: u8,
    /// Do not provision PersistentVolumes for pending claims.
    #[arg(long)]
    no_provision: bool,
    /// The Kubernetes minor version the Node reports as its kubelet's.
    #[arg(long, default_value_t = 36)]
    kubernetes_minor: u32,
    /// Make the kubelet fail to pull this image (ErrImagePull, then ImagePullBackOff); repeatable.
    #[arg(long = "missing-image", value_name = "IMAGE")]
    missing_images: Vec<String>,
}

/// The flags of the fake API server.
#[derive(Debug, clap::Args)]
struct Args {
    /// Write a kubeconfig for the server (CA, admin token, namespace `default`) to this path.
    #[arg(long, value_name = "PATH")]
    kubeconfig: Option<PathBuf>,
    /// Port to listen on (0 picks a free one).
    #[arg(long, default_value_t = 0)]
    port: u16,
    /// Address to listen on.
    #[arg(long, default_value_t = IpAddr::V4(Ipv4Addr::LOCALHOST))]
    address: IpAddr,
    /// Use this admin token instead of a random one.
    #[arg(long, env = "FAKEKUBE_TOKEN", hide_env_values = true)]
    token: Option<String>,
    /// Kubernetes minor version to report from /version (kubectl's dispatcher picks its binary by it).
    #[arg(long, default_value_t = 33)]
    kubernetes_minor: u32,
    /// Extra namespaces to create at start (repeatable).
    #[arg(long = "namespace", value_name = "NAME")]
    namespaces: Vec<String>,
    /// Make the kubelet fail to pull this image (ErrImagePull, then ImagePullBackOff); repeatable.
    #[arg(long = "missing-image", value_name = "IMAGE")]
    missing_images: Vec<String>,
    /// Make containers of this image crash at start (CrashLoopBackOff); repeatable.
    #[arg(long = "crashing-image", value_name = "IMAGE")]
    crashing_images: Vec<String>,
    /// Containers of IMAGE (every tag without one) without a command run the runtime's PROGRAM
    /// (`sandbox-router`, `python-runtime-sandbox`, `httpd`, ...); repeatable.
    #[arg(long = "image-program", value_name = "IMAGE=PROGRAM", value_parser = image_program)]
    image_programs: Vec<(String, String)>,
    /// Create the RBAC Role in ROLE.yaml (and its namespace), a service account `role-token`
    /// bound to it, and accept SECRET as that service account's token; repeatable. Sugar for
    /// applying those objects and reading a token Secret, as ci/kind-up.sh does on kind.
    #[arg(long = "role-token", value_name = "SECRET=ROLE.yaml", value_parser = parse_role_token)]
    role_tokens: Vec<(String, PathBuf)>,
    /// With --role-token: also write a kubeconfig that uses the first role token to this path.
    #[arg(long, value_name = "PATH", requires = "role_tokens")]
    role_kubeconfig: Option<PathBuf>,
    /// Write a kubeconfig that authenticates with a client certificate signed by the server's
    /// CA (as kind's own kubeconfig does) to this path.
    #[arg(long, value_name = "PATH")]
    client_cert_kubeconfig: Option<PathBuf>,
    /// The user (Common Name) of --client-cert-kubeconfig's certificate.
    #[arg(long, value_name = "NAME", default_value = "kubernetes-admin")]
    client_cert_user: String,
    /// A group (Organization) of --client-cert-kubeconfig's certificate; repeatable (default
    /// `system:masters`).
    #[arg(long = "client-cert-group", value_name = "GROUP")]
    client_cert_groups: Vec<String>,
    /// Run only the API server: no agent-sandbox controllers (so no conversion webhook for the
    /// CRDs' deprecated v1alpha1 versions) and no kubelet (like envtest).
    #[arg(long)]
    api_only: bool,
    /// Start bare: no CRD installed, only the built-in kinds (as envtest); clients create the
    /// CRDs they need. Without it the cluster also runs what a fresh kind cluster runs in
    /// kube-system and local-path-storage (CoreDNS, kube-proxy, kindnet, the control plane's
    /// mirror pods, the local-path provisioner), doing nothing.
    #[arg(long)]
    bare: bool,
    /// Seconds a list's continue token stays valid.
    #[arg(long, default_value_t = 300)]
    compaction_window_secs: u64,
    /// Seconds an Event lives after its last write, as the API server's --event-ttl (1 hour).
    #[arg(long, default_value_t = 3600)]
    event_ttl_secs: u64,
    /// Answer requests past this many at once with 429 and Retry-After (0: no limit), as the
    /// API server's flag of the same name.
    #[arg(long, default_value_t = 0)]
    max_requests_inflight: usize,
    /// Seconds a client may take to send a request's headers before its connection is closed.
    #[arg(long, default_value_t = 10)]
    header_read_timeout_secs: u64,
    /// Seconds a connection may stay idle before it is closed.
    #[arg(long, default_value_t = 90)]
    idle_timeout_secs: u64,
    /// Processes each container may run at once (a fork past it fails).
    #[arg(long, default_value_t = 1024)]
    pod_process_limit: usize,
    /// Bytes all pods' in-memory filesystems may hold together (writes past it fail with
    /// ENOSPC).
    #[arg(long, default_value_t = 512 << 20)]
    pod_storage_budget: u64,
    /// Milliseconds of the kubelet's first back-off before restarting a crashed container or
    /// pulling a missing image again; each next one doubles, up to 30 times this. A real
    /// kubelet waits 10000 (10 s, at most 5 minutes); fakekube's default is 10 ms so that tests
    /// do not wait, while status messages and Events print the real durations.
    #[arg(long, value_name = "MS", default_value_t = 10)]
    crash_backoff_ms: u64,
    /// Serve the kubelet's own HTTPS API (exec, attach, portForward, containerLogs, pods,
    /// healthz; a node's port 10250) on this port of --address (0: a free one); its address
    /// is printed on stderr. Off by default (the node proxy reaches it either way).
    #[arg(long, value_name = "PORT")]
    kubelet_port: Option<u16>,
    /// Inject a seeded random mix of faults (resets, 429, 500, 503, slow answers, dropped
    /// execs, watch 410s, pods deleted under execs) from the start; the seed is printed on
    /// stderr, and on SIGINT or SIGTERM a line `fakekube chaos injected N faults: KIND=N ...`
    /// on stdout counts them by kind.
    #[arg(long, value_name = "SEED")]
    chaos_seed: Option<u64>,
    /// With --chaos-seed: how often each fault strikes, from 0 to 1 per occasion.
    #[arg(
        long,
        value_name = "RATE",
        default_value_t = 0.02,
        requires = "chaos_seed",
        value_parser = parse_rate
    )]
    chaos_rate: f64,
    /// With --chaos-seed: strike only the requests of this authenticated user (e.g.
    /// `system:serviceaccount:sandboxes:live-runner`), so that an admin's setup and other
    /// clients run untouched; repeatable (default: every caller).
    #[arg(long = "chaos-user", value_name = "NAME", requires = "chaos_seed")]
    chaos_users: Vec<String>,
    /// With --chaos-seed: start with chaos paused; each SIGUSR1 resumes or pauses it (and
    /// says which on stderr: `fakekube: chaos resumed`), so that a setup runs untouched.
    #[arg(long, requires = "chaos_seed")]
    chaos_paused: bool,
    /// With --chaos-seed: the faults to inject, comma-separated, from reset, throttle,
    /// internal, unavailable, slow, exec_drop, watch_gone, pod_delete (default: all).
    #[arg(
        long,
        value_name = "KINDS",
        requires = "chaos_seed",
        value_delimiter = ',',
        value_parser = parse_fault_kind
    )]
    chaos_faults: Vec<String>,
    /// Make the admin token expire this many seconds after start (401 from then on).
    #[arg(long, value_name = "SECS")]
    token_expires_in: Option<u64>,
    /// Refuse this token from the start (401), as a revoked one; repeatable.
    #[arg(long = "revoke-token", value_name = "SECRET", hide_env_values = true)]
    revoked_tokens: Vec<String>,
}

#[tokio::main]
async fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("FAKEKUBE_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .init();
    let cli = Cli::parse();
    match cli.command {
        None => serve(cli.serve).await,
        Some(command) => {
            let signals = match Signals::install() {
                Ok(s) => s,
                Err(e) => {
                    eprintln!("fakekube: installing signal handlers: {e}");
                    return ExitCode::FAILURE;
                }
            };
            match command {
                Command::Record(args) => fakekube_cassette::cli::record(args, signals.recv()).await,
                Command::Replay(args) => fakekube_cassette::cli::replay(args, signals.recv()).await,
                Command::Kubelet(args) => kubelet(args, signals).await,
            }
        }
    }
}

/// `IMAGE=PROGRAM` of `--image-program`.
fn image_program(text: &str) -> Result<(String, String), String> {
    match text.split_once('=') {
        Some((image, program)) if !image.is_empty() && !program.is_empty() => {
            Ok((image.to_string(), program.to_string()))
        }
        _ => Err(format!("expected IMAGE=PROGRAM, got '{text}'")),
    }
}

/// Runs the kubelet of a node until SIGINT or SIGTERM.
async fn kubelet(args: KubeletArgs, signals: Signals) -> ExitCode {
    let name = args.node_name.clone();
    let node = match fakekube::KubeletNode::start(fakekube::NodeConfig {
        kubeconfig: args.kubeconfig,
        node_name: args.node_name,
        client_ca_file: args.client_ca_file,
        port: args.port,
        pod_subnet: args.pod_subnet,
        provision_volumes: !args.no_provision,
        kubernetes_minor: args.kubernetes_minor,
        missing_images: args.missing_images,
    })
    .await
    {
        Ok(n) => n,
        Err(e) => {
            eprintln!("fakekube kubelet: {}", error_chain(&e));
            return ExitCode::from(2);
        }
    };
    println!("fakekube kubelet {name} serving on https://{}", node.addr());
    signals.recv().await;
    node.shutdown().await;
    ExitCode::SUCCESS
}

/// Serves the fake API server until SIGINT or SIGTERM.
async fn serve(args: Args) -> ExitCode {
    let mut builder = fakekube::FakeKube::builder()
        .bind(SocketAddr::new(args.address, args.port))
        .kubernetes_minor(args.kubernetes_minor)
        .compaction_window(std::time::Duration::from_secs(args.compaction_window_secs))
        .event_ttl(std::time::Duration::from_secs(args.event_ttl_secs))
        .controllers(!args.api_only)
        .kubelet(!args.api_only)
        .agent_sandbox_crds(!args.bare)
        .kind_system(!args.bare)
        .max_requests_inflight(args.max_requests_inflight)
        .header_read_timeout(std::time::Duration::from_secs(
            args.header_read_timeout_secs,
        ))
        .idle_timeout(std::time::Duration::from_secs(args.idle_timeout_secs))
        .pod_process_limit(args.pod_process_limit)
        .pod_storage_budget(args.pod_storage_budget)
        .crash_backoff(std::time::Duration::from_millis(args.crash_backoff_ms));
    if let Some(t) = args.token {
        builder = builder.admin_token(t);
    }
    if let Some(port) = args.kubelet_port {
        builder = builder.kubelet_port(port);
    }
    for ns in args.namespaces {
        builder = builder.namespace(ns);
    }
    let mut roles = Vec::new();
    for (secret, path) in &args.role_tokens {
        match read_role(path) {
            Ok(role) => {
                builder = builder.namespace(role.namespace.clone());
                roles.push((secret.clone(), path, role));
            }
            Err(e) => {
                eprintln!("fakekube: --role-token {}: {e}", path.display());
                return ExitCode::from(2);
            }
        }
    }
    let kube = match builder.start().await {
        Ok(k) => k,
        Err(e) => {
            eprintln!("fakekube: {}", error_chain(&e));
            return ExitCode::FAILURE;
        }
    };
    let mut role_secrets = Vec::new();
    for (secret, path, role) in roles {
        if let Err(e) = bind_role_token(&kube, &secret, role) {
            eprintln!("fakekube: --role-token {}: {e}", path.display());
            return ExitCode::from(2);
        }
        role_secrets.push(secret);
    }
    if let Some(seed) = args.chaos_seed {
        let kinds: Vec<&str> = if args.chaos_faults.is_empty() {
            fakekube::ChaosRates::KINDS.to_vec()
        } else {
            args.chaos_faults.iter().map(String::as_str).collect()
        };
        let rates = kinds
            .iter()
            .try_fold(fakekube::ChaosRates::uniform(0.0), |rates, kind| {
                rates.with(kind, args.chaos_rate)
            })
            .unwrap_or(fakekube::ChaosRates::uniform(0.0));
        let whom = if args.chaos_users.is_empty() {
            "every caller".to_owned()
        } else {
            args.chaos_users.join(", ")
        };
        eprintln!(
            "fakekube: chaos on, seed {seed}, rate {}, faults {}, striking {whom}",
            args.chaos_rate,
            kinds.join(",")
        );
        kube.faults()
            .chaos_only_for(args.chaos_users.iter().cloned());
        kube.faults().chaos_paused(args.chaos_paused);
        kube.faults().chaos(Some(fakekube::Chaos { seed, rates }));
        if args.chaos_paused {
            eprintln!("fakekube: chaos paused until SIGUSR1");
        }
    }
    if let Some(secs) = args.token_expires_in {
        let at = std::time::SystemTime::now() + std::time::Duration::from_secs(secs);
        kube.set_token_expiry(kube.token(), Some(at));
    }
    for secret in &args.revoked_tokens {
        kube.revoke_token(secret);
    }
    for image in &args.missing_images {
        kube.images().mark_missing(image);
    }
    for image in &args.crashing_images {
        kube.images().mark_crashing(image);
    }
    for (image, program) in &args.image_programs {
        kube.images().set_program(image, program);
    }
    let mut files = Vec::new();
    if let Some(path) = &args.kubeconfig {
        files.push((path, kube.kubeconfig()));
    }
    if let (Some(path), Some(secret)) = (&args.role_kubeconfig, role_secrets.first()) {
        files.push((path, kube.kubeconfig_with_token(secret)));
    }
    if let Some(path) = &args.client_cert_kubeconfig {
        let groups: Vec<&str> = if args.client_cert_groups.is_empty() {
            vec!["system:masters"]
        } else {
            args.client_cert_groups.iter().map(String::as_str).collect()
        };
        let cert = kube.client_certificate(&args.client_cert_user, &groups);
        files.push((path, kube.kubeconfig_with_client_certificate(&cert)));
    }
    for (path, text) in files {
        if let Err(e) = std::fs::write(path, text) {
            eprintln!("fakekube: writing {}: {e}", path.display());
            return ExitCode::FAILURE;
        }
    }
    // The handlers are installed before the URL is printed: whoever reads that line may signal
    // at once, and a signal that arrives before them would kill the process uncleanly.
    let signals = match Signals::install() {
        Ok(s) => s,
        Err(e) => {
            eprintln!("fakekube: installing signal handlers: {e}");
            return ExitCode::FAILURE;
        }
    };
    let mut toggle =
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::user_defined1()) {
            Ok(s) => s,
            Err(e) => {
                eprintln!("fakekube: installing signal handlers: {e}");
                return ExitCode::FAILURE;
            }
        };
    if let Some(addr) = kube.kubelet_addr() {
        eprintln!("fakekube: kubelet API on https://{addr}");
    }
    println!("fakekube listening on {}", kube.base_url());
    use std::io::Write;
    let _ = std::io::stdout().flush();
    let stop = signals.recv();
    tokio::pin!(stop);
    let mut paused = args.chaos_paused;
    loop {
        tokio::select! {
            () = &mut stop => break,
            Some(()) = toggle.recv() => {
                if args.chaos_seed.is_some() {
                    paused = !paused;
                    kube.faults().chaos_paused(paused);
                    eprintln!("fakekube: chaos {}", if paused { "paused" } else { "resumed" });
                }
            }
        }
    }
    if args.chaos_seed.is_some() {
        println!("{}", chaos_line(&kube.faults().chaos_injected()));
        let _ = std::io::stdout().flush();
    }
    kube.shutdown().await;
    ExitCode::SUCCESS
}

/// The line that counts what chaos injected, every kind named (0 when it never struck), for
/// scripts: `fakekube chaos injected 5 faults: reset=2 throttle=0 ... pod_delete=0`.
fn chaos_line(injected: &std::collections::BTreeMap<String, u64>) -> String {
    let counts: Vec<String> = fakekube::ChaosRates::KINDS
        .iter()
        .map(|kind| format!("{kind}={}", injected.get(*kind).copied().unwrap_or(0)))
        .collect();
    format!(
        "fakekube chaos injected {} faults: {}",
        injected.values().sum::<u64>(),
        counts.join(" ")
    )
}

/// A `--chaos-rate`: a probability from 0 to 1.
fn parse_rate(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(r) if (0.0..=1.0).contains(&r) => Ok(r),
        _ => Err(format!("expected a probability from 0 to 1, not {s:?}")),
    }
}

/// One of `--chaos-faults`' kinds.
fn parse_fault_kind(s: &str) -> Result<String, String> {
    if fakekube::ChaosRates::KINDS.contains(&s) {
        Ok(s.to_owned())
    } else {
        Err(format!(
            "not a fault: {s:?} (one of {})",
            fakekube::ChaosRates::KINDS.join(", ")
        ))
    }
}

fn parse_role_token(s: &str) -> Result<(String, PathBuf), String> {
    match s.split_once('=') {
        Some((secret, path)) if !secret.is_empty() && !path.is_empty() => {
            Ok((secret.to_string(), PathBuf::from(path)))
        }
        _ => Err("expected SECRET=ROLE.yaml".into()),
    }
}

/// An RBAC Role read from a YAML file.
struct Role {
    namespace: String,
    name: String,
    object: serde_json::Value,
}

/// The RBAC Role in a YAML file.
fn read_role(path: &std::path::Path) -> Result<Role, String> {
    let text = std::fs::read_to_string(path).map_err(|e| e.to_string())?;
    let object: serde_json::Value =
        serde_saphyr::from_str(&text).map_err(|e| format!("not YAML: {e}"))?;
    if object.get("kind").and_then(serde_json::Value::as_str) != Some("Role") {
        return Err("not an RBAC Role".into());
    }
    let meta = |key: &str| {
        object
            .pointer(&format!("/metadata/{key}"))
            .and_then(serde_json::Value::as_str)
            .map(str::to_string)
            .ok_or(format!("the Role has no metadata.{key}"))
    };
    Ok(Role {
        namespace: meta("namespace")?,
        name: meta("name")?,
        object,
    })
}

/// Creates `role`, the service account `role-token` in its namespace and a RoleBinding
/// between them, and accepts `secret` as that account's token.
fn bind_role_token(kube: &fakekube::FakeKube, secret: &str, role: Role) -> Result<(), String> {
    let ns = role.namespace;
    let created = |what: &str, r: Result<serde_json::Value, fakekube::StatusError>| match r {
        Ok(_) => Ok(()),
        Err(e) if e.code == 409 => Ok(()),
        Err(e) => Err(format!("creating {what}: {}", e.message)),
    };
    created("the Role", kube.create(role.object))?;
    created(
        "the service account",
        kube.create(serde_json::json!({
            "apiVersion": "v1", "kind": "ServiceAccount",
            "metadata": { "name": "role-token", "namespace": ns },
        })),
    )?;
    created(
        "the RoleBinding",
        kube.create(serde_json::json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
            "metadata": { "name": format!("role-token-{}", role.name), "namespace": ns },
            "roleRef": { "apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": role.name },
            "subjects": [ { "kind": "ServiceAccount", "name": "role-token", "namespace": ns } ],
        })),
    )?;
    kube.add_token(fakekube::Token::service_account(secret, &ns, "role-token"));
    Ok(())
}

fn error_chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut cur = e.source();
    while let Some(c) = cur {
        s.push_str(": ");
        s.push_str(&c.to_string());
        cur = c.source();
    }
    s
}

/// SIGINT and SIGTERM, caught from the moment [`Signals::install`] returns.
struct Signals {
    interrupt: tokio::signal::unix::Signal,
    terminate: tokio::signal::unix::Signal,
}

impl Signals {
    fn install() -> std::io::Result<Self> {
        use tokio::signal::unix::{SignalKind, signal};
        Ok(Self {
            interrupt: signal(SignalKind::interrupt())?,
            terminate: signal(SignalKind::terminate())?,
        })
    }

    /// Waits for either signal.
    async fn recv(mut self) {
        tokio::select! {
            _ = self.interrupt.recv() => {}
            _ = self.terminate.recv() => {}
        }
    }
}
