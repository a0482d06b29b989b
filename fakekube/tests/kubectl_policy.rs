//! LimitRanges, ResourceQuotas, PodTemplates, Ingresses, IngressClasses and
//! HorizontalPodAutoscalers (read at `v2` and `v1`) through kubectl
//! against the `fakekube` binary: `apply`, `get` with kubectl's columns, `describe`, and
//! `create quota` and `create ingress` (whose bodies kubectl 1.33 sends as protobuf); a pod refused by the quota
//! shows kubectl the API server's message.
//!
//! kubectl 1.30 and 1.33. A kubectl binary that is not installed makes its tests print
//! `skipping: <path> not installed` and pass.

mod support;

use support::kubectl::{Kubectl, installed};
use support::process::Process;

const MANIFEST: &str = r#"
apiVersion: v1
kind: LimitRange
metadata: { name: limits }
spec:
  limits:
  - type: Container
    default: { cpu: 500m, memory: 128Mi }
    defaultRequest: { cpu: 250m, memory: 64Mi }
---
apiVersion: v1
kind: PodTemplate
metadata: { name: web }
template:
  metadata: { labels: { app: web } }
  spec:
    containers: [ { name: c, image: "nginx:1.27" } ]
---
apiVersion: networking.k8s.io/v1
kind: IngressClass
metadata:
  name: nginx
  annotations: { ingressclass.kubernetes.io/is-default-class: "true" }
spec: { controller: k8s.io/ingress-nginx }
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: { name: web }
spec:
  rules:
  - host: web.example.com
    http:
      paths:
      - { path: /, pathType: Prefix, backend: { service: { name: web, port: { number: 80 } } } }
---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: { name: web }
spec:
  scaleTargetRef: { apiVersion: apps/v1, kind: Deployment, name: web }
  maxReplicas: 4
"#;

fn scenario(minor: u32) {
    let Some(bin) = installed(minor) else { return };
    let process = Process::start(&[]);
    let k = Kubectl {
        bin,
        kubeconfig: process.kubeconfig.clone(),
    };
    let path = process.dir().join("policy.yaml");
    std::fs::write(&path, MANIFEST).expect("a manifest is written");
    k.run(&["apply", "-f", &path.to_string_lossy()]).success();
    // Applied again, nothing changes and nothing is refused.
    k.run(&["apply", "-f", &path.to_string_lossy()]).success();

    k.run(&[
        "create",
        "quota",
        "compute",
        "--hard=pods=3,requests.cpu=1,limits.memory=512Mi",
    ])
    .success();
    k.run(&["run", "p1", "--image=busybox", "--restart=Never"])
        .success();

    let quota = k
        .run(&["get", "quota", "compute", "--no-headers"])
        .success()
        .stdout;
    assert!(
        quota.contains("pods: 1/3, requests.cpu: 250m/1")
            && quota.contains("limits.memory: 128Mi/512Mi"),
        "{quota}"
    );
    let described = k.run(&["describe", "quota", "compute"]).success().stdout;
    assert!(
        described.contains("requests.cpu") && described.contains("250m"),
        "{described}"
    );
    let limits = k
        .run(&["describe", "limitrange", "limits"])
        .success()
        .stdout;
    assert!(
        limits.contains("Container") && limits.contains("500m"),
        "{limits}"
    );

    let templates = k.run(&["get", "podtemplates"]).success().stdout;
    assert!(
        templates.contains("CONTAINERS")
            && templates.contains("nginx:1.27")
            && templates.contains("app=web"),
        "{templates}"
    );
    let ingresses = k.run(&["get", "ingress"]).success().stdout;
    assert!(
        ingresses.contains("CLASS")
            && ingresses.contains("nginx")
            && ingresses.contains("web.example.com"),
        "{ingresses}"
    );
    let classes = k.run(&["get", "ingressclass"]).success().stdout;
    assert!(classes.contains("k8s.io/ingress-nginx"), "{classes}");
    k.run(&["describe", "ingress", "web"]).success();
    k.run(&[
        "create",
        "ingress",
        "simple",
        "--rule=foo.com/bar=svc1:8080,tls=my-cert",
    ])
    .success();
    let simple = k
        .run(&["get", "ingress", "simple", "-o", "json"])
        .success()
        .json();
    assert_eq!(simple["spec"]["ingressClassName"], "nginx");
    assert_eq!(
        simple["spec"]["rules"][0]["http"]["paths"][0]["pathType"],
        "Exact"
    );
    assert_eq!(simple["spec"]["tls"][0]["secretName"], "my-cert");
    let hpa = k
        .run(&["get", "hpa", "web", "--no-headers"])
        .success()
        .stdout;
    assert!(
        hpa.contains("Deployment/web") && hpa.contains("cpu: <unknown>/80%"),
        "{hpa}"
    );
    let v1 = k
        .run(&[
            "get",
            "horizontalpodautoscalers.v1.autoscaling",
            "web",
            "-o",
            "json",
        ])
        .success()
        .json();
    assert_eq!(v1["spec"]["targetCPUUtilizationPercentage"], 80);

    for name in ["p2", "p3"] {
        k.run(&["run", name, "--image=busybox", "--restart=Never"])
            .success();
    }
    k.run(&["run", "p4", "--image=busybox", "--restart=Never"])
        .failure()
        .stderr_has(
            "pods \"p4\" is forbidden: exceeded quota: compute, requested: pods=1, used: pods=3, limited: pods=3",
        );
}

macro_rules! tests {
    ($minor:expr) => {
        #[test]
        fn limit_ranges_quotas_templates_and_ingresses_apply_print_and_refuse() {
            crate::scenario($minor);
        }
    };
}

mod kubectl_1_30 {
    tests!(30);
}

mod kubectl_1_33 {
    tests!(33);
}
