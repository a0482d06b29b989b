#!/usr/bin/env bash
# Runs `cargo test --workspace` several times in a row while other processes keep every core
# busy, and counts the failures: the project's tests must not flake on a loaded machine
# (issue 32). Not part of ci/test.sh: ten runs take well over an hour on 2 cores.
#
# Usage: ci/loaded-tests.sh [--runs N] [--burners N] [--nice N]
#
# --runs: how many runs (10). --burners: busy processes beside the tests (one per core);
# --nice: their niceness (10): they take every cycle the tests and whatever else runs leave,
# and a share of the rest, so no core is ever idle. The machine's load average is sampled every
# 30 s. Logs: target/loaded-tests/run-N.log. Exit 0 only when every run passed.
set -euo pipefail
cd "$(dirname "$0")/.."

runs=10
burners="$(nproc)"
niceness=10
while [ $# -gt 0 ]; do
    case "$1" in
        --runs) runs="$2"; shift 2 ;;
        --burners) burners="$2"; shift 2 ;;
        --nice) niceness="$2"; shift 2 ;;
        *) echo "usage: ci/loaded-tests.sh [--runs N] [--burners N] [--nice N]" >&2; exit 2 ;;
    esac
done

say() {
    printf 'loaded-tests: %s\n' "$*" >&2
}

out="$(realpath -m "${CARGO_TARGET_DIR:-target}")/loaded-tests"
rm -rf "$out"
mkdir -p "$out"

# The Python client tests need their venvs (as ci/test.sh makes them); the build is done
# before the burners start, so that every run tests and none compiles.
bash ci/python-venv.sh >"$out/python-venv.log" 2>&1 ||
    { say "ci/python-venv.sh failed; see $out/python-venv.log"; exit 2; }
cargo test --workspace --locked --no-run >"$out/build.log" 2>&1 ||
    { say "the tests do not build; see $out/build.log"; exit 2; }

pids=()
cleanup() {
    for pid in "${pids[@]}"; do
        kill "$pid" 2>/dev/null || true
    done
}
trap cleanup EXIT
for _ in $(seq 1 "$burners"); do
    nice -n "$niceness" bash -c 'while :; do :; done' &
    pids+=("$!")
done
while :; do
    cut -d' ' -f1 /proc/loadavg >>"$out/load.txt"
    sleep 30
done &
pids+=("$!")
say "$burners busy process(es) at nice $niceness beside the tests; $runs run(s)"

failed_runs=0
for n in $(seq 1 "$runs"); do
    log="$out/run-$n.log"
    started=$SECONDS
    status=0
    cargo test --workspace --locked --no-fail-fast >"$log" 2>&1 || status=$?
    passed="$(awk '/^test result:/ { s += $4 } END { print s + 0 }' "$log")"
    failed="$(awk '/^test result:/ { s += $6 } END { print s + 0 }' "$log")"
    say "run $n: exit $status in $((SECONDS - started)) s: $passed passed, $failed failed"
    if [ "$status" -ne 0 ]; then
        failed_runs=$((failed_runs + 1))
        grep -E '^test .* FAILED$|^error: test failed' "$log" | sed 's/^/    /' >&2 || true
    fi
done

load="$(sort -n "$out/load.txt" | awk '{ v[NR] = $1 } END { if (NR) printf "%s to %s, median %s", v[1], v[NR], v[int((NR + 1) / 2)] }')"
say "load average over the runs: ${load:-not sampled}"
say "$failed_runs of $runs run(s) failed"
[ "$failed_runs" -eq 0 ]
