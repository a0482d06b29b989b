#!/usr/bin/env bash
# Starts the real upstream control plane as local processes, every listener on 127.0.0.1
# (live/README.md, "Against the upstream control plane"):
#   - etcd, kube-apiserver (Node,RBAC), kube-controller-manager and kube-scheduler of
#     Kubernetes 1.36, and the agent-sandbox controller (the release's args, extensions on),
#     built once by ci/upstream-build.sh into a cache outside the clone;
#   - the agent-sandbox CRDs, namespace, service account and RBAC of the module version that
#     ci/upstream-build.sh builds the controller from (its k8s/ kustomization as `kubectl
#     kustomize` renders it, all but the Deployment and Service: the controller runs here as a
#     process, with a kubeconfig holding its service account's token, so that the release's RBAC
#     is what authorizes it);
#   - what ci/kind-up.sh applies for the live runs (ci/access.sh: the namespace sandboxes, the
#     seed's Role, live-runner and live-observer with their token Secrets; the SandboxTemplate and
#     SandboxWarmPool of fixtures/live/warm-pool.yaml);
#   - UPSTREAM_NODES nodes (default 2), each a `fakekube kubelet` process.
# It writes, under target/upstream/: kubeconfig (admin, client certificate, as kind's),
# runner.kubeconfig and observer.kubeconfig (the two service-account tokens, as kind-up.sh's),
# ports.env (every port, chosen free at the first start), logs/, pids/, nodes/NAME.kubeconfig,
# pki/. It ends when /readyz is ok, the CRDs are Established and the controller is healthy.
# Idempotent: a second run reuses what runs (same ports) and starts what does not.
# ci/upstream-down.sh stops everything and removes the state.
#
#   bash ci/upstream-up.sh [--restart]
#
# --restart (for a running stack whose processes were killed, as ci/upstream-faults.sh kills
# them): only starts again the control plane's processes that are not running (the same
# settings give them the arguments of the first start) and waits for their health; nothing is
# installed or applied and the nodes are left as they are.
#
# Settings (environment): UPSTREAM_DIR (default target/upstream), UPSTREAM_NODES (default 2),
# UPSTREAM_REQUIRE_NODES (1: no fakekube kubelet is an error, not a warning), FAKEKUBE_BIN
# (default target/debug/fakekube), KUBECTL (default the kubectl of the upstream build),
# UPSTREAM_APISERVER_ARGS (more kube-apiserver flags, split on spaces, such as
# ci/upstream-faults.sh's short etcd compaction interval), and those of ci/upstream-build.sh.
set -euo pipefail
cd "$(dirname "$0")/.."

restart_only=0
while [ $# -gt 0 ]; do
    case "$1" in
        --restart) restart_only=1; shift ;;
        -h|--help) sed -n '2,34p' "$0"; exit 0 ;;
        *) echo "upstream-up: unknown argument $1" >&2; exit 2 ;;
    esac
done

NAMESPACE="sandboxes"
readonly SYSTEM_NS="agent-sandbox-system"
readonly CONTROLLER_SA="agent-sandbox-controller"
readonly MODULE_DIR="live/upstream"
readonly AGENT_SANDBOX_MODULE="sigs.k8s.io/agent-sandbox"
readonly SERVICE_CIDR="10.96.0.0/16"
readonly CLUSTER="upstream"
readonly CRDS=(crd/sandboxes.agents.x-k8s.io crd/sandboxtemplates.extensions.agents.x-k8s.io
    crd/sandboxwarmpools.extensions.agents.x-k8s.io crd/sandboxclaims.extensions.agents.x-k8s.io)
# shellcheck source=ci/access.sh
. ci/access.sh

DIR="${UPSTREAM_DIR:-target/upstream}"
read -r -a APISERVER_ARGS <<<"${UPSTREAM_APISERVER_ARGS:-}"
NODES="${UPSTREAM_NODES:-2}"
REQUIRE_NODES="${UPSTREAM_REQUIRE_NODES:-0}"
FAKEKUBE_BIN="${FAKEKUBE_BIN:-target/debug/fakekube}"
PKI="$DIR/pki"
LOGS="$DIR/logs"
PIDS="$DIR/pids"

die() {
    printf 'upstream-up: error: %s\n' "$*" >&2
    exit 1
}

say() {
    printf 'upstream-up: %s\n' "$*"
}

started=$SECONDS
# A first start (no etcd data yet) or a second run against a running cluster, for the timing line.
if [ -d "$DIR/etcd" ]; then start_kind="reused"; else start_kind="fresh"; fi

# The binaries, built once (a cached build prints its directory within seconds).
build_start=$SECONDS
BIN="$(ci/upstream-build.sh | tail -n 1)"
[ -x "$BIN/kube-apiserver" ] || die "ci/upstream-build.sh did not give a bin directory"
build_seconds=$((SECONDS - build_start))
cp_start=$SECONDS
KUBECTL="${KUBECTL:-$BIN/kubectl}"

mkdir -p "$PKI" "$LOGS" "$PIDS" "$DIR/nodes"
DIR_ABS="$(cd "$DIR" && pwd)"

# kubectl as the cluster's admin, as ci/access.sh expects it.
k() {
    "$KUBECTL" --kubeconfig "$DIR/kubeconfig" "$@"
}

# ---- ports: chosen free at the first start, then kept in ports.env while the cluster lives.
choose_ports() {
    if [ -s "$DIR/ports.env" ]; then
        # shellcheck source=/dev/null
        . "$DIR/ports.env"
        return
    fi
    local names=(ETCD_CLIENT_PORT ETCD_PEER_PORT APISERVER_PORT CONTROLLER_MANAGER_PORT
        SCHEDULER_PORT SANDBOX_METRICS_PORT SANDBOX_HEALTH_PORT)
    local ports
    # All sockets are bound at once, so the ports differ; the kernel picks unused ones.
    ports="$(python3 -c '
import socket, sys
socks = []
for _ in range(int(sys.argv[1])):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    socks.append(s)
print(" ".join(str(s.getsockname()[1]) for s in socks))
' "${#names[@]}")" || die "python3 could not pick free ports"
    read -r -a ports <<<"$ports"
    local i
    {
        echo "# ports of the upstream control plane on 127.0.0.1 (ci/upstream-up.sh)"
        for i in "${!names[@]}"; do
            echo "${names[$i]}=${ports[$i]}"
        done
    } >"$DIR/ports.env.tmp"
    mv "$DIR/ports.env.tmp" "$DIR/ports.env"
    # shellcheck source=/dev/null
    . "$DIR/ports.env"
}

# ---- certificates and keys (kept while the cluster lives: pki keeps existing pairs).
make_pki() {
    local pki=("$BIN/pki")
    "${pki[@]}" ca -dir "$PKI" -name ca -cn kubernetes
    "${pki[@]}" ca -dir "$PKI" -name front-proxy-ca -cn front-proxy-ca
    "${pki[@]}" keypair -dir "$PKI" -name sa
    "${pki[@]}" cert -dir "$PKI" -ca ca -name apiserver -cn kube-apiserver -server \
        -ip 127.0.0.1,10.96.0.1 \
        -dns localhost,kubernetes,kubernetes.default,kubernetes.default.svc,kubernetes.default.svc.cluster.local
    "${pki[@]}" cert -dir "$PKI" -ca ca -name apiserver-kubelet-client -client \
        -cn kube-apiserver-kubelet-client -o system:masters
    "${pki[@]}" cert -dir "$PKI" -ca front-proxy-ca -name front-proxy-client -client -cn front-proxy-client
    "${pki[@]}" cert -dir "$PKI" -ca ca -name admin -client -cn kubernetes-admin -o system:masters
    "${pki[@]}" cert -dir "$PKI" -ca ca -name controller-manager -client -cn system:kube-controller-manager
    "${pki[@]}" cert -dir "$PKI" -ca ca -name scheduler -client -cn system:kube-scheduler
}

# Writes a kubeconfig with a client certificate from $PKI (as kind's admin kubeconfig).
write_cert_kubeconfig() {
    local path=$1 user=$2 name=$3
    (
        umask 077
        cat >"$path.tmp" <<KUBECONFIG
apiVersion: v1
kind: Config
clusters:
- name: $CLUSTER
  cluster:
    server: https://127.0.0.1:$APISERVER_PORT
    certificate-authority-data: $(base64 -w0 <"$PKI/ca.crt")
users:
- name: $user
  user:
    client-certificate-data: $(base64 -w0 <"$PKI/$name.crt")
    client-key-data: $(base64 -w0 <"$PKI/$name.key")
contexts:
- name: $user@$CLUSTER
  context:
    cluster: $CLUSTER
    user: $user
current-context: $user@$CLUSTER
KUBECONFIG
    )
    mv "$path.tmp" "$path"
}

# ---- processes: one pid file each; a live one is kept, a dead one is started again.
running() {
    local pidfile="$PIDS/$1.pid" pid
    [ -s "$pidfile" ] || return 1
    pid="$(cat "$pidfile")"
    kill -0 "$pid" 2>/dev/null || return 1
    # The pid must still be ours: its command line names the binary (a pid may be reused).
    tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q -- "$2"
}

# start NAME BINARY ARGS...: runs BINARY in its own session, detached from this shell.
start() {
    local name=$1 binary=$2
    shift 2
    if running "$name" "$binary"; then
        return 0
    fi
    say "starting $name"
    printf '%s\n' "== $(date -u +%FT%TZ) $binary $*" >>"$LOGS/$name.log"
    setsid "$binary" "$@" </dev/null >>"$LOGS/$name.log" 2>&1 &
    echo $! >"$PIDS/$name.pid"
}

# wait_for WHAT SECONDS PIDNAME COMMAND...: polls COMMAND until it succeeds.
wait_for() {
    local what=$1 limit=$2 name=$3 deadline
    shift 3
    deadline=$((SECONDS + limit))
    until "$@" >/dev/null 2>&1; do
        if [ -n "$name" ] && ! kill -0 "$(cat "$PIDS/$name.pid")" 2>/dev/null; then
            tail -n 30 "$LOGS/$name.log" >&2 || true
            die "$name exited while waiting for $what; see $LOGS/$name.log"
        fi
        [ "$SECONDS" -lt "$deadline" ] || {
            [ -z "$name" ] || tail -n 30 "$LOGS/$name.log" >&2 || true
            die "no $what after $limit s${name:+; see $LOGS/$name.log}"
        }
        sleep 0.2
    done
}

start_etcd() {
    local client="http://127.0.0.1:$ETCD_CLIENT_PORT" peer="http://127.0.0.1:$ETCD_PEER_PORT"
    start etcd "$BIN/etcd" --name upstream --data-dir "$DIR/etcd" \
        --listen-client-urls "$client" --advertise-client-urls "$client" \
        --listen-peer-urls "$peer" --initial-advertise-peer-urls "$peer" \
        --initial-cluster "upstream=$peer" --initial-cluster-state new \
        --log-level warn
    wait_for "etcd health" 60 etcd curl -fsS "$client/health"
}

start_apiserver() {
    # The advertise address is loopback, which the Service "kubernetes" may not have as an
    # endpoint: its reconciler is off (--endpoint-reconciler-type=none); nothing here dials
    # Service IPs, there is no kube-proxy.
    start kube-apiserver "$BIN/kube-apiserver" \
        --bind-address=127.0.0.1 --advertise-address=127.0.0.1 --secure-port="$APISERVER_PORT" \
        --etcd-servers="http://127.0.0.1:$ETCD_CLIENT_PORT" \
        --tls-cert-file="$PKI/apiserver.crt" --tls-private-key-file="$PKI/apiserver.key" \
        --client-ca-file="$PKI/ca.crt" \
        --authorization-mode=Node,RBAC --enable-admission-plugins=NodeRestriction \
        --allow-privileged=true \
        --service-account-issuer=https://kubernetes.default.svc.cluster.local \
        --service-account-key-file="$PKI/sa.pub" --service-account-signing-key-file="$PKI/sa.key" \
        --service-cluster-ip-range="$SERVICE_CIDR" \
        --endpoint-reconciler-type=none \
        --kubelet-client-certificate="$PKI/apiserver-kubelet-client.crt" \
        --kubelet-client-key="$PKI/apiserver-kubelet-client.key" \
        --kubelet-preferred-address-types=InternalIP \
        --proxy-client-cert-file="$PKI/front-proxy-client.crt" \
        --proxy-client-key-file="$PKI/front-proxy-client.key" \
        --requestheader-client-ca-file="$PKI/front-proxy-ca.crt" \
        --requestheader-allowed-names=front-proxy-client \
        --requestheader-username-headers=X-Remote-User \
        --requestheader-group-headers=X-Remote-Group \
        --requestheader-extra-headers-prefix=X-Remote-Extra- \
        ${APISERVER_ARGS[@]+"${APISERVER_ARGS[@]}"}
    write_cert_kubeconfig "$DIR/kubeconfig" kubernetes-admin admin
    wait_for "kube-apiserver /readyz" 120 kube-apiserver k get --raw /readyz
}

start_controllers() {
    write_cert_kubeconfig "$DIR/controller-manager.kubeconfig" system:kube-controller-manager controller-manager
    write_cert_kubeconfig "$DIR/scheduler.kubeconfig" system:kube-scheduler scheduler
    local kcm="$DIR/controller-manager.kubeconfig" sched="$DIR/scheduler.kubeconfig"
    # One instance each: no leader election, so that a restart does not wait out a lease.
    start kube-controller-manager "$BIN/kube-controller-manager" \
        --kubeconfig="$kcm" --authentication-kubeconfig="$kcm" --authorization-kubeconfig="$kcm" \
        --bind-address=127.0.0.1 --secure-port="$CONTROLLER_MANAGER_PORT" \
        --leader-elect=false --use-service-account-credentials=true \
        --root-ca-file="$PKI/ca.crt" --service-account-private-key-file="$PKI/sa.key" \
        --cluster-signing-cert-file="$PKI/ca.crt" --cluster-signing-key-file="$PKI/ca.key" \
        --service-cluster-ip-range="$SERVICE_CIDR" \
        --controllers='*,bootstrapsigner,tokencleaner'
    start kube-scheduler "$BIN/kube-scheduler" \
        --kubeconfig="$sched" --authentication-kubeconfig="$sched" --authorization-kubeconfig="$sched" \
        --bind-address=127.0.0.1 --secure-port="$SCHEDULER_PORT" --leader-elect=false
    wait_for "kube-controller-manager /healthz" 60 kube-controller-manager \
        curl -fsSk "https://127.0.0.1:$CONTROLLER_MANAGER_PORT/healthz"
    wait_for "kube-scheduler /healthz" 60 kube-scheduler \
        curl -fsSk "https://127.0.0.1:$SCHEDULER_PORT/healthz"
}

# The agent-sandbox release as applied here: the k8s/ kustomization of the module the controller
# is built from (go.mod's version, read from the module cache), as `kubectl kustomize` renders
# it, every document but the Deployment (the controller runs as a process) and the Service (its
# metrics Service selects the Deployment's pods). That version serves v1beta1 only: no conversion
# webhook.
render_manifest() {
    local dir
    dir="$(cd "$MODULE_DIR" && go mod download -json "$AGENT_SANDBOX_MODULE" |
        sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
    [ -s "$dir/k8s/kustomization.yaml" ] ||
        die "no k8s/kustomization.yaml in the module $AGENT_SANDBOX_MODULE ($MODULE_DIR/go.mod's version)"
    AGENT_SANDBOX_DIR="$dir"
    "$KUBECTL" kustomize "$dir/k8s" | awk '
        function flush() {
            if (doc !~ /(^|\n)kind: (Deployment|Service)\n/) printf "%s", doc
            doc = ""
        }
        /^---$/ { flush(); doc = "---\n"; next }
        { doc = doc $0 "\n" }
        END { flush() }
    ' >"$DIR/agent-sandbox.yaml"
    ! grep -Eq '^kind: (Deployment|Service)$' "$DIR/agent-sandbox.yaml" ||
        die "the Deployment or Service is still in the rendered manifest"
    [ "$(grep -c '^kind: CustomResourceDefinition$' "$DIR/agent-sandbox.yaml")" = "${#CRDS[@]}" ] ||
        die "the rendered manifest does not have the ${#CRDS[@]} CRDs"
}

install_agent_sandbox() {
    render_manifest
    say "installing agent-sandbox (the k8s/ kustomization of $AGENT_SANDBOX_DIR but its Deployment and Service)"
    # Server-side apply: the CRDs are too large for client-side apply's annotation.
    k apply --server-side --force-conflicts -f "$DIR/agent-sandbox.yaml" >/dev/null
    k wait --for=condition=Established --timeout=120s "${CRDS[@]}" >/dev/null
    # The controller's own long-lived token: its service account is then authorized by the
    # release's RBAC alone, as the pod would be with its projected token.
    k apply -f - >/dev/null <<SECRET
apiVersion: v1
kind: Secret
metadata:
  name: $CONTROLLER_SA-token
  namespace: $SYSTEM_NS
  annotations:
    kubernetes.io/service-account.name: $CONTROLLER_SA
type: kubernetes.io/service-account-token
SECRET
    local token
    token="$(NAMESPACE=$SYSTEM_NS access_secret_token "$CONTROLLER_SA-token")"
    (NAMESPACE=$SYSTEM_NS access_write_kubeconfig "$DIR/controller.kubeconfig" "$CONTROLLER_SA" "$token" "$CLUSTER")
}

start_sandbox_controller() {
    # The release Deployment's args (--leader-elect=true --extensions, as the kustomization's
    # patch sets them); every listener on 127.0.0.1 at a chosen port. Off-cluster, leader
    # election needs its namespace named.
    KUBECONFIG="$DIR_ABS/controller.kubeconfig" start agent-sandbox-controller "$BIN/agent-sandbox-controller" \
        --leader-elect=true --extensions \
        --leader-election-namespace="$SYSTEM_NS" \
        --metrics-bind-address="127.0.0.1:$SANDBOX_METRICS_PORT" \
        --health-probe-bind-address="127.0.0.1:$SANDBOX_HEALTH_PORT"
    wait_for "agent-sandbox controller /readyz" 120 agent-sandbox-controller \
        curl -fsS "http://127.0.0.1:$SANDBOX_HEALTH_PORT/readyz"
}

apply_fixtures() {
    say "applying the namespace, the seed's Role, the service accounts and the warm pool"
    access_apply
    k apply -f fixtures/live/warm-pool.yaml >/dev/null
    access_write_kubeconfig "$DIR/runner.kubeconfig" live-runner \
        "$(access_secret_token live-runner-token)" "$CLUSTER"
    access_write_kubeconfig "$DIR/observer.kubeconfig" live-observer \
        "$(access_secret_token live-observer-token)" "$CLUSTER"
    access_check_runner "$DIR/runner.kubeconfig"
}

# The volume provisioner's role, for the nodes. kind provisions PersistentVolumes with a
# provisioner of its own (local-path-provisioner, its own service account and ClusterRole);
# here each fakekube kubelet provisions a volume on its node for a pending claim (and deletes
# it once released), so the group system:nodes holds that role. The Node authorizer alone lets
# a node read only the claims of its own pods.
grant_provisioner_role() {
    k apply -f - >/dev/null <<RBAC
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: upstream:volume-provisioner
rules:
- apiGroups: [""]
  resources: [persistentvolumes]
  verbs: [get, list, watch, create, delete]
- apiGroups: [""]
  resources: [persistentvolumeclaims]
  verbs: [get, list, watch]
- apiGroups: ["", events.k8s.io]
  resources: [events]
  verbs: [create, patch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: upstream:volume-provisioner
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: upstream:volume-provisioner
subjects:
- apiGroup: rbac.authorization.k8s.io
  kind: Group
  name: system:nodes
RBAC
}

# ---- nodes: fakekube kubelets, each with a client certificate system:node:NAME.
start_nodes() {
    NODE_NAMES=()
    [ "$NODES" -gt 0 ] || return 0
    if ! "$FAKEKUBE_BIN" kubelet --help >/dev/null 2>&1; then
        [ "$REQUIRE_NODES" != 1 ] ||
            die "$FAKEKUBE_BIN has no 'kubelet' subcommand (UPSTREAM_REQUIRE_NODES=1); build it: cargo build -p fakekube"
        say "warning: $FAKEKUBE_BIN has no 'kubelet' subcommand: no nodes, pods stay Pending"
        return 0
    fi
    grant_provisioner_role
    local i name log
    for i in $(seq 1 "$NODES"); do
        name="upstream-node-$i"
        NODE_NAMES+=("$name")
        "$BIN/pki" cert -dir "$PKI" -ca ca -name "node-$name" -client -cn "system:node:$name" -o system:nodes
        write_cert_kubeconfig "$DIR/nodes/$name.kubeconfig" "system:node:$name" "node-$name"
        log="$LOGS/node-$name.log"
        if ! running "node-$name" "$FAKEKUBE_BIN"; then
            : >"$log"
        fi
        start "node-$name" "$FAKEKUBE_BIN" kubelet --kubeconfig "$DIR/nodes/$name.kubeconfig" \
            --node-name "$name" --client-ca-file "$PKI/ca.crt" --port 0 --pod-subnet "$i" \
            --missing-image registry.invalid/does-not-exist:0
        # (registry.invalid never resolves: a real node's pull of it fails, as the marked one's does)
    done
    for name in "${NODE_NAMES[@]}"; do
        wait_for "'fakekube kubelet $name serving on' from $name" 60 "node-$name" \
            grep -q "^fakekube kubelet $name serving on " "$LOGS/node-$name.log"
        say "$(grep -m1 "^fakekube kubelet $name serving on " "$LOGS/node-$name.log")"
    done
    for name in "${NODE_NAMES[@]}"; do
        k wait --for=condition=Ready --timeout=60s "node/$name" >/dev/null ||
            die "node $name is not Ready after 60 s; see $LOGS/node-$name.log"
    done
}

wait_warm_pool() {
    if [ "${#NODE_NAMES[@]}" -eq 0 ]; then
        say "no nodes: the warm pool's pods stay Pending"
        return 0
    fi
    say "waiting for the warm pool live-warm"
    if ! k -n "$NAMESPACE" wait --for=jsonpath='{.status.readyReplicas}'=2 \
        sandboxwarmpool/live-warm --timeout=120s >/dev/null; then
        [ "$REQUIRE_NODES" != 1 ] ||
            die "the warm pool has no two ready members after 120 s; see: kubectl -n $NAMESPACE get sandboxes,pods"
        say "warning: the warm pool has no two ready members after 120 s"
    fi
}

command -v curl >/dev/null 2>&1 || die "curl is not installed"
command -v python3 >/dev/null 2>&1 || die "python3 is not installed (it picks the free ports)"
if [ "$restart_only" = 1 ]; then
    { [ -s "$DIR/ports.env" ] && [ -s "$DIR/controller.kubeconfig" ]; } ||
        die "--restart: no stack was started in $DIR (run ci/upstream-up.sh first)"
    choose_ports
    start_etcd
    start_apiserver
    start_controllers
    start_sandbox_controller
    say "restarted: every control plane process runs ($((SECONDS - cp_start)) s)"
    exit 0
fi
choose_ports
make_pki
start_etcd
start_apiserver
start_controllers
install_agent_sandbox
start_sandbox_controller
apply_fixtures
start_nodes
wait_warm_pool
k get --raw /readyz >/dev/null || die "kube-apiserver /readyz is not ok"
say "ready: $((SECONDS - started)) s in all: build step $build_seconds s, $start_kind start $((SECONDS - cp_start)) s (${#NODE_NAMES[@]} nodes)"
say "ports in $DIR/ports.env, logs in $LOGS/, pids in $PIDS/"
printf '  export KUBECONFIG=%s\n' "$DIR_ABS/runner.kubeconfig"
printf '  export LIVE_OBSERVER_KUBECONFIG=%s\n' "$DIR_ABS/observer.kubeconfig"
printf '  admin: %s --kubeconfig %s get nodes\n' "$KUBECTL" "$DIR_ABS/kubeconfig"
