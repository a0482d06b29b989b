#!/usr/bin/env bash
# The fault soak, in three parts, all under a seeded random mix of faults fakekube injects
# (connection resets, 429 and 503 with Retry-After, 500s, slow answers, exec streams dropped
# mid-output, watch 410s, pods deleted under running execs):
#
# 1. the main job (the conformance binary on its embedded fakekube) with --chaos-seed, once per
#    round with the seeds SEED, SEED+1, ...: a trial may fail only with a contract code a fault
#    explains; a reconcile deletes what cleanups could not, every sandbox it finds must be the
#    run's own, and the leak check must find nothing;
# 2. adapter/tests/soak.rs for --seconds: the main job's operations from several workers while
#    the token is rotated (the old one revoked) and pods are deleted under running execs; every
#    operation must end in success or an explained code within its timeout, and nothing may be
#    left after the reconcile;
# 3. ci/live.sh --chaos-seed, once per round with the same seeds: a fakekube process whose chaos
#    strikes only the runner's service account (live-runner) once kubectl's setup as admin is
#    done, the live tests (LIVE_CHAOS=1) and `conformance --kubeconfig --chaos` through the
#    runner's kubeconfig; a check or trial may fail only with a code a fault explains, nothing
#    may be left after the reconcile, and fakekube prints the faults it injected by kind.
#
# ci/test.sh runs it with the fixed default seed for a short time; by hand, run it longer with
# a random seed:
#
#   bash ci/soak.sh [--seconds N] [--rounds N] [--seed N | --random-seed] [--rate R] [--workers N]
#
# It prints the seed first (a failing run is reproduced with it) and, for each part, a summary:
# faults injected by kind, operations by outcome and error code, what the reconcile found.
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=60
rounds=1
seed=1
rate=0.02
workers=4
while [ $# -gt 0 ]; do
    case "$1" in
        --seconds) seconds="$2"; shift 2 ;;
        --rounds) rounds="$2"; shift 2 ;;
        --seed) seed="$2"; shift 2 ;;
        --random-seed) seed="$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')"; shift ;;
        --rate) rate="$2"; shift 2 ;;
        --workers) workers="$2"; shift 2 ;;
        -h|--help) sed -n '2,26p' "$0"; exit 0 ;;
        *) echo "soak: unknown argument $1" >&2; exit 2 ;;
    esac
done
echo "== soak: seed $seed, rate $rate; the main job $rounds round(s); the adapter soak ${seconds}s with $workers workers; the live tests and conformance --kubeconfig against a fakekube process $rounds round(s)"

# The workspace's test build (what ci/test.sh's `cargo test --workspace` made, so nothing is
# built again there): the conformance binary and the soak test with the same features.
cargo test --workspace --locked --no-run
target="${CARGO_TARGET_DIR:-target}"
for round in $(seq 0 $((rounds - 1))); do
    s=$((seed + round))
    echo "== the main job under chaos (round $((round + 1)) of $rounds, seed $s)"
    # Only the summary: the trial lines of a run under chaos are many and mostly "ok".
    log="$(mktemp "${TMPDIR:-/tmp}/soak-main.XXXXXX")"
    status=0
    "$target/debug/conformance" --chaos-seed "$s" --chaos-rate "$rate" >"$log" 2>&1 || status=$?
    sed -n '/^chaos: [0-9]* faults injected/,$p' "$log"
    if [ "$status" -ne 0 ]; then
        grep -E '^(test result|conformance:)' "$log" >&2 || true
        rm -f "$log"
        echo "soak: the main job under chaos failed (seed $s, rate $rate)" >&2
        exit 1
    fi
    rm -f "$log"
done

echo "== the adapter soak (adapter/tests/soak.rs), seed $seed, ${seconds}s"
SOAK_SECONDS="$seconds" SOAK_SEED="$seed" SOAK_RATE="$rate" SOAK_WORKERS="$workers" \
    cargo test --workspace --locked --test soak -- --ignored --nocapture

for round in $(seq 0 $((rounds - 1))); do
    s=$((seed + round))
    echo "== the live tests and conformance --kubeconfig --chaos against a fakekube process (ci/live.sh --chaos-seed $s, round $((round + 1)) of $rounds)"
    # Only the summaries: the trial lines are many and mostly "ok".
    log="$(mktemp "${TMPDIR:-/tmp}/soak-live.XXXXXX")"
    status=0
    bash ci/live.sh --chaos-seed "$s" --chaos-rate "$rate" >"$log" 2>&1 || status=$?
    grep -E '^(== chaos|live: chaos|  [a-z_]+: |  UNEXPLAINED|chaos: |leak check|live::leaks|fakekube chaos injected|test result)' "$log" || true
    if [ "$status" -ne 0 ]; then
        tail -n 60 "$log" >&2
        rm -f "$log"
        echo "soak: the live tests or conformance --chaos failed under fakekube's chaos (seed $s, rate $rate)" >&2
        exit 1
    fi
    rm -f "$log"
done
