//! Many sandboxes at once through one adapter: each created, exec'd once (`echo $HOSTNAME`)
//! and deleted, counting what went wrong. Included with `#[path]` by the `provider` and
//! `scale` benches.

use agentsandbox::AgentSandbox;
use sandbox_contract::{CreateRequest, ExecRequest, Provider, SandboxId};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What [`many`] counted.
pub struct Many {
    /// How many sandboxes were asked for.
    pub n: usize,
    /// How many were created, answered the exec and were deleted.
    pub ok: usize,
    /// What went wrong with the others.
    pub failed: Vec<String>,
    /// From the first create to the last answer.
    pub elapsed: Duration,
}

impl Many {
    /// Prints the outcome; `left` is what remained afterwards.
    pub fn print(&self, against: &str, left: usize) {
        println!(
            "\n{} sandboxes created, exec'd and deleted at once {against}: {} ok, {} failed, {left} left, in {:.2?}",
            self.n,
            self.ok,
            self.failed.len(),
            self.elapsed
        );
        if let Some(first) = self.failed.first() {
            println!("first failure: {first}");
        }
    }
}

/// Creates, execs in and deletes `n` sandboxes at once, named `many-<i>`.
pub async fn many(direct: &Arc<AgentSandbox>, n: usize) -> Many {
    let started = Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    for i in 0..n {
        let p = direct.clone();
        tasks.spawn(async move {
            let id = SandboxId::new(format!("many-{i}")).expect("id");
            p.create(CreateRequest::new(id.clone())).await?;
            let out = p
                .exec(&id, ExecRequest::new(["sh", "-c", "echo $HOSTNAME"]))
                .await?;
            let ok = out.exit_code == 0 && !out.stdout.is_empty();
            p.delete(&id).await?;
            Ok::<bool, sandbox_contract::Error>(ok)
        });
    }
    let (mut ok, mut failed) = (0, Vec::new());
    while let Some(joined) = tasks.join_next().await {
        match joined {
            Ok(Ok(true)) => ok += 1,
            Ok(Ok(false)) => failed.push("exec output wrong".to_string()),
            Ok(Err(e)) => failed.push(e.to_string()),
            Err(e) => failed.push(e.to_string()),
        }
    }
    Many {
        n,
        ok,
        failed,
        elapsed: started.elapsed(),
    }
}
