//! The container's limits: processes, memory, shell steps, and the storage budget of its filesystem.

use super::*;

/// Runs `script` with `sh -c` through [`exec_session`] in a container with `limits`, on `fs`;
/// returns the status and stderr.
async fn session(limits: Limits, fs: &PodFs, programs: &Programs, script: &str) -> Run {
    let (out_tx, out_rx) = mpsc::channel(8);
    let (err_tx, err_rx) = mpsc::channel(8);
    let spec = ExecSpec {
        argv: vec!["sh".into(), "-c".into(), script.into()],
        env: vec![],
        cwd: "/".into(),
        fs: fs.clone(),
        programs: programs.clone(),
        processes: ProcessTable::with_limits(limits),
        cancel: CancellationToken::new(),
        network: PodNetwork::new(),
    };
    let io = ExecIo {
        stdin: None,
        stdout: out_tx,
        stderr: err_tx,
        tty: None,
    };
    let (status, stdout, stderr) =
        tokio::join!(exec_session(spec, io), collect(out_rx), collect(err_rx));
    Run {
        status,
        stdout,
        stderr,
    }
}

#[tokio::test]
async fn a_fork_bomb_stops_at_the_process_limit_and_its_exec_fails_with_137() {
    let programs = crate::registry();
    let fs = programs.pod_fs(vec![]);
    let limits = Limits {
        processes: 64,
        memory: None,
        ..Limits::default()
    };
    let run = tokio::time::timeout(
        Duration::from_secs(60),
        session(limits, &fs, &programs, "f(){ f|f& }; f"),
    )
    .await
    .expect("the bomb is stopped");
    assert_eq!(run.status, ExitStatus::Code(137), "{run:?}");
}

#[tokio::test]
async fn a_shell_whose_variables_pass_the_memory_limit_is_killed_with_137() {
    let programs = crate::registry();
    let fs = programs.pod_fs(vec![]);
    let limits = Limits {
        processes: 64,
        memory: Some(4 << 20),
        ..Limits::default()
    };
    let script = "x=$(head -c 8388608 /dev/zero | tr '\\0' a); echo survived";
    let run = session(limits, &fs, &programs, script).await;
    assert_eq!(run.status, ExitStatus::Code(137), "{run:?}");
    assert!(!run.stdout.contains("survived"));
    let small = session(
        limits,
        &fs,
        &programs,
        "x=$(head -c 1000 /dev/zero | tr '\\0' a); echo ${#x}",
    )
    .await;
    assert_eq!(
        (small.status, small.stdout.as_str()),
        (ExitStatus::Code(0), "1000\n")
    );
}

#[tokio::test]
async fn nesting_past_the_limit_fails_with_a_non_zero_status() {
    let programs = crate::registry();
    let fs = programs.pod_fs(vec![]);
    let run = session(Limits::default(), &fs, &programs, "f(){ f; }; f").await;
    assert_eq!(run.status, ExitStatus::Code(2), "{run:?}");
    assert!(run.stderr.contains("nesting too deep"), "{}", run.stderr);
}

#[tokio::test]
async fn writes_past_the_storage_budget_fail_with_enospc_and_deleting_gives_it_back() {
    let programs = crate::registry();
    let budget = StorageBudget::new(3 << 20);
    programs.set_storage_budget(budget.clone());
    let a = programs.pod_fs(vec![]);
    let image = budget.used();
    let b = programs.pod_fs(vec![]);
    let write = "head -c 2097152 /dev/zero > /big && echo ok";
    let first = session(Limits::default(), &a, &programs, write).await;
    assert_eq!(first.stdout, "ok\n", "{first:?}");
    let second = session(Limits::default(), &b, &programs, write).await;
    assert_ne!(second.status, ExitStatus::Code(0));
    assert!(
        second.stderr.contains("No space left on device"),
        "{second:?}"
    );
    assert!(budget.used() <= budget.limit());
    let rm = session(Limits::default(), &a, &programs, "rm /big").await;
    assert_eq!(rm.status, ExitStatus::Code(0));
    drop(b);
    assert_eq!(budget.used(), image);
    drop(a);
    assert_eq!(budget.used(), 0);
}

#[tokio::test]
async fn passing_the_ephemeral_limit_fires_the_pods_token_without_refusing_the_write() {
    let programs = crate::registry();
    let fs = programs.pod_fs(vec![]);
    let exceeded = fs.set_ephemeral_limit(fs.ephemeral_bytes() + 1000);
    let run = session(
        Limits::default(),
        &fs,
        &programs,
        "head -c 2000 /dev/zero > /f && echo ok",
    )
    .await;
    assert_eq!(run.stdout, "ok\n");
    assert!(exceeded.is_cancelled());
}

#[tokio::test]
async fn a_volume_is_charged_to_the_budget_and_keeps_its_charge_across_pods() {
    let programs = crate::registry();
    let budget = StorageBudget::new(64 << 20);
    programs.set_storage_budget(budget.clone());
    let volume = Volume::new();
    let fs = programs.pod_fs(vec![("/data".into(), volume.clone())]);
    let image = budget.used();
    fs.write("/data/x", &[7u8; 5000]).expect("write");
    assert_eq!(budget.used(), image + 5000);
    drop(fs);
    assert_eq!(budget.used(), 5000);
    drop(volume);
    assert_eq!(budget.used(), 0);
}

/// Limits with room for every process and `steps` shell steps.
fn steps(steps: u64) -> Limits {
    Limits {
        steps,
        ..Limits::default()
    }
}

#[tokio::test]
async fn an_endless_loop_stops_at_the_step_limit_with_152_and_says_why() {
    let programs = crate::registry();
    let fs = programs.pod_fs(vec![]);
    let run = session(
        steps(1000),
        &fs,
        &programs,
        "while :; do :; done; echo after",
    )
    .await;
    assert_eq!(run.status, ExitStatus::Code(STEP_LIMIT_STATUS), "{run:?}");
    assert_eq!(STEP_LIMIT_STATUS, 152);
    assert!(
        run.stderr.contains("CPU time limit exceeded (1000 steps)"),
        "{run:?}"
    );
    assert!(!run.stdout.contains("after"), "{run:?}");
}

#[tokio::test]
async fn a_script_within_its_steps_runs_to_the_end() {
    let programs = crate::registry();
    let fs = programs.pod_fs(vec![]);
    // 100 iterations of two commands (the test and the body) and a few more.
    let script = "i=0; while [ $i -lt 100 ]; do i=$((i+1)); done; echo $i";
    let run = session(steps(250), &fs, &programs, script).await;
    assert_eq!(run.status, ExitStatus::Code(0), "{run:?}");
    assert_eq!(run.stdout, "100\n");
    let short = session(steps(150), &fs, &programs, script).await;
    assert_eq!(short.status, ExitStatus::Code(152), "{short:?}");
}

#[tokio::test]
async fn subshells_functions_and_background_jobs_draw_on_the_same_steps() {
    let programs = crate::registry();
    let fs = programs.pod_fs(vec![]);
    for script in [
        "while :; do (:); done",
        "while :; do x=$(:); done",
        "f(){ :; }; while :; do f | f; done",
        "{ while :; do :; done; } & wait $!; exit $?",
    ] {
        let run = session(steps(500), &fs, &programs, script).await;
        assert_eq!(run.status, ExitStatus::Code(152), "{script}: {run:?}");
    }
}

#[tokio::test]
async fn the_default_step_limit_leaves_room_for_real_scripts() {
    assert_eq!(Limits::default().steps, DEFAULT_STEP_LIMIT);
    let programs = crate::registry();
    let fs = programs.pod_fs(vec![]);
    let script = "n=0; for i in $(seq 1 20000); do n=$((n+i)); done; echo $n";
    let run = session(Limits::default(), &fs, &programs, script).await;
    assert_eq!(run.status, ExitStatus::Code(0), "{run:?}");
    assert_eq!(run.stdout, "200010000\n");
}
