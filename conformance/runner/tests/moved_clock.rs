//! The embedded main job moves fakekube's clock for the TTL backstop trials instead of waiting:
//! their TTL there is a minute, which none of their real waits (`delete_wait`, 10 s) covers, so
//! they pass only if the clock is moved and the adapter computes `shutdownTime` from it.

use std::process::Command;

#[test]
fn ttl_backstop_trials_pass_on_the_moved_clock_with_a_ttl_no_real_wait_covers() {
    let output = Command::new(env!("CARGO_BIN_EXE_conformance"))
        .arg("ttl::")
        .env_remove("KUBECONFIG")
        .output()
        .expect("the conformance binary runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}\n{stdout}");
    for pool in ["direct", "warm"] {
        for trial in [
            "backstop_removes_the_sandbox",
            "moved_expiry_is_what_the_backstop_uses",
        ] {
            let line = format!("  ok    {pool}::ttl::{trial} (");
            assert!(stdout.contains(&line), "{pool}::ttl::{trial}:\n{stdout}");
        }
    }
    assert!(stdout.contains("leak check: nothing left"), "{stdout}");
}
