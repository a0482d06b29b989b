//! End-to-end tests of the programs through the runtime's [`exec`], in a shell as users run
//! them.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use bytes::Bytes;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use fakekube_runtime::*;

use crate::{TABLE, registry};

mod awk;
mod busybox;
mod devices;
mod grep;
mod limits;
mod links;
mod more;
mod raw_bytes;
mod signals;
mod stream;
mod tar;
mod terminal;

#[test]
fn every_program_has_its_own_bin_entry() {
    let fs = registry().pod_fs(vec![]);
    assert_eq!(fs.read_dir("/bin").map(|v| v.len()), Ok(TABLE.len()));
}

/// Most output a test keeps per stream (the rest is read and dropped).
const KEEP: usize = 1 << 20;

/// How long a script the test expects to end may run before it is killed: far more than any
/// needs, since a loaded machine is slow (a script that should be killed gets its own limit).
const LIMIT: Duration = Duration::from_secs(60);

/// What a finished exec produced.
#[derive(Debug)]
struct Run {
    /// How it ended.
    status: ExitStatus,
    /// Standard output (lossy UTF-8).
    stdout: String,
    /// Standard error (lossy UTF-8).
    stderr: String,
}

/// Reads a channel to its end, keeping at most [`KEEP`] bytes.
async fn collect(mut rx: mpsc::Receiver<Bytes>) -> String {
    let mut out = Vec::new();
    while let Some(chunk) = rx.recv().await {
        assert!(chunk.len() <= CHUNK, "chunk of {} bytes", chunk.len());
        let room = KEEP.saturating_sub(out.len());
        out.extend_from_slice(&chunk[..chunk.len().min(room)]);
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Runs `argv` on `fs` with `stdin`, cancelled after `limit`.
async fn run_full(
    fs: &PodFs,
    programs: &Programs,
    argv: &[&str],
    stdin: Option<&[u8]>,
    limit: Duration,
) -> Run {
    let (out_tx, out_rx) = mpsc::channel(8);
    let (err_tx, err_rx) = mpsc::channel(8);
    let stdin = stdin.map(|data| {
        let (tx, rx) = mpsc::channel(4);
        let data = Bytes::copy_from_slice(data);
        tokio::spawn(async move {
            let _ = tx.send(data).await;
        });
        rx
    });
    let cancel = CancellationToken::new();
    let spec = ExecSpec {
        argv: argv.iter().map(|s| s.to_string()).collect(),
        env: vec![("HOSTNAME".into(), "pod-0".into())],
        cwd: "/".into(),
        fs: fs.clone(),
        programs: programs.clone(),
        processes: ProcessTable::new(),
        cancel: cancel.clone(),
        network: PodNetwork::new(),
    };
    let io = ExecIo {
        stdin,
        stdout: out_tx,
        stderr: err_tx,
        tty: None,
    };
    let killer = {
        let cancel = cancel.clone();
        tokio::spawn(async move {
            tokio::time::sleep(limit).await;
            cancel.cancel();
        })
    };
    let (status, stdout, stderr) = tokio::join!(exec(spec, io), collect(out_rx), collect(err_rx));
    killer.abort();
    Run {
        status,
        stdout,
        stderr,
    }
}

/// Runs `argv` in a fresh pod.
async fn run(argv: &[&str]) -> Run {
    run_full(
        &crate::registry().pod_fs(vec![]),
        &crate::registry(),
        argv,
        None,
        LIMIT,
    )
    .await
}

/// Runs a shell script in a fresh pod.
async fn sh(script: &str) -> Run {
    run(&["sh", "-c", script]).await
}

/// Runs a shell script on a given filesystem.
async fn sh_on(fs: &PodFs, script: &str) -> Run {
    run_full(fs, &crate::registry(), &["sh", "-c", script], None, LIMIT).await
}

/// Asserts a script prints `want` and exits 0.
async fn check(script: &str, want: &str) {
    let r = sh(script).await;
    assert_eq!(
        (r.status.clone(), r.stdout.as_str()),
        (ExitStatus::Code(0), want),
        "script {script:?}: {r:?}"
    );
}

#[tokio::test]
async fn quoting_keeps_spaces_and_suppresses_expansion() {
    check(
        r#"X='a  b'; echo 'single $X' "double $X" \$X $X"#,
        "single $X double a  b $X a b\n",
    )
    .await;
    check(r#"echo "a\"b" 'c\d' e\ f"#, "a\"b c\\d e f\n").await;
}

#[tokio::test]
async fn quoted_at_expands_to_one_field_per_parameter() {
    let r = run(&[
        "sh",
        "-c",
        r#"for a in "$@"; do echo "[$a]"; done; echo $# $0 "$1""#,
        "name",
        "a b",
        "",
        "c",
    ])
    .await;
    assert_eq!(r.stdout, "[a b]\n[]\n[c]\n3 name a b\n", "{r:?}");
    check(
        r#"set -- x y; echo "$*" ${#}; shift; echo $1"#,
        "x y 2\ny\n",
    )
    .await;
    check(r#"f() { echo $#; }; f "$@""#, "0\n").await;
}

#[tokio::test]
async fn command_substitution_nests_and_strips_trailing_newlines() {
    check(
        r#"x=$(echo "$(printf 'in\n\n')"); echo "<$x>" `echo old`"#,
        "<in> old\n",
    )
    .await;
    check(r#"x=$(exit 3); echo $?"#, "3\n").await;
}

#[tokio::test]
async fn parameter_operators_follow_posix() {
    check(
        r#"echo ${U:-def} ${U-dash} "${E:-empty}" ${#HOSTNAME}"#,
        "def dash empty 5\n",
    )
    .await;
    check(
        r#"p=/a/b/c.tar.gz; echo ${p##*/} ${p%%.*} ${p%.*} ${p#/*/}"#,
        "c.tar.gz /a/b/c /a/b/c.tar b/c.tar.gz\n",
    )
    .await;
    check(
        r#"echo ${V:=set} $V ${V:+alt} ${NOPE:+alt}."#,
        "set set alt .\n",
    )
    .await;
    let r = sh(r#"echo ${NOPE:?is required}; echo unreachable"#).await;
    assert_eq!(r.status, ExitStatus::Code(2));
    assert_eq!(r.stderr, "sh: NOPE: is required\n");
    assert_eq!(r.stdout, "");
}

#[tokio::test]
async fn arithmetic_and_loops_count() {
    check(
        "i=0; while [ $i -lt 5 ]; do i=$((i + 1)); done; echo $i $((7 % 3)) $((2 * (3 + 4)))",
        "5 1 14\n",
    )
    .await;
    check(
        "n=0; until [ $n -ge 2 ]; do n=$((n+1)); done; echo $n",
        "2\n",
    )
    .await;
    let r = sh("echo $((1/0))").await;
    assert_eq!(r.status, ExitStatus::Code(2));
    assert!(r.stderr.contains("divide by zero"), "{r:?}");
}

#[tokio::test]
async fn compound_commands_run() {
    check(
        "if false; then echo a; elif true; then echo b; else echo c; fi",
        "b\n",
    )
    .await;
    check(
        "for x in 1 2 3; do [ $x = 2 ] && continue; echo $x; done",
        "1\n3\n",
    )
    .await;
    check("for x in a b c; do echo $x; break; done", "a\n").await;
    check(
        "case foo.txt in *.md) echo md;; *.txt|*.text) echo txt;; esac",
        "txt\n",
    )
    .await;
    check("case x in '*') echo star;; *) echo any;; esac", "any\n").await;
    check(
        "f() { echo \"f:$1\"; return 4; }; f arg; echo $?",
        "f:arg\n4\n",
    )
    .await;
    check("{ echo a; echo b; } | wc -l", "2\n").await;
    check("(cd /tmp; pwd); pwd; cd /etc && pwd", "/tmp\n/\n/etc\n").await;
    check("! false && echo negated", "negated\n").await;
    check(
        "true || echo no; false || echo yes; : && echo colon",
        "yes\ncolon\n",
    )
    .await;
}

#[tokio::test]
async fn redirections_write_append_read_and_duplicate() {
    check(
        "echo one > /tmp/f; echo two >> /tmp/f; cat < /tmp/f",
        "one\ntwo\n",
    )
    .await;
    check(
        "ls /nope 2>&1; echo rc=$?",
        "ls: cannot access '/nope': No such file or directory\nrc=2\n",
    )
    .await;
    check("cat /nope 2>/dev/null; echo rc=$?", "rc=1\n").await;
    let r = sh("echo to-err >&2").await;
    assert_eq!((r.stdout.as_str(), r.stderr.as_str()), ("", "to-err\n"));
    check(
        "exec > /tmp/out; echo hidden; exec >&2; cat /tmp/out >&2",
        "",
    )
    .await;
    let r = sh("echo x > /nope/f").await;
    assert_eq!(r.status, ExitStatus::Code(2));
    assert_eq!(
        r.stderr,
        "sh: cannot create /nope/f: Directory nonexistent\n"
    );
}

#[tokio::test]
async fn here_documents_expand_unless_quoted() {
    check(
        "X=world; cat <<EOF\nhello $X\nEOF\ncat <<'EOF'\nraw $X\nEOF",
        "hello world\nraw $X\n",
    )
    .await;
    check("cat <<-EOF\n\tindented\n\tEOF", "indented\n").await;
}

#[tokio::test]
async fn pipes_connect_commands_and_a_writer_stops_when_the_reader_leaves() {
    check("printf 'a\\nb\\nc\\n' | wc -l", "3\n").await;
    check("yes | head -n 3", "y\ny\ny\n").await;
    check("yes hello | head -c 12; echo", "hello\nhello\n\n").await;
    check("head -c 100000 /dev/zero | wc -c", "100000\n").await;
    check("echo a | { read x; echo got $x; }", "got a\n").await;
}

#[tokio::test]
async fn exit_codes_match_a_real_shell() {
    assert_eq!(sh("exit 3").await.status, ExitStatus::Code(3));
    assert_eq!(sh("exit 300").await.status, ExitStatus::Code(44));
    assert_eq!(sh("false").await.status, ExitStatus::Code(1));
    assert_eq!(sh("true").await.status, ExitStatus::Code(0));
    let r = sh("nosuchcmd arg").await;
    assert_eq!(
        (r.status, r.stderr.as_str()),
        (ExitStatus::Code(127), "sh: nosuchcmd: not found\n")
    );
    let r = sh("echo x > /tmp/x; /tmp/x").await;
    assert_eq!(
        (r.status, r.stderr.as_str()),
        (ExitStatus::Code(126), "sh: /tmp/x: Permission denied\n")
    );
    let r = sh("cat /nope").await;
    assert_eq!(
        (r.status, r.stderr.as_str()),
        (
            ExitStatus::Code(1),
            "cat: /nope: No such file or directory\n"
        )
    );
    let r = sh("if true; then").await;
    assert_eq!(r.status, ExitStatus::Code(2));
    assert!(r.stderr.starts_with("sh: syntax error:"), "{r:?}");
    let r = sh("[ 1 -eq x ]").await;
    assert_eq!(
        (r.status, r.stderr.as_str()),
        (ExitStatus::Code(2), "[: Illegal number: x\n")
    );
    assert_eq!(
        sh("test -d /tmp -a ! -f /tmp").await.status,
        ExitStatus::Code(0)
    );
    assert_eq!(sh("ls --bogus").await.status, ExitStatus::Code(2));
    let r = sh("timeout 0.1 sleep 5").await;
    assert_eq!(r.status, ExitStatus::Code(124));
    assert_eq!(sh("timeout 5 true").await.status, ExitStatus::Code(0));
    assert_eq!(
        sh("timeout 1s sh -c 'exit 7'").await.status,
        ExitStatus::Code(7)
    );
    let r = sh("timeout 1 nope").await;
    assert_eq!(
        (r.status, r.stderr.as_str()),
        (
            ExitStatus::Code(127),
            "timeout: failed to run command 'nope': No such file or directory\n"
        )
    );
    let r = sh("set -e; false; echo unreachable").await;
    assert_eq!((r.status, r.stdout.as_str()), (ExitStatus::Code(1), ""));
    check(
        "set -e; if false; then :; fi; false || true; echo survived",
        "survived\n",
    )
    .await;
}

#[tokio::test]
async fn direct_exec_of_a_missing_program_cannot_start() {
    let r = run(&["nosuch", "arg"]).await;
    let ExitStatus::CannotStart(msg) = r.status else {
        panic!("{r:?}")
    };
    assert!(
        msg.contains(r#"exec: "nosuch": executable file not found in $PATH"#),
        "{msg}"
    );
    let fs = crate::registry().pod_fs(vec![]);
    fs.write("/tmp/plain", b"echo hi\n").ok();
    let r = run_full(&fs, &crate::registry(), &["/tmp/plain"], None, LIMIT).await;
    assert!(
        matches!(&r.status, ExitStatus::CannotStart(m) if m.contains("permission denied")),
        "{r:?}"
    );
    fs.chmod("/tmp/plain", 0o755).ok();
    let r = run_full(&fs, &crate::registry(), &["/tmp/plain"], None, LIMIT).await;
    assert!(
        matches!(&r.status, ExitStatus::CannotStart(m) if m.contains("exec format error")),
        "{r:?}"
    );
}

#[tokio::test]
async fn shebang_script_runs_directly_and_through_the_shell() {
    let fs = crate::registry().pod_fs(vec![]);
    fs.write(
        "/usr/local/bin/greet",
        b"#!/bin/sh\necho \"hi $1 from $0\"\n",
    )
    .ok();
    fs.chmod("/usr/local/bin/greet", 0o755).ok();
    let r = run_full(&fs, &crate::registry(), &["greet", "bob"], None, LIMIT).await;
    assert_eq!(
        (r.status, r.stdout.as_str()),
        (ExitStatus::Code(0), "hi bob from /usr/local/bin/greet\n")
    );
    let r = sh_on(&fs, "greet alice | cat").await;
    assert_eq!(r.stdout, "hi alice from /usr/local/bin/greet\n");
}

#[tokio::test]
async fn stat_prints_gnu_format_fields() {
    let fs = crate::registry().pod_fs(vec![]);
    fs.write("/tmp/f", b"hello").ok();
    let mtime = fs.metadata("/tmp/f").map(|m| m.mtime).unwrap_or_default();
    let r = sh_on(
        &fs,
        "stat -c '%s %Y %f %F %n %a' /tmp/f /tmp; stat --printf='%A\\n' /tmp/f",
    )
    .await;
    let want = format!(
        "5 {mtime} 81a4 regular file /tmp/f 644\n4096 {} 43ff directory /tmp 1777\n-rw-r--r--\n",
        { fs.metadata("/tmp").map(|m| m.mtime).unwrap_or_default() }
    );
    assert_eq!((r.status, r.stdout), (ExitStatus::Code(0), want));
    let r = sh_on(&fs, "stat -c %s /nope").await;
    assert_eq!(
        (r.status, r.stderr.as_str()),
        (
            ExitStatus::Code(1),
            "stat: cannot stat '/nope': No such file or directory\n"
        )
    );
}

#[tokio::test]
async fn mkdir_p_creates_nested_directories_and_file_commands_work() {
    check(
        "mkdir -p /w/a/b/c && mkdir -p /w/a/b && echo x > /w/a/b/c/f && ls /w/a/b/c && ls -a /w/a",
        "f\n.\n..\nb\n",
    )
    .await;
    let r = sh("mkdir /w/x/y").await;
    assert_eq!(
        (r.status, r.stderr.as_str()),
        (
            ExitStatus::Code(1),
            "mkdir: cannot create directory '/w/x/y': No such file or directory\n"
        )
    );
    check(
        "cd /tmp && touch a && cp a b && mv b c && ls && rm a c && ls | wc -l",
        "a\nc\n0\n",
    )
    .await;
    check(
        "mkdir -p /d/e && echo hi > /d/e/f && rm -r /d && [ ! -e /d ] && echo gone",
        "gone\n",
    )
    .await;
    check("echo x > /tmp/s && chmod +x /tmp/s && stat -c %a /tmp/s && chmod 600 /tmp/s && stat -c %a /tmp/s", "755\n600\n").await;
    check(
        "dirname /a/b/c; basename /a/b/c.txt .txt; echo abc | wc -c",
        "/a/b\nc\n4\n",
    )
    .await;
    check(
        "printf 'l1\\nl2\\nl3\\n' > /tmp/t; tail -n 2 /tmp/t; head -n 1 /tmp/t",
        "l2\nl3\nl1\n",
    )
    .await;
}

#[tokio::test]
async fn volume_survives_a_new_podfs_while_the_root_does_not() {
    let volume = Volume::new();
    let first = crate::registry().pod_fs(vec![("/workspace".into(), volume.clone())]);
    let r = sh_on(
        &first,
        "echo kept > /workspace/k; echo lost > /tmp/l; mkdir -p /workspace/d",
    )
    .await;
    assert_eq!(r.status, ExitStatus::Code(0));
    let second = crate::registry().pod_fs(vec![("/workspace".into(), volume)]);
    let r = sh_on(&second, "cat /workspace/k; ls /workspace; cat /tmp/l").await;
    assert_eq!(r.stdout, "kept\nd\nk\n");
    assert_eq!(r.stderr, "cat: /tmp/l: No such file or directory\n");
}

#[tokio::test]
async fn environment_and_exports_reach_programs() {
    check(
        "export A=1; B=2 printenv A B; sh -c 'echo $A$B'",
        "1\n2\n1\n",
    )
    .await;
    check("env -i X=y env", "X=y\n").await;
    check(
        "echo $HOME $PATH",
        "/root /usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin\n",
    )
    .await;
    check("hostname; uname -n", "pod-0\npod-0\n").await;
}

#[tokio::test]
async fn large_output_streams_in_bounded_chunks() {
    let r = sh("head -c 10000000 /dev/zero").await;
    assert_eq!(r.status, ExitStatus::Code(0));
    assert_eq!(r.stdout.len(), KEEP);
    let fs = crate::registry().pod_fs(vec![]);
    fs.write("/tmp/big", &vec![b'x'; 3 * CHUNK + 7]).ok();
    let r = sh_on(&fs, "cat /tmp/big").await;
    assert_eq!(r.stdout.len(), 3 * CHUNK + 7);
}

#[tokio::test]
async fn producer_blocked_by_a_full_channel_does_not_run_ahead() {
    let (out_tx, mut out_rx) = mpsc::channel(2);
    let (err_tx, _err_rx) = mpsc::channel(2);
    let cancel = CancellationToken::new();
    let spec = ExecSpec {
        argv: vec!["yes".into()],
        env: vec![],
        cwd: "/".into(),
        fs: crate::registry().pod_fs(vec![]),
        programs: crate::registry(),
        processes: ProcessTable::new(),
        cancel: cancel.clone(),
        network: PodNetwork::new(),
    };
    let task = tokio::spawn(exec(
        spec,
        ExecIo {
            stdin: None,
            stdout: out_tx,
            stderr: err_tx,
            tty: None,
        },
    ));
    tokio::time::sleep(Duration::from_millis(100)).await;
    // Nothing read yet: the channel holds its capacity and the producer waits.
    let mut buffered = 0;
    while out_rx.try_recv().is_ok() {
        buffered += 1;
    }
    assert!(buffered <= 2, "{buffered} chunks buffered");
    // A slow reader gets data at its own pace; then it leaves and `yes` ends with SIGPIPE's code.
    for _ in 0..5 {
        tokio::time::sleep(Duration::from_millis(10)).await;
        let chunk = out_rx.recv().await.unwrap_or_default();
        assert!(!chunk.is_empty() && chunk.len() <= CHUNK);
    }
    drop(out_rx);
    let status = tokio::time::timeout(LIMIT, task)
        .await
        .ok()
        .and_then(Result::ok);
    assert_eq!(status, Some(ExitStatus::Code(141)));
}

#[tokio::test]
async fn cancellation_kills_sleeps_loops_and_background_jobs() {
    let programs = crate::registry();
    let dropped = Arc::new(AtomicBool::new(false));
    let flag = dropped.clone();
    programs.register("blocker", move |_proc| {
        let guard = DropFlag(flag.clone());
        async move {
            let _guard = guard;
            std::future::pending::<()>().await;
            0
        }
    });
    let fs = crate::registry().pod_fs(vec![]);
    for script in [
        "sleep 1000",
        "while true; do sleep 3600; done",
        "trap 'exit 0' TERM; sleep infinity & wait",
        "while :; do :; done",
        "blocker & wait",
    ] {
        // None of these ends by itself: only the cancellation at 50 ms can end the run.
        let r = tokio::time::timeout(
            LIMIT,
            run_full(
                &fs,
                &programs,
                &["sh", "-c", script],
                None,
                Duration::from_millis(50),
            ),
        )
        .await
        .unwrap_or_else(|_| panic!("{script} kept running after its cancellation"));
        assert_eq!(r.status, ExitStatus::Killed, "{script}");
    }
    let deadline = tokio::time::Instant::now() + LIMIT;
    while !dropped.load(Ordering::SeqCst) && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(
        dropped.load(Ordering::SeqCst),
        "background job kept running after cancel"
    );
}

/// Sets a flag when dropped.
struct DropFlag(Arc<AtomicBool>);

impl Drop for DropFlag {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

#[tokio::test]
async fn registered_handler_runs_from_the_shell_and_directly() {
    let programs = crate::registry();
    let calls = Arc::new(AtomicUsize::new(0));
    let counter = calls.clone();
    programs.register("greet", move |proc: Process| {
        counter.fetch_add(1, Ordering::SeqCst);
        async move {
            let input = proc.stdin.read_to_end(1024).await;
            let msg = format!(
                "hello {} [{}]\n",
                proc.args().join(","),
                String::from_utf8_lossy(&input)
            );
            let _ = proc.out(msg).await;
            7
        }
    });
    let fs = crate::registry().pod_fs(vec![]);
    let r = run_full(&fs, &programs, &["greet", "a", "b"], Some(b"in"), LIMIT).await;
    assert_eq!(
        (r.status, r.stdout.as_str()),
        (ExitStatus::Code(7), "hello a,b [in]\n")
    );
    let r = run_full(
        &fs,
        &programs,
        &["sh", "-c", "echo piped | greet x; echo $?"],
        None,
        LIMIT,
    )
    .await;
    assert_eq!(r.stdout, "hello x [piped\n]\n7\n");
    assert_eq!(calls.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn stdin_reaches_the_command_and_end_of_input_ends_cat() {
    let fs = crate::registry().pod_fs(vec![]);
    let r = run_full(
        &fs,
        &crate::registry(),
        &["sh", "-c", "cat > /tmp/in; wc -c < /tmp/in"],
        Some(b"12345"),
        LIMIT,
    )
    .await;
    assert_eq!((r.status, r.stdout.as_str()), (ExitStatus::Code(0), "5\n"));
    let r = run_full(&fs, &crate::registry(), &["cat"], None, LIMIT).await;
    assert_eq!((r.status, r.stdout.as_str()), (ExitStatus::Code(0), ""));
}

#[tokio::test]
async fn recursion_and_nesting_are_limited_instead_of_crashing() {
    let r = sh("f() { f; }; f").await;
    assert_eq!(r.status, ExitStatus::Code(2));
    assert!(r.stderr.contains("nesting too deep"), "{r:?}");
    let fs = crate::registry().pod_fs(vec![]);
    fs.write("/tmp/self", b"#!/bin/sh\n/tmp/self\n").ok();
    fs.chmod("/tmp/self", 0o755).ok();
    let r = sh_on(&fs, "/tmp/self").await;
    assert_ne!(r.status, ExitStatus::Code(0));
    let deep = format!("{}echo deep{}", "(".repeat(20), ")".repeat(20));
    check(&deep, "deep\n").await;
    let deep = format!("{}echo braces{}", "{ ".repeat(45), "; }".repeat(45));
    check(&deep, "braces\n").await;
    let deep = format!("echo {}x{}", "$(echo ".repeat(20), ")".repeat(20));
    check(&deep, "x\n").await;
    let deep = format!("echo {}x{}", "${u:-".repeat(20), "}".repeat(20));
    check(&deep, "x\n").await;
    check(r#"sh -c "sh -c \"sh -c 'echo nested'\"""#, "nested\n").await;
    let r = sh(&format!("{}x{}", "f() { ".repeat(30), " ; }".repeat(30))).await;
    assert_ne!(r.status, ExitStatus::Killed);
}

#[tokio::test]
async fn glob_expands_matching_paths_sorted() {
    check(
        "mkdir /g; touch /g/b.txt /g/a.txt /g/c.md /g/.h.txt; echo /g/*.txt; echo /g/*.none; cd /g && echo *.md '*'.md",
        "/g/a.txt /g/b.txt\n/g/*.none\nc.md *.md\n",
    )
    .await;
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]

    #[test]
    fn sh_c_with_arbitrary_input_never_panics(script in "[ -~\n]{0,80}") {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build();
        let Ok(rt) = rt else { return Ok(()) };
        let r = rt.block_on(run_full(
            &crate::registry().pod_fs(vec![]),
            &crate::registry(),
            &["sh", "-c", &script],
            None,
            Duration::from_millis(100),
        ));
        proptest::prop_assert!(matches!(r.status, ExitStatus::Code(_) | ExitStatus::Killed));
    }

    #[test]
    fn sh_c_with_shell_like_input_never_panics(script in "(echo|cat|x|\\$\\(|\\)|\\$\\{|\\}|'|\"|\\||&&|;|>|<|\\*| |a|1|\n|for|do|done|if|then|fi|case|esac|in|\\(|sleep 0|yes|head|-c|-n|\\$\\(\\(|\\)\\)|=|%|#|\\\\){0,30}") {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build();
        let Ok(rt) = rt else { return Ok(()) };
        let r = rt.block_on(run_full(
            &crate::registry().pod_fs(vec![]),
            &crate::registry(),
            &["sh", "-c", &script],
            None,
            Duration::from_millis(100),
        ));
        proptest::prop_assert!(matches!(r.status, ExitStatus::Code(_) | ExitStatus::Killed));
    }
}
