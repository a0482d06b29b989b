//! A container's process table ([`ProcessTable`]): every running program with its pid, parent,
//! command line and start time, for `ps`, `kill`, `$$`, `$!` and `wait`; and the [`Signal`]s
//! sent to them.
//!
//! Signals are delivered as cancellation. A process that traps a signal (a shell's `trap`) gets
//! it on its trap channel and runs its handler; one that ignores it (`trap '' TERM`) sees nothing;
//! any other is terminated: its cancellation token fires and it exits with `128 + n`. As in a
//! container's pid namespace, pid 1 ignores every signal it does not trap, from inside the
//! container (`kill` in a shell, `SIGKILL` included) and from outside
//! ([`ProcessTable::signal`], the kubelet stopping a container: a `SIGTERM` to a `sleep` or a
//! shell without a `trap` does nothing); only `SIGKILL` from outside always kills.

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::SystemTime;

use tokio::sync::{Notify, mpsc};
use tokio_util::sync::CancellationToken;

use super::limits::{ForkError, Limits, PROCESS_MEMORY, Verdict};

/// The signals the runtime knows: their numbers are Linux's on x86-64.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Signal {
    /// SIGHUP (1).
    Hup,
    /// SIGINT (2): the terminal's interrupt key.
    Int,
    /// SIGQUIT (3).
    Quit,
    /// SIGKILL (9): cannot be trapped or ignored.
    Kill,
    /// SIGUSR1 (10).
    Usr1,
    /// SIGUSR2 (12).
    Usr2,
    /// SIGPIPE (13).
    Pipe,
    /// SIGALRM (14).
    Alrm,
    /// SIGTERM (15): the default of `kill` and of a container's stop.
    Term,
}

impl Signal {
    /// Every signal, by number.
    pub const ALL: [Signal; 9] = [
        Signal::Hup,
        Signal::Int,
        Signal::Quit,
        Signal::Kill,
        Signal::Usr1,
        Signal::Usr2,
        Signal::Pipe,
        Signal::Alrm,
        Signal::Term,
    ];

    /// The signal's number.
    pub fn number(self) -> i32 {
        match self {
            Signal::Hup => 1,
            Signal::Int => 2,
            Signal::Quit => 3,
            Signal::Kill => 9,
            Signal::Usr1 => 10,
            Signal::Usr2 => 12,
            Signal::Pipe => 13,
            Signal::Alrm => 14,
            Signal::Term => 15,
        }
    }

    /// The name without `SIG`: `TERM`.
    pub fn name(self) -> &'static str {
        match self {
            Signal::Hup => "HUP",
            Signal::Int => "INT",
            Signal::Quit => "QUIT",
            Signal::Kill => "KILL",
            Signal::Usr1 => "USR1",
            Signal::Usr2 => "USR2",
            Signal::Pipe => "PIPE",
            Signal::Alrm => "ALRM",
            Signal::Term => "TERM",
        }
    }

    /// Parses a number or a name, with or without `SIG`, in any case (`15`, `TERM`, `sigterm`).
    pub fn parse(text: &str) -> Option<Signal> {
        if let Ok(n) = text.parse::<i32>() {
            return Signal::ALL.into_iter().find(|s| s.number() == n);
        }
        let upper = text.to_ascii_uppercase();
        let name = upper.strip_prefix("SIG").unwrap_or(&upper);
        Signal::ALL.into_iter().find(|s| s.name() == name)
    }

    /// The bit of this signal in a set.
    fn bit(self) -> u64 {
        1 << self.number()
    }
}

/// A process the table holds, as `ps` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcessInfo {
    /// Its pid (the container's main process is 1).
    pub pid: u32,
    /// Its parent's pid (0 for a process started from outside: the main one and execs).
    pub ppid: u32,
    /// Its command line.
    pub argv: Vec<String>,
    /// When it started.
    pub started: SystemTime,
}

/// Why a signal could not be sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum SignalError {
    /// No process has that pid (ESRCH).
    #[error("No such process")]
    NoSuchProcess,
}

/// Where a process that traps signals gets them, and which.
#[derive(Debug)]
struct Traps {
    /// The process's trap channel.
    tx: mpsc::UnboundedSender<Signal>,
    /// Signals it handles.
    trapped: u64,
    /// Signals it ignores.
    ignored: u64,
}

/// One running process.
#[derive(Debug)]
struct Entry {
    /// Parent pid.
    ppid: u32,
    /// Command line.
    argv: Vec<String>,
    /// Start time.
    started: SystemTime,
    /// Terminates it.
    token: CancellationToken,
    /// The signal that terminated it, once one did.
    killed_by: Option<Signal>,
    /// Its traps, if it set any.
    traps: Option<Traps>,
    /// The tree it belongs to: the pid of the process started from outside (an exec, the
    /// main process) that it descends from.
    tree: u32,
    /// Bytes charged to it, [`PROCESS_MEMORY`] included.
    memory: u64,
}

/// Trees the limits killed, remembered for their execs to report.
const VERDICTS_KEPT: usize = 64;

/// The table's state.
#[derive(Debug, Default)]
struct Table {
    /// The last pid handed out.
    last_pid: u32,
    /// The running processes, by pid (boxed: a map node has room for eleven, and most
    /// containers run two or three).
    entries: BTreeMap<u32, Box<Entry>>,
    /// The container's limits.
    limits: Limits,
    /// Bytes charged to all processes.
    memory: u64,
    /// Processes the memory limit killed.
    oom_kills: u64,
    /// Trees the limits killed, latest last.
    verdicts: VecDeque<(u32, Verdict)>,
    /// Signals sent to the main process before it started (see [`ProcessTable::signal_main`]).
    held: u64,
}

impl Table {
    /// Kills every process of `tree` and remembers why.
    fn kill_tree(&mut self, tree: u32, why: Verdict) {
        for e in self.entries.values_mut().filter(|e| e.tree == tree) {
            e.killed_by.get_or_insert(Signal::Kill);
            e.token.cancel();
        }
        self.remember(tree, why);
    }

    /// Remembers why `tree` was killed.
    fn remember(&mut self, tree: u32, why: Verdict) {
        if self.verdicts.iter().any(|(t, _)| *t == tree) {
            return;
        }
        if self.verdicts.len() >= VERDICTS_KEPT {
            self.verdicts.pop_front();
        }
        self.verdicts.push_back((tree, why));
    }

    /// Kills `pid` for going past the memory limit.
    fn oom_kill(&mut self, pid: u32) {
        let Some(e) = self.entries.get_mut(&pid) else {
            return;
        };
        e.killed_by.get_or_insert(Signal::Kill);
        e.token.cancel();
        let tree = e.tree;
        self.oom_kills += 1;
        self.remember(tree, Verdict::OutOfMemory);
    }
}

/// The table and the signal of its changes.
#[derive(Debug, Default)]
struct Shared {
    /// The table.
    table: Mutex<Table>,
    /// Woken whenever a process leaves the table.
    left: Notify,
}

/// The processes of one container (its pid namespace): the first process started in it is
/// pid 1. Clones share the table. It keeps the container's [`Limits`].
#[derive(Debug, Clone, Default)]
pub struct ProcessTable(Arc<Shared>);

impl ProcessTable {
    /// An empty table with the default limits: the next process started is pid 1.
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty table with these limits.
    pub fn with_limits(limits: Limits) -> Self {
        let table = Self::default();
        table.lock().limits = limits;
        table
    }

    /// The container's limits.
    pub fn limits(&self) -> Limits {
        self.lock().limits
    }

    /// Bytes of memory the container's processes are charged now.
    pub fn memory_used(&self) -> u64 {
        self.lock().memory
    }

    /// How many processes the memory limit killed (the kubelet reports a container whose
    /// main process was killed so as `OOMKilled`).
    pub fn oom_kills(&self) -> u64 {
        self.lock().oom_kills
    }

    /// Locks the table (a poisoned lock is still used: the table stays consistent per call).
    fn lock(&self) -> MutexGuard<'_, Table> {
        self.0.table.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Whether a process of `tree` is running.
    pub fn tree_alive(&self, tree: u32) -> bool {
        self.lock().entries.values().any(|e| e.tree == tree)
    }

    /// Why the limits killed `tree`, if they did.
    pub fn verdict(&self, tree: u32) -> Option<Verdict> {
        self.lock()
            .verdicts
            .iter()
            .find(|(t, _)| *t == tree)
            .map(|(_, v)| *v)
    }

    /// Resolves once a process leaves the table after this call (check the state after
    /// calling it, then await).
    pub fn left(&self) -> tokio::sync::futures::Notified<'_> {
        self.0.left.notified()
    }

    /// Charges `bytes` of memory to `pid`. Past the container's limit the process is killed
    /// (`SIGKILL`, counted as an OOM kill) and the charge refused.
    pub fn charge(&self, pid: u32, bytes: u64) -> Result<(), ForkError> {
        let mut table = self.lock();
        let limit = table.limits.memory.unwrap_or(u64::MAX);
        if table.memory.saturating_add(bytes) > limit {
            table.oom_kill(pid);
            return Err(ForkError::OutOfMemory);
        }
        if let Some(e) = table.entries.get_mut(&pid) {
            e.memory = e.memory.saturating_add(bytes);
            table.memory = table.memory.saturating_add(bytes);
        }
        Ok(())
    }

    /// Gives back `bytes` charged to `pid` (at most what it holds above its own cost).
    pub fn uncharge(&self, pid: u32, bytes: u64) {
        let mut table = self.lock();
        if let Some(e) = table.entries.get_mut(&pid) {
            let n = bytes.min(e.memory.saturating_sub(PROCESS_MEMORY));
            e.memory -= n;
            table.memory = table.memory.saturating_sub(n);
        }
    }

    /// The running processes, by pid.
    pub fn list(&self) -> Vec<ProcessInfo> {
        self.lock()
            .entries
            .iter()
            .map(|(pid, e)| ProcessInfo {
                pid: *pid,
                ppid: e.ppid,
                argv: e.argv.clone(),
                started: e.started,
            })
            .collect()
    }

    /// Sends `signal` to process `pid` from outside the container, as the container runtime
    /// does: a trapped signal runs the process's handler, an ignored one does nothing, any
    /// other terminates it, except pid 1, which only `SIGKILL` terminates.
    pub fn signal(&self, pid: u32, signal: Signal) -> Result<(), SignalError> {
        self.deliver(pid, signal, false)
    }

    /// Sends `signal` to the container's main process (pid 1), as a container stop does.
    ///
    /// A container is running before its main process's task has run: a signal sent before
    /// the process started is held for it, as if it had come just after its start-up. At its
    /// start a held `SIGKILL` ends it; a held signal it traps reaches its handler when it sets
    /// its first traps; the rest it ignores, as pid 1 does.
    pub fn signal_main(&self, signal: Signal) -> Result<(), SignalError> {
        {
            let mut table = self.lock();
            if table.last_pid == 0 {
                table.held |= signal.bit();
                return Ok(());
            }
        }
        self.signal(1, signal)
    }

    /// Sends `signal` to `pid` from a process of the container (`kill`): pid 1 ignores what
    /// it does not trap.
    pub fn signal_from_inside(&self, pid: u32, signal: Signal) -> Result<(), SignalError> {
        self.deliver(pid, signal, true)
    }

    /// Whether `pid` is running.
    pub fn exists(&self, pid: u32) -> bool {
        self.lock().entries.contains_key(&pid)
    }

    /// Delivers a signal (see [`ProcessTable::signal`]).
    fn deliver(&self, pid: u32, signal: Signal, inside: bool) -> Result<(), SignalError> {
        let mut table = self.lock();
        let entry = table
            .entries
            .get_mut(&pid)
            .ok_or(SignalError::NoSuchProcess)?;
        if signal != Signal::Kill
            && let Some(traps) = &entry.traps
        {
            if traps.ignored & signal.bit() != 0 {
                return Ok(());
            }
            if traps.trapped & signal.bit() != 0 && traps.tx.send(signal).is_ok() {
                return Ok(());
            }
        }
        // The init process of a pid namespace gets only the signals it handles, from inside or
        // outside; SIGKILL from outside (the container runtime) is forced on it.
        if pid == 1 && (inside || signal != Signal::Kill) {
            return Ok(());
        }
        entry.killed_by.get_or_insert(signal);
        entry.token.cancel();
        Ok(())
    }

    /// Registers a process started by `ppid` (0: from outside) whose token is a child of
    /// `parent`; it leaves the table when the returned slot is dropped. Past the process limit
    /// the fork fails and the tree it was made in is killed; past the memory limit the
    /// forking process is killed (see [`Limits`]).
    pub fn start(
        &self,
        ppid: u32,
        argv: Vec<String>,
        parent: &CancellationToken,
    ) -> Result<Slot, ForkError> {
        let mut table = self.lock();
        let parent_tree = table.entries.get(&ppid).map(|e| e.tree);
        let cap = table.limits.processes.min(MAX_PID as usize);
        if table.entries.len() >= cap {
            if let Some(tree) = parent_tree {
                table.kill_tree(tree, Verdict::ProcessLimit);
            }
            return Err(ForkError::ProcessLimit);
        }
        let limit = table.limits.memory.unwrap_or(u64::MAX);
        if table.memory.saturating_add(PROCESS_MEMORY) > limit {
            table.oom_kill(ppid);
            return Err(ForkError::OutOfMemory);
        }
        let token = parent.child_token();
        let mut pid = table.last_pid;
        loop {
            pid = if pid >= MAX_PID { 1 } else { pid + 1 };
            if !table.entries.contains_key(&pid) {
                break;
            }
        }
        table.last_pid = pid;
        table.memory += PROCESS_MEMORY;
        table.entries.insert(
            pid,
            Box::new(Entry {
                ppid,
                argv,
                started: SystemTime::now(),
                token: token.clone(),
                killed_by: None,
                traps: None,
                tree: parent_tree.unwrap_or(pid),
                memory: PROCESS_MEMORY,
            }),
        );
        if pid == 1 && table.held & Signal::Kill.bit() != 0 {
            table.held = 0;
            if let Some(e) = table.entries.get_mut(&1) {
                e.killed_by = Some(Signal::Kill);
                e.token.cancel();
            }
        }
        Ok(Slot {
            table: self.clone(),
            pid,
            token,
        })
    }

    /// Sets which signals `pid` traps (sent to `tx`) and ignores.
    pub fn set_traps(
        &self,
        pid: u32,
        tx: mpsc::UnboundedSender<Signal>,
        trapped: &[Signal],
        ignored: &[Signal],
    ) {
        let mut table = self.lock();
        let held = if pid == 1 {
            std::mem::take(&mut table.held)
        } else {
            0
        };
        if let Some(entry) = table.entries.get_mut(&pid) {
            let traps = Traps {
                tx,
                trapped: trapped.iter().fold(0, |m, s| m | s.bit()),
                ignored: ignored.iter().fold(0, |m, s| m | s.bit()),
            };
            for s in trapped.iter().filter(|s| held & s.bit() != 0) {
                let _ = traps.tx.send(*s);
            }
            entry.traps = Some(traps);
        }
    }

    /// The signal that terminated `pid`, if one did.
    fn killed_by(&self, pid: u32) -> Option<Signal> {
        self.lock().entries.get(&pid).and_then(|e| e.killed_by)
    }
}

/// Pids wrap around after this one, as with Linux's default `pid_max`.
const MAX_PID: u32 = 32768;

/// A process's place in the table; dropping it removes the process.
#[derive(Debug)]
pub struct Slot {
    /// The table.
    table: ProcessTable,
    /// The process's pid.
    pub pid: u32,
    /// Terminates the process (fired by a signal or by its parent's end).
    pub token: CancellationToken,
}

impl Slot {
    /// The exit status of a process whose token fired: `128 + n` for the signal that
    /// terminated it, 137 (`SIGKILL`) when its parent's end took it down.
    pub fn killed_status(&self) -> i32 {
        128 + self
            .table
            .killed_by(self.pid)
            .unwrap_or(Signal::Kill)
            .number()
    }
}

impl Slot {
    /// The exit status of a process whose handler returned `status`: the signal's status if
    /// one terminated it meanwhile (a handler can run on to its end in the same poll that
    /// signalled it).
    pub fn status(&self, status: i32) -> i32 {
        if self.token.is_cancelled() {
            self.killed_status()
        } else {
            status
        }
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        {
            let mut table = self.table.lock();
            if let Some(e) = table.entries.remove(&self.pid) {
                table.memory = table.memory.saturating_sub(e.memory);
            }
        }
        self.table.0.left.notify_waiters();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pids_start_at_1_and_slots_leave_the_table_when_dropped() {
        let table = ProcessTable::new();
        let root = CancellationToken::new();
        let main = table.start(0, vec!["sh".into()], &root).unwrap();
        let child = table
            .start(main.pid, vec!["sleep".into(), "9".into()], &main.token)
            .unwrap();
        assert_eq!((main.pid, child.pid), (1, 2));
        let listed: Vec<(u32, u32)> = table.list().iter().map(|p| (p.pid, p.ppid)).collect();
        assert_eq!(listed, vec![(1, 0), (2, 1)]);
        drop(child);
        assert_eq!(table.list().len(), 1);
        assert!(!table.exists(2));
    }

    #[test]
    fn an_untrapped_signal_terminates_with_128_plus_its_number() {
        let table = ProcessTable::new();
        let root = CancellationToken::new();
        let _main = table.start(0, vec!["sh".into()], &root).unwrap();
        let job = table.start(1, vec!["sleep".into()], &root).unwrap();
        assert_eq!(table.signal_from_inside(job.pid, Signal::Term), Ok(()));
        assert!(job.token.is_cancelled());
        assert_eq!(job.killed_status(), 143);
        assert_eq!(
            table.signal(99, Signal::Term),
            Err(SignalError::NoSuchProcess)
        );
    }

    #[test]
    fn pid_1_ignores_untrapped_signals_but_not_a_kill_from_outside() {
        let table = ProcessTable::new();
        let root = CancellationToken::new();
        let main = table.start(0, vec!["sh".into()], &root).unwrap();
        assert_eq!(table.signal_from_inside(1, Signal::Kill), Ok(()));
        assert_eq!(table.signal_from_inside(1, Signal::Term), Ok(()));
        assert_eq!(table.signal_main(Signal::Term), Ok(()));
        assert_eq!(table.signal_main(Signal::Hup), Ok(()));
        assert!(!main.token.is_cancelled());
        assert_eq!(table.signal_main(Signal::Kill), Ok(()));
        assert_eq!(main.killed_status(), 137);
    }

    #[test]
    fn a_trapped_signal_goes_to_the_trap_channel_and_an_ignored_one_nowhere() {
        let table = ProcessTable::new();
        let root = CancellationToken::new();
        let main = table.start(0, vec!["sh".into()], &root).unwrap();
        let (tx, mut rx) = mpsc::unbounded_channel();
        table.set_traps(1, tx, &[Signal::Term], &[Signal::Hup]);
        assert_eq!(table.signal(1, Signal::Term), Ok(()));
        assert_eq!(table.signal(1, Signal::Hup), Ok(()));
        assert_eq!(rx.try_recv(), Ok(Signal::Term));
        assert!(rx.try_recv().is_err());
        assert!(!main.token.is_cancelled());
        let job = table.start(1, vec!["sleep".into()], &main.token).unwrap();
        table.set_traps(job.pid, mpsc::unbounded_channel().0, &[], &[Signal::Term]);
        assert_eq!(table.signal(job.pid, Signal::Term), Ok(()));
        assert!(!job.token.is_cancelled());
        assert_eq!(table.signal(job.pid, Signal::Int), Ok(()));
        assert!(job.token.is_cancelled());
    }

    #[test]
    fn a_signal_sent_before_the_main_process_started_reaches_its_first_trap() {
        let table = ProcessTable::new();
        assert_eq!(table.signal_main(Signal::Term), Ok(()));
        let root = CancellationToken::new();
        let main = table.start(0, vec!["sh".into()], &root).unwrap();
        assert!(
            !main.token.is_cancelled(),
            "pid 1 ignores an untrapped TERM"
        );
        let (tx, mut rx) = mpsc::unbounded_channel();
        table.set_traps(1, tx, &[Signal::Term], &[]);
        assert_eq!(rx.try_recv(), Ok(Signal::Term));
        let (tx, mut rx) = mpsc::unbounded_channel();
        table.set_traps(1, tx, &[Signal::Term], &[]);
        assert!(rx.try_recv().is_err(), "a held signal is handed over once");
    }

    #[test]
    fn a_kill_sent_before_the_main_process_started_ends_it_at_its_start() {
        let table = ProcessTable::new();
        assert_eq!(table.signal_main(Signal::Kill), Ok(()));
        let root = CancellationToken::new();
        let main = table.start(0, vec!["sh".into()], &root).unwrap();
        assert!(main.token.is_cancelled());
        assert_eq!(main.killed_status(), 137);
        drop(main);
        assert_eq!(
            table.signal_main(Signal::Term),
            Err(SignalError::NoSuchProcess),
            "once the main process has ended, nothing is held"
        );
    }

    #[test]
    fn a_fork_past_the_process_limit_fails_and_kills_the_tree_it_was_made_in() {
        let table = ProcessTable::with_limits(Limits {
            processes: 3,
            memory: None,
            ..Limits::default()
        });
        let root = CancellationToken::new();
        let other = table.start(0, vec!["sleep".into()], &root).unwrap();
        let main = table.start(0, vec!["sh".into()], &root).unwrap();
        let job = table
            .start(main.pid, vec!["sh".into()], &main.token)
            .unwrap();
        let fork = table.start(job.pid, vec!["sh".into()], &job.token);
        assert_eq!(fork.err(), Some(ForkError::ProcessLimit));
        assert!(main.token.is_cancelled() && job.token.is_cancelled());
        assert!(!other.token.is_cancelled());
        assert_eq!(table.verdict(main.pid), Some(Verdict::ProcessLimit));
        assert_eq!(table.verdict(other.pid), None);
    }

    #[test]
    fn a_charge_past_the_memory_limit_kills_the_process_and_is_counted() {
        let table = ProcessTable::with_limits(Limits {
            processes: 10,
            memory: Some(PROCESS_MEMORY * 2 + 100),
            ..Limits::default()
        });
        let root = CancellationToken::new();
        let main = table.start(0, vec!["sh".into()], &root).unwrap();
        assert_eq!(table.charge(main.pid, 100), Ok(()));
        table.uncharge(main.pid, 100);
        let child = table
            .start(main.pid, vec!["x".into()], &main.token)
            .unwrap();
        assert_eq!(table.memory_used(), PROCESS_MEMORY * 2);
        assert_eq!(table.charge(child.pid, 101), Err(ForkError::OutOfMemory));
        assert!(child.token.is_cancelled() && !main.token.is_cancelled());
        assert_eq!(child.killed_status(), 137);
        assert_eq!(table.oom_kills(), 1);
        drop(child);
        assert_eq!(table.memory_used(), PROCESS_MEMORY);
    }

    #[test]
    fn signals_parse_by_number_and_by_name() {
        assert_eq!(Signal::parse("15"), Some(Signal::Term));
        assert_eq!(Signal::parse("SIGKILL"), Some(Signal::Kill));
        assert_eq!(Signal::parse("int"), Some(Signal::Int));
        assert_eq!(Signal::parse("STOP"), None);
        assert_eq!(Signal::parse("0"), None);
    }
}
