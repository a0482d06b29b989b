//! The registry of programs: the table every container has (each program with an executable
//! entry in `/bin`) and the handlers registered at run time, which need no file.
//!
//! A table entry's file holds [`ENTRY_MAGIC`] and the program's name; [`super::launch`] reads it
//! back when the file is run, so a program started by path (`/bin/cat`), found through `PATH`
//! or named in a `#!` line is the table's handler, and a deleted or overwritten file is gone.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, OnceLock, RwLock};

use crate::fs::{Image, PodFs, StorageBudget, Volume};

use super::{BoxFuture, Handler, Process};

/// A table program's handler: a plain function of the process, giving the exit status.
pub type Run = fn(Process) -> BoxFuture<'static, i32>;

/// One entry of the program table: its name, its handler and the directories that hold its file.
#[derive(Debug, Clone, Copy)]
pub struct Program {
    /// The name it is found by (`cat`, `[`).
    name: &'static str,
    /// What it runs.
    run: Run,
    /// Absolute directories with an entry for it; `/bin` unless [`Program::in_dirs`] says more.
    dirs: &'static [&'static str],
}

impl Program {
    /// A program called `name`, with an entry in `/bin`.
    pub const fn new(name: &'static str, run: Run) -> Self {
        Program {
            name,
            run,
            dirs: &["/bin"],
        }
    }

    /// The name it is found by.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// The same program with entries in each of `dirs` instead (`env` is in `/usr/bin` too, for
    /// `#!/usr/bin/env` scripts).
    pub const fn in_dirs(self, dirs: &'static [&'static str]) -> Self {
        Program { dirs, ..self }
    }
}

/// First bytes of the file that stands for a program of the table (an ELF-like header no script
/// starts with), followed by the program's name and a newline.
const ENTRY_MAGIC: &[u8] = b"\x7fELF fakekube program: ";

/// The content of the file that stands for the table program `name`.
fn entry(name: &str) -> Vec<u8> {
    let mut data = ENTRY_MAGIC.to_vec();
    data.extend_from_slice(name.as_bytes());
    data.push(b'\n');
    data
}

/// The program a file stands for, read from its first bytes; `None` for any other file.
pub fn entry_name(head: &[u8]) -> Option<String> {
    let rest = head.strip_prefix(ENTRY_MAGIC)?;
    let line = rest.split(|b| *b == b'\n').next().unwrap_or_default();
    Some(String::from_utf8_lossy(line).into_owned())
}

/// The programs a container can run: the program table (each program with a `/bin` entry in
/// every [`Programs::pod_fs`]) plus handlers registered at run time, which are found first and
/// need no file. Clones share the registered handlers.
#[derive(Clone)]
pub struct Programs {
    /// The program table.
    table: &'static [Program],
    /// Handlers registered at run time, by name.
    registered: Arc<RwLock<HashMap<String, Handler>>>,
    /// What the filesystems made by [`Programs::pod_fs`] are charged to.
    budget: Arc<RwLock<StorageBudget>>,
    /// The image every [`Programs::pod_fs`] starts from (and shares until it writes), made
    /// at the first.
    image: Arc<OnceLock<Image>>,
}

impl std::fmt::Debug for Programs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<String> = self
            .registered
            .read()
            .map(|m| m.keys().cloned().collect())
            .unwrap_or_default();
        f.debug_struct("Programs")
            .field("table", &self.table.len())
            .field("registered", &names)
            .finish()
    }
}

impl Programs {
    /// A registry of `table` with nothing registered ([`Programs::new`] gives the runtime's
    /// table).
    pub fn with_table(table: &'static [Program]) -> Self {
        Programs {
            table,
            registered: Arc::default(),
            budget: Arc::default(),
            image: Arc::default(),
        }
    }

    /// Registers (or replaces) an `async` function or closure as the program `name`; every
    /// clone of this registry sees it. A registered name is found by the shell and by
    /// [`exec`](crate::exec) before any file of that name, and needs no file.
    pub fn register<F, Fut>(&self, name: impl Into<String>, f: F)
    where
        F: Fn(Process) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = i32> + Send + 'static,
    {
        let handler: Handler = Arc::new(move |proc| Box::pin(f(proc)) as BoxFuture<'static, i32>);
        let mut map = self.registered.write().unwrap_or_else(|p| p.into_inner());
        map.insert(name.into(), handler);
    }

    /// The handler registered under `name`, if any.
    pub fn registered(&self, name: &str) -> Option<Handler> {
        self.registered
            .read()
            .ok()
            .and_then(|m| m.get(name).cloned())
    }

    /// The handler for a program name: a registered one, else the table's.
    pub fn find(&self, name: &str) -> Option<Handler> {
        self.registered(name).or_else(|| {
            self.table
                .iter()
                .find(|p| p.name == name)
                .map(|p| Arc::new(p.run) as Handler)
        })
    }

    /// A fresh filesystem for a container: the standard image ([`PodFs::new`]) with an entry for
    /// every program of the table in its directories (mode 0755), and each volume mounted at its
    /// path. What it holds (volumes included) is charged to the registry's
    /// [`StorageBudget`].
    /// The pods' filesystems share the image's tree until they write in it: each holds only
    /// what it changed.
    pub fn pod_fs(&self, mounts: Vec<(String, Volume)>) -> PodFs {
        let image = self.image.get_or_init(|| {
            Image::new(self.table.iter().flat_map(|p| {
                p.dirs
                    .iter()
                    .map(|dir| (format!("{dir}/{}", p.name), entry(p.name)))
            }))
        });
        PodFs::from_image(image, mounts, &self.storage_budget())
    }

    /// Charges the filesystems [`Programs::pod_fs`] makes from now on (every clone of this
    /// registry's) to `budget`: together they hold at most its limit, and a write past it fails
    /// with ENOSPC. Unlimited until set.
    pub fn set_storage_budget(&self, budget: StorageBudget) {
        *self.budget.write().unwrap_or_else(|p| p.into_inner()) = budget;
    }

    /// The budget the filesystems of [`Programs::pod_fs`] are charged to.
    pub fn storage_budget(&self) -> StorageBudget {
        self.budget
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs::NodeKind;

    /// A program that exits with 3.
    fn three(_: Process) -> BoxFuture<'static, i32> {
        Box::pin(async { 3 })
    }

    /// A table of two programs, one of them also in `/usr/bin`.
    static TABLE: &[Program] = &[
        Program::new("three", three),
        Program::new("also", three).in_dirs(&["/bin", "/usr/bin"]),
    ];

    #[test]
    fn pod_fs_has_an_executable_entry_per_program_in_its_directories() {
        let fs = Programs::with_table(TABLE).pod_fs(vec![]);
        for path in ["/bin/three", "/bin/also", "/usr/bin/also"] {
            let meta = fs.metadata(path).map(|m| (m.kind, m.is_executable()));
            assert_eq!(meta, Ok((NodeKind::Regular, true)), "{path}");
        }
        assert!(!fs.exists("/usr/bin/three"));
        let head = fs.read("/usr/bin/also").unwrap_or_default();
        assert_eq!(entry_name(&head).as_deref(), Some("also"));
    }

    #[test]
    fn a_registered_handler_hides_the_table_program_of_that_name() {
        let programs = Programs::with_table(TABLE);
        assert!(programs.find("three").is_some());
        assert!(programs.registered("three").is_none());
        assert!(programs.find("missing").is_none());
        programs.register("three", |_| async { 4 });
        let (Some(found), Some(registered)) =
            (programs.find("three"), programs.clone().registered("three"))
        else {
            panic!("three is registered");
        };
        assert!(Arc::ptr_eq(&found, &registered));
    }

    #[test]
    fn only_entry_files_name_a_program() {
        assert_eq!(entry_name(&entry("cat")).as_deref(), Some("cat"));
        assert_eq!(entry_name(b"#!/bin/sh\n"), None);
    }
}
