"""The agent-sandbox Python SDK (k8s-agent-sandbox) against fakekube, as a user runs it.

Usage: agent_sandbox_sdk.py KUBECONFIG NAMESPACE

Applies the sandbox router (a Deployment and its Service, the router image run by fakekube's
kubelet as its `sandbox-router` program), a SandboxTemplate of the runtime image (run as
`python-runtime-sandbox`), a warm pool of two and an empty one (the direct, cold-start path),
then drives the SDK in tunnel mode (the SDK's own `kubectl port-forward svc/sandbox-router-svc`)
and router mode (a direct URL: a port-forward this script starts to the router Service), each
with both pools: create a claim, run commands, upload, download, list, check existence,
delete. Prints one JSON object with what each run saw; the Rust test checks it.
"""

import json
import os
import re
import subprocess
import sys
import time

from kubernetes import client, config

from k8s_agent_sandbox import SandboxClient
from k8s_agent_sandbox.models import (
    SandboxDirectConnectionConfig,
    SandboxLocalTunnelConnectionConfig,
)

ROUTER = """
apiVersion: v1
kind: Service
metadata:
  name: sandbox-router-svc
spec:
  selector:
    app: sandbox-router
  ports:
  - name: http
    port: 8080
    targetPort: 8080
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: sandbox-router-deployment
spec:
  replicas: 2
  selector:
    matchLabels:
      app: sandbox-router
  template:
    metadata:
      labels:
        app: sandbox-router
    spec:
      containers:
      - name: router
        image: kind.local/sandbox-router:latest
        env:
        - name: ALLOW_UNAUTHENTICATED_ROUTER
          value: "true"
        ports:
        - containerPort: 8080
        readinessProbe:
          httpGet:
            path: /healthz
            port: 8080
          periodSeconds: 1
"""

SANDBOXES = """
apiVersion: extensions.agents.x-k8s.io/v1beta1
kind: SandboxTemplate
metadata:
  name: sdk-template
spec:
  podTemplate:
    metadata:
      labels:
        app: sdk-sandbox
    spec:
      containers:
      - name: runtime
        image: kind.local/python-runtime-sandbox:latest
        ports:
        - containerPort: 8888
        readinessProbe:
          httpGet:
            path: /
            port: 8888
          periodSeconds: 1
---
apiVersion: extensions.agents.x-k8s.io/v1beta1
kind: SandboxWarmPool
metadata:
  name: warm
spec:
  replicas: 2
  sandboxTemplateRef:
    name: sdk-template
---
apiVersion: extensions.agents.x-k8s.io/v1beta1
kind: SandboxWarmPool
metadata:
  name: cold
spec:
  replicas: 0
  sandboxTemplateRef:
    name: sdk-template
"""

WAIT_SECONDS = 60


def kubectl(*args, stdin=None):
    """Runs kubectl with the test's kubeconfig; fails the script on an error."""
    return subprocess.run(
        ["kubectl", *args], input=stdin, text=True, capture_output=True, check=True
    ).stdout


def wait(what, predicate):
    """Polls predicate until it holds, failing after WAIT_SECONDS."""
    deadline = time.monotonic() + WAIT_SECONDS
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.1)
    raise TimeoutError(f"{what} did not happen within {WAIT_SECONDS}s")


def router_url(namespace):
    """Starts `kubectl port-forward svc/sandbox-router-svc` and returns it with its URL."""
    proc = subprocess.Popen(
        ["kubectl", "port-forward", "svc/sandbox-router-svc", ":8080", "-n", namespace],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    line = proc.stdout.readline()
    found = re.search(r"127\.0\.0\.1:(\d+)", line)
    if not found:
        proc.kill()
        raise RuntimeError(f"no forwarding line from kubectl: {line!r} {proc.stderr.read()}")
    return proc, f"http://127.0.0.1:{found.group(1)}"


def exercise(sdk, pool, namespace, custom):
    """One sandbox's life through the SDK: what each call gave."""
    out = {}
    sandbox = sdk.create_sandbox(pool, namespace=namespace)
    out["claim"] = sandbox.claim_name
    hello = sandbox.commands.run("echo 'Hello from SDK'")
    out["hello"] = [hello.stdout, hello.stderr, hello.exit_code]
    failing = sandbox.commands.run("sh -c 'echo oops >&2; exit 3'")
    out["failing"] = [failing.stdout, failing.stderr, failing.exit_code]
    missing = sandbox.commands.run("no-such-program")
    out["missing"] = [missing.stdout, missing.stderr, missing.exit_code]
    sandbox.files.write("data/test.txt", custom)
    out["read"] = sandbox.files.read("data/test.txt").decode()
    out["list"] = sorted((e.name, e.size, e.type) for e in sandbox.files.list("data"))
    out["exists"] = [sandbox.files.exists("data/test.txt"), sandbox.files.exists("nope.txt")]
    cat = sandbox.commands.run("cat data/test.txt")
    out["cat"] = cat.stdout
    sdk.delete_all()
    helper = client.CustomObjectsApi()

    def claim_gone():
        try:
            helper.get_namespaced_custom_object(
                "extensions.agents.x-k8s.io", "v1beta1", namespace, "sandboxclaims", out["claim"]
            )
            return False
        except client.exceptions.ApiException as e:
            return e.status == 404

    wait("the claim's deletion", claim_gone)
    out["deleted"] = True
    return out


def main():
    kubeconfig, namespace = sys.argv[1], sys.argv[2]
    os.environ["KUBECONFIG"] = kubeconfig
    config.load_kube_config(config_file=kubeconfig)
    kubectl("create", "namespace", namespace)
    kubectl("apply", "-n", namespace, "-f", "-", stdin=ROUTER)
    kubectl("apply", "-n", namespace, "-f", "-", stdin=SANDBOXES)
    apps = client.AppsV1Api()
    custom = client.CustomObjectsApi()
    wait(
        "the router Deployment's availability",
        lambda: (apps.read_namespaced_deployment("sandbox-router-deployment", namespace).status.available_replicas or 0) >= 1,
    )
    wait(
        "the warm pool's readiness",
        lambda: (custom.get_namespaced_custom_object(
            "extensions.agents.x-k8s.io", "v1beta1", namespace, "sandboxwarmpools", "warm"
        ).get("status") or {}).get("readyReplicas", 0) == 2,
    )
    results = {}
    tunnel = SandboxLocalTunnelConnectionConfig(router_namespace=namespace)
    for pool in ("cold", "warm"):
        sdk = SandboxClient(connection_config=tunnel)
        results[f"tunnel-{pool}"] = exercise(sdk, pool, namespace, f"tunnel {pool}\n")
    forward, url = router_url(namespace)
    try:
        direct = SandboxDirectConnectionConfig(api_url=url)
        for pool in ("cold", "warm"):
            sdk = SandboxClient(connection_config=direct)
            results[f"router-{pool}"] = exercise(sdk, pool, namespace, f"router {pool}\n")
    finally:
        forward.kill()
        forward.wait()
    print(json.dumps(results))


if __name__ == "__main__":
    main()
