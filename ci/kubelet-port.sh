#!/usr/bin/env bash
# The kubelet port of a node of the upstream stack (ci/upstream-up.sh with UPSTREAM_NODES >= 1:
# `fakekube kubelet` processes) asked with curl as a real kubelet's port would be, and answered
# as a kubelet with --client-ca-file, webhook authentication and authorization and no anonymous
# access answers (pkg/kubelet/server/server.go's auth filter, Kubernetes 1.36):
#
#   anonymous             GET /pods, no credentials            401 Unauthorized
#   anonymous exec        POST /exec/..., no credentials       401 Unauthorized
#   wrong certificate     GET /pods, a client certificate      401 Unauthorized (the kubelet's TLS
#                         of another CA, for the API server's  only requests a certificate, Go's
#                         user in system:masters               tls.RequestClientCert; its x509
#                                                              authenticator refuses it) or a TLS
#                                                              failure
#   token without proxy   GET /pods, a ServiceAccount token    403 Forbidden (user=system:service
#                         (kubectl create token) bound to      account:NS:NAME, verb=get, resource
#                         nothing                              =nodes, subresource(s)=[pods proxy])
#   API server's cert     GET /pods, pki/apiserver-kubelet-    200, a PodList
#                         client.crt (the API server's
#                         --kubelet-client-certificate)
#
# It prints each case's HTTP status and the first line of its body, and exits 1 when one differs
# from what is expected (2 for a setup problem). The port is the one the Node advertises
# (status.daemonEndpoints.kubeletEndpoint.Port), on 127.0.0.1. The ServiceAccount it creates
# (and its token, never printed) is deleted at the end.
#
# Settings (environment): UPSTREAM_DIR (default target/upstream), NODE (default upstream-node-1),
# KUBECTL (default the kubectl of the upstream build, ci/upstream-build.sh), NAMESPACE (default
# default), PKI_BIN (default the pki helper of the upstream build).
set -euo pipefail
cd "$(dirname "$0")/.."

DIR="${UPSTREAM_DIR:-target/upstream}"
NODE="${NODE:-upstream-node-1}"
NAMESPACE="${NAMESPACE:-default}"
readonly ACCOUNT="kubelet-port-probe"

die() {
    printf 'kubelet-port: error: %s\n' "$*" >&2
    exit 2
}

[ -s "$DIR/kubeconfig" ] || die "no $DIR/kubeconfig: start the stack first (UPSTREAM_NODES=2 ci/upstream-up.sh)"
[ -s "$DIR/pki/apiserver-kubelet-client.crt" ] || die "no $DIR/pki/apiserver-kubelet-client.crt"
command -v curl >/dev/null 2>&1 || die "curl is not installed"
if [ -z "${KUBECTL:-}" ] || [ -z "${PKI_BIN:-}" ]; then
    BIN="$(ci/upstream-build.sh 2>/dev/null | tail -n 1)"
    [ -x "$BIN/kubectl" ] || die "ci/upstream-build.sh did not give a bin directory"
    KUBECTL="${KUBECTL:-$BIN/kubectl}"
    PKI_BIN="${PKI_BIN:-$BIN/pki}"
fi

k() {
    "$KUBECTL" --kubeconfig "$DIR/kubeconfig" "$@"
}

port="$(k get node "$NODE" -o jsonpath='{.status.daemonEndpoints.kubeletEndpoint.Port}')" ||
    die "no Node $NODE (is the stack up with nodes?)"
if [ -z "$port" ] || [ "$port" = 0 ]; then
    die "Node $NODE advertises no kubelet port"
fi
BASE="https://127.0.0.1:$port"

SCRATCH="$(mktemp -d)"
cleanup() {
    k -n "$NAMESPACE" delete serviceaccount "$ACCOUNT" --ignore-not-found --wait=false >/dev/null 2>&1 || true
    rm -rf "$SCRATCH"
}
trap cleanup EXIT

# A CA that is not the cluster's, and a client certificate it signs for the very user the API
# server's certificate names.
"$PKI_BIN" ca -dir "$SCRATCH" -name stranger-ca -cn stranger-ca
"$PKI_BIN" cert -dir "$SCRATCH" -ca stranger-ca -name stranger -client \
    -cn kube-apiserver-kubelet-client -o system:masters

# A ServiceAccount bound to nothing, and a token for it, kept in a header file (mode 600) so
# that it is never on a command line or in the output.
k -n "$NAMESPACE" create serviceaccount "$ACCOUNT" --dry-run=client -o yaml | k apply -f - >/dev/null
(
    umask 077
    printf 'Authorization: Bearer %s\n' \
        "$(k -n "$NAMESPACE" create token "$ACCOUNT" --duration=10m)" >"$SCRATCH/token.header"
)

failures=0

# check NAME STATUS BODY CURL-ARGS...: asks the kubelet port, prints the status and the body's
# first line, and counts a failure when the status is not STATUS ("401|TLS" accepts either) or
# the first line is not BODY: "=TEXT" the whole line, "~TEXT" a part of it.
check() {
    local name=$1 expected=$2 pattern=$3
    shift 3
    local code rc=0 first verdict=""
    code="$(curl -sS -k --max-time 20 -o "$SCRATCH/body" -w '%{http_code}' "$@" 2>"$SCRATCH/err")" || rc=$?
    if [ "$rc" -ne 0 ] && [ "${code:-000}" = 000 ]; then
        code="TLS"
        first="$(head -n 1 "$SCRATCH/err")"
        printf '%-20s curl exit %s: %s\n' "$name" "$rc" "$first"
    else
        first="$(head -n 1 "$SCRATCH/body" 2>/dev/null | cut -c1-160 || true)"
        printf '%-20s HTTP %s  %s\n' "$name" "$code" "$first"
        case $pattern in
            =*) [ "$first" = "${pattern#=}" ] || verdict="the first line '${pattern#=}'" ;;
            *) [[ $first == *"${pattern#\~}"* ]] || verdict="a first line holding '${pattern#\~}'" ;;
        esac
    fi
    case "|$expected|" in
        *"|$code|"*) ;;
        *) verdict="status $expected${verdict:+ and $verdict}" ;;
    esac
    if [ -n "$verdict" ]; then
        printf '%-20s ^ expected %s\n' "" "$verdict"
        failures=$((failures + 1))
    fi
    return 0
}

forbidden="Forbidden (user=system:serviceaccount:$NAMESPACE:$ACCOUNT, verb=get, resource=nodes, subresource(s)=[pods proxy])"
printf 'kubelet-port: node %s, kubelet API %s\n' "$NODE" "$BASE"
check "anonymous" 401 "=Unauthorized" "$BASE/pods"
check "anonymous exec" 401 "=Unauthorized" -X POST "$BASE/exec/$NAMESPACE/any/main?command=sh&output=1"
check "wrong certificate" "401|TLS" "=Unauthorized" \
    --cert "$SCRATCH/stranger.crt" --key "$SCRATCH/stranger.key" "$BASE/pods"
check "token without proxy" 403 "=$forbidden" -H "@$SCRATCH/token.header" "$BASE/pods"
check "API server's cert" 200 '~"kind":"PodList"' \
    --cert "$DIR/pki/apiserver-kubelet-client.crt" --key "$DIR/pki/apiserver-kubelet-client.key" \
    "$BASE/pods"

if [ "$failures" -ne 0 ]; then
    printf 'kubelet-port: %s case(s) answered otherwise than a kubelet answers\n' "$failures"
    exit 1
fi
printf 'kubelet-port: every case answered as a kubelet answers\n'
