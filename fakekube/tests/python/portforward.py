"""Fetches a page through `kubernetes.stream.portforward` from a pod's port, with a plain
HTTP/1.0 request over the forwarded socket, and prints the whole reply, for
tests/portforward.rs to check.

Usage: portforward.py KUBECONFIG NAMESPACE POD PORT
"""

import sys

from kubernetes import client, config
from kubernetes.stream import portforward


def main():
    kubeconfig, ns, name, port = sys.argv[1:5]
    port = int(port)
    config.load_kube_config(config_file=kubeconfig)
    api = client.CoreV1Api()
    pf = portforward(
        api.connect_get_namespaced_pod_portforward, name, ns, ports=str(port)
    )
    sock = pf.socket(port)
    sock.settimeout(60)
    sock.sendall(b"GET / HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")
    reply = b""
    while True:
        chunk = sock.recv(65536)
        if not chunk:
            break
        reply += chunk
    sock.close()
    error = pf.error(port)
    if error:
        sys.exit("the port reported an error: %s" % error)
    sys.stdout.write(reply.decode())


if __name__ == "__main__":
    main()
