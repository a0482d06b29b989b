#!/usr/bin/env bash
# Creates the kind cluster of the live runs (live/README.md) and everything they need:
#   - a kind cluster on a pinned node image (kindest/node v1.33.1, by digest);
#   - agent-sandbox v1.0.8 with its extensions (the release's sandbox-with-extensions.yaml);
#   - the namespace `sandboxes`, the seed's Role (fixtures/rbac/) bound to the service account
#     live-runner, with a long-lived token Secret; a read-only live-observer for the run's own
#     checks (fixtures/live/kind/access.yaml);
#   - the SandboxTemplate live-debian (envVarsInjectionPolicy: Allowed) and the SandboxWarmPool
#     live-warm (fixtures/live/warm-pool.yaml);
#   - two kubeconfigs that hold only those service accounts' tokens, under target/live/.
# Idempotent: a second run reuses the cluster and re-applies everything. ci/kind-down.sh removes
# it. Needs docker (or podman with KIND_EXPERIMENTAL_PROVIDER=podman), kind, kubectl and curl.
#
# Settings (environment): LIVE_KIND_CLUSTER (default agent-sandbox-live), LIVE_OUT_DIR (default
# target/live), LIVE_KIND_NODE_IMAGE (default the pinned image), KUBECTL (default kubectl),
# AGENT_SANDBOX_MANIFEST_SHA256 (checked when set).
set -euo pipefail
cd "$(dirname "$0")/.."

readonly KIND_VERSION_PINNED="v0.29.0"
readonly NODE_IMAGE_PINNED="kindest/node:v1.33.1@sha256:050072256b9a903bd914c0b2866828150cb229cea0efe5892e2b644d5dd3b34f"
readonly AGENT_SANDBOX_VERSION="v1.0.8"
readonly AGENT_SANDBOX_URL="https://github.com/kubernetes-sigs/agent-sandbox/releases/download/${AGENT_SANDBOX_VERSION}/sandbox-with-extensions.yaml"
readonly NAMESPACE="sandboxes"
# The RBAC part (shared with ci/live.sh): access_apply, access_secret_token,
# access_write_kubeconfig, access_check_runner.
# shellcheck source=ci/access.sh
. ci/access.sh
readonly WARM_POOL="live-warm"

CLUSTER="${LIVE_KIND_CLUSTER:-agent-sandbox-live}"
OUT_DIR="${LIVE_OUT_DIR:-target/live}"
NODE_IMAGE="${LIVE_KIND_NODE_IMAGE:-$NODE_IMAGE_PINNED}"
KUBECTL="${KUBECTL:-kubectl}"
PROVIDER="${KIND_EXPERIMENTAL_PROVIDER:-docker}"

die() {
    printf 'kind-up: error: %s\n' "$*" >&2
    exit 1
}

say() {
    printf 'kind-up: %s\n' "$*"
}

# Checks every tool before touching anything.
check_tools() {
    command -v "$PROVIDER" >/dev/null 2>&1 ||
        die "$PROVIDER is not installed. kind runs the cluster's node as a container: install Docker (https://docs.docker.com/engine/install/), or set KIND_EXPERIMENTAL_PROVIDER=podman with Podman installed."
    "$PROVIDER" info >/dev/null 2>&1 ||
        die "$PROVIDER is installed but its engine does not answer ('$PROVIDER info' failed): start the Docker daemon (or Docker Desktop, Colima, Podman machine) and check that this user may use it."
    command -v kind >/dev/null 2>&1 ||
        die "kind is not installed. Install kind $KIND_VERSION_PINNED: 'go install sigs.k8s.io/kind@$KIND_VERSION_PINNED', or a release binary from https://kind.sigs.k8s.io/docs/user/quick-start/#installation"
    command -v "$KUBECTL" >/dev/null 2>&1 ||
        die "kubectl ($KUBECTL) is not installed: https://kubernetes.io/docs/tasks/tools/ (or set KUBECTL to its path)"
    command -v curl >/dev/null 2>&1 ||
        die "curl is not installed; it downloads the agent-sandbox release manifests"
    local version
    version="$(kind version 2>/dev/null || true)"
    case "$version" in
        *"$KIND_VERSION_PINNED "* | *"$KIND_VERSION_PINNED") ;;
        *) say "warning: kind is '$version'; the pinned node image was released with kind $KIND_VERSION_PINNED" ;;
    esac
}

# kubectl against the cluster as its admin (kind's own kubeconfig).
k() {
    "$KUBECTL" --kubeconfig "$OUT_DIR/kind-admin.kubeconfig" "$@"
}

create_cluster() {
    if kind get clusters 2>/dev/null | grep -qx "$CLUSTER"; then
        say "cluster $CLUSTER exists; reusing it"
    else
        say "creating cluster $CLUSTER on $NODE_IMAGE"
        kind create cluster --name "$CLUSTER" --image "$NODE_IMAGE" \
            --config fixtures/live/kind/cluster.yaml --wait 180s
    fi
    mkdir -p "$OUT_DIR"
    (
        umask 077
        kind get kubeconfig --name "$CLUSTER" >"$OUT_DIR/kind-admin.kubeconfig"
    )
}

install_agent_sandbox() {
    local manifest="$OUT_DIR/agent-sandbox-$AGENT_SANDBOX_VERSION-sandbox-with-extensions.yaml"
    if [ ! -s "$manifest" ]; then
        say "downloading $AGENT_SANDBOX_URL"
        curl --fail --silent --show-error --location --retry 3 -o "$manifest.tmp" "$AGENT_SANDBOX_URL" ||
            die "cannot download $AGENT_SANDBOX_URL"
        mv "$manifest.tmp" "$manifest"
    fi
    if [ -n "${AGENT_SANDBOX_MANIFEST_SHA256:-}" ]; then
        echo "$AGENT_SANDBOX_MANIFEST_SHA256  $manifest" | sha256sum --check --quiet ||
            die "$manifest does not have the sha256 AGENT_SANDBOX_MANIFEST_SHA256 names"
    fi
    say "installing agent-sandbox $AGENT_SANDBOX_VERSION with extensions"
    # Server-side apply: the CRDs are too large for client-side apply's annotation.
    k apply --server-side --force-conflicts -f "$manifest" >/dev/null
    k wait --for=condition=Established --timeout=120s \
        crd/sandboxes.agents.x-k8s.io \
        crd/sandboxtemplates.extensions.agents.x-k8s.io \
        crd/sandboxwarmpools.extensions.agents.x-k8s.io \
        crd/sandboxclaims.extensions.agents.x-k8s.io >/dev/null
    k -n agent-sandbox-system wait --for=condition=Available --timeout=300s deployment --all >/dev/null ||
        die "the agent-sandbox controller did not become available; see: kubectl -n agent-sandbox-system get pods"
}

apply_fixtures() {
    say "applying the namespace, the seed's Role, the service accounts and the warm pool"
    access_apply
    k apply -f fixtures/live/warm-pool.yaml >/dev/null
}

write_kubeconfigs() {
    access_write_kubeconfig "$OUT_DIR/kind.kubeconfig" live-runner \
        "$(access_secret_token live-runner-token)" "$CLUSTER"
    access_write_kubeconfig "$OUT_DIR/kind-observer.kubeconfig" live-observer \
        "$(access_secret_token live-observer-token)" "$CLUSTER"
    access_check_runner "$OUT_DIR/kind.kubeconfig"
}

wait_warm_pool() {
    say "waiting for the warm pool $WARM_POOL (pulls debian:bookworm-slim the first time)"
    k -n "$NAMESPACE" wait --for=jsonpath='{.status.readyReplicas}'=2 \
        "sandboxwarmpool/$WARM_POOL" --timeout=300s >/dev/null ||
        die "the warm pool has no two ready members after 300 s; see: kubectl -n $NAMESPACE get sandboxes,pods"
}

check_tools
create_cluster
install_agent_sandbox
apply_fixtures
write_kubeconfigs
wait_warm_pool
say "ready. Run the live tests with:"
printf '  export KUBECONFIG=%s\n' "$PWD/$OUT_DIR/kind.kubeconfig"
printf '  export LIVE_OBSERVER_KUBECONFIG=%s\n' "$PWD/$OUT_DIR/kind-observer.kubeconfig"
printf '  cargo test -p live --features live\n'
