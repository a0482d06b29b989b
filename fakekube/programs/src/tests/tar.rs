//! `tar` as BusyBox's, with the commands `kubectl cp` sends (`tar -xmf - -C DIR` in,
//! `tar cf - PATH` out) and the long options scripts use.

use super::*;

#[tokio::test]
async fn tar_xmf_extracts_from_stdin_into_the_directory_given_as_kubectl_cp_sends_it() {
    check(
        "mkdir -p /s/d/e /dst; echo one > /s/d/a; echo two > /s/d/e/b; \
         tar cf - -C /s d | tar -xmf - -C /dst && cat /dst/d/a /dst/d/e/b",
        "one\ntwo\n",
    )
    .await;
    check(
        "mkdir -p /s /dst; echo x > /s/f; tar cf - -C /s f | \
         tar --no-same-permissions --no-same-owner -xmf - -C /dst && cat /dst/f",
        "x\n",
    )
    .await;
}

#[tokio::test]
async fn tar_m_gives_extracted_files_the_time_of_extraction_instead_of_the_archives() {
    let fs = crate::registry().pod_fs(vec![]);
    fs.mkdir_all("/s", 0o755).expect("a directory");
    fs.write("/s/f", b"x\n").expect("a file");
    fs.touch("/s/f", 981_173_106).expect("an old time");
    let r = sh_on(
        &fs,
        "mkdir /a /b; tar cf /t.tar -C /s f; tar xf /t.tar -C /a; tar xmf /t.tar -C /b; \
         stat -c %Y /a/f; [ \"$(stat -c %Y /b/f)\" -gt 981173106 ] && echo later",
    )
    .await;
    assert_eq!(r.stdout, "981173106\nlater\n", "{r:?}");
}

#[tokio::test]
async fn tar_cf_of_an_absolute_path_strips_the_slash_and_says_so_on_stderr() {
    let r = sh("mkdir -p /data; echo hi > /data/f; tar cf - /data/f | tar tf -").await;
    assert_eq!(r.status, ExitStatus::Code(0), "{r:?}");
    assert_eq!(r.stdout, "data/f\n");
    assert_eq!(r.stderr, "tar: removing leading '/' from member names\n");
}

#[tokio::test]
async fn tar_cf_of_a_missing_file_fails_with_busyboxs_delayed_error() {
    let r = sh("tar cf /t.tar /nope; echo $?").await;
    assert_eq!(r.stdout, "1\n");
    assert_eq!(
        r.stderr,
        "tar: /nope: No such file or directory\n\
         tar: error exit delayed from previous errors\n"
    );
}

#[tokio::test]
async fn tar_long_options_strip_components_exclude_and_keep_old_work() {
    check(
        "mkdir -p /s/top/in /d; echo a > /s/top/in/a; echo b > /s/top/b.log; \
         tar -c -f /t.tar -C /s top; tar --extract --file=/t.tar --directory /d \
         --strip-components=1; find /d | sort",
        "/d\n/d/b.log\n/d/in\n/d/in/a\n",
    )
    .await;
    check(
        "mkdir -p /s/top /d; echo a > /s/top/a; echo b > /s/top/b.log; \
         tar cf /t.tar --exclude '*.log' -C /s top; tar tf /t.tar",
        "top/\ntop/a\n",
    )
    .await;
    check(
        "mkdir -p /s /d; echo new > /s/f; echo old > /d/f; tar cf /t.tar -C /s f; \
         tar xkf /t.tar -C /d; cat /d/f",
        "old\n",
    )
    .await;
}

#[tokio::test]
async fn tar_refuses_an_unknown_option_and_a_missing_member() {
    let r = sh("tar -xqf -").await;
    assert_eq!(r.status, ExitStatus::Code(1));
    assert!(
        r.stderr.starts_with("tar: invalid option -- 'q'\n"),
        "{r:?}"
    );
    let r = sh("mkdir /s; echo x > /s/f; tar cf /t.tar -C /s f; tar xf /t.tar -C / g").await;
    assert_eq!(r.status, ExitStatus::Code(1));
    assert_eq!(r.stderr, "tar: g: not found in archive\n");
    let r = sh("tar xf /dev/null -C /missing").await;
    assert_eq!(r.status, ExitStatus::Code(1));
    assert_eq!(
        r.stderr,
        "tar: can't change directory to '/missing': No such file or directory\n"
    );
}
