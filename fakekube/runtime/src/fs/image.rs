//! What a fresh root holds: the directories every image has, `/dev/null` and `/dev/zero`, a
//! minimal `/etc`, the executables it is given, and the mount points of its volumes.

use std::sync::{Arc, Mutex};

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

impl PodFs {
    /// A fresh filesystem: the usual directories, `/dev/null` and `/dev/zero`, a minimal `/etc`,
    /// and each volume mounted at its path (a path that is not absolute is taken from `/`; a later
    /// mount at the same path wins). It has no programs: a container's filesystem comes from
    /// [`Programs::pod_fs`](crate::Programs::pod_fs), which adds their `/bin` entries.
    pub fn new(mounts: Vec<(String, Volume)>) -> Self {
        Self::with_executables(std::iter::empty(), mounts, &StorageBudget::unlimited())
    }

    /// [`PodFs::new`] with executable files (mode 0755) laid down in the root tree before the
    /// volumes are mounted: absolute paths in existing directories, and their content. What it
    /// holds is charged to `budget`, volumes included (each to the budget of the first
    /// filesystem that mounts it).
    pub(crate) fn with_executables(
        executables: impl IntoIterator<Item = (String, Vec<u8>)>,
        mounts: Vec<(String, Volume)>,
        budget: &StorageBudget,
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
            volume.usage.adopt(budget);
            table.retain(|(p, _)| *p != parts);
            table.push((parts, volume));
        }
        table.sort_by_key(|(p, _)| std::cmp::Reverse(p.len()));
        let usage = Usage::new(budget.clone());
        usage.charge_initial(root.entries.values().map(Node::size).sum());
        PodFs {
            root: Arc::new(Mutex::new(root)),
            usage,
            mounts: Arc::new(table),
        }
    }
}
