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
# sigs.k8s.io/agent-sandbox is pinned in go.mod at the upstream commit the fixtures' v1.0.8
# manifests were rendered from (fixtures/agent-sandbox/README.md), as a pseudo-version. When the
# module proxy does not serve it, the module is made from that commit of a local clone
# (AGENT_SANDBOX_GIT) into a file:// module proxy under the cache; go.sum checks it either way.
#
# Settings (environment): XDG_CACHE_HOME, GOFLAGS (e.g. -p=2), AGENT_SANDBOX_GIT (a git
# directory holding the pinned commit; default /work/.mirror/kubernetes-sigs+agent-sandbox/repo).
set -euo pipefail
cd "$(dirname "$0")/.."

readonly MODULE_DIR="live/upstream"
readonly AGENT_SANDBOX_MODULE="sigs.k8s.io/agent-sandbox"
readonly AGENT_SANDBOX_COMMIT="2fd412d55ecae90861a101a5424a75473de97c36"
# The commit time of AGENT_SANDBOX_COMMIT, for the module's .info.
readonly AGENT_SANDBOX_TIME="2026-08-22T00:27:14Z"
readonly BINARIES=(etcd kube-apiserver kube-controller-manager kube-scheduler kubectl
    agent-sandbox-controller pki)

# The agent-sandbox controller's webhook server (controller-runtime's) takes its port from a flag
# but has no flag for its host, so it listens on every interface. Every listener here must be on
# 127.0.0.1, so the build adds one flag to a patched copy of the module (the upstream sources stay
# untouched in the module cache; see below): a new file of package main declares --webhook-bind-host
# (default "", upstream's behaviour), and main.go's webhook.Options gets `Host: webhookHost,`
# by the sed expression below, which must match exactly once.
readonly WEBHOOK_HOST_SED='s/^\([[:space:]]*\)Port:     webhookPort,$/\1Host:     webhookHost,\n&/'
readonly WEBHOOK_HOST_GO='package main

import "flag"

// webhookHost is the address the conversion webhook server listens on (added by
// ci/upstream-build.sh: upstream listens on every interface).
var webhookHost string

func init() {
	flag.StringVar(&webhookHost, "webhook-bind-host", "", "The address the webhook server binds to (empty: every interface).")
}
'

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
        printf '%s\n' "$WEBHOOK_HOST_SED" "$WEBHOOK_HOST_GO"
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

# The agent-sandbox module: from the proxy when it serves the pinned version, else from a clone.
proxy_dir="$cache_root/goproxy"
default_proxy="$(go env GOPROXY)"
export GOPROXY="file://$proxy_dir,$default_proxy"
export GONOSUMDB="${GONOSUMDB:+$GONOSUMDB,}$AGENT_SANDBOX_MODULE"
export GOFLAGS="${GOFLAGS:-} -mod=readonly"
asb_base="$proxy_dir/$AGENT_SANDBOX_MODULE/@v/$asb_version"
if [ ! -s "$asb_base.zip" ] &&
    ! (cd "$MODULE_DIR" && GOPROXY="${GOPROXY#*,}" go mod download "$AGENT_SANDBOX_MODULE@$asb_version") 2>/dev/null; then
    git_dir="${AGENT_SANDBOX_GIT:-/work/.mirror/kubernetes-sigs+agent-sandbox/repo}"
    git -C "$git_dir" cat-file -e "$AGENT_SANDBOX_COMMIT^{commit}" 2>/dev/null ||
        die "the module proxy does not serve $AGENT_SANDBOX_MODULE@$asb_version and no clone with commit $AGENT_SANDBOX_COMMIT was found; set AGENT_SANDBOX_GIT to a clone of https://github.com/kubernetes-sigs/agent-sandbox"
    say "making $AGENT_SANDBOX_MODULE@$asb_version from $git_dir ($AGENT_SANDBOX_COMMIT)"
    src="$cache_root/src/agent-sandbox-$AGENT_SANDBOX_COMMIT"
    rm -rf "$src.tmp"
    mkdir -p "$src.tmp" "$(dirname "$asb_base")"
    git -C "$git_dir" archive "$AGENT_SANDBOX_COMMIT" | tar -x -C "$src.tmp"
    rm -rf "$src"
    mv "$src.tmp" "$src"
    # Loading the module graph (to build modzip) needs only the .mod and .info.
    cp "$src/go.mod" "$asb_base.mod"
    printf '{"Version":"%s","Time":"%s"}\n' "$asb_version" "$AGENT_SANDBOX_TIME" >"$asb_base.info"
    (cd "$MODULE_DIR" && go run ./cmd/modzip -module "$AGENT_SANDBOX_MODULE" \
        -version "$asb_version" -time "$AGENT_SANDBOX_TIME" -src "$src" -out "$proxy_dir")
fi

# The patched controller (see WEBHOOK_HOST_SED): a copy of the module outside the module cache
# (the go command allows neither overlays nor edits there), used through a copy of go.mod that
# replaces the module with it; go.sum and the module graph are the same.
(cd "$MODULE_DIR" && go mod download "$AGENT_SANDBOX_MODULE")
asb_dir="$(cd "$MODULE_DIR" && go list -m -f '{{.Dir}}' "$AGENT_SANDBOX_MODULE")"
patched="$cache_root/$key/agent-sandbox"
rm -rf "$patched"
mkdir -p "$patched"
cp -R "$asb_dir/." "$patched/"
chmod -R u+w "$patched"
ctl_dir="$patched/cmd/agent-sandbox-controller"
sed "$WEBHOOK_HOST_SED" "$asb_dir/cmd/agent-sandbox-controller/main.go" >"$ctl_dir/main.go"
[ "$(grep -c 'Host:     webhookHost,' "$ctl_dir/main.go")" = 1 ] ||
    die "the agent-sandbox controller's main.go no longer has the line WEBHOOK_HOST_SED patches"
printf '%s' "$WEBHOOK_HOST_GO" >"$ctl_dir/zz_webhook_bind_host.go"
modfile="$cache_root/$key/go.mod"
cp "$MODULE_DIR/go.mod" "$modfile"
cp "$MODULE_DIR/go.sum" "$cache_root/$key/go.sum"
printf '\nreplace %s => %s\n' "$AGENT_SANDBOX_MODULE" "$patched" >>"$modfile"

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
        k8s.io/kubernetes/cmd/kubectl
    go build "${BUILD_FLAGS[@]}" -modfile "$modfile" -o "$out/" \
        "$AGENT_SANDBOX_MODULE/cmd/agent-sandbox-controller"
)
rm -rf "$bin"
mv "$out" "$bin"
complete || die "the build did not produce every binary in $bin"
say "built in $((SECONDS - start)) s:"
(cd "$bin" && du -h "${BINARIES[@]}" >&2)
printf '%s\n' "$bin"
