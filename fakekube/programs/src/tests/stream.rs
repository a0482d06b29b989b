//! A shell reading its script from standard input: each command runs as soon as it is
//! complete, commands reading the same input take what the shell has not read, `exit` ends the
//! session at once; and any split of the input gives the same result as the whole.

use std::time::Duration;

use bytes::Bytes;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use fakekube_runtime::{ExecIo, ExecSpec, ExitStatus, ProcessTable, exec};

/// How long a test waits for output it expects before failing (a hang guard, not a timing).
const PATIENCE: Duration = Duration::from_secs(60);

/// A shell process driven one write at a time.
struct Session {
    /// Its standard input (`None` once closed).
    stdin: Option<mpsc::Sender<Bytes>>,
    /// Its standard output.
    stdout: mpsc::Receiver<Bytes>,
    /// Its standard error.
    stderr: mpsc::Receiver<Bytes>,
    /// Output read but not yet matched.
    seen: String,
    /// The exec.
    task: JoinHandle<ExitStatus>,
}

impl Session {
    /// Starts `argv` with a streamed stdin.
    fn start(argv: &[&str]) -> Session {
        let programs = crate::registry();
        let (in_tx, in_rx) = mpsc::channel(4);
        let (out_tx, out_rx) = mpsc::channel(8);
        let (err_tx, err_rx) = mpsc::channel(8);
        let spec = ExecSpec {
            network: Default::default(),
            argv: argv.iter().map(|s| s.to_string()).collect(),
            env: vec![],
            cwd: "/".into(),
            fs: programs.pod_fs(vec![]),
            programs,
            processes: ProcessTable::new(),
            cancel: Default::default(),
        };
        let io = ExecIo {
            stdin: Some(in_rx),
            stdout: out_tx,
            stderr: err_tx,
            tty: None,
        };
        Session {
            stdin: Some(in_tx),
            stdout: out_rx,
            stderr: err_rx,
            seen: String::new(),
            task: tokio::spawn(exec(spec, io)),
        }
    }

    /// Writes to the process's stdin.
    async fn send(&mut self, text: &str) {
        let tx = self.stdin.as_ref().expect("stdin is open");
        tx.send(Bytes::copy_from_slice(text.as_bytes()))
            .await
            .expect("the process reads its stdin");
    }

    /// Reads stdout until it holds `want`; returns everything read up to the end of it.
    async fn expect(&mut self, want: &str) -> String {
        let found = tokio::time::timeout(PATIENCE, async {
            loop {
                if let Some(at) = self.seen.find(want) {
                    let rest = self.seen.split_off(at + want.len());
                    return Some(std::mem::replace(&mut self.seen, rest));
                }
                let chunk = self.stdout.recv().await?;
                self.seen.push_str(&String::from_utf8_lossy(&chunk));
            }
        })
        .await;
        match found {
            Ok(Some(text)) => text,
            Ok(None) => panic!("stdout ended before {want:?}; read {:?}", self.seen),
            Err(_) => panic!("no {want:?} on stdout; read {:?}", self.seen),
        }
    }

    /// Waits for the process to end; returns its status and the rest of stdout and stderr.
    async fn end(self) -> (ExitStatus, String, String) {
        let Session {
            mut stdout,
            mut stderr,
            seen,
            task,
            ..
        } = self;
        let ended = tokio::time::timeout(PATIENCE, async move {
            let out = async {
                let mut out = seen;
                while let Some(chunk) = stdout.recv().await {
                    out.push_str(&String::from_utf8_lossy(&chunk));
                }
                out
            };
            let err = async {
                let mut err = String::new();
                while let Some(chunk) = stderr.recv().await {
                    err.push_str(&String::from_utf8_lossy(&chunk));
                }
                err
            };
            tokio::join!(task, out, err)
        })
        .await;
        let (status, out, err) = ended.expect("the process ends and closes its output");
        (status.expect("the exec task does not panic"), out, err)
    }
}

#[tokio::test]
async fn each_command_is_answered_before_the_next_is_written() {
    let mut s = Session::start(&["sh"]);
    s.send("echo one\n").await;
    assert_eq!(s.expect("one\n").await, "one\n");
    s.send("x=2; echo \"two $x\"\n").await;
    assert_eq!(s.expect("two 2\n").await, "two 2\n");
    s.send("pwd\n").await;
    s.expect("/\n").await;
    s.send("exit 4\n").await;
    let (status, out, err) = s.end().await;
    assert_eq!(
        (status, out.as_str(), err.as_str()),
        (ExitStatus::Code(4), "", "")
    );
}

#[tokio::test]
async fn exit_ends_the_session_while_stdin_is_still_open() {
    for argv in [&["sh"][..], &["sh", "-s"], &["/bin/sh", "-s", "--", "a"]] {
        let mut s = Session::start(argv);
        s.send("echo ready; exit 7\necho never\n").await;
        let (status, out, _) = s.end().await;
        assert_eq!(
            (status, out.as_str()),
            (ExitStatus::Code(7), "ready\n"),
            "{argv:?}"
        );
    }
}

#[tokio::test]
async fn a_compound_command_runs_once_it_is_closed() {
    let mut s = Session::start(&["sh"]);
    s.send("for i in 1 2; do\n").await;
    s.send("echo \"i=$i\"\n").await;
    s.send("done\n").await;
    assert_eq!(s.expect("i=2\n").await, "i=1\ni=2\n");
    s.send("if true\nthen echo yes\nfi\n").await;
    s.expect("yes\n").await;
    s.send("cat <<EOF\nbody $((1+1))\nEOF\n").await;
    s.expect("body 2\n").await;
    s.send("echo a &&\necho b\n").await;
    s.expect("a\nb\n").await;
    drop(s.stdin.take());
    let (status, _, _) = s.end().await;
    assert_eq!(status, ExitStatus::Code(0));
}

#[tokio::test]
async fn commands_reading_stdin_take_what_the_shell_has_not_read() {
    let mut s = Session::start(&["sh"]);
    s.send("read a\nfirst line\necho \"a=$a\"\n").await;
    s.expect("a=first line\n").await;
    s.send("head -n 1\nfor head\necho after\n").await;
    assert_eq!(s.expect("after\n").await, "for head\nafter\n");
    s.send("while read l; do echo \"<$l>\"; [ \"$l\" = stop ] && break; done\n")
        .await;
    s.send("x\nstop\necho out\n").await;
    assert_eq!(s.expect("out\n").await, "<x>\n<stop>\nout\n");
    s.send("cat\nto cat\n").await;
    s.expect("to cat\n").await;
    drop(s.stdin.take());
    let (status, _, _) = s.end().await;
    assert_eq!(status, ExitStatus::Code(0));
}

#[tokio::test]
async fn a_syntax_error_stops_a_non_interactive_shell_with_2_after_earlier_commands() {
    let mut s = Session::start(&["sh"]);
    s.send("echo before\necho a; done\necho after\n").await;
    let (status, out, err) = s.end().await;
    assert_eq!((status, out.as_str()), (ExitStatus::Code(2), "before\n"));
    assert_eq!(err, "sh: syntax error: unexpected \"done\"\n");
}

#[tokio::test]
async fn an_interactive_shell_prompts_reports_errors_and_goes_on() {
    let mut s = Session::start(&["sh", "-i"]);
    s.send("echo a; done\n").await;
    s.send("echo ok\n").await;
    s.expect("ok\n").await;
    drop(s.stdin.take());
    let (status, _, err) = s.end().await;
    assert_eq!(status, ExitStatus::Code(0));
    assert_eq!(
        err, "# sh: syntax error: unexpected \"done\"\n# # \n",
        "prompts, the error, and a newline at end of input"
    );
}

#[tokio::test]
async fn end_of_input_inside_a_command_is_a_syntax_error() {
    let mut s = Session::start(&["sh"]);
    s.send("echo start\nif true; then\n").await;
    drop(s.stdin.take());
    let (status, out, err) = s.end().await;
    assert_eq!((status, out.as_str()), (ExitStatus::Code(2), "start\n"));
    assert_eq!(
        err,
        "sh: syntax error: unexpected end of file (expecting \"fi\")\n"
    );
}

/// Runs `script` as `sh -c` and as `sh` fed in the given pieces; both must agree.
async fn same_both_ways(script: String, cuts: Vec<usize>) {
    let whole = {
        let s = Session::start(&["sh", "-c", &script]);
        s.end().await
    };
    let mut s = Session::start(&["sh"]);
    let bytes = script.as_bytes();
    let mut at = 0;
    let mut points: Vec<usize> = cuts.into_iter().map(|c| c % (bytes.len() + 1)).collect();
    points.sort_unstable();
    points.push(bytes.len());
    let tx = s.stdin.take().expect("stdin");
    let feeder = tokio::spawn({
        let data = Bytes::copy_from_slice(bytes);
        async move {
            for p in points {
                if p > at {
                    let _ = tx.send(data.slice(at..p)).await;
                    at = p;
                }
            }
        }
    });
    let streamed = s.end().await;
    let _ = feeder.await;
    assert_eq!(whole, streamed, "script {script:?}");
}

/// A line of a generated script.
fn script_line() -> impl proptest::strategy::Strategy<Value = String> {
    proptest::prop_oneof![
        proptest::strategy::Just("echo plain".to_string()),
        proptest::strategy::Just("x=$((x+1)); echo \"x=$x\"".to_string()),
        proptest::strategy::Just("for i in a b; do\necho $i\ndone".to_string()),
        proptest::strategy::Just(
            "if [ -n \"$x\" ]\nthen echo set\nelse echo unset\nfi".to_string()
        ),
        proptest::strategy::Just("cat <<EOF\nhere $x\nEOF".to_string()),
        proptest::strategy::Just("f() {\necho \"f $1\"\n}; f call".to_string()),
        proptest::strategy::Just("echo 'multi\nline' |\nwc -l".to_string()),
        proptest::strategy::Just("echo err >&2; false || echo recovered".to_string()),
        proptest::strategy::Just("case $x in\n1) echo one;;\n*) echo other;;\nesac".to_string()),
        proptest::strategy::Just("# a comment".to_string()),
        proptest::strategy::Just(String::new()),
    ]
}

proptest::proptest! {
    #![proptest_config(proptest::test_runner::Config::with_cases(48))]
    #[test]
    fn any_split_of_a_script_gives_the_same_result_as_the_whole(
        lines in proptest::collection::vec(script_line(), 1..8),
        cuts in proptest::collection::vec(0usize..4096, 0..6),
        last_newline in proptest::bool::ANY,
    ) {
        let mut script = lines.join("\n");
        if last_newline {
            script.push('\n');
        }
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        rt.block_on(same_both_ways(script, cuts));
    }
}
