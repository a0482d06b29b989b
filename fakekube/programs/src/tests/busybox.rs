//! The BusyBox programs added for interactive use, end to end through `sh -c`.

use super::*;

#[tokio::test]
async fn sort_orders_numerically_by_key_reversed_and_unique() {
    check("printf 'b\\na\\nc\\na\\n' | sort", "a\na\nb\nc\n").await;
    check("printf '10\\n9\\n100\\n' | sort -n", "9\n10\n100\n").await;
    check("printf '10\\n9\\n100\\n' | sort -rn", "100\n10\n9\n").await;
    check("printf 'b\\na\\nb\\n' | sort -u", "a\nb\n").await;
    check(
        "printf 'x:3\\ny:1\\nz:2\\n' | sort -t: -k2n",
        "y:1\nz:2\nx:3\n",
    )
    .await;
    let r = sh("sort /nope").await;
    assert_eq!(r.status, ExitStatus::Code(1));
    assert_eq!(
        r.stderr,
        "sort: can't open '/nope': No such file or directory\n"
    );
}

#[tokio::test]
async fn uniq_tr_and_cut_transform_lines() {
    check("printf 'a\\na\\nb\\na\\n' | uniq", "a\nb\na\n").await;
    check("printf 'a\\na\\nb\\n' | uniq -c", "      2 a\n      1 b\n").await;
    check("printf 'a\\na\\nb\\n' | uniq -d", "a\n").await;
    check("echo hello | tr a-z A-Z", "HELLO\n").await;
    check("echo 'a  b   c' | tr -s ' '", "a b c\n").await;
    check("echo hello123 | tr -d '[:digit:]'", "hello\n").await;
    check("echo 'a:b:c' | cut -d: -f2", "b\n").await;
    check("echo 'a:b:c' | cut -d: -f1,3", "a:c\n").await;
    check("echo abcdef | cut -c2-4", "bcd\n").await;
}

#[tokio::test]
async fn sed_substitutes_addresses_and_edits_in_place() {
    check("echo hello world | sed 's/o/0/g'", "hell0 w0rld\n").await;
    check("printf '1\\n2\\n3\\n' | sed -n '2p'", "2\n").await;
    check("printf '1\\n2\\n3\\n' | sed '1d'", "2\n3\n").await;
    check("echo abc | sed -E 's/(b)/[\\1]/'", "a[b]c\n").await;
    check(
        "printf 'k=1\\n' > /tmp/c; sed -i 's/1/2/' /tmp/c; cat /tmp/c",
        "k=2\n",
    )
    .await;
    let r = sh("echo x | sed 'k'").await;
    assert_eq!(r.status, ExitStatus::Code(1));
    assert_eq!(r.stderr, "sed: unknown command: 'k'\n");
}

#[tokio::test]
async fn gzip_tar_base64_and_sha256sum_round_trip() {
    check("echo hello | gzip | gunzip", "hello\n").await;
    check(
        "echo hi > /tmp/f; gzip /tmp/f; ls /tmp; zcat /tmp/f.gz",
        "f.gz\nhi\n",
    )
    .await;
    check(
        "mkdir -p /src/d; echo one > /src/d/a; echo two > /src/b; cd /src && tar czf /tmp/t.tgz . \
         && mkdir /dst && tar xzf /tmp/t.tgz -C /dst && cat /dst/d/a /dst/b",
        "one\ntwo\n",
    )
    .await;
    check(
        "mkdir -p /s/x; echo y > /s/x/y; tar -cf - -C /s x | tar -tf -",
        "x/\nx/y\n",
    )
    .await;
    check("printf hello | base64", "aGVsbG8=\n").await;
    check("echo aGVsbG8= | base64 -d", "hello").await;
    check(
        "printf abc | sha256sum",
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad  -\n",
    )
    .await;
    let r = sh("echo plain | gunzip").await;
    assert_eq!(
        (r.status, r.stderr.as_str()),
        (ExitStatus::Code(1), "gunzip: invalid magic\n")
    );
}

#[tokio::test]
async fn find_and_xargs_walk_and_build_commands() {
    check(
        "mkdir -p /w/a/b; touch /w/a/x.txt /w/a/b/y.txt /w/z.log; cd /w; find . -name '*.txt'",
        "./a/b/y.txt\n./a/x.txt\n",
    )
    .await;
    check("mkdir -p /w/a/b; cd /w; find . -type d", ".\n./a\n./a/b\n").await;
    check(
        "mkdir -p /w/a; touch /w/a/f; find /w -maxdepth 1",
        "/w\n/w/a\n",
    )
    .await;
    check("printf 'a b\\nc\\n' | xargs echo got", "got a b c\n").await;
    check("printf 'a b c\\n' | xargs -n 2 echo", "a b\nc\n").await;
    check("printf 'x\\ny\\n' | xargs -I {} echo '<{}>'", "<x>\n<y>\n").await;
    check(
        "mkdir -p /e; touch /e/1 /e/2; find /e -type f -exec echo found {} \\;",
        "found /e/1\nfound /e/2\n",
    )
    .await;
    let r = sh("find /missing").await;
    assert_eq!(r.stderr, "find: /missing: No such file or directory\n");
}

#[tokio::test]
async fn date_uptime_du_and_df_describe_the_system() {
    check(
        "date -u -d @0 '+%Y-%m-%d %H:%M:%S %Z'",
        "1970-01-01 00:00:00 UTC\n",
    )
    .await;
    check("date -d '2024-03-05 06:07:08' +%s", "1709618828\n").await;
    check("date -d @86400", "Fri Jan  2 00:00:00 UTC 1970\n").await;
    let r = sh("date -d yesterday-ish").await;
    assert_eq!(r.stderr, "date: invalid date 'yesterday-ish'\n");
    let r = sh("uptime").await;
    assert!(
        r.stdout.contains(" up ") && r.stdout.ends_with("load average: 0.00, 0.00, 0.00\n"),
        "{r:?}"
    );
    check(
        "mkdir /d; head -c 5000 /dev/zero > /d/f; du -s /d",
        "12\t/d\n",
    )
    .await;
    let r = sh("df /").await;
    let lines: Vec<&str> = r.stdout.lines().collect();
    assert_eq!(
        lines[0],
        "Filesystem           1K-blocks      Used Available Use% Mounted on"
    );
    assert!(
        lines[1].starts_with("overlay ") && lines[1].ends_with("% /"),
        "{r:?}"
    );
}

#[tokio::test]
async fn an_empty_single_quoted_word_is_an_argument_of_its_own() {
    check("printf '[%s]' '' x ''; echo", "[][x][]\n").await;
    check("set -- '' ''; echo $#", "2\n").await;
}
