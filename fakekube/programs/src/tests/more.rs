//! The everyday BusyBox applets agent workloads type: `tac rev nl fold paste comm expr cmp
//! strings hexdump xxd nproc sync usleep truncate`, with BusyBox's output and exit codes.

use super::*;

#[tokio::test]
async fn tac_and_rev_reverse_lines_and_characters() {
    check("printf 'a\\nb\\nc\\n' | tac", "c\nb\na\n").await;
    check("printf 'abc\\nxy\\n' | rev", "cba\nyx\n").await;
    let r = sh("tac /nope").await;
    assert_eq!(r.status, ExitStatus::Code(1));
    assert_eq!(
        r.stderr,
        "tac: can't open '/nope': No such file or directory\n"
    );
}

#[tokio::test]
async fn nl_numbers_non_empty_lines_by_default() {
    check(
        "printf 'a\\n\\nb\\n' | nl",
        "     1\ta\n       \n     2\tb\n",
    )
    .await;
    check("printf 'a\\n\\n' | nl -ba -w2 -s:", " 1:a\n 2:\n").await;
}

#[tokio::test]
async fn fold_breaks_lines_at_the_width_and_at_blanks_with_s() {
    check("echo abcdefgh | fold -w 3", "abc\ndef\ngh\n").await;
    check("echo 'aa bb cc' | fold -s -w 5", "aa \nbb cc\n").await;
}

#[tokio::test]
async fn paste_joins_files_side_by_side_or_serially() {
    check(
        "printf '1\\n2\\n' > /a; printf 'x\\ny\\nz\\n' > /b; paste /a /b; paste -s -d, /b",
        "1\tx\n2\ty\n\tz\nx,y,z\n",
    )
    .await;
}

#[tokio::test]
async fn comm_prints_three_columns_of_sorted_inputs() {
    check(
        "printf 'a\\nb\\nd\\n' > /1; printf 'b\\nc\\nd\\n' > /2; comm /1 /2; comm -12 /1 /2",
        "a\n\t\tb\n\tc\n\t\td\nb\nd\n",
    )
    .await;
}

#[tokio::test]
async fn expr_computes_compares_and_matches_with_its_exit_codes() {
    check("expr 2 + 3 \\* 4", "14\n").await;
    check("expr 7 / 2; expr 7 % 2", "3\n1\n").await;
    check(
        "expr abcdef : 'abc'; expr abc123 : '[a-z]*\\([0-9]*\\)'",
        "3\n123\n",
    )
    .await;
    check(
        "expr length hello; expr substr hello 2 3; expr index hello l",
        "5\nell\n3\n",
    )
    .await;
    check("expr 10 \\> 9; expr a \\< b", "1\n1\n").await;
    let r = sh("expr 1 - 1").await;
    assert_eq!((r.status, r.stdout.as_str()), (ExitStatus::Code(1), "0\n"));
    let r = sh("expr 1 / 0").await;
    assert_eq!(
        (r.status, r.stderr.as_str()),
        (ExitStatus::Code(2), "expr: division by zero\n")
    );
    let r = sh("expr a + 1").await;
    assert_eq!(
        (r.status, r.stderr.as_str()),
        (ExitStatus::Code(2), "expr: non-numeric argument\n")
    );
    let r = sh("expr 1 +").await;
    assert_eq!(
        (r.status, r.stderr.as_str()),
        (ExitStatus::Code(2), "expr: syntax error\n")
    );
}

#[tokio::test]
async fn cmp_reports_the_first_difference_or_eof_with_exit_1() {
    let r = sh("printf 'ab\\ncd\\n' > /x; printf 'ab\\ncX\\n' > /y; cmp /x /y").await;
    assert_eq!(
        (r.status, r.stdout.as_str()),
        (ExitStatus::Code(1), "/x /y differ: char 5, line 2\n")
    );
    let r = sh("printf 'ab' > /x; printf 'abc' > /y; cmp /x /y").await;
    assert_eq!(
        (r.status, r.stderr.as_str()),
        (ExitStatus::Code(1), "cmp: EOF on /x\n")
    );
    check(
        "echo same > /x; cp /x /y; cmp /x /y && echo equal",
        "equal\n",
    )
    .await;
    let r = sh("printf a > /x; printf b > /y; cmp -s /x /y").await;
    assert_eq!((r.status, r.stdout.as_str()), (ExitStatus::Code(1), ""));
    let r = sh("cmp /nope /x").await;
    assert_eq!(r.status, ExitStatus::Code(2));
}

#[tokio::test]
async fn strings_hexdump_and_xxd_show_bytes() {
    check("printf 'ab\\001hello\\002wor\\n' | strings", "hello\n").await;
    check(
        "printf 'hello\\n' | hexdump -C",
        "00000000  68 65 6c 6c 6f 0a                                 |hello.|\n00000006\n",
    )
    .await;
    check(
        "printf 'hello\\n' | xxd",
        "00000000: 6865 6c6c 6f0a                           hello.\n",
    )
    .await;
    check("printf 'hi' | xxd -p", "6869\n").await;
}

#[tokio::test]
async fn nproc_sync_usleep_and_truncate_work() {
    check(
        "nproc; sync && echo synced; usleep 1 && echo slept",
        "1\nsynced\nslept\n",
    )
    .await;
    check(
        "printf 123456 > /f; truncate -s 3 /f; cat /f; echo; truncate -s +2 /f; wc -c < /f; \
         truncate -s 1K /new; wc -c < /new; truncate -c -s 5 /absent; ls /absent 2>/dev/null || echo none",
        "123\n5\n1024\nnone\n",
    )
    .await;
}

#[tokio::test]
async fn md5sum_and_sha1sum_print_and_check_digests_as_sha256sum_does() {
    check(
        "printf abc | md5sum",
        "900150983cd24fb0d6963f7d28e17f72  -\n",
    )
    .await;
    check(
        "printf abc | sha1sum",
        "a9993e364706816aba3e25717850c26c9cd0d89d  -\n",
    )
    .await;
    check(
        "echo hi > /f; md5sum /f > /sums; md5sum -c /sums",
        "/f: OK\n",
    )
    .await;
    let r = sh("echo hi > /f; md5sum /f > /sums; echo changed > /f; md5sum -c /sums").await;
    assert_eq!(r.status, ExitStatus::Code(1));
    assert_eq!(r.stdout, "/f: FAILED\n");
    assert_eq!(
        r.stderr,
        "md5sum: WARNING: 1 of 1 computed checksums did NOT match\n"
    );
}

#[tokio::test]
async fn diff_prints_unified_hunks_as_busybox_and_exits_1_when_files_differ() {
    let r =
        sh("printf 'a\\nb\\nc\\nd\\n' > /1; printf 'a\\nB\\nc\\nd\\ne\\n' > /2; diff /1 /2").await;
    assert_eq!(r.status, ExitStatus::Code(1));
    assert_eq!(
        r.stdout,
        "--- /1\n+++ /2\n@@ -1,4 +1,5 @@\n a\n-b\n+B\n c\n d\n+e\n"
    );
    check(
        "echo same > /1; cp /1 /2; diff /1 /2 && echo none",
        "none\n",
    )
    .await;
    let r = sh("echo a > /1; echo b > /2; diff -q /1 /2").await;
    assert_eq!(
        (r.status, r.stdout.as_str()),
        (ExitStatus::Code(1), "Files /1 and /2 differ\n")
    );
    check(
        "echo 'A  b' > /1; echo 'a b' > /2; diff -i -b /1 /2 && echo alike",
        "alike\n",
    )
    .await;
    let r = sh("diff /nope /1").await;
    assert_eq!(
        (r.status, r.stderr.as_str()),
        (
            ExitStatus::Code(2),
            "diff: can't stat '/nope': No such file or directory\n"
        )
    );
}

#[tokio::test]
async fn diff_separates_distant_changes_into_hunks_and_marks_a_missing_newline() {
    let r = sh("seq 1 20 > /1; seq 1 20 | sed 's/^2$/two/; s/^19$/nineteen/' > /2; diff -U1 /1 /2")
        .await;
    assert_eq!(
        r.stdout,
        "--- /1\n+++ /2\n@@ -1,3 +1,3 @@\n 1\n-2\n+two\n 3\n@@ -18,3 +18,3 @@\n 18\n-19\n+nineteen\n 20\n"
    );
    let r = sh("printf 'x\\n' > /1; printf 'x' > /2; diff /1 /2").await;
    assert_eq!(
        r.stdout,
        "--- /1\n+++ /2\n@@ -1 +1 @@\n-x\n+x\n\\ No newline at end of file\n"
    );
}

#[tokio::test]
async fn install_copies_with_a_mode_and_makes_directories() {
    check(
        "echo x > /s; install -m 644 /s /d1; stat -c %a /d1; install -D /s /a/b/c; stat -c %a /a/b/c; \
         install -d -m 700 /p/q; stat -c %a /p/q; mkdir /t; install /s /t; cat /t/s",
        "644\n755\n700\nx\n",
    )
    .await;
    let r = sh("install /nope /x").await;
    assert_eq!(
        (r.status, r.stderr.as_str()),
        (
            ExitStatus::Code(1),
            "install: can't stat '/nope': No such file or directory\n"
        )
    );
}

#[tokio::test]
async fn split_cuts_input_into_suffixed_pieces_by_lines_or_bytes() {
    check(
        "mkdir /w; cd /w; seq 1 5 | split -l 2; ls; cat xab; printf abcdefg | split -b 3 - part.; cat part.ac",
        "xaa\nxab\nxac\n3\n4\ng",
    )
    .await;
}

#[tokio::test]
async fn programs_that_cannot_exist_hermetically_are_missing_with_127() {
    for prog in ["ping", "ssh", "mount", "curl", "apk"] {
        let r = sh(&format!("{prog} x")).await;
        assert_eq!(r.status, ExitStatus::Code(127), "{prog}: {r:?}");
        assert_eq!(r.stderr, format!("sh: {prog}: not found\n"));
    }
}

#[tokio::test]
async fn watch_clears_the_screen_titles_and_runs_the_command_until_killed() {
    let r = sh("timeout 0.35 watch -n 0.1 echo hi; echo $?").await;
    let first = r.stdout.split("\x1b[H\x1b[J").nth(1).unwrap_or_default();
    let (title, rest) = first.split_once("\n\n").unwrap_or_default();
    assert!(title.starts_with("Every 0.1s: echo hi "), "{r:?}");
    assert_eq!(title.chars().count(), 79, "{title:?}");
    assert_eq!(rest, "hi\n");
    assert!(r.stdout.ends_with("124\n"), "{r:?}");
    check(
        "timeout 0.15 watch -t echo x | head -c 8 | od -An -c",
        " 033   [   H 033   [   J   x  \\n\n",
    )
    .await;
}
