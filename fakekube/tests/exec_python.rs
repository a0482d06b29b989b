//! The Python `kubernetes` client's `stream()` exec against the `fakekube` binary: the current
//! release (which offers `v5.channel.k8s.io, v4.channel.k8s.io`) and 31.0.0 (which offers only
//! v4), each from its own virtual environment made by `ci/python-venv.sh`.
//!
//! The scripts in `tests/python/` do the client side and print JSON; these tests check it:
//! output in preloaded mode, stdout and stderr apart, `returncode` from the status (3, 0),
//! stdin sent as text and as binary frames, v5's half-close of stdin (current release only), and
//! the InternalError status of a command that cannot start (on which the client's `returncode`
//! raises, as against a real cluster); and one interactive `sh` driven a command at a time
//! (`write_stdin`, `readline_stdout`, `returncode` after `exit 4`) with and without a TTY.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

mod support;

use support::process::Process as Server;

/// The workspace root (fakekube's parent directory).
fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from(".."))
}

/// The Python interpreter of `target/<venv>`, or a failure telling how to make it.
fn python(venv: &str) -> PathBuf {
    let bin = workspace()
        .join("target")
        .join(venv)
        .join("bin")
        .join("python");
    assert!(
        bin.exists(),
        "{} is missing: run ci/python-venv.sh (ci/test.sh does) to create the Python venvs",
        bin.display()
    );
    bin
}

/// A script in `tests/python/`.
fn script(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests")
        .join("python")
        .join(name)
}

/// Runs a script with `python` against `server`, returning stdout; fails the test on a
/// non-zero exit.
fn run(server: &Server, python: &Path, script: &Path, args: &[&str]) -> String {
    let started = Instant::now();
    let out = Command::new(python)
        .arg(script)
        .arg(&server.kubeconfig)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("python starts");
    assert!(
        out.status.success(),
        "{} {} failed after {:?}: {:?}\n--- stdout ---\n{}\n--- stderr ---\n{}",
        python.display(),
        script.display(),
        started.elapsed(),
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Creates a Running pod and runs the exec script with the client of `venv`.
fn exec_results(venv: &str) -> Value {
    script_results(venv, "exec_stream.py")
}

/// Creates a Running pod and runs `name` (a script of `tests/python/`) with the client of
/// `venv`, returning the JSON it printed.
fn script_results(venv: &str, name: &str) -> Value {
    let python = python(venv);
    let server = Server::start(&[]);
    let created = run(
        &server,
        &python,
        &script("create_pod.py"),
        &["default", "box"],
    );
    assert_eq!(created.trim(), "Running");
    let deadline = Instant::now() + Duration::from_secs(60);
    let out = run(&server, &python, &script(name), &["default", "box"]);
    assert!(Instant::now() < deadline, "the script took over a minute");
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("the script printed no JSON ({e}): {out}"))
}

/// The checks both client versions must pass.
fn assert_common(r: &Value, message_3: &str) {
    assert_eq!(r["preloaded"], "hello from fakekube\n", "{r:#}");

    let e = &r["exit3"];
    assert_eq!(e["stdout"], "out\n", "{r:#}");
    assert_eq!(e["stderr"], "err\n", "{r:#}");
    assert_eq!(e["returncode"], 3, "{r:#}");
    assert_eq!(e["open"], false, "{r:#}");
    assert_eq!(
        e["status"],
        serde_json::json!({
            "metadata": {},
            "status": "Failure",
            "message": message_3,
            "reason": "NonZeroExitCode",
            "details": { "causes": [ { "reason": "ExitCode", "message": "3" } ] }
        })
    );

    assert_eq!(r["true"]["returncode"], 0, "{r:#}");
    assert_eq!(
        r["true"]["status"],
        serde_json::json!({ "metadata": {}, "status": "Success" })
    );

    assert_eq!(
        r["stdin"]["stdout"], "a=text-frame b=binary-frame\n",
        "{r:#}"
    );
    assert_eq!(r["stdin"]["returncode"], 0, "{r:#}");

    let c = &r["cannot_start"];
    assert_eq!(c["status"]["reason"], "InternalError", "{r:#}");
    assert_eq!(c["status"]["code"], 500, "{r:#}");
    assert!(
        c["status"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("exec: \"no-such-program\": executable file not found in $PATH"),
        "{r:#}"
    );
    assert_eq!(c["returncode"], "raised ValueError", "{r:#}");
}

#[test]
fn python_client_current_release_execs_over_v5_with_returncode_and_stdin_half_close() {
    let r = exec_results("py-venv-current");
    assert_eq!(r["subprotocol"], "v5.channel.k8s.io", "{r:#}");
    assert_common(
        &r,
        "command terminated with non-zero exit code: command terminated with exit code 3",
    );
    assert_eq!(r["close_stdin"]["stdout"], "until eof\n", "{r:#}");
    assert_eq!(r["close_stdin"]["returncode"], 0, "{r:#}");
}

#[test]
fn python_client_31_offers_only_v4_and_gets_output_and_returncode() {
    let r = exec_results("py-venv-31");
    assert_eq!(r["version"], "31.0.0", "{r:#}");
    assert_eq!(r["subprotocol"], "v4.channel.k8s.io", "{r:#}");
    assert_common(
        &r,
        "command terminated with non-zero exit code: error executing command [sh -c echo out; echo err >&2; exit 3], exit code 3",
    );
    assert!(r.get("close_stdin").is_none(), "{r:#}");
}

#[test]
fn python_client_drives_an_interactive_sh_with_and_without_a_tty() {
    for venv in ["py-venv-current", "py-venv-31"] {
        let r = script_results(venv, "exec_interactive.py");
        assert_eq!(
            r["pipe"]["lines"],
            serde_json::json!(["first answer", "third", "second"]),
            "{venv}: {r:#}"
        );
        assert_eq!(r["pipe"]["returncode"], 4, "{venv}: {r:#}");
        assert_eq!(
            r["tty"]["lines"],
            serde_json::json!([
                "echo first answer\r",
                "first answer\r",
                "echo second >&2; echo third\r",
                "second\r",
                "third\r"
            ]),
            "{venv}: the echo and the answers, with CR LF: {r:#}"
        );
        assert_eq!(
            r["tty"]["prompts"],
            serde_json::json!(["# ", "# "]),
            "{venv}: {r:#}"
        );
        assert_eq!(r["tty"]["returncode"], 4, "{venv}: {r:#}");
        assert_eq!(r["tty"]["open"], false, "{venv}: {r:#}");
    }
}
