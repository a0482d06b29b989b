"""Creates a one-container Pod with the Python `kubernetes` client and waits until it is Running.

Usage: create_pod.py KUBECONFIG NAMESPACE POD
"""

import sys
import time

from kubernetes import client, config


def main():
    kubeconfig, ns, name = sys.argv[1:4]
    config.load_kube_config(config_file=kubeconfig)
    api = client.CoreV1Api()
    pod = client.V1Pod(
        metadata=client.V1ObjectMeta(name=name),
        spec=client.V1PodSpec(
            containers=[client.V1Container(name="main", image="busybox:1.36")]
        ),
    )
    api.create_namespaced_pod(ns, pod)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        phase = api.read_namespaced_pod(name, ns).status.phase
        if phase == "Running":
            print("Running")
            return
        time.sleep(0.05)
    sys.exit("pod %s/%s is not Running after 60 s (phase %s)" % (ns, name, phase))


if __name__ == "__main__":
    main()
