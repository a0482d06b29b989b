//! The nodes of a tree (files, directories, devices, symbolic links), what `stat` learns about them, and walking
//! a tree by path components.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{SystemTime, UNIX_EPOCH};

use super::FsError;

/// What kind of node a path names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NodeKind {
    /// A regular file with byte content.
    Regular,
    /// A directory.
    Directory,
    /// A character device (`/dev/null`, `/dev/zero`).
    CharDevice,
    /// A symbolic link (seen only by the calls that do not follow one: `lstat`, `readlink`,
    /// listings).
    Symlink,
}

impl NodeKind {
    /// The `S_IFMT` bits of this kind, as `stat` reports them in `st_mode`.
    pub fn type_bits(self) -> u32 {
        match self {
            NodeKind::Regular => 0o100000,
            NodeKind::Directory => 0o040000,
            NodeKind::CharDevice => 0o020000,
            NodeKind::Symlink => 0o120000,
        }
    }

    /// The GNU `stat %F` description.
    pub fn describe(self, size: u64) -> &'static str {
        match self {
            NodeKind::Regular if size == 0 => "regular empty file",
            NodeKind::Regular => "regular file",
            NodeKind::Directory => "directory",
            NodeKind::CharDevice => "character special file",
            NodeKind::Symlink => "symbolic link",
        }
    }
}

/// What `stat` learns about a node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Metadata {
    /// Node kind.
    pub kind: NodeKind,
    /// Size in bytes (directories report 4096, as ext4 does).
    pub size: u64,
    /// Permission bits (`0o7777` at most).
    pub mode: u32,
    /// Last modification, in seconds since the Unix epoch.
    pub mtime: i64,
}

impl Metadata {
    /// The full `st_mode`: type bits and permission bits.
    pub fn raw_mode(&self) -> u32 {
        self.kind.type_bits() | self.mode
    }

    /// Whether any execute bit is set (root may run a file with any one of them).
    pub fn is_executable(&self) -> bool {
        self.mode & 0o111 != 0
    }
}

/// A special file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Device {
    /// `/dev/null`: reads end at once, writes vanish.
    Null,
    /// `/dev/zero`: reads never end, writes vanish.
    Zero,
    /// `/dev/random` and `/dev/urandom`: reads give random bytes, writes vanish.
    Random,
    /// `/dev/full`: reads give zeros, writes fail with ENOSPC.
    Full,
    /// `/dev/fd/N` (and `/dev/stdin`, `/dev/stdout`, `/dev/stderr`, links to them): the
    /// opening process's standard stream N.
    Fd(u8),
}

/// One node of a tree.
#[derive(Debug, Clone)]
pub(super) enum Node {
    /// A regular file.
    File(File),
    /// A directory.
    Dir(Dir),
    /// A character device.
    Dev(Device, i64),
    /// A symbolic link: its target as written, and its modification time.
    Link(String, i64),
}

/// A regular file's data.
#[derive(Debug, Clone)]
pub(super) struct File {
    /// Content.
    pub(super) data: Vec<u8>,
    /// Permission bits.
    pub(super) mode: u32,
    /// Modification time (seconds).
    pub(super) mtime: i64,
}

/// A directory's entries. Cloning a directory shares its entries (the whole subtree below
/// it) until one of the clones changes them: [`Dir::entries_mut`] copies this one level then,
/// and the directories on a path are made private one by one as [`walk_dir_mut`] walks it.
/// So every filesystem made from one image shares the image's tree, and holds only the
/// directories it wrote in.
#[derive(Debug, Clone)]
pub(super) struct Dir {
    /// Entries by name, shared with the clones of this directory until written.
    entries: Arc<BTreeMap<String, Node>>,
    /// Permission bits.
    pub(super) mode: u32,
    /// Modification time (seconds).
    pub(super) mtime: i64,
}

impl Dir {
    /// An empty directory with the given permission bits, modified now.
    pub(super) fn new(mode: u32) -> Self {
        Dir {
            entries: Arc::default(),
            mode,
            mtime: now(),
        }
    }

    /// The entries, to read.
    pub(super) fn entries(&self) -> &BTreeMap<String, Node> {
        &self.entries
    }

    /// The entries, to change: this directory's own copy from now on (made now if they are
    /// shared with another clone). The nodes in it are clones, so the directories below are
    /// still shared.
    pub(super) fn entries_mut(&mut self) -> &mut BTreeMap<String, Node> {
        Arc::make_mut(&mut self.entries)
    }
}

impl Node {
    /// The bytes the files in this node hold.
    pub(super) fn size(&self) -> usize {
        match self {
            Node::File(f) => f.data.len(),
            Node::Dir(d) => d.entries().values().map(Node::size).sum(),
            Node::Dev(..) => 0,
            Node::Link(target, _) => target.len(),
        }
    }

    /// The metadata `stat` shows.
    pub(super) fn metadata(&self) -> Metadata {
        match self {
            Node::File(f) => Metadata {
                kind: NodeKind::Regular,
                size: f.data.len() as u64,
                mode: f.mode,
                mtime: f.mtime,
            },
            Node::Dir(d) => Metadata {
                kind: NodeKind::Directory,
                size: 4096,
                mode: d.mode,
                mtime: d.mtime,
            },
            Node::Dev(_, mtime) => Metadata {
                kind: NodeKind::CharDevice,
                size: 0,
                mode: 0o666,
                mtime: *mtime,
            },
            Node::Link(target, mtime) => Metadata {
                kind: NodeKind::Symlink,
                size: target.len() as u64,
                mode: 0o777,
                mtime: *mtime,
            },
        }
    }
}

/// Seconds since the Unix epoch, now.
pub fn now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

/// Locks a tree, recovering the data if another thread panicked while holding the lock.
pub(super) fn lock(tree: &Mutex<Dir>) -> MutexGuard<'_, Dir> {
    tree.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Walks `parts` from `dir` and returns the node they name.
pub(super) fn walk<'a>(dir: &'a Dir, parts: &[String]) -> Result<&'a Node, FsError> {
    let Some((last, parents)) = parts.split_last() else {
        return Err(FsError::InvalidArgument);
    };
    let parent = walk_dir(dir, parents)?;
    parent.entries().get(last).ok_or(FsError::NotFound)
}

/// Walks `parts` from `dir` and returns the directory they name.
pub(super) fn walk_dir<'a>(dir: &'a Dir, parts: &[String]) -> Result<&'a Dir, FsError> {
    let mut cur = dir;
    for p in parts {
        match cur.entries().get(p) {
            Some(Node::Dir(d)) => cur = d,
            Some(_) => return Err(FsError::NotADirectory),
            None => return Err(FsError::NotFound),
        }
    }
    Ok(cur)
}

/// Mutable twin of [`walk_dir`]: the directories it passes through (`dir` included, the one
/// it returns not) become private to this tree ([`Dir::entries_mut`]); the one it returns
/// does when its entries are changed. A path that fails copies nothing.
pub(super) fn walk_dir_mut<'a>(dir: &'a mut Dir, parts: &[String]) -> Result<&'a mut Dir, FsError> {
    walk_dir(dir, parts)?;
    let mut cur = dir;
    for p in parts {
        match cur.entries_mut().get_mut(p) {
            Some(Node::Dir(d)) => cur = d,
            Some(_) => return Err(FsError::NotADirectory),
            None => return Err(FsError::NotFound),
        }
    }
    Ok(cur)
}
