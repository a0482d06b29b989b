//! The reference provider against the whole suite, run as a provider author would: a
//! `harness = false` test that hands the suite its provider.
//!
//! Beyond the suite's own verdict it checks that the run left no sandbox behind and, when no
//! filter narrowed the run, that every promise trial ran (the reference declares everything).

use std::process::ExitCode;
use std::sync::Arc;

use sandbox_conformance::{Arguments, Outcome, ReferenceProvider, Suite, TrialKind};

fn main() -> ExitCode {
    let args = Arguments::from_args();
    let provider = ReferenceProvider::new();
    let fixtures = provider.fixtures();
    let report = Suite::new()
        .pool("reference", Arc::new(provider.clone()), fixtures)
        .run(&args);
    if args.list {
        return ExitCode::SUCCESS;
    }
    let mut problems = Vec::new();
    if provider.sandbox_count() != 0 {
        problems.push(format!(
            "the run left {} sandboxes behind",
            provider.sandbox_count()
        ));
    }
    let narrowed = args.filter.is_some() || !args.skip.is_empty() || args.ignored;
    if !narrowed {
        for trial in &report.trials {
            let skipped = matches!(trial.outcome, Outcome::Skipped { .. });
            if skipped != (trial.kind == TrialKind::Coherence) {
                problems.push(format!("{} was {:?}", trial.name, trial.outcome));
            }
        }
    }
    for problem in &problems {
        eprintln!("reference conformance: {problem}");
    }
    if problems.is_empty() {
        report.exit_code()
    } else {
        ExitCode::FAILURE
    }
}
