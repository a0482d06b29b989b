//! The in-memory filesystem of a pod: a fresh root tree per pod, plus volumes that outlive it.
//!
//! Paths are resolved lexically (there are no symbolic links), so `..` simply drops the previous
//! component. A mount replaces the subtree at its path with the volume's own tree, which is shared
//! (behind an `Arc`) by every [`PodFs`] that mounts the same [`Volume`]: a new pod with the same
//! volume sees what the old one wrote there, and nothing else.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{SystemTime, UNIX_EPOCH};

use bytes::Bytes;

/// Largest file the filesystem holds; a write beyond it fails with "No space left on device",
/// so a runaway `yes > file` cannot take the whole process down.
pub(crate) const MAX_FILE_SIZE: usize = 256 * 1024 * 1024;
/// Longest absolute path accepted (Linux `PATH_MAX`).
pub(crate) const MAX_PATH_LEN: usize = 4096;
/// Deepest directory nesting accepted; keeps every recursive walk far from the stack limit.
pub(crate) const MAX_DEPTH: usize = 128;
/// Longest single file name accepted (Linux `NAME_MAX`).
const MAX_NAME_LEN: usize = 255;

/// A filesystem error, displayed as the C library's `strerror` text so commands can print
/// `cat: /nope: No such file or directory` like the real tools.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum FsError {
    /// ENOENT.
    #[error("No such file or directory")]
    NotFound,
    /// ENOTDIR.
    #[error("Not a directory")]
    NotADirectory,
    /// EISDIR.
    #[error("Is a directory")]
    IsADirectory,
    /// EEXIST.
    #[error("File exists")]
    Exists,
    /// ENOTEMPTY.
    #[error("Directory not empty")]
    NotEmpty,
    /// ENOSPC.
    #[error("No space left on device")]
    NoSpace,
    /// ENAMETOOLONG.
    #[error("File name too long")]
    NameTooLong,
    /// EBUSY: a mount point cannot be removed or moved.
    #[error("Device or resource busy")]
    Busy,
    /// EINVAL: e.g. moving a directory into itself.
    #[error("Invalid argument")]
    InvalidArgument,
}

/// What kind of node a path names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NodeKind {
    /// A regular file with byte content.
    Regular,
    /// A directory.
    Directory,
    /// A character device (`/dev/null`, `/dev/zero`).
    CharDevice,
}

impl NodeKind {
    /// The `S_IFMT` bits of this kind, as `stat` reports them in `st_mode`.
    pub(crate) fn type_bits(self) -> u32 {
        match self {
            NodeKind::Regular => 0o100000,
            NodeKind::Directory => 0o040000,
            NodeKind::CharDevice => 0o020000,
        }
    }

    /// The GNU `stat %F` description.
    pub(crate) fn describe(self, size: u64) -> &'static str {
        match self {
            NodeKind::Regular if size == 0 => "regular empty file",
            NodeKind::Regular => "regular file",
            NodeKind::Directory => "directory",
            NodeKind::CharDevice => "character special file",
        }
    }
}

/// What `stat` learns about a node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Metadata {
    /// Node kind.
    pub(crate) kind: NodeKind,
    /// Size in bytes (directories report 4096, as ext4 does).
    pub(crate) size: u64,
    /// Permission bits (`0o7777` at most).
    pub(crate) mode: u32,
    /// Last modification, in seconds since the Unix epoch.
    pub(crate) mtime: i64,
}

impl Metadata {
    /// The full `st_mode`: type bits and permission bits.
    pub(crate) fn raw_mode(&self) -> u32 {
        self.kind.type_bits() | self.mode
    }

    /// Whether any execute bit is set (root may run a file with any one of them).
    pub(crate) fn is_executable(&self) -> bool {
        self.mode & 0o111 != 0
    }
}

/// A special file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Device {
    /// `/dev/null`: reads end at once, writes vanish.
    Null,
    /// `/dev/zero`: reads never end, writes vanish.
    Zero,
}

/// One node of a tree.
#[derive(Debug, Clone)]
enum Node {
    /// A regular file.
    File(File),
    /// A directory.
    Dir(Dir),
    /// A character device.
    Dev(Device, i64),
}

/// A regular file's data.
#[derive(Debug, Clone)]
struct File {
    /// Content.
    data: Vec<u8>,
    /// Permission bits.
    mode: u32,
    /// Modification time (seconds).
    mtime: i64,
}

/// A directory's entries.
#[derive(Debug, Clone)]
struct Dir {
    /// Entries by name.
    entries: BTreeMap<String, Node>,
    /// Permission bits.
    mode: u32,
    /// Modification time (seconds).
    mtime: i64,
}

impl Dir {
    /// An empty directory with the given permission bits, modified now.
    fn new(mode: u32) -> Self {
        Dir {
            entries: BTreeMap::new(),
            mode,
            mtime: now(),
        }
    }
}

impl Node {
    /// The metadata `stat` shows.
    fn metadata(&self) -> Metadata {
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
        }
    }
}

/// Seconds since the Unix epoch, now.
pub(crate) fn now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

/// Locks a tree, recovering the data if another thread panicked while holding the lock.
fn lock(tree: &Mutex<Dir>) -> MutexGuard<'_, Dir> {
    tree.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The storage of one PersistentVolumeClaim. Cloning shares it; it lives as long as any clone.
#[derive(Debug, Clone)]
pub struct Volume {
    /// The volume's root directory.
    root: Arc<Mutex<Dir>>,
}

impl Volume {
    /// An empty volume (a freshly provisioned claim).
    pub fn new() -> Self {
        Volume {
            root: Arc::new(Mutex::new(Dir::new(0o755))),
        }
    }
}

impl Default for Volume {
    fn default() -> Self {
        Self::new()
    }
}

/// Splits an absolute or relative path into normal components, resolving `.` and `..` lexically.
/// Relative paths are taken from `/`; callers join them with a working directory first.
pub(crate) fn components(path: &str) -> Result<Vec<String>, FsError> {
    let mut out: Vec<String> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                out.pop();
            }
            name => {
                if name.len() > MAX_NAME_LEN {
                    return Err(FsError::NameTooLong);
                }
                out.push(name.to_string());
            }
        }
    }
    if out.len() > MAX_DEPTH || path.len() > MAX_PATH_LEN {
        return Err(FsError::NameTooLong);
    }
    Ok(out)
}

/// Joins `path` to the working directory `cwd` unless it is already absolute.
pub(crate) fn join(cwd: &str, path: &str) -> String {
    if path.starts_with('/') {
        path.to_string()
    } else if cwd.ends_with('/') {
        format!("{cwd}{path}")
    } else {
        format!("{cwd}/{path}")
    }
}

/// Lexically normalises an absolute path (`/a/./b/../c` → `/a/c`).
pub(crate) fn normalize(path: &str) -> Result<String, FsError> {
    let parts = components(path)?;
    if parts.is_empty() {
        return Ok("/".to_string());
    }
    let mut out = String::new();
    for p in parts {
        out.push('/');
        out.push_str(&p);
    }
    Ok(out)
}

/// Walks `parts` from `dir` and returns the node they name.
fn walk<'a>(dir: &'a Dir, parts: &[String]) -> Result<&'a Node, FsError> {
    let Some((last, parents)) = parts.split_last() else {
        return Err(FsError::InvalidArgument);
    };
    let parent = walk_dir(dir, parents)?;
    parent.entries.get(last).ok_or(FsError::NotFound)
}

/// Walks `parts` from `dir` and returns the directory they name.
fn walk_dir<'a>(dir: &'a Dir, parts: &[String]) -> Result<&'a Dir, FsError> {
    let mut cur = dir;
    for p in parts {
        match cur.entries.get(p) {
            Some(Node::Dir(d)) => cur = d,
            Some(_) => return Err(FsError::NotADirectory),
            None => return Err(FsError::NotFound),
        }
    }
    Ok(cur)
}

/// Mutable twin of [`walk_dir`].
fn walk_dir_mut<'a>(dir: &'a mut Dir, parts: &[String]) -> Result<&'a mut Dir, FsError> {
    let mut cur = dir;
    for p in parts {
        match cur.entries.get_mut(p) {
            Some(Node::Dir(d)) => cur = d,
            Some(_) => return Err(FsError::NotADirectory),
            None => return Err(FsError::NotFound),
        }
    }
    Ok(cur)
}

/// Where a path lands: which tree, and the components inside it.
struct Located {
    /// The tree (pod root or a volume).
    tree: Arc<Mutex<Dir>>,
    /// Components below the tree's root (empty: the root itself).
    rel: Vec<String>,
    /// Whether the path is exactly a mount point (or `/`).
    is_mount_root: bool,
}

/// One entry of a directory listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct DirEntry {
    /// Entry name.
    pub(crate) name: String,
    /// Entry metadata.
    pub(crate) meta: Metadata,
}

/// How a file is opened for reading.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ReadTarget {
    /// A regular file at this normalised absolute path.
    File(String),
    /// A device.
    Device(Device),
}

/// How a file is opened for writing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum WriteTarget {
    /// A regular file at this normalised absolute path.
    File(String),
    /// A device: writes vanish.
    Device(Device),
}

/// A pod's filesystem: its own root tree plus mounted volumes. Cloning shares it.
#[derive(Debug, Clone)]
pub struct PodFs {
    /// The root tree, private to this pod.
    root: Arc<Mutex<Dir>>,
    /// Mounts, longest path first: normalised components and the volume.
    mounts: Arc<Vec<(Vec<String>, Volume)>>,
}

/// Directories every image has, with their permission bits.
const STANDARD_DIRS: &[(&str, u32)] = &[
    ("/bin", 0o755),
    ("/dev", 0o755),
    ("/etc", 0o755),
    ("/home", 0o755),
    ("/lib", 0o755),
    ("/mnt", 0o755),
    ("/opt", 0o755),
    ("/proc", 0o555),
    ("/root", 0o700),
    ("/run", 0o755),
    ("/sbin", 0o755),
    ("/srv", 0o755),
    ("/tmp", 0o1777),
    ("/usr", 0o755),
    ("/usr/bin", 0o755),
    ("/usr/lib", 0o755),
    ("/usr/local", 0o755),
    ("/usr/local/bin", 0o755),
    ("/usr/local/sbin", 0o755),
    ("/usr/sbin", 0o755),
    ("/var", 0o755),
    ("/var/tmp", 0o1777),
    ("/workspace", 0o755),
];

impl PodFs {
    /// A fresh filesystem: the usual directories, `/dev/null` and `/dev/zero`, a minimal `/etc`,
    /// and each volume mounted at its path (a path that is not absolute is taken from `/`; a later
    /// mount at the same path wins). It has no programs: a container's filesystem comes from
    /// [`Programs::pod_fs`](crate::Programs::pod_fs), which adds their `/bin` entries.
    pub fn new(mounts: Vec<(String, Volume)>) -> Self {
        Self::with_executables(std::iter::empty(), mounts)
    }

    /// [`PodFs::new`] with executable files (mode 0755) laid down in the root tree before the
    /// volumes are mounted: absolute paths in existing directories, and their content.
    pub(crate) fn with_executables(
        executables: impl IntoIterator<Item = (String, Vec<u8>)>,
        mounts: Vec<(String, Volume)>,
    ) -> Self {
        let mut root = Dir::new(0o755);
        for (path, mode) in STANDARD_DIRS {
            if let Ok(parts) = components(path)
                && let Some((last, parents)) = parts.split_last()
                && let Ok(parent) = walk_dir_mut(&mut root, parents)
            {
                parent
                    .entries
                    .insert(last.clone(), Node::Dir(Dir::new(*mode)));
            }
        }
        let t = now();
        if let Some(Node::Dir(dev)) = root.entries.get_mut("dev") {
            dev.entries
                .insert("null".into(), Node::Dev(Device::Null, t));
            dev.entries
                .insert("zero".into(), Node::Dev(Device::Zero, t));
        }
        let etc_files: [(&str, &[u8]); 3] = [
            ("passwd", b"root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n"),
            ("group", b"root:x:0:\nnogroup:x:65534:\n"),
            ("hosts", b"127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n"),
        ];
        if let Some(Node::Dir(etc)) = root.entries.get_mut("etc") {
            for (name, data) in etc_files {
                etc.entries.insert(
                    name.into(),
                    Node::File(File {
                        data: data.to_vec(),
                        mode: 0o644,
                        mtime: t,
                    }),
                );
            }
        }
        for (path, data) in executables {
            if let Ok(parts) = components(&path)
                && let Some((last, parents)) = parts.split_last()
                && let Ok(dir) = walk_dir_mut(&mut root, parents)
            {
                let file = File {
                    data,
                    mode: 0o755,
                    mtime: t,
                };
                dir.entries.insert(last.clone(), Node::File(file));
            }
        }

        let mut table: Vec<(Vec<String>, Volume)> = Vec::new();
        for (path, volume) in mounts {
            let Ok(parts) = components(&path) else {
                continue;
            };
            // Make the mount point exist in the root tree so listings of its parent show it.
            let mut cur = &mut root;
            for p in &parts {
                let entry = cur
                    .entries
                    .entry(p.clone())
                    .or_insert_with(|| Node::Dir(Dir::new(0o755)));
                if !matches!(entry, Node::Dir(_)) {
                    *entry = Node::Dir(Dir::new(0o755));
                }
                match entry {
                    Node::Dir(d) => cur = d,
                    _ => break,
                }
            }
            table.retain(|(p, _)| *p != parts);
            table.push((parts, volume));
        }
        table.sort_by_key(|(p, _)| std::cmp::Reverse(p.len()));
        PodFs {
            root: Arc::new(Mutex::new(root)),
            mounts: Arc::new(table),
        }
    }

    /// Finds the tree that holds an absolute path.
    fn locate(&self, path: &str) -> Result<Located, FsError> {
        let parts = components(path)?;
        for (mount, volume) in self.mounts.iter() {
            if parts.len() >= mount.len() && parts[..mount.len()] == mount[..] {
                return Ok(Located {
                    tree: volume.root.clone(),
                    is_mount_root: parts.len() == mount.len(),
                    rel: parts[mount.len()..].to_vec(),
                });
            }
        }
        Ok(Located {
            tree: self.root.clone(),
            is_mount_root: parts.is_empty(),
            rel: parts,
        })
    }

    /// Whether a mount point lies strictly below the absolute path.
    fn has_mount_below(&self, path: &str) -> Result<bool, FsError> {
        let parts = components(path)?;
        Ok(self
            .mounts
            .iter()
            .any(|(m, _)| m.len() > parts.len() && m[..parts.len()] == parts[..]))
    }

    /// Metadata of the node at an absolute path.
    pub(crate) fn metadata(&self, path: &str) -> Result<Metadata, FsError> {
        let loc = self.locate(path)?;
        let tree = lock(&loc.tree);
        if loc.rel.is_empty() {
            return Ok(Node::Dir(Dir {
                entries: BTreeMap::new(),
                mode: tree.mode,
                mtime: tree.mtime,
            })
            .metadata());
        }
        walk(&tree, &loc.rel).map(Node::metadata)
    }

    /// Whether anything exists at the path.
    pub(crate) fn exists(&self, path: &str) -> bool {
        self.metadata(path).is_ok()
    }

    /// The entries of a directory, sorted by name.
    pub(crate) fn read_dir(&self, path: &str) -> Result<Vec<DirEntry>, FsError> {
        let loc = self.locate(path)?;
        let parts = components(path)?;
        let entries: Vec<DirEntry> = {
            let tree = lock(&loc.tree);
            let dir = walk_dir(&tree, &loc.rel)?;
            dir.entries
                .iter()
                .map(|(name, node)| DirEntry {
                    name: name.clone(),
                    meta: node.metadata(),
                })
                .collect()
        };
        // Entries that are mount points show the volume's root, not the placeholder below it.
        let mut out = Vec::with_capacity(entries.len());
        for mut e in entries {
            let mut child = parts.clone();
            child.push(e.name.clone());
            if self.mounts.iter().any(|(m, _)| *m == child) {
                let mut p = String::new();
                for c in &child {
                    p.push('/');
                    p.push_str(c);
                }
                if let Ok(meta) = self.metadata(&p) {
                    e.meta = meta;
                }
            }
            out.push(e);
        }
        Ok(out)
    }

    /// The whole content of a regular file.
    pub fn read(&self, path: &str) -> Result<Bytes, FsError> {
        let loc = self.locate(path)?;
        let tree = lock(&loc.tree);
        if loc.rel.is_empty() {
            return Err(FsError::IsADirectory);
        }
        match walk(&tree, &loc.rel)? {
            Node::File(f) => Ok(Bytes::copy_from_slice(&f.data)),
            Node::Dir(_) => Err(FsError::IsADirectory),
            Node::Dev(Device::Null, _) => Ok(Bytes::new()),
            Node::Dev(Device::Zero, _) => Err(FsError::InvalidArgument),
        }
    }

    /// Up to `max` bytes of a regular file from `offset`; an empty result means end of file.
    pub(crate) fn read_at(&self, path: &str, offset: usize, max: usize) -> Result<Bytes, FsError> {
        let loc = self.locate(path)?;
        let tree = lock(&loc.tree);
        if loc.rel.is_empty() {
            return Err(FsError::IsADirectory);
        }
        match walk(&tree, &loc.rel)? {
            Node::File(f) => {
                let start = offset.min(f.data.len());
                let end = start.saturating_add(max).min(f.data.len());
                Ok(Bytes::copy_from_slice(
                    f.data.get(start..end).unwrap_or_default(),
                ))
            }
            Node::Dir(_) => Err(FsError::IsADirectory),
            Node::Dev(..) => Ok(Bytes::new()),
        }
    }

    /// Checks a path can be read and says what it is (a file to read in chunks, or a device).
    pub(crate) fn open_read(&self, path: &str) -> Result<ReadTarget, FsError> {
        let norm = normalize(path)?;
        let loc = self.locate(&norm)?;
        let tree = lock(&loc.tree);
        if loc.rel.is_empty() {
            return Err(FsError::IsADirectory);
        }
        match walk(&tree, &loc.rel)? {
            Node::File(_) => Ok(ReadTarget::File(norm)),
            Node::Dir(_) => Err(FsError::IsADirectory),
            Node::Dev(d, _) => Ok(ReadTarget::Device(*d)),
        }
    }

    /// Opens a path for writing, creating the file (mode 0644) if needed and emptying it when
    /// `truncate` is set.
    pub(crate) fn open_write(&self, path: &str, truncate: bool) -> Result<WriteTarget, FsError> {
        let norm = normalize(path)?;
        let loc = self.locate(&norm)?;
        let mut tree = lock(&loc.tree);
        let Some((last, parents)) = loc.rel.split_last() else {
            return Err(FsError::IsADirectory);
        };
        let dir = walk_dir_mut(&mut tree, parents)?;
        let t = now();
        match dir.entries.get_mut(last) {
            Some(Node::File(f)) => {
                if truncate {
                    f.data = Vec::new();
                    f.mtime = t;
                }
                Ok(WriteTarget::File(norm))
            }
            Some(Node::Dir(_)) => Err(FsError::IsADirectory),
            Some(Node::Dev(d, _)) => Ok(WriteTarget::Device(*d)),
            None => {
                dir.entries.insert(
                    last.clone(),
                    Node::File(File {
                        data: Vec::new(),
                        mode: 0o644,
                        mtime: t,
                    }),
                );
                dir.mtime = t;
                Ok(WriteTarget::File(norm))
            }
        }
    }

    /// Appends to an existing regular file (writes to a device vanish).
    pub(crate) fn append(&self, path: &str, data: &[u8]) -> Result<(), FsError> {
        let loc = self.locate(path)?;
        let mut tree = lock(&loc.tree);
        let Some((last, parents)) = loc.rel.split_last() else {
            return Err(FsError::IsADirectory);
        };
        let dir = walk_dir_mut(&mut tree, parents)?;
        match dir.entries.get_mut(last) {
            Some(Node::File(f)) => {
                if f.data.len().saturating_add(data.len()) > MAX_FILE_SIZE {
                    return Err(FsError::NoSpace);
                }
                f.data.extend_from_slice(data);
                f.mtime = now();
                Ok(())
            }
            Some(Node::Dir(_)) => Err(FsError::IsADirectory),
            Some(Node::Dev(..)) => Ok(()),
            None => Err(FsError::NotFound),
        }
    }

    /// Replaces a file's content (creating it with mode 0644), as a test helper or `cp` would.
    pub fn write(&self, path: &str, data: &[u8]) -> Result<(), FsError> {
        if data.len() > MAX_FILE_SIZE {
            return Err(FsError::NoSpace);
        }
        match self.open_write(path, true)? {
            WriteTarget::File(p) => self.append(&p, data),
            WriteTarget::Device(_) => Ok(()),
        }
    }

    /// Creates one directory; its parent must exist.
    pub(crate) fn mkdir(&self, path: &str, mode: u32) -> Result<(), FsError> {
        let loc = self.locate(path)?;
        let mut tree = lock(&loc.tree);
        let Some((last, parents)) = loc.rel.split_last() else {
            return Err(FsError::Exists);
        };
        let dir = walk_dir_mut(&mut tree, parents)?;
        if dir.entries.contains_key(last) {
            return Err(FsError::Exists);
        }
        dir.entries
            .insert(last.clone(), Node::Dir(Dir::new(mode & 0o7777)));
        dir.mtime = now();
        Ok(())
    }

    /// Creates a directory and any missing parents; an existing directory is fine.
    pub fn mkdir_all(&self, path: &str, mode: u32) -> Result<(), FsError> {
        let parts = components(path)?;
        let mut cur = String::new();
        for p in parts {
            cur.push('/');
            cur.push_str(&p);
            match self.metadata(&cur) {
                Ok(m) if m.kind == NodeKind::Directory => {}
                Ok(_) => return Err(FsError::NotADirectory),
                Err(FsError::NotFound) => match self.mkdir(&cur, mode) {
                    Ok(()) | Err(FsError::Exists) => {}
                    Err(e) => return Err(e),
                },
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// Removes a file, or a directory when `recursive` is set or it is empty (`dir_ok`).
    /// A mount point keeps existing (its content goes when `recursive`): EBUSY.
    pub(crate) fn remove(&self, path: &str, recursive: bool, dir_ok: bool) -> Result<(), FsError> {
        let loc = self.locate(path)?;
        if loc.is_mount_root {
            let mut tree = lock(&loc.tree);
            if recursive {
                tree.entries.clear();
                tree.mtime = now();
            } else if !dir_ok {
                return Err(FsError::IsADirectory);
            } else if !tree.entries.is_empty() {
                return Err(FsError::NotEmpty);
            }
            return Err(FsError::Busy);
        }
        if self.has_mount_below(path)? {
            return Err(FsError::Busy);
        }
        let mut tree = lock(&loc.tree);
        let Some((last, parents)) = loc.rel.split_last() else {
            return Err(FsError::Busy);
        };
        let dir = walk_dir_mut(&mut tree, parents)?;
        match dir.entries.get(last) {
            None => return Err(FsError::NotFound),
            Some(Node::Dir(d)) => {
                if !recursive && !dir_ok {
                    return Err(FsError::IsADirectory);
                }
                if !recursive && !d.entries.is_empty() {
                    return Err(FsError::NotEmpty);
                }
            }
            Some(_) => {}
        }
        dir.entries.remove(last);
        dir.mtime = now();
        Ok(())
    }

    /// Sets permission bits.
    pub(crate) fn chmod(&self, path: &str, mode: u32) -> Result<(), FsError> {
        self.update(path, |node| match node {
            Node::File(f) => f.mode = mode & 0o7777,
            Node::Dir(d) => d.mode = mode & 0o7777,
            Node::Dev(..) => {}
        })
    }

    /// Sets the modification time, creating an empty file if nothing is there (`touch`).
    pub(crate) fn touch(&self, path: &str, mtime: i64) -> Result<(), FsError> {
        if !self.exists(path) {
            self.open_write(path, false)?;
        }
        self.update(path, |node| match node {
            Node::File(f) => f.mtime = mtime,
            Node::Dir(d) => d.mtime = mtime,
            Node::Dev(_, t) => *t = mtime,
        })
    }

    /// Applies `f` to the node at a path (the root of a tree included).
    fn update(&self, path: &str, f: impl FnOnce(&mut Node)) -> Result<(), FsError> {
        let loc = self.locate(path)?;
        let mut tree = lock(&loc.tree);
        let Some((last, parents)) = loc.rel.split_last() else {
            let mut node = Node::Dir(Dir {
                entries: BTreeMap::new(),
                mode: tree.mode,
                mtime: tree.mtime,
            });
            f(&mut node);
            if let Node::Dir(d) = node {
                tree.mode = d.mode;
                tree.mtime = d.mtime;
            }
            return Ok(());
        };
        let dir = walk_dir_mut(&mut tree, parents)?;
        let node = dir.entries.get_mut(last).ok_or(FsError::NotFound)?;
        f(node);
        Ok(())
    }

    /// Copies a file or (with `recursive`) a directory tree to a new path.
    pub(crate) fn copy(&self, from: &str, to: &str, recursive: bool) -> Result<(), FsError> {
        let node = self.take_or_clone(from, false)?;
        if matches!(node, Node::Dir(_)) && !recursive {
            return Err(FsError::IsADirectory);
        }
        self.put(to, node)
    }

    /// Moves a node to a new path (also across mounts).
    pub(crate) fn rename(&self, from: &str, to: &str) -> Result<(), FsError> {
        let nf = normalize(from)?;
        let nt = normalize(to)?;
        if nt == nf {
            return Ok(());
        }
        if nt.starts_with(&format!("{nf}/")) {
            return Err(FsError::InvalidArgument);
        }
        if self.locate(&nf)?.is_mount_root || self.has_mount_below(&nf)? {
            return Err(FsError::Busy);
        }
        // Check the destination's parent before taking the source out.
        let parent = components(&nt)?;
        if let Some((_, parents)) = parent.split_last() {
            let mut p = String::new();
            for c in parents {
                p.push('/');
                p.push_str(c);
            }
            let meta = self.metadata(if p.is_empty() { "/" } else { &p })?;
            if meta.kind != NodeKind::Directory {
                return Err(FsError::NotADirectory);
            }
        }
        let node = self.take_or_clone(&nf, true)?;
        match self.put(&nt, node.clone()) {
            Ok(()) => Ok(()),
            Err(e) => {
                // Put it back where it was.
                let _ = self.put(&nf, node);
                Err(e)
            }
        }
    }

    /// Clones (or, with `take`, removes) the node at a path.
    fn take_or_clone(&self, path: &str, take: bool) -> Result<Node, FsError> {
        let loc = self.locate(path)?;
        let mut tree = lock(&loc.tree);
        let Some((last, parents)) = loc.rel.split_last() else {
            if take {
                return Err(FsError::Busy);
            }
            return Ok(Node::Dir(tree.clone()));
        };
        let dir = walk_dir_mut(&mut tree, parents)?;
        if take {
            let node = dir.entries.remove(last).ok_or(FsError::NotFound)?;
            dir.mtime = now();
            Ok(node)
        } else {
            dir.entries.get(last).cloned().ok_or(FsError::NotFound)
        }
    }

    /// Stores a node at a path, replacing a file but not a directory.
    fn put(&self, path: &str, node: Node) -> Result<(), FsError> {
        let loc = self.locate(path)?;
        if loc.is_mount_root {
            return Err(FsError::Busy);
        }
        let mut tree = lock(&loc.tree);
        let Some((last, parents)) = loc.rel.split_last() else {
            return Err(FsError::Busy);
        };
        let dir = walk_dir_mut(&mut tree, parents)?;
        match (dir.entries.get(last), &node) {
            (Some(Node::Dir(_)), Node::Dir(_)) => return Err(FsError::Exists),
            (Some(Node::Dir(_)), _) => return Err(FsError::IsADirectory),
            (Some(_), Node::Dir(_)) => return Err(FsError::NotADirectory),
            _ => {}
        }
        dir.entries.insert(last.clone(), node);
        dir.mtime = now();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fresh_fs_has_the_usual_directories_and_devices() {
        let fs = PodFs::new(vec![]);
        for dir in ["/bin", "/tmp", "/etc", "/workspace", "/usr/local/bin"] {
            assert_eq!(
                fs.metadata(dir).map(|m| m.kind),
                Ok(NodeKind::Directory),
                "{dir}"
            );
        }
        assert_eq!(
            fs.metadata("/dev/null").map(|m| m.kind),
            Ok(NodeKind::CharDevice)
        );
        assert_eq!(fs.metadata("/tmp").map(|m| m.mode), Ok(0o1777));
        assert_eq!(fs.read_dir("/bin").map(|v| v.len()), Ok(0));
    }

    #[test]
    fn executables_are_laid_down_under_the_mounts() {
        let tool = ("/bin/tool".to_string(), b"data".to_vec());
        let hidden = ("/opt/hidden".to_string(), b"data".to_vec());
        let fs = PodFs::with_executables([tool, hidden], vec![("/opt".into(), Volume::new())]);
        let meta = fs.metadata("/bin/tool").map(|m| (m.kind, m.mode));
        assert_eq!(meta, Ok((NodeKind::Regular, 0o755)));
        assert_eq!(fs.read("/bin/tool").as_deref(), Ok(&b"data"[..]));
        assert_eq!(fs.read("/opt/hidden"), Err(FsError::NotFound));
    }

    #[test]
    fn volume_survives_a_new_podfs_while_the_root_does_not() {
        let volume = Volume::new();
        let first = PodFs::new(vec![("/data".into(), volume.clone())]);
        first.write("/data/kept.txt", b"kept").ok();
        first.write("/tmp/lost.txt", b"lost").ok();
        drop(first);
        let second = PodFs::new(vec![("/data".into(), volume)]);
        assert_eq!(second.read("/data/kept.txt").as_deref(), Ok(&b"kept"[..]));
        assert_eq!(second.read("/tmp/lost.txt"), Err(FsError::NotFound));
    }

    #[test]
    fn mount_point_hides_the_root_tree_below_it() {
        let volume = Volume::new();
        volume_write(&volume, "a", b"from volume");
        let fs = PodFs::new(vec![("/workspace".into(), volume)]);
        assert_eq!(fs.read("/workspace/a").as_deref(), Ok(&b"from volume"[..]));
        let names: Vec<String> = fs
            .read_dir("/workspace")
            .unwrap_or_default()
            .into_iter()
            .map(|e| e.name)
            .collect();
        assert_eq!(names, vec!["a".to_string()]);
    }

    /// Writes a file straight into a volume through a throwaway pod.
    fn volume_write(volume: &Volume, name: &str, data: &[u8]) {
        let fs = PodFs::new(vec![("/v".into(), volume.clone())]);
        assert_eq!(fs.write(&format!("/v/{name}"), data), Ok(()));
    }

    #[test]
    fn mkdir_all_creates_nested_directories_and_accepts_existing_ones() {
        let fs = PodFs::new(vec![]);
        assert_eq!(fs.mkdir_all("/a/b/c", 0o755), Ok(()));
        assert_eq!(fs.mkdir_all("/a/b/c", 0o755), Ok(()));
        assert_eq!(
            fs.metadata("/a/b/c").map(|m| m.kind),
            Ok(NodeKind::Directory)
        );
        assert_eq!(fs.mkdir("/a/b", 0o755), Err(FsError::Exists));
        assert_eq!(fs.mkdir("/x/y", 0o755), Err(FsError::NotFound));
    }

    #[test]
    fn removing_a_mount_point_empties_it_but_reports_busy() {
        let fs = PodFs::new(vec![("/data".into(), Volume::new())]);
        fs.write("/data/f", b"x").ok();
        assert_eq!(fs.remove("/data", true, true), Err(FsError::Busy));
        assert_eq!(fs.read_dir("/data").map(|v| v.len()), Ok(0));
        assert!(fs.exists("/data"));
    }

    #[test]
    fn rename_moves_across_a_mount() {
        let fs = PodFs::new(vec![("/data".into(), Volume::new())]);
        fs.write("/tmp/f", b"move me").ok();
        assert_eq!(fs.rename("/tmp/f", "/data/g"), Ok(()));
        assert_eq!(fs.read("/data/g").as_deref(), Ok(&b"move me"[..]));
        assert!(!fs.exists("/tmp/f"));
    }

    #[test]
    fn paths_beyond_the_depth_limit_are_refused() {
        let deep = "/a".repeat(MAX_DEPTH + 1);
        assert_eq!(components(&deep), Err(FsError::NameTooLong));
        assert_eq!(normalize("/a/./b/../c"), Ok("/a/c".to_string()));
    }

    #[test]
    fn appending_beyond_the_size_cap_fails_with_no_space() {
        let fs = PodFs::new(vec![]);
        fs.write("/tmp/f", b"").ok();
        let big = vec![0u8; MAX_FILE_SIZE];
        assert_eq!(fs.append("/tmp/f", &big), Ok(()));
        assert_eq!(fs.append("/tmp/f", b"x"), Err(FsError::NoSpace));
    }
}
