//! Tests of the filesystem through [`PodFs`].

use super::path::MAX_DEPTH;
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
    let fs = PodFs::with_executables(
        [tool, hidden],
        vec![("/opt".into(), Volume::new())],
        &StorageBudget::unlimited(),
    );
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
