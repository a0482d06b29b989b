#!/usr/bin/env bash
# Record and replay on every CI run (ci/test.sh calls this; fakekube/cassette/CASSETTE.md):
#
# 1. starts target/debug/fakekube as its own process (as ci/live.sh does: the seed's Role as a
#    role token, the live fixtures applied with kubectl) and records against it, through
#    recording proxies, the main job (`conformance --record`) and, against a second process,
#    the live checks (`LIVE_RECORD`). The main job runs its trials eight at a time, as it does
#    everywhere: the replay's matcher takes the interleavings of concurrent requests (see
#    CASSETTE.md, "How a request finds its recorded exchange");
# 2. stops fakekube, serves each cassette with `fakekube replay` and runs the same job against
#    the replay's kubeconfigs: the verdicts must be the same trial by trial
#    (`conformance compare`), and the replay must end with no request left unmatched.
#    The two jobs run side by side (they mostly wait on their servers);
# 3. alters one answer of the main job's cassette (a Sandbox's pod name) and replays it: the
#    replay must stop at the exec that the altered answer redirects, printing that request
#    beside the recorded one.
#
# The live run's conformance suite is not recorded here: it is the main job's suite on the
# same pools, which step 1 records once; recording it twice would double the time.
#
# Settings (environment): KUBECTL (default the kubectl 1.33 binary of this machine kind),
# CARGO_TARGET_DIR (where cargo builds), CASSETTE_KEEP=DIR (copy the cassettes and reports
# there).
set -euo pipefail
cd "$(dirname "$0")/.."

KUBECTL="${KUBECTL:-/usr/lib/google-cloud-sdk/bin/kubectl.1.33}"
TARGET="${CARGO_TARGET_DIR:-target}"
MISSING_IMAGE="registry.invalid/does-not-exist:0"
FAKEKUBE="$TARGET/debug/fakekube"
CONFORMANCE="$TARGET/debug/conformance"

die() {
    printf 'cassette: error: %s\n' "$*" >&2
    exit 1
}

command -v "$KUBECTL" >/dev/null 2>&1 || [ -x "$KUBECTL" ] ||
    die "kubectl ($KUBECTL) is not installed; set KUBECTL to a kubectl binary"

echo "== cargo build -p fakekube -p conformance-runner, and the live test binary"
cargo build -p fakekube --bin fakekube --locked
cargo build -p conformance-runner --bin conformance --locked
cargo test -p live --features live --test live --locked --no-run

work="$(mktemp -d "${TMPDIR:-/tmp}/cassette.XXXXXX")"
pids=()
# Stops the processes this shell (or lane) started.
stop_all() {
    for pid in "${pids[@]}"; do
        if kill -0 "$pid" 2>/dev/null; then
            kill -TERM "$pid" 2>/dev/null || true
            wait "$pid" 2>/dev/null || true
        fi
    done
}
cleanup() {
    stop_all
    if [ -n "${CASSETTE_KEEP:-}" ]; then
        mkdir -p "$CASSETTE_KEEP"
        cp "$work"/*/*.jsonl "$work"/*/*.json "$CASSETTE_KEEP"/ 2>/dev/null || true
    fi
    rm -rf "$work"
}
trap cleanup EXIT

# Waits until the process $1 prints `$2 listening on` in the file $3.
await_listening() {
    local pid="$1" what="$2" out="$3"
    for _ in $(seq 1 100); do
        grep -q "^$what listening on " "$out" 2>/dev/null && return 0
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    cat "$out" "$out.err" >&2 2>/dev/null || true
    die "$what did not start within 10 s"
}

# Stops the process $1 with SIGTERM and returns its exit status.
stop() {
    kill -TERM "$1" 2>/dev/null || true
    local status=0
    wait "$1" || status=$?
    return "$status"
}

# Starts a fakekube process with the live fixtures in the directory $1; sets fakekube_pid.
start_fakekube() {
    "$FAKEKUBE" --kubeconfig "$1/admin.kubeconfig" --kubernetes-minor 33 \
        --role-token "cassette-role-token=fixtures/rbac/differently-sandboxes-role.yaml" \
        --role-kubeconfig "$1/role.kubeconfig" --missing-image "$MISSING_IMAGE" \
        >"$1/fakekube.out" 2>"$1/fakekube.out.err" &
    fakekube_pid=$!
    pids+=("$fakekube_pid")
    await_listening "$fakekube_pid" fakekube "$1/fakekube.out"
    "$KUBECTL" --kubeconfig "$1/admin.kubeconfig" apply \
        -f fixtures/live/namespace.yaml -f fixtures/live/warm-pool.yaml >/dev/null 2>&1 ||
        die "kubectl could not apply the live fixtures"
}

# Serves the cassette $1 with `fakekube replay`, kubeconfigs in the directory $2; sets
# replay_pid and replay_out.
start_replay() {
    replay_out="${1%.jsonl}.replay.out"
    "$FAKEKUBE" replay "$1" --kubeconfig-dir "$2" >"$replay_out" 2>"$replay_out.err" &
    replay_pid=$!
    pids+=("$replay_pid")
    await_listening "$replay_pid" "fakekube replay" "$replay_out"
}

# Stops the replay started last; fails, printing why, unless it served every request asked.
stop_replay() {
    if ! stop "$replay_pid"; then
        cat "$replay_out.err" >&2
        die "the replay stopped at a request it does not record"
    fi
    tail -n 1 "$replay_out"
}

main_job() {
    "$CONFORMANCE" --fast "$@"
}

live_checks() {
    local kubeconfig="$1" observer="$2"
    shift 2
    env KUBECONFIG="$kubeconfig" LIVE_OBSERVER_KUBECONFIG="$observer" LIVE_REQUIRE_CLUSTER=1 \
        LIVE_MISSING_IMAGE="$MISSING_IMAGE" LIVE_MISSING_IMAGE_MARKED=1 "$@" \
        cargo test -p live --features live --test live --locked -q -- live::
}

# The main job: recorded against its own fakekube process, then replayed without it.
main_lane() (
    trap stop_all EXIT
    dir="$work/main"
    mkdir -p "$dir"
    echo "== main job: record against a fakekube process (conformance --record)"
    start_fakekube "$dir"
    main_job --kubeconfig "$dir/role.kubeconfig" --record "$dir/main.jsonl" \
        --json "$dir/recorded.json" >"$dir/recorded.out" 2>&1 ||
        { cat "$dir/recorded.out"; die "the recorded main job failed"; }
    grep -E '^(recorded|wall time)' "$dir/recorded.out"
    stop "$fakekube_pid" || die "fakekube did not stop cleanly"
    echo "== main job: replay with no fakekube running"
    start_replay "$dir/main.jsonl" "$dir/replay"
    main_job --kubeconfig "$dir/replay/default.kubeconfig" --json "$dir/replayed.json" \
        >"$dir/replayed.out" 2>&1 || true
    stop_replay
    "$CONFORMANCE" compare "$dir/recorded.json" "$dir/replayed.json"
)

# The live checks: recorded against their own fakekube process, then replayed without it.
live_lane() (
    trap stop_all EXIT
    dir="$work/live"
    mkdir -p "$dir"
    echo "== live checks: record against a fakekube process (LIVE_RECORD)"
    start_fakekube "$dir"
    live_checks "$dir/role.kubeconfig" "$dir/admin.kubeconfig" \
        LIVE_RECORD="$dir/live.jsonl" LIVE_CHECKS_JSON="$dir/recorded.json" \
        >"$dir/recorded.out" 2>&1 ||
        { cat "$dir/recorded.out"; die "the recorded live checks failed"; }
    grep -E '^(total|live: recorded)' "$dir/recorded.out"
    stop "$fakekube_pid" || die "fakekube did not stop cleanly"
    echo "== live checks: replay with no fakekube running"
    start_replay "$dir/live.jsonl" "$dir/replay"
    live_checks "$dir/replay/default.kubeconfig" "$dir/replay/observer.kubeconfig" \
        LIVE_CHECKS_JSON="$dir/replayed.json" >"$dir/replayed.out" 2>&1 || true
    stop_replay
    "$CONFORMANCE" compare "$dir/recorded.json" "$dir/replayed.json"
)

echo "== 1, 2. the main job and the live checks, recorded then replayed (side by side)"
# Both lanes mostly wait on their servers, so they share the machine well.
main_lane >"$work/main.log" 2>&1 &
main_pid=$!
live_lane >"$work/live.log" 2>&1 &
live_pid=$!
failed=0
wait "$main_pid" || failed=1
cat "$work/main.log"
wait "$live_pid" || failed=1
cat "$work/live.log"
[ "$failed" = 0 ] || die "recording or replaying failed (see above)"
cassette="$work/main/main.jsonl"
echo "== the main job's cassette: $(grep -c '"type":"exchange"' "$cassette") exchanges, $(wc -l <"$cassette") lines, $(($(wc -c <"$cassette") / 1024)) KiB"

echo "== 3. a cassette with one answer altered stops its replay at the request it changes"
python3 - "$cassette" "$work/altered.jsonl" <<'PY'
import json, sys

source, target = sys.argv[1], sys.argv[2]
lines = open(source).read().splitlines()
records = [json.loads(line) for line in lines[1:]]
exchanges = sorted(
    ((r["id"], i) for i, r in enumerate(records) if r["type"] == "exchange"),
)
# The first exec whose pod a direct Sandbox names, and the last read of that Sandbox before it:
# its answer gets another pod name, so the adapter execs into a pod the cassette never saw.
altered = None
for exec_id, exec_index in exchanges:
    path = records[exec_index]["request"]["path"]
    if not path.endswith("/exec"):
        continue
    pod = path.split("/")[-2]
    for ex_id, ex_index in reversed([e for e in exchanges if e[0] < exec_id]):
        request, response = records[ex_index]["request"], records[ex_index]["response"]
        if request["method"] == "GET" and request["path"].endswith("/sandboxes/" + pod) \
                and response["status"] == 200:
            meta = response["body"]["metadata"]
            meta.setdefault("annotations", {})["agents.x-k8s.io/pod-name"] = "altered-pod"
            altered = (ex_id, request["path"], pod)
            break
    if altered:
        break
if not altered:
    sys.exit("no Sandbox read before an exec to alter")
lines[1:] = [json.dumps(r, separators=(",", ":")) for r in records]
open(target, "w").write("\n".join(lines) + "\n")
print("altered the answer of exchange %d (GET %s): pod-name %s -> altered-pod" % altered)
PY
start_replay "$work/altered.jsonl" "$work/altered.replay"
main_job --kubeconfig "$work/altered.replay/default.kubeconfig" >"$work/altered.out" 2>&1 &
job_pid=$!
pids+=("$job_pid")
# The replay stops by itself at the altered request; the job, left without a server, is
# stopped then.
for _ in $(seq 1 600); do
    kill -0 "$replay_pid" 2>/dev/null || break
    sleep 0.1
done
if stop "$replay_pid"; then
    die "the replay of the altered cassette did not stop at a request"
fi
stop "$job_pid" || true
if ! grep -q 'matches no recorded exchange' "$replay_out.err" ||
    ! grep -q '^!.*/pods/altered-pod/exec' "$replay_out.err"; then
    cat "$replay_out.err" >&2
    die "the replay did not show the altered request side by side"
fi
cat "$replay_out.err"
echo "== record and replay: same verdicts, and the altered answer was caught"
