#!/usr/bin/env bash
# Creates the Python virtual environments fakekube's exec tests drive the Python `kubernetes`
# client from: target/py-venv-current (the newest release, which offers v5.channel.k8s.io) and
# target/py-venv-31 (kubernetes==31.0.0, which offers only v4.channel.k8s.io); and
# target/py-venv-sdk, agent-sandbox's Python SDK (k8s-agent-sandbox, pinned) that
# fakekube/tests/sdk_python.rs drives against fakekube.
#
# Idempotent: a venv that already imports `kubernetes` is left alone, so after the first run
# this needs no network. Delete a venv directory to rebuild it.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON="${PYTHON:-python3}"

# make_venv DIR REQUIREMENT [MODULE]: creates DIR with REQUIREMENT installed, unless it is
# already usable (MODULE, `kubernetes` by default, imports).
make_venv() {
    local dir="$1" requirement="$2" module="${3:-kubernetes}"
    if [ -x "$dir/bin/python" ] && "$dir/bin/python" -c "import $module" 2>/dev/null; then
        echo "== $dir: present ($("$dir/bin/python" -c 'import kubernetes; print(kubernetes.__version__)'))"
        return
    fi
    echo "== $dir: installing $requirement"
    rm -rf "$dir"
    mkdir -p "$(dirname "$dir")"
    "$PYTHON" -m venv "$dir"
    "$dir/bin/python" -m pip install --quiet --disable-pip-version-check "$requirement"
    echo "== $dir: $("$dir/bin/python" -c 'import kubernetes; print(kubernetes.__version__)')"
}

make_venv target/py-venv-current kubernetes
make_venv target/py-venv-31 'kubernetes==31.0.0'
make_venv target/py-venv-sdk 'k8s-agent-sandbox==1.0.8' k8s_agent_sandbox
