//! Templates, resources and concurrency.

use std::collections::BTreeSet;
use std::time::Duration;

use sandbox_contract::{Capability, ErrorCode, ExecRequest, Resources, SandboxState};

use super::{TrialResult, TrialScope, ensure, fail, seconds, show};

/// Each listed template creates a sandbox that reports it.
pub(super) async fn listed_templates_are_recorded(scope: TrialScope) -> TrialResult {
    for template in scope.info.templates.iter().take(3) {
        let id = scope.new_id()?;
        let request = scope.request(id).with_template(template.name.clone());
        let sandbox = scope.create_with(request).await?;
        ensure!(
            sandbox.template.as_deref() == Some(template.name.as_str()),
            "a sandbox created from template {} reports {:?}",
            template.name,
            sandbox.template
        );
    }
    Ok(())
}

/// A template (or image) that does not exist answers `invalid_request` and leaves nothing.
pub(super) async fn unknown_template_is_invalid_request_leaving_nothing(
    scope: TrialScope,
) -> TrialResult {
    let name = if scope.info.accepts_unlisted_templates {
        scope.fx.missing_image.clone().unwrap_or_default()
    } else {
        "cf-no-such-template".to_owned()
    };
    let id = scope.new_id()?;
    let request = scope.request(id.clone()).with_template(name.clone());
    scope
        .fails_with(
            &format!("create from {name}"),
            ErrorCode::InvalidRequest,
            scope.p.create(request),
        )
        .await?;
    scope.wait_gone(&id, scope.fx.delete_wait).await
}

/// Resources are applied or ignored, never a reason to fail.
pub(super) async fn requested_resources_never_fail_create(scope: TrialScope) -> TrialResult {
    let id = scope.new_id()?;
    let request = scope.request(id).with_resources(scope.fx.resources);
    let sandbox = scope.create_with(request).await?;
    ensure!(
        sandbox.state == SandboxState::Running,
        "create with resources returned {}",
        sandbox.state
    );
    Ok(())
}

/// A zero resource answers `invalid_request` and leaves nothing.
pub(super) async fn zero_resource_is_invalid_request(scope: TrialScope) -> TrialResult {
    for resources in [
        Resources {
            cpu_millis: Some(0),
            ..Resources::default()
        },
        Resources {
            memory_mib: Some(0),
            ..Resources::default()
        },
        Resources {
            disk_gib: Some(0),
            ..Resources::default()
        },
    ] {
        let id = scope.new_id()?;
        let request = scope.request(id.clone()).with_resources(resources);
        scope
            .fails_with(
                &format!("create with {resources:?}"),
                ErrorCode::InvalidRequest,
                scope.p.create(request),
            )
            .await?;
        scope
            .fails_with(
                "get after a refused create",
                ErrorCode::NotFound,
                scope.p.get(&id),
            )
            .await?;
    }
    Ok(())
}

/// Many sandboxes created, used and deleted at once are all distinct and all go.
pub(super) async fn many_sandboxes_at_once(scope: TrialScope) -> TrialResult {
    let count = scope.fx.concurrency.max(2);
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..count {
        let id = scope.new_id()?;
        let request = scope.request(id.clone());
        let provider = scope.p.clone();
        let exec = scope.declares(Capability::Exec);
        tasks.spawn(async move {
            let sandbox = provider.create(request).await?;
            if exec {
                let output = provider
                    .exec(&id, ExecRequest::new(["echo", id.as_str()]))
                    .await?;
                if output.stdout != format!("{id}\n").as_bytes() {
                    return Ok(Err(format!(
                        "exec in {id} printed {}",
                        show(&output.stdout)
                    )));
                }
            }
            Ok::<_, sandbox_contract::Error>(Ok(sandbox))
        });
    }
    let mut sandboxes = Vec::new();
    while let Some(joined) = tasks.join_next().await {
        match joined {
            Ok(Ok(Ok(sandbox))) => sandboxes.push(sandbox),
            Ok(Ok(Err(message))) => fail!("{message}"),
            Ok(Err(error)) => fail!("a concurrent create or exec failed: {error}"),
            Err(error) => fail!("a concurrent task failed: {error}"),
        }
    }
    let refs: BTreeSet<&str> = sandboxes.iter().map(|s| s.provider_ref.as_str()).collect();
    ensure!(
        refs.len() == count,
        "{count} sandboxes created at once share provider names: only {} distinct",
        refs.len()
    );
    let listed = scope.ok("list", scope.p.list()).await?;
    for sandbox in &sandboxes {
        ensure!(
            listed.iter().any(|s| s.id == sandbox.id),
            "list leaves out {}",
            sandbox.id
        );
    }
    let mut deletes = tokio::task::JoinSet::new();
    for sandbox in &sandboxes {
        let provider = scope.p.clone();
        let id = sandbox.id.clone();
        deletes.spawn(async move { provider.delete(&id).await });
    }
    while let Some(joined) = deletes.join_next().await {
        match joined {
            Ok(Ok(())) => {}
            Ok(Err(error)) => fail!("a concurrent delete failed: {error}"),
            Err(error) => fail!("a concurrent delete task failed: {error}"),
        }
    }
    for sandbox in &sandboxes {
        scope.wait_gone(&sandbox.id, scope.fx.delete_wait).await?;
    }
    Ok(())
}

/// Many commands at once in one sandbox each get their own output.
pub(super) async fn many_execs_at_once_keep_their_output(scope: TrialScope) -> TrialResult {
    let sandbox = scope.create().await?;
    let count = scope.fx.concurrency.max(2);
    let pause = seconds(scope.fx.stream_gap.min(Duration::from_secs(1)));
    let mut tasks = tokio::task::JoinSet::new();
    for n in 0..count {
        let provider = scope.p.clone();
        let id = sandbox.id.clone();
        let script = format!(
            "sleep {pause}; echo token-{n}; echo err-{n} >&2; exit {}",
            n % 5
        );
        tasks.spawn(async move {
            let output = provider
                .exec(&id, ExecRequest::new(["sh", "-c", &script]))
                .await;
            (n, output)
        });
    }
    while let Some(joined) = tasks.join_next().await {
        let (n, output) = match joined {
            Ok((n, Ok(output))) => (n, output),
            Ok((n, Err(error))) => fail!("concurrent exec {n} failed: {error}"),
            Err(error) => fail!("a concurrent exec task failed: {error}"),
        };
        ensure!(
            output.stdout == format!("token-{n}\n").as_bytes()
                && output.stderr == format!("err-{n}\n").as_bytes()
                && output.exit_code == i32::try_from(n % 5).unwrap_or(-1),
            "concurrent exec {n} got stdout {}, stderr {}, exit {}",
            show(&output.stdout),
            show(&output.stderr),
            output.exit_code
        );
    }
    Ok(())
}
