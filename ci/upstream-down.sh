#!/usr/bin/env bash
# Stops the upstream control plane of ci/upstream-up.sh and removes its state: each process
# named by a pid file under target/upstream/pids/ gets SIGTERM, then SIGKILL after 10 s if it is
# still there (nodes and controllers first, etcd last); then the etcd data, certificates,
# kubeconfigs and ports go. The logs stay in target/upstream/logs/ until the next start.
# Idempotent: with nothing running it only removes what is left.
#
# Settings (environment): UPSTREAM_DIR (default target/upstream).
set -euo pipefail
cd "$(dirname "$0")/.."

DIR="${UPSTREAM_DIR:-target/upstream}"
PIDS="$DIR/pids"

say() {
    printf 'upstream-down: %s\n' "$*"
}

# The pid of a pid file, if that process is alive and still the one started (its command line
# names the same program as when upstream-up.sh logged it).
live_pid() {
    local pidfile=$1 pid
    pid="$(cat "$pidfile" 2>/dev/null || true)"
    case "$pid" in '' | *[!0-9]*) return 1 ;; esac
    kill -0 "$pid" 2>/dev/null || return 1
    local name exe
    name="$(basename "$pidfile" .pid)"
    exe="$(sed -n 's/^== [^ ]* \([^ ]*\) .*/\1/p' "$DIR/logs/$name.log" 2>/dev/null | tail -n 1)"
    if [ -n "$exe" ] && ! tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF -- "$exe"; then
        return 1
    fi
    printf '%s' "$pid"
}

stop_group() {
    local names=("$@") pids=() name pid
    for name in "${names[@]}"; do
        for pidfile in "$PIDS"/$name.pid; do
            [ -e "$pidfile" ] || continue
            if pid="$(live_pid "$pidfile")"; then
                say "stopping $(basename "$pidfile" .pid) (pid $pid)"
                kill -TERM "$pid" 2>/dev/null || true
                pids+=("$pid")
            fi
            rm -f "$pidfile"
        done
    done
    [ "${#pids[@]}" -gt 0 ] || return 0
    local deadline=$((SECONDS + 10)) alive
    while :; do
        alive=()
        for pid in "${pids[@]}"; do
            if kill -0 "$pid" 2>/dev/null; then alive+=("$pid"); fi
        done
        [ "${#alive[@]}" -gt 0 ] || return 0
        if [ "$SECONDS" -ge "$deadline" ]; then
            say "SIGKILL to ${alive[*]} (still running 10 s after SIGTERM)"
            kill -KILL "${alive[@]}" 2>/dev/null || true
            return 0
        fi
        sleep 0.2
    done
}

if [ -d "$PIDS" ]; then
    stop_group 'node-*'
    stop_group agent-sandbox-controller kube-scheduler kube-controller-manager
    stop_group kube-apiserver
    stop_group etcd
fi
if [ -d "$DIR" ]; then
    find "$DIR" -mindepth 1 -maxdepth 1 ! -name logs -exec rm -rf {} +
fi
say "stopped; state removed (logs kept in $DIR/logs/)"
