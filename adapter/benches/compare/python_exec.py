"""The Python `kubernetes` client's side of the compare bench: in this one process, the round
trip of `exec true` (preloaded `stream()`, as most users call it) and the throughput of BYTES of
stdout (`head -c BYTES /dev/zero`, frames read from its WebSocket as they arrive). Prints one JSON object:
the client's version and the timings in seconds.

Usage: python_exec.py KUBECONFIG NAMESPACE POD CONTAINER WARM_UP ROUND_TRIPS STREAMS BYTES
"""

import json
import sys
import time

import kubernetes
from kubernetes import client, config
from kubernetes.stream import stream
from websocket import ABNF


def exec_true(api, ns, pod, container):
    """One preloaded exec of `true`."""
    stream(
        api.connect_get_namespaced_pod_exec,
        pod,
        ns,
        command=["true"],
        container=container,
        stdout=True,
        stderr=True,
        stdin=False,
        tty=False,
    )


def exec_bytes(api, ns, pod, container, size):
    """One exec of `head -c SIZE /dev/zero`; returns how many stdout bytes arrived.

    The frames are read from the client's own WebSocket (`resp.sock`, as `stream()` opened it):
    the client's `update()` appends each frame to its channel buffer with `bytes +=` while more
    frames are waiting, which makes 100 MiB quadratic (minutes, gigabytes) in client 37.
    """
    resp = stream(
        api.connect_get_namespaced_pod_exec,
        pod,
        ns,
        command=["head", "-c", str(size), "/dev/zero"],
        container=container,
        stdout=True,
        stderr=True,
        stdin=False,
        tty=False,
        _preload_content=False,
        binary=True,
    )
    got = 0
    status = b""
    while True:
        op_code, frame = resp.sock.recv_data_frame(True)
        if op_code == ABNF.OPCODE_CLOSE:
            break
        data = frame.data
        if not data:
            continue
        if data[0] == 1:
            got += len(data) - 1
        elif data[0] == 3:
            status += data[1:]
    resp.close()
    if b'"Success"' not in status:
        sys.exit("the exec ended with %r" % status)
    return got


def main():
    kubeconfig, ns, pod, container = sys.argv[1:5]
    warm_up, round_trips, streams, size = (int(a) for a in sys.argv[5:9])
    config.load_kube_config(config_file=kubeconfig)
    api = client.CoreV1Api()
    for _ in range(warm_up):
        exec_true(api, ns, pod, container)
    trips = []
    for _ in range(round_trips):
        began = time.perf_counter()
        exec_true(api, ns, pod, container)
        trips.append(time.perf_counter() - began)
    transfers = []
    for _ in range(streams):
        began = time.perf_counter()
        got = exec_bytes(api, ns, pod, container, size)
        took = time.perf_counter() - began
        if got != size:
            sys.exit("the exec delivered %d bytes of %d" % (got, size))
        transfers.append(took)
    print(json.dumps({
        "version": kubernetes.__version__,
        "round_trips": trips,
        "transfers": transfers,
    }))


if __name__ == "__main__":
    main()
