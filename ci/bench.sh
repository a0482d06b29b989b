#!/usr/bin/env bash
# The benchmarks (never run as tests): fakekube's start time and GET/LIST throughput, exec round
# trip and stdout throughput against a raw TLS copy, the adapter's create -> ready, exec round
# trip and 1,000 concurrent sandboxes, 10,000 beside 1,000 (not with --quick), the main job's
# wall time, and last one side-by-side table from one run: exec round trip and 100 MiB of
# stdout through the adapter, kube-rs, the Python client and kubectl 1.33 on one fakekube
# binary, with fakekube's start beside the binary's start as a user runs it. All in release.
#
# Usage: ci/bench.sh [--quick]
#   --quick  fewer iterations (each bench prints its counts); under two minutes once built.
set -euo pipefail
cd "$(dirname "$0")/.."

quick=()
case "${1:-}" in
    --quick) quick=(--quick) ;;
    "") ;;
    *)
        echo "usage: ci/bench.sh [--quick]" >&2
        exit 2
        ;;
esac

# The Python client's row needs its venv (no network once made); without it the row says so.
bash ci/python-venv.sh || echo "== no Python venv: the side-by-side table skips the Python client"

# The adapter's benches run against this binary.
cargo build --release -p fakekube --bin fakekube --locked

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
