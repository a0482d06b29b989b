//! The devices of `/dev`: `null`, `zero`, `random`, `urandom`, `full`, and `stdin`, `stdout`,
//! `stderr` and `fd/N`, which are the opening process's own streams.

use super::*;

#[tokio::test]
async fn dev_stderr_and_dev_stdout_are_the_writers_own_streams() {
    let r = sh("echo to-err > /dev/stderr; echo to-out > /dev/stdout; echo fd2 > /dev/fd/2").await;
    assert_eq!(r.status, ExitStatus::Code(0));
    assert_eq!(r.stdout, "to-out\n");
    assert_eq!(r.stderr, "to-err\nfd2\n");
    check("{ echo swapped > /dev/stderr; } 2>&1", "swapped\n").await;
}

#[tokio::test]
async fn dev_stdin_and_dev_fd_0_read_the_readers_own_stdin() {
    check("echo piped | cat /dev/stdin", "piped\n").await;
    check("echo piped | cat /dev/fd/0", "piped\n").await;
    check("cat < /dev/stdin <<EOF\nheredoc\nEOF", "heredoc\n").await;
    check("echo x | awk '{ print }' /dev/stdin", "x\n").await;
}

#[tokio::test]
async fn dev_urandom_and_dev_random_give_bytes_that_differ_between_reads() {
    check("head -c 16 /dev/urandom | wc -c", "16\n").await;
    check(
        "dd if=/dev/random bs=100 count=3 status=none | wc -c",
        "300\n",
    )
    .await;
    check(
        "a=$(head -c 12 /dev/urandom | base64); b=$(head -c 12 /dev/urandom | base64); \
         [ \"$a\" != \"$b\" ] && echo differ",
        "differ\n",
    )
    .await;
}

#[tokio::test]
async fn dev_full_reads_zeros_and_refuses_writes_with_enospc() {
    check("head -c 4 /dev/full | od -An -tx1", " 00 00 00 00\n").await;
    let r = sh("dd if=/dev/zero of=/dev/full bs=1 count=1").await;
    assert_eq!(r.status, ExitStatus::Code(1));
    assert!(
        r.stderr
            .starts_with("dd: error writing '/dev/full': No space left on device\n"),
        "{r:?}"
    );
}

#[tokio::test]
async fn dev_lists_its_devices_and_the_standard_streams_are_links_into_dev_fd() {
    check(
        "ls /dev; readlink /dev/stdin; readlink /dev/stderr; ls /dev/fd",
        "fd\nfull\nnull\nrandom\nstderr\nstdin\nstdout\nurandom\nzero\n/dev/fd/0\n/dev/fd/2\n0\n1\n2\n",
    )
    .await;
    check(
        "[ -c /dev/urandom ] && [ -h /dev/stdout ] && echo ok",
        "ok\n",
    )
    .await;
}
