#!/usr/bin/env bash
# Writes the replace block that lets this module require k8s.io/kubernetes.
#
# k8s.io/kubernetes requires its staging modules (k8s.io/api, k8s.io/client-go, ...) at v0.0.0
# and replaces them with ./staging/src/... paths that only exist in its own repository. A module
# that imports it must replace each of them with the published release of the same minor and
# patch: kubernetes v1.X.Y publishes them as v0.X.Y. The list is read from k8s.io/kubernetes's own
# go.mod (in the module cache, downloaded through the module proxy), never typed by hand.
#
#   live/upstream/gen-replaces.sh [KUBERNETES_VERSION]   (default: the version go.mod requires)
#
# It rewrites the block between the markers "// BEGIN generated replaces" and
# "// END generated replaces" in go.mod (appending it when missing), then prints it.
set -euo pipefail
cd "$(dirname "$0")"

version="${1:-}"
if [ -z "$version" ]; then
    version="$(awk '$1 == "k8s.io/kubernetes" && $2 ~ /^v1\./ { print $2; exit }' go.mod)"
fi
case "$version" in
    v1.*.*) ;;
    *) echo "gen-replaces: no k8s.io/kubernetes v1.X.Y version (got '$version')" >&2; exit 2 ;;
esac
staging="v0.${version#v1.}"

modfile="$(go mod download -json "k8s.io/kubernetes@$version" |
    sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",$/\1/p')"
[ -s "$modfile" ] || { echo "gen-replaces: cannot download k8s.io/kubernetes@$version" >&2; exit 1; }

block="$(mktemp)"
trap 'rm -f "$block" go.mod.tmp' EXIT
{
    echo "// BEGIN generated replaces: gen-replaces.sh from k8s.io/kubernetes@$version's go.mod"
    echo "replace ("
    # Lines "	k8s.io/NAME => ./staging/src/k8s.io/NAME" inside kubernetes's replace block.
    awk -v staging="$staging" '
        /^replace \($/ { inside = 1; next }
        inside && /^\)$/ { inside = 0; next }
        inside && $2 == "=>" && $3 ~ /^\.\/staging\/src\// { printf "\t%s => %s %s\n", $1, $1, staging }
    ' "$modfile"
    echo ")"
    echo ""  # as go mod tidy formats it
    echo "// END generated replaces"
} >"$block"
[ "$(grep -c '=>' "$block")" -gt 10 ] || { echo "gen-replaces: found too few staging modules in $modfile" >&2; exit 1; }

awk -v blockfile="$block" '
    function emit() { while ((getline line < blockfile) > 0) print line; done = 1 }
    /^\/\/ BEGIN generated replaces/ { skipping = 1; emit(); next }
    skipping && /^\/\/ END generated replaces/ { skipping = 0; next }
    skipping { next }
    { print }
    END { if (!done) { print ""; emit() } }
' go.mod >go.mod.tmp
mv go.mod.tmp go.mod
cat "$block"
