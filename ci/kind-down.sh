#!/usr/bin/env bash
# Removes what ci/kind-up.sh made: the kind cluster and the kubeconfigs it wrote under
# target/live/. Idempotent: with nothing to remove it says so and succeeds. Needs docker (or
# podman with KIND_EXPERIMENTAL_PROVIDER=podman) and kind.
#
# Settings (environment): LIVE_KIND_CLUSTER (default agent-sandbox-live), LIVE_OUT_DIR (default
# target/live).
set -euo pipefail
cd "$(dirname "$0")/.."

CLUSTER="${LIVE_KIND_CLUSTER:-agent-sandbox-live}"
OUT_DIR="${LIVE_OUT_DIR:-target/live}"
PROVIDER="${KIND_EXPERIMENTAL_PROVIDER:-docker}"

die() {
    printf 'kind-down: error: %s\n' "$*" >&2
    exit 1
}

say() {
    printf 'kind-down: %s\n' "$*"
}

command -v "$PROVIDER" >/dev/null 2>&1 ||
    die "$PROVIDER is not installed, so there is no kind cluster to remove (kind runs its nodes as $PROVIDER containers)."
"$PROVIDER" info >/dev/null 2>&1 ||
    die "$PROVIDER is installed but its engine does not answer ('$PROVIDER info' failed): start it, then run this again."
command -v kind >/dev/null 2>&1 ||
    die "kind is not installed, so it cannot remove the cluster; 'docker ps --filter label=io.x-k8s.kind.cluster=$CLUSTER' shows its node if any."

if kind get clusters 2>/dev/null | grep -qx "$CLUSTER"; then
    say "deleting cluster $CLUSTER"
    kind delete cluster --name "$CLUSTER"
else
    say "no cluster $CLUSTER; nothing to delete"
fi
rm -f "$OUT_DIR/kind.kubeconfig" "$OUT_DIR/kind-observer.kubeconfig" "$OUT_DIR/kind-admin.kubeconfig"
say "done"
