//! `--pods-ignore-sigterm`: the suite's stop/start trials against pods whose main process
//! ignores SIGTERM, so each stop waits out the grace period and each start waits for the old pod.

mod support;

use std::collections::BTreeSet;

#[test]
fn stop_start_trials_pass_against_pods_that_ignore_sigterm_and_each_pod_outlives_its_grace_period()
{
    let (stdout, _) = support::passing(&["--pods-ignore-sigterm", "lifecycle.stop-start"]);
    let passed: BTreeSet<&str> = stdout
        .lines()
        .filter_map(|l| l.strip_prefix("  ok    direct::lifecycle.stop-start::"))
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    // The direct pool declares the capability: its promise trials all run and pass.
    assert!(passed.len() >= 8, "{passed:?}\n{stdout}");
    for trial in [
        "stop_returns_stopped_and_get_agrees",
        "start_runs_the_sandbox_again",
        "stop_and_start_are_idempotent",
        "volume_survives_only_under_volume_path",
    ] {
        assert!(passed.contains(trial), "{trial} did not pass:\n{stdout}");
    }
    assert!(!stdout.contains("FAIL"), "a trial failed:\n{stdout}");
    assert!(stdout.contains("leak check: nothing left"), "{stdout}");
    // Pods deleted went only when the kubelet killed them at the end of their grace period:
    // the warm pool's 16 members (whose command ignores SIGTERM anyway) and at least one pod
    // per direct stop-start trial. (With the adapter's own command, which traps SIGTERM, only
    // the warm pool's are.)
    let counts = stdout
        .lines()
        .find_map(|l| l.strip_prefix("pods ignoring SIGTERM: "))
        .unwrap_or_else(|| panic!("no count of pods ignoring SIGTERM:\n{stdout}"));
    let numbers: Vec<usize> = counts
        .split_whitespace()
        .filter_map(|w| w.trim_end_matches(',').parse().ok())
        .collect();
    let [created, held] = numbers[..] else {
        panic!("two counts expected: {counts}");
    };
    assert!(held >= 16 + passed.len(), "{counts}");
    assert!(created >= held, "{counts}");
}
