//! The seed's live checks, one libtest-mimic trial each, run in order on one thread: the
//! direct pool's sandbox from create to delete, the missing image, the warm pool's claim, and
//! last the check that nothing was left behind.
//!
//! Each check that needs the scenario's sandbox makes it when an earlier check has not (so a
//! name filter can pick any one check), and each records its duration and a note.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant, SystemTime};

use bytes::Bytes;
use k8s_openapi::api::core::v1::{PersistentVolumeClaim, Pod, Service};
use kube::core::DynamicObject;
use libtest_mimic::{Failed, Trial};
use sandbox_contract::{
    CreateRequest, Error, ErrorCode, ExecEvent, ExecRequest, FileKind, Provider, SandboxId,
    SandboxState,
};
use serde_json::Value;
use tokio::runtime::Handle;

use sandbox_conformance::explained::{Explained, Tally, reconcile};

use crate::leaks::Observed;
use crate::observer::{Objects, ObserveError, Observer};
use crate::settings::{Backend, Settings};
use crate::timings::{Outcome, Timing, Timings};

/// The TTL every check's sandbox gets, so that an aborted run cleans up after itself.
const RUN_TTL: Duration = Duration::from_secs(30 * 60);

/// The size of the file the file checks write, read back and list.
const FILE_BYTES: usize = 300 * 1024;

/// What a check answers: a note (what it measured) or why it failed.
pub type CheckResult = Result<Option<String>, String>;

/// A check's body.
type CheckFuture = Pin<Box<dyn Future<Output = CheckResult> + Send>>;

/// What the checks run on and share: the pools under test, the run's own observer of the
/// cluster, the settings, and the sandboxes the checks have made so far.
pub struct Testbed {
    /// The direct pool (volume and ports.expose on).
    pub direct: Arc<dyn Provider>,
    /// The warm pool.
    pub warm: Arc<dyn Provider>,
    /// The run's own eyes.
    pub observer: Observer,
    /// The run's settings.
    pub settings: Settings,
    /// The kind of server.
    pub backend: Backend,
    /// Makes this run's sandbox ids unique.
    pub run_token: String,
    /// The Sandboxes and claims the baseline found, ignored by the leak check.
    pub baseline: std::collections::BTreeSet<String>,
    /// The sandboxes the checks have made and not deleted yet.
    pub state: Mutex<State>,
    /// Under `LIVE_CHAOS=1`: the pools' calls, counted (the pools are wrapped in
    /// [`sandbox_conformance::explained::Counted`]), and the ids the run created.
    pub chaos: Option<Tally>,
    /// The codes a fault explains under chaos (`LIVE_CHAOS_EXPLAINS` adds to the defaults).
    pub explained: Explained,
}

/// The scenarios' sandboxes.
#[derive(Debug, Default)]
pub struct State {
    /// The direct pool's sandbox, once created.
    pub direct: Option<SandboxId>,
    /// The warm pool's sandbox, once created.
    pub warm: Option<SandboxId>,
}

impl Testbed {
    /// The id of a sandbox of this run, `lv-<token>-<suffix>`.
    fn id(&self, suffix: &str) -> Result<SandboxId, String> {
        SandboxId::new(format!("lv-{}-{suffix}", self.run_token))
            .map_err(|e| format!("bad sandbox id: {e}"))
    }

    /// Locks the state.
    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The last check, which a fault never explains.
const LEAK_CHECK: &str = "live::leaks::nothing_is_left_behind";

/// One live check.
struct Check {
    /// Its trial name.
    name: &'static str,
    /// Its body.
    run: fn(Arc<Testbed>) -> CheckFuture,
    /// Why it cannot run here, if it cannot.
    skip: fn(&Testbed) -> Option<String>,
}

/// Never skips.
fn always(_: &Testbed) -> Option<String> {
    None
}

/// Skips the missing-image check on a fakekube that was not told the image is missing.
fn unless_image_marked(testbed: &Testbed) -> Option<String> {
    (testbed.backend == Backend::Fakekube && !testbed.settings.missing_image_marked).then(|| {
        format!(
            "fakekube runs every image unless told otherwise; start it with \
             `--missing-image {}` and set LIVE_MISSING_IMAGE_MARKED=1",
            testbed.settings.missing_image
        )
    })
}

/// The checks, in the order they run.
fn catalog() -> Vec<Check> {
    vec![
        Check {
            name: "live::direct::create_runs_the_sandbox",
            run: |c| Box::pin(direct_create(c)),
            skip: always,
        },
        Check {
            name: "live::direct::create_again_adopts_it",
            run: |c| Box::pin(direct_create_again(c)),
            skip: always,
        },
        Check {
            name: "live::direct::list_includes_it_once",
            run: |c| Box::pin(direct_list(c)),
            skip: always,
        },
        Check {
            name: "live::direct::exec_sees_env_cwd_and_argv",
            run: |c| Box::pin(direct_exec_env_cwd_and_argv(c)),
            skip: always,
        },
        Check {
            name: "live::direct::exit_code_7_is_data",
            run: |c| Box::pin(direct_exit_7(c)),
            skip: always,
        },
        Check {
            name: "live::direct::stdin_reaches_the_command",
            run: |c| Box::pin(direct_stdin(c)),
            skip: always,
        },
        Check {
            name: "live::direct::missing_binary_exits_127",
            run: |c| Box::pin(direct_missing_binary(c)),
            skip: always,
        },
        Check {
            name: "live::direct::timeout_of_1s_exits_124",
            run: |c| Box::pin(direct_timeout(c)),
            skip: always,
        },
        Check {
            name: "live::direct::streaming_delivers_output_as_it_comes",
            run: |c| Box::pin(direct_streaming(c)),
            skip: always,
        },
        Check {
            name: "live::direct::file_of_300_kib_round_trips",
            run: |c| Box::pin(direct_files(c)),
            skip: always,
        },
        Check {
            name: "live::direct::missing_files_and_directories_are_not_found",
            run: |c| Box::pin(direct_missing_paths(c)),
            skip: always,
        },
        Check {
            name: "live::direct::stop_deletes_the_pod_and_keeps_the_volume",
            run: |c| Box::pin(direct_stop(c)),
            skip: always,
        },
        Check {
            name: "live::direct::exec_while_stopped_is_invalid_state",
            run: |c| Box::pin(direct_exec_while_stopped(c)),
            skip: always,
        },
        Check {
            name: "live::direct::start_keeps_only_the_volume_s_files",
            run: |c| Box::pin(direct_start(c)),
            skip: always,
        },
        Check {
            name: "live::direct::service_dns_name_is_the_sandbox_s",
            run: |c| Box::pin(direct_service_dns(c)),
            skip: always,
        },
        Check {
            name: "live::direct::ttl_backstop_moves",
            run: |c| Box::pin(direct_ttl(c)),
            skip: always,
        },
        Check {
            name: "live::direct::delete_removes_it_and_is_idempotent",
            run: |c| Box::pin(direct_delete(c)),
            skip: always,
        },
        Check {
            name: "live::direct::missing_image_is_invalid_request_and_removed",
            run: |c| Box::pin(direct_missing_image(c)),
            skip: unless_image_marked,
        },
        Check {
            name: "live::warm::create_adopts_a_warm_pod",
            run: |c| Box::pin(warm_create(c)),
            skip: always,
        },
        Check {
            name: "live::warm::exec_runs_in_the_adopted_pod",
            run: |c| Box::pin(warm_exec(c)),
            skip: always,
        },
        Check {
            name: "live::warm::stdin_reaches_the_command",
            run: |c| Box::pin(warm_stdin(c)),
            skip: always,
        },
        Check {
            name: "live::warm::streaming_delivers_output_as_it_comes",
            run: |c| Box::pin(warm_streaming(c)),
            skip: always,
        },
        Check {
            name: "live::warm::file_of_300_kib_round_trips",
            run: |c| Box::pin(warm_files(c)),
            skip: always,
        },
        Check {
            name: "live::warm::stop_answers_501",
            run: |c| Box::pin(warm_stop(c)),
            skip: always,
        },
        Check {
            name: "live::warm::delete_removes_the_claim",
            run: |c| Box::pin(warm_delete(c)),
            skip: always,
        },
        Check {
            name: LEAK_CHECK,
            run: |c| Box::pin(nothing_left_behind(c)),
            skip: always,
        },
    ]
}

/// Returns the checks' names, in order.
#[cfg(test)]
fn names() -> Vec<&'static str> {
    catalog().into_iter().map(|c| c.name).collect()
}

/// Builds the trials: each blocks on `runtime`, times its check and records it in `timings`.
/// A skipped check is an ignored trial; run with `--ignored` it fails with its reason. Under
/// `LIVE_CHAOS=1` a check (but the leak check) that fails with a message quoting a code a
/// fault explains is recorded as explained and does not fail its trial.
pub fn trials(testbed: Arc<Testbed>, runtime: Handle, timings: Timings) -> Vec<Trial> {
    catalog()
        .into_iter()
        .enumerate()
        .map(|(order, check)| {
            let reason = (check.skip)(&testbed);
            let ignored = reason.is_some();
            if let Some(reason) = &reason {
                timings.record(Timing {
                    order,
                    name: check.name.to_owned(),
                    outcome: Outcome::Skipped(reason.clone()),
                    took: Duration::ZERO,
                    note: None,
                });
            }
            let testbed = testbed.clone();
            let runtime = runtime.clone();
            let timings = timings.clone();
            Trial::test(check.name, move || {
                if let Some(reason) = reason {
                    return Err(Failed::from(format!("skipped here: {reason}")));
                }
                let limit = testbed.backend.check_timeout();
                let started = Instant::now();
                let result = runtime.block_on(async {
                    tokio::time::timeout(limit, (check.run)(testbed.clone()))
                        .await
                        .unwrap_or_else(|_| {
                            Err(format!("did not finish within {}s", limit.as_secs()))
                        })
                });
                let took = started.elapsed();
                let explainable = testbed.chaos.is_some() && check.name != LEAK_CHECK;
                let (outcome, note, verdict) = match result {
                    Ok(note) => (Outcome::Passed, note, Ok(())),
                    Err(message)
                        if explainable && testbed.explained.code_in(&message).is_some() =>
                    {
                        (Outcome::Explained(message), None, Ok(()))
                    }
                    Err(message) => (
                        Outcome::Failed(message.clone()),
                        None,
                        Err(Failed::from(message)),
                    ),
                };
                timings.record(Timing {
                    order,
                    name: check.name.to_owned(),
                    outcome,
                    took,
                    note,
                });
                verdict
            })
            .with_ignored_flag(ignored)
        })
        .collect()
}

/// Fails the check with a formatted message unless the condition holds.
macro_rules! ensure {
    ($cond:expr, $($message:tt)+) => {
        if !$cond {
            return Err(format!($($message)+));
        }
    };
}

/// Describes a provider error for a failure message.
fn show(what: &str) -> impl Fn(Error) -> String + '_ {
    move |e| format!("{what}: {e}")
}

/// Expects `result` to be the error `code`; returns the error.
fn expect_code<T: std::fmt::Debug>(
    what: &str,
    result: Result<T, Error>,
    code: ErrorCode,
) -> Result<Error, String> {
    match result {
        Err(e) if e.code() == code => Ok(e),
        Err(e) => Err(format!("{what}: expected {code}, got {e}")),
        Ok(value) => Err(format!("{what}: expected {code}, got success: {value:?}")),
    }
}

/// A duration for notes: milliseconds below a second, else seconds with one decimal.
fn secs(d: Duration) -> String {
    if d < Duration::from_secs(1) {
        format!("{} ms", d.as_millis())
    } else {
        format!("{:.1} s", d.as_secs_f64())
    }
}

/// Waits until `get` of `id` answers `not_found` (a sandbox may stay `deleting` a while).
async fn wait_gone(provider: &dyn Provider, id: &SandboxId, wait: Duration) -> Result<(), String> {
    let deadline = Instant::now() + wait;
    loop {
        match provider.get(id).await {
            Err(e) if e.is_not_found() => return Ok(()),
            Err(e) => return Err(format!("get {id} after delete: {e}")),
            Ok(sandbox) => {
                ensure!(
                    Instant::now() < deadline,
                    "{id} is still {} {}s after delete",
                    sandbox.state,
                    wait.as_secs()
                );
            }
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Waits until the observer gets 404 for the object `name`.
async fn wait_absent<K>(
    testbed: &Testbed,
    objects: &Objects<K>,
    name: &str,
    what: &str,
) -> Result<(), String>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    let wait = testbed.backend.cleanup_wait();
    let deadline = Instant::now() + wait;
    loop {
        match objects.get_opt(name).await {
            Ok(None) => return Ok(()),
            Ok(Some(_)) => ensure!(
                Instant::now() < deadline,
                "{what} still exists after {}s",
                wait.as_secs()
            ),
            Err(e) => return Err(format!("observing {what}: {}", e.report())),
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// Describes an observer error for a failure message, with its causes.
fn seen(error: ObserveError) -> String {
    error.report()
}

/// The direct scenario's sandbox, created now when no earlier check made it.
async fn direct_sandbox(testbed: &Testbed) -> Result<SandboxId, String> {
    if let Some(id) = testbed.state().direct.clone() {
        return Ok(id);
    }
    let id = testbed.id("d")?;
    testbed
        .direct
        .create(CreateRequest::new(id.clone()).with_ttl(RUN_TTL))
        .await
        .map_err(show("create"))?;
    testbed.state().direct = Some(id.clone());
    Ok(id)
}

/// The direct scenario's sandbox, started if a check stopped it.
async fn running_direct(testbed: &Testbed) -> Result<SandboxId, String> {
    let id = direct_sandbox(testbed).await?;
    let sandbox = testbed.direct.get(&id).await.map_err(show("get"))?;
    if sandbox.state == SandboxState::Stopped {
        testbed.direct.start(&id).await.map_err(show("start"))?;
    }
    Ok(id)
}

/// Runs `request` in the direct sandbox.
async fn run_direct(
    testbed: &Testbed,
    request: ExecRequest,
) -> Result<sandbox_contract::ExecOutput, String> {
    let id = running_direct(testbed).await?;
    testbed
        .direct
        .exec(&id, request)
        .await
        .map_err(show("exec"))
}

/// Create answers a running sandbox (the seed: about 5 s with the image cached).
async fn direct_create(testbed: Arc<Testbed>) -> CheckResult {
    let id = testbed.id("d")?;
    let started = Instant::now();
    let sandbox = testbed
        .direct
        .create(CreateRequest::new(id.clone()).with_ttl(RUN_TTL))
        .await
        .map_err(show("create"))?;
    let took = started.elapsed();
    testbed.state().direct = Some(id.clone());
    ensure!(
        sandbox.state == SandboxState::Running,
        "create answered {}, not running",
        sandbox.state
    );
    ensure!(sandbox.id == id, "create answered the id {}", sandbox.id);
    Ok(Some(format!("running in {}", secs(took))))
}

/// A second create of the same id adopts the Sandbox instead of making another.
async fn direct_create_again(testbed: Arc<Testbed>) -> CheckResult {
    let id = direct_sandbox(&testbed).await?;
    let sandboxes = testbed.observer.sandboxes();
    let uid = |object: Option<DynamicObject>| object.and_then(|o| o.metadata.uid);
    let before = uid(sandboxes.get_opt(id.as_str()).await.map_err(seen)?);
    let again = testbed
        .direct
        .create(CreateRequest::new(id.clone()).with_ttl(RUN_TTL))
        .await
        .map_err(show("second create"))?;
    ensure!(
        again.state == SandboxState::Running,
        "second create answered {}",
        again.state
    );
    let after = uid(sandboxes.get_opt(id.as_str()).await.map_err(seen)?);
    ensure!(
        before.is_some() && before == after,
        "the Sandbox changed identity: uid {before:?} then {after:?}"
    );
    Ok(Some("same Sandbox uid".to_owned()))
}

/// List has the sandbox exactly once.
async fn direct_list(testbed: Arc<Testbed>) -> CheckResult {
    let id = direct_sandbox(&testbed).await?;
    let all = testbed.direct.list().await.map_err(show("list"))?;
    let found = all.iter().filter(|s| s.id == id).count();
    ensure!(
        found == 1,
        "list has {id} {found} times among {}",
        all.len()
    );
    Ok(Some(format!("{} sandbox(es) listed", all.len())))
}

/// Environment, working directory and an argument list arrive as given.
async fn direct_exec_env_cwd_and_argv(testbed: Arc<Testbed>) -> CheckResult {
    let argv = run_direct(
        &testbed,
        ExecRequest::new(["printf", "[%s]", "two words", "it's", "$HOME", "a\"b", ""]),
    )
    .await?;
    ensure!(
        argv.exit_code == 0 && argv.stdout == "[two words][it's][$HOME][a\"b][]",
        "argv: exit {}, stdout {:?}",
        argv.exit_code,
        String::from_utf8_lossy(&argv.stdout)
    );
    let env = run_direct(
        &testbed,
        ExecRequest::new(["sh", "-c", "echo \"$LIVE_GREETING\""])
            .with_env("LIVE_GREETING", "hello from live"),
    )
    .await?;
    ensure!(
        env.stdout == "hello from live\n",
        "env: stdout {:?}",
        String::from_utf8_lossy(&env.stdout)
    );
    let cwd = run_direct(&testbed, ExecRequest::new(["pwd"]).with_cwd("/tmp")).await?;
    ensure!(
        cwd.stdout == "/tmp\n",
        "cwd: stdout {:?}",
        String::from_utf8_lossy(&cwd.stdout)
    );
    Ok(None)
}

/// A non-zero exit is data, with both streams.
async fn direct_exit_7(testbed: Arc<Testbed>) -> CheckResult {
    let out = run_direct(
        &testbed,
        ExecRequest::new(["sh", "-c", "echo out; echo err >&2; exit 7"]),
    )
    .await?;
    ensure!(
        out.exit_code == 7 && out.stdout == "out\n" && out.stderr == "err\n",
        "exit {}, stdout {:?}, stderr {:?}",
        out.exit_code,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    Ok(None)
}

/// Stdin bytes reach the command, then end of input.
async fn stdin_check(provider: &dyn Provider, id: &SandboxId) -> CheckResult {
    let input = Bytes::from_static(b"line one\nline two\n");
    let out = provider
        .exec(id, ExecRequest::new(["cat"]).with_stdin(input.clone()))
        .await
        .map_err(show("exec"))?;
    ensure!(
        out.exit_code == 0 && out.stdout == input,
        "cat: exit {}, stdout {:?}",
        out.exit_code,
        String::from_utf8_lossy(&out.stdout)
    );
    Ok(None)
}

/// Stdin in the direct pool.
async fn direct_stdin(testbed: Arc<Testbed>) -> CheckResult {
    let id = running_direct(&testbed).await?;
    stdin_check(testbed.direct.as_ref(), &id).await
}

/// A program that does not exist exits 127.
async fn direct_missing_binary(testbed: Arc<Testbed>) -> CheckResult {
    let out = run_direct(&testbed, ExecRequest::new(["live-no-such-program", "x"])).await?;
    ensure!(out.exit_code == 127, "exit {}", out.exit_code);
    Ok(None)
}

/// A 1 s timeout ends a long command with 124, keeping what it printed first.
async fn direct_timeout(testbed: Arc<Testbed>) -> CheckResult {
    let started = Instant::now();
    let out = run_direct(
        &testbed,
        ExecRequest::new(["sh", "-c", "echo started; sleep 30"])
            .with_timeout(Duration::from_secs(1)),
    )
    .await?;
    let took = started.elapsed();
    ensure!(out.exit_code == 124, "exit {}", out.exit_code);
    ensure!(
        out.stdout == "started\n",
        "stdout {:?}",
        String::from_utf8_lossy(&out.stdout)
    );
    ensure!(
        took < Duration::from_secs(15),
        "took {} for a 1 s timeout",
        secs(took)
    );
    Ok(Some(format!("ended after {}", secs(took))))
}

/// Output is streamed as it is written, stdout and stderr apart, then one exit.
async fn streaming_check(provider: &dyn Provider, id: &SandboxId) -> CheckResult {
    let started = Instant::now();
    let mut session = provider
        .exec_stream(
            id,
            ExecRequest::new([
                "sh",
                "-c",
                "echo one; sleep 1; echo two >&2; sleep 1; echo three",
            ]),
        )
        .await
        .map_err(show("exec_stream"))?;
    let mut events = Vec::new();
    while let Some(event) = session.next_event().await {
        events.push((started.elapsed(), event.map_err(show("stream"))?));
    }
    let mut stdout = Vec::new();
    let mut stderr = Vec::new();
    let mut first_stdout = None;
    let mut exits = Vec::new();
    for (at, event) in &events {
        match event {
            ExecEvent::Stdout(chunk) => {
                first_stdout.get_or_insert(*at);
                stdout.extend_from_slice(chunk);
            }
            ExecEvent::Stderr(chunk) => stderr.extend_from_slice(chunk),
            ExecEvent::Exit(code) => exits.push((*at, *code)),
        }
    }
    ensure!(
        stdout == b"one\nthree\n" && stderr == b"two\n",
        "stdout {:?}, stderr {:?}",
        String::from_utf8_lossy(&stdout),
        String::from_utf8_lossy(&stderr)
    );
    let last_is_exit = matches!(events.last(), Some((_, ExecEvent::Exit(0))));
    ensure!(
        exits.len() == 1 && last_is_exit,
        "exit events {exits:?}; the last event must be the only exit, 0"
    );
    let (Some(first), Some((exit_at, _))) = (first_stdout, exits.first()) else {
        return Err("no output before the exit".to_owned());
    };
    let lead = exit_at.saturating_sub(first);
    ensure!(
        lead >= Duration::from_millis(1500),
        "the first line arrived only {} before the exit: output was held back",
        secs(lead)
    );
    Ok(Some(format!(
        "first output at {}, exit at {}",
        secs(first),
        secs(*exit_at)
    )))
}

/// Streaming in the direct pool.
async fn direct_streaming(testbed: Arc<Testbed>) -> CheckResult {
    let id = running_direct(&testbed).await?;
    streaming_check(testbed.direct.as_ref(), &id).await
}

/// The 300 KiB the file checks write: every byte value, in a pattern.
fn file_content() -> Bytes {
    (0..FILE_BYTES)
        .map(|i| (i.wrapping_mul(7) % 256) as u8)
        .collect()
}

/// A 300 KiB file is written, read back byte for byte, listed and described.
async fn files_check(provider: &dyn Provider, id: &SandboxId, dir: &str) -> CheckResult {
    let data = file_content();
    let parent = format!("{dir}/live-files");
    let path = format!("{parent}/data.bin");
    let started = Instant::now();
    provider
        .write_file(id, &path, data.clone())
        .await
        .map_err(show("write_file"))?;
    let wrote = started.elapsed();
    let back = provider
        .read_file(id, &path, 1 << 20)
        .await
        .map_err(show("read_file"))?;
    ensure!(
        back == data,
        "read back {} bytes that differ from the {} written",
        back.len(),
        data.len()
    );
    let entries = provider
        .list_dir(id, &parent)
        .await
        .map_err(show("list_dir"))?;
    let entry = entries
        .iter()
        .find(|e| e.name == "data.bin")
        .ok_or_else(|| format!("list_dir {parent} lacks data.bin: {entries:?}"))?;
    ensure!(
        entry.kind == FileKind::File && entry.size == FILE_BYTES as u64 && entry.path == path,
        "list_dir describes data.bin as {entry:?}"
    );
    let info = provider.stat(id, &path).await.map_err(show("stat"))?;
    ensure!(
        info.kind == FileKind::File && info.size == FILE_BYTES as u64,
        "stat describes data.bin as {info:?}"
    );
    Ok(Some(format!(
        "written in {}, read in {}",
        secs(wrote),
        secs(started.elapsed().saturating_sub(wrote))
    )))
}

/// Files in the direct pool, on the volume.
async fn direct_files(testbed: Arc<Testbed>) -> CheckResult {
    let id = running_direct(&testbed).await?;
    files_check(testbed.direct.as_ref(), &id, "/workspace").await
}

/// Missing files and directories answer `not_found` for read, list and stat.
async fn direct_missing_paths(testbed: Arc<Testbed>) -> CheckResult {
    let id = running_direct(&testbed).await?;
    let p = testbed.direct.as_ref();
    expect_code(
        "read_file of a missing file",
        p.read_file(&id, "/workspace/live-absent.txt", 1024).await,
        ErrorCode::NotFound,
    )?;
    expect_code(
        "list_dir of a missing directory",
        p.list_dir(&id, "/workspace/live-absent-dir").await,
        ErrorCode::NotFound,
    )?;
    expect_code(
        "stat under a missing directory",
        p.stat(&id, "/live-absent-dir/deeper").await,
        ErrorCode::NotFound,
    )?;
    Ok(None)
}

/// The files the stop checks leave: one on the volume, one outside it.
const KEPT: &str = "/workspace/live-kept.txt";
/// Outside the volume: gone after a stop.
const LOST: &str = "/tmp/live-lost.txt";

/// Writes the two files and stops the direct sandbox; returns its id and how long stop took.
async fn write_and_stop(testbed: &Testbed) -> Result<(SandboxId, Duration), String> {
    let id = running_direct(testbed).await?;
    testbed
        .direct
        .write_file(&id, KEPT, Bytes::from_static(b"kept\n"))
        .await
        .map_err(show("write_file on the volume"))?;
    testbed
        .direct
        .write_file(&id, LOST, Bytes::from_static(b"lost\n"))
        .await
        .map_err(show("write_file outside the volume"))?;
    let started = Instant::now();
    let stopped = testbed.direct.stop(&id).await.map_err(show("stop"))?;
    ensure!(
        stopped.state == SandboxState::Stopped,
        "stop answered {}",
        stopped.state
    );
    Ok((id, started.elapsed()))
}

/// The direct sandbox, stopped (by [`write_and_stop`] if no check stopped it yet).
async fn stopped_direct(testbed: &Testbed) -> Result<SandboxId, String> {
    let id = direct_sandbox(testbed).await?;
    let sandbox = testbed.direct.get(&id).await.map_err(show("get"))?;
    if sandbox.state == SandboxState::Stopped {
        return Ok(id);
    }
    Ok(write_and_stop(testbed).await?.0)
}

/// Stop deletes the pod and keeps the Sandbox's PVC.
async fn direct_stop(testbed: Arc<Testbed>) -> CheckResult {
    let (id, took) = write_and_stop(&testbed).await?;
    let sandbox = testbed
        .observer
        .sandboxes()
        .get(id.as_str())
        .await
        .map_err(seen)?;
    let pod = sandbox
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get("agents.x-k8s.io/pod-name"))
        .map_or(id.as_str(), String::as_str)
        .to_owned();
    let pods = testbed.observer.core::<Pod>();
    wait_absent(&testbed, &pods, &pod, &format!("pod {pod}")).await?;
    let pvcs = testbed
        .observer
        .core::<PersistentVolumeClaim>()
        .list()
        .await
        .map_err(seen)?;
    let kept = pvcs.iter().any(|pvc| {
        pvc.metadata
            .owner_references
            .iter()
            .flatten()
            .any(|o| o.kind == "Sandbox" && o.name == id.as_str())
    });
    ensure!(kept, "no PVC of {id} is left while it is stopped");
    Ok(Some(format!(
        "stopped in {}; pod {pod} gone, PVC kept",
        secs(took)
    )))
}

/// Exec while stopped answers `invalid_state`.
async fn direct_exec_while_stopped(testbed: Arc<Testbed>) -> CheckResult {
    let id = stopped_direct(&testbed).await?;
    let error = expect_code(
        "exec while stopped",
        testbed.direct.exec(&id, ExecRequest::new(["true"])).await,
        ErrorCode::InvalidState,
    )?;
    Ok(Some(error.message().chars().take(80).collect()))
}

/// Start runs the sandbox again with the volume's file, and without the other.
async fn direct_start(testbed: Arc<Testbed>) -> CheckResult {
    let id = stopped_direct(&testbed).await?;
    let started = Instant::now();
    let sandbox = testbed.direct.start(&id).await.map_err(show("start"))?;
    let took = started.elapsed();
    ensure!(
        sandbox.state == SandboxState::Running,
        "start answered {}",
        sandbox.state
    );
    let kept = testbed
        .direct
        .read_file(&id, KEPT, 1024)
        .await
        .map_err(show("read_file of the volume's file"))?;
    ensure!(kept == "kept\n", "the volume's file holds {kept:?}");
    expect_code(
        "stat of the file outside the volume",
        testbed.direct.stat(&id, LOST).await,
        ErrorCode::NotFound,
    )?;
    Ok(Some(format!("running again in {}", secs(took))))
}

/// The exposed URL is the headless Service's DNS name, and it resolves in the cluster.
async fn direct_service_dns(testbed: Arc<Testbed>) -> CheckResult {
    let id = running_direct(&testbed).await?;
    let url = testbed
        .direct
        .expose_port(&id, 8080)
        .await
        .map_err(show("expose_port"))?;
    let host = format!("{id}.{}.svc.cluster.local", testbed.settings.namespace);
    ensure!(
        url == format!("http://{host}:8080"),
        "expose_port answered {url}"
    );
    let service = testbed
        .observer
        .core::<Service>()
        .get_opt(id.as_str())
        .await
        .map_err(seen)?
        .ok_or_else(|| format!("there is no Service {id}"))?;
    let cluster_ip = service.spec.and_then(|spec| spec.cluster_ip);
    let cluster_ip = cluster_ip.as_deref();
    ensure!(
        cluster_ip == Some("None"),
        "Service {id} is not headless: clusterIP {cluster_ip:?}"
    );
    if testbed.backend == Backend::Fakekube {
        return Ok(Some(
            "headless Service found; DNS not checked (fakekube has no cluster DNS)".to_owned(),
        ));
    }
    let out = testbed
        .direct
        .exec(&id, ExecRequest::new(["getent", "hosts", host.as_str()]))
        .await
        .map_err(show("exec getent"))?;
    let answer = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    ensure!(
        out.exit_code == 0 && !answer.is_empty(),
        "{host} does not resolve in the sandbox: exit {}, {answer:?}",
        out.exit_code
    );
    Ok(Some(format!(
        "{host} -> {}",
        answer.split_whitespace().next().unwrap_or("")
    )))
}

/// Reads an RFC 3339 time.
fn parse_time(text: &str) -> Option<SystemTime> {
    time::OffsetDateTime::parse(text, &time::format_description::well_known::Rfc3339)
        .ok()
        .map(SystemTime::from)
}

/// The distance between two times.
fn apart(a: SystemTime, b: SystemTime) -> Duration {
    a.duration_since(b)
        .or_else(|_| b.duration_since(a))
        .unwrap_or(Duration::MAX)
}

/// `set_ttl` moves the Sandbox's `shutdownTime` (with `shutdownPolicy: Delete`).
async fn direct_ttl(testbed: Arc<Testbed>) -> CheckResult {
    let id = running_direct(&testbed).await?;
    let before = testbed
        .direct
        .get(&id)
        .await
        .map_err(show("get"))?
        .expires_at;
    let ttl = Duration::from_secs(40 * 60);
    let asked = SystemTime::now() + ttl;
    let moved = testbed
        .direct
        .set_ttl(&id, Some(ttl))
        .await
        .map_err(show("set_ttl"))?;
    let expires = moved
        .expires_at
        .ok_or("set_ttl answered no expiry".to_owned())?;
    ensure!(
        apart(expires, asked) < Duration::from_secs(120),
        "set_ttl answered an expiry {}s away from the one asked",
        apart(expires, asked).as_secs()
    );
    ensure!(
        before.is_none_or(|b| apart(b, expires) >= Duration::from_secs(60)),
        "the expiry did not move"
    );
    let got = testbed
        .direct
        .get(&id)
        .await
        .map_err(show("get"))?
        .expires_at;
    ensure!(
        got.is_some_and(|g| apart(g, expires) < Duration::from_secs(2)),
        "get reports another expiry than set_ttl"
    );
    let sandbox = testbed
        .observer
        .sandboxes()
        .get(id.as_str())
        .await
        .map_err(seen)?
        .data;
    let shutdown = sandbox
        .pointer("/spec/shutdownTime")
        .and_then(Value::as_str)
        .and_then(parse_time);
    ensure!(
        shutdown.is_some_and(|s| apart(s, expires) < Duration::from_secs(2)),
        "spec.shutdownTime is {:?}",
        sandbox.pointer("/spec/shutdownTime")
    );
    let policy = sandbox
        .pointer("/spec/shutdownPolicy")
        .and_then(Value::as_str);
    ensure!(
        policy == Some("Delete"),
        "spec.shutdownPolicy is {policy:?}, not Delete"
    );
    Ok(Some("shutdownTime moved 40 min ahead".to_owned()))
}

/// Delete removes the Sandbox; a second delete succeeds too.
async fn direct_delete(testbed: Arc<Testbed>) -> CheckResult {
    let id = direct_sandbox(&testbed).await?;
    let started = Instant::now();
    testbed.direct.delete(&id).await.map_err(show("delete"))?;
    wait_gone(testbed.direct.as_ref(), &id, testbed.backend.cleanup_wait()).await?;
    let took = started.elapsed();
    testbed.state().direct = None;
    testbed
        .direct
        .delete(&id)
        .await
        .map_err(show("second delete"))?;
    let sandboxes = testbed.observer.sandboxes();
    wait_absent(&testbed, &sandboxes, id.as_str(), &format!("Sandbox {id}")).await?;
    Ok(Some(format!("gone in {}", secs(took))))
}

/// An image that does not exist fails create at once with `invalid_request`, and the
/// Sandbox is removed.
async fn direct_missing_image(testbed: Arc<Testbed>) -> CheckResult {
    let id = testbed.id("img")?;
    let started = Instant::now();
    let result = testbed
        .direct
        .create(
            CreateRequest::new(id.clone())
                .with_template(testbed.settings.missing_image.clone())
                .with_ttl(RUN_TTL),
        )
        .await;
    let took = started.elapsed();
    if result.is_ok() {
        let _ = testbed.direct.delete(&id).await;
    }
    expect_code(
        "create with a missing image",
        result,
        ErrorCode::InvalidRequest,
    )?;
    wait_gone(testbed.direct.as_ref(), &id, testbed.backend.cleanup_wait()).await?;
    let sandboxes = testbed.observer.sandboxes();
    wait_absent(&testbed, &sandboxes, id.as_str(), &format!("Sandbox {id}")).await?;
    Ok(Some(format!("refused in {}", secs(took))))
}

/// Waits until the warm pool has a ready member, so that a claim can adopt one.
async fn warm_pool_ready(testbed: &Testbed) -> Result<(), String> {
    let pools = testbed.observer.warm_pools();
    let wait = testbed.backend.warm_pool_wait();
    let deadline = Instant::now() + wait;
    loop {
        let pool = pools.get(&testbed.settings.warm_pool).await.map_err(seen)?;
        let ready = pool
            .data
            .pointer("/status/readyReplicas")
            .and_then(Value::as_u64)
            .unwrap_or(0);
        if ready > 0 {
            return Ok(());
        }
        ensure!(
            Instant::now() < deadline,
            "the SandboxWarmPool {} has no ready member after {}s",
            testbed.settings.warm_pool,
            wait.as_secs()
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// The warm scenario's sandbox, claimed now when no earlier check made it.
async fn warm_sandbox(testbed: &Testbed) -> Result<SandboxId, String> {
    if let Some(id) = testbed.state().warm.clone() {
        return Ok(id);
    }
    let id = testbed.id("w")?;
    warm_pool_ready(testbed).await?;
    testbed
        .warm
        .create(CreateRequest::new(id.clone()).with_ttl(RUN_TTL))
        .await
        .map_err(show("create"))?;
    testbed.state().warm = Some(id.clone());
    Ok(id)
}

/// Create claims a pre-started pod of the warm pool (the seed: 0.5 to 1 s).
async fn warm_create(testbed: Arc<Testbed>) -> CheckResult {
    let id = testbed.id("w")?;
    warm_pool_ready(&testbed).await?;
    let started = Instant::now();
    let sandbox = testbed
        .warm
        .create(CreateRequest::new(id.clone()).with_ttl(RUN_TTL))
        .await
        .map_err(show("create"))?;
    let took = started.elapsed();
    testbed.state().warm = Some(id.clone());
    ensure!(
        sandbox.state == SandboxState::Running,
        "create answered {}",
        sandbox.state
    );
    let claim = testbed
        .observer
        .claims()
        .get(id.as_str())
        .await
        .map_err(seen)?;
    let adopted = claim
        .data
        .pointer("/status/sandbox/name")
        .and_then(Value::as_str)
        .unwrap_or("");
    ensure!(
        !adopted.is_empty() && adopted != id.as_str(),
        "the claim did not adopt a warm Sandbox (status.sandbox.name {adopted:?}): it cold-started"
    );
    Ok(Some(format!("adopted {adopted} in {}", secs(took))))
}

/// A command runs in the adopted pod, its exit code kept.
async fn warm_exec(testbed: Arc<Testbed>) -> CheckResult {
    let id = warm_sandbox(&testbed).await?;
    let out = testbed
        .warm
        .exec(&id, ExecRequest::new(["sh", "-c", "echo warm; exit 3"]))
        .await
        .map_err(show("exec"))?;
    ensure!(
        out.exit_code == 3 && out.stdout == "warm\n",
        "exit {}, stdout {:?}",
        out.exit_code,
        String::from_utf8_lossy(&out.stdout)
    );
    Ok(None)
}

/// Stdin in the warm pool.
async fn warm_stdin(testbed: Arc<Testbed>) -> CheckResult {
    let id = warm_sandbox(&testbed).await?;
    stdin_check(testbed.warm.as_ref(), &id).await
}

/// Streaming in the warm pool.
async fn warm_streaming(testbed: Arc<Testbed>) -> CheckResult {
    let id = warm_sandbox(&testbed).await?;
    streaming_check(testbed.warm.as_ref(), &id).await
}

/// Files in the warm pool (no volume: under /tmp).
async fn warm_files(testbed: Arc<Testbed>) -> CheckResult {
    let id = warm_sandbox(&testbed).await?;
    files_check(testbed.warm.as_ref(), &id, "/tmp").await
}

/// Stop is not offered on a warm pool: `unsupported_operation`, HTTP 501.
async fn warm_stop(testbed: Arc<Testbed>) -> CheckResult {
    let id = warm_sandbox(&testbed).await?;
    let error = expect_code(
        "stop on a warm pool",
        testbed.warm.stop(&id).await,
        ErrorCode::UnsupportedOperation,
    )?;
    ensure!(
        error.http_status() == 501,
        "unsupported_operation maps to HTTP {}",
        error.http_status()
    );
    let still = testbed.warm.get(&id).await.map_err(show("get"))?;
    ensure!(
        still.state == SandboxState::Running,
        "after the refused stop the sandbox is {}",
        still.state
    );
    Ok(Some("501 unsupported_operation".to_owned()))
}

/// Delete removes the claim (and through it the adopted Sandbox); a second delete succeeds.
async fn warm_delete(testbed: Arc<Testbed>) -> CheckResult {
    let id = warm_sandbox(&testbed).await?;
    let started = Instant::now();
    testbed.warm.delete(&id).await.map_err(show("delete"))?;
    wait_gone(testbed.warm.as_ref(), &id, testbed.backend.cleanup_wait()).await?;
    let took = started.elapsed();
    testbed.state().warm = None;
    testbed
        .warm
        .delete(&id)
        .await
        .map_err(show("second delete"))?;
    let claims = testbed.observer.claims();
    wait_absent(&testbed, &claims, id.as_str(), &format!("claim {id}")).await?;
    Ok(Some(format!("gone in {}", secs(took))))
}

/// After the run (and deleting what the checks still hold), no Sandbox, claim, PVC or
/// Service is left in the namespace beyond the warm pool's members and what was there before.
async fn nothing_left_behind(testbed: Arc<Testbed>) -> CheckResult {
    let held: Vec<(Arc<dyn Provider>, SandboxId)> = {
        let mut state = testbed.state();
        let mut held = Vec::new();
        if let Some(id) = state.direct.take() {
            held.push((testbed.direct.clone(), id));
        }
        if let Some(id) = state.warm.take() {
            held.push((testbed.warm.clone(), id));
        }
        held
    };
    // Under chaos cleanups may have failed: the reconcile deletes whatever the pools still
    // list, each until its delete holds, and fails on any sandbox the run never created.
    let reconciled = match &testbed.chaos {
        Some(tally) => Some(
            reconcile(&[testbed.direct.clone(), testbed.warm.clone()], tally)
                .await
                .map_err(|e| format!("the reconcile after chaos: {e}"))?,
        ),
        None => {
            for (provider, id) in &held {
                provider
                    .delete(id)
                    .await
                    .map_err(show("deleting what a failed check left"))?;
            }
            None
        }
    };
    let wait = testbed.backend.cleanup_wait();
    let deadline = Instant::now() + wait;
    loop {
        let observed = Observed::list(&testbed.observer)
            .await
            .map_err(|e| format!("listing the namespace: {}", e.report()))?;
        let left: Vec<String> = observed
            .leftovers()
            .into_iter()
            .filter(|name| !testbed.baseline.contains(name))
            .collect();
        if left.is_empty() {
            let mut note = format!(
                "{} Sandbox(es) (the warm pool's), {} claim(s), {} PVC(s), {} Service(s) seen",
                observed.sandboxes.len(),
                observed.claims.len(),
                observed.pvcs.len(),
                observed.services.len()
            );
            if !testbed.baseline.is_empty() {
                note.push_str(&format!(
                    "; {} left from before the run ignored",
                    testbed.baseline.len()
                ));
            }
            match reconciled {
                Some(n) => note.push_str(&format!("; {n} deleted by the reconcile after chaos")),
                None if !held.is_empty() => {
                    note.push_str(&format!("; {} deleted after failed checks", held.len()));
                }
                None => {}
            }
            return Ok(Some(note));
        }
        ensure!(
            Instant::now() < deadline,
            "left behind after {}s: {}",
            wait.as_secs(),
            left.join(", ")
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checks_are_named_uniquely_under_live_and_the_leak_check_runs_last() {
        let names = names();
        let unique: std::collections::BTreeSet<_> = names.iter().collect();
        assert_eq!(unique.len(), names.len());
        assert!(names.iter().all(|n| n.starts_with("live::")));
        assert_eq!(names.last(), Some(&LEAK_CHECK));
    }

    #[test]
    fn the_direct_scenario_runs_before_the_warm_one() {
        let names = names();
        let last_direct = names.iter().rposition(|n| n.starts_with("live::direct::"));
        let first_warm = names.iter().position(|n| n.starts_with("live::warm::"));
        assert!(last_direct < first_warm, "{names:?}");
    }

    #[test]
    fn file_content_is_300_kib_holding_every_byte_value() {
        let data = file_content();
        assert_eq!(data.len(), 300 * 1024);
        let seen: std::collections::BTreeSet<u8> = data.iter().copied().collect();
        assert_eq!(seen.len(), 256);
    }

    #[test]
    fn parse_time_reads_rfc3339_as_the_api_server_writes_it() {
        let t = parse_time("2026-10-28T12:00:00Z").expect("parses");
        let epoch = t
            .duration_since(SystemTime::UNIX_EPOCH)
            .expect("after epoch")
            .as_secs();
        assert_eq!(epoch, 1_793_188_800);
        assert_eq!(parse_time("yesterday"), None);
    }

    #[test]
    fn secs_gives_milliseconds_below_a_second_and_tenths_above() {
        assert_eq!(secs(Duration::from_millis(18)), "18 ms");
        assert_eq!(secs(Duration::from_millis(4213)), "4.2 s");
    }

    #[test]
    fn apart_is_symmetric() {
        let a = SystemTime::UNIX_EPOCH + Duration::from_secs(10);
        let b = SystemTime::UNIX_EPOCH + Duration::from_secs(13);
        assert_eq!(apart(a, b), Duration::from_secs(3));
        assert_eq!(apart(b, a), Duration::from_secs(3));
    }

    #[test]
    fn expect_code_accepts_only_the_named_code() {
        let ok: Result<(), Error> = Err(Error::not_found("gone"));
        assert!(expect_code("x", ok, ErrorCode::NotFound).is_ok());
        let other: Result<(), Error> = Err(Error::invalid_state("stopped"));
        let message = expect_code("x", other, ErrorCode::NotFound).expect_err("wrong code");
        assert!(message.contains("expected not_found"), "{message}");
        let success: Result<u8, Error> = Ok(1);
        assert!(expect_code("x", success, ErrorCode::NotFound).is_err());
    }
}
