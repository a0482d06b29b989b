//! `kubectl exec` and `kubectl attach` from the installed kubectl binaries against the
//! `fakekube` binary: 1.30 to 1.33 (WebSocket v5 by default), 1.29 with
//! `KUBECTL_REMOTE_COMMAND_WEBSOCKETS=true`, 1.27 to 1.29 over SPDY (their default), `-i` with
//! stdin and its end, `-t` through a pseudo-terminal (`script`), and `kubectl wait
//! --for=condition=Ready sandbox/NAME`. The fault tests (v4-only negotiation, a dropped
//! connection) run fakekube in process, since faults are switched through the library.
//!
//! Each test starts its own fakekube; every kubectl call gets a fresh `HOME`, so no discovery
//! cache is shared. A kubectl binary that is not installed makes its part print
//! `skipping: <path> not installed`.

use std::io::{Read, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

mod support;

use support::process::Process as Server;

/// Where the Cloud SDK keeps its versioned kubectl binaries.
const SDK: &str = "/usr/lib/google-cloud-sdk/bin";
/// How long one kubectl command may run.
const COMMAND_TIMEOUT: Duration = Duration::from_secs(60);
/// The kubectl versions that exec over WebSocket by default.
const WEBSOCKET_DEFAULT: [u32; 4] = [30, 31, 32, 33];
/// The kubectl versions that exec over SPDY by default.
const SPDY_DEFAULT: [u32; 3] = [27, 28, 29];

/// The path of `kubectl.1.<minor>` when it is installed.
fn kubectl(minor: u32) -> Option<String> {
    let bin = format!("{SDK}/kubectl.1.{minor}");
    if Path::new(&bin).exists() {
        Some(bin)
    } else {
        println!("skipping: {bin} not installed");
        None
    }
}

/// What a finished command did.
struct Output {
    command: String,
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

impl std::fmt::Display for Output {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "`{}` exited with {:?}\n--- stdout ---\n{}\n--- stderr ---\n{}",
            self.command, self.code, self.stdout, self.stderr
        )
    }
}

impl Output {
    /// Asserts the exit code.
    #[track_caller]
    fn code(self, code: i32) -> Output {
        assert_eq!(self.code, Some(code), "unexpected exit code: {self}");
        self
    }

    /// Asserts that stdout is exactly `expected`.
    #[track_caller]
    fn stdout_is(self, expected: &str) -> Output {
        assert_eq!(self.stdout, expected, "unexpected stdout: {self}");
        self
    }

    /// Asserts that stderr contains `part`.
    #[track_caller]
    fn stderr_has(self, part: &str) -> Output {
        assert!(
            self.stderr.contains(part),
            "expected {part:?} in stderr: {self}"
        );
        self
    }

    /// Asserts that stderr is empty.
    #[track_caller]
    fn stderr_empty(self) -> Output {
        assert_eq!(self.stderr, "", "unexpected stderr: {self}");
        self
    }
}

/// Runs `program args` with a fresh `HOME`, `KUBECONFIG`, extra environment and optional stdin,
/// killing it after [`COMMAND_TIMEOUT`].
fn run(
    kubeconfig: &Path,
    program: &str,
    args: &[&str],
    env: &[(&str, &str)],
    stdin: Option<&[u8]>,
) -> Output {
    let home = tempfile::tempdir().expect("a temporary HOME");
    let mut cmd = Command::new(program);
    cmd.env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", home.path())
        .env("KUBECONFIG", kubeconfig)
        .args(args)
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut child = cmd
        .spawn()
        .unwrap_or_else(|e| panic!("{program} starts: {e}"));
    if let (Some(data), Some(mut w)) = (stdin, child.stdin.take()) {
        let data = data.to_vec();
        thread::spawn(move || {
            let _ = w.write_all(&data);
        });
    }
    let read_all = |mut r: Box<dyn Read + Send>| {
        thread::spawn(move || {
            let mut s = Vec::new();
            let _ = r.read_to_end(&mut s);
            String::from_utf8_lossy(&s).into_owned()
        })
    };
    let out = read_all(Box::new(child.stdout.take().expect("stdout is piped")));
    let err = read_all(Box::new(child.stderr.take().expect("stderr is piped")));
    let deadline = Instant::now() + COMMAND_TIMEOUT;
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => break Some(s),
            Ok(None) if Instant::now() < deadline => thread::sleep(Duration::from_millis(5)),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
        }
    };
    Output {
        command: format!("{program} {}", args.join(" ")),
        code: status.and_then(|s| s.code()),
        stdout: out.join().unwrap_or_default(),
        stderr: err.join().unwrap_or_default(),
    }
}

/// `kubectl` (the newest installed) with `args`.
fn kubectl_run(kubeconfig: &Path, args: &[&str], stdin: Option<&[u8]>) -> Output {
    let bin = (30..=33)
        .rev()
        .find_map(|m| {
            let b = format!("{SDK}/kubectl.1.{m}");
            Path::new(&b).exists().then_some(b)
        })
        .unwrap_or_else(|| "kubectl".to_string());
    run(kubeconfig, &bin, args, &[], stdin)
}

/// Creates pod `name` (container `main`) with kubectl and waits until it is Ready.
fn create_pod(kubeconfig: &Path, name: &str) {
    let manifest = format!(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\nspec:\n  containers:\n  - name: main\n    image: busybox:1.36\n"
    );
    kubectl_run(kubeconfig, &["apply", "-f", "-"], Some(manifest.as_bytes())).code(0);
    kubectl_run(
        kubeconfig,
        &[
            "wait",
            "--for=condition=Ready",
            &format!("pod/{name}"),
            "--timeout=50s",
        ],
        None,
    )
    .code(0)
    .stdout_is(&format!("pod/{name} condition met\n"));
}

/// A server with a Ready pod `box`.
fn server_with_pod() -> Server {
    let server = Server::start(&[]);
    create_pod(&server.kubeconfig, "box");
    server
}

#[test]
fn kubectl_1_30_to_1_33_exec_prints_stdout_and_stderr_and_exits_with_the_command_code() {
    let server = server_with_pod();
    for minor in WEBSOCKET_DEFAULT {
        let Some(bin) = kubectl(minor) else { continue };
        let k = |args: &[&str]| run(&server.kubeconfig, &bin, args, &[], None);
        k(&[
            "exec",
            "box",
            "--",
            "sh",
            "-c",
            "echo out; echo err >&2; exit 3",
        ])
        .code(3)
        .stdout_is("out\n")
        .stderr_has("err\n")
        .stderr_has("command terminated with exit code 3");
        k(&["exec", "box", "--", "echo", "hello", "world"])
            .code(0)
            .stdout_is("hello world\n")
            .stderr_empty();
        k(&["exec", "box", "-c", "main", "--", "sh", "-c", "exit 255"])
            .code(255)
            .stderr_has("command terminated with exit code 255");
    }
}

#[test]
fn kubectl_exec_i_feeds_stdin_until_its_end() {
    let server = server_with_pod();
    for minor in WEBSOCKET_DEFAULT {
        let Some(bin) = kubectl(minor) else { continue };
        run(
            &server.kubeconfig,
            &bin,
            &["exec", "-i", "box", "--", "sh", "-c", "cat; echo done"],
            &[],
            Some(b"line one\nline two\n"),
        )
        .code(0)
        .stdout_is("line one\nline two\ndone\n")
        .stderr_empty();
        let big: Vec<u8> = (0..200_000u32).map(|i| b'a' + (i % 26) as u8).collect();
        run(
            &server.kubeconfig,
            &bin,
            &["exec", "-i", "box", "--", "wc", "-c"],
            &[],
            Some(&big),
        )
        .code(0)
        .stdout_is("200000\n");
    }
}

#[test]
fn kubectl_exec_t_runs_under_a_terminal_with_resize_and_line_endings() {
    if !Path::new("/usr/bin/script").exists() {
        println!("skipping: /usr/bin/script (util-linux) not installed");
        return;
    }
    let server = server_with_pod();
    for minor in WEBSOCKET_DEFAULT {
        let Some(bin) = kubectl(minor) else { continue };
        // `script` gives kubectl a pseudo-terminal, so `-t` is honoured; the typed line ends
        // with `\r` as a terminal in raw mode sends it. The sleep keeps script's input open
        // until the command is done, however slow the machine (script ends with the command,
        // and the typist is killed then).
        let inner = format!(
            "KUBECONFIG={} {bin} exec -it box -- sh -c 'read line; echo \"got=$line\"; echo to-stderr >&2; exit 7'",
            server.kubeconfig.display()
        );
        let mut typist = Command::new("sh")
            .arg("-c")
            .arg("sleep 1; printf 'typed\\r'; sleep 600")
            .stdout(Stdio::piped())
            .spawn()
            .expect("sh starts");
        let home = tempfile::tempdir().expect("a temporary HOME");
        let out = Command::new("script")
            .args(["-qec", &inner, "/dev/null"])
            .env("HOME", home.path())
            .stdin(typist.stdout.take().expect("piped"))
            .output()
            .expect("script runs");
        let _ = typist.kill();
        let _ = typist.wait();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.code(), Some(7), "kubectl 1.{minor}: {stdout}");
        assert!(
            stdout.contains("got=typed\r\n"),
            "kubectl 1.{minor}: {stdout:?}"
        );
        assert!(
            stdout.contains("to-stderr\r\n"),
            "kubectl 1.{minor}: {stdout:?}"
        );
        assert!(
            !stdout.contains("Unhandled Error"),
            "kubectl 1.{minor}: {stdout:?}"
        );
    }
}

#[test]
fn kubectl_1_31_execs_reliably_after_the_early_frame_pause() {
    let server = server_with_pod();
    let Some(bin) = kubectl(31) else { return };
    for i in 0..15 {
        run(
            &server.kubeconfig,
            &bin,
            &["exec", "box", "--", "echo", &format!("run {i}")],
            &[],
            None,
        )
        .code(0)
        .stdout_is(&format!("run {i}\n"))
        .stderr_empty();
    }
}

#[test]
fn kubectl_1_29_execs_over_websocket_with_the_variable_and_over_spdy_without() {
    let server = server_with_pod();
    let Some(bin) = kubectl(29) else { return };
    for env in [&[("KUBECTL_REMOTE_COMMAND_WEBSOCKETS", "true")][..], &[]] {
        run(
            &server.kubeconfig,
            &bin,
            &["exec", "-i", "box", "--", "sh", "-c", "cat; exit 2"],
            env,
            Some(b"from 1.29\n"),
        )
        .code(2)
        .stdout_is("from 1.29\n")
        .stderr_has("command terminated with exit code 2");
    }
}

#[test]
fn kubectl_1_27_to_1_29_exec_over_spdy_prints_stdout_and_stderr_and_exits_with_the_command_code() {
    let server = server_with_pod();
    for minor in SPDY_DEFAULT {
        let Some(bin) = kubectl(minor) else { continue };
        let k = |args: &[&str]| run(&server.kubeconfig, &bin, args, &[], None);
        k(&[
            "exec",
            "box",
            "--",
            "sh",
            "-c",
            "echo out; echo err >&2; exit 3",
        ])
        .code(3)
        .stdout_is("out\n")
        .stderr_has("err\n")
        .stderr_has("command terminated with exit code 3");
        k(&["exec", "box", "--", "echo", "hello", "world"])
            .code(0)
            .stdout_is("hello world\n")
            .stderr_empty();
        k(&["exec", "box", "--", "head", "-c", "1000000", "/dev/zero"])
            .code(0)
            .stderr_empty();
        k(&["exec", "box", "--", "no-such-program"])
            .code(1)
            .stderr_has("error: Internal error occurred: error executing command in container: failed to exec in container: failed to start exec \"")
            .stderr_has("executable file not found in $PATH: unknown");
    }
}

#[test]
fn kubectl_1_27_to_1_29_exec_i_over_spdy_feeds_stdin_until_its_end() {
    let server = server_with_pod();
    for minor in SPDY_DEFAULT {
        let Some(bin) = kubectl(minor) else { continue };
        run(
            &server.kubeconfig,
            &bin,
            &["exec", "-i", "box", "--", "sh", "-c", "cat; echo done"],
            &[],
            Some(b"line one\nline two\n"),
        )
        .code(0)
        .stdout_is("line one\nline two\ndone\n")
        .stderr_empty();
        let big: Vec<u8> = (0..300_000u32).map(|i| b'a' + (i % 26) as u8).collect();
        run(
            &server.kubeconfig,
            &bin,
            &["exec", "-i", "box", "--", "wc", "-c"],
            &[],
            Some(&big),
        )
        .code(0)
        .stdout_is("300000\n");
    }
}

#[test]
fn kubectl_1_27_exec_t_over_spdy_runs_under_a_terminal() {
    if !Path::new("/usr/bin/script").exists() {
        println!("skipping: /usr/bin/script (util-linux) not installed");
        return;
    }
    let server = server_with_pod();
    let Some(bin) = kubectl(27) else { return };
    let inner = format!(
        "KUBECONFIG={} {bin} exec -it box -- sh -c 'read line; echo \"got=$line\"; echo to-stderr >&2; exit 7'",
        server.kubeconfig.display()
    );
    let mut typist = Command::new("sh")
        .arg("-c")
        .arg("sleep 1; printf 'typed\\r'; sleep 600")
        .stdout(Stdio::piped())
        .spawn()
        .expect("sh starts");
    let home = tempfile::tempdir().expect("a temporary HOME");
    let out = Command::new("script")
        .args(["-qec", &inner, "/dev/null"])
        .env("HOME", home.path())
        .stdin(typist.stdout.take().expect("piped"))
        .output()
        .expect("script runs");
    let _ = typist.kill();
    let _ = typist.wait();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(7), "{stdout}");
    assert!(stdout.contains("got=typed\r\n"), "{stdout:?}");
    assert!(stdout.contains("to-stderr\r\n"), "{stdout:?}");
}

#[test]
fn kubectl_1_27_to_1_29_attach_over_spdy_feeds_the_main_process_and_reads_its_output() {
    let server = Server::start(&[]);
    for minor in SPDY_DEFAULT {
        let Some(bin) = kubectl(minor) else { continue };
        // The process lingers after its answer so that the answer reaches the attach before
        // the process's end closes it.
        let name = format!("echo-{minor}");
        let manifest = format!(
            "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\nspec:\n  restartPolicy: Never\n  containers:\n  - name: main\n    image: busybox\n    stdin: true\n    command: [\"sh\", \"-c\", \"read l; echo got $l; sleep 1\"]\n"
        );
        kubectl_run(
            &server.kubeconfig,
            &["apply", "-f", "-"],
            Some(manifest.as_bytes()),
        )
        .code(0);
        kubectl_run(
            &server.kubeconfig,
            &[
                "wait",
                "--for=condition=Ready",
                &format!("pod/{name}"),
                "--timeout=50s",
            ],
            None,
        )
        .code(0);
        let out = run(
            &server.kubeconfig,
            &bin,
            &["attach", "-i", &name],
            &[],
            Some(format!("hello {minor}\n").as_bytes()),
        )
        .code(0);
        assert!(
            out.stdout.contains(&format!("got hello {minor}\n")),
            "{out}"
        );
    }
}

#[test]
fn kubectl_reports_a_missing_program_missing_pod_and_unknown_container_as_a_cluster_would() {
    let server = server_with_pod();
    let Some(bin) = kubectl(33) else { return };
    let k = |args: &[&str]| run(&server.kubeconfig, &bin, args, &[], None);
    k(&["exec", "box", "--", "no-such-program"])
        .code(1)
        .stderr_has("error: Internal error occurred: error executing command in container: failed to exec in container: failed to start exec \"")
        .stderr_has("OCI runtime exec failed: exec failed: unable to start container process: exec: \"no-such-program\": executable file not found in $PATH: unknown");
    k(&["exec", "box", "--", "sh", "-c", "no-such-program"])
        .code(127)
        .stderr_has("sh: no-such-program: not found");
    k(&["exec", "nope", "--", "true"])
        .code(1)
        .stderr_has("Error from server (NotFound): pods \"nope\" not found");
    k(&["exec", "box", "-c", "other", "--", "true"])
        .code(1)
        .stderr_has("container other is not valid for pod box");
}

#[test]
fn kubectl_waits_for_a_sandbox_to_be_ready_and_execs_into_its_pod() {
    let server = Server::start(&[]);
    let manifest = "apiVersion: agents.x-k8s.io/v1beta1\nkind: Sandbox\nmetadata:\n  name: box\nspec:\n  podTemplate:\n    spec:\n      containers:\n      - name: main\n        image: busybox:1.36\n";
    let path = server.dir().join("sandbox.yaml");
    std::fs::write(&path, manifest).expect("the manifest is written");
    let path = path.to_str().expect("a UTF-8 path");
    kubectl_run(&server.kubeconfig, &["apply", "-f", path], None)
        .code(0)
        .stdout_is("sandbox.agents.x-k8s.io/box created\n");
    kubectl_run(
        &server.kubeconfig,
        &[
            "wait",
            "--for=condition=Ready",
            "sandbox/box",
            "--timeout=50s",
        ],
        None,
    )
    .code(0)
    .stdout_is("sandbox.agents.x-k8s.io/box condition met\n");
    kubectl_run(&server.kubeconfig, &["exec", "box", "--", "hostname"], None)
        .code(0)
        .stdout_is("box\n");
}

/// Runs `f` with an in-process fakekube (faults reachable) that has a Ready pod `box`, and the
/// path of its kubeconfig.
fn with_in_process_server(f: impl FnOnce(&fakekube::FakeKube, &Path)) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    let kube = rt
        .block_on(fakekube::FakeKube::builder().start())
        .expect("fakekube starts");
    let dir = tempfile::tempdir().expect("a temporary directory");
    let kubeconfig = dir.path().join("kubeconfig");
    std::fs::write(&kubeconfig, kube.kubeconfig()).expect("the kubeconfig is written");
    create_pod(&kubeconfig, "box");
    f(&kube, &kubeconfig);
    rt.block_on(kube.shutdown());
}

#[test]
fn kubectl_1_33_against_a_v4_only_server_falls_back_to_spdy_and_still_execs() {
    let Some(bin) = kubectl(33) else { return };
    with_in_process_server(|kube, kubeconfig| {
        kube.faults().v4_only_exec(true);
        run(
            kubeconfig,
            &bin,
            &["exec", "box", "--", "sh", "-c", "echo via spdy; exit 5"],
            &[],
            None,
        )
        .code(5)
        .stdout_is("via spdy\n");
        kube.faults().v4_only_exec(false);
        run(kubeconfig, &bin, &["exec", "box", "--", "true"], &[], None).code(0);
    });
}

#[test]
fn kubectl_sees_an_abnormal_closure_when_the_connection_is_dropped() {
    let Some(bin) = kubectl(33) else { return };
    with_in_process_server(|kube, kubeconfig| {
        kube.faults().drop_exec_after_bytes(Some(6));
        run(
            kubeconfig,
            &bin,
            &[
                "exec",
                "box",
                "--",
                "sh",
                "-c",
                "echo hello; sleep 0.2; echo world",
            ],
            &[],
            None,
        )
        .code(1)
        .stdout_is("hello\n")
        .stderr_has("1006");
    });
}

#[test]
fn kubectl_exec_it_through_a_pseudo_terminal_prompts_echoes_resizes_and_interrupts() {
    let server = server_with_pod();
    let driver = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/pty_kubectl.py");
    for minor in WEBSOCKET_DEFAULT {
        let Some(bin) = kubectl(minor) else { continue };
        let home = tempfile::tempdir().expect("a temporary HOME");
        let out = Command::new("python3")
            .arg(&driver)
            .arg(&bin)
            .arg(&server.kubeconfig)
            .arg("box")
            .env("HOME", home.path())
            .stdin(Stdio::null())
            .output()
            .expect("python3 runs");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "kubectl 1.{minor}: the driver failed: {stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let r: serde_json::Value = serde_json::from_str(&stdout)
            .unwrap_or_else(|e| panic!("kubectl 1.{minor}: no JSON ({e}): {stdout}"));
        let steps = &r["steps"];
        assert_eq!(steps["prompt"], "# ", "kubectl 1.{minor}: {r:#}");
        assert_eq!(
            steps["echo"], "echo hi\r\nhi\r\n# ",
            "kubectl 1.{minor}: {r:#}"
        );
        assert_eq!(
            steps["size"], "stty size\r\n40 100\r\n# ",
            "kubectl 1.{minor}: the pty's size reaches stty: {r:#}"
        );
        assert_eq!(steps["interrupt"], "^C\r\n# ", "kubectl 1.{minor}: {r:#}");
        assert_eq!(
            steps["status"], "echo $?\r\n130\r\n# ",
            "kubectl 1.{minor}: {r:#}"
        );
        assert!(
            steps["exit"]
                .as_str()
                .is_some_and(|s| s.starts_with("exit 3\r\n")),
            "kubectl 1.{minor}: {r:#}"
        );
        assert_eq!(r["code"], 3, "kubectl 1.{minor}: {r:#}");
    }
}
