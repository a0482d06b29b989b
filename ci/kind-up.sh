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
    k apply -f fixtures/live/namespace.yaml >/dev/null
    k apply -f fixtures/rbac/differently-sandboxes-role.yaml -f fixtures/live/kind/access.yaml >/dev/null
    k apply -f fixtures/live/warm-pool.yaml >/dev/null
}

# Prints the token of a service-account-token Secret once the token controller filled it in.
secret_token() {
    local secret=$1 data="" tries=0
    while [ -z "$data" ]; do
        data="$(k -n "$NAMESPACE" get secret "$secret" -o 'jsonpath={.data.token}' 2>/dev/null || true)"
        if [ -z "$data" ]; then
            tries=$((tries + 1))
            [ "$tries" -le 60 ] || die "the Secret $NAMESPACE/$secret has no token after 60 s"
            sleep 1
        fi
    done
    printf '%s' "$data" | base64 -d
}

# Writes a kubeconfig that authenticates with nothing but a service account's token.
write_kubeconfig() {
    local path=$1 user=$2 token=$3 server ca
    server="$(k config view --raw --minify -o 'jsonpath={.clusters[0].cluster.server}')"
    ca="$(k config view --raw --minify -o 'jsonpath={.clusters[0].cluster.certificate-authority-data}')"
    if [ -z "$server" ] || [ -z "$ca" ]; then
        die "kind's kubeconfig has no server or CA"
    fi
    (
        umask 077
        cat >"$path.tmp" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: $CLUSTER
  cluster:
    server: $server
    certificate-authority-data: $ca
users:
- name: $user
  user:
    token: $token
contexts:
- name: $user@$CLUSTER
  context:
    cluster: $CLUSTER
    user: $user
    namespace: $NAMESPACE
current-context: $user@$CLUSTER
EOF
    )
    mv "$path.tmp" "$path"
}

write_kubeconfigs() {
    write_kubeconfig "$OUT_DIR/kind.kubeconfig" live-runner "$(secret_token live-runner-token)"
    write_kubeconfig "$OUT_DIR/kind-observer.kubeconfig" live-observer "$(secret_token live-observer-token)"
    # The pools' token may do what the seed's Role allows, and nothing else.
    local runner=("$KUBECTL" --kubeconfig "$OUT_DIR/kind.kubeconfig" -n "$NAMESPACE" auth can-i)
    [ "$("${runner[@]}" create sandboxes.agents.x-k8s.io 2>/dev/null)" = "yes" ] ||
        die "live-runner may not create Sandboxes; the Role binding did not take"
    [ "$("${runner[@]}" list services 2>/dev/null || true)" = "no" ] ||
        die "live-runner may list Services: it holds more than the seed's Role"
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
