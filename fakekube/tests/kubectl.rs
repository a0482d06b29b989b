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
        let first = match rx.recv_timeout(Duration::from_secs(20)) {
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

/// apply (create, unchanged, update), get (-o json, -o name, -l, --chunk-size), patch
/// (strategic, merge, JSON) and delete, on Sandboxes and Pods.
fn core_scenario(bin: &str) {
    if !installed(bin) {
        return;
    }
    let server = Server::start();
    let k = Kubectl::new(bin, &server);
    let ns = "core";
    k.create_namespace(ns);
    thread::scope(|s| {
        s.spawn(|| sandbox_apply_steps(&k, &server, ns));
        pod_apply_steps(&k, &server, ns);
    });
    read_steps(&k, ns);
    patch_steps(&k, ns);
    delete_steps(&k, ns);
}

/// Client-side apply of a Sandbox: created, unchanged, a label change (same generation), a
/// spec change (next generation).
fn sandbox_apply_steps(k: &Kubectl, server: &Server, ns: &str) {
    let sb = server.write(
        "box.yaml",
        &sandbox_yaml("box", &[("app", "demo")], "busybox:1.36"),
    );
    k.apply(ns, &sb, &[])
        .success()
        .stdout_is("sandbox.agents.x-k8s.io/box created\n");
    let v1 = k.get_json(ns, &["sandbox", "box"]);
    assert_eq!(v1["kind"], "Sandbox");
    assert_eq!(meta(&v1, "namespace"), ns);
    assert_eq!(generation(&v1), 1, "{v1}");
    assert!(
        v1["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"]
            .as_str()
            .is_some_and(|a| a.contains("busybox:1.36")),
        "client-side apply records the applied configuration: {v1}"
    );

    k.apply(ns, &sb, &[])
        .success()
        .stdout_is("sandbox.agents.x-k8s.io/box unchanged\n");
    let same = k.get_json(ns, &["sandbox", "box"]);
    assert_eq!(
        meta(&same, "resourceVersion"),
        meta(&v1, "resourceVersion"),
        "an unchanged apply writes nothing"
    );

    let labelled = sandbox_yaml("box", &[("app", "demo"), ("tier", "gold")], "busybox:1.36");
    let sb = server.write("box.yaml", &labelled);
    k.apply(ns, &sb, &[])
        .success()
        .stdout_is("sandbox.agents.x-k8s.io/box configured\n");
    let v2 = k.get_json(ns, &["sandbox", "box"]);
    assert_eq!(v2["metadata"]["labels"]["tier"], "gold", "{v2}");
    assert_eq!(
        generation(&v2),
        1,
        "a label change does not bump the generation: {v2}"
    );
    assert_ne!(meta(&v2, "resourceVersion"), meta(&v1, "resourceVersion"));

    let updated = sandbox_yaml("box", &[("app", "demo"), ("tier", "gold")], "busybox:1.37");
    let sb = server.write("box.yaml", &updated);
    k.apply(ns, &sb, &[])
        .success()
        .stdout_is("sandbox.agents.x-k8s.io/box configured\n");
    let v3 = k.get_json(ns, &["sandbox", "box"]);
    let image = &v3["spec"]["podTemplate"]["spec"]["containers"][0]["image"];
    assert_eq!(image, "busybox:1.37", "{v3}");
    assert_eq!(
        generation(&v3),
        2,
        "a spec change bumps the generation: {v3}"
    );
    assert_ne!(meta(&v3, "resourceVersion"), meta(&v2, "resourceVersion"));
    assert_eq!(meta(&v3, "uid"), meta(&v1, "uid"));
}

/// Client-side apply of three Pods, then an update of one: kubectl sends a strategic merge patch
/// whose container list merges by name.
fn pod_apply_steps(k: &Kubectl, server: &Server, ns: &str) {
    thread::scope(|s| {
        for (name, app, tier) in [("p1", "web", "a"), ("p2", "web", "b"), ("p3", "db", "a")] {
            s.spawn(move || {
                let yaml = pod_yaml(name, &[("app", app), ("tier", tier)], "nginx:1.25");
                let f = server.write(&format!("{name}.yaml"), &yaml);
                k.apply(ns, &f, &[])
                    .success()
                    .stdout_is(&format!("pod/{name} created\n"));
            });
        }
    });
    let before = k.get_json(ns, &["pod", "p1"]);
    let f = server.write(
        "p1.yaml",
        &pod_yaml("p1", &[("app", "web"), ("tier", "a")], "nginx:1.26"),
    );
    k.apply(ns, &f, &[])
        .success()
        .stdout_is("pod/p1 configured\n");
    let p1 = k.get_json(ns, &["pod", "p1"]);
    let containers = p1["spec"]["containers"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(
        containers.len(),
        1,
        "the container list is merged by name: {p1}"
    );
    assert_eq!(containers[0]["name"], "main", "{p1}");
    assert_eq!(containers[0]["image"], "nginx:1.26", "{p1}");
    assert!(
        !has_directive_key(&p1),
        "no strategic-merge directive is stored: {p1}"
    );
    assert_ne!(
        meta(&p1, "resourceVersion"),
        meta(&before, "resourceVersion")
    );
}

/// `get -o json` (a List), `-o name`, label selectors, `--chunk-size` and the default table.
fn read_steps(k: &Kubectl, ns: &str) {
    thread::scope(|s| {
        s.spawn(|| {
            let list = k.get_json(ns, &["pods"]);
            assert_eq!(list["kind"], "List", "{list}");
            assert_eq!(item_names(&list), ["p1", "p2", "p3"], "{list}");
        });
        s.spawn(|| {
            let args = [
                "-n",
                ns,
                "get",
                "pods",
                "--chunk-size=1",
                "-o",
                "name",
                "-v=6",
            ];
            let paged = k.run(&args).success().stdout_is("pod/p1\npod/p2\npod/p3\n");
            assert!(
                paged.stderr.contains("limit=1"),
                "kubectl asked for pages of one: {paged}"
            );
            let continued = paged.stderr.matches("continue=").count();
            assert!(
                continued >= 2,
                "kubectl followed the continue tokens: {paged}"
            );
        });
        s.spawn(|| {
            let table = k.run(&["-n", ns, "get", "sandboxes"]).success();
            assert!(table.stdout.starts_with("NAME"), "{table}");
            assert!(
                table.stdout.lines().any(|l| l.starts_with("box ")),
                "{table}"
            );
        });
        expect_stdout_all(
            k,
            &[
                (
                    &["-n", ns, "get", "pods", "-o", "name"],
                    "pod/p1\npod/p2\npod/p3\n",
                ),
                (
                    &["-n", ns, "get", "pods", "-l", "app=web", "-o", "name"],
                    "pod/p1\npod/p2\n",
                ),
                (
                    &[
                        "-n",
                        ns,
                        "get",
                        "pods",
                        "-l",
                        "app=web,tier=a",
                        "-o",
                        "name",
                    ],
                    "pod/p1\n",
                ),
                (
                    &[
                        "-n",
                        ns,
                        "get",
                        "pods",
                        "-l",
                        "tier notin (a)",
                        "-o",
                        "name",
                    ],
                    "pod/p2\n",
                ),
                (&["-n", ns, "get", "pods", "-l", "!tier", "-o", "name"], ""),
                (
                    &["-n", ns, "get", "sandboxes", "-o", "name"],
                    "sandbox.agents.x-k8s.io/box\n",
                ),
            ],
        );
    });
}

/// `kubectl patch`: strategic (the default for a core kind) on a Pod, merge and JSON patch on
/// the Sandbox; label patches keep the other labels and the generation.
fn patch_steps(k: &Kubectl, ns: &str) {
    thread::scope(|s| {
        s.spawn(|| {
            let smp = r#"{"metadata":{"labels":{"patched":"smp"}}}"#;
            let out = k
                .run(&["-n", ns, "patch", "pod", "p2", "-p", smp])
                .success();
            out.stdout_is("pod/p2 patched\n");
        });
        let merge = r#"{"metadata":{"labels":{"patched":"merge"}}}"#;
        k.run(&[
            "-n",
            ns,
            "patch",
            "sandbox",
            "box",
            "--type=merge",
            "-p",
            merge,
        ])
        .success()
        .stdout_is("sandbox.agents.x-k8s.io/box patched\n");
        let json = r#"[{"op":"add","path":"/metadata/labels/json","value":"yes"}]"#;
        k.run(&[
            "-n",
            ns,
            "patch",
            "sandbox",
            "box",
            "--type=json",
            "-p",
            json,
        ])
        .success()
        .stdout_is("sandbox.agents.x-k8s.io/box patched\n");
    });
    thread::scope(|s| {
        s.spawn(|| {
            let p2 = k.get_json(ns, &["pod", "p2"]);
            assert_eq!(p2["metadata"]["labels"]["patched"], "smp", "{p2}");
            assert_eq!(
                p2["metadata"]["labels"]["app"], "web",
                "other labels stay: {p2}"
            );
        });
        s.spawn(|| {
            let v4 = k.get_json(ns, &["sandbox", "box"]);
            assert_eq!(v4["metadata"]["labels"]["patched"], "merge", "{v4}");
            assert_eq!(v4["metadata"]["labels"]["json"], "yes", "{v4}");
            assert_eq!(v4["metadata"]["labels"]["tier"], "gold", "{v4}");
            assert_eq!(
                generation(&v4),
                2,
                "label patches keep the generation: {v4}"
            );
        });
        expect_stdout_all(
            k,
            &[(
                &["-n", ns, "get", "pods", "-l", "patched=smp", "-o", "name"],
                "pod/p2\n",
            )],
        );
    });
}

/// `kubectl delete` of a Pod and of the Sandbox; a get afterwards is NotFound.
fn delete_steps(k: &Kubectl, ns: &str) {
    thread::scope(|s| {
        s.spawn(|| {
            k.run(&["-n", ns, "delete", "pod", "p1"])
                .success()
                .stdout_is("pod \"p1\" deleted\n");
            k.run(&["-n", ns, "get", "pod", "p1"])
                .failure()
                .stderr_has_line("Error from server (NotFound): pods \"p1\" not found");
        });
        k.run(&["-n", ns, "delete", "sandbox", "box"])
            .success()
            .stdout_is("sandbox.agents.x-k8s.io \"box\" deleted\n");
        k.run(&["-n", ns, "get", "sandbox", "box"])
            .failure()
            .stderr_has_line(
                "Error from server (NotFound): sandboxes.agents.x-k8s.io \"box\" not found",
            );
    });
    k.run(&["-n", ns, "get", "pods", "-o", "name"])
        .success()
        .stdout_is("pod/p2\npod/p3\n");
}

/// `kubectl create namespace`, `create secret generic`, `create serviceaccount` and
/// `create service clusterip`: typed clients, which kubectl 1.32 and later send as protobuf.
fn create_generators_scenario(bin: &str) {
    if !installed(bin) {
        return;
    }
    let server = Server::start();
    let k = Kubectl::new(bin, &server);
    let ns = "made";
    k.create_namespace(ns);
    thread::scope(|s| {
        s.spawn(|| {
            let out = k.run(&["create", "namespace", "other"]);
            out.success().stdout_is("namespace/other created\n");
            let other = k
                .run(&["get", "namespace", "other", "-o", "json"])
                .success()
                .json();
            assert_eq!(meta(&other, "name"), "other", "{other}");
        });
        s.spawn(|| {
            let args = [
                "create",
                "secret",
                "generic",
                "creds",
                "--from-literal=user=bob",
            ];
            let out = k.run(&[&["-n", ns][..], &args[..]].concat());
            out.success().stdout_is("secret/creds created\n");
            let secret = k.get_json(ns, &["secret", "creds"]);
            assert_eq!(secret["data"]["user"], "Ym9i", "{secret}");
        });
        s.spawn(|| {
            let out = k.run(&["-n", ns, "create", "serviceaccount", "robot"]);
            out.success().stdout_is("serviceaccount/robot created\n");
        });
        let args = ["create", "service", "clusterip", "web", "--tcp=80:8080"];
        let out = k.run(&[&["-n", ns][..], &args[..]].concat());
        out.success().stdout_is("service/web created\n");
        let svc = k.get_json(ns, &["service", "web"]);
        assert_eq!(svc["spec"]["ports"][0]["port"], 80, "{svc}");
        assert_eq!(svc["spec"]["ports"][0]["targetPort"], 8080, "{svc}");
    });
}

/// `apply --server-side` creates, then updates, a Sandbox and a Pod.
fn server_side_apply_scenario(bin: &str) {
    if !installed(bin) {
        return;
    }
    let server = Server::start();
    let k = Kubectl::new(bin, &server);
    let ns = "ssa";
    k.create_namespace(ns);
    let ssa = ["--server-side"];
    thread::scope(|s| {
        s.spawn(|| {
            let pod = server.write("p.yaml", &pod_yaml("p", &[("app", "web")], "nginx:1.25"));
            k.apply(ns, &pod, &ssa)
                .success()
                .stdout_is("pod/p serverside-applied\n");
            let pod = server.write("p.yaml", &pod_yaml("p", &[("app", "web")], "nginx:1.26"));
            k.apply(ns, &pod, &ssa)
                .success()
                .stdout_is("pod/p serverside-applied\n");
            let p = k.get_json(ns, &["pod", "p"]);
            let containers = p["spec"]["containers"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            assert_eq!(containers.len(), 1, "{p}");
            assert_eq!(containers[0]["image"], "nginx:1.26", "{p}");
            assert!(!has_directive_key(&p), "{p}");
        });
        let applied = "sandbox.agents.x-k8s.io/box serverside-applied\n";
        let sb = server.write(
            "box.yaml",
            &sandbox_yaml("box", &[("app", "demo")], "busybox:1.36"),
        );
        k.apply(ns, &sb, &ssa).success().stdout_is(applied);
        let v1 = k.get_json(ns, &["sandbox", "box"]);
        assert_eq!(generation(&v1), 1, "{v1}");
        assert!(
            v1["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"]
                .is_null(),
            "server-side apply leaves no last-applied annotation: {v1}"
        );
        let sb = server.write(
            "box.yaml",
            &sandbox_yaml("box", &[("app", "demo")], "busybox:1.37"),
        );
        k.apply(ns, &sb, &ssa).success().stdout_is(applied);
        let v2 = k.get_json(ns, &["sandbox", "box"]);
        let image = &v2["spec"]["podTemplate"]["spec"]["containers"][0]["image"];
        assert_eq!(image, "busybox:1.37", "{v2}");
        assert_eq!(generation(&v2), 2, "{v2}");
        assert_eq!(meta(&v2, "uid"), meta(&v1, "uid"));
    });
}

/// `kubectl replace` with an object read before someone else changed it is refused with the
/// Conflict message and changes nothing; with the fresh object it succeeds.
fn replace_stale_scenario(bin: &str) {
    if !installed(bin) {
        return;
    }
    let server = Server::start();
    let k = Kubectl::new(bin, &server);
    let ns = "replace";
    k.create_namespace(ns);
    let cases = [
        (
            "sandbox",
            "box",
            sandbox_yaml("box", &[("app", "demo")], "busybox:1.36"),
            "sandboxes.agents.x-k8s.io \"box\"",
        ),
        (
            "pod",
            "p",
            pod_yaml("p", &[("app", "web")], "nginx:1.25"),
            "pods \"p\"",
        ),
    ];
    thread::scope(|s| {
        for (kind, name, manifest, shown) in &cases {
            let (k, server) = (&k, &server);
            s.spawn(move || {
                let file = server.write(&format!("{kind}.yaml"), manifest);
                k.apply(ns, &file, &[]).success();
                let stale = k.run(&["-n", ns, "get", kind, name, "-o", "json"]).success().stdout;
                let stale_path = server.write(&format!("{kind}-stale.json"), &stale);
                let stale_str = stale_path.to_str().expect("a UTF-8 path");
                k.run(&["-n", ns, "label", kind, name, "touched=yes"]).success();
                k.run(&["-n", ns, "replace", "-f", stale_str]).failure().stderr_has_line(&format!(
                    "Error from server (Conflict): error when replacing \"{stale_str}\": Operation cannot be fulfilled on {shown}: the object has been modified; please apply your changes to the latest version and try again"
                ));
                let fresh = k.get_json(ns, &[kind, name]);
                assert_eq!(fresh["metadata"]["labels"]["touched"], "yes", "{fresh}");
                let mut edited = fresh.clone();
                edited["metadata"]["labels"]["replaced"] = Value::from("yes");
                let fresh_path = server.write(&format!("{kind}-fresh.json"), &edited.to_string());
                let fresh_str = fresh_path.to_str().expect("a UTF-8 path");
                let out = k.run(&["-n", ns, "replace", "-f", fresh_str]).success();
                assert!(out.stdout.ends_with(&format!("/{name} replaced\n")), "{out}");
                let after = k.get_json(ns, &[kind, name]);
                assert_eq!(after["metadata"]["labels"]["replaced"], "yes", "{after}");
                assert_ne!(meta(&after, "resourceVersion"), meta(&fresh, "resourceVersion"));
            });
        }
    });
}

/// `kubectl get -w --output-watch-events` sees a Sandbox added, modified and deleted.
fn watch_scenario(bin: &str) {
    if !installed(bin) {
        return;
    }
    let server = Server::start();
    let k = Kubectl::new(bin, &server);
    let ns = "watch";
    k.create_namespace(ns);
    let first = server.write("first.yaml", &sandbox_yaml("first", &[], "busybox:1.36"));
    k.apply(ns, &first, &[]).success();

    let args = [
        "-n",
        ns,
        "get",
        "sandboxes",
        "-w",
        "--output-watch-events",
        "-o",
        "json",
    ];
    let mut w = k.spawn(&args);
    let event = |ty: &'static str, name: &'static str| {
        move |line: &str| {
            serde_json::from_str::<Value>(line)
                .is_ok_and(|e| e["type"] == ty && e["object"]["metadata"]["name"] == name)
        }
    };
    w.expect_line(
        Stream::Stdout,
        "ADDED first (the initial list)",
        event("ADDED", "first"),
    );

    let second = server.write("second.yaml", &sandbox_yaml("second", &[], "busybox:1.36"));
    k.apply(ns, &second, &[]).success();
    let added = w.expect_line(Stream::Stdout, "ADDED second", event("ADDED", "second"));
    k.run(&["-n", ns, "label", "sandbox", "second", "phase=two"])
        .success();
    let modified = w.expect_line(
        Stream::Stdout,
        "MODIFIED second",
        event("MODIFIED", "second"),
    );
    k.run(&["-n", ns, "delete", "sandbox", "second"]).success();
    w.expect_line(Stream::Stdout, "DELETED second", event("DELETED", "second"));

    let added: Value = serde_json::from_str(&added).expect("an event is JSON");
    let modified: Value = serde_json::from_str(&modified).expect("an event is JSON");
    assert_eq!(
        modified["object"]["metadata"]["labels"]["phase"], "two",
        "{modified}"
    );
    assert_ne!(
        meta(&added["object"], "resourceVersion"),
        meta(&modified["object"], "resourceVersion")
    );
}

/// `kubectl wait --for=jsonpath=…` returns at once when the field already matches, returns
/// once it comes to match, times out with kubectl's message when it never does; and
/// `--for=delete` returns once the Sandbox is gone.
fn wait_scenario(bin: &str) {
    if !installed(bin) {
        return;
    }
    let server = Server::start();
    let k = Kubectl::new(bin, &server);
    let ns = "wait";
    k.create_namespace(ns);
    let sb = server.write(
        "box.yaml",
        &sandbox_yaml("box", &[("app", "demo")], "busybox:1.36"),
    );
    k.apply(ns, &sb, &[]).success();
    let met = "sandbox.agents.x-k8s.io/box condition met\n";

    thread::scope(|s| {
        s.spawn(|| {
            let matches = "--for=jsonpath={.metadata.labels.app}=demo";
            let out = k.run(&["-n", ns, "wait", matches, "sandbox/box", "--timeout=20s"]);
            out.success().stdout_is(met);
        });
        s.spawn(|| {
            let never = "--for=jsonpath={.metadata.labels.phase}=never";
            k.run(&["-n", ns, "wait", never, "sandbox/box", "--timeout=1s"])
                .failure()
                .stderr_has_line("error: timed out waiting for the condition on sandboxes/box");
        });
        // Label only once kubectl watches (-v=6 logs the watch request).
        let later = "--for=jsonpath={.metadata.labels.phase}=ready";
        let mut w = k.spawn(&[
            "-n",
            ns,
            "wait",
            later,
            "sandbox/box",
            "--timeout=30s",
            "-v=6",
        ]);
        w.expect_line(Stream::Stderr, "the watch request", |l| {
            l.contains("watch=true")
        });
        k.run(&["-n", ns, "label", "sandbox", "box", "phase=ready"])
            .success();
        w.finish().success().stdout_is(met);
    });

    let mut w = k.spawn(&[
        "-n",
        ns,
        "wait",
        "--for=delete",
        "sandbox/box",
        "--timeout=30s",
        "-v=6",
    ]);
    w.expect_line(Stream::Stderr, "the watch request", |l| {
        l.contains("watch=true")
    });
    k.run(&["-n", ns, "delete", "sandbox", "box", "--wait=false"])
        .success();
    w.finish().success().stdout_is(met);
}

/// `kubectl create token default` mints a token the server accepts but which may do nothing:
/// reads and deletes are Forbidden with the API server's wording.
fn create_token_forbidden_scenario(bin: &str) {
    if !installed(bin) {
        return;
    }
    let server = Server::start();
    let k = Kubectl::new(bin, &server);
    let ns = "tokens";
    k.create_namespace(ns);
    let out = k.run(&["-n", ns, "create", "token", "default"]).success();
    let token = out.stdout.trim().to_string();
    assert!(
        !token.is_empty() && !token.contains(char::is_whitespace),
        "one token: {out}"
    );
    let user = format!("User \"system:serviceaccount:{ns}:default\"");
    let cases = [
        (
            ["get", "pods"],
            format!(
                "Error from server (Forbidden): pods is forbidden: {user} cannot list resource \"pods\" in API group \"\" in the namespace \"{ns}\""
            ),
        ),
        (
            ["get", "sandboxes"],
            format!(
                "Error from server (Forbidden): sandboxes.agents.x-k8s.io is forbidden: {user} cannot list resource \"sandboxes\" in API group \"agents.x-k8s.io\" in the namespace \"{ns}\""
            ),
        ),
        (
            ["delete", "pod/nope"],
            format!(
                "Error from server (Forbidden): pods \"nope\" is forbidden: {user} cannot delete resource \"pods\" in API group \"\" in the namespace \"{ns}\""
            ),
        ),
    ];
    thread::scope(|s| {
        for (args, line) in &cases {
            let (k, token) = (&k, &token);
            s.spawn(move || {
                let out = k.run(&["-n", ns, args[0], args[1], "--token", token]);
                out.failure().stderr_has_line(line);
            });
        }
        k.run(&["-n", ns, "create", "token", "ghost"])
            .failure()
            .stderr_has_line("error: failed to create token: serviceaccounts \"ghost\" not found");
    });
}

/// `kubectl auth can-i` answers yes for the admin and no (exit 1) for a token of an unbound
/// service account, as a real server does: every authenticated user may create
/// SelfSubjectAccessReviews.
fn auth_can_i_scenario(bin: &str) {
    if !installed(bin) {
        return;
    }
    let server = Server::start();
    let k = Kubectl::new(bin, &server);
    let ns = "cani";
    k.create_namespace(ns);
    thread::scope(|s| {
        s.spawn(|| {
            expect_stdout_all(
                &k,
                &[
                    (&["-n", ns, "auth", "can-i", "list", "pods"], "yes\n"),
                    (
                        &[
                            "-n",
                            ns,
                            "auth",
                            "can-i",
                            "create",
                            "sandboxes.agents.x-k8s.io",
                        ],
                        "yes\n",
                    ),
                    (
                        &[
                            "-n",
                            ns,
                            "auth",
                            "can-i",
                            "create",
                            "pods",
                            "--subresource=exec",
                        ],
                        "yes\n",
                    ),
                ],
            );
        });
        let token = k
            .run(&["-n", ns, "create", "token", "default"])
            .success()
            .stdout;
        let token = token.trim();
        k.run(&["-n", ns, "auth", "can-i", "list", "pods", "--token", token])
            .failure()
            .stdout_is("no\n");
        let what = "sandboxes.agents.x-k8s.io";
        k.run(&["-n", ns, "auth", "can-i", "delete", what, "--token", token])
            .failure()
            .stdout_is("no\n");
    });
}

/// A bogus token is Unauthorized. With an empty discovery cache kubectl fails in discovery,
/// which reports client-go's generic 401 text; with a warm cache the request itself fails and
/// kubectl prints the Status's message, `Unauthorized`.
fn unauthorized_scenario(bin: &str) {
    if !installed(bin) {
        return;
    }
    let server = Server::start();
    let k = Kubectl::new(bin, &server);
    thread::scope(|s| {
        s.spawn(|| {
            k.run(&["get", "pods", "--token", "bogus"]).failure().stderr_has_line(
                "error: You must be logged in to the server (the server has asked for the client to provide credentials)",
            );
        });
        let home = tempfile::tempdir().expect("a temporary HOME");
        let warm = k.with_home(home.path());
        warm.run(&["get", "pods"]).success();
        let unauthorized = "error: You must be logged in to the server (Unauthorized)";
        warm.run(&["get", "pods", "--token", "bogus"])
            .failure()
            .stderr_has_line(unauthorized);
        warm.run(&["get", "sandboxes", "--token", "bogus"])
            .failure()
            .stderr_has_line(unauthorized);
    });
}

/// The Sandbox CRD schema through kubectl: defaults are stored, an enum violation is Invalid
/// with the field named, an unknown field is only warned about and pruned under
/// `--validate=warn`, and refused under `--validate=strict` (kubectl's default).
fn crd_schema_scenario(bin: &str) {
    if !installed(bin) {
        return;
    }
    let server = Server::start();
    let k = Kubectl::new(bin, &server);
    let ns = "schema";
    k.create_namespace(ns);
    let with_spec_line = |name: &str, line: &str| {
        sandbox_yaml(name, &[], "busybox:1.36").replacen(
            "\nspec:\n",
            &format!("\nspec:\n  {line}\n"),
            1,
        )
    };
    thread::scope(|s| {
        s.spawn(|| {
            let sb = server.write("box.yaml", &sandbox_yaml("box", &[], "busybox:1.36"));
            k.apply(ns, &sb, &[]).success();
            let fields = "jsonpath={.spec.operatingMode}/{.spec.shutdownPolicy}";
            let out = k.run(&["-n", ns, "get", "sandbox", "box", "-o", fields]);
            out.success().stdout_is("Running/Retain");
        });
        s.spawn(|| {
            let bad = server.write("bad.yaml", &with_spec_line("bad", "operatingMode: Bogus"));
            let out = k.apply(ns, &bad, &[]).failure();
            assert!(out.stderr.starts_with("The Sandbox \"bad\" is invalid:"), "{out}");
            let cause = r#"spec.operatingMode: Unsupported value: "Bogus": supported values: "Running", "Suspended""#;
            assert!(out.stderr.contains(cause), "{out}");
            k.run(&["-n", ns, "get", "sandbox", "bad"]).failure().stderr_has_line(
                "Error from server (NotFound): sandboxes.agents.x-k8s.io \"bad\" not found",
            );
        });
        s.spawn(|| {
            let extra = server.write("extra.yaml", &with_spec_line("extra", "bogusField: 1"));
            let extra = extra.to_str().expect("a UTF-8 path");
            k.run(&["-n", ns, "create", "-f", extra, "--validate=warn"])
                .success()
                .stdout_is("sandbox.agents.x-k8s.io/extra created\n")
                .stderr_has_line("Warning: unknown field \"spec.bogusField\"");
            let stored = k.get_json(ns, &["sandbox", "extra"]);
            assert!(
                stored["spec"].get("bogusField").is_none(),
                "the field is pruned: {stored}"
            );
        });
        let strict = server.write("strict.yaml", &with_spec_line("strict", "bogusField: 1"));
        let strict = strict.to_str().expect("a UTF-8 path");
        k.run(&["-n", ns, "create", "-f", strict]).failure().stderr_has_line(&format!(
            "Error from server (BadRequest): error when creating \"{strict}\": Sandbox in version \"v1beta1\" cannot be handled as a Sandbox: strict decoding error: unknown field \"spec.bogusField\""
        ));
    });
}

/// `kubectl explain` reads the kind's schema from `/openapi/v3`.
fn explain_scenario(bin: &str) {
    if !installed(bin) {
        return;
    }
    let server = Server::start();
    let k = Kubectl::new(bin, &server);
    let out = k.run(&["explain", "sandboxes.spec"]).success();
    assert!(out.stdout.contains("KIND:       Sandbox"), "{out}");
    assert!(out.stdout.contains("podTemplate"), "{out}");
    assert!(out.stdout.contains("operatingMode"), "{out}");
}

/// A file of the workspace's `fixtures/`.
fn fixture(path: &str) -> String {
    format!("{}/../fixtures/{path}", env!("CARGO_MANIFEST_DIR"))
}

/// RBAC made with `kubectl create`: a Role and a RoleBinding for a service account answer
/// `auth can-i --as` yes for the Role's verbs and no otherwise; a token from `create token`
/// may do exactly that (others are Forbidden, worded as the API server words them), `auth
/// whoami` names the account and `auth can-i --list` shows the Role's rule; a ClusterRole bound
/// by a RoleBinding grants in that namespace only.
fn rbac_scenario(bin: &str) {
    if !installed(bin) {
        return;
    }
    let server = Server::start();
    let k = Kubectl::new(bin, &server);
    let ns = "rbac";
    k.create_namespace(ns);
    let account = format!("{ns}:bot");
    let user = format!("system:serviceaccount:{account}");
    k.run(&["-n", ns, "create", "serviceaccount", "bot"])
        .success()
        .stdout_is("serviceaccount/bot created\n");
    k.run(&[
        "-n",
        ns,
        "create",
        "role",
        "pod-reader",
        "--verb=get,list",
        "--resource=pods",
    ])
    .success()
    .stdout_is("role.rbac.authorization.k8s.io/pod-reader created\n");
    let sa_flag = format!("--serviceaccount={account}");
    k.run(&[
        "-n",
        ns,
        "create",
        "rolebinding",
        "bot-reads",
        "--role=pod-reader",
        &sa_flag,
    ])
    .success()
    .stdout_is("rolebinding.rbac.authorization.k8s.io/bot-reads created\n");
    let as_bot = format!("--as={user}");
    k.run(&["-n", ns, "auth", "can-i", "list", "pods", &as_bot])
        .success()
        .stdout_is("yes\n");
    k.run(&["-n", ns, "auth", "can-i", "delete", "pods", &as_bot])
        .failure()
        .stdout_is("no\n");
    k.run(&["-n", "default", "auth", "can-i", "list", "pods", &as_bot])
        .failure()
        .stdout_is("no\n");
    let token = k
        .run(&["-n", ns, "create", "token", "bot", "--duration=15m"])
        .success()
        .stdout
        .trim()
        .to_string();
    let with_token = |namespace: &str, args: &[&str]| {
        let mut all = vec!["-n", namespace, "--token", token.as_str()];
        all.extend_from_slice(args);
        k.run(&all)
    };
    with_token(ns, &["get", "pods"]).success();
    let forbidden = |namespace: &str| {
        format!(
            "Error from server (Forbidden): secrets is forbidden: User \"{user}\" cannot list resource \"secrets\" in API group \"\" in the namespace \"{namespace}\""
        )
    };
    with_token(ns, &["get", "secrets"])
        .failure()
        .stderr_has_line(&forbidden(ns));
    let who = with_token(ns, &["auth", "whoami", "-o", "json"])
        .success()
        .json();
    assert_eq!(who["status"]["userInfo"]["username"], user.as_str());
    let list = with_token(ns, &["auth", "can-i", "--list"]).success();
    assert!(
        list.stdout
            .lines()
            .any(|l| l.starts_with("pods ") && l.trim_end().ends_with("[get list]")),
        "the Role's rule is listed: {list}"
    );
    k.run(&[
        "create",
        "clusterrole",
        "secret-reader",
        "--verb=get,list",
        "--resource=secrets",
    ])
    .success()
    .stdout_is("clusterrole.rbac.authorization.k8s.io/secret-reader created\n");
    k.run(&[
        "-n",
        ns,
        "create",
        "rolebinding",
        "bot-secrets",
        "--clusterrole=secret-reader",
        &sa_flag,
    ])
    .success();
    with_token(ns, &["get", "secrets"]).success();
    with_token("default", &["get", "secrets"])
        .failure()
        .stderr_has_line(&forbidden("default"));
}

/// The RBAC part of `ci/kind-up.sh`, applied unchanged: the namespace, the seed's Role, and
/// `fixtures/live/kind/access.yaml` (service accounts, bindings, token Secrets). The token
/// controller fills the Secret; its token may do what the seed's Role allows (kind-up's own
/// checks) and nothing else, and stops working when the Secret is deleted.
fn kind_up_rbac_scenario(bin: &str) {
    if !installed(bin) {
        return;
    }
    let server = Server::start();
    let k = Kubectl::new(bin, &server);
    let ns = "sandboxes";
    let mut args = vec!["apply"];
    let files = [
        fixture("live/namespace.yaml"),
        fixture("rbac/differently-sandboxes-role.yaml"),
        fixture("live/kind/access.yaml"),
    ];
    for f in &files {
        args.extend(["-f", f.as_str()]);
    }
    let applied = k.run(&args).success();
    assert!(
        applied.stdout.contains("secret/live-runner-token created"),
        "{applied}"
    );
    let mut watch = k.spawn(&[
        "-n",
        ns,
        "get",
        "secret",
        "live-runner-token",
        "-w",
        "-o",
        "jsonpath={.data.token}{\"\\n\"}",
    ]);
    let encoded = watch.expect_line(Stream::Stdout, "a filled token", |l| !l.trim().is_empty());
    drop(watch);
    use base64::Engine;
    let token = base64::engine::general_purpose::STANDARD
        .decode(encoded.trim())
        .ok()
        .and_then(|t| String::from_utf8(t).ok())
        .expect("the Secret's token is base64 text");
    let with_token = |args: &[&str]| {
        let mut all = vec!["-n", ns, "--token", token.as_str()];
        all.extend_from_slice(args);
        k.run(&all)
    };
    with_token(&["auth", "can-i", "create", "sandboxes.agents.x-k8s.io"])
        .success()
        .stdout_is("yes\n");
    with_token(&["auth", "can-i", "list", "services"])
        .failure()
        .stdout_is("no\n");
    with_token(&["get", "sandboxes"]).success();
    with_token(&["get", "services"]).failure().stderr_has_line(
        "Error from server (Forbidden): services is forbidden: User \"system:serviceaccount:sandboxes:live-runner\" cannot list resource \"services\" in API group \"\" in the namespace \"sandboxes\"",
    );
    k.run(&["-n", ns, "delete", "secret", "live-runner-token"])
        .success();
    // A cold discovery cache: kubectl fails in discovery, with client-go's 401 text.
    with_token(&["get", "sandboxes"]).failure().stderr_has_line(
        "error: You must be logged in to the server (the server has asked for the client to provide credentials)",
    );
}

// ---------------------------------------------------------------------------------------------
// The tests: the core scenarios on every version, the rest on 1.30, 1.33 and the dispatcher.
// ---------------------------------------------------------------------------------------------

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
