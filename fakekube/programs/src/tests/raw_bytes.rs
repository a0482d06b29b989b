//! `dd` and `od`, the programs that copy and show raw bytes, with BusyBox's output.

use super::*;

/// The first two lines of dd's report and the start of the third.
fn report_starts(stderr: &str, records: &str, bytes: &str) -> bool {
    stderr.starts_with(&format!("{records}{bytes} copied, ")) && stderr.ends_with("B/s\n")
}

#[tokio::test]
async fn dd_copies_counted_blocks_and_reports_records_and_bytes_on_stderr() {
    let r = sh("dd if=/dev/zero of=/z bs=1k count=3; wc -c < /z").await;
    assert_eq!(r.status, ExitStatus::Code(0), "{r:?}");
    assert_eq!(r.stdout, "3072\n");
    assert!(
        report_starts(
            &r.stderr,
            "3+0 records in\n3+0 records out\n",
            "3072 bytes (3.0KB)"
        ),
        "{r:?}"
    );
}

#[tokio::test]
async fn dd_counts_a_short_last_block_as_a_partial_record() {
    let r = sh("printf 'hello world' | dd bs=4 2>/tmp/err; echo; head -2 /tmp/err").await;
    assert_eq!(r.stdout, "hello world\n2+1 records in\n2+1 records out\n");
}

#[tokio::test]
async fn dd_skip_seek_and_conv_notrunc_place_bytes_inside_a_file() {
    check(
        "printf 0123456789 > /f; dd if=/f bs=1 skip=2 count=3 status=none",
        "234",
    )
    .await;
    check(
        "printf 0123456789 > /f; printf AB | dd of=/f bs=1 seek=4 conv=notrunc status=none; cat /f",
        "0123AB6789",
    )
    .await;
    check(
        "printf 0123456789 > /f; printf AB | dd of=/f bs=1 seek=4 status=none; cat /f",
        "0123AB",
    )
    .await;
    check(
        "printf xy | dd of=/g bs=2 seek=2 status=none; od -c /g",
        "0000000  \\0  \\0  \\0  \\0   x   y\n0000006\n",
    )
    .await;
}

#[tokio::test]
async fn dd_status_noxfer_leaves_the_third_line_out() {
    let r = sh("echo hi | dd status=noxfer of=/dev/null").await;
    assert_eq!(r.stderr, "0+1 records in\n0+1 records out\n");
}

#[tokio::test]
async fn dd_refuses_bad_numbers_operands_and_missing_files() {
    let r = sh("dd bs=12q").await;
    assert_eq!(
        (r.status, r.stderr.as_str()),
        (ExitStatus::Code(1), "dd: invalid number '12q'\n")
    );
    let r = sh("dd conv=bogus").await;
    assert_eq!(
        (r.status, r.stderr.as_str()),
        (
            ExitStatus::Code(1),
            "dd: invalid argument 'bogus' to 'conv'\n"
        )
    );
    let r = sh("dd if=/nope").await;
    assert_eq!(
        (r.status, r.stderr.as_str()),
        (
            ExitStatus::Code(1),
            "dd: can't open '/nope': No such file or directory\n"
        )
    );
    let r = sh("dd foo").await;
    assert_eq!(r.status, ExitStatus::Code(1));
    assert!(r.stderr.contains("Usage: dd"), "{r:?}");
}

#[tokio::test]
async fn od_prints_octal_words_by_default_with_octal_addresses() {
    check(
        "printf 'hello\\n' | od",
        "0000000 062550 066154 005157\n0000006\n",
    )
    .await;
}

#[tokio::test]
async fn od_c_shows_characters_and_escapes() {
    check(
        "printf 'hi\\t\\001\\n' | od -c",
        "0000000   h   i  \\t 001  \\n\n0000005\n",
    )
    .await;
}

#[tokio::test]
async fn od_t_x1_with_a_n_prints_hex_bytes_without_addresses() {
    check("printf 'AB\\n' | od -An -tx1", " 41 42 0a\n").await;
    check(
        "printf 'AB\\n' | od -A x -t x1",
        "000000 41 42 0a\n000003\n",
    )
    .await;
    check("printf 'AB' | od -x", "0000000 4241\n0000002\n").await;
    check("printf 'A' | od -t o1 -A d", "0000000 101\n0000001\n").await;
}

#[tokio::test]
async fn od_collapses_repeated_lines_into_a_star_unless_v() {
    check(
        "dd if=/dev/zero bs=48 count=1 status=none | od -t x1",
        "0000000 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00\n*\n0000060\n",
    )
    .await;
    let r = sh("dd if=/dev/zero bs=32 count=1 status=none | od -v -t x1 | wc -l").await;
    assert_eq!(r.stdout, "3\n");
}

#[tokio::test]
async fn od_j_and_n_pick_a_window_and_bad_types_are_refused() {
    check("printf abcdef | od -An -c -j 2 -N 3", "   c   d   e\n").await;
    let r = sh("echo x | od -t q").await;
    assert_eq!(r.status, ExitStatus::Code(1));
    assert_eq!(r.stderr, "od: invalid character 'q' in type string 'q'\n");
}
