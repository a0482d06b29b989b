#!/usr/bin/env bash
# fakekube against the real thing, on every CI run (.ci/run calls this after ci/test.sh): the
# live tests (the conformance suite on the direct and warm pools, then the live checks) run
# against the upstream control plane of ci/upstream-up.sh (Kubernetes 1.36 and the agent-sandbox
# controller as local processes, fakekube kubelets as its nodes) and against a fakekube process
# (ci/live.sh), and their verdicts are compared trial by trial with `conformance compare
# --known`, against fixtures/upstream/known-suite-differences.txt and
# known-check-differences.txt: a difference those files do not explain with its cause fails the
# run; one they list that no longer differs is reported stale.
#
#   bash ci/upstream-compare.sh [--fake-reports DIR]
#
# --fake-reports DIR reuses the fakekube side's reports (suite.json, checks.json) that an earlier
# `LIVE_JSON_DIR=DIR bash ci/live.sh` wrote (ci/test.sh does); without it, or when they are
# missing, ci/live.sh runs here. Reports and the comparison go to target/upstream-compare/; the
# upstream stack is stopped on the way out (its logs stay in target/upstream/logs/).
set -euo pipefail
cd "$(dirname "$0")/.."

fake_reports=""
while [ $# -gt 0 ]; do
    case "$1" in
        --fake-reports) fake_reports="$2"; shift 2 ;;
        -h|--help) sed -n '2,17p' "$0"; exit 0 ;;
        *) echo "upstream-compare: unknown argument $1" >&2; exit 2 ;;
    esac
done

TARGET="${CARGO_TARGET_DIR:-target}"
OUT="target/upstream-compare"
KNOWN_SUITE="fixtures/upstream/known-suite-differences.txt"
KNOWN_CHECKS="fixtures/upstream/known-check-differences.txt"
rm -rf "$OUT"
mkdir -p "$OUT"

say() {
    printf 'upstream-compare: %s\n' "$*"
}

echo "== cargo build -p fakekube -p conformance-runner"
cargo build -p fakekube -p conformance-runner --locked

if [ -z "$fake_reports" ] || [ ! -s "$fake_reports/suite.json" ] || [ ! -s "$fake_reports/checks.json" ]; then
    fake_reports="$OUT/fake"
    echo "== the live tests against a fakekube process (ci/live.sh), for the fake side"
    LIVE_JSON_DIR="$fake_reports" bash ci/live.sh
fi

echo "== the upstream control plane (ci/upstream-up.sh)"
stop_upstream() {
    bash ci/upstream-down.sh >"$OUT/upstream-down.log" 2>&1 || say "warning: upstream-down failed; see $OUT/upstream-down.log"
}
trap stop_upstream EXIT
started=$SECONDS
FAKEKUBE_BIN="$TARGET/debug/fakekube" UPSTREAM_REQUIRE_NODES=1 bash ci/upstream-up.sh
say "the stack was up in $((SECONDS - started)) s"

echo "== the live tests against the upstream control plane"
started=$SECONDS
set +e
KUBECONFIG="$PWD/target/upstream/runner.kubeconfig" \
    LIVE_OBSERVER_KUBECONFIG="$PWD/target/upstream/observer.kubeconfig" \
    LIVE_REQUIRE_CLUSTER=1 \
    SANDBOX_CONFORMANCE_JSON="$PWD/$OUT/upstream-suite.json" \
    LIVE_CHECKS_JSON="$PWD/$OUT/upstream-checks.json" \
    cargo test -p live --features live --locked >"$OUT/upstream-live.log" 2>&1
live_status=$?
# The live run's own report (its tables), without libtest's closing line: whether a difference
# matters is the comparison's to say, below, not that line's.
grep -v '^test result:' "$OUT/upstream-live.log" | sed -n '/^capability/,/^live: conformance suite/p'
set -e
say "the live tests against upstream took $((SECONDS - started)) s (cargo test exit $live_status)"
for report in upstream-suite.json upstream-checks.json; do
    [ -s "$OUT/$report" ] || { say "error: the upstream run wrote no $report; see $OUT/upstream-live.log" >&2; exit 1; }
done

echo "== fakekube vs upstream: the conformance suite, trial by trial"
compare_status=0
"$TARGET/debug/conformance" compare "$fake_reports/suite.json" "$OUT/upstream-suite.json" \
    --known "$KNOWN_SUITE" | tee "$OUT/suite-compare.txt" || compare_status=1
echo "== fakekube vs upstream: the live checks"
"$TARGET/debug/conformance" compare "$fake_reports/checks.json" "$OUT/upstream-checks.json" \
    --known "$KNOWN_CHECKS" | tee "$OUT/checks-compare.txt" || compare_status=1

if [ "$compare_status" -ne 0 ]; then
    say "error: fakekube and upstream differ where $KNOWN_SUITE or $KNOWN_CHECKS does not say why (above)" >&2
    exit 1
fi
say "fakekube and upstream agree but for the known differences"
