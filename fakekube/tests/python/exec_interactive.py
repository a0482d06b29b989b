"""Drives one interactive `sh` through `kubernetes.stream.stream()` (`write_stdin`,
`readline_stdout`, `returncode`), without and with a TTY, and prints one JSON object with
what the client saw, for tests/exec_python.rs to check.

Usage: exec_interactive.py KUBECONFIG NAMESPACE POD
"""

import json
import sys

from kubernetes import client, config
from kubernetes.stream import stream


def wait_prompt(resp, prompts):
    """Reads stdout until the shell's prompt ends it, as a person waits before typing (what is
    typed sooner is echoed before the prompt, as on any terminal)."""
    shown = ""
    for _ in range(60):
        resp.update(timeout=1)
        shown += resp.read_stdout(timeout=0) or ""
        if shown.endswith("# "):
            break
    prompts.append(shown)


def session(api, ns, pod, tty):
    """One `sh` session: two commands each answered before the next, then `exit 4`."""
    resp = stream(
        api.connect_get_namespaced_pod_exec,
        pod,
        ns,
        command=["sh"],
        stdin=True,
        stdout=True,
        stderr=not tty,
        tty=tty,
        _preload_content=False,
    )
    lines = []
    prompts = []
    if tty:
        wait_prompt(resp, prompts)
    resp.write_stdin("echo first answer\n")
    lines.append(resp.readline_stdout(timeout=60))
    if tty:
        lines.append(resp.readline_stdout(timeout=60))
        wait_prompt(resp, prompts)
    resp.write_stdin("echo second >&2; echo third\n")
    lines.append(resp.readline_stdout(timeout=60))
    if tty:
        lines.append(resp.readline_stdout(timeout=60))
        lines.append(resp.readline_stdout(timeout=60))
    else:
        lines.append(resp.readline_stderr(timeout=60))
    resp.write_stdin("exit 4\n")
    resp.run_forever(timeout=60)
    try:
        code = resp.returncode
    except Exception as e:
        code = "raised %s" % type(e).__name__
    return {"lines": lines, "prompts": prompts, "returncode": code, "open": resp.is_open()}


def main():
    kubeconfig, ns, pod = sys.argv[1:4]
    config.load_kube_config(config_file=kubeconfig)
    api = client.CoreV1Api()
    print(json.dumps({"pipe": session(api, ns, pod, False), "tty": session(api, ns, pod, True)}))


if __name__ == "__main__":
    main()
