#!/usr/bin/env bash
# The watch load, through fakekube and through the upstream stack, side by side: 1,000
# concurrent watches of ConfigMaps over 10 namespaces while 10,000 ConfigMaps are written
# (fakekube/benches/watchload.rs, through kube-rs). Each run fails when a watcher misses an
# event, sees one twice or out of resourceVersion order, or gets an error event; each prints its
# write rate, its delivery, and the server's memory before, at the peak, as the load ends and
# 10 s and 30 s later (fakekube's process; kube-apiserver and etcd together for upstream).
#
#   bash ci/watch-load.sh [--quick] [--fakekube-only]
#
# --quick: 100 watches and 1,000 writes. --fakekube-only: no upstream stack. The upstream side
# starts the stack of ci/upstream-up.sh in target/upstream-watch-load without nodes (nothing
# here runs a pod) and stops it at the end. Not part of ci/test.sh: it is a measurement.
set -euo pipefail
cd "$(dirname "$0")/.."

quick=()
upstream=1
while [ $# -gt 0 ]; do
    case "$1" in
        --quick) quick=(--quick); shift ;;
        --fakekube-only) upstream=0; shift ;;
        -h|--help) sed -n '2,14p' "$0"; exit 0 ;;
        *) echo "watch-load: unknown argument $1" >&2; exit 2 ;;
    esac
done

echo "== load: $(uptime | sed 's/.*load average/load average/') on $(nproc) cores"
echo "== through a fakekube process"
cargo bench -p fakekube --bench watchload --locked -- "${quick[@]}"

[ "$upstream" = 1 ] || exit 0
# Absolute: cargo bench runs the bench in its package directory, not here.
UPSTREAM_DIR="$PWD/target/upstream-watch-load"
export UPSTREAM_DIR
stop_upstream() {
    bash ci/upstream-down.sh >/dev/null 2>&1 || echo "watch-load: warning: upstream-down failed" >&2
}
trap stop_upstream EXIT
echo "== through the upstream stack (kube-apiserver and etcd of ci/upstream-up.sh, no nodes)"
UPSTREAM_NODES=0 bash ci/upstream-up.sh | grep '^upstream-up: ready' || true
cargo bench -p fakekube --bench watchload --locked -- "${quick[@]}" \
    --kubeconfig "$UPSTREAM_DIR/kubeconfig" \
    --pid "$(cat "$UPSTREAM_DIR/pids/kube-apiserver.pid")" --pid "$(cat "$UPSTREAM_DIR/pids/etcd.pid")"
