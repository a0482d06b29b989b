#!/usr/bin/env bash
# The project's test command (README.md): formatting, lints, and the whole test suite.
# Needs only the Rust toolchain, Go and the kubectl binaries this machine kind ships; it installs
# anything else the tests need under target/ (the upstream control plane's binaries in the user's
# cache, ci/upstream-build.sh) and works offline after the first run.
set -euo pipefail
cd "$(dirname "$0")/.."

# Everything the run prints and writes is kept here for the credential scan (the last step),
# with every secret fakekube makes recorded beside it.
scan="$(realpath -m "${CARGO_TARGET_DIR:-target}")/ci-output"
rm -rf "$scan"
mkdir -p "$scan"
export FAKEKUBE_SECRET_LOG="$scan/secrets.log"
export CASSETTE_KEEP="$scan/cassettes"

echo "== cargo fmt --check"
cargo fmt --all -- --check

echo "== cargo clippy"
# `live/live` lints the feature-gated live crate too (its test needs a cluster; see below).
cargo clippy --workspace --all-targets --features live/live --locked -- -D warnings

echo "== import cycles between modules (ci/module-cycles.py)"
python3 ci/module-cycles.py contract/src adapter/src fakekube/src fakekube/machinery/src \
    fakekube/apiserver/src fakekube/printers/src fakekube/schema/src fakekube/kubelet/src fakekube/controllers/src \
    fakekube/runtime/src fakekube/programs/src fakekube/cassette/src conformance/src \
    conformance/runner/src conformance/protocol/src live/src

echo "== Python venvs for the exec tests (ci/python-venv.sh)"
bash ci/python-venv.sh

echo "== cargo test"
cargo test --workspace --locked 2>&1 | tee "$scan/cargo-test.log"

echo "== the fault soak: the main job, the adapter, the live tests and conformance --kubeconfig under chaos, seed 1 (ci/soak.sh)"
bash ci/soak.sh --seed 1 --seconds 10 2>&1 | tee "$scan/soak.log"

echo "== shellcheck ci/*.sh"
if ! command -v shellcheck >/dev/null 2>&1; then
    # Debian's package, installed once; later runs need no network.
    apt-get install -y -qq shellcheck >/dev/null 2>&1 ||
        { apt-get update -qq >/dev/null 2>&1 && apt-get install -y -qq shellcheck >/dev/null 2>&1; } ||
        { echo "shellcheck is missing and apt-get could not install it" >&2; exit 1; }
fi
shellcheck ci/*.sh

echo "== live tests against a fakekube process (ci/live.sh)"
LIVE_JSON_DIR="$scan/live-fake" bash ci/live.sh 2>&1 | tee "$scan/live.log"

echo "== record against a fakekube process, then replay without it (ci/cassette.sh)"
bash ci/cassette.sh 2>&1 | tee "$scan/cassette.log"

echo "== fakekube against the upstream control plane (ci/upstream-compare.sh)"
bash ci/upstream-compare.sh --fake-reports "$scan/live-fake" 2>&1 | tee "$scan/upstream-compare.log"

echo "== the credential scan of every output and report (ci/credential-scan.sh)"
bash ci/credential-scan.sh "$scan"
