//! Execs on a terminal (`tty=true`): prompt, echo, line editing, `^C`, `^D`, `stty`, `tty`.

use tokio::sync::watch;

use super::*;

/// How long a test waits for output it expects before failing (a hang guard, not a timing).
const PATIENCE: Duration = Duration::from_secs(60);

/// A process on a terminal, driven keystroke by keystroke.
struct Tty {
    /// What the client types.
    keys: Option<mpsc::Sender<Bytes>>,
    /// What the terminal shows.
    screen: mpsc::Receiver<Bytes>,
    /// Shown but not yet matched.
    seen: String,
    /// The window size the client reports.
    size: watch::Sender<WindowSize>,
    /// The exec.
    task: tokio::task::JoinHandle<ExitStatus>,
    /// The container's main process (pid 1): the exec is another process of the container.
    _main: fakekube_runtime::process::Slot,
}

impl Tty {
    /// Starts `argv` on a 40x120 terminal, as an exec in a container whose main process runs.
    fn start(argv: &[&str]) -> Tty {
        let programs = crate::registry();
        let processes = ProcessTable::new();
        let main = processes
            .start(0, vec!["sleep".into()], &CancellationToken::new())
            .expect("a fresh table has room for pid 1");
        let (keys_tx, keys_rx) = mpsc::channel(4);
        let (out_tx, out_rx) = mpsc::channel(8);
        let (err_tx, _) = mpsc::channel(1);
        let (size_tx, size_rx) = watch::channel(WindowSize {
            rows: 40,
            cols: 120,
        });
        let spec = ExecSpec {
            network: Default::default(),
            argv: argv.iter().map(|s| s.to_string()).collect(),
            env: vec![],
            cwd: "/".into(),
            fs: programs.pod_fs(vec![]),
            programs,
            processes,
            cancel: CancellationToken::new(),
        };
        let io = ExecIo {
            stdin: Some(keys_rx),
            stdout: out_tx,
            stderr: err_tx,
            tty: Some(size_rx),
        };
        Tty {
            keys: Some(keys_tx),
            screen: out_rx,
            seen: String::new(),
            size: size_tx,
            task: tokio::spawn(exec(spec, io)),
            _main: main,
        }
    }

    /// Types `keys`.
    async fn press(&self, keys: &str) {
        let tx = self.keys.as_ref().expect("typing");
        tx.send(Bytes::copy_from_slice(keys.as_bytes()))
            .await
            .expect("the terminal reads");
    }

    /// Reads the screen until it shows `want`; returns what it showed up to the end of it.
    async fn expect(&mut self, want: &str) -> String {
        let found = tokio::time::timeout(PATIENCE, async {
            loop {
                if let Some(at) = self.seen.find(want) {
                    let rest = self.seen.split_off(at + want.len());
                    return Some(std::mem::replace(&mut self.seen, rest));
                }
                let chunk = self.screen.recv().await?;
                self.seen.push_str(&String::from_utf8_lossy(&chunk));
            }
        })
        .await;
        match found {
            Ok(Some(text)) => text,
            Ok(None) => panic!(
                "the terminal closed before {want:?}; showed {:?}",
                self.seen
            ),
            Err(_) => panic!("no {want:?}; the terminal showed {:?}", self.seen),
        }
    }

    /// Waits for the process to end.
    async fn status(&mut self) -> ExitStatus {
        tokio::time::timeout(PATIENCE, &mut self.task)
            .await
            .expect("the process ends")
            .expect("no panic")
    }
}

#[tokio::test]
async fn an_interactive_shell_prompts_echoes_and_answers_each_line() {
    let mut t = Tty::start(&["sh"]);
    t.expect("# ").await;
    t.press("echo hi\r").await;
    assert_eq!(t.expect("# ").await, "echo hi\r\nhi\r\n# ");
    t.press("echo  oops >&2\r").await;
    assert_eq!(t.expect("# ").await, "echo  oops >&2\r\noops\r\n# ");
    t.press("for i in 1 2\r").await;
    assert_eq!(t.expect("> ").await, "for i in 1 2\r\n> ");
    t.press("do echo $i; done\r").await;
    assert_eq!(t.expect("# ").await, "do echo $i; done\r\n1\r\n2\r\n# ");
    t.press("exit 4\r").await;
    assert_eq!(t.status().await, ExitStatus::Code(4));
}

#[tokio::test]
async fn ctrl_c_interrupts_the_foreground_command_and_the_shell_prompts_again() {
    let mut t = Tty::start(&["sh"]);
    t.expect("# ").await;
    t.press("sleep 30\r").await;
    t.expect("sleep 30\r\n").await;
    t.press("\x03").await;
    assert_eq!(t.expect("# ").await, "^C\r\n# ");
    t.press("echo $?\r").await;
    assert_eq!(t.expect("# ").await, "echo $?\r\n130\r\n# ");
    t.press("half typed\x03").await;
    assert_eq!(t.expect("# ").await, "half typed^C\r\n# ");
    t.press("while :; do :; done\r").await;
    t.expect("done\r\n").await;
    t.press("\x03").await;
    t.expect("^C\r\n# ").await;
    t.press("\x04").await;
    assert_eq!(t.status().await, ExitStatus::Code(130));
}

#[tokio::test]
async fn ctrl_d_ends_cat_then_the_shell_and_backspace_edits_the_line() {
    let mut t = Tty::start(&["sh"]);
    t.expect("# ").await;
    t.press("cat\r").await;
    t.expect("cat\r\n").await;
    t.press("line\r").await;
    assert_eq!(t.expect("line\r\nline\r\n").await, "line\r\nline\r\n");
    t.press("\x04").await;
    t.expect("# ").await;
    t.press("echo abx\x7fc\r").await;
    assert_eq!(t.expect("# ").await, "echo abx\x08 \x08c\r\nabc\r\n# ");
    t.press("\x04").await;
    assert_eq!(t.status().await, ExitStatus::Code(0));
    drop(t.keys.take());
}

#[tokio::test]
async fn stty_size_follows_resizes_and_tty_names_the_terminal() {
    let mut t = Tty::start(&["sh"]);
    t.expect("# ").await;
    t.press("stty size; tty\r").await;
    assert_eq!(
        t.expect("# ").await,
        "stty size; tty\r\n40 120\r\n/dev/pts/0\r\n# "
    );
    t.size.send_replace(WindowSize {
        rows: 50,
        cols: 200,
    });
    t.press("stty size\r").await;
    assert_eq!(t.expect("# ").await, "stty size\r\n50 200\r\n# ");
    t.press("stty -echo\r").await;
    t.expect("# ").await;
    t.press("echo silent\r").await;
    assert_eq!(t.expect("# ").await, "silent\r\n# ");
    t.press("exit\r").await;
    assert_eq!(t.status().await, ExitStatus::Code(0));
    let r = run(&["tty"]).await;
    assert_eq!(
        (r.status, r.stdout.as_str()),
        (ExitStatus::Code(1), "not a tty\n")
    );
}

#[tokio::test]
async fn ctrl_c_on_a_program_without_a_shell_ends_it_with_130() {
    let mut t = Tty::start(&["sleep", "30"]);
    t.press("\x03").await;
    assert_eq!(t.expect("^C").await, "^C");
    assert_eq!(t.status().await, ExitStatus::Code(130));
    let mut t = Tty::start(&["sh", "-c", "read x; echo \"[$x]\""]);
    t.press("typed\r").await;
    assert_eq!(t.expect("]\r\n").await, "typed\r\n[typed]\r\n");
    assert_eq!(t.status().await, ExitStatus::Code(0));
}

#[tokio::test]
async fn ctrl_c_drops_input_typed_ahead_and_not_yet_read() {
    let mut t = Tty::start(&["sh"]);
    t.expect("# ").await;
    t.press("sleep 30\recho gone\r\x03").await;
    assert_eq!(
        t.expect("^C\r\n# ").await,
        "sleep 30\r\necho gone\r\n^C\r\n# ",
        "neither line runs"
    );
    t.press("echo $?\r").await;
    assert_eq!(t.expect("# ").await, "echo $?\r\n130\r\n# ");
    t.press("exit\r").await;
    assert_eq!(t.status().await, ExitStatus::Code(0));
}

#[tokio::test]
async fn awk_on_a_terminal_shows_each_line_before_it_reads_the_next() {
    let mut t = Tty::start(&["awk", "{ print \"got \" $1 }"]);
    t.press("one\r").await;
    t.expect("one\r\ngot one\r\n").await;
    t.press("two\r").await;
    t.expect("two\r\ngot two\r\n").await;
    t.press("\x04").await;
    assert_eq!(t.status().await, ExitStatus::Code(0));
    drop(t.keys.take());
}
