//! Symbolic links in the filesystem, and the programs about them and about finding paths:
//! `ln`, `readlink`, `realpath`, `which`, `mktemp`, with BusyBox's output and exit codes.

use super::*;

#[tokio::test]
async fn ln_s_makes_a_link_that_cat_ls_stat_and_readlink_see_through_or_as_a_link() {
    check(
        "echo hi > /f; ln -s /f /l; cat /l; readlink /l; ls -l /l | sed 's/.* \\/l/\\/l/'; \
         stat -c '%F %N' /l; stat -L -c %F /l",
        "hi\n/f\n/l -> /f\nsymbolic link '/l' -> '/f'\nregular file\n",
    )
    .await;
}

#[tokio::test]
async fn a_relative_link_resolves_from_its_own_directory_and_dotdot_goes_up_from_the_target() {
    check(
        "mkdir -p /a/b /c; echo deep > /a/b/f; ln -s ../a/b /c/to-b; cat /c/to-b/f; \
         ls /c/to-b/..; realpath /c/to-b/../b/f",
        "deep\nb\n/a/b/f\n",
    )
    .await;
}

#[tokio::test]
async fn writing_through_a_link_changes_the_target_and_rm_removes_only_the_link() {
    check(
        "echo old > /t; ln -s /t /l; echo new > /l; cat /t; rm /l; cat /t; ls /l 2>&1; echo $?",
        "new\nnew\nls: cannot access '/l': No such file or directory\n2\n",
    )
    .await;
}

#[tokio::test]
async fn a_dangling_link_exists_to_test_h_but_not_to_test_e() {
    check(
        "ln -s /nowhere /d; [ -h /d ] && echo link; [ -L /d ] && echo L; [ -e /d ] || echo gone; \
         cat /d 2>&1; readlink /d",
        "link\nL\ngone\ncat: /d: No such file or directory\n/nowhere\n",
    )
    .await;
}

#[tokio::test]
async fn a_link_loop_is_too_many_levels_of_symbolic_links() {
    let r = sh("ln -s /b /a; ln -s /a /b; cat /a").await;
    assert_eq!(r.status, ExitStatus::Code(1));
    assert_eq!(r.stderr, "cat: /a: Too many levels of symbolic links\n");
}

#[tokio::test]
async fn ln_refuses_an_existing_name_unless_f_and_puts_links_into_a_directory() {
    let r = sh("echo a > /a; echo b > /b; ln -s /a /b").await;
    assert_eq!(r.status, ExitStatus::Code(1));
    assert_eq!(r.stderr, "ln: /b: File exists\n");
    check(
        "echo a > /a; echo b > /b; ln -sf /a /b; cat /b; mkdir /d; ln -s /a /d; readlink /d/a",
        "a\n/a\n",
    )
    .await;
    check(
        "mkdir /d /e; ln -s /d /l; ln -sfn /e /l; readlink /l",
        "/e\n",
    )
    .await;
    check("echo x > /a; ln -sv /a /b", "'/b' -> '/a'\n").await;
}

#[tokio::test]
async fn ln_without_s_makes_a_copy_with_the_same_content_and_fails_on_a_missing_source() {
    check("echo x > /a; ln /a /b; cat /b", "x\n").await;
    let r = sh("ln /nope /b").await;
    assert_eq!(r.status, ExitStatus::Code(1));
    assert_eq!(r.stderr, "ln: /nope: No such file or directory\n");
}

#[tokio::test]
async fn readlink_fails_silently_on_a_non_link_and_f_canonicalizes() {
    let r = sh("echo x > /f; readlink /f").await;
    assert_eq!(
        (r.status, r.stdout.as_str(), r.stderr.as_str()),
        (ExitStatus::Code(1), "", "")
    );
    check(
        "mkdir -p /x/y; ln -s /x/y /z; readlink -f /z/../y/new; readlink -f /z",
        "/x/y/new\n/x/y\n",
    )
    .await;
    let r = sh("readlink -f /no/such/dir").await;
    assert_eq!((r.status, r.stdout.as_str()), (ExitStatus::Code(1), ""));
}

#[tokio::test]
async fn realpath_prints_canonical_paths_and_names_a_missing_one() {
    check(
        "mkdir -p /a/b; cd /a && realpath b ./b/../b",
        "/a/b\n/a/b\n",
    )
    .await;
    let r = sh("realpath /no/such").await;
    assert_eq!(r.status, ExitStatus::Code(1));
    assert_eq!(r.stderr, "realpath: /no/such: No such file or directory\n");
}

#[tokio::test]
async fn find_type_l_lists_links_and_tar_keeps_them() {
    check(
        "mkdir /s; echo x > /s/f; ln -s f /s/l; find /s -type l; \
         mkdir /d; tar cf - -C /s . | tar xf - -C /d; readlink /d/l; cat /d/l",
        "/s/l\nf\nx\n",
    )
    .await;
}

#[tokio::test]
async fn which_prints_the_first_executable_on_path_and_exits_1_for_a_missing_one() {
    check("which sh", "/bin/sh\n").await;
    check("which ls cat", "/bin/ls\n/bin/cat\n").await;
    check(
        "mkdir -p /opt/b; printf '#!/bin/sh\\n' > /opt/b/ls; chmod +x /opt/b/ls; \
         PATH=/opt/b:/bin which -a ls",
        "/opt/b/ls\n/bin/ls\n",
    )
    .await;
    let r = sh("which nope sh").await;
    assert_eq!(
        (r.status, r.stdout.as_str(), r.stderr.as_str()),
        (ExitStatus::Code(1), "/bin/sh\n", "")
    );
}

#[tokio::test]
async fn mktemp_makes_a_private_file_or_directory_from_the_template() {
    check(
        "f=$(mktemp); case $f in /tmp/tmp.??????) echo named;; esac; stat -c %a \"$f\"; \
         d=$(mktemp -d -p /var); case $d in /var/tmp.??????) echo dir;; esac; stat -c %a \"$d\"; \
         t=$(mktemp /x.XXXXXX); [ -f \"$t\" ] && echo file; \
         TMPDIR=/run mktemp -t job.XXXXXX | grep -c '^/run/job\\.'",
        "named\n600\ndir\n700\nfile\n1\n",
    )
    .await;
    check(
        "a=$(mktemp); b=$(mktemp); [ \"$a\" != \"$b\" ] && echo differ",
        "differ\n",
    )
    .await;
}

#[tokio::test]
async fn mktemp_refuses_a_template_without_six_xs() {
    let r = sh("mktemp /tmp/fooXX").await;
    assert_eq!(r.status, ExitStatus::Code(1));
    assert_eq!(r.stderr, "mktemp: Invalid argument\n");
    let r = sh("mktemp -q /tmp/fooXX").await;
    assert_eq!((r.status, r.stderr.as_str()), (ExitStatus::Code(1), ""));
}
