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

# Where the time goes: each step's wall time, printed as a table when the run ends (passed or
# not), and after `cargo test` its slowest test binaries.
step_names=()
step_secs=()
step_began=$SECONDS
step_current=""
end_step() {
    if [ -n "$step_current" ]; then
        step_names+=("$step_current")
        step_secs+=($((SECONDS - step_began)))
    fi
    step_current=""
}
step() {
    end_step
    step_current="$1"
    step_began=$SECONDS
    echo "== $1"
}
times() {
    end_step
    echo "== wall time by step ($(nproc) cores, load at the end:$(uptime | sed 's/.*load average://'))"
    local i
    for i in "${!step_names[@]}"; do
        printf '%6d s  %s\n' "${step_secs[$i]}" "${step_names[$i]%% (*}"
    done
    printf '%6d s  in all\n' "$SECONDS"
}
trap times EXIT

step "cargo fmt --check"
cargo fmt --all -- --check

step "cargo clippy"
# `live/live` lints the feature-gated live crate too (its test needs a cluster; see below).
cargo clippy --workspace --all-targets --features live/live --locked -- -D warnings

step "import cycles between modules (ci/module-cycles.py)"
python3 ci/module-cycles.py contract/src adapter/src fakekube/src fakekube/machinery/src \
    fakekube/apiserver/src fakekube/printers/src fakekube/schema/src fakekube/kubelet/src fakekube/controllers/src \
    fakekube/runtime/src fakekube/programs/src fakekube/cassette/src conformance/src \
    conformance/runner/src conformance/protocol/src live/src

step "Python venvs for the exec tests (ci/python-venv.sh)"
bash ci/python-venv.sh

step "cargo test"
cargo test --workspace --locked 2>&1 | tee "$scan/cargo-test.log"
# The ten slowest test binaries, from libtest's "finished in" of each.
awk '/^ *Running /{name=$2} /^test result:/{for(i=1;i<=NF;i++) if($i=="in"){sub(/s$/,"",$(i+1)); printf "%8.1f s  %s\n", $(i+1), name}}' \
    "$scan/cargo-test.log" | sort -rn | head -10

step "the fault soak: the main job, the adapter, the live tests and conformance --kubeconfig under chaos, seed 1 (ci/soak.sh)"
bash ci/soak.sh --seed 1 --seconds 10 2>&1 | tee "$scan/soak.log"

step "shellcheck ci/*.sh"
if ! command -v shellcheck >/dev/null 2>&1; then
    # Debian's package, installed once; later runs need no network.
    apt-get install -y -qq shellcheck >/dev/null 2>&1 ||
        { apt-get update -qq >/dev/null 2>&1 && apt-get install -y -qq shellcheck >/dev/null 2>&1; } ||
        { echo "shellcheck is missing and apt-get could not install it" >&2; exit 1; }
fi
shellcheck ci/*.sh

step "live tests against a fakekube process (ci/live.sh)"
LIVE_JSON_DIR="$scan/live-fake" bash ci/live.sh 2>&1 | tee "$scan/live.log"

step "record against a fakekube process, then replay without it (ci/cassette.sh)"
bash ci/cassette.sh 2>&1 | tee "$scan/cassette.log"

step "fakekube against the upstream control plane (ci/upstream-compare.sh)"
bash ci/upstream-compare.sh --fake-reports "$scan/live-fake" 2>&1 | tee "$scan/upstream-compare.log"

step "the credential scan of every output and report (ci/credential-scan.sh)"
bash ci/credential-scan.sh "$scan"
