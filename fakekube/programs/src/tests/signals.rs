//! The process table seen from the shell: `ps`, `kill`, `$$`, `$!`, `wait` and `trap`.

use super::*;

#[tokio::test]
async fn ps_lists_the_shell_its_jobs_and_itself_in_busybox_format() {
    let r = sh("sleep 30 & ps; kill $!").await;
    assert_eq!(r.status, ExitStatus::Code(0), "{r:?}");
    let lines: Vec<&str> = r.stdout.lines().collect();
    assert_eq!(lines[0], "PID   USER     TIME  COMMAND");
    assert_eq!(
        lines[1],
        "    1 root      0:00 sh -c sleep 30 & ps; kill $!"
    );
    assert_eq!(
        lines[2], "    2 root      0:00 sh",
        "the job, a forked shell"
    );
    assert!(lines.iter().any(|l| l.ends_with(" 0:00 ps")), "{lines:?}");
    let r = sh("ps -o pid,ppid,comm").await;
    assert_eq!(
        r.stdout,
        "PID   PPID  COMMAND\n    1     0 sh\n    2     1 ps\n"
    );
}

#[tokio::test]
async fn kill_terminates_a_job_and_wait_reports_128_plus_the_signal() {
    check("sleep 30 & kill $!; wait $!; echo $?", "143\n").await;
    check("sleep 30 & kill -9 $!; wait $!; echo $?", "137\n").await;
    check("sleep 30 & kill -s INT %1; wait; echo done", "done\n").await;
    check("echo $$; (echo $$)", "1\n1\n").await;
}

#[tokio::test]
async fn kill_words_its_errors_as_busybox() {
    let r = sh("kill 999").await;
    assert_eq!(r.status, ExitStatus::Code(1));
    assert_eq!(r.stderr, "kill: can't kill pid 999: No such process\n");
    let r = sh("kill -FOO 1").await;
    assert_eq!(r.stderr, "kill: bad signal name 'FOO'\n");
    check(
        "kill -l 15; kill -l KILL; kill -0 $$ && echo alive",
        "TERM\n9\nalive\n",
    )
    .await;
    let r = sh("kill -l").await;
    assert!(r.stdout.starts_with(" 1) HUP\n 2) INT\n"), "{r:?}");
}

#[tokio::test]
async fn a_trapped_signal_runs_its_handler_and_interrupts_wait() {
    let r =
        sh("trap 'echo got TERM; kill $job; exit 3' TERM; sleep 30 & job=$!; kill $$ & wait").await;
    assert_eq!(
        (r.status, r.stdout.as_str()),
        (ExitStatus::Code(3), "got TERM\n")
    );
    check(
        "trap 'echo term' TERM; kill $$; echo after; trap '' TERM; kill $$; echo ignored",
        "term\nafter\nignored\n",
    )
    .await;
}

#[tokio::test]
async fn pid_1_ignores_untrapped_signals_from_inside_the_container() {
    check("kill $$; kill -9 $$; echo still here", "still here\n").await;
    let r = sh("sh -c 'kill $$; sleep 5; echo not reached'; echo $?").await;
    assert_eq!(r.stdout, "143\n");
}

#[tokio::test]
async fn a_signal_from_outside_reaches_the_main_process() {
    let table = ProcessTable::new();
    let programs = crate::registry();
    let (out_tx, out_rx) = mpsc::channel(8);
    let (err_tx, _err_rx) = mpsc::channel(8);
    let spec = ExecSpec {
        network: Default::default(),
        argv: [
            "sh",
            "-c",
            "trap 'echo bye; kill $!; exit 0' TERM; echo ready; sleep 30 & wait",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect(),
        env: vec![],
        cwd: "/".into(),
        fs: programs.pod_fs(vec![]),
        programs,
        processes: table.clone(),
        cancel: CancellationToken::new(),
    };
    let io = ExecIo {
        stdin: None,
        stdout: out_tx,
        stderr: err_tx,
        tty: None,
    };
    let task = tokio::spawn(exec(spec, io));
    let mut out_rx = out_rx;
    assert_eq!(out_rx.recv().await.as_deref(), Some(&b"ready\n"[..]));
    assert_eq!(table.signal_main(Signal::Term), Ok(()));
    assert_eq!(collect(out_rx).await, "bye\n");
    assert_eq!(task.await.ok(), Some(ExitStatus::Code(0)));

    let table = ProcessTable::new();
    let programs = crate::registry();
    let (out_tx, _out_rx) = mpsc::channel(8);
    let (err_tx, _err_rx) = mpsc::channel(8);
    let spec = ExecSpec {
        network: Default::default(),
        argv: vec!["sleep".into(), "30".into()],
        env: vec![],
        cwd: "/".into(),
        fs: programs.pod_fs(vec![]),
        programs,
        processes: table.clone(),
        cancel: CancellationToken::new(),
    };
    let io = ExecIo {
        stdin: None,
        stdout: out_tx,
        stderr: err_tx,
        tty: None,
    };
    let task = tokio::spawn(exec(spec, io));
    while table.list().is_empty() {
        tokio::task::yield_now().await;
    }
    assert_eq!(table.signal_main(Signal::Kill), Ok(()));
    assert_eq!(task.await.ok(), Some(ExitStatus::Code(137)));
    assert!(table.list().is_empty());
}

#[tokio::test]
async fn an_exec_session_ends_while_a_job_with_redirected_streams_runs_on() {
    let programs = crate::registry();
    let processes = ProcessTable::new();
    let (out_tx, out_rx) = mpsc::channel(8);
    let (err_tx, err_rx) = mpsc::channel(8);
    let spec = ExecSpec {
        argv: vec![
            "sh".into(),
            "-c".into(),
            "sleep infinity >/dev/null 2>&1 </dev/null & echo started".into(),
        ],
        env: vec![],
        cwd: "/".into(),
        fs: programs.pod_fs(vec![]),
        programs: programs.clone(),
        processes: processes.clone(),
        cancel: CancellationToken::new(),
        network: PodNetwork::new(),
    };
    let io = ExecIo {
        stdin: None,
        stdout: out_tx,
        stderr: err_tx,
        tty: None,
    };
    // The job never ends: a session that waited for it would hang until this guard.
    let (status, stdout, _) = tokio::time::timeout(Duration::from_secs(60), async {
        tokio::join!(exec_session(spec, io), collect(out_rx), collect(err_rx))
    })
    .await
    .expect("the session ends though its job runs on");
    assert_eq!(status, ExitStatus::Code(0));
    assert_eq!(stdout, "started\n");
    let sleeping = processes
        .list()
        .iter()
        .any(|p| p.argv.first().map(String::as_str) == Some("sleep"));
    assert!(sleeping, "{:?}", processes.list());
}
