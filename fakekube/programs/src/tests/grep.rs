//! `grep`, `egrep` and `fgrep` as BusyBox's: what they select and print, and their exit codes
//! (0 selected, 1 none, 2 error).

use super::*;

/// Input most tests search.
const FRUIT: &str = "printf 'apple\\nBanana\\ncherry pie\\napple pie\\n' > /f; ";

#[tokio::test]
async fn grep_selects_matching_lines_and_exits_0_or_1_when_nothing_matches() {
    check(&format!("{FRUIT}grep pie /f"), "cherry pie\napple pie\n").await;
    let r = sh(&format!("{FRUIT}grep kiwi /f")).await;
    assert_eq!((r.status, r.stdout.as_str()), (ExitStatus::Code(1), ""));
}

#[tokio::test]
async fn grep_exits_2_with_busyboxs_message_for_a_missing_file_and_s_silences_it() {
    let r = sh(&format!("{FRUIT}grep apple /f /nope")).await;
    assert_eq!(r.status, ExitStatus::Code(2));
    assert_eq!(r.stdout, "/f:apple\n/f:apple pie\n");
    assert_eq!(r.stderr, "grep: /nope: No such file or directory\n");
    let r = sh("grep -s x /nope").await;
    assert_eq!((r.status, r.stderr.as_str()), (ExitStatus::Code(2), ""));
}

#[tokio::test]
async fn grep_q_exits_0_at_the_first_match_even_after_an_error() {
    let r = sh(&format!("{FRUIT}grep -q apple /nope /f")).await;
    assert_eq!((r.status, r.stdout.as_str()), (ExitStatus::Code(0), ""));
    let r = sh(&format!("{FRUIT}grep -q kiwi /f")).await;
    assert_eq!(r.status, ExitStatus::Code(1));
}

#[tokio::test]
async fn grep_i_v_c_n_and_x_select_and_count_as_asked() {
    check(&format!("{FRUIT}grep -i banana /f"), "Banana\n").await;
    check(&format!("{FRUIT}grep -v pie /f"), "apple\nBanana\n").await;
    check(&format!("{FRUIT}grep -c pie /f"), "2\n").await;
    check(
        &format!("{FRUIT}grep -n pie /f"),
        "3:cherry pie\n4:apple pie\n",
    )
    .await;
    check(&format!("{FRUIT}grep -x apple /f"), "apple\n").await;
    check(&format!("{FRUIT}grep -vc pie /f"), "2\n").await;
}

#[tokio::test]
async fn grep_w_matches_whole_words_only() {
    check(
        "printf 'pineapple\\napple tree\\n' | grep -w apple",
        "apple tree\n",
    )
    .await;
    check("echo 'foo_bar foo' | grep -wo foo", "foo\n").await;
}

#[tokio::test]
async fn grep_o_prints_each_match_on_its_own_line() {
    check("echo 'a1b22c333' | grep -oE '[0-9]+'", "1\n22\n333\n").await;
}

#[tokio::test]
async fn grep_reads_basic_regexes_by_default_and_extended_ones_with_e() {
    check("printf 'ab\\na+b\\naab\\n' | grep 'a+b'", "a+b\n").await;
    check("printf 'ab\\na+b\\naab\\n' | grep -E 'a+b'", "ab\naab\n").await;
    check("printf 'ab\\na+b\\naab\\n' | grep 'a\\+b'", "ab\naab\n").await;
    check("printf 'x\\ny\\nz\\n' | egrep 'x|z'", "x\nz\n").await;
    check("printf 'x\\ny\\nz\\n' | grep '^[xy]$'", "x\ny\n").await;
    check("printf 'a.c\\nabc\\n' | grep -F a.c", "a.c\n").await;
    check("printf 'a.c\\nabc\\n' | fgrep a.c", "a.c\n").await;
}

#[tokio::test]
async fn grep_e_and_f_give_several_patterns() {
    check(
        &format!("{FRUIT}grep -e apple -e Banana /f"),
        "apple\nBanana\napple pie\n",
    )
    .await;
    check(
        &format!("{FRUIT}printf 'cherry\\nBan\\n' > /p; grep -f /p /f"),
        "Banana\ncherry pie\n",
    )
    .await;
    check("echo '-x-' | grep -e -x-", "-x-\n").await;
}

#[tokio::test]
async fn grep_l_h_and_h_name_files_as_asked() {
    let setup = "echo hit > /a; echo miss > /b; echo hit > /c; ";
    check(&format!("{setup}grep -l hit /a /b /c"), "/a\n/c\n").await;
    check(&format!("{setup}grep -L hit /a /b /c"), "/b\n").await;
    check(&format!("{setup}grep -h hit /a /c"), "hit\nhit\n").await;
    check(&format!("{setup}grep -H hit /a"), "/a:hit\n").await;
    check(&format!("{setup}grep -c hit /a /b"), "/a:1\n/b:0\n").await;
    check("echo hit | grep -H hit", "(standard input):hit\n").await;
}

#[tokio::test]
async fn grep_r_searches_a_tree_in_name_order_with_file_names() {
    check(
        "mkdir -p /t/sub; echo 'key=1' > /t/b; echo 'key=2' > /t/sub/a; echo no > /t/c; \
         grep -r key /t",
        "/t/b:key=1\n/t/sub/a:key=2\n",
    )
    .await;
    check(
        "mkdir -p /t; echo key > /t/x; cd /t && grep -rn key",
        "./x:1:key\n",
    )
    .await;
}

#[tokio::test]
async fn grep_context_options_print_neighbours_and_separators() {
    check("seq 1 9 | grep -A1 -e 2 -e 7", "2\n3\n--\n7\n8\n").await;
    check("seq 1 5 | grep -B2 4", "2\n3\n4\n").await;
    check("seq 1 5 | grep -C1 3", "2\n3\n4\n").await;
    check("seq 1 9 | grep -m2 '[0-9]'", "1\n2\n").await;
}

#[tokio::test]
async fn grep_refuses_bad_options_and_patterns_with_exit_2() {
    let r = sh("echo x | grep -Z x").await;
    assert_eq!(r.status, ExitStatus::Code(2));
    assert_eq!(r.stderr, "grep: invalid option -- 'Z'\n");
    let r = sh("echo x | grep -E 'a('").await;
    assert_eq!(r.status, ExitStatus::Code(2));
    assert_eq!(r.stderr, "grep: bad regex 'a('\n");
    let r = sh("grep").await;
    assert_eq!(r.status, ExitStatus::Code(2));
    assert!(r.stderr.contains("Usage: grep"), "{r:?}");
}

#[tokio::test]
async fn grep_with_an_empty_pattern_selects_every_line() {
    check("printf 'a\\n\\nb\\n' | grep ''", "a\n\nb\n").await;
    check("printf 'a\\n\\nb\\n' | grep -c ''", "3\n").await;
}
