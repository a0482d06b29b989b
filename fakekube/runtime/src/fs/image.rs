//! What a fresh root holds: the directories every image has, `/dev/null` and `/dev/zero`, a
//! minimal `/etc`, the executables it is given, and the mount points of its volumes.
//!
//! The tree is built once as an [`Image`] and shared by every filesystem made from it: each
//! gets a clone of the image's root, whose directories it shares until it writes in them (see
//! [`Dir`]). So a running pod holds only what it changed, not a copy of the image.

use std::sync::{Arc, Mutex, OnceLock};

use super::path::components;
use super::storage::{StorageBudget, Usage};
use super::tree::{Device, Dir, File, Node, now, walk_dir_mut};
use super::{PodFs, Volume};

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

/// A root tree to make filesystems from: the standard directories and files plus the given
/// executables. Cloning shares it.
#[derive(Debug, Clone)]
pub(crate) struct Image {
    /// The root directory, shared by every filesystem made from the image until written.
    root: Dir,
    /// The bytes its files hold, charged to each filesystem made from it.
    bytes: usize,
}

impl Image {
    /// The standard image with executable files (mode 0755) added: absolute paths in existing
    /// directories, and their content.
    pub fn new(executables: impl IntoIterator<Item = (String, Vec<u8>)>) -> Self {
        let mut root = Dir::new(0o755);
        for (path, mode) in STANDARD_DIRS {
            if let Ok(parts) = components(path)
                && let Some((last, parents)) = parts.split_last()
                && let Ok(parent) = walk_dir_mut(&mut root, parents)
            {
                parent
                    .entries_mut()
                    .insert(last.clone(), Node::Dir(Dir::new(*mode)));
            }
        }
        let t = now();
        if let Some(Node::Dir(dev)) = root.entries_mut().get_mut("dev") {
            let entries = dev.entries_mut();
            entries.insert("null".into(), Node::Dev(Device::Null, t));
            entries.insert("zero".into(), Node::Dev(Device::Zero, t));
            entries.insert("random".into(), Node::Dev(Device::Random, t));
            entries.insert("urandom".into(), Node::Dev(Device::Random, t));
            entries.insert("full".into(), Node::Dev(Device::Full, t));
            let mut fd = Dir::new(0o755);
            for n in 0..3u8 {
                fd.entries_mut()
                    .insert(n.to_string(), Node::Dev(Device::Fd(n), t));
            }
            entries.insert("fd".into(), Node::Dir(fd));
            for (n, name) in ["stdin", "stdout", "stderr"].iter().enumerate() {
                entries.insert((*name).into(), Node::Link(format!("/dev/fd/{n}"), t));
            }
        }
        let etc_files: [(&str, &[u8]); 3] = [
            ("passwd", b"root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n"),
            ("group", b"root:x:0:\nnogroup:x:65534:\n"),
            ("hosts", b"127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n"),
        ];
        if let Some(Node::Dir(etc)) = root.entries_mut().get_mut("etc") {
            for (name, data) in etc_files {
                etc.entries_mut().insert(
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
                dir.entries_mut().insert(last.clone(), Node::File(file));
            }
        }
        let bytes = root.entries().values().map(Node::size).sum();
        Image { root, bytes }
    }

    /// The standard image without executables, made once.
    fn standard() -> &'static Image {
        static STANDARD: OnceLock<Image> = OnceLock::new();
        STANDARD.get_or_init(|| Image::new(std::iter::empty()))
    }
}

impl PodFs {
    /// A fresh filesystem: the usual directories, `/dev/null` and `/dev/zero`, a minimal `/etc`,
    /// and each volume mounted at its path (a path that is not absolute is taken from `/`; a later
    /// mount at the same path wins). It has no programs: a container's filesystem comes from
    /// [`Programs::pod_fs`](crate::Programs::pod_fs), which adds their `/bin` entries.
    pub fn new(mounts: Vec<(String, Volume)>) -> Self {
        Self::from_image(Image::standard(), mounts, &StorageBudget::unlimited())
    }

    /// [`PodFs::new`] with executable files (mode 0755) laid down in the root tree before the
    /// volumes are mounted (see [`Image::new`]). What it holds is charged to `budget`, volumes
    /// included (each to the budget of the first filesystem that mounts it).
    #[cfg(test)]
    pub(crate) fn with_executables(
        executables: impl IntoIterator<Item = (String, Vec<u8>)>,
        mounts: Vec<(String, Volume)>,
        budget: &StorageBudget,
    ) -> Self {
        Self::from_image(&Image::new(executables), mounts, budget)
    }

    /// A fresh filesystem whose root is `image`'s tree (shared with it until written), with
    /// each volume mounted at its path as in [`PodFs::new`]. What the root holds, the image's
    /// files included as if they were its own, is charged to `budget`, and so is each volume
    /// the first time a filesystem mounts it.
    pub(crate) fn from_image(
        image: &Image,
        mounts: Vec<(String, Volume)>,
        budget: &StorageBudget,
    ) -> Self {
        let mut root = image.root.clone();
        let mut table: Vec<(Vec<String>, Volume)> = Vec::new();
        for (path, volume) in mounts {
            let Ok(parts) = components(&path) else {
                continue;
            };
            // Make the mount point exist in the root tree so listings of its parent show it.
            let mut cur = &mut root;
            for p in &parts {
                let entry = cur
                    .entries_mut()
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
            volume.usage.adopt(budget);
            table.retain(|(p, _)| *p != parts);
            table.push((parts, volume));
        }
        table.sort_by_key(|(p, _)| std::cmp::Reverse(p.len()));
        let usage = Usage::new(budget.clone());
        let bytes = if table.is_empty() {
            image.bytes
        } else {
            // A mount point may have replaced a file of the image.
            root.entries().values().map(Node::size).sum()
        };
        usage.charge_initial(bytes);
        PodFs {
            root: Arc::new(Mutex::new(root)),
            usage,
            mounts: Arc::new(table),
        }
    }
}
