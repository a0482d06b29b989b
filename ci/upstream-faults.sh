#!/usr/bin/env bash
# Faults of a real control plane, caused for real: the main job and the live tests run through
# the adapter against the upstream stack of ci/upstream-up.sh (Kubernetes 1.36, the
# agent-sandbox controller, fakekube kubelets as nodes) while a seeded schedule
#   - kills kube-apiserver (SIGKILL) and starts it again,
#   - kills etcd (SIGKILL) and starts it again (same data directory),
#   - pauses the agent-sandbox controller, kube-controller-manager or kube-scheduler (SIGSTOP)
#     for longer than the main job's timeouts (its --fast pools wait 20 s for a sandbox), then
#     lets it go on (SIGCONT); a controller that lost its leader-election lease meanwhile exits,
#     as it does in a cluster, and is started again;
# and kube-apiserver compacts etcd every few seconds with the watch cache off for pods,
# Sandboxes and SandboxClaims, so that the watches of the controllers and of the kubelets
# expire (410 Gone) and must list again; a watch from the run's first resourceVersion is asked
# at the end to show that they did.
#
# The main job runs as `conformance --kubeconfig runner.kubeconfig --fast --chaos` and the live
# tests with LIVE_CHAOS=1, in turns, until --seconds have passed: every trial that fails must
# fail with a contract code a fault explains (the runs' own check), none may hang (each has a
# time limit), and the reconcile of each run deletes what its cleanups could not. Both skip the
# TTL backstop trials (ttl::backstop*, ttl::moved_expiry*): the backstop is the controller's
# own timer, so a paused controller that deletes a sandbox late, or by the shutdown time its
# stale cache still holds, is the fault itself, with no contract code for a trial to judge;
# ci/upstream-compare.sh runs them against the same stack without faults. The live checks that
# fixtures/upstream/known-check-differences.txt lists fail against this stack without faults
# too (its reason for each), so they are skipped as well. Both runs count permission_denied as
# a code a fault explains too (--chaos-explains, LIVE_CHAOS_EXPLAINS): a kube-apiserver killed
# and started again answers 403 for a few seconds, until its RBAC authorizer's caches have
# synced, to every client, as upstream does. The main job's streaming trials keep a cluster's
# 500 ms gap (--stream-gap) between the outputs they must tell apart: the API server relays
# stdout and stderr on streams of their own, and on a loaded machine --fast's 100 ms was once
# too short for one to stay behind the other. At the end,
# with every process running again, this script counts with kubectl as the cluster's admin
# (a client of its own) what the adapter's runs left: Sandboxes not of the warm pool,
# SandboxClaims, and pods, Services and PVCs not of a warm-pool Sandbox, after giving the
# garbage collector time to act. It must find 0.
#
#   bash ci/upstream-faults.sh [--seconds N] [--seed N | --random-seed] [--pause S]
#       [--gap-min S] [--gap-max S] [--compaction DURATION] [--keep]
#
# --seconds (default 300; 900 or more by hand): how long runs are started; the run in flight
# then ends. --seed: the fault schedule (kinds, gaps, outages, pauses) is a function of it.
# --pause (default 30): the shortest pause of a controller, in seconds; each is 0-14 s longer.
# --gap-min/--gap-max (default 20/50): seconds between faults. --compaction (default 10s): the
# API server's --etcd-compaction-interval. --keep: leave the stack running at the end.
#
# It prints the seed first and, at the end, the faults injected by kind, the operations by
# outcome and error code (of both the main job and the live tests), the trials and checks by
# verdict, the runs that failed or hung, and the objects left. Exit 0 only when no run failed
# and nothing was left. Its stack lives in target/upstream-faults (UPSTREAM_DIR), apart from
# ci/upstream-compare.sh's; the runs' logs in target/upstream-faults-run/.
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=300
seed=1
pause=30
gap_min=20
gap_max=50
compaction=10s
keep=0
while [ $# -gt 0 ]; do
    case "$1" in
        --seconds) seconds="$2"; shift 2 ;;
        --seed) seed="$2"; shift 2 ;;
        --random-seed) seed="$(od -An -N2 -tu2 /dev/urandom | tr -d ' ')"; shift ;;
        --pause) pause="$2"; shift 2 ;;
        --gap-min) gap_min="$2"; shift 2 ;;
        --gap-max) gap_max="$2"; shift 2 ;;
        --compaction) compaction="$2"; shift 2 ;;
        --keep) keep=1; shift ;;
        -h|--help) sed -n '2,44p' "$0"; exit 0 ;;
        *) echo "upstream-faults: unknown argument $1" >&2; exit 2 ;;
    esac
done
for n in "$seconds" "$seed" "$pause" "$gap_min" "$gap_max"; do
    case "$n" in '' | *[!0-9]*) echo "upstream-faults: $n is not a whole number" >&2; exit 2 ;; esac
done
[ "$gap_max" -ge "$gap_min" ] || { echo "upstream-faults: --gap-max is below --gap-min" >&2; exit 2; }

TARGET="${CARGO_TARGET_DIR:-target}"
KUBECTL="${KUBECTL:-/usr/lib/google-cloud-sdk/bin/kubectl.1.33}"
NAMESPACE="sandboxes"
OUT="target/upstream-faults-run"
export UPSTREAM_DIR="${UPSTREAM_DIR:-target/upstream-faults}"
# Watches of these kinds are served from etcd, not the watch cache: once etcd compacted past a
# watch's resourceVersion, its restart is answered 410 Gone.
export UPSTREAM_APISERVER_ARGS="--etcd-compaction-interval=$compaction --watch-cache-sizes=pods#0,sandboxes.agents.x-k8s.io#0,sandboxclaims.extensions.agents.x-k8s.io#0"
PIDS="$UPSTREAM_DIR/pids"
# A main job or live run that has not ended after this long hangs.
readonly MAIN_LIMIT=900
readonly LIVE_LIMIT=1500
# libtest filters of both runs: the TTL backstop trials and the known differences (see above).
SKIP=(--skip ttl::backstop --skip ttl::moved_expiry)
while read -r name _; do
    case "$name" in '' | '#'*) continue ;; esac
    SKIP+=(--skip "$name")
done <fixtures/upstream/known-check-differences.txt
readonly SKIP

say() {
    printf 'upstream-faults: %s\n' "$*"
}

die() {
    printf 'upstream-faults: error: %s\n' "$*" >&2
    exit 1
}

admin() {
    "$KUBECTL" --kubeconfig "$UPSTREAM_DIR/kubeconfig" "$@"
}

rm -rf "$OUT"
mkdir -p "$OUT"
echo "== upstream-faults: seed $seed; runs for ${seconds}s; a fault every ${gap_min}-${gap_max}s; pauses ${pause}-$((pause + 14))s; etcd compacted every $compaction"

echo "== cargo build -p fakekube -p conformance-runner, and the live tests"
cargo build -p fakekube -p conformance-runner --locked
cargo test -p live --features live --locked --no-run

# ---- the fault schedule, in the background; it stops when $OUT/stop exists.
pid_of() {
    cat "$PIDS/$1.pid" 2>/dev/null || true
}

alive() {
    local pid
    pid="$(pid_of "$1")"
    [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null
}

# Sleeps up to $1 seconds; false when the run is over.
nap() {
    local until=$((SECONDS + $1))
    while [ "$SECONDS" -lt "$until" ]; do
        [ ! -e "$OUT/stop" ] || return 1
        sleep 1
    done
}

# Starts again what is not running (ci/upstream-up.sh --restart); tries a few times, since
# etcd or the API server may still be coming back.
restart_stack() {
    local try
    for try in 1 2 3 4 5; do
        if bash ci/upstream-up.sh --restart >>"$OUT/restarts.log" 2>&1; then
            return 0
        fi
        echo "  restart try $try failed; see $OUT/restarts.log"
        sleep 2
    done
    return 1
}

kill_and_start() {
    local name=$1 down=$((1 + RANDOM % 5)) pid started
    pid="$(pid_of "$name")"
    echo "$(date -u +%T) fault kill-$name: SIGKILL pid $pid, down ${down}s"
    kill -KILL "$pid" 2>/dev/null || echo "  $name (pid $pid) was not running"
    sleep "$down"
    started=$SECONDS
    restart_stack || echo "  FAILED to start $name again"
    echo "  $name back in $((SECONDS - started))s"
}

pause_and_go_on() {
    local name=$1 held=$((pause + RANDOM % 15)) pid
    pid="$(pid_of "$name")"
    echo "$(date -u +%T) fault stop-$name: SIGSTOP pid $pid for ${held}s"
    kill -STOP "$pid" 2>/dev/null || echo "  $name (pid $pid) was not running"
    nap "$held" || true
    kill -CONT "$pid" 2>/dev/null || true
    sleep 5
    if ! alive "$name"; then
        echo "  $name exited after SIGCONT (its log: $(tail -n 1 "$UPSTREAM_DIR/logs/$name.log" | cut -c1-160)); starting it again"
        restart_stack || echo "  FAILED to start $name again"
    fi
}

readonly FAULTS=(kube-apiserver etcd agent-sandbox-controller kube-controller-manager kube-scheduler)

inject_faults() {
    RANDOM=$seed
    local name gap
    while :; do
        gap=$((gap_min + RANDOM % (gap_max - gap_min + 1)))
        nap "$gap" || return 0
        name="${FAULTS[RANDOM % ${#FAULTS[@]}]}"
        case "$name" in
            kube-apiserver | etcd) kill_and_start "$name" ;;
            *) pause_and_go_on "$name" ;;
        esac
    done
}

fault_pid=""
finish() {
    touch "$OUT/stop"
    [ -z "$fault_pid" ] || wait "$fault_pid" 2>/dev/null || true
    local name
    for name in "${FAULTS[@]}"; do
        [ -z "$(pid_of "$name")" ] || kill -CONT "$(pid_of "$name")" 2>/dev/null || true
    done
    if [ "$keep" = 1 ]; then
        say "the stack keeps running (--keep): KUBECONFIG=$UPSTREAM_DIR/kubeconfig; stop it with UPSTREAM_DIR=$UPSTREAM_DIR ci/upstream-down.sh"
    else
        bash ci/upstream-down.sh >"$OUT/upstream-down.log" 2>&1 || say "warning: upstream-down failed; see $OUT/upstream-down.log"
    fi
}
trap finish EXIT

echo "== the upstream control plane in $UPSTREAM_DIR (ci/upstream-up.sh)"
FAKEKUBE_BIN="$TARGET/debug/fakekube" UPSTREAM_REQUIRE_NODES=1 bash ci/upstream-up.sh >"$OUT/up.log" 2>&1 ||
    { tail -n 30 "$OUT/up.log" >&2; die "the stack did not start; see $OUT/up.log"; }
grep '^upstream-up: ready' "$OUT/up.log" || true
first_rv="$(admin get --raw "/api/v1/namespaces/$NAMESPACE/pods?limit=1" 2>/dev/null |
    python3 -c 'import json, sys; print(json.load(sys.stdin)["metadata"]["resourceVersion"])' 2>/dev/null || true)"

inject_faults >"$OUT/faults.log" 2>&1 &
fault_pid=$!

# ---- the runs, in turns, until the time is up.
deadline=$((SECONDS + seconds))
round=0
: >"$OUT/runs.txt"
while [ "$SECONDS" -lt "$deadline" ]; do
    round=$((round + 1))
    log="$OUT/main-$round.log"
    started=$SECONDS
    status=0
    timeout --kill-after=30 "$MAIN_LIMIT" "$TARGET/debug/conformance" \
        --kubeconfig "$UPSTREAM_DIR/runner.kubeconfig" --fast --stream-gap 500 --chaos --chaos-explains permission_denied "${SKIP[@]}" >"$log" 2>&1 || status=$?
    echo "main $round $status $((SECONDS - started)) $log" >>"$OUT/runs.txt"
    say "the main job, run $round: exit $status in $((SECONDS - started)) s"
    [ "$SECONDS" -lt "$deadline" ] || break
    log="$OUT/live-$round.log"
    started=$SECONDS
    status=0
    KUBECONFIG="$PWD/$UPSTREAM_DIR/runner.kubeconfig" \
        LIVE_OBSERVER_KUBECONFIG="$PWD/$UPSTREAM_DIR/observer.kubeconfig" \
        LIVE_REQUIRE_CLUSTER=1 LIVE_CHAOS=1 LIVE_CHAOS_EXPLAINS=permission_denied \
        timeout --kill-after=30 "$LIVE_LIMIT" cargo test -p live --features live --locked -- "${SKIP[@]}" >"$log" 2>&1 || status=$?
    echo "live $round $status $((SECONDS - started)) $log" >>"$OUT/runs.txt"
    say "the live tests, run $round: exit $status in $((SECONDS - started)) s"
done

echo "== the faults stop; every process runs again"
touch "$OUT/stop"
wait "$fault_pid" || true
fault_pid=""
for name in "${FAULTS[@]}"; do
    kill -CONT "$(pid_of "$name")" 2>/dev/null || true
done
restart_stack || die "the stack did not come back; see $OUT/restarts.log"

# ---- what was left, counted as the admin, once the garbage collector had its time.
leaks() {
    admin -n "$NAMESPACE" get sandboxes.agents.x-k8s.io,sandboxclaims.extensions.agents.x-k8s.io,pods,services,persistentvolumeclaims -o json |
        python3 -c '
import json, sys
items = json.load(sys.stdin)["items"]
def owners(o, kind):
    return [r["name"] for r in o["metadata"].get("ownerReferences", []) if r.get("kind") == kind]
# The warm pool keeps its own Sandboxes (owned by the SandboxWarmPool) and their objects.
warm = {o["metadata"]["name"] for o in items
        if o["kind"] == "Sandbox" and owners(o, "SandboxWarmPool")}
for o in items:
    kind, name = o["kind"], o["metadata"]["name"]
    if kind == "Sandbox" and name in warm:
        continue
    if kind in ("Pod", "Service", "PersistentVolumeClaim") and any(n in warm for n in owners(o, "Sandbox")):
        continue
    # What holds it: a deletion not finished (finalizers, a kubelet that did not confirm),
    # or an owner the garbage collector has not acted for.
    m, why = o["metadata"], []
    if m.get("deletionTimestamp"):
        why.append("deleting since " + m["deletionTimestamp"])
    if m.get("finalizers"):
        why.append("finalizers " + ",".join(m["finalizers"]))
    refs = [r["kind"] + "/" + r["name"] for r in m.get("ownerReferences", [])]
    if refs:
        why.append("owner " + ",".join(refs))
    phase = o.get("status", {}).get("phase")
    if phase:
        why.append(f"phase {phase}")
    node = o.get("spec", {}).get("nodeName")
    if node:
        why.append(f"node {node}")
    print(f"{kind}/{name} (" + "; ".join(why) + ")")
'
}
say "waiting up to 180 s for the garbage collector and the kubelets to remove what deleted objects own"
left=""
for _ in $(seq 1 90); do
    left="$(leaks 2>"$OUT/leaks.err")" || left="(listing failed: $(head -c 200 "$OUT/leaks.err"))"
    [ -n "$left" ] || break
    sleep 2
done

expired="(no resourceVersion was read at the start)"
if [ -n "$first_rv" ]; then
    expired="$(admin get --raw "/api/v1/namespaces/$NAMESPACE/pods?watch=1&resourceVersion=$first_rv&timeoutSeconds=1" 2>&1 |
        grep -o '"code":410' | head -n 1 || true)"
    if [ -n "$expired" ]; then
        expired="410 Gone (etcd was compacted past it)"
    else
        expired="no 410: the watch was served"
    fi
fi

# ---- the summary.
echo "== summary (seed $seed, ${seconds}s of runs)"
python3 - "$OUT" <<'PY'
import collections, os, re, sys
out = sys.argv[1]
faults = collections.Counter()
with open(os.path.join(out, "faults.log")) as f:
    text = f.read()
for m in re.finditer(r"fault (\S+):", text):
    faults[m.group(1)] += 1
exits = len(re.findall(r"exited after SIGCONT", text))
print(f"faults injected: {sum(faults.values())} ({', '.join(f'{k} {v}' for k, v in sorted(faults.items())) or 'none'})"
      + (f"; {exits} paused controller(s) exited on SIGCONT and were started again" if exits else ""))
ops = collections.Counter()
codes = collections.Counter()
verdicts = collections.Counter()
explained = collections.Counter()
unexplained = []
runs = []
with open(os.path.join(out, "runs.txt")) as f:
    for line in f:
        what, n, status, took, log = line.split()
        runs.append((what, int(n), int(status), int(took)))
        with open(log, errors="replace") as l:
            body = l.read()
        # The calls by operation and outcome: "  create: ok 12, unavailable 1".
        block = re.search(r"(?:chaos|live: chaos): \d+ (?:provider|pool) calls, by operation and outcome:\n((?:  \S+: .*\n)*)", body)
        if block:
            for row in block.group(1).splitlines():
                op, outcomes = row.strip().split(": ", 1)
                for part in outcomes.split(", "):
                    outcome, count = part.rsplit(" ", 1)
                    ops[op] += int(count)
                    codes[outcome] += int(count)
        for m in re.finditer(r"(suite trials|trials|live checks): (\d+) passed, (\d+) failed with a code a fault explains \(([^)]*)\), (\d+) unexplained", body):
            kind = "live checks" if m.group(1) == "live checks" else "suite trials"
            verdicts[(kind, "passed")] += int(m.group(2))
            verdicts[(kind, "explained")] += int(m.group(3))
            verdicts[(kind, "unexplained")] += int(m.group(5))
            for part in filter(None, m.group(4).split(", ")):
                code, count = part.rsplit(" ", 1)
                explained[code] += int(count)
        unexplained += [f"{what} {n}: {u}" for u in re.findall(r"UNEXPLAINED (.*)", body)]
total = sum(codes.values())
print(f"operations: {total} adapter calls ({', '.join(f'{op} {n}' for op, n in sorted(ops.items()))})")
print(f"  by outcome: {', '.join(f'{c} {n}' for c, n in sorted(codes.items(), key=lambda x: -x[1]))}")
for kind in ("suite trials", "live checks"):
    print(f"{kind}: {verdicts[(kind, 'passed')]} passed, {verdicts[(kind, 'explained')]} failed with a code a fault explains, {verdicts[(kind, 'unexplained')]} unexplained")
print(f"failures by code: {', '.join(f'{c} {n}' for c, n in sorted(explained.items())) or 'none'}")
for u in unexplained:
    print(f"  UNEXPLAINED {u}")
print(f"runs: {len(runs)} ({sum(1 for r in runs if r[0] == 'main')} of the main job, {sum(1 for r in runs if r[0] == 'live')} of the live tests)")
for what, n, status, took in runs:
    if status != 0:
        why = "HUNG (killed at its time limit)" if status in (124, 137) else f"exit {status}"
        print(f"  FAILED: {what} run {n}: {why} after {took}s (see {out}/{what}-{n}.log)")
PY
say "a watch from the run's first resourceVersion: $expired"
if [ -z "$left" ]; then
    say "objects left: 0"
else
    say "objects left: $(printf '%s\n' "$left" | wc -l):"
    printf '%s\n' "$left" | sed 's/^/    /' >&2
fi
failed_runs="$(awk '$3 != 0' "$OUT/runs.txt" | wc -l)"
if [ "$failed_runs" -ne 0 ] || [ -n "$left" ]; then
    die "$failed_runs run(s) failed, $(printf '%s' "$left" | grep -c . || true) object(s) left"
fi
say "every run passed or failed only with codes the faults explain, and nothing was left"
