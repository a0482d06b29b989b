#!/usr/bin/env bash
# The live tests against a fakekube process, on every CI run (ci/test.sh calls this): the same
# test binary as against kind (live/README.md), so kubeconfig loading, TLS verified against the
# CA it names, the bearer token and everything after them go through a real socket.
#
# Starts target/debug/fakekube as its own process with an admin kubeconfig file and applies, with
# kubectl, what ci/kind-up.sh applies that fakekube serves: the RBAC part unchanged (the
# namespace, the seed's Role from fixtures/rbac/, the service accounts live-runner and
# live-observer with their RoleBindings and token Secrets: ci/access.sh, shared with kind-up.sh),
# then the SandboxTemplate and the SandboxWarmPool. It reads the tokens fakekube's token
# controller wrote into the Secrets and writes the two kubeconfigs kind-up.sh writes, checks that
# the runner is limited to the seed's Role, runs `cargo test -p live --features live` with
# LIVE_REQUIRE_CLUSTER=1 through them, then the main job's binary (the conformance suite against
# both pools) through the runner's, with its leak check, and stops fakekube with SIGTERM on the
# way out, whatever happened.
#
# With --chaos-seed N (and --chaos-rate R, default 0.02), the same run under chaos, as
# ci/soak.sh's third part runs it: fakekube starts with chaos paused and scoped to live-runner
# (every fault but pods deleted under execs, which a later check cannot tie to its fault), the
# setup above runs untouched as admin, a SIGUSR1 lets the faults loose, then the live tests run
# with LIVE_CHAOS=1 and the conformance binary with --chaos: an operation may fail only with a
# code a fault explains, and nothing may be left. fakekube's count of the faults it injected,
# by kind, is printed when it stops.
#
#   bash ci/live.sh [--chaos-seed N [--chaos-rate R]]
#
# Settings (environment): KUBECTL (default the kubectl 1.33 binary of this machine kind),
# CARGO_TARGET_DIR (where cargo builds fakekube).
set -euo pipefail
cd "$(dirname "$0")/.."

chaos_seed=""
chaos_rate=0.02
while [ $# -gt 0 ]; do
    case "$1" in
        --chaos-seed) chaos_seed="$2"; shift 2 ;;
        --chaos-rate) chaos_rate="$2"; shift 2 ;;
        -h|--help) sed -n '2,30p' "$0"; exit 0 ;;
        *) echo "live: unknown argument $1" >&2; exit 2 ;;
    esac
done

KUBECTL="${KUBECTL:-/usr/lib/google-cloud-sdk/bin/kubectl.1.33}"
TARGET="${CARGO_TARGET_DIR:-target}"
MISSING_IMAGE="registry.invalid/does-not-exist:0"

die() {
    printf 'live: error: %s\n' "$*" >&2
    exit 1
}

command -v "$KUBECTL" >/dev/null 2>&1 || [ -x "$KUBECTL" ] ||
    die "kubectl ($KUBECTL) is not installed; set KUBECTL to a kubectl binary"

echo "== cargo build -p fakekube --bin fakekube"
cargo build -p fakekube --bin fakekube --locked

work="$(mktemp -d "${TMPDIR:-/tmp}/live-fakekube.XXXXXX")"
fakekube_pid=""
stop_fakekube() {
    if [ -n "$fakekube_pid" ] && kill -0 "$fakekube_pid" 2>/dev/null; then
        kill -TERM "$fakekube_pid" 2>/dev/null || true
        wait "$fakekube_pid" 2>/dev/null || true
        # The faults it injected, by kind (printed when it stops under --chaos-seed).
        grep '^fakekube chaos injected ' "$work/stdout" 2>/dev/null || true
    fi
    rm -rf "$work"
}
trap stop_fakekube EXIT

args=(--kubeconfig "$work/kubeconfig" --kubernetes-minor 33)
marked=0
# The missing-image check needs fakekube to fail pulls of that image; older binaries cannot.
if "$TARGET/debug/fakekube" --help 2>/dev/null | grep -q -- '--missing-image'; then
    args+=(--missing-image "$MISSING_IMAGE")
    marked=1
fi
# NAMESPACE is ci/access.sh's (the namespace of the live runs).
runner_user="system:serviceaccount:${NAMESPACE:-sandboxes}:live-runner"
if [ -n "$chaos_seed" ]; then
    echo "== chaos: seed $chaos_seed, rate $chaos_rate, striking $runner_user once the setup is done"
    faults="reset,throttle,internal,unavailable,slow,exec_drop,watch_gone"
    args+=(--chaos-seed "$chaos_seed" --chaos-rate "$chaos_rate" --chaos-paused
        --chaos-user "$runner_user" --chaos-faults "$faults")
fi
"$TARGET/debug/fakekube" "${args[@]}" >"$work/stdout" 2>"$work/stderr" &
fakekube_pid=$!

for _ in $(seq 1 100); do
    grep -q '^fakekube listening on ' "$work/stdout" 2>/dev/null && break
    kill -0 "$fakekube_pid" 2>/dev/null || break
    sleep 0.1
done
if ! grep -q '^fakekube listening on ' "$work/stdout" 2>/dev/null; then
    cat "$work/stderr" >&2 || true
    die "fakekube did not start within 10 s"
fi
echo "== $(head -n 1 "$work/stdout") (pid $fakekube_pid)"

# kubectl as the cluster's admin, as ci/access.sh expects it.
k() {
    "$KUBECTL" --kubeconfig "$work/kubeconfig" "$@"
}
# shellcheck source=ci/access.sh
. ci/access.sh
echo "== the RBAC part of ci/kind-up.sh, then the warm pool"
access_apply
k apply -f fixtures/live/warm-pool.yaml >/dev/null
access_write_kubeconfig "$work/role.kubeconfig" live-runner \
    "$(access_secret_token live-runner-token)" fakekube
access_write_kubeconfig "$work/observer.kubeconfig" live-observer \
    "$(access_secret_token live-observer-token)" fakekube
access_check_runner "$work/role.kubeconfig"

live_chaos=0
conformance_chaos=()
if [ -n "$chaos_seed" ]; then
    kill -USR1 "$fakekube_pid"
    for _ in $(seq 1 100); do
        grep -q '^fakekube: chaos resumed' "$work/stderr" 2>/dev/null && break
        sleep 0.1
    done
    grep -q '^fakekube: chaos resumed' "$work/stderr" 2>/dev/null ||
        die "fakekube did not resume chaos within 10 s of SIGUSR1"
    echo "== chaos on for $runner_user"
    live_chaos=1
    conformance_chaos=(--chaos)
fi

echo "== cargo test -p live --features live (against fakekube, LIVE_REQUIRE_CLUSTER=1)"
# LIVE_JSON_DIR (ci/test.sh sets it for ci/upstream-compare.sh): the run's reports, suite.json
# and checks.json, are written there.
json_env=()
if [ -n "${LIVE_JSON_DIR:-}" ]; then
    mkdir -p "$LIVE_JSON_DIR"
    dir="$(realpath "$LIVE_JSON_DIR")"
    json_env=(SANDBOX_CONFORMANCE_JSON="$dir/suite.json" LIVE_CHECKS_JSON="$dir/checks.json")
fi
env "${json_env[@]}" \
    KUBECONFIG="$work/role.kubeconfig" \
    LIVE_OBSERVER_KUBECONFIG="$work/observer.kubeconfig" \
    LIVE_REQUIRE_CLUSTER=1 \
    LIVE_MISSING_IMAGE="$MISSING_IMAGE" \
    LIVE_MISSING_IMAGE_MARKED="$marked" \
    LIVE_CHAOS="$live_chaos" \
    cargo test -p live --features live --locked

echo "== the conformance binary against the same fakekube process, through its kubeconfig"
cargo run -p conformance-runner --locked -- \
    --kubeconfig "$work/role.kubeconfig" --fast "${conformance_chaos[@]}"
