#!/usr/bin/env bash
# The credential scan (ci/test.sh runs it last): searches everything a CI run printed and wrote
# (the saved output of each step, the report files: JSON, JUnit, cassettes) for every token and
# key the tests used, and fails on any hit.
#
#   bash ci/credential-scan.sh DIR
#
# DIR holds the saved outputs and reports. The secrets searched for are the fixed markers the
# tests use (fixtures/secrets/markers.txt) and every one fakekube made during the run: with
# FAKEKUBE_SECRET_LOG set, fakekube appends each admin token it generates or writes into a
# kubeconfig, and each client key it issues, to that file (ci/test.sh points it at
# DIR/secrets.log). The scan refuses to pass on nothing: it fails when no secret was recorded,
# when a marker list is empty, or when DIR holds no output to search.
set -euo pipefail
cd "$(dirname "$0")/.."

dir="${1:?usage: ci/credential-scan.sh DIR}"
markers="fixtures/secrets/markers.txt"

die() {
    printf 'credential-scan: %s\n' "$*" >&2
    exit 1
}

[ -d "$dir" ] || die "$dir is not a directory"
patterns="$(mktemp)"
trap 'rm -f "$patterns"' EXIT
grep -v '^#' "$markers" | sed '/^$/d' >"$patterns"
fixed=$(wc -l <"$patterns")
[ "$fixed" -gt 0 ] || die "$markers lists no marker secret"
recorded=0
if [ -f "$dir/secrets.log" ]; then
    sort -u "$dir/secrets.log" | sed '/^$/d' >>"$patterns"
    recorded=$(sort -u "$dir/secrets.log" | sed '/^$/d' | wc -l)
fi
[ "$recorded" -gt 0 ] || die "fakekube recorded no secret in $dir/secrets.log: was FAKEKUBE_SECRET_LOG set?"
# A secret of a few characters matches ordinary text everywhere, so the scan could not tell a
# leak from a coincidence: tests must give their tokens distinctive values.
short=$(sort -u "$dir/secrets.log" | awk 'length($0) > 0 && length($0) < 8' | wc -l)
[ "$short" -eq 0 ] || die "$short recorded secret(s) shorter than 8 characters: give test tokens distinctive values"

mapfile -t files < <(find "$dir" -type f ! -name secrets.log | sort)
[ ${#files[@]} -gt 0 ] || die "$dir holds no output to search"
bytes=$(cat "${files[@]}" | wc -c)
[ "$bytes" -gt 0 ] || die "the outputs in $dir are empty"

echo "== credential scan: $fixed marker and $recorded recorded secrets in ${#files[@]} files ($((bytes / 1024)) KiB)"
if hits=$(grep -F -l -f "$patterns" "${files[@]}"); then
    echo "credential-scan: a secret appears in:" >&2
    # Name the files and lines, never the secret itself.
    for f in $hits; do
        grep -F -n -f "$patterns" "$f" | cut -d: -f1 | head -5 | sed "s|^|  $f line |" >&2
    done
    exit 1
fi
echo "credential scan: no secret found"
