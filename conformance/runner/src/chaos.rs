//! `--chaos-seed` and `--chaos`: the main job under a storm of faults, the embedded
//! fakekube's (a seeded random mix, [`fakekube::Chaos`], all but pods deleted under execs: see
//! [`rates`]) or a cluster's (which the runner cannot see). Every provider call is counted
//! ([`sandbox_conformance::explained`]); a trial may then fail only with one of the contract's
//! codes a fault explains; after the suite a reconcile deletes what cleanups could not, every
//! sandbox it finds must be one the run created, and the leak check must find nothing left.

use std::sync::Arc;

use fakekube::ChaosRates;
use sandbox_conformance::Report;
use sandbox_conformance::explained::{self, Explained, Tally, Verdicts};
use sandbox_contract::Provider;

/// The default `--chaos-rate`: each fault's probability per occasion.
pub(crate) const DEFAULT_RATE: f64 = 0.02;

/// Every fault of [`fakekube::Chaos`] at `rate`, but pods deleted under running execs: the
/// exec itself ends as it should (137, or a code), but the pod comes back without the files
/// the trial made, and a later check of the trial then fails in a way its message cannot tie
/// to the fault. `ci/soak.sh`'s adapter soak injects that fault, with checks that can.
pub(crate) fn rates(rate: f64) -> ChaosRates {
    ChaosRates {
        pod_delete: 0.0,
        ..ChaosRates::uniform(rate)
    }
}

/// After a run under faults (stopped by now, or not the runner's to stop): prints the provider
/// calls by operation and outcome and the trials by verdict, and reconciles what cleanups
/// left. Returns whether every failure is explained and the reconcile found only the run's
/// own.
pub(crate) fn summary(
    runtime: &tokio::runtime::Runtime,
    report: &Report,
    tally: &Tally,
    providers: &[Arc<dyn Provider>],
    explained: &Explained,
) -> bool {
    println!(
        "chaos: {} provider calls, by operation and outcome:",
        tally.total()
    );
    for line in tally.lines() {
        println!("  {line}");
    }
    let verdicts = Verdicts::of(report, explained);
    println!("chaos: trials: {}", verdicts.summary());
    for (name, message) in &verdicts.unexplained {
        println!("  UNEXPLAINED {name}: {message}");
    }
    let reconciled = runtime.block_on(explained::reconcile(providers, tally));
    match &reconciled {
        Ok(n) => println!(
            "chaos: the reconcile deleted {n} sandboxes the cleanups left, all the run's own"
        ),
        Err(e) => println!("chaos: reconcile FAILED: {e}"),
    }
    verdicts.unexplained.is_empty() && reconciled.is_ok()
}
