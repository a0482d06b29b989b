# shellcheck shell=bash
# The live runs' identities, shared by ci/kind-up.sh (on kind) and ci/live.sh (on a fakekube
# process), so that both clusters get exactly the same RBAC: sourced, not run.
#
# - access_apply: the namespace, the seed's Role (fixtures/rbac/) and fixtures/live/kind/access.yaml
#   (the service accounts live-runner and live-observer, their bindings and token Secrets);
# - access_secret_token SECRET: the token the token controller wrote into a token Secret;
# - access_write_kubeconfig PATH USER TOKEN CLUSTER: a kubeconfig holding only that token;
# - access_check_runner KUBECONFIG: the runner may do what the seed's Role allows, nothing more.
#
# The caller defines k (kubectl as the cluster's admin), die (prints and exits) and KUBECTL, and
# runs from the workspace root. NAMESPACE is the namespace of the live runs.

: "${NAMESPACE:=sandboxes}"

access_apply() {
    k apply -f fixtures/live/namespace.yaml \
        -f fixtures/rbac/differently-sandboxes-role.yaml \
        -f fixtures/live/kind/access.yaml >/dev/null
}

# Prints the token of a service-account-token Secret once the token controller filled it in
# (polls for up to 60 s; on fakekube the first read usually has it).
access_secret_token() {
    local secret=$1 data="" tries=0
    while [ -z "$data" ]; do
        data="$(k -n "$NAMESPACE" get secret "$secret" -o 'jsonpath={.data.token}' 2>/dev/null || true)"
        if [ -z "$data" ]; then
            tries=$((tries + 1))
            [ "$tries" -le 300 ] || die "the Secret $NAMESPACE/$secret has no token after 60 s"
            sleep 0.2
        fi
    done
    printf '%s' "$data" | base64 -d
}

# Writes a kubeconfig that authenticates with nothing but a service account's token; the server
# and CA are the admin kubeconfig's.
access_write_kubeconfig() {
    local path=$1 user=$2 token=$3 cluster=$4 server ca
    server="$(k config view --raw --minify -o 'jsonpath={.clusters[0].cluster.server}')"
    ca="$(k config view --raw --minify -o 'jsonpath={.clusters[0].cluster.certificate-authority-data}')"
    if [ -z "$server" ] || [ -z "$ca" ]; then
        die "the admin kubeconfig has no server or CA"
    fi
    (
        umask 077
        cat >"$path.tmp" <<KUBECONFIG
apiVersion: v1
kind: Config
clusters:
- name: $cluster
  cluster:
    server: $server
    certificate-authority-data: $ca
users:
- name: $user
  user:
    token: $token
contexts:
- name: $user@$cluster
  context:
    cluster: $cluster
    user: $user
    namespace: $NAMESPACE
current-context: $user@$cluster
KUBECONFIG
    )
    mv "$path.tmp" "$path"
}

# The pools' token may do what the seed's Role allows, and nothing else.
access_check_runner() {
    local runner=("$KUBECTL" --kubeconfig "$1" -n "$NAMESPACE" auth can-i)
    [ "$("${runner[@]}" create sandboxes.agents.x-k8s.io 2>/dev/null)" = "yes" ] ||
        die "live-runner may not create Sandboxes; the Role binding did not take"
    [ "$("${runner[@]}" list services 2>/dev/null || true)" = "no" ] ||
        die "live-runner may list Services: it holds more than the seed's Role"
}
