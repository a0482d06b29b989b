//! `kubectl cp` both ways with kubectl 1.27, 1.30 and 1.33 against a fakekube started in
//! process: a file and a directory (with a nested directory) copied into a running pod, read
//! back there with `kubectl exec`, and copied out again, contents compared byte for byte.
//!
//! Copying in, kubectl runs `tar -xmf - -C DIR` in the container (after `test -d DEST` to
//! learn whether the destination is a directory); copying out, `tar cf - PATH`. Each version
//! gets its own fakekube and pod. A kubectl binary that is not installed makes its test print
//! `skipping: <path> not installed` and pass.

mod support;

use std::path::Path;

use support::kubectl::{Kubectl, installed};

/// The files of the directory copied in: relative path and content.
const TREE: &[(&str, &str)] = &[
    ("a.txt", "alpha\n"),
    ("sub/b.txt", "beta\nwith two lines\n"),
    ("sub/deeper/c.bin", "\u{1}\u{2}binary-ish\u{0}end"),
];

/// The single file copied in.
const FILE: &str = "hello from the host\n";

/// Writes the host side: `file.txt` and `tree/` under `root`.
fn write_host_side(root: &Path) {
    std::fs::write(root.join("file.txt"), FILE).expect("the file is written");
    for (rel, content) in TREE {
        let path = root.join("tree").join(rel);
        std::fs::create_dir_all(path.parent().expect("a parent")).expect("dirs are made");
        std::fs::write(path, content).expect("a tree file is written");
    }
}

/// Asserts that `dir` holds exactly [`TREE`].
#[track_caller]
fn assert_tree(dir: &Path) {
    for (rel, content) in TREE {
        let got = std::fs::read(dir.join(rel))
            .unwrap_or_else(|e| panic!("{} was copied out: {e}", dir.join(rel).display()));
        assert_eq!(got, content.as_bytes(), "{rel} has the content copied in");
    }
}

/// Starts fakekube, runs a pod, and copies both ways with `kubectl.1.<minor>`.
async fn copy_both_ways(minor: u32) {
    let Some(bin) = installed(minor) else {
        return;
    };
    let kube = fakekube::FakeKube::builder()
        .start()
        .await
        .expect("fakekube starts");
    let dir = tempfile::tempdir().expect("a scratch directory");
    let kubeconfig = dir.path().join("kubeconfig");
    std::fs::write(&kubeconfig, kube.kubeconfig()).expect("the kubeconfig is written");
    let host = dir.path().join("host");
    std::fs::create_dir_all(&host).expect("the host directory");
    write_host_side(&host);
    let k = Kubectl { bin, kubeconfig };
    let root = host.clone();
    tokio::task::spawn_blocking(move || scenario(&k, &root))
        .await
        .expect("the scenario ran");
    kube.shutdown().await;
}

/// What one kubectl does against a cluster with no pod yet.
fn scenario(k: &Kubectl, host: &Path) {
    let p = |rel: &str| host.join(rel).to_string_lossy().into_owned();
    k.run(&[
        "run",
        "box",
        "--image=busybox:stable",
        "--restart=Never",
        "--command",
        "--",
        "sleep",
        "3600",
    ])
    .success();
    k.run(&["wait", "--for=condition=Ready", "pod/box", "--timeout=50s"])
        .success();
    k.run(&["exec", "box", "--", "mkdir", "-p", "/data"])
        .success();

    // In: a file to a new name, a directory to a new name.
    k.run(&["cp", &p("file.txt"), "box:/data/file.txt"])
        .success();
    k.run(&["cp", &p("tree"), "box:/data/tree"]).success();
    k.run(&["exec", "box", "--", "cat", "/data/file.txt"])
        .success()
        .stdout_is(FILE);
    for (rel, content) in TREE {
        k.run(&["exec", "box", "--", "cat", &format!("/data/tree/{rel}")])
            .success()
            .stdout_is(content);
    }
    // A file into an existing directory keeps its name.
    k.run(&["cp", &p("file.txt"), "box:/data/tree"]).success();
    k.run(&["exec", "box", "--", "cat", "/data/tree/file.txt"])
        .success()
        .stdout_is(FILE);

    // Out: the file, then the directory (relative to the container's working directory too).
    k.run(&["cp", "box:/data/file.txt", &p("out.txt")])
        .success();
    assert_eq!(
        std::fs::read_to_string(host.join("out.txt")).expect("the file was copied out"),
        FILE
    );
    k.run(&["cp", "box:/data/tree", &p("out-tree")]).success();
    assert_tree(&host.join("out-tree"));
    assert_eq!(
        std::fs::read_to_string(host.join("out-tree/file.txt")).expect("the added file"),
        FILE
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_1_27_copies_a_file_and_a_directory_into_a_pod_and_back_out() {
    copy_both_ways(27).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_1_30_copies_a_file_and_a_directory_into_a_pod_and_back_out() {
    copy_both_ways(30).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_1_33_copies_a_file_and_a_directory_into_a_pod_and_back_out() {
    copy_both_ways(33).await;
}
