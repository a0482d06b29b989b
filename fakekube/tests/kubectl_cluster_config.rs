//! The cluster-configuration kinds through kubectl against the `fakekube` binary: a
//! ValidatingAdmissionPolicy applied with its binding and enforced on `kubectl create` (Deny
//! as an error, Warn as kubectl's `Warning:` line), and `kubectl get` printing the server's
//! columns of the admission, CSI and flow-control kinds; `kubectl describe` of each.
//!
//! A kubectl binary that is not installed makes its tests print `skipping: <path> not
//! installed` and pass.

mod support;

use support::kubectl::{Kubectl, installed};
use support::process::Process;

const POLICY: &str = "apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: max-replicas
spec:
  matchConstraints:
    resourceRules:
    - apiGroups: [apps]
      apiVersions: [v1]
      operations: [CREATE, UPDATE]
      resources: [deployments]
  validations:
  - expression: object.spec.replicas <= 5
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  name: max-replicas-binding
spec:
  policyName: max-replicas
  validationActions: [Deny]
";

const WEBHOOK: &str = "apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata:
  name: hooks
webhooks:
- name: check.example.com
  clientConfig:
    service: { name: hook, namespace: default }
  rules:
  - { apiGroups: [''], apiVersions: [v1], operations: [CREATE], resources: [configmaps] }
  sideEffects: None
  admissionReviewVersions: [v1]
---
apiVersion: storage.k8s.io/v1
kind: CSIDriver
metadata:
  name: hostpath.csi.k8s.io
spec: {}
";

/// The cells of the row of `name` in `kubectl get` output, split on whitespace.
fn row(out: &str, name: &str) -> Vec<String> {
    out.lines()
        .find(|l| l.split_whitespace().next() == Some(name))
        .unwrap_or_else(|| panic!("no row {name} in:\n{out}"))
        .split_whitespace()
        .map(str::to_string)
        .collect()
}

fn header(out: &str) -> Vec<String> {
    out.lines()
        .next()
        .unwrap_or("")
        .split_whitespace()
        .map(str::to_string)
        .collect()
}

fn scenario(minor: u32) {
    let Some(bin) = installed(minor) else {
        return;
    };
    let process = Process::start(&["--bare", "--api-only"]);
    let k = Kubectl {
        bin,
        kubeconfig: process.kubeconfig.clone(),
    };
    let applied = k.run_input(POLICY, &["apply", "-f", "-"]).success();
    assert!(
        applied.stdout.contains(
            "validatingadmissionpolicy.admissionregistration.k8s.io/max-replicas created"
        ),
        "{applied}"
    );
    let refused = k
        .run(&[
            "create",
            "deployment",
            "big",
            "--image=nginx",
            "--replicas=6",
        ])
        .failure();
    assert!(
        refused.stderr.contains(
            "ValidatingAdmissionPolicy 'max-replicas' with binding 'max-replicas-binding' denied request: failed expression: object.spec.replicas <= 5"
        ),
        "{refused}"
    );
    k.run(&[
        "create",
        "deployment",
        "small",
        "--image=nginx",
        "--replicas=2",
    ])
    .success();
    k.run(&[
        "patch",
        "validatingadmissionpolicybinding",
        "max-replicas-binding",
        "--type=merge",
        "-p",
        r#"{"spec":{"validationActions":["Warn"]}}"#,
    ])
    .success();
    k.run(&["create", "deployment", "warned", "--image=nginx", "--replicas=7"])
        .success()
        .stderr_has("Warning: Validation failed for ValidatingAdmissionPolicy 'max-replicas' with binding 'max-replicas-binding': failed expression: object.spec.replicas <= 5");

    let policies = k.run(&["get", "validatingadmissionpolicies"]).success();
    assert_eq!(
        header(&policies.stdout),
        ["NAME", "VALIDATIONS", "PARAMKIND", "AGE"]
    );
    assert_eq!(
        row(&policies.stdout, "max-replicas")[1..3],
        ["1", "<unset>"]
    );
    let bindings = k
        .run(&["get", "validatingadmissionpolicybindings"])
        .success();
    assert_eq!(
        header(&bindings.stdout),
        ["NAME", "POLICYNAME", "PARAMREF", "AGE"]
    );
    assert_eq!(
        row(&bindings.stdout, "max-replicas-binding")[1..3],
        ["max-replicas", "<unset>"]
    );

    k.run_input(WEBHOOK, &["apply", "-f", "-"]).success();
    let hooks = k.run(&["get", "validatingwebhookconfigurations"]).success();
    assert_eq!(header(&hooks.stdout), ["NAME", "WEBHOOKS", "AGE"]);
    assert_eq!(row(&hooks.stdout, "hooks")[1], "1");
    let drivers = k.run(&["get", "csidrivers"]).success();
    assert_eq!(
        header(&drivers.stdout),
        [
            "NAME",
            "ATTACHREQUIRED",
            "PODINFOONMOUNT",
            "STORAGECAPACITY",
            "TOKENREQUESTS",
            "REQUIRESREPUBLISH",
            "MODES",
            "AGE"
        ]
    );
    assert_eq!(
        row(&drivers.stdout, "hostpath.csi.k8s.io")[1..7],
        ["true", "false", "false", "<unset>", "false", "Persistent"]
    );

    let schemas = k.run(&["get", "flowschemas"]).success();
    assert_eq!(
        header(&schemas.stdout),
        [
            "NAME",
            "PRIORITYLEVEL",
            "MATCHINGPRECEDENCE",
            "DISTINGUISHERMETHOD",
            "AGE",
            "MISSINGPL"
        ]
    );
    let exempt = row(&schemas.stdout, "exempt");
    assert_eq!(exempt[1..4], ["exempt", "1", "<none>"]);
    assert_eq!(exempt[5], "False");
    let levels = k.run(&["get", "prioritylevelconfigurations"]).success();
    assert_eq!(
        header(&levels.stdout),
        [
            "NAME",
            "TYPE",
            "NOMINALCONCURRENCYSHARES",
            "QUEUES",
            "HANDSIZE",
            "QUEUELENGTHLIMIT",
            "AGE"
        ]
    );
    assert_eq!(
        row(&levels.stdout, "workload-low")[1..6],
        ["Limited", "100", "128", "6", "50"]
    );

    for (kind, name) in [
        ("validatingadmissionpolicy", "max-replicas"),
        ("validatingwebhookconfiguration", "hooks"),
        ("csidriver", "hostpath.csi.k8s.io"),
        ("flowschema", "exempt"),
    ] {
        let described = k.run(&["describe", kind, name]).success();
        assert!(described.stdout.contains(name), "{described}");
    }
}

macro_rules! minors {
    ($($module:ident => $minor:expr),* $(,)?) => {$(
        mod $module {
            #[test]
            fn policies_are_enforced_and_the_cluster_config_kinds_print_their_columns() {
                crate::scenario($minor);
            }
        }
    )*};
}

minors!(kubectl_1_33 => 33);
