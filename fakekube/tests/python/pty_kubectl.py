"""Drives `kubectl exec -it POD -- sh` through a pseudo-terminal, as a person at a terminal
would: waits for the prompt, types a command and reads its echo and answer, asks `stty size`,
interrupts a `sleep` with Ctrl-C, then `exit 3`. Prints one JSON object with each step's
screen text and kubectl's exit code, for tests/exec_kubectl.rs to check. Standard library only.

Usage: pty_kubectl.py KUBECTL KUBECONFIG POD
"""

import fcntl
import json
import os
import pty
import select
import struct
import sys
import termios
import time

STEP_SECONDS = 60


def read_until(fd, want, seen):
    """Reads the terminal until `want` shows; returns (text up to its end, the rest)."""
    deadline = time.time() + STEP_SECONDS
    while want not in seen:
        left = deadline - time.time()
        if left <= 0:
            raise SystemExit("no %r on the terminal; it showed %r" % (want, seen))
        ready, _, _ = select.select([fd], [], [], left)
        if not ready:
            continue
        try:
            chunk = os.read(fd, 4096)
        except OSError:
            chunk = b""
        if not chunk:
            raise SystemExit("the terminal closed before %r; it showed %r" % (want, seen))
        seen += chunk.decode("utf-8", "replace")
    end = seen.index(want) + len(want)
    return seen[:end], seen[end:]


def main():
    kubectl, kubeconfig, pod = sys.argv[1:4]
    pid, fd = pty.fork()
    if pid == 0:
        os.environ["KUBECONFIG"] = kubeconfig
        os.execv(kubectl, [kubectl, "exec", "-it", pod, "--", "sh"])
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 100, 0, 0))
    steps = {}
    seen = ""
    steps["prompt"], seen = read_until(fd, "# ", seen)
    os.write(fd, b"echo hi\r")
    steps["echo"], seen = read_until(fd, "hi\r\n# ", seen)
    os.write(fd, b"stty size\r")
    steps["size"], seen = read_until(fd, "\r\n# ", seen)
    os.write(fd, b"sleep 30\r")
    _, seen = read_until(fd, "sleep 30\r\n", seen)
    os.write(fd, b"\x03")
    steps["interrupt"], seen = read_until(fd, "# ", seen)
    os.write(fd, b"echo $?\r")
    steps["status"], seen = read_until(fd, "\r\n# ", seen)
    os.write(fd, b"exit 3\r")
    rest = seen
    deadline = time.time() + STEP_SECONDS
    while time.time() < deadline:
        ready, _, _ = select.select([fd], [], [], 1)
        if ready:
            try:
                chunk = os.read(fd, 4096)
            except OSError:
                break
            if not chunk:
                break
            rest += chunk.decode("utf-8", "replace")
    steps["exit"] = rest
    _, status = os.waitpid(pid, 0)
    code = os.WEXITSTATUS(status) if os.WIFEXITED(status) else -1
    print(json.dumps({"steps": steps, "code": code}))


if __name__ == "__main__":
    main()
