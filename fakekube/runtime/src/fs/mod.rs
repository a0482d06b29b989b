//! The in-memory filesystem of a pod: a fresh root tree per pod, plus volumes that outlive it.
//!
//! Paths are resolved component by component as the kernel does: a symbolic link met on the
//! way is replaced by its target (relative to the link's directory), `..` goes up from where
//! the links led, and more than [`MAX_LINKS`] links in one lookup is ELOOP. The calls that act
//! on a link itself (`lstat`, `readlink`, `unlink`, `rename`, creating one) do not follow the
//! last component. A mount replaces the subtree at its path with the volume's own tree, which is shared
//! (behind an `Arc`) by every [`PodFs`] that mounts the same [`Volume`]: a new pod with the same
//! volume sees what the old one wrote there, and nothing else.
//!
//! - [`path`]: lexical path handling and its limits;
//! - [`tree`]: the nodes of a tree and walking them;
//! - [`image`]: what a fresh root holds ([`PodFs::new`]);
//! - here: [`PodFs`]'s operations (read, write, list, remove, copy, rename) across mounts.

mod image;
mod path;
mod storage;
mod tree;

use std::sync::{Arc, Mutex};

use bytes::Bytes;

pub(crate) use image::Image;
use path::join_parts;
pub use path::{components, join, normalize};
pub use storage::StorageBudget;
use storage::Usage;
pub use tree::{Device, Metadata, NodeKind, now};

use tree::{Dir, File, Node, lock, walk, walk_dir, walk_dir_mut};

/// Largest file the filesystem holds; a write beyond it fails with "No space left on device",
/// so a runaway `yes > file` cannot take the whole process down.
pub const MAX_FILE_SIZE: usize = 256 * 1024 * 1024;

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
    /// EINVAL: e.g. moving a directory into itself, or `readlink` of something else.
    #[error("Invalid argument")]
    InvalidArgument,
    /// EPERM: e.g. a hard link to a directory.
    #[error("Operation not permitted")]
    NotPermitted,
    /// ELOOP: more than [`MAX_LINKS`] symbolic links in one lookup.
    #[error("Too many levels of symbolic links")]
    Loop,
}

/// Most symbolic links one lookup follows (Linux's `MAXSYMLINKS`).
pub const MAX_LINKS: usize = 40;

/// The storage of one PersistentVolumeClaim. Cloning shares it; it lives as long as any clone.
#[derive(Debug, Clone)]
pub struct Volume {
    /// The volume's root directory.
    root: Arc<Mutex<Dir>>,
    /// The bytes it holds, charged to the budget of the first filesystem that mounts it.
    usage: Arc<Usage>,
}

impl Volume {
    /// An empty volume (a freshly provisioned claim).
    pub fn new() -> Self {
        Volume {
            root: Arc::new(Mutex::new(Dir::new(0o755))),
            usage: Usage::unadopted(),
        }
    }
}

impl Default for Volume {
    fn default() -> Self {
        Self::new()
    }
}

/// Where a path lands: which tree, and the components inside it.
struct Located {
    /// The tree (pod root or a volume).
    tree: Arc<Mutex<Dir>>,
    /// What the tree holds.
    usage: Arc<Usage>,
    /// Components below the tree's root (empty: the root itself).
    rel: Vec<String>,
    /// Whether the path is exactly a mount point (or `/`).
    is_mount_root: bool,
}

/// One entry of a directory listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DirEntry {
    /// Entry name.
    pub name: String,
    /// Entry metadata.
    pub meta: Metadata,
}

/// How a file is opened for reading.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReadTarget {
    /// A regular file at this normalised absolute path.
    File(String),
    /// A device.
    Device(Device),
}

/// How a file is opened for writing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WriteTarget {
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
    /// What the root tree holds (the pod's ephemeral storage).
    usage: Arc<Usage>,
    /// Mounts, longest path first: normalised components and the volume.
    mounts: Arc<Vec<(Vec<String>, Volume)>>,
}

impl PodFs {
    /// The bytes the files of the root tree hold (volumes not counted): the pod's use of
    /// ephemeral storage.
    pub fn ephemeral_bytes(&self) -> u64 {
        self.usage.bytes()
    }

    /// Sets the ephemeral-storage limit of the root tree (0: none). Writes past it still
    /// succeed, as on a node's disk; the returned token fires once the files hold more, for
    /// the kubelet to evict the pod.
    pub fn set_ephemeral_limit(&self, bytes: u64) -> tokio_util::sync::CancellationToken {
        self.usage.set_limit(bytes)
    }

    /// Finds the tree that holds an absolute path, following every symbolic link on the way.
    fn locate(&self, path: &str) -> Result<Located, FsError> {
        self.locate_raw(&self.resolve(path, true)?)
    }

    /// [`PodFs::locate`] without following a link in the last component.
    fn locate_nofollow(&self, path: &str) -> Result<Located, FsError> {
        self.locate_raw(&self.resolve(path, false)?)
    }

    /// The target of the symbolic link at a link-free absolute path; `None` when something
    /// else (or nothing) is there.
    fn link_at(&self, path: &str) -> Option<String> {
        let loc = self.locate_raw(path).ok()?;
        let tree = lock(&loc.tree);
        match walk(&tree, &loc.rel).ok()? {
            Node::Link(target, _) => Some(target.clone()),
            _ => None,
        }
    }

    /// The path with every symbolic link replaced by its target (the last component's only
    /// when `follow_last`, or when the path ends in `/`), `.` and `..` applied as the walk
    /// goes: a normalised absolute path with no link in it but maybe the last component.
    pub fn resolve(&self, path: &str, follow_last: bool) -> Result<String, FsError> {
        if path.len() > path::MAX_PATH_LEN {
            return Err(FsError::NameTooLong);
        }
        let follow_last = follow_last || (path.ends_with('/') && path.len() > 1);
        // Components still to walk, in reverse (the next one last).
        let mut todo: Vec<String> = path
            .split('/')
            .filter(|c| !c.is_empty() && *c != ".")
            .rev()
            .map(str::to_string)
            .collect();
        let mut done: Vec<String> = Vec::new();
        let mut links = 0;
        while let Some(part) = todo.pop() {
            if part == ".." {
                done.pop();
                continue;
            }
            done.push(part);
            if done.len() > path::MAX_DEPTH {
                return Err(FsError::NameTooLong);
            }
            if todo.is_empty() && !follow_last {
                break;
            }
            let Some(target) = self.link_at(&join_parts(&done)) else {
                continue;
            };
            links += 1;
            if links > MAX_LINKS {
                return Err(FsError::Loop);
            }
            done.pop();
            if target.starts_with('/') {
                done.clear();
            }
            todo.extend(
                target
                    .split('/')
                    .filter(|c| !c.is_empty() && *c != ".")
                    .rev()
                    .map(str::to_string),
            );
        }
        let out = join_parts(&done);
        components(&out)?;
        Ok(out)
    }

    /// Finds the tree that holds a link-free absolute path.
    fn locate_raw(&self, path: &str) -> Result<Located, FsError> {
        let parts = components(path)?;
        for (mount, volume) in self.mounts.iter() {
            if parts.len() >= mount.len() && parts[..mount.len()] == mount[..] {
                return Ok(Located {
                    tree: volume.root.clone(),
                    usage: volume.usage.clone(),
                    is_mount_root: parts.len() == mount.len(),
                    rel: parts[mount.len()..].to_vec(),
                });
            }
        }
        Ok(Located {
            tree: self.root.clone(),
            usage: self.usage.clone(),
            is_mount_root: parts.is_empty(),
            rel: parts,
        })
    }

    /// Whether a mount point lies strictly below the absolute path.
    fn has_mount_below(&self, path: &str) -> Result<bool, FsError> {
        let parts = components(&self.resolve(path, false)?)?;
        Ok(self
            .mounts
            .iter()
            .any(|(m, _)| m.len() > parts.len() && m[..parts.len()] == parts[..]))
    }

    /// Metadata of the node at an absolute path.
    pub fn metadata(&self, path: &str) -> Result<Metadata, FsError> {
        let loc = self.locate(path)?;
        let tree = lock(&loc.tree);
        if loc.rel.is_empty() {
            return Ok(Node::Dir(tree.clone()).metadata());
        }
        walk(&tree, &loc.rel).map(Node::metadata)
    }

    /// Whether anything exists at the path.
    pub fn exists(&self, path: &str) -> bool {
        self.metadata(path).is_ok()
    }

    /// The entries of a directory, sorted by name.
    pub fn read_dir(&self, path: &str) -> Result<Vec<DirEntry>, FsError> {
        let resolved = self.resolve(path, true)?;
        let loc = self.locate_raw(&resolved)?;
        let parts = components(&resolved)?;
        let entries: Vec<DirEntry> = {
            let tree = lock(&loc.tree);
            let dir = walk_dir(&tree, &loc.rel)?;
            dir.entries()
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
            Node::Dev(..) => Err(FsError::InvalidArgument),
            Node::Link(..) => Err(FsError::NotFound),
        }
    }

    /// Up to `max` bytes of a regular file from `offset`; an empty result means end of file.
    pub fn read_at(&self, path: &str, offset: usize, max: usize) -> Result<Bytes, FsError> {
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
            Node::Dev(..) | Node::Link(..) => Ok(Bytes::new()),
        }
    }

    /// Checks a path can be read and says what it is (a file to read in chunks, or a device).
    pub fn open_read(&self, path: &str) -> Result<ReadTarget, FsError> {
        let norm = self.resolve(path, true)?;
        let loc = self.locate_raw(&norm)?;
        let tree = lock(&loc.tree);
        if loc.rel.is_empty() {
            return Err(FsError::IsADirectory);
        }
        match walk(&tree, &loc.rel)? {
            Node::File(_) => Ok(ReadTarget::File(norm)),
            Node::Dir(_) => Err(FsError::IsADirectory),
            Node::Dev(d, _) => Ok(ReadTarget::Device(*d)),
            Node::Link(..) => Err(FsError::NotFound),
        }
    }

    /// Opens a path for writing, creating the file (mode 0644) if needed and emptying it when
    /// `truncate` is set.
    pub fn open_write(&self, path: &str, truncate: bool) -> Result<WriteTarget, FsError> {
        let norm = self.resolve(path, true)?;
        let loc = self.locate_raw(&norm)?;
        let mut tree = lock(&loc.tree);
        let Some((last, parents)) = loc.rel.split_last() else {
            return Err(FsError::IsADirectory);
        };
        // What needs no change is answered without making the tree's directories private.
        match walk(&tree, &loc.rel) {
            Ok(Node::File(_)) if !truncate => return Ok(WriteTarget::File(norm)),
            Ok(Node::Dir(_)) => return Err(FsError::IsADirectory),
            Ok(Node::Dev(d, _)) => return Ok(WriteTarget::Device(*d)),
            _ => {}
        }
        let dir = walk_dir_mut(&mut tree, parents)?;
        let t = now();
        match dir.entries_mut().get_mut(last) {
            Some(Node::File(f)) => {
                if truncate {
                    loc.usage.shrink(f.data.len());
                    f.data = Vec::new();
                    f.mtime = t;
                }
                Ok(WriteTarget::File(norm))
            }
            Some(Node::Dir(_)) => Err(FsError::IsADirectory),
            Some(Node::Dev(d, _)) => Ok(WriteTarget::Device(*d)),
            Some(Node::Link(..)) => Err(FsError::Loop),
            None => {
                dir.entries_mut().insert(
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
    pub fn append(&self, path: &str, data: &[u8]) -> Result<(), FsError> {
        let loc = self.locate(path)?;
        let mut tree = lock(&loc.tree);
        let Some((last, parents)) = loc.rel.split_last() else {
            return Err(FsError::IsADirectory);
        };
        match walk(&tree, &loc.rel)? {
            Node::File(_) => {}
            Node::Dev(..) => return Ok(()),
            Node::Dir(_) => return Err(FsError::IsADirectory),
            Node::Link(..) => return Err(FsError::NotFound),
        }
        let dir = walk_dir_mut(&mut tree, parents)?;
        match dir.entries_mut().get_mut(last) {
            Some(Node::File(f)) => {
                if f.data.len().saturating_add(data.len()) > MAX_FILE_SIZE {
                    return Err(FsError::NoSpace);
                }
                loc.usage.grow(data.len())?;
                f.data.extend_from_slice(data);
                f.mtime = now();
                Ok(())
            }
            Some(Node::Dir(_)) => Err(FsError::IsADirectory),
            Some(Node::Dev(..)) => Ok(()),
            Some(Node::Link(..)) | None => Err(FsError::NotFound),
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
    pub fn mkdir(&self, path: &str, mode: u32) -> Result<(), FsError> {
        let loc = self.locate_nofollow(path.trim_end_matches('/'))?;
        let mut tree = lock(&loc.tree);
        let Some((last, parents)) = loc.rel.split_last() else {
            return Err(FsError::Exists);
        };
        if walk_dir(&tree, parents)?.entries().contains_key(last) {
            return Err(FsError::Exists);
        }
        let dir = walk_dir_mut(&mut tree, parents)?;
        dir.entries_mut()
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
    pub fn remove(&self, path: &str, recursive: bool, dir_ok: bool) -> Result<(), FsError> {
        let loc = self.locate_nofollow(path)?;
        if loc.is_mount_root {
            let mut tree = lock(&loc.tree);
            if recursive {
                let freed: usize = tree.entries().values().map(Node::size).sum();
                tree.entries_mut().clear();
                loc.usage.shrink(freed);
                tree.mtime = now();
            } else if !dir_ok {
                return Err(FsError::IsADirectory);
            } else if !tree.entries().is_empty() {
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
        match walk_dir(&tree, parents)?.entries().get(last) {
            None => return Err(FsError::NotFound),
            Some(Node::Dir(d)) => {
                if !recursive && !dir_ok {
                    return Err(FsError::IsADirectory);
                }
                if !recursive && !d.entries().is_empty() {
                    return Err(FsError::NotEmpty);
                }
            }
            Some(_) => {}
        }
        let dir = walk_dir_mut(&mut tree, parents)?;
        if let Some(node) = dir.entries_mut().remove(last) {
            loc.usage.shrink(node.size());
        }
        dir.mtime = now();
        Ok(())
    }

    /// Sets permission bits.
    pub fn chmod(&self, path: &str, mode: u32) -> Result<(), FsError> {
        self.update(path, |node| match node {
            Node::File(f) => f.mode = mode & 0o7777,
            Node::Dir(d) => d.mode = mode & 0o7777,
            Node::Dev(..) | Node::Link(..) => {}
        })
    }

    /// Sets the modification time, creating an empty file if nothing is there (`touch`).
    pub fn touch(&self, path: &str, mtime: i64) -> Result<(), FsError> {
        if !self.exists(path) {
            self.open_write(path, false)?;
        }
        self.update(path, |node| match node {
            Node::File(f) => f.mtime = mtime,
            Node::Dir(d) => d.mtime = mtime,
            Node::Dev(_, t) | Node::Link(_, t) => *t = mtime,
        })
    }

    /// Applies `f` to the node at a path (the root of a tree included).
    fn update(&self, path: &str, f: impl FnOnce(&mut Node)) -> Result<(), FsError> {
        let loc = self.locate(path)?;
        let mut tree = lock(&loc.tree);
        let Some((last, parents)) = loc.rel.split_last() else {
            let mut node = Node::Dir(tree.clone());
            f(&mut node);
            if let Node::Dir(d) = node {
                tree.mode = d.mode;
                tree.mtime = d.mtime;
            }
            return Ok(());
        };
        walk(&tree, &loc.rel)?;
        let dir = walk_dir_mut(&mut tree, parents)?;
        let node = dir.entries_mut().get_mut(last).ok_or(FsError::NotFound)?;
        f(node);
        Ok(())
    }

    /// Metadata of the node at a path, a symbolic link itself rather than its target
    /// (`lstat`).
    pub fn symlink_metadata(&self, path: &str) -> Result<Metadata, FsError> {
        let loc = self.locate_nofollow(path)?;
        let tree = lock(&loc.tree);
        if loc.rel.is_empty() {
            return Ok(Node::Dir(tree.clone()).metadata());
        }
        walk(&tree, &loc.rel).map(Node::metadata)
    }

    /// The target of a symbolic link, as written (`readlink`); EINVAL for anything else.
    pub fn read_link(&self, path: &str) -> Result<String, FsError> {
        let loc = self.locate_nofollow(path)?;
        let tree = lock(&loc.tree);
        if loc.rel.is_empty() {
            return Err(FsError::InvalidArgument);
        }
        match walk(&tree, &loc.rel)? {
            Node::Link(target, _) => Ok(target.clone()),
            _ => Err(FsError::InvalidArgument),
        }
    }

    /// Creates a symbolic link at `path` holding `target` (which need not exist); EEXIST if
    /// anything is there, a dangling link included.
    pub fn symlink(&self, target: &str, path: &str) -> Result<(), FsError> {
        if target.is_empty() {
            return Err(FsError::NotFound);
        }
        if target.len() > path::MAX_PATH_LEN {
            return Err(FsError::NameTooLong);
        }
        let loc = self.locate_nofollow(path)?;
        let mut tree = lock(&loc.tree);
        let Some((last, parents)) = loc.rel.split_last() else {
            return Err(FsError::Exists);
        };
        if walk_dir(&tree, parents)?.entries().contains_key(last) {
            return Err(FsError::Exists);
        }
        loc.usage.grow(target.len())?;
        let dir = walk_dir_mut(&mut tree, parents)?;
        let t = now();
        dir.entries_mut()
            .insert(last.clone(), Node::Link(target.to_string(), t));
        dir.mtime = t;
        Ok(())
    }

    /// Copies a file or (with `recursive`) a directory tree to a new path.
    pub fn copy(&self, from: &str, to: &str, recursive: bool) -> Result<(), FsError> {
        let node = self.take_or_clone(from, false)?;
        if matches!(node, Node::Dir(_)) && !recursive {
            return Err(FsError::IsADirectory);
        }
        self.put(to, node)
    }

    /// Moves a node to a new path (also across mounts).
    pub fn rename(&self, from: &str, to: &str) -> Result<(), FsError> {
        let nf = self.resolve(from, false)?;
        let nt = self.resolve(to, false)?;
        if nt == nf {
            return Ok(());
        }
        if nt.starts_with(&format!("{nf}/")) {
            return Err(FsError::InvalidArgument);
        }
        if self.locate_raw(&nf)?.is_mount_root || self.has_mount_below(&nf)? {
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
        let loc = if take {
            self.locate_nofollow(path)?
        } else {
            self.locate(path)?
        };
        let mut tree = lock(&loc.tree);
        let Some((last, parents)) = loc.rel.split_last() else {
            if take {
                return Err(FsError::Busy);
            }
            return Ok(Node::Dir(tree.clone()));
        };
        if !take {
            return walk(&tree, &loc.rel).cloned();
        }
        walk(&tree, &loc.rel)?;
        let dir = walk_dir_mut(&mut tree, parents)?;
        let node = dir.entries_mut().remove(last).ok_or(FsError::NotFound)?;
        loc.usage.shrink(node.size());
        dir.mtime = now();
        Ok(node)
    }

    /// Stores a node at a path, replacing a file but not a directory.
    fn put(&self, path: &str, node: Node) -> Result<(), FsError> {
        let loc = self.locate_nofollow(path)?;
        if loc.is_mount_root {
            return Err(FsError::Busy);
        }
        let mut tree = lock(&loc.tree);
        let Some((last, parents)) = loc.rel.split_last() else {
            return Err(FsError::Busy);
        };
        match (walk_dir(&tree, parents)?.entries().get(last), &node) {
            (Some(Node::Dir(_)), Node::Dir(_)) => return Err(FsError::Exists),
            (Some(Node::Dir(_)), _) => return Err(FsError::IsADirectory),
            (Some(_), Node::Dir(_)) => return Err(FsError::NotADirectory),
            _ => {}
        }
        loc.usage.grow(node.size())?;
        let dir = walk_dir_mut(&mut tree, parents)?;
        if let Some(old) = dir.entries_mut().insert(last.clone(), node) {
            loc.usage.shrink(old.size());
        }
        dir.mtime = now();
        Ok(())
    }
}

#[cfg(test)]
mod tests;
