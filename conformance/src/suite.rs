//! The suite: pools, the trials made from the rules, and running them through libtest-mimic.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use libtest_mimic::{Arguments, Completion, Failed, FormatSetting, Trial};
use sandbox_contract::{Provider, ProviderInfo};
use tokio::runtime::Runtime;
use tokio::sync::RwLock;

use crate::fixtures::{Fault, Fixtures};
use crate::report::{Outcome, PoolSummary, Report, TrialRecord};
use crate::trials::{Group, IdSource, TrialFuture, TrialKind, TrialScope, catalog};

/// The environment variable naming a file for the JSON report.
pub const JSON_ENV: &str = "SANDBOX_CONFORMANCE_JSON";

/// The environment variable naming a file for the JUnit XML report.
pub const JUNIT_ENV: &str = "SANDBOX_CONFORMANCE_JUNIT";

/// The conformance suite over one or more pools.
///
/// Each pool is a provider with its fixtures. Trials are named `group::rule`, with a `pool::`
/// prefix when there are several pools. See the crate docs for an example.
#[derive(Default)]
pub struct Suite {
    /// The pools, in order.
    pools: Vec<PoolSpec>,
    /// Where to write the JSON report, besides [`JSON_ENV`].
    json: Option<PathBuf>,
    /// Where to write the JUnit report, besides [`JUNIT_ENV`].
    junit: Option<PathBuf>,
}

/// A pool as given to the suite.
struct PoolSpec {
    /// The pool's name.
    name: String,
    /// Its provider.
    provider: Arc<dyn Provider>,
    /// Its fixtures.
    fixtures: Fixtures,
}

impl Suite {
    /// Returns a suite with no pool.
    pub fn new() -> Suite {
        Suite::default()
    }

    /// Adds a pool: `provider` with `fixtures`, named `name` in trial names and the report.
    pub fn pool(
        mut self,
        name: impl Into<String>,
        provider: Arc<dyn Provider>,
        fixtures: Fixtures,
    ) -> Suite {
        self.pools.push(PoolSpec {
            name: name.into(),
            provider,
            fixtures,
        });
        self
    }

    /// Writes the JSON report to `path` after [`run`](Suite::run).
    pub fn write_json(mut self, path: impl Into<PathBuf>) -> Suite {
        self.json = Some(path.into());
        self
    }

    /// Writes the JUnit XML report to `path` after [`run`](Suite::run).
    pub fn write_junit(mut self, path: impl Into<PathBuf>) -> Suite {
        self.junit = Some(path.into());
        self
    }

    /// Returns the suite's trials, for a harness that runs them with others.
    ///
    /// Asks each provider for its [`info`](Provider::info) first. Skipped trials carry the
    /// ignored flag (their reason is printed when they are run with `--ignored`). Outcomes are
    /// not collected; [`run`](Suite::run) does that.
    pub fn trials(&self) -> Vec<Trial> {
        let prepared = self.prepare();
        let recorder = Recorder::default();
        prepared
            .cases
            .iter()
            .map(|case| case.trial(&prepared, &recorder))
            .collect()
    }

    /// Runs the trials as `cargo test` would with `args`, prints the report, writes the JSON
    /// and JUnit files asked for, and returns the report.
    ///
    /// Call it from a plain `main` or `#[test]`, not from inside an async runtime: each trial
    /// blocks on the suite's own tokio runtime.
    pub fn run(self, args: &Arguments) -> Report {
        let started = Instant::now();
        let prepared = self.prepare();
        let recorder = Recorder::default();
        let trials: Vec<Trial> = prepared
            .cases
            .iter()
            .map(|case| case.trial(&prepared, &recorder))
            .collect();
        if !args.list {
            for (case, trial) in prepared.cases.iter().zip(&trials) {
                if let Some(reason) = &case.skip
                    && !args.is_filtered_out(trial)
                    && args.is_ignored(trial)
                {
                    recorder.record(case.record(
                        Outcome::Skipped {
                            reason: reason.clone(),
                        },
                        Duration::ZERO,
                    ));
                }
            }
        }
        let conclusion = libtest_mimic::run(args, trials);
        let report = prepared.report(
            recorder.take(),
            conclusion.num_filtered_out,
            started.elapsed(),
        );
        if !args.list {
            let text = report.to_text();
            if matches!(args.format, Some(FormatSetting::Json)) {
                eprint!("{text}");
            } else {
                print!("{text}");
            }
            self.write_files(&report);
        }
        report
    }

    /// Runs every trial without printing anything and returns the report.
    ///
    /// Trials run concurrently on the suite's runtime; a trial that injects a fault or lists
    /// the pool still runs alone, and those that move the backend's clock run after all the
    /// others. For tests of providers and of the suite itself.
    pub fn run_quietly(self) -> Report {
        let started = Instant::now();
        let prepared = self.prepare();
        let mut records = Vec::new();
        match &prepared.runtime {
            Some(runtime) => {
                records = runtime.block_on(async {
                    let mut records = Vec::new();
                    for clock_phase in [false, true] {
                        let batch =
                            prepared.cases.iter().enumerate().filter(|(_, case)| {
                                (case.start() == Start::MovesClock) == clock_phase
                            });
                        records.extend(run_batch(&prepared, batch).await);
                    }
                    records.sort_by_key(|(index, _)| *index);
                    records
                });
            }
            None => {
                for (index, case) in prepared.cases.iter().enumerate() {
                    let outcome = Outcome::Failed {
                        message: "could not start the suite's tokio runtime".to_owned(),
                    };
                    records.push((index, case.record(outcome, Duration::ZERO)));
                }
            }
        }
        let records = records.into_iter().map(|(_, record)| record).collect();
        let report = prepared.report(records, 0, started.elapsed());
        self.write_files(&report);
        report
    }

    /// Writes the JSON and JUnit reports where asked; a failed write is printed, not fatal.
    fn write_files(&self, report: &Report) {
        let json_path = self
            .json
            .clone()
            .or_else(|| std::env::var_os(JSON_ENV).map(PathBuf::from));
        let junit_path = self
            .junit
            .clone()
            .or_else(|| std::env::var_os(JUNIT_ENV).map(PathBuf::from));
        if let Some(path) = json_path {
            let text = serde_json::to_string_pretty(&report.to_json()).unwrap_or_default();
            if let Err(error) = std::fs::write(&path, text) {
                eprintln!("conformance: could not write {}: {error}", path.display());
            }
        }
        if let Some(path) = junit_path
            && let Err(error) = std::fs::write(&path, report.to_junit())
        {
            eprintln!("conformance: could not write {}: {error}", path.display());
        }
    }

    /// Asks every pool for its info and makes a case per rule and pool.
    fn prepare(&self) -> Prepared {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .ok()
            .map(Arc::new);
        let ids = Arc::new(IdSource::new(
            self.pools
                .first()
                .map_or("cf", |p| p.fixtures.id_prefix.as_str()),
        ));
        let prefix = self.pools.len() > 1;
        // One lock for the whole suite: pools may share a backend, and so its faults.
        let lock = Arc::new(RwLock::new(()));
        let mut pools = Vec::new();
        let mut cases = Vec::new();
        for (index, spec) in self.pools.iter().enumerate() {
            let info = match &runtime {
                Some(runtime) => runtime.block_on(async {
                    tokio::time::timeout(spec.fixtures.op_timeout, spec.provider.info())
                        .await
                        .unwrap_or_else(|_| {
                            Err(sandbox_contract::Error::unavailable("info timed out"))
                        })
                }),
                None => Err(sandbox_contract::Error::internal("no tokio runtime")),
            };
            let pool_prefix = if prefix {
                format!("{}::", spec.name)
            } else {
                String::new()
            };
            match info {
                Ok(info) => {
                    for rule in catalog() {
                        let mut rows = vec![rule.group];
                        rows.extend(rule.also.iter().copied().map(Group::Capability));
                        let moves_clock = rule.waits && spec.fixtures.clock.is_some();
                        cases.push(Case {
                            number: 0,
                            name: format!("{pool_prefix}{}", rule.full_name()),
                            pool: index,
                            group: rule.group,
                            rule: rule.name.to_owned(),
                            kind: rule.kind,
                            rows,
                            skip: rule.skip_reason(&info, &spec.fixtures),
                            waits: rule.waits,
                            moves_clock,
                            body: Body::Rule(
                                rule.run,
                                rule.fault,
                                rule.runs_alone() || moves_clock,
                            ),
                        });
                    }
                    pools.push(PoolRt {
                        name: spec.name.clone(),
                        provider: spec.provider.clone(),
                        info: Some(Arc::new(info)),
                        fixtures: Arc::new(spec.fixtures.clone()),
                        ids: ids.clone(),
                        lock: lock.clone(),
                    });
                }
                Err(error) => {
                    cases.push(Case {
                        number: 0,
                        name: format!("{pool_prefix}core::info_answers"),
                        pool: index,
                        group: Group::Core,
                        rule: "info_answers".to_owned(),
                        kind: TrialKind::Promise,
                        rows: vec![Group::Core],
                        skip: None,
                        waits: false,
                        moves_clock: false,
                        body: Body::Broken(format!(
                            "info failed, so no other trial can run: {error}"
                        )),
                    });
                    pools.push(PoolRt {
                        name: spec.name.clone(),
                        provider: spec.provider.clone(),
                        info: None,
                        fixtures: Arc::new(spec.fixtures.clone()),
                        ids: ids.clone(),
                        lock: lock.clone(),
                    });
                }
            }
        }
        // See `Start` for the order (a stable sort keeps the catalogue order within each).
        cases.sort_by_key(Case::start);
        for (number, case) in cases.iter_mut().enumerate() {
            case.number = number;
        }
        Prepared {
            runtime,
            pools: pools.into_iter().map(Arc::new).collect(),
            cases,
        }
    }
}

/// A pool ready to run trials.
struct PoolRt {
    /// The pool's name.
    name: String,
    /// Its provider.
    provider: Arc<dyn Provider>,
    /// What it declared, when info answered.
    info: Option<Arc<ProviderInfo>>,
    /// Its fixtures.
    fixtures: Arc<Fixtures>,
    /// The run's ids; each trial takes its own from them.
    ids: Arc<IdSource>,
    /// Held shared by every trial and exclusively by one that runs alone; shared by
    /// every pool of the suite, since pools may share a backend.
    lock: Arc<RwLock<()>>,
}

/// What a case runs.
#[derive(Clone)]
enum Body {
    /// A rule's body, the fault it injects, and whether it runs alone.
    Rule(fn(TrialScope) -> TrialFuture, Option<Fault>, bool),
    /// A failure known before running (info failed).
    Broken(String),
}

/// One trial: a rule against one pool.
struct Case {
    /// Its place in the list, which its sandbox ids carry (see [`IdSource::for_trial`]).
    number: usize,
    /// The full trial name.
    name: String,
    /// The pool's index.
    pool: usize,
    /// The rule's group.
    group: Group,
    /// The rule's name within its group.
    rule: String,
    /// Promise or coherence.
    kind: TrialKind,
    /// The table rows it stands behind.
    rows: Vec<Group>,
    /// Why it does not run, if it does not.
    skip: Option<String>,
    /// Whether it mostly waits out the provider's timers (`Rule::waits`).
    waits: bool,
    /// Whether it moves the backend's clock instead of waiting (it waits, and its pool's
    /// fixtures give a clock); it then runs alone.
    moves_clock: bool,
    /// What it runs.
    body: Body,
}

/// When a case starts among the others: the variants in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Start {
    /// It runs alone (it injects a fault or lists the pool): started first, it waits for
    /// nobody, instead of waiting mid-run for every running trial to finish.
    Alone,
    /// It waits out the provider's timers in real time: started early, its wait overlaps the
    /// rest rather than ends the run.
    Early,
    /// Everything else.
    Middle,
    /// It moves the backend's clock: after everything else, alone (one at a time, nothing else
    /// in flight), since another trial's timers would jump with the clock.
    MovesClock,
}

impl Case {
    /// Where it starts among the trials (see [`Start`]).
    fn start(&self) -> Start {
        match (&self.body, self.waits, self.moves_clock) {
            (_, _, true) => Start::MovesClock,
            (Body::Rule(_, _, true), _, _) => Start::Alone,
            (_, true, _) => Start::Early,
            _ => Start::Middle,
        }
    }

    /// Builds the report record for `outcome`.
    fn record(&self, outcome: Outcome, duration: Duration) -> TrialRecord {
        TrialRecord {
            name: self.name.clone(),
            pool: String::new(),
            group: self.group,
            rule: self.rule.clone(),
            kind: self.kind,
            rows: self.rows.clone(),
            outcome,
            duration,
        }
    }

    /// Builds the libtest-mimic trial, which records its outcome in `recorder`.
    fn trial(&self, prepared: &Prepared, recorder: &Recorder) -> Trial {
        let pool = prepared.pool_rt(self.pool);
        let runtime = prepared.runtime.clone();
        let recorder = recorder.clone();
        let skip = self.skip.clone();
        let body = self.body.clone();
        let number = self.number;
        let mut template = self.record(Outcome::Passed, Duration::ZERO);
        template.pool = pool.as_ref().map(|p| p.name.clone()).unwrap_or_default();
        let trial = Trial::ignorable_test(self.name.clone(), move || {
            if let Some(reason) = skip {
                let mut record = template;
                record.outcome = Outcome::Skipped {
                    reason: reason.clone(),
                };
                recorder.record(record);
                return Ok(Completion::ignored_with(reason));
            }
            let started = Instant::now();
            let outcome = match runtime {
                Some(runtime) => runtime.block_on(execute(pool, body, number)),
                None => Outcome::Failed {
                    message: "could not start the suite's tokio runtime".to_owned(),
                },
            };
            let mut record = template;
            record.outcome = outcome.clone();
            record.duration = started.elapsed();
            recorder.record(record);
            match outcome {
                Outcome::Failed { message } => Err(Failed::from(message)),
                _ => Ok(Completion::Completed),
            }
        });
        match self.skip {
            Some(_) => trial.with_ignored_flag(true).with_kind("skip"),
            None => trial,
        }
    }
}

/// The pools and cases of one run.
struct Prepared {
    /// The runtime trials block on.
    runtime: Option<Arc<Runtime>>,
    /// The pools.
    pools: Vec<Arc<PoolRt>>,
    /// The cases, in list order.
    cases: Vec<Case>,
}

impl Prepared {
    /// Returns pool `index`.
    fn pool_rt(&self, index: usize) -> Option<Arc<PoolRt>> {
        self.pools.get(index).cloned()
    }

    /// Builds the report from the records, in list order.
    fn report(&self, records: Vec<TrialRecord>, filtered_out: u64, duration: Duration) -> Report {
        let mut trials = Vec::new();
        for case in &self.cases {
            if let Some(mut record) = records.iter().find(|r| r.name == case.name).cloned() {
                record.pool = self
                    .pool_rt(case.pool)
                    .map(|p| p.name.clone())
                    .unwrap_or_default();
                trials.push(record);
            }
        }
        let pools = self
            .pools
            .iter()
            .map(|pool| PoolSummary {
                name: pool.name.clone(),
                provider: pool.info.as_ref().map(|i| i.name.clone()),
                declared: pool
                    .info
                    .as_ref()
                    .map(|i| i.capabilities.clone())
                    .unwrap_or_default(),
                opt_in: pool.fixtures.opt_in.clone(),
            })
            .collect();
        Report {
            pools,
            trials,
            filtered_out,
            duration,
        }
    }
}

/// Runs `cases` (with their indexes) concurrently and returns their records by index; a
/// skipped case gets its record at once.
async fn run_batch<'a>(
    prepared: &'a Prepared,
    cases: impl Iterator<Item = (usize, &'a Case)>,
) -> Vec<(usize, TrialRecord)> {
    let mut records = Vec::new();
    let mut tasks = tokio::task::JoinSet::new();
    for (index, case) in cases {
        if let Some(reason) = &case.skip {
            let outcome = Outcome::Skipped {
                reason: reason.clone(),
            };
            records.push((index, case.record(outcome, Duration::ZERO)));
            continue;
        }
        let body = case.body.clone();
        let pool = prepared.pool_rt(case.pool);
        let number = case.number;
        tasks.spawn(async move {
            let started = Instant::now();
            let outcome = execute(pool, body, number).await;
            (index, outcome, started.elapsed())
        });
    }
    while let Some(joined) = tasks.join_next().await {
        if let Ok((index, outcome, took)) = joined
            && let Some(case) = prepared.cases.get(index)
        {
            records.push((index, case.record(outcome, took)));
        }
    }
    records
}

/// Runs case `number` against its pool: the body within the trial timeout, then the fault
/// cleared and every sandbox the trial made deleted.
async fn execute(pool: Option<Arc<PoolRt>>, body: Body, number: usize) -> Outcome {
    let Some(pool) = pool else {
        return Outcome::Failed {
            message: "the trial names no pool of the suite".to_owned(),
        };
    };
    let (run, fault, alone) = match body {
        Body::Rule(run, fault, alone) => (run, fault, alone),
        Body::Broken(message) => return Outcome::Failed { message },
    };
    let Some(info) = pool.info.clone() else {
        return Outcome::Failed {
            message: "the provider's info is unknown".to_owned(),
        };
    };
    let lock = pool.lock.clone();
    let (_shared, _exclusive) = if alone {
        (None, Some(lock.write_owned().await))
    } else {
        (Some(lock.read_owned().await), None)
    };
    let scope = TrialScope::new(
        pool.provider.clone(),
        info,
        pool.fixtures.clone(),
        Arc::new(pool.ids.for_trial(number)),
    );
    let limit = pool.fixtures.trial_timeout;
    let task = tokio::spawn(tokio::time::timeout(limit, run(scope.clone())));
    let mut problems = Vec::new();
    match task.await {
        Ok(Ok(Ok(()))) => {}
        Ok(Ok(Err(failure))) => problems.push(failure.0),
        Ok(Err(_)) => problems.push(format!("the trial took longer than {limit:?}")),
        Err(error) => problems.push(panic_message(error)),
    }
    if let (Some(fault), Some(faults)) = (fault, &pool.fixtures.faults)
        && let Err(error) = faults.clear(fault).await
    {
        problems.push(format!(
            "clearing the fault {} failed: {error}",
            fault.as_str()
        ));
    }
    let mut leftovers = Vec::new();
    for id in scope.created() {
        match tokio::time::timeout(pool.fixtures.op_timeout, pool.provider.delete(&id)).await {
            Ok(Ok(())) => {}
            Ok(Err(error)) => leftovers.push(format!("{id} ({error})")),
            Err(_) => leftovers.push(format!("{id} (delete timed out)")),
        }
    }
    if !leftovers.is_empty() {
        problems.push(format!("cleanup could not delete {}", leftovers.join(", ")));
    }
    if problems.is_empty() {
        Outcome::Passed
    } else {
        Outcome::Failed {
            message: problems.join("; "),
        }
    }
}

/// Describes a trial task that panicked or was cancelled.
fn panic_message(error: tokio::task::JoinError) -> String {
    if !error.is_panic() {
        return "the trial was cancelled".to_owned();
    }
    let payload = error.into_panic();
    let text = payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a non-text panic".to_owned());
    format!("the trial panicked: {text}")
}

/// Collects trial records from the trials' threads.
#[derive(Clone, Default)]
struct Recorder(Arc<Mutex<Vec<TrialRecord>>>);

impl Recorder {
    /// Adds a record.
    fn record(&self, record: TrialRecord) {
        if let Ok(mut records) = self.0.lock() {
            records.push(record);
        }
    }

    /// Takes every record.
    fn take(&self) -> Vec<TrialRecord> {
        self.0
            .lock()
            .map(|mut r| std::mem::take(&mut *r))
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn passes(_: TrialScope) -> TrialFuture {
        Box::pin(async { Ok(()) })
    }

    fn case(name: &str, alone: bool, waits: bool) -> Case {
        clock_case(name, alone, waits, false)
    }

    fn clock_case(name: &str, alone: bool, waits: bool, moves_clock: bool) -> Case {
        Case {
            number: 0,
            name: name.to_owned(),
            pool: 0,
            group: Group::Core,
            rule: name.to_owned(),
            kind: TrialKind::Promise,
            rows: Vec::new(),
            skip: None,
            waits,
            moves_clock,
            body: Body::Rule(passes, None, alone || moves_clock),
        }
    }

    #[test]
    fn lone_trials_start_first_then_the_waiting_ones_then_the_rest_in_catalogue_order() {
        let mut cases = [
            case("a", false, false),
            case("wait1", false, true),
            case("alone1", true, false),
            case("b", false, false),
            case("wait2", false, true),
            case("alone2", true, true),
        ];
        cases.sort_by_key(Case::start);
        let names: Vec<&str> = cases.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["alone1", "alone2", "wait1", "wait2", "a", "b"]);
    }

    #[test]
    fn trials_that_move_the_clock_start_after_all_the_others() {
        let mut cases = [
            clock_case("clock1", false, true, true),
            case("a", false, false),
            case("alone1", true, false),
            clock_case("clock2", false, true, true),
            case("wait1", false, true),
            case("b", false, false),
        ];
        cases.sort_by_key(Case::start);
        let names: Vec<&str> = cases.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["alone1", "wait1", "a", "b", "clock1", "clock2"]);
    }

    struct StillClock;

    #[sandbox_contract::async_trait]
    impl crate::fixtures::ClusterClock for StillClock {
        async fn advance(&self, _by: Duration) -> Result<(), sandbox_contract::Error> {
            Ok(())
        }
    }

    /// The names of the prepared cases that wait, each with whether it runs alone, and
    /// whether they are the last cases.
    fn waiting_cases(fixtures: Fixtures) -> (Vec<(String, bool)>, bool) {
        let provider = crate::ReferenceProvider::new();
        let prepared = Suite::new()
            .pool("reference", Arc::new(provider), fixtures)
            .prepare();
        let waiting: Vec<(String, bool)> = prepared
            .cases
            .iter()
            .filter(|c| c.waits)
            .map(|c| (c.name.clone(), matches!(c.body, Body::Rule(_, _, true))))
            .collect();
        let count = waiting.len();
        let last = prepared.cases.iter().rev().take(count).all(|c| c.waits);
        (waiting, last)
    }

    #[test]
    fn waiting_trials_move_the_clock_alone_and_last_only_when_the_fixtures_give_a_clock() {
        let fixtures = crate::ReferenceProvider::new().fixtures();
        let (waiting, last) = waiting_cases(fixtures.clone());
        assert_eq!(waiting.len(), 2, "{waiting:?}");
        assert!(waiting.iter().all(|(_, alone)| !alone), "{waiting:?}");
        assert!(!last, "without a clock the waiting trials start early");
        let with_clock = Fixtures {
            clock: Some(Arc::new(StillClock)),
            ..fixtures
        };
        let (waiting, last) = waiting_cases(with_clock);
        assert_eq!(waiting.len(), 2, "{waiting:?}");
        assert!(waiting.iter().all(|(_, alone)| *alone), "{waiting:?}");
        assert!(last, "with a clock the waiting trials start last");
    }

    #[test]
    fn only_the_trials_that_wait_for_the_ttl_backstop_are_marked_as_waiting() {
        let waiting: Vec<String> = catalog()
            .iter()
            .filter(|rule| rule.waits)
            .map(|rule| rule.full_name())
            .collect();
        assert_eq!(
            waiting,
            [
                "ttl::backstop_removes_the_sandbox",
                "ttl::moved_expiry_is_what_the_backstop_uses"
            ]
        );
    }
}
