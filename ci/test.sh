#!/usr/bin/env bash
# The project's test command (README.md): formatting, lints, and the whole test suite.
# Needs only the Rust toolchain and the kubectl binaries this machine kind ships; it installs
# anything else the tests need under target/ and works offline after the first run.
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== cargo fmt --check"
cargo fmt --all -- --check

echo "== cargo clippy"
cargo clippy --workspace --all-targets --locked -- -D warnings

echo "== cargo test"
cargo test --workspace --locked
