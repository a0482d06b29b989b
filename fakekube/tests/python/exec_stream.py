"""Drives `kubernetes.stream.stream()` exec against a fakekube server and prints one JSON object
with what the client saw, for tests/exec_python.rs to check.

Usage: exec_stream.py KUBECONFIG NAMESPACE POD
"""

import json
import sys

import kubernetes
from kubernetes import client, config
from kubernetes.stream import stream


def ws_exec(api, ns, pod, command, **kwargs):
    """Starts an exec with _preload_content=False and returns the WSClient."""
    return stream(
        api.connect_get_namespaced_pod_exec,
        pod,
        ns,
        command=command,
        stdout=True,
        stderr=True,
        tty=False,
        _preload_content=False,
        **kwargs,
    )


def finish(resp, timeout=60):
    """Reads until the server closes; returns stdout, stderr, the raw status and returncode."""
    resp.run_forever(timeout=timeout)
    status = resp.peek_channel(3)
    try:
        code = resp.returncode
    except Exception as e:  # the client cannot read an exit code out of every status
        code = "raised %s" % type(e).__name__
    return {
        "stdout": resp.read_stdout(),
        "stderr": resp.read_stderr(),
        "status": json.loads(status) if status else None,
        "returncode": code,
        "open": resp.is_open(),
    }


def main():
    kubeconfig, ns, pod = sys.argv[1:4]
    config.load_kube_config(config_file=kubeconfig)
    api = client.CoreV1Api()
    out = {"version": kubernetes.__version__}

    # Default (preloaded) mode: stdout and stderr come back together as one string.
    out["preloaded"] = stream(
        api.connect_get_namespaced_pod_exec,
        pod,
        ns,
        command=["sh", "-c", "echo hello from fakekube"],
        stdout=True,
        stderr=True,
        stdin=False,
        tty=False,
    )

    resp = ws_exec(api, ns, pod, ["sh", "-c", "echo out; echo err >&2; exit 3"], stdin=False)
    out["subprotocol"] = (resp.sock.getheaders() or {}).get("sec-websocket-protocol")
    out["exit3"] = finish(resp)

    out["true"] = finish(ws_exec(api, ns, pod, ["true"], stdin=False))

    # stdin as text (str) and as binary (bytes) frames.
    resp = ws_exec(api, ns, pod, ["sh", "-c", "read a; read b; echo \"a=$a b=$b\""], stdin=True)
    resp.write_stdin("text-frame\n")
    resp.write_stdin(b"binary-frame\n")
    out["stdin"] = finish(resp)

    # v5 only: half-close stdin, so that `cat` sees the end of its input.
    if hasattr(resp, "close_channel"):
        resp = ws_exec(api, ns, pod, ["cat"], stdin=True)
        resp.write_stdin("until eof\n")
        resp.close_channel(0)
        out["close_stdin"] = finish(resp)

    out["cannot_start"] = finish(ws_exec(api, ns, pod, ["no-such-program"], stdin=False))

    print(json.dumps(out))


if __name__ == "__main__":
    main()
