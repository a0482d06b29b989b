#!/usr/bin/env bash
# The fault soak (adapter/tests/soak.rs): the main job's operations through the adapter from
# several workers while fakekube injects a seeded random mix of faults, the token is rotated
# and pods are deleted under running execs; every operation must end in success or an
# explained contract code within its timeout, and nothing may be left after the reconcile.
# Not part of ci/test.sh (a soak is long by design): CI can run it as a step of its own with the fixed
# default seed for 60 s; by hand, run it longer with a random seed:
#
#   bash ci/soak.sh [--seconds N] [--seed N | --random-seed] [--rate R] [--workers N]
#
# It prints the seed first (a failing run is reproduced with it) and a summary last:
# operations, errors by code, faults injected by kind.
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=60
seed=1
rate=0.03
workers=4
while [ $# -gt 0 ]; do
    case "$1" in
        --seconds) seconds="$2"; shift 2 ;;
        --seed) seed="$2"; shift 2 ;;
        --random-seed) seed="$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')"; shift ;;
        --rate) rate="$2"; shift 2 ;;
        --workers) workers="$2"; shift 2 ;;
        -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
        *) echo "soak: unknown argument $1" >&2; exit 2 ;;
    esac
done
echo "== soak: seed $seed, rate $rate, $workers workers, ${seconds}s"
SOAK_SECONDS="$seconds" SOAK_SEED="$seed" SOAK_RATE="$rate" SOAK_WORKERS="$workers" \
    cargo test -p agentsandbox --test soak --locked -- --ignored --nocapture
