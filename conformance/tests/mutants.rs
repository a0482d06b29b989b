//! The suite proves itself: the reference provider passes, and every mutant fails the trial
//! named for its bug.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use sandbox_conformance::{
    Arguments, Bug, Fixtures, Outcome, ReferenceProvider, Report, Suite, TrialKind,
};
use sandbox_contract::{Capabilities, Capability};

/// Runs the whole suite, quietly, against `provider` as the only pool.
fn run(provider: ReferenceProvider) -> Report {
    let fixtures = provider.fixtures();
    Suite::new()
        .pool("reference", Arc::new(provider), fixtures)
        .run_quietly()
}

/// Lists the failures of a report, one per line.
fn failures(report: &Report) -> String {
    report
        .failures()
        .iter()
        .map(|t| match &t.outcome {
            Outcome::Failed { message } => format!("{}: {message}", t.name),
            _ => t.name.clone(),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn reference_with_every_capability_passes_every_promise_trial() {
    let provider = ReferenceProvider::new();
    let report = run(provider.clone());
    assert!(!report.has_failed(), "{}", failures(&report));
    for trial in &report.trials {
        let skipped = matches!(trial.outcome, Outcome::Skipped { .. });
        assert_eq!(
            skipped,
            trial.kind == TrialKind::Coherence,
            "{}: {:?}",
            trial.name,
            trial.outcome
        );
    }
    assert_eq!(provider.sandbox_count(), 0, "the run left sandboxes behind");
}

#[test]
fn reference_without_optional_capabilities_passes_every_coherence_trial() {
    let report = run(ReferenceProvider::with_capabilities(Capabilities::new()));
    assert!(!report.has_failed(), "{}", failures(&report));
    let coherence: Vec<_> = report
        .trials
        .iter()
        .filter(|t| t.kind == TrialKind::Coherence)
        .collect();
    assert_eq!(coherence.len(), 11);
    assert!(coherence.iter().all(|t| t.outcome == Outcome::Passed));
}

#[test]
fn reference_with_exec_only_checks_stdin_coherence_by_running_commands() {
    let provider = ReferenceProvider::with_capabilities(Capabilities::from([Capability::Exec]));
    let report = run(provider);
    assert!(!report.has_failed(), "{}", failures(&report));
    let stdin = report
        .trial("stdin::undeclared_answers_unsupported")
        .map(|t| &t.outcome);
    assert_eq!(stdin, Some(&Outcome::Passed));
    let exec = report
        .trial("exec::nonzero_exit_is_data")
        .map(|t| &t.outcome);
    assert_eq!(exec, Some(&Outcome::Passed));
}

#[test]
fn every_skipped_trial_says_why() {
    let report = run(ReferenceProvider::with_capabilities(Capabilities::from([
        Capability::Exec,
    ])));
    let skipped: Vec<_> = report
        .trials
        .iter()
        .filter_map(|t| match &t.outcome {
            Outcome::Skipped { reason } => Some((t.name.as_str(), reason.as_str())),
            _ => None,
        })
        .collect();
    assert!(!skipped.is_empty());
    for (name, reason) in skipped {
        assert!(reason.len() > 10, "{name}: {reason:?}");
    }
    let files = report
        .trial("files::binary_data_round_trips")
        .map(|t| &t.outcome);
    assert_eq!(
        files,
        Some(&Outcome::Skipped {
            reason: "capability files not declared; coherence trial \
                     files::undeclared_answers_unsupported runs instead"
                .to_owned()
        })
    );
}

/// Takes the next bug to try, if any is left.
fn next(bugs: &Mutex<Vec<Bug>>) -> Option<Bug> {
    bugs.lock().ok().and_then(|mut bugs| bugs.pop())
}

#[test]
fn every_mutant_fails_the_trial_named_for_its_bug() {
    let bugs = Arc::new(Mutex::new(Bug::all()));
    let misses = Arc::new(Mutex::new(Vec::new()));
    let workers: Vec<_> = (0..12)
        .map(|_| {
            let bugs = bugs.clone();
            let misses = misses.clone();
            std::thread::spawn(move || {
                while let Some(bug) = next(&bugs) {
                    let report = run(ReferenceProvider::mutant(bug));
                    let expected = bug.caught_by();
                    let caught = report.failures().iter().any(|t| t.name == expected);
                    if !caught {
                        let outcome = report.trial(&expected).map(|t| t.outcome.clone());
                        if let Ok(mut misses) = misses.lock() {
                            misses.push(format!(
                                "{bug:?} ({}): {expected} was {outcome:?}",
                                bug.describe()
                            ));
                        }
                    }
                }
            })
        })
        .collect();
    for worker in workers {
        assert!(worker.join().is_ok());
    }
    let misses = misses.lock().map(|m| m.clone()).unwrap_or_default();
    assert!(
        misses.is_empty(),
        "mutants the suite missed:\n{}",
        misses.join("\n")
    );
}

/// Runs the whole suite, quietly, against `provider` with its clock in the fixtures: the TTL
/// backstop trials move it instead of waiting. The TTL is a minute, longer than any trial may
/// take: those trials pass only by moving the clock.
fn run_on_its_clock(provider: ReferenceProvider) -> Report {
    let fixtures = Fixtures {
        clock: Some(provider.clock()),
        ttl: Duration::from_secs(60),
        ttl_backstop_wait: Some(Duration::from_secs(60)),
        ..provider.fixtures()
    };
    Suite::new()
        .pool("reference", Arc::new(provider), fixtures)
        .run_quietly()
}

#[test]
fn on_a_clock_the_suite_moves_the_reference_passes_and_the_ttl_mutants_fail_their_trials() {
    let provider = ReferenceProvider::new();
    let report = run_on_its_clock(provider.clone());
    assert!(!report.has_failed(), "{}", failures(&report));
    for name in [
        "ttl::backstop_removes_the_sandbox",
        "ttl::moved_expiry_is_what_the_backstop_uses",
    ] {
        let outcome = report.trial(name).map(|t| &t.outcome);
        assert_eq!(outcome, Some(&Outcome::Passed), "{name}");
    }
    assert_eq!(provider.sandbox_count(), 0, "the run left sandboxes behind");
    for bug in [Bug::BackstopNeverFires, Bug::TtlNotMoved] {
        let report = run_on_its_clock(ReferenceProvider::mutant(bug));
        let expected = bug.caught_by();
        assert!(
            report.failures().iter().any(|t| t.name == expected),
            "{bug:?}: {expected} was {:?}",
            report.trial(&expected).map(|t| &t.outcome)
        );
    }
}

#[test]
fn every_trial_is_caught_by_some_mutant() {
    let mut names: BTreeSet<String> = run(ReferenceProvider::new())
        .trials
        .iter()
        .map(|t| t.name.clone())
        .collect();
    let caught: BTreeSet<String> = Bug::all().into_iter().map(Bug::caught_by).collect();
    names.retain(|name| !caught.contains(name));
    assert!(names.is_empty(), "trials no mutant makes fail: {names:?}");
}

#[test]
fn several_pools_prefix_trial_names_with_the_pool() {
    let direct = ReferenceProvider::new();
    let narrow = ReferenceProvider::with_capabilities(Capabilities::from([Capability::Exec]));
    let report = Suite::new()
        .pool("direct", Arc::new(direct.clone()), direct.fixtures())
        .pool("narrow", Arc::new(narrow.clone()), narrow.fixtures())
        .run_quietly();
    assert!(!report.has_failed(), "{}", failures(&report));
    let direct_exec = report
        .trial("direct::exec::nonzero_exit_is_data")
        .map(|t| &t.outcome);
    assert_eq!(direct_exec, Some(&Outcome::Passed));
    let narrow_files = report.trial("narrow::files::undeclared_answers_unsupported");
    assert_eq!(narrow_files.map(|t| t.pool.as_str()), Some("narrow"));
    let table = report.capability_table_text();
    let files_row = table
        .lines()
        .find(|l| l.starts_with("files "))
        .unwrap_or_default();
    assert!(files_row.contains("yes: 13/13 passed"), "{files_row}");
    assert!(
        files_row.contains("no: coherence 1/1 passed"),
        "{files_row}"
    );
}

#[test]
fn run_honours_libtest_filters_and_writes_the_reports() {
    let dir = std::env::temp_dir().join(format!("conformance-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).ok();
    let json = dir.join("report.json");
    let junit = dir.join("report.xml");
    let provider = ReferenceProvider::new();
    let log = dir.join("libtest.log");
    let args = Arguments::from_iter([
        "conformance".to_owned(),
        "--exact".to_owned(),
        "core::health_reports_healthy".to_owned(),
        "--logfile".to_owned(),
        log.display().to_string(),
    ]);
    let report = Suite::new()
        .pool("reference", Arc::new(provider.clone()), provider.fixtures())
        .write_json(&json)
        .write_junit(&junit)
        .run(&args);
    assert_eq!(report.trials.len(), 1);
    assert_eq!(
        report.trials.first().map(|t| t.name.as_str()),
        Some("core::health_reports_healthy")
    );
    assert!(report.filtered_out > 50, "{}", report.filtered_out);
    let json_text = std::fs::read_to_string(&json).unwrap_or_default();
    let value: serde_json::Value = serde_json::from_str(&json_text).unwrap_or_default();
    assert_eq!(value["counts"]["passed"], 1);
    let xml = std::fs::read_to_string(&junit).unwrap_or_default();
    assert!(
        xml.contains("<testcase name=\"core::health_reports_healthy\""),
        "{xml}"
    );
    let log_text = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(
        log_text.contains("test core::health_reports_healthy ... ok"),
        "{log_text}"
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn trials_lists_every_rule_and_flags_the_skipped_ones() {
    let provider = ReferenceProvider::with_capabilities(Capabilities::from([Capability::Exec]));
    let trials = Suite::new()
        .pool("reference", Arc::new(provider.clone()), provider.fixtures())
        .trials();
    assert_eq!(trials.len(), 101);
    let ignored: Vec<&str> = trials
        .iter()
        .filter(|t| t.has_ignored_flag())
        .map(|t| t.name())
        .collect();
    assert!(
        ignored.contains(&"files::binary_data_round_trips"),
        "{ignored:?}"
    );
    assert!(
        !ignored.contains(&"exec::nonzero_exit_is_data"),
        "{ignored:?}"
    );
    assert!(
        !ignored.contains(&"files::undeclared_answers_unsupported"),
        "{ignored:?}"
    );
    assert!(
        trials
            .iter()
            .filter(|t| t.has_ignored_flag())
            .all(|t| t.kind() == "skip")
    );
}
