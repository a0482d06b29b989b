//! The reference provider's in-memory filesystem: a map from normalised absolute paths to nodes.

use std::collections::BTreeMap;
use std::time::SystemTime;

use bytes::Bytes;
use sandbox_contract::{FileInfo, FileKind};

/// One object in the filesystem.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Node {
    /// A directory with its permission bits and modification time.
    Dir {
        /// Permission bits.
        mode: u32,
        /// Last modification.
        modified: SystemTime,
    },
    /// A regular file with its content.
    File {
        /// The content.
        data: Bytes,
        /// Permission bits.
        mode: u32,
        /// Last modification.
        modified: SystemTime,
    },
}

/// A path that names the wrong thing (nothing, a directory, a file) for an operation on the
/// reference provider's in-memory filesystem, worded as a shell command or a file method
/// reports it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum PathError {
    /// The path, or a parent of it, does not exist.
    #[error("{0}: No such file or directory")]
    NotFound(String),
    /// A directory was found where a file was needed.
    #[error("{0}: Is a directory")]
    IsDir(String),
    /// A file was found where a directory was needed.
    #[error("{0}: Not a directory")]
    NotDir(String),
}

/// A sandbox's filesystem.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Fs {
    /// Every node by its normalised path; `/` is always present.
    nodes: BTreeMap<String, Node>,
}

/// The directories every fresh sandbox has.
const BASE_DIRS: [&str; 8] = [
    "/", "/bin", "/dev", "/root", "/tmp", "/usr", "/usr/bin", "/etc",
];

impl Fs {
    /// Returns the filesystem of a fresh sandbox: the base directories plus `volume`.
    pub(crate) fn fresh(volume: &str) -> Fs {
        let mut fs = Fs {
            nodes: BTreeMap::new(),
        };
        for dir in BASE_DIRS {
            fs.nodes.insert(dir.to_owned(), dir_node());
        }
        // The volume path is configuration, not input: a bad one simply is not made.
        let _ = fs.mkdir_p(volume);
        fs
    }

    /// Returns a fresh filesystem that keeps this one's nodes under `volume`.
    pub(crate) fn keep_only_volume(&self, volume: &str) -> Fs {
        let mut fresh = Fs::fresh(volume);
        let volume = normalize(volume);
        for (path, node) in &self.nodes {
            if is_under(path, &volume) {
                fresh.nodes.insert(path.clone(), node.clone());
            }
        }
        fresh
    }

    /// Returns the node at `path`.
    pub(crate) fn get(&self, path: &str) -> Option<&Node> {
        self.nodes.get(&normalize(path))
    }

    /// Returns the content of the file at `path`.
    pub(crate) fn read(&self, path: &str) -> Result<Bytes, PathError> {
        let path = normalize(path);
        match self.nodes.get(&path) {
            None => Err(PathError::NotFound(path)),
            Some(Node::Dir { .. }) => Err(PathError::IsDir(path)),
            Some(Node::File { data, .. }) => Ok(data.clone()),
        }
    }

    /// Writes `data` as the whole content of `path`, creating missing parents when `parents`.
    pub(crate) fn write(
        &mut self,
        path: &str,
        data: Bytes,
        parents: bool,
    ) -> Result<(), PathError> {
        let path = normalize(path);
        if let Some(Node::Dir { .. }) = self.nodes.get(&path) {
            return Err(PathError::IsDir(path));
        }
        let parent = parent_of(&path);
        if parents {
            self.mkdir_p(&parent)?;
        } else {
            match self.nodes.get(&parent) {
                Some(Node::Dir { .. }) => {}
                Some(Node::File { .. }) => return Err(PathError::NotDir(parent)),
                None => return Err(PathError::NotFound(parent)),
            }
        }
        let mode = match self.nodes.get(&path) {
            Some(Node::File { mode, .. }) => *mode,
            _ => 0o644,
        };
        self.nodes.insert(
            path,
            Node::File {
                data,
                mode,
                modified: SystemTime::now(),
            },
        );
        Ok(())
    }

    /// Creates the directory `path` and its missing parents; an existing directory is success.
    pub(crate) fn mkdir_p(&mut self, path: &str) -> Result<(), PathError> {
        let path = normalize(path);
        let mut current = String::new();
        for part in path.split('/').filter(|part| !part.is_empty()) {
            current.push('/');
            current.push_str(part);
            match self.nodes.get(&current) {
                Some(Node::Dir { .. }) => {}
                Some(Node::File { .. }) => return Err(PathError::NotDir(current)),
                None => {
                    self.nodes.insert(current.clone(), dir_node());
                }
            }
        }
        Ok(())
    }

    /// Describes `path`, naming it as asked.
    pub(crate) fn stat(&self, asked: &str) -> Result<FileInfo, PathError> {
        let path = normalize(asked);
        let node = self
            .nodes
            .get(&path)
            .ok_or_else(|| PathError::NotFound(path.clone()))?;
        Ok(info(asked.to_owned(), name_of(&path), node))
    }

    /// Lists the directory `path`, sorted by name, each entry's path joined to `asked`.
    pub(crate) fn list(&self, asked: &str) -> Result<Vec<FileInfo>, PathError> {
        let path = normalize(asked);
        match self.nodes.get(&path) {
            None => return Err(PathError::NotFound(path)),
            Some(Node::File { .. }) => return Err(PathError::NotDir(path)),
            Some(Node::Dir { .. }) => {}
        }
        let prefix = if path == "/" {
            "/".to_owned()
        } else {
            format!("{path}/")
        };
        let base = asked.trim_end_matches('/');
        let mut entries: Vec<FileInfo> = self
            .nodes
            .range(prefix.clone()..)
            .take_while(|(key, _)| key.starts_with(&prefix))
            .filter_map(|(key, node)| {
                let name = key.get(prefix.len()..)?;
                (!name.is_empty() && !name.contains('/'))
                    .then(|| info(format!("{base}/{name}"), name.to_owned(), node))
            })
            .collect();
        entries.sort_by(|a, b| a.name.as_bytes().cmp(b.name.as_bytes()));
        Ok(entries)
    }
}

/// Returns a directory node made now.
fn dir_node() -> Node {
    Node::Dir {
        mode: 0o755,
        modified: SystemTime::now(),
    }
}

/// Builds the [`FileInfo`] of `node`.
fn info(path: String, name: String, node: &Node) -> FileInfo {
    match node {
        Node::Dir { mode, modified } => FileInfo {
            path,
            name,
            kind: FileKind::Directory,
            size: 4096,
            mode: *mode,
            modified: Some(*modified),
        },
        Node::File {
            data,
            mode,
            modified,
        } => FileInfo {
            path,
            name,
            kind: FileKind::File,
            size: u64::try_from(data.len()).unwrap_or(u64::MAX),
            mode: *mode,
            modified: Some(*modified),
        },
    }
}

/// Normalises an absolute path: no `.`, no `..`, no repeated or trailing `/`.
pub(crate) fn normalize(path: &str) -> String {
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            other => parts.push(other),
        }
    }
    format!("/{}", parts.join("/"))
}

/// Resolves `path` against the directory `cwd`.
pub(crate) fn resolve(cwd: &str, path: &str) -> String {
    if path.starts_with('/') {
        normalize(path)
    } else {
        normalize(&format!("{cwd}/{path}"))
    }
}

/// Returns the parent of a normalised path (`/` for `/`).
fn parent_of(path: &str) -> String {
    match path.rfind('/') {
        Some(0) | None => "/".to_owned(),
        Some(index) => path.get(..index).unwrap_or("/").to_owned(),
    }
}

/// Returns the last component of a normalised path (`/` for the root).
fn name_of(path: &str) -> String {
    if path == "/" {
        return "/".to_owned();
    }
    path.rsplit('/').next().unwrap_or(path).to_owned()
}

/// Returns whether the normalised `path` is `dir` or inside it.
fn is_under(path: &str, dir: &str) -> bool {
    path == dir || (path.starts_with(dir) && path.as_bytes().get(dir.len()) == Some(&b'/'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalize_removes_dots_and_repeated_slashes() {
        assert_eq!(normalize("/a//b/./c/../d/"), "/a/b/d");
        assert_eq!(normalize("/../.."), "/");
        assert_eq!(resolve("/tmp", "x/../y"), "/tmp/y");
        assert_eq!(resolve("/tmp", "/abs"), "/abs");
    }

    #[test]
    fn write_with_parents_makes_the_directories() {
        let mut fs = Fs::fresh("/workspace");
        fs.write("/tmp/a/b/c", Bytes::from_static(b"x"), true)
            .unwrap();
        assert!(matches!(fs.get("/tmp/a/b"), Some(Node::Dir { .. })));
        assert_eq!(
            fs.write("/tmp/q/r", Bytes::new(), false),
            Err(PathError::NotFound("/tmp/q".to_owned()))
        );
    }

    #[test]
    fn list_is_sorted_and_skips_grandchildren() {
        let mut fs = Fs::fresh("/workspace");
        for path in ["/tmp/d/b", "/tmp/d/a", "/tmp/d/c/deep"] {
            fs.write(path, Bytes::new(), true).unwrap();
        }
        let names: Vec<String> = fs
            .list("/tmp/d/")
            .unwrap()
            .into_iter()
            .map(|e| e.path)
            .collect();
        assert_eq!(names, ["/tmp/d/a", "/tmp/d/b", "/tmp/d/c"]);
    }

    #[test]
    fn keep_only_volume_drops_everything_else() {
        let mut fs = Fs::fresh("/workspace");
        fs.write("/workspace/keep", Bytes::from_static(b"k"), true)
            .unwrap();
        fs.write("/workspace-other/lose", Bytes::new(), true)
            .unwrap();
        fs.write("/tmp/lose", Bytes::new(), true).unwrap();
        let kept = fs.keep_only_volume("/workspace");
        assert_eq!(
            kept.read("/workspace/keep").unwrap(),
            Bytes::from_static(b"k")
        );
        assert!(kept.get("/tmp/lose").is_none());
        assert!(kept.get("/workspace-other").is_none());
    }

    #[test]
    fn mkdir_over_a_file_is_not_a_directory() {
        let mut fs = Fs::fresh("/workspace");
        fs.write("/tmp/f", Bytes::new(), true).unwrap();
        assert_eq!(
            fs.mkdir_p("/tmp/f/g"),
            Err(PathError::NotDir("/tmp/f".to_owned()))
        );
    }
}
