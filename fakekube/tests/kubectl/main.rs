//! Drives the installed kubectl binaries against the `fakekube` binary: kubectl 1.27 to 1.33
//! from the Cloud SDK and the `/usr/bin/kubectl` dispatcher, which picks one of them by the
//! server's `/version`.
//!
//! Every test starts its own fakekube (it starts in milliseconds), creates a namespace with
//! kubectl, and gives every kubectl invocation a fresh `HOME`, so no discovery cache leaks from
//! one command to the next unless a test shares one on purpose. A kubectl binary that is not
//! installed makes its tests print `skipping: <path> not installed` and pass; nothing else skips.
//!
//! Every version runs `apply` and `create -f` with its default validation: kubectl 1.27 and
//! 1.28 read the protobuf `/openapi/v2` first, later ones `/openapi/v3`, and all of them find
//! the `fieldValidation` parameter there and leave validation to the server.
//!
//! `FAKEKUBE_BIN` may name another fakekube binary to test instead of this crate's.

use serde_json::Value;
use std::fmt;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::thread;
use std::time::{Duration, Instant};

/// Where the Cloud SDK keeps its versioned kubectl binaries.
const SDK: &str = "/usr/lib/google-cloud-sdk/bin";
/// The dispatcher, which runs `kubectl.1.<server minor>`.
const DISPATCHER: &str = "/usr/bin/kubectl";
/// How long one kubectl command may run before the test gives up on it.
const COMMAND_TIMEOUT: Duration = Duration::from_secs(60);
/// How long a test waits for a line from a background kubectl (`get -w`, `wait`).
const LINE_TIMEOUT: Duration = Duration::from_secs(30);

/// The path of `kubectl.1.<minor>`.
fn sdk_kubectl(minor: u32) -> String {
    format!("{SDK}/kubectl.1.{minor}")
}

/// The dispatcher's path, owned like [`sdk_kubectl`]'s.
fn dispatcher() -> String {
    DISPATCHER.to_string()
}

/// Whether `bin` exists; if not, prints the skip reason the issue asks for.
fn installed(bin: &str) -> bool {
    if Path::new(bin).exists() {
        true
    } else {
        println!("skipping: {bin} not installed");
        false
    }
}

/// The fakekube binary under test.
fn fakekube_bin() -> PathBuf {
    std::env::var_os("FAKEKUBE_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_fakekube")))
}

/// A running fakekube process with its kubeconfig and a scratch directory for manifests; it is
/// sent SIGTERM when dropped.
struct Server {
    child: Child,
    dir: tempfile::TempDir,
    kubeconfig: PathBuf,
    url: String,
}

impl Server {
    /// Starts fakekube as an API server only (Kubernetes 1.33): these tests check what kubectl
    /// writes and reads, so no controller or kubelet may change the objects under them.
    fn start() -> Server {
        Server::start_with(&["--api-only"])
    }

    /// Starts fakekube with extra command-line arguments and waits for its first line.
    fn start_with(extra: &[&str]) -> Server {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let kubeconfig = dir.path().join("kubeconfig");
        let log = std::fs::File::create(dir.path().join("fakekube.log")).expect("a log file");
        let mut child = Command::new(fakekube_bin())
            .arg("--kubeconfig")
            .arg(&kubeconfig)
            .args(extra)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(log)
            .spawn()
            .expect("fakekube starts");
        let stdout = child.stdout.take().expect("fakekube's stdout is piped");
        let (tx, rx) = mpsc::channel();
        thread::spawn(move || {
            let mut reader = BufReader::new(stdout);
            let mut first = String::new();
            let _ = reader.read_line(&mut first);
            let _ = tx.send(first);
            // Keep draining so that fakekube never writes into a closed pipe.
            let _ = std::io::copy(&mut reader, &mut std::io::sink());
        });
        let first = match rx.recv_timeout(Duration::from_secs(60)) {
            Ok(line) => line,
            Err(e) => {
                let _ = child.kill();
                let log =
                    std::fs::read_to_string(dir.path().join("fakekube.log")).unwrap_or_default();
                panic!("fakekube printed no first line ({e}); its log:\n{log}");
            }
        };
        let url = first
            .trim()
            .strip_prefix("fakekube listening on ")
            .unwrap_or_else(|| panic!("unexpected first line from fakekube: {first:?}"))
            .to_string();
        Server {
            child,
            dir,
            kubeconfig,
            url,
        }
    }

    /// Writes a file into the server's scratch directory and returns its path.
    fn write(&self, name: &str, contents: &str) -> PathBuf {
        let path = self.dir.path().join(name);
        std::fs::write(&path, contents).expect("a manifest is written");
        path
    }

    /// Sends SIGTERM and waits (a few seconds at most) for the process to end.
    fn stop(&mut self) -> Option<ExitStatus> {
        if let Ok(Some(status)) = self.child.try_wait() {
            return Some(status);
        }
        let _ = Command::new("kill")
            .arg("-TERM")
            .arg(self.child.id().to_string())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Some(status);
            }
            thread::sleep(Duration::from_millis(10));
        }
        let _ = self.child.kill();
        self.child.wait().ok()
    }
}

/// Stops the server so that no fakekube outlives its test.
impl Drop for Server {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Which stream a line of a background process came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stream {
    Stdout,
    Stderr,
}

/// What a finished kubectl command did.
struct Output {
    command: String,
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

impl fmt::Display for Output {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "`{}` exited with {:?}\n--- stdout ---\n{}\n--- stderr ---\n{}",
            self.command, self.code, self.stdout, self.stderr
        )
    }
}

impl Output {
    /// Asserts that the command exited 0.
    #[track_caller]
    fn success(self) -> Output {
        assert_eq!(self.code, Some(0), "expected success: {self}");
        self
    }

    /// Asserts that the command exited 1, as kubectl does on an error.
    #[track_caller]
    fn failure(self) -> Output {
        assert_eq!(self.code, Some(1), "expected exit code 1: {self}");
        self
    }

    /// Asserts that stdout is exactly `expected`.
    #[track_caller]
    fn stdout_is(self, expected: &str) -> Output {
        assert_eq!(self.stdout, expected, "unexpected stdout: {self}");
        self
    }

    /// Asserts that one line of stderr is exactly `line`.
    #[track_caller]
    fn stderr_has_line(self, line: &str) -> Output {
        assert!(
            self.stderr.lines().any(|l| l == line),
            "expected the stderr line\n{line}\n{self}"
        );
        self
    }

    /// Parses stdout as JSON.
    #[track_caller]
    fn json(&self) -> Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {self}"))
    }
}

/// One kubectl binary pointed at one server.
#[derive(Debug, Clone)]
struct Kubectl {
    bin: String,
    kubeconfig: PathBuf,
    /// A `HOME` shared by every invocation (a warm discovery cache); a fresh one if `None`.
    home: Option<PathBuf>,
}

impl Kubectl {
    /// `bin` talking to `server` with the admin token of its kubeconfig.
    fn new(bin: &str, server: &Server) -> Kubectl {
        Kubectl {
            bin: bin.to_string(),
            kubeconfig: server.kubeconfig.clone(),
            home: None,
        }
    }

    /// The same kubectl with every invocation sharing `home`, and so its discovery cache.
    fn with_home(&self, home: &Path) -> Kubectl {
        Kubectl {
            home: Some(home.to_path_buf()),
            ..self.clone()
        }
    }

    /// A command for `args`, with its own `HOME` unless one is shared.
    fn command(&self, args: &[&str]) -> (Command, Option<tempfile::TempDir>) {
        let (home, guard) = match &self.home {
            Some(h) => (h.clone(), None),
            None => {
                let t = tempfile::tempdir().expect("a temporary HOME");
                (t.path().to_path_buf(), Some(t))
            }
        };
        let mut cmd = Command::new(&self.bin);
        cmd.env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", &home)
            .arg("--kubeconfig")
            .arg(&self.kubeconfig)
            .args(args);
        (cmd, guard)
    }

    /// The command line, for failure messages, with the value of `--token` redacted.
    fn describe(&self, args: &[&str]) -> String {
        let mut s = self.bin.clone();
        let mut secret_next = false;
        for a in args {
            s.push(' ');
            if secret_next {
                s.push_str("[REDACTED]");
            } else if a.starts_with("--token=") {
                s.push_str("--token=[REDACTED]");
            } else {
                s.push_str(a);
            }
            secret_next = *a == "--token";
        }
        s
    }

    /// Runs kubectl to completion.
    fn run(&self, args: &[&str]) -> Output {
        self.run_with_stdin(None, args)
    }

    /// Runs kubectl with `input` on stdin.
    fn run_input(&self, input: &str, args: &[&str]) -> Output {
        self.run_with_stdin(Some(input), args)
    }

    /// Runs kubectl with an optional stdin, killing it after [`COMMAND_TIMEOUT`].
    fn run_with_stdin(&self, input: Option<&str>, args: &[&str]) -> Output {
        let (mut cmd, _home) = self.command(args);
        cmd.stdin(if input.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
        let mut child = cmd
            .spawn()
            .unwrap_or_else(|e| panic!("{} starts: {e}", self.bin));
        if let (Some(text), Some(mut stdin)) = (input, child.stdin.take()) {
            stdin
                .write_all(text.as_bytes())
                .expect("kubectl reads its stdin");
        }
        let out = child.stdout.take().expect("stdout is piped");
        let err = child.stderr.take().expect("stderr is piped");
        let read_all = |mut r: Box<dyn Read + Send>| {
            thread::spawn(move || {
                let mut s = String::new();
                let _ = r.read_to_string(&mut s);
                s
            })
        };
        let out = read_all(Box::new(out));
        let err = read_all(Box::new(err));
        let deadline = Instant::now() + COMMAND_TIMEOUT;
        let status = loop {
            match child.try_wait() {
                Ok(Some(status)) => break Some(status),
                Ok(None) if Instant::now() < deadline => thread::sleep(Duration::from_millis(5)),
                _ => {
                    let _ = child.kill();
                    let _ = child.wait();
                    break None;
                }
            }
        };
        Output {
            command: self.describe(args),
            code: status.and_then(|s| s.code()),
            stdout: out.join().unwrap_or_default(),
            stderr: err.join().unwrap_or_default(),
        }
    }

    /// Starts kubectl in the background, for commands that wait (`get -w`, `wait`).
    fn spawn(&self, args: &[&str]) -> Background {
        let (mut cmd, home) = self.command(args);
        cmd.stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd
            .spawn()
            .unwrap_or_else(|e| panic!("{} starts: {e}", self.bin));
        let (tx, lines) = mpsc::channel();
        let forward =
            |r: Box<dyn Read + Send>, stream: Stream, tx: mpsc::Sender<(Stream, String)>| {
                thread::spawn(move || {
                    for line in BufReader::new(r).lines() {
                        let Ok(l) = line else { break };
                        if tx.send((stream, l)).is_err() {
                            break;
                        }
                    }
                })
            };
        forward(
            Box::new(child.stdout.take().expect("stdout is piped")),
            Stream::Stdout,
            tx.clone(),
        );
        forward(
            Box::new(child.stderr.take().expect("stderr is piped")),
            Stream::Stderr,
            tx,
        );
        Background {
            command: self.describe(args),
            child,
            lines,
            seen: Vec::new(),
            _home: home,
        }
    }

    /// Creates namespace `ns` from a manifest (every version sends it as JSON).
    fn create_namespace(&self, ns: &str) {
        let manifest = format!("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {ns}\n");
        self.run_input(&manifest, &["apply", "-f", "-"])
            .success()
            .stdout_is(&format!("namespace/{ns} created\n"));
    }

    /// `kubectl apply -f <path>` in `ns`, with kubectl's default validation.
    fn apply(&self, ns: &str, path: &Path, extra: &[&str]) -> Output {
        let path = path.to_str().expect("a UTF-8 path");
        let mut args = vec!["-n", ns, "apply", "-f", path];
        args.extend_from_slice(extra);
        self.run(&args)
    }

    /// `kubectl get <what> -o json` in `ns`, asserted to succeed.
    #[track_caller]
    fn get_json(&self, ns: &str, what: &[&str]) -> Value {
        let mut args = vec!["-n", ns, "get"];
        args.extend_from_slice(what);
        args.extend_from_slice(&["-o", "json"]);
        self.run(&args).success().json()
    }
}

/// A kubectl that runs in the background; its output lines arrive as it prints them.
struct Background {
    command: String,
    child: Child,
    lines: Receiver<(Stream, String)>,
    seen: Vec<(Stream, String)>,
    _home: Option<tempfile::TempDir>,
}

impl Background {
    /// Waits for a line on `stream` that `want` accepts and returns it.
    #[track_caller]
    fn expect_line(&mut self, stream: Stream, what: &str, want: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + LINE_TIMEOUT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok((s, line)) => {
                    self.seen.push((s, line.clone()));
                    if s == stream && want(&line) {
                        return line;
                    }
                }
                Err(RecvTimeoutError::Timeout | RecvTimeoutError::Disconnected) => {
                    let _ = self.child.kill();
                    panic!(
                        "`{}` printed no {what}; it printed:\n{}",
                        self.command,
                        self.transcript()
                    );
                }
            }
        }
    }

    /// Everything printed so far, for failure messages.
    fn transcript(&self) -> String {
        self.seen
            .iter()
            .map(|(s, l)| format!("{s:?}: {l}\n"))
            .collect()
    }

    /// Waits for the process to end by itself and returns what it printed.
    fn finish(mut self) -> Output {
        let deadline = Instant::now() + COMMAND_TIMEOUT;
        let status = loop {
            match self.child.try_wait() {
                Ok(Some(status)) => break Some(status),
                Ok(None) if Instant::now() < deadline => thread::sleep(Duration::from_millis(5)),
                _ => {
                    let _ = self.child.kill();
                    let _ = self.child.wait();
                    break None;
                }
            }
        };
        // The reader threads end at EOF, which closes the channel.
        while let Ok(line) = self.lines.recv_timeout(Duration::from_secs(5)) {
            self.seen.push(line);
        }
        let pick = |want: Stream| -> String {
            self.seen
                .iter()
                .filter(|(s, _)| *s == want)
                .map(|(_, l)| format!("{l}\n"))
                .collect()
        };
        Output {
            command: self.command.clone(),
            code: status.and_then(|s| s.code()),
            stdout: pick(Stream::Stdout),
            stderr: pick(Stream::Stderr),
        }
    }
}

/// Kills a background kubectl that is still running (a `get -w`).
impl Drop for Background {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// A Sandbox manifest with one container.
fn sandbox_yaml(name: &str, labels: &[(&str, &str)], image: &str) -> String {
    format!(
        "apiVersion: agents.x-k8s.io/v1beta1\nkind: Sandbox\nmetadata:\n  name: {name}\n{}spec:\n  podTemplate:\n    spec:\n      containers:\n      - name: main\n        image: {image}\n",
        labels_yaml(labels)
    )
}

/// A Pod manifest with one container.
fn pod_yaml(name: &str, labels: &[(&str, &str)], image: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\n{}spec:\n  containers:\n  - name: main\n    image: {image}\n",
        labels_yaml(labels)
    )
}

/// The `labels:` block of a manifest's metadata, or nothing.
fn labels_yaml(labels: &[(&str, &str)]) -> String {
    if labels.is_empty() {
        return String::new();
    }
    let mut s = String::from("  labels:\n");
    for (k, v) in labels {
        s.push_str(&format!("    {k}: \"{v}\"\n"));
    }
    s
}

/// A string field of an object's metadata.
fn meta<'a>(obj: &'a Value, key: &str) -> &'a str {
    obj["metadata"][key].as_str().unwrap_or_default()
}

/// `metadata.generation`.
fn generation(obj: &Value) -> i64 {
    obj["metadata"]["generation"].as_i64().unwrap_or_default()
}

/// Whether any object key anywhere in `v` starts with `$` (a patch directive that leaked into
/// the stored object).
fn has_directive_key(v: &Value) -> bool {
    match v {
        Value::Object(m) => m
            .iter()
            .any(|(k, v)| k.starts_with('$') || has_directive_key(v)),
        Value::Array(a) => a.iter().any(has_directive_key),
        _ => false,
    }
}

/// The names of a list's items.
fn item_names(list: &Value) -> Vec<String> {
    list["items"]
        .as_array()
        .map(|items| items.iter().map(|i| meta(i, "name").to_string()).collect())
        .unwrap_or_default()
}

// ---------------------------------------------------------------------------------------------
// Scenarios. Each takes the kubectl binary to drive. Steps that do not depend on each other run
// at the same time: a kubectl invocation spends most of its time waiting.
// ---------------------------------------------------------------------------------------------

/// Runs kubectl commands at the same time and asserts that each succeeds printing exactly its
/// expected stdout.
fn expect_stdout_all(k: &Kubectl, cases: &[(&[&str], &str)]) {
    thread::scope(|s| {
        for (args, want) in cases {
            s.spawn(move || {
                k.run(args).success().stdout_is(want);
            });
        }
    });
}

mod scenarios;
use scenarios::*;

/// Tests every kubectl version runs.
macro_rules! core_tests {
    ($bin:expr) => {
        #[test]
        fn applies_gets_patches_and_deletes_pods_and_sandboxes() {
            crate::core_scenario(&$bin);
        }

        #[test]
        fn creates_a_namespace_a_secret_a_service_account_and_a_service_with_kubectl_create() {
            crate::create_generators_scenario(&$bin);
        }
    };
}

/// Tests run on 1.30, 1.33 and the dispatcher.
macro_rules! extended_tests {
    ($bin:expr) => {
        #[test]
        fn server_side_apply_creates_then_updates_a_sandbox_and_a_pod() {
            crate::server_side_apply_scenario(&$bin);
        }

        #[test]
        fn replace_with_a_stale_object_reports_a_conflict() {
            crate::replace_stale_scenario(&$bin);
        }

        #[test]
        fn get_watch_sees_a_sandbox_added_modified_and_deleted() {
            crate::watch_scenario(&$bin);
        }

        #[test]
        fn wait_returns_on_a_jsonpath_match_and_on_delete() {
            crate::wait_scenario(&$bin);
        }

        #[test]
        fn create_token_mints_a_token_that_is_forbidden_to_list() {
            crate::create_token_forbidden_scenario(&$bin);
        }

        #[test]
        fn auth_can_i_says_yes_for_the_admin_and_no_for_a_service_account() {
            crate::auth_can_i_scenario(&$bin);
        }

        #[test]
        fn a_bogus_token_is_unauthorized() {
            crate::unauthorized_scenario(&$bin);
        }

        #[test]
        fn the_sandbox_schema_defaults_refuses_and_prunes_fields() {
            crate::crd_schema_scenario(&$bin);
        }
    };
}

/// RBAC tests, run on 1.30 to 1.33.
macro_rules! rbac_tests {
    ($bin:expr) => {
        #[test]
        fn rbac_objects_from_kubectl_create_authorize_a_service_account_token() {
            crate::rbac_scenario(&$bin);
        }

        #[test]
        fn kind_up_rbac_applies_unchanged_and_its_token_secret_is_limited_to_the_seed_role() {
            crate::kind_up_rbac_scenario(&$bin);
        }
    };
}

/// kubectl 1.27 (reads the protobuf `/openapi/v2`).
mod kubectl_1_27 {
    core_tests!(crate::sdk_kubectl(27));
}

/// kubectl 1.28 (reads the protobuf `/openapi/v2`).
mod kubectl_1_28 {
    core_tests!(crate::sdk_kubectl(28));
}

/// kubectl 1.29, the first to validate through `/openapi/v3`.
mod kubectl_1_29 {
    core_tests!(crate::sdk_kubectl(29));
}

/// kubectl 1.30, with every scenario.
mod kubectl_1_30 {
    core_tests!(crate::sdk_kubectl(30));
    rbac_tests!(crate::sdk_kubectl(30));
    extended_tests!(crate::sdk_kubectl(30));
}

/// kubectl 1.31.
mod kubectl_1_31 {
    core_tests!(crate::sdk_kubectl(31));
    rbac_tests!(crate::sdk_kubectl(31));
}

/// kubectl 1.32, the first to send protobuf from `kubectl create <generator>`.
mod kubectl_1_32 {
    core_tests!(crate::sdk_kubectl(32));
    rbac_tests!(crate::sdk_kubectl(32));
}

/// kubectl 1.33, with every scenario.
mod kubectl_1_33 {
    core_tests!(crate::sdk_kubectl(33));
    extended_tests!(crate::sdk_kubectl(33));
    rbac_tests!(crate::sdk_kubectl(33));

    /// `kubectl explain` needs the kind's schema in `/openapi/v3`.
    #[test]
    fn explains_the_sandbox_spec() {
        crate::explain_scenario(&crate::sdk_kubectl(33));
    }
}

/// `/usr/bin/kubectl`, which runs kubectl.1.33 against fakekube's default version.
mod kubectl_dispatcher {
    core_tests!(crate::dispatcher());
    extended_tests!(crate::dispatcher());

    /// The dispatcher asks `/version` and runs the kubectl of the server's minor version.
    #[test]
    fn runs_the_kubectl_of_the_server_minor_version() {
        if !crate::installed(crate::DISPATCHER) {
            return;
        }
        let minors = [27u32, 30, 33];
        let handles: Vec<_> = minors
            .iter()
            .map(|&minor| {
                std::thread::spawn(move || {
                    let server =
                        crate::Server::start_with(&["--kubernetes-minor", &minor.to_string()]);
                    let k = crate::Kubectl::new(crate::DISPATCHER, &server);
                    let out = k.run(&["version", "-o", "json"]).success();
                    (minor, out.json(), server.url.clone())
                })
            })
            .collect();
        for h in handles {
            let (minor, v, url) = h.join().expect("a version check thread");
            assert_eq!(v["serverVersion"]["minor"], minor.to_string(), "{url}: {v}");
            assert_eq!(
                v["clientVersion"]["minor"],
                minor.to_string(),
                "the dispatcher ran kubectl.1.{minor}: {v}"
            );
            let git = v["clientVersion"]["gitVersion"]
                .as_str()
                .unwrap_or_default();
            assert!(git.starts_with(&format!("v1.{minor}.")), "{v}");
        }
    }
}
