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

/// Two filesystems made from one image with a `/bin/tool` of 4 bytes, charged to `budget`.
fn two_from_one_image(mounts: Vec<(String, Volume)>, budget: &StorageBudget) -> (PodFs, PodFs) {
    let image = Image::new([("/bin/tool".to_string(), b"tool".to_vec())]);
    (
        PodFs::from_image(&image, mounts.clone(), budget),
        PodFs::from_image(&image, mounts, budget),
    )
}

#[test]
fn a_write_in_one_pod_is_not_seen_in_another_made_from_the_same_image() {
    let (a, b) = two_from_one_image(vec![], &StorageBudget::unlimited());
    assert_eq!(a.write("/bin/tool", b"changed"), Ok(()));
    assert_eq!(a.write("/tmp/new", b"new"), Ok(()));
    assert_eq!(a.append("/etc/hosts", b"10.0.0.1\tdb\n"), Ok(()));
    assert_eq!(a.mkdir_all("/usr/local/lib/x", 0o755), Ok(()));
    assert_eq!(a.remove("/etc/passwd", false, false), Ok(()));
    assert_eq!(a.chmod("/opt", 0o700), Ok(()));
    assert_eq!(a.rename("/etc/group", "/root/group"), Ok(()));

    assert_eq!(a.read("/bin/tool").as_deref(), Ok(&b"changed"[..]));
    assert_eq!(b.read("/bin/tool").as_deref(), Ok(&b"tool"[..]));
    assert_eq!(b.read("/tmp/new"), Err(FsError::NotFound));
    let hosts = b.read("/etc/hosts").unwrap_or_default();
    assert!(!hosts.windows(2).any(|w| w == b"db"), "{hosts:?}");
    assert!(!b.exists("/usr/local/lib"));
    assert!(b.exists("/etc/passwd"));
    assert!(b.exists("/etc/group"));
    assert!(!b.exists("/root/group"));
    assert_eq!(b.metadata("/opt").map(|m| m.mode), Ok(0o755));

    // And the other way round.
    assert_eq!(b.write("/tmp/other", b"b"), Ok(()));
    assert!(!a.exists("/tmp/other"));
}

#[test]
fn a_volume_is_shared_by_pods_made_from_the_same_image() {
    let volume = Volume::new();
    let (a, b) = two_from_one_image(
        vec![("/workspace".into(), volume.clone())],
        &StorageBudget::unlimited(),
    );
    assert_eq!(a.write("/workspace/a.txt", b"from a"), Ok(()));
    assert_eq!(b.read("/workspace/a.txt").as_deref(), Ok(&b"from a"[..]));
    assert_eq!(b.remove("/workspace/a.txt", false, false), Ok(()));
    assert!(!a.exists("/workspace/a.txt"));
    assert_eq!(b.write("/tmp/b.txt", b"root"), Ok(()));
    assert!(!a.exists("/tmp/b.txt"));
}

#[test]
fn ephemeral_bytes_are_the_image_plus_what_that_pod_changed() {
    let budget = StorageBudget::unlimited();
    let (a, b) = two_from_one_image(vec![], &budget);
    let fresh = a.ephemeral_bytes();
    assert_eq!(b.ephemeral_bytes(), fresh);
    assert!(fresh >= 4, "the image's files count: {fresh}");

    assert_eq!(a.write("/tmp/f", &[0u8; 100]), Ok(()));
    assert_eq!(a.ephemeral_bytes(), fresh + 100);
    assert_eq!(b.ephemeral_bytes(), fresh);

    assert_eq!(a.remove("/bin/tool", false, false), Ok(()));
    assert_eq!(a.ephemeral_bytes(), fresh + 96);
    assert_eq!(b.ephemeral_bytes(), fresh);
    assert_eq!(budget.used(), 2 * fresh + 96);
}

#[test]
fn symlinks_resolve_relative_to_their_directory_across_mounts_and_stop_at_a_loop() {
    let fs = PodFs::new(vec![("/data".into(), Volume::new())]);
    fs.mkdir_all("/data/real", 0o755).expect("a directory");
    fs.write("/data/real/f", b"x").expect("a file");
    fs.symlink("../data/real", "/tmp/to-real")
        .expect("a relative link");
    assert_eq!(fs.read("/tmp/to-real/f").as_deref(), Ok(&b"x"[..]));
    assert_eq!(
        fs.resolve("/tmp/to-real/f", true).as_deref(),
        Ok("/data/real/f")
    );
    assert_eq!(fs.resolve("/tmp/to-real/..", true).as_deref(), Ok("/data"));
    assert_eq!(
        fs.resolve("/tmp/to-real", false).as_deref(),
        Ok("/tmp/to-real")
    );
    assert_eq!(
        fs.resolve("/tmp/to-real/", false).as_deref(),
        Ok("/data/real")
    );
    assert_eq!(
        fs.symlink_metadata("/tmp/to-real").map(|m| m.kind),
        Ok(NodeKind::Symlink)
    );
    assert_eq!(fs.read_link("/tmp/to-real").as_deref(), Ok("../data/real"));
    assert_eq!(fs.read_link("/data/real/f"), Err(FsError::InvalidArgument));
    fs.symlink("/loop-b", "/loop-a").expect("a link");
    fs.symlink("/loop-a", "/loop-b").expect("a link");
    assert_eq!(fs.read("/loop-a"), Err(FsError::Loop));
    assert_eq!(fs.symlink("/x", "/loop-a"), Err(FsError::Exists));
    fs.rename("/tmp/to-real", "/tmp/moved")
        .expect("a link moves");
    assert_eq!(fs.read("/tmp/moved/f").as_deref(), Ok(&b"x"[..]));
    fs.remove("/tmp/moved", false, false)
        .expect("the link goes");
    assert_eq!(fs.read("/data/real/f").as_deref(), Ok(&b"x"[..]));
}
