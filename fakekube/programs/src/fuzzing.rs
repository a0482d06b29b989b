//! Entry points for the fuzz targets of `fakekube/programs/fuzz/` (cargo-fuzz), compiled only
//! with the `fuzzing` feature (never a default) and in this crate's tests, which replay the
//! committed corpus through the same functions. Each takes arbitrary bytes and must return
//! without panicking whatever they are.
//!
//! Not an API: the functions and their input layouts may change with the fuzz targets.

use std::time::Duration;

use fakekube_runtime::fs::StorageBudget;
use fakekube_runtime::{ExecIo, ExecSpec, Limits, PodNetwork, ProcessTable, exec_session};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

pub use fakekube_runtime::fuzzing::Target;

/// The fuzz targets, by name: what `fakekube/programs/fuzz/fuzz_targets/<name>.rs` calls and
/// what the corpus directories `fakekube/programs/fuzz/{seeds,regressions}/<name>/` are named
/// for.
pub const TARGETS: &[Target] = &[("shell_run", shell_run)];

/// How many steps (commands) one script's shell may take: an endless loop stops there, with
/// 152, in well under a millisecond per hundred steps.
const RUN_STEPS: u64 = 20_000;

/// How long one script may run before its exec is cancelled: the backstop for what steps do
/// not count (a `sleep`, a program reading an endless input).
const RUN_TIME: Duration = Duration::from_millis(200);

/// A script run with `sh -c` in a container bounded in processes (32), memory (8 MiB), storage
/// (4 MiB across the filesystem), steps ([`RUN_STEPS`]) and time ([`RUN_TIME`], then cancelled
/// as a deleted pod's exec is); its output is read and dropped.
pub fn shell_run(data: &[u8]) {
    let script = String::from_utf8_lossy(data).into_owned();
    let Ok(runtime) = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
    else {
        return;
    };
    runtime.block_on(async move {
        let programs = crate::registry();
        programs.set_storage_budget(StorageBudget::new(4 << 20));
        let (out_tx, mut out_rx) = mpsc::channel(8);
        let (err_tx, mut err_rx) = mpsc::channel(8);
        let cancel = CancellationToken::new();
        let spec = ExecSpec {
            argv: vec!["sh".into(), "-c".into(), script],
            env: vec![],
            cwd: "/".into(),
            fs: programs.pod_fs(vec![]),
            programs: programs.clone(),
            processes: ProcessTable::with_limits(Limits {
                processes: 32,
                memory: Some(8 << 20),
                steps: RUN_STEPS,
            }),
            cancel: cancel.clone(),
            network: PodNetwork::new(),
        };
        let io = ExecIo {
            stdin: None,
            stdout: out_tx,
            stderr: err_tx,
            tty: None,
        };
        let drain = async {
            let (mut out_open, mut err_open) = (true, true);
            while out_open || err_open {
                tokio::select! {
                    o = out_rx.recv(), if out_open => out_open = o.is_some(),
                    e = err_rx.recv(), if err_open => err_open = e.is_some(),
                }
            }
        };
        let stop = async {
            tokio::time::sleep(RUN_TIME).await;
            cancel.cancel();
        };
        tokio::select! {
            _ = async { tokio::join!(exec_session(spec, io), drain) } => {}
            () = async { stop.await; std::future::pending::<()>().await } => {}
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn every_fuzz_target_has_a_binary_and_survives_its_committed_seeds_and_regressions() {
        fakekube_runtime::fuzzing::check_targets(
            &Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz"),
            TARGETS,
        );
    }
}
