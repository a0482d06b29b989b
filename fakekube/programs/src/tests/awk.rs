//! `awk` end to end through `sh -c`, with BusyBox's output, errors and exit codes.

use super::*;

#[tokio::test]
async fn awk_prints_fields_with_nf_nr_and_the_default_separators() {
    check(
        "printf 'a b  c\\n d e\\n' | awk '{ print NR, NF, $1, $NF }'",
        "1 3 a c\n2 2 d e\n",
    )
    .await;
    check("echo 'x y z' | awk '{ print $(NF-1) }'", "y\n").await;
}

#[tokio::test]
async fn awk_f_and_fs_ofs_ors_change_how_records_split_and_print() {
    check("echo 'a:b:c' | awk -F: '{ print $2 }'", "b\n").await;
    check(
        "echo 'a:b:c' | awk 'BEGIN { FS = \":\"; OFS = \"-\"; ORS = \"|\" } { $1 = $1; print }'",
        "a-b-c|",
    )
    .await;
    check("printf 'a\\tb c\\n' | awk -F'\\t' '{ print $2 }'", "b c\n").await;
    check("echo 'a1b22c' | awk -F'[0-9]+' '{ print $3 }'", "c\n").await;
    check(
        "printf 'a;b;c' | awk 'BEGIN { RS = \";\" } { print NR \": \" $0 }'",
        "1: a\n2: b\n3: c\n",
    )
    .await;
}

#[tokio::test]
async fn awk_begin_end_and_patterns_select_records() {
    check(
        "seq 1 10 | awk 'BEGIN { s = 0 } $1 % 2 == 0 { s += $1 } END { print \"sum\", s }'",
        "sum 30\n",
    )
    .await;
    check(
        "printf 'apple\\nberry\\napricot\\n' | awk '/^ap/'",
        "apple\napricot\n",
    )
    .await;
    check(
        "printf 'apple\\nberry\\n' | awk '!/^ap/ { print \"no:\" $0 }'",
        "no:berry\n",
    )
    .await;
    check("seq 1 10 | awk '$1 == 3, $1 == 5'", "3\n4\n5\n").await;
    check(
        "seq 1 6 | awk 'NR == 2, NR == 2 { print \"one\" }'",
        "one\n",
    )
    .await;
}

#[tokio::test]
async fn awk_arrays_count_delete_and_test_membership() {
    check(
        "printf 'a\\nb\\na\\nc\\na\\n' | awk '{ n[$1]++ } END { for (k in n) print k, n[k] }'",
        "a 3\nb 1\nc 1\n",
    )
    .await;
    check(
        "awk 'BEGIN { a[1]; a[2]; delete a[1]; print (1 in a), (2 in a), length(a); delete a; print length(a) }'",
        "0 1 1\n0\n",
    )
    .await;
    check(
        "awk 'BEGIN { a[\"x\", \"y\"] = 1; for (k in a) { split(k, p, SUBSEP); print p[1], p[2] }; if ((\"x\", \"y\") in a) print \"yes\" }'",
        "x y\nyes\n",
    )
    .await;
}

#[tokio::test]
async fn awk_control_flow_runs_loops_and_branches() {
    check(
        "awk 'BEGIN { for (i = 1; i <= 3; i++) { if (i == 2) continue; print i }; \
         while (j < 2) j++; print j; do { k++ } while (k < 5); print k; \
         for (;;) { m++; if (m > 3) break }; print m }'",
        "1\n3\n2\n5\n4\n",
    )
    .await;
    check(
        "seq 1 5 | awk '$1 == 2 { next } { print } $1 == 4 { exit 3 } END { print \"end\" }'; echo $?",
        "1\n3\n4\nend\n3\n",
    )
    .await;
}

#[tokio::test]
async fn awk_functions_take_scalars_by_value_and_arrays_by_reference() {
    check(
        "awk 'function fill(arr, n,   i) { for (i = 1; i <= n; i++) arr[i] = i * i; return n }\n\
         function fact(n) { return n <= 1 ? 1 : n * fact(n - 1) }\n\
         BEGIN { x = 5; c = fill(sq, 3); print c, sq[2], sq[3], fact(x), x }'",
        "3 4 9 120 5\n",
    )
    .await;
}

#[tokio::test]
async fn awk_string_builtins_work_as_posix_and_busybox_define_them() {
    check(
        "awk 'BEGIN { s = \"Hello, World\"; print length(s), substr(s, 1, 5), substr(s, 8), index(s, \"World\"), \
         toupper(s), tolower(\"ABC\") }'",
        "12 Hello World 8 HELLO, WORLD abc\n",
    )
    .await;
    check(
        "awk 'BEGIN { n = split(\"a:b:c\", p, \":\"); print n, p[1], p[3]; n = split(\"x1y22z\", q, /[0-9]+/); print n, q[2] }'",
        "3 a c\n3 y\n",
    )
    .await;
    check(
        "echo 'foo bar foo' | awk '{ n = gsub(/foo/, \"[&]\"); print n, $0; sub(/bar/, \"\\\\&\"); print }'",
        "2 [foo] bar [foo]\n[foo] & [foo]\n",
    )
    .await;
    check(
        "awk 'BEGIN { if (match(\"xxabcx\", /b+c/)) print RSTART, RLENGTH; print match(\"q\", /z/), RLENGTH }'",
        "4 2\n0 -1\n",
    )
    .await;
    check(
        "awk 'BEGIN { s = \"abc\"; gsub(/x*/, \"-\", s); print s }'",
        "-a-b-c-\n",
    )
    .await;
}

#[tokio::test]
async fn awk_numbers_print_as_integers_or_through_ofmt_and_math_builtins_work() {
    check(
        "awk 'BEGIN { print 1/3, 10/2, 2^10, int(-3.7), sqrt(16), exp(0), log(1), 7 % 3, -2^2 }'",
        "0.333333 5 1024 -3 4 1 0 1 -4\n",
    )
    .await;
    check(
        "awk 'BEGIN { OFMT = \"%.2f\"; print 3.14159; x = 3.14159 \"\"; print x }'",
        "3.14\n3.14159\n",
    )
    .await;
    check(
        "awk 'BEGIN { printf \"%5.1f|%-3d|%s|%c|%x|%05d\\n\", 2.25, 7, \"s\", 65, 255, 42 }'",
        "  2.2|7  |s|A|ff|00042\n",
    )
    .await;
    check(
        "awk 'BEGIN { print sprintf(\"%03d-%s\", 5, \"x\"), (atan2(0, -1) > 3) }'",
        "005-x 1\n",
    )
    .await;
    check("awk 'BEGIN { srand(1); a = rand(); srand(1); b = rand(); print (a == b), (a >= 0 && a < 1) }'", "1 1\n").await;
}

#[tokio::test]
async fn awk_compares_numeric_strings_as_numbers_and_others_as_strings() {
    check(
        "echo '10 9' | awk '{ print ($1 > $2), (\"10\" > \"9\"), ($1 > \"9\") }'",
        "1 0 0\n",
    )
    .await;
    check(
        "awk 'BEGIN { print (x == 0), (x == \"\"), length(x) }'",
        "1 1 0\n",
    )
    .await;
    check("echo ' 1e2 ' | awk '{ print ($1 == 100) }'", "1\n").await;
}

#[tokio::test]
async fn awk_v_and_operand_assignments_set_variables() {
    check(
        "awk -v x=5 -v 'y=a\\tb' 'BEGIN { print x + 1, y }'",
        "6 a\tb\n",
    )
    .await;
    check(
        "echo l1 > /f1; echo l2 > /f2; awk '{ print p, $0 }' p=one /f1 p=two /f2",
        "one l1\ntwo l2\n",
    )
    .await;
}

#[tokio::test]
async fn awk_f_reads_the_program_from_a_file_and_filename_fnr_follow_the_files() {
    check(
        "printf '{ print FILENAME, FNR, NR }\\n' > /p.awk; echo a > /x; printf 'b\\nc\\n' > /y; \
         awk -f /p.awk /x /y",
        "/x 1 1\n/y 1 2\n/y 2 3\n",
    )
    .await;
}

#[tokio::test]
async fn awk_getline_reads_the_next_record_a_file_or_a_command() {
    check(
        "printf '1\\n2\\n3\\n4\\n' | awk '{ getline; print }'",
        "2\n4\n",
    )
    .await;
    check(
        "printf 'x\\ny\\n' > /f; awk 'BEGIN { while ((getline line < \"/f\") > 0) n++; print n, line }'",
        "2 y\n",
    )
    .await;
    check(
        "awk 'BEGIN { \"echo hi there\" | getline; print $2; \"echo a\" | getline v; print v }'",
        "there\na\n",
    )
    .await;
    check("awk 'BEGIN { print (getline l < \"/nope\") }'", "-1\n").await;
}

#[tokio::test]
async fn awk_redirects_print_to_files_and_commands() {
    check(
        "awk 'BEGIN { print \"a\" > \"/o\"; print \"b\" > \"/o\"; print \"c\" >> \"/o\"; close(\"/o\"); \
         print \"d\" >> \"/o\" }'; cat /o",
        "a\nb\nc\nd\n",
    )
    .await;
    check(
        "printf '3\\n1\\n2\\n' | awk '{ print | \"sort\" } END { close(\"sort\"); print \"done\" }'",
        "1\n2\n3\ndone\n",
    )
    .await;
    check(
        "awk 'BEGIN { print \"err\" > \"/dev/stderr\" }' 2>&1",
        "err\n",
    )
    .await;
    check("awk 'BEGIN { r = system(\"exit 3\"); print r }'", "3\n").await;
}

#[tokio::test]
async fn awk_field_and_nf_assignments_rebuild_the_record() {
    check(
        "echo 'a b c' | awk '{ $2 = \"X\"; print; print NF }'",
        "a X c\n3\n",
    )
    .await;
    check(
        "echo 'a b c' | awk '{ $5 = \"e\"; print; print NF }'",
        "a b c  e\n5\n",
    )
    .await;
    check("echo 'a b c' | awk '{ NF = 2; print }'", "a b\n").await;
    check(
        "echo 'a b' | awk '{ $0 = \"x y z\"; print NF, $3 }'",
        "3 z\n",
    )
    .await;
}

#[tokio::test]
async fn awk_reports_syntax_errors_as_busybox_with_exit_1() {
    let r = sh("awk 'BEGIN { x = }'").await;
    assert_eq!(r.status, ExitStatus::Code(1));
    assert_eq!(r.stderr, "awk: cmd. line:1: Unexpected token\n");
    let r = sh("awk 'BEGIN { print (1'").await;
    assert_eq!(r.stderr, "awk: cmd. line:1: Unexpected end of string\n");
    let r = sh("awk 'BEGIN { f(1) }'").await;
    assert_eq!(r.stderr, "awk: cmd. line:1: Call to undefined function\n");
    let r = sh("awk 'BEGIN { print 1 / 0 }'").await;
    assert_eq!(
        (r.status, r.stderr.as_str()),
        (ExitStatus::Code(1), "awk: cmd. line:1: Division by zero\n")
    );
    let r = sh("awk '{ print }' /nope").await;
    assert_eq!(
        (r.status, r.stderr.as_str()),
        (
            ExitStatus::Code(1),
            "awk: can't open '/nope': No such file or directory\n"
        )
    );
    let r = sh("awk").await;
    assert_eq!(r.status, ExitStatus::Code(1));
}

#[tokio::test]
async fn awk_nested_expressions_and_a_cancelled_endless_loop_do_not_hurt_the_runtime() {
    let nested = format!("{}1{}", "(".repeat(60), ")".repeat(60));
    check(&format!("awk 'BEGIN {{ print {nested} }}'"), "1\n").await;
    let r = sh("timeout 0.2 awk 'BEGIN { while (1) x++ }'; echo $?").await;
    assert_eq!(r.stdout, "124\n");
}

#[tokio::test]
async fn awk_stops_quietly_when_its_reader_goes() {
    let r = sh("yes | awk '{ print }' | head -2").await;
    assert_eq!(
        (r.status, r.stdout.as_str()),
        (ExitStatus::Code(0), "y\ny\n")
    );
}

#[tokio::test]
async fn awk_paragraph_mode_splits_records_on_blank_lines() {
    check(
        "printf 'a b\\nc\\n\\n\\nd\\n' | awk 'BEGIN { RS = \"\" } { print NR \":\" NF }'",
        "1:3\n2:1\n",
    )
    .await;
}

#[tokio::test]
async fn awk_recursion_runs_deep_and_stops_with_an_error_past_its_limit() {
    check(
        "awk 'function f(n) { return n ? 1 + f(n - 1) : 0 } BEGIN { print f(500) }'",
        "500\n",
    )
    .await;
    let r = sh("awk 'function f(n) { return f(n + 1) } BEGIN { f(1) }'").await;
    assert_eq!(r.status, ExitStatus::Code(1));
    assert_eq!(
        r.stderr,
        "awk: cmd. line:1: Function calls nested too deeply\n"
    );
}
