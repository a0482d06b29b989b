#!/usr/bin/env bash
# Builds the real upstream control plane of ci/upstream-up.sh from live/upstream/ (one Go module):
# etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kubectl, the agent-sandbox
# controller and the PKI helper, once, into a cache outside the clone:
#
#   ${XDG_CACHE_HOME:-$HOME/.cache}/agent-sandbox-upstream/<key>/bin/
#
# where <key> is the sha256 of live/upstream/go.mod, go.sum, our own Go sources and the build
# flags. With that directory complete, a second call does nothing and prints the directory.
# The last line printed on stdout is always the bin directory.
#
# sigs.k8s.io/agent-sandbox is the version go.mod requires, as the public module proxy serves it
# (v1.0.1; the proxy answers 403 for v1.0.8), built from the module like the other tools.
#
# Settings (environment): XDG_CACHE_HOME, GOFLAGS (e.g. -p=2).
set -euo pipefail
cd "$(dirname "$0")/.."

readonly MODULE_DIR="live/upstream"
readonly AGENT_SANDBOX_MODULE="sigs.k8s.io/agent-sandbox"
readonly BINARIES=(etcd kube-apiserver kube-controller-manager kube-scheduler kubectl
    agent-sandbox-controller pki)

say() {
    printf 'upstream-build: %s\n' "$*" >&2
}

die() {
    printf 'upstream-build: error: %s\n' "$*" >&2
    exit 1
}

command -v go >/dev/null 2>&1 || die "go is not installed (Go 1.26 or newer is needed)"

cache_root="${XDG_CACHE_HOME:-$HOME/.cache}/agent-sandbox-upstream"
k8s_version="$(awk '$1 == "k8s.io/kubernetes" { print $2; exit }' "$MODULE_DIR/go.mod")"
asb_version="$(awk -v m="$AGENT_SANDBOX_MODULE" '$1 == m { print $2; exit }' "$MODULE_DIR/go.mod")"
if [ -z "$k8s_version" ] || [ -z "$asb_version" ]; then
    die "$MODULE_DIR/go.mod does not require k8s.io/kubernetes and $AGENT_SANDBOX_MODULE"
fi
k8s_minor="${k8s_version#v1.}"
k8s_minor="${k8s_minor%%.*}"

# What `kubectl version` and /version report: the release's version, as its own build stamps
# it (hack/lib/version.sh), with the release's date so that the build stays reproducible.
k8s_info="$(go mod download -json "k8s.io/kubernetes@$k8s_version" |
    sed -n 's/^[[:space:]]*"Info": "\(.*\)",$/\1/p')"
k8s_date="$(sed -n 's/.*"Time": *"\([^"]*\)".*/\1/p' "$k8s_info" 2>/dev/null || true)"
version_ldflags=""
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    version_ldflags+=" -X $pkg.gitVersion=$k8s_version -X $pkg.gitMajor=1"
    version_ldflags+=" -X $pkg.gitMinor=$k8s_minor -X $pkg.gitTreeState=clean"
    version_ldflags+=" -X $pkg.buildDate=${k8s_date:-1970-01-01T00:00:00Z}"
done
readonly LDFLAGS="-s -w$version_ldflags"
readonly BUILD_FLAGS=(-trimpath "-ldflags=$LDFLAGS")
export CGO_ENABLED=0

key="$(
    {
        cat "$MODULE_DIR/go.mod" "$MODULE_DIR/go.sum"
        find "$MODULE_DIR/cmd" -name '*.go' -type f | LC_ALL=C sort | xargs cat
        printf '%s\n' "CGO_ENABLED=$CGO_ENABLED" "${BUILD_FLAGS[@]}" "$(go env GOVERSION GOOS GOARCH)"
    } | sha256sum | cut -c1-16
)"
bin="$cache_root/$key/bin"

complete() {
    local b
    for b in "${BINARIES[@]}"; do
        [ -x "$bin/$b" ] || return 1
    done
}

if complete; then
    say "cached: $bin"
    printf '%s\n' "$bin"
    exit 0
fi

export GOFLAGS="${GOFLAGS:-} -mod=readonly"

say "building ${BINARIES[*]} (Kubernetes $k8s_version, agent-sandbox $asb_version) into $bin"
start=$SECONDS
out="$cache_root/$key/bin.tmp"
rm -rf "$out"
mkdir -p "$out"
(
    cd "$MODULE_DIR"
    go build "${BUILD_FLAGS[@]}" -o "$out/" \
        ./cmd/etcd ./cmd/pki \
        k8s.io/kubernetes/cmd/kube-apiserver \
        k8s.io/kubernetes/cmd/kube-controller-manager \
        k8s.io/kubernetes/cmd/kube-scheduler \
        k8s.io/kubernetes/cmd/kubectl \
        "$AGENT_SANDBOX_MODULE/cmd/agent-sandbox-controller"
)
rm -rf "$bin"
mv "$out" "$bin"
complete || die "the build did not produce every binary in $bin"
say "built in $((SECONDS - start)) s:"
(cd "$bin" && du -h "${BINARIES[@]}" >&2)
printf '%s\n' "$bin"
