//! `ports.expose` and `ttl`.

use std::time::{Duration, SystemTime};

use sandbox_contract::ErrorCode;

use super::{TrialResult, TrialScope, ensure};

/// How far an expiry may be from what the suite computed: clocks and call times differ.
const CLOCK_SLACK: Duration = Duration::from_secs(60);

/// Exposing the same port twice gives the same URL.
pub(super) async fn same_port_gives_the_same_url(scope: TrialScope) -> TrialResult {
    let sandbox = scope.create().await?;
    let first = scope
        .ok(
            "expose_port",
            scope.p.expose_port(&sandbox.id, scope.fx.port),
        )
        .await?;
    let second = scope
        .ok(
            "expose_port again",
            scope.p.expose_port(&sandbox.id, scope.fx.port),
        )
        .await?;
    ensure!(first == second, "the same port gave {first} then {second}");
    ensure!(first.contains("://"), "the URL {first} has no scheme");
    Ok(())
}

/// Different ports give different URLs.
pub(super) async fn different_ports_give_different_urls(scope: TrialScope) -> TrialResult {
    let sandbox = scope.create().await?;
    let other = if scope.fx.port == u16::MAX {
        scope.fx.port - 1
    } else {
        scope.fx.port + 1
    };
    let first = scope
        .ok(
            "expose_port",
            scope.p.expose_port(&sandbox.id, scope.fx.port),
        )
        .await?;
    let second = scope
        .ok("expose_port", scope.p.expose_port(&sandbox.id, other))
        .await?;
    ensure!(
        first != second,
        "ports {} and {other} both gave {first}",
        scope.fx.port
    );
    Ok(())
}

/// Port 0 answers `invalid_request`.
pub(super) async fn port_zero_is_invalid_request(scope: TrialScope) -> TrialResult {
    let sandbox = scope.create().await?;
    scope
        .fails_with(
            "expose_port 0",
            ErrorCode::InvalidRequest,
            scope.p.expose_port(&sandbox.id, 0),
        )
        .await?;
    Ok(())
}

/// Checks that `expires_at` is `ttl` after a moment between `before` and now.
fn expires_near(
    expires_at: Option<SystemTime>,
    before: SystemTime,
    ttl: Duration,
    what: &str,
) -> TrialResult {
    let Some(expires_at) = expires_at else {
        return Err(super::Failure::new(format!(
            "{what}: expires_at is not set"
        )));
    };
    let earliest = before + ttl - CLOCK_SLACK;
    let latest = SystemTime::now() + ttl + CLOCK_SLACK;
    ensure!(
        expires_at >= earliest && expires_at <= latest,
        "{what}: expires_at is {expires_at:?}, not {ttl:?} from now"
    );
    Ok(())
}

/// Create with a TTL reports the expiry it sets.
pub(super) async fn create_sets_expires_at_from_ttl(scope: TrialScope) -> TrialResult {
    let ttl = Duration::from_secs(3600);
    let before = SystemTime::now();
    let id = scope.new_id()?;
    let sandbox = scope
        .create_with(scope.request(id.clone()).with_ttl(ttl))
        .await?;
    expires_near(sandbox.expires_at, before, ttl, "create")?;
    let got = scope.ok("get", scope.p.get(&id)).await?;
    expires_near(got.expires_at, before, ttl, "get after create")
}

/// set_ttl moves the expiry later and earlier, and get agrees.
pub(super) async fn set_ttl_moves_the_reported_expiry(scope: TrialScope) -> TrialResult {
    let id = scope.new_id()?;
    scope
        .create_with(
            scope
                .request(id.clone())
                .with_ttl(Duration::from_secs(3600)),
        )
        .await?;
    for ttl in [Duration::from_secs(7200), Duration::from_secs(1800)] {
        let before = SystemTime::now();
        let moved = scope.ok("set_ttl", scope.p.set_ttl(&id, Some(ttl))).await?;
        expires_near(moved.expires_at, before, ttl, "set_ttl")?;
        let got = scope.ok("get", scope.p.get(&id)).await?;
        expires_near(got.expires_at, before, ttl, "get after set_ttl")?;
    }
    Ok(())
}

/// set_ttl with no TTL clears the expiry.
pub(super) async fn set_ttl_none_clears_the_expiry(scope: TrialScope) -> TrialResult {
    let id = scope.new_id()?;
    scope
        .create_with(
            scope
                .request(id.clone())
                .with_ttl(Duration::from_secs(3600)),
        )
        .await?;
    let cleared = scope.ok("set_ttl none", scope.p.set_ttl(&id, None)).await?;
    ensure!(
        cleared.expires_at.is_none(),
        "set_ttl none left expires_at {:?}",
        cleared.expires_at
    );
    let got = scope.ok("get", scope.p.get(&id)).await?;
    ensure!(
        got.expires_at.is_none(),
        "get after set_ttl none shows {:?}",
        got.expires_at
    );
    Ok(())
}

/// A zero TTL answers `invalid_request` and leaves the sandbox alone.
pub(super) async fn zero_ttl_is_invalid_request(scope: TrialScope) -> TrialResult {
    let sandbox = scope.create().await?;
    scope
        .fails_with(
            "set_ttl 0",
            ErrorCode::InvalidRequest,
            scope.p.set_ttl(&sandbox.id, Some(Duration::ZERO)),
        )
        .await?;
    scope
        .ok("get after a refused set_ttl", scope.p.get(&sandbox.id))
        .await?;
    Ok(())
}

/// How long the backstop trials wait (or move the backend's clock) after setting the TTL: the
/// TTL and the time the backstop may take past it.
fn backstop_wait(scope: &TrialScope) -> Duration {
    scope.fx.ttl + scope.fx.ttl_backstop_wait.unwrap_or_default()
}

/// Once its TTL passes, the provider removes the sandbox on its own.
///
/// With the fixtures' clock, the clock is moved past the TTL and the backstop's wait, and the
/// sandbox must then be gone within `delete_wait`.
pub(super) async fn backstop_removes_the_sandbox(scope: TrialScope) -> TrialResult {
    let sandbox = scope.create().await?;
    scope
        .ok("set_ttl", scope.p.set_ttl(&sandbox.id, Some(scope.fx.ttl)))
        .await?;
    let wait = backstop_wait(&scope);
    if scope.fx.clock.is_some() {
        scope.advance_clock(wait).await?;
        scope.wait_gone(&sandbox.id, scope.fx.delete_wait).await
    } else {
        scope.wait_gone(&sandbox.id, wait).await
    }
}

/// A TTL moved later is the one the backstop honours.
///
/// With the fixtures' clock, the clock is moved past the original expiry and the backstop's
/// wait; a second sandbox keeping the short TTL, made after the first's was moved (so its
/// expiry is no earlier than the first's original one), must then be gone within
/// `delete_wait`: the backstop has acted by then, and the first must still be there.
pub(super) async fn moved_expiry_is_what_the_backstop_uses(scope: TrialScope) -> TrialResult {
    let id = scope.new_id()?;
    scope
        .create_with(scope.request(id.clone()).with_ttl(scope.fx.ttl))
        .await?;
    scope
        .ok(
            "set_ttl",
            scope.p.set_ttl(&id, Some(Duration::from_secs(3600))),
        )
        .await?;
    if scope.fx.clock.is_some() {
        let unmoved = scope.new_id()?;
        scope
            .create_with(scope.request(unmoved.clone()).with_ttl(scope.fx.ttl))
            .await?;
        scope.advance_clock(backstop_wait(&scope)).await?;
        scope
            .wait_gone(&unmoved, scope.fx.delete_wait)
            .await
            .map_err(|failure| {
                super::Failure::new(format!(
                    "the backstop did not act on a sandbox whose TTL was not moved: {}",
                    failure.0
                ))
            })?;
    } else {
        tokio::time::sleep(backstop_wait(&scope)).await;
    }
    match scope.call("get", scope.p.get(&id)).await? {
        Ok(sandbox) => ensure!(
            sandbox.state != sandbox_contract::SandboxState::Deleting,
            "the sandbox is being deleted at its original expiry, though its TTL was moved"
        ),
        Err(error) if error.is_not_found() => {
            return Err(super::Failure::new(
                "the sandbox was deleted at its original expiry, though its TTL was moved",
            ));
        }
        Err(error) => return Err(super::Failure::new(format!("get answered {error}"))),
    }
    Ok(())
}
