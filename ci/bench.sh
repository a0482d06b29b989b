#!/usr/bin/env bash
# The benchmarks (never run as tests): fakekube's start time and GET/LIST throughput, exec round
# trip and stdout throughput against a raw TLS copy, the adapter's create -> ready, exec round
# trip and 1,000 concurrent sandboxes, and the main job's wall time, all in release.
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== fakekube API: start time, GETs and LISTs per second"
cargo bench -p fakekube --bench api --locked

echo "== fakekube exec: round trip of true, stdout throughput vs raw TLS copy"
cargo bench -p fakekube --bench exec --locked

echo "== the adapter: create -> ready, exec round trip, a command through an open shell, 1,000 sandboxes at once"
# The bench also runs the 1,000 against this binary, to measure the fake's RSS alone.
cargo build --release -p fakekube --bin fakekube --locked
cargo bench -p agentsandbox --bench provider --locked

echo "== the main job (conformance suite on the embedded fakekube), wall time"
cargo build --release -p conformance-runner --locked
cargo run --release -q -p conformance-runner --locked -- --fake |
    grep -E '^(wall time|leak check)|passed, .* failed'
