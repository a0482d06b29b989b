//! The embedded main job moves fakekube's clock for the TTL backstop trials instead of waiting:
//! their TTL there is a minute, which none of their real waits (`delete_wait`, 10 s) covers, so
//! they pass only if the clock is moved and the adapter computes `shutdownTime` from it.

mod support;

#[test]
fn ttl_backstop_trials_pass_on_the_moved_clock_with_a_ttl_no_real_wait_covers() {
    let (stdout, _) = support::passing(&["ttl::"]);
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
