#!/usr/bin/env bash
# The benchmarks (never run as tests): fakekube's start time and GET/LIST throughput, exec round
# trip and stdout throughput against a raw TLS copy, the adapter's create -> ready, exec round
# trip and 1,000 concurrent sandboxes, 10,000 beside 1,000 (not with --quick), the main job's
# wall time, one side-by-side table from one run: exec round trip and 100 MiB of stdout through
# the adapter, kube-rs, the Python client and kubectl 1.33 on one fakekube binary, with
# fakekube's start beside the binary's start as a user runs it; and last, upstream as a row:
# the cluster bench (fakekube/benches/cluster.rs: GET, LIST, exec round trip and throughput
# beside the raw TLS floor, a direct Sandbox's create -> Ready) against a fakekube process and
# against the upstream control plane of ci/upstream-up.sh (started fresh in
# target/upstream-bench, timed from its spawn to its ready line, stopped at the end), paired in
# one table with ratios, the fakekube binary's start beside the stack's. All in release.
#
# Usage: ci/bench.sh [--quick] [--no-upstream | --upstream-only]
#   --quick          fewer iterations (each bench prints its counts); under two minutes once
#                    built, plus the upstream stack's start when it runs.
#   --no-upstream    skip the upstream section (it is skipped anyway, with a message, when `go`
#                    is not installed: ci/upstream-up.sh needs it).
#   --upstream-only  only the upstream section.
set -euo pipefail
cd "$(dirname "$0")/.."

quick=()
upstream=1
others=1
while [ $# -gt 0 ]; do
    case "$1" in
        --quick) quick=(--quick) ;;
        --no-upstream) upstream=0 ;;
        --upstream-only) others=0 ;;
        *)
            echo "usage: ci/bench.sh [--quick] [--no-upstream | --upstream-only]" >&2
            exit 2
            ;;
    esac
    shift
done
if [ "$upstream" = 0 ] && [ "$others" = 0 ]; then
    echo "bench: --no-upstream and --upstream-only leave nothing to run" >&2
    exit 2
fi

echo "== load: $(uptime | sed 's/.*load average/load average/') on $(nproc) cores"

# The adapter's benches and the upstream stack's nodes run this binary.
cargo build --release -p fakekube --bin fakekube --locked

# Every section before the upstream one.
run_others() {
    # The Python client's row needs its venv (no network once made); without it the row says so.
    bash ci/python-venv.sh || echo "== no Python venv: the side-by-side table skips the Python client"

    echo "== fakekube API: start time, GETs and LISTs per second"
    cargo bench -p fakekube --bench api --locked -- "${quick[@]}"

    echo "== fakekube exec: round trip of true, stdout throughput vs raw TLS copy"
    cargo bench -p fakekube --bench exec --locked -- "${quick[@]}"

    echo "== the adapter: create -> ready, exec round trip, a command through an open shell, 1,000 sandboxes at once"
    # The bench also runs the 1,000 against the binary, to measure the fake's RSS alone.
    cargo bench -p agentsandbox --bench provider --locked -- "${quick[@]}"

    if [ ${#quick[@]} -eq 0 ]; then
        echo "== scale: 1,000 then 10,000 sandboxes at once against the fakekube binary (wall time, RSS)"
        cargo bench -p agentsandbox --bench scale --locked
    fi

    echo "== the main job (conformance suite on the embedded fakekube), wall time"
    cargo build --release -p conformance-runner --locked
    cargo run --release -q -p conformance-runner --locked -- --fake |
        grep -E '^(wall time|leak check)|passed, .* failed'

    echo "== side by side: the adapter, kube-rs, the Python client and kubectl on one fakekube binary"
    cargo bench -p agentsandbox --bench compare --locked -- "${quick[@]}"
}

# Milliseconds since the epoch.
now_ms() {
    echo $(($(date +%s%N) / 1000000))
}

stop_upstream() {
    bash ci/upstream-down.sh >/dev/null 2>&1 || echo "bench: warning: ci/upstream-down.sh failed" >&2
}

# Upstream as a row: the cluster bench against a fakekube process (the bench spawns the release
# binary and times its start) and against the upstream stack, then the two side by side.
run_upstream() {
    if [ "$upstream" = 0 ]; then
        echo "== upstream as a row: skipped (--no-upstream)"
        return 0
    fi
    if ! command -v go >/dev/null 2>&1; then
        echo "== upstream as a row: skipped (no go: ci/upstream-up.sh builds and finds the stack with it)"
        return 0
    fi
    echo "== upstream as a row: the cluster bench against a fakekube process and against the upstream stack"
    local out="$PWD/target/upstream-bench-results"
    mkdir -p "$out"
    cargo bench -p fakekube --bench cluster --no-run --locked

    echo "-- against a fakekube process (the release binary, spawned by the bench)"
    cargo bench -p fakekube --bench cluster --locked -- "${quick[@]}" | tee "$out/fakekube.txt"

    # Absolute: cargo bench runs the bench in its package directory, not here.
    UPSTREAM_DIR="$PWD/target/upstream-bench"
    FAKEKUBE_BIN="$PWD/target/release/fakekube"
    export UPSTREAM_DIR FAKEKUBE_BIN
    trap stop_upstream EXIT
    # A fresh start: nothing left from an earlier run (its etcd data, its ports).
    stop_upstream
    echo "-- the upstream stack: spawn of ci/upstream-up.sh (UPSTREAM_DIR=$UPSTREAM_DIR)"
    local spawned ready_at="" ready_line="" line
    spawned="$(now_ms)"
    while IFS= read -r line; do
        printf '%s\n' "$line" >>"$out/upstream-up.log"
        case "$line" in
            "upstream-up: ready"*)
                ready_at="$(now_ms)"
                ready_line="$line"
                ;;
        esac
    done < <(bash ci/upstream-up.sh 2>&1)
    if [ -z "$ready_at" ]; then
        tail -n 30 "$out/upstream-up.log" >&2
        echo "bench: ci/upstream-up.sh did not print its ready line; see $out/upstream-up.log" >&2
        return 1
    fi
    local stack_ms=$((ready_at - spawned))
    echo "$ready_line"
    echo "stack spawn -> ready line: $stack_ms ms"

    echo "-- against the upstream stack ($UPSTREAM_DIR/kubeconfig)"
    cargo bench -p fakekube --bench cluster --locked -- "${quick[@]}" \
        --kubeconfig "$UPSTREAM_DIR/kubeconfig" | tee "$out/upstream.txt"
    stop_upstream
    trap - EXIT

    echo
    echo "== upstream as a row: side by side (load: $(uptime | sed 's/.*load average/load average/') on $(nproc) cores${quick[*]:+, --quick})"
    echo "start: fakekube = the binary's spawn -> its URL line; upstream = ci/upstream-up.sh's spawn -> its ready line"
    echo "(etcd, kube-apiserver /readyz, controllers, CRDs, the agent-sandbox controller, nodes, warm pool)"
    echo "ratio: upstream/fakekube for times, fakekube/upstream for rates (above 1: fakekube is faster)"
    {
        grep -P '^row\t' "$out/fakekube.txt" | sed 's/^/fakekube\t/'
        grep -P '^row\t' "$out/upstream.txt" | sed 's/^/upstream\t/'
        printf 'upstream\trow\tstart_ms\t%s\tms\n' "$stack_ms"
    } | awk -F'\t' '
        {
            if (!($3 in unit)) { order[++n] = $3 }
            unit[$3] = $5
            value[$1, $3] = $4
        }
        function cell(v) { return v == "" ? "-" : (v >= 100 ? sprintf("%.0f", v) : sprintf("%.2f", v)) }
        function line(name, f, u, un,   ratio) {
            ratio = "-"
            if (f != "" && u != "" && f > 0 && u > 0) {
                if (un == "ms") ratio = sprintf("%.1fx", u / f)
                else if (un != "x") ratio = sprintf("%.1fx", f / u)
            }
            printf "%-28s %-6s %12s %12s %9s\n", name, un, cell(f), cell(u), ratio
        }
        END {
            printf "%-28s %-6s %12s %12s %9s\n", "figure", "unit", "fakekube", "upstream", "ratio"
            # the start first, then the first Sandbox after it, then the rest in the bench order
            line("start_ms", value["fakekube", "start_ms"], value["upstream", "start_ms"], "ms")
            f = value["fakekube", "start_ms"] + value["fakekube", "sandbox_first_ready_ms"]
            u = value["upstream", "start_ms"] + value["upstream", "sandbox_first_ready_ms"]
            line("start+first_sandbox_ms", f, u, "ms")
            for (i = 1; i <= n; i++) {
                if (order[i] == "start_ms") continue
                line(order[i], value["fakekube", order[i]], value["upstream", order[i]], unit[order[i]])
            }
        }'
    echo "(start+first_sandbox_ms: the start plus the bench's first Sandbox create -> Ready, made in a new namespace as the bench begins)"
}

if [ "$others" = 1 ]; then
    run_others
fi
run_upstream
