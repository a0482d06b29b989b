//! CustomResourceDefinitions through kubectl 1.30 to 1.33 against the `fakekube` binary: the
//! tests' own CRD (`tests/crds/widgets.yaml`, every schema feature) applied and established,
//! its objects admitted, defaulted, pruned and refused case by case, its subresources,
//! versions, field selector, category and `explain`; CRDs refused for what is wrong with
//! them, a name conflict, deletion; and the agent-sandbox v1.0.8 release manifests applied.
//!
//! A kubectl binary that is not installed makes its tests print `skipping: <path> not
//! installed` and pass.

mod support;

use serde_json::Value;
use std::thread;
use support::kubectl::{Kubectl, Output, installed};
use support::process::Process;

/// The tests' own CRD.
const WIDGETS: &str = include_str!("crds/widgets.yaml");
/// The agent-sandbox v1.0.8 all-in-one release manifest.
const RELEASE: &str = include_str!("../../fixtures/agent-sandbox/sandbox-with-extensions.yaml");

/// A fakekube process and a kubectl for it.
struct Cluster {
    _process: Process,
    k: Kubectl,
}

impl Cluster {
    /// Starts fakekube with `extra` arguments for kubectl `bin`.
    fn start(bin: &str, extra: &[&str]) -> Cluster {
        let process = Process::start(extra);
        let k = Kubectl {
            bin: bin.to_string(),
            kubeconfig: process.kubeconfig.clone(),
        };
        Cluster {
            _process: process,
            k,
        }
    }

    /// `kubectl apply -f -` of `yaml` in namespace `default`.
    fn apply(&self, yaml: &str) -> Output {
        self.k.run_input(yaml, &["apply", "-f", "-"])
    }

    /// Installs the widgets CRD and waits until it is established.
    fn install_widgets(&self) {
        self.apply(WIDGETS).success().stdout_is(
            "customresourcedefinition.apiextensions.k8s.io/widgets.stable.example.com created\n",
        );
        self.k
            .run(&["wait", "--for", "condition=established", "--timeout=50s", "crd/widgets.stable.example.com"])
            .success()
            .stdout_is("customresourcedefinition.apiextensions.k8s.io/widgets.stable.example.com condition met\n");
    }

    /// A widget as `kubectl get -o json` shows it.
    fn widget(&self, name: &str) -> Value {
        self.k
            .run(&["get", "widget", name, "-o", "json"])
            .success()
            .json()
    }
}

/// A widget of `spec` (YAML lines, indented two spaces).
fn widget(name: &str, spec: &str) -> String {
    format!(
        "apiVersion: stable.example.com/v1\nkind: Widget\nmetadata:\n  name: {name}\nspec:\n{spec}"
    )
}

/// A widget with every optional feature set to a valid value.
const GOOD_SPEC: &str = r#"  color: red
  minSize: 2
  name: good-one
  ratio: 0.5
  owner: someone@example.com
  since: "2024-01-01T00:00:00Z"
  nickname: null
  port: http
  tags: [a, b]
  ports:
  - name: web
    number: 80
  labels:
    team: x
  extra:
    anything:
      goes: here
  template:
    apiVersion: v1
    kind: ConfigMap
    metadata:
      name: t
  shape:
    circle: 1
  code: ok
"#;

/// The widgets CRD is applied and established, and a valid widget is admitted with its
/// defaults; an unknown field is pruned with a warning or refused under strict validation.
fn admitted_and_defaulted(c: &Cluster) {
    c.apply(&widget("good", GOOD_SPEC))
        .success()
        .stdout_is("widget.stable.example.com/good created\n");
    let good = c.widget("good");
    assert_eq!(good["spec"]["size"], 3, "defaulted: {good}");
    assert_eq!(
        good["spec"]["extra"]["anything"]["goes"], "here",
        "preserved: {good}"
    );
    assert_eq!(good["spec"]["nickname"], Value::Null, "nullable: {good}");
    let unknown = widget("loose", "  color: green\n  bogus: 1\n");
    c.k.run_input(&unknown, &["create", "-f", "-", "--validate=warn"])
        .success()
        .stderr_has("Warning: unknown field \"spec.bogus\"");
    assert!(c.widget("loose")["spec"].get("bogus").is_none(), "pruned");
    c.k.run_input(
        &widget("strict", "  color: green\n  bogus: 1\n"),
        &["create", "-f", "-"],
    )
    .failure()
    .stderr_has("strict decoding error: unknown field \"spec.bogus\"");
}

/// Each rejected case, with the API server's cause.
fn refused_case_by_case(c: &Cluster) {
    let bad = widget(
        "bad",
        r#"  color: purple
  size: 0
  name: X
  ratio: 0.3
  owner: nope
  tags: [a, a]
  ports:
  - name: web
  - name: web
  template:
    metadata:
      name: t
  shape:
    circle: 1
    square: 2
  code: bad
"#,
    );
    let out = c.apply(&bad).failure();
    for cause in [
        "The Widget \"bad\" is invalid: ",
        r#"spec.color: Unsupported value: "purple": supported values: "red", "green", "blue""#,
        "spec.size: Invalid value: 0: spec.size in body should be greater than or equal to 1",
        r#"spec.name: Invalid value: "X": spec.name in body should be at least 2 chars long"#,
        "spec.ratio: Invalid value: 0.3: spec.ratio in body should be a multiple of 0.25",
        r#"spec.owner: Invalid value: "nope": spec.owner in body must be of type email: "nope""#,
        r#"spec.tags[1]: Duplicate value: "a""#,
        r#"spec.ports[1]: Duplicate value: {"name":"web"}"#,
        "spec.template.apiVersion: Required value: must not be empty",
        "spec.template.kind: Required value: must not be empty",
        r#""spec.shape" must validate one and only one schema (oneOf). Found 2 valid alternatives"#,
        r#""spec.code" must not validate the schema (not)"#,
        "some validation rules were not checked because the object was invalid",
    ] {
        assert!(out.stderr.contains(cause), "missing {cause:?}: {out}");
    }
    c.apply(&widget("nocolor", "  size: 2\n"))
        .failure()
        .stderr_has("spec.color: Required value");
    c.apply(&widget(
        "toolong",
        "  color: red\n  name: abcdefghijklmnop\n",
    ))
    .failure()
    .stderr_has("spec.name: Too long: may not be more than 12 bytes");
    c.apply(&widget("badname", "  color: red\n  name: 9lives\n"))
        .failure()
        .stderr_has(r#"spec.name: Invalid value: "9lives": spec.name in body should match '^[a-z][a-z0-9-]*$'"#);
    c.apply(&widget("toomany", "  color: red\n  tags: [a, b, c, d]\n"))
        .failure()
        .stderr_has("spec.tags: Too many: 4: must have at most 3 items");
}

/// The CEL rules: message and field path, messageExpression and reason, a transition rule.
fn cel_rules(c: &Cluster) {
    c.apply(&widget("small", "  color: red\n  size: 2\n  minSize: 5\n"))
        .failure()
        .stderr_has(r#"spec.minSize: Invalid value: "object": minSize must not exceed size"#);
    c.apply(&widget("reserved", "  color: red\n  name: reserved\n"))
        .failure()
        .stderr_has("spec: Forbidden: the name reserved is reserved");
    c.apply(&widget("shrinks", "  color: red\n  size: 5\n"))
        .success();
    c.apply(&widget("shrinks", "  color: red\n  size: 4\n"))
        .failure()
        .stderr_has(r#"spec: Invalid value: "object": size may not shrink"#);
    c.apply(&widget("shrinks", "  color: red\n  size: 6\n"))
        .success();
}

/// The scale and status subresources.
fn subresources(c: &Cluster) {
    c.k.run(&["scale", "widget", "good", "--replicas=2"])
        .success()
        .stdout_is("widget.stable.example.com/good scaled\n");
    assert_eq!(c.widget("good")["spec"]["replicas"], 2);
    c.k.run(&[
        "patch",
        "widget",
        "good",
        "--subresource=status",
        "--type=merge",
        "-p",
        r#"{"status":{"phase":"Ready","replicas":2}}"#,
    ])
    .success();
    c.k.run(&[
        "patch",
        "widget",
        "good",
        "--type=merge",
        "-p",
        r#"{"status":{"phase":"Lost"}}"#,
    ])
    .success();
    assert_eq!(
        c.widget("good")["status"]["phase"],
        "Ready",
        "the main resource leaves status alone"
    );
    let scale =
        c.k.run(&[
            "get",
            "--raw",
            "/apis/stable.example.com/v1/namespaces/default/widgets/good/scale",
        ])
        .success()
        .json();
    assert_eq!(scale["status"]["replicas"], 2, "{scale}");
}

/// The second version, the field selector, the category, the short name and `explain`.
fn versions_selectors_and_explain(c: &Cluster) {
    let out = c
        .k
        .run(&["get", "widgets.v1beta1.stable.example.com", "good", "-o", "jsonpath={.apiVersion}/{.spec.size}"])
        .success()
        .stderr_has("Warning: stable.example.com/v1beta1 Widget is deprecated; use stable.example.com/v1 Widget");
    assert_eq!(out.stdout, "stable.example.com/v1beta1/3");
    c.apply(&widget("blue-one", "  color: blue\n")).success();
    c.k.run(&[
        "get",
        "widgets",
        "--field-selector",
        "spec.color=blue",
        "-o",
        "name",
    ])
    .success()
    .stdout_is("widget.stable.example.com/blue-one\n");
    c.k.run(&[
        "get",
        "widgets",
        "--field-selector",
        "spec.size=3",
        "-o",
        "name",
    ])
    .failure()
    .stderr_has("field label not supported: spec.size");
    let names = c.k.run(&["get", "gadgets", "-o", "name"]).success().stdout;
    assert!(
        names.contains("widget.stable.example.com/blue-one"),
        "{names}"
    );
    c.k.run(&["get", "wd", "good", "-o", "name"])
        .success()
        .stdout_is("widget.stable.example.com/good\n");
    let explain = c.k.run(&["explain", "widgets.spec.color"]).success().stdout;
    assert!(explain.contains("The widget's color."), "{explain}");
}

/// Deleting the CRD deletes its objects and stops serving the kind.
fn deleted(c: &Cluster) {
    c.k.run(&["delete", "crd", "widgets.stable.example.com"])
        .success()
        .stdout_is("customresourcedefinition.apiextensions.k8s.io \"widgets.stable.example.com\" deleted\n");
    c.k.run(&["get", "widgets"])
        .failure()
        .stderr_has("the server doesn't have a resource type \"widgets\"");
    c.install_widgets();
    c.k.run(&["get", "widgets", "-o", "name"])
        .success()
        .stdout_is("");
}

/// The whole widget scenario on one kubectl.
fn widget_scenario(bin: &str) {
    let c = Cluster::start(bin, &["--bare", "--api-only"]);
    c.install_widgets();
    admitted_and_defaulted(&c);
    thread::scope(|s| {
        s.spawn(|| refused_case_by_case(&c));
        s.spawn(|| cel_rules(&c));
        s.spawn(|| subresources(&c));
    });
    versions_selectors_and_explain(&c);
    deleted(&c);
}

/// CRDs refused for what is wrong with them, and one whose names are taken.
fn crd_validation_scenario(bin: &str) {
    let c = Cluster::start(bin, &["--bare", "--api-only"]);
    let bad = WIDGETS
        .replace(
            "name: widgets.stable.example.com",
            "name: gadgets.stable.example.com",
        )
        .replace("scope: Namespaced", "scope: Galaxy")
        .replace(
            "  - name: v1beta1\n    served: true\n    storage: false",
            "  - name: v1beta1\n    served: true\n    storage: true",
        )
        .replace("pattern: '^[a-z][a-z0-9-]*$'", "pattern: '(?=a)'")
        .replace("self.minSize <= self.size", "self.minSize <= size");
    let out = c.apply(&bad).failure();
    for cause in [
        "The CustomResourceDefinition \"gadgets.stable.example.com\" is invalid: ",
        r#"metadata.name: Invalid value: "gadgets.stable.example.com": must be spec.names.plural+"."+spec.group"#,
        r#"spec.scope: Unsupported value: "Galaxy": supported values: "Cluster", "Namespaced""#,
        "must have exactly one version marked as storage version",
        "spec.versions[0].schema.openAPIV3Schema.properties[spec].properties[name].pattern: Invalid value: \"(?=a)\": must be a valid regular expression, but isn't: error parsing regexp",
        "spec.versions[0].schema.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule: Invalid value: \"!has(self.minSize) || self.minSize <= size\": compilation failed: ERROR: <input>:1:39: undeclared reference to 'size' (in container '')",
    ] {
        assert!(out.stderr.contains(cause), "missing {cause:?}: {out}");
    }
    let unevaluable = WIDGETS.replace("self.size >= oldSelf.size", "isSemver(self.name)");
    c.apply(&unevaluable)
        .failure()
        .stderr_has("compilation failed: fakekube does not implement the CEL function 'isSemver' (Kubernetes' semver library), so it cannot evaluate this rule");
    c.install_widgets();
    let with_column = WIDGETS.replace(
        "    - name: Size\n",
        "    - name: Owner\n      type: string\n      jsonPath: .spec.owner\n    - name: Size\n",
    );
    c.k.run_input(&with_column, &["apply", "--server-side", "--force-conflicts", "-f", "-"])
        .success()
        .stdout_is("customresourcedefinition.apiextensions.k8s.io/widgets.stable.example.com serverside-applied\n");
    let columns =
        c.k.run(&[
            "get",
            "crd",
            "widgets.stable.example.com",
            "-o",
            "jsonpath={.spec.versions[0].additionalPrinterColumns[*].name}",
        ])
        .success()
        .stdout;
    assert_eq!(columns, "Color Owner Size");
    let rival = WIDGETS
        .replace(
            "name: widgets.stable.example.com",
            "name: gizmos.stable.example.com",
        )
        .replace("plural: widgets", "plural: gizmos")
        .replace("singular: widget", "singular: gizmo")
        .replace("shortNames: [wd]", "shortNames: [gz]");
    c.apply(&rival).success();
    let conditions = c
        .k
        .run(&["get", "crd", "gizmos.stable.example.com", "-o", r#"jsonpath={range .status.conditions[*]}{.type}={.status}/{.reason}: {.message}{"\n"}{end}"#])
        .success()
        .stdout;
    assert!(
        conditions
            .contains("NamesAccepted=False/ListKindConflict: \"WidgetList\" is already in use"),
        "{conditions}"
    );
    assert!(
        conditions.contains("Established=False/NotAccepted: not all names are accepted"),
        "{conditions}"
    );
    c.k.run(&[
        "wait",
        "--for",
        "condition=established",
        "--timeout=1s",
        "crd/gizmos.stable.example.com",
    ])
    .failure();
    c.k.run(&["delete", "crd", "widgets.stable.example.com"])
        .success();
    c.k.run(&[
        "wait",
        "--for",
        "condition=established",
        "--timeout=50s",
        "crd/gizmos.stable.example.com",
    ])
    .success();
}

/// Every document of the agent-sandbox release (namespace, CRDs, service account, RBAC,
/// services, Deployment), applied to a bare server and to one that installed the CRDs itself;
/// the controller's service account then holds the permissions its ClusterRole grants.
fn release_manifests_scenario(bin: &str) {
    let manifest = RELEASE;
    for extra in [&["--bare"][..], &[][..]] {
        let c = Cluster::start(bin, extra);
        let out = c.apply(manifest).success();
        for line in [
            "namespace/agent-sandbox-system",
            "customresourcedefinition.apiextensions.k8s.io/sandboxes.agents.x-k8s.io",
            "serviceaccount/agent-sandbox-controller",
            "service/agent-sandbox-webhook-service",
            "deployment.apps/agent-sandbox-controller",
            "role.rbac.authorization.k8s.io/agent-sandbox-controller",
            "clusterrole.rbac.authorization.k8s.io/agent-sandbox-controller",
            "clusterrole.rbac.authorization.k8s.io/agent-sandbox-controller-extensions",
            "rolebinding.rbac.authorization.k8s.io/agent-sandbox-controller",
            "clusterrolebinding.rbac.authorization.k8s.io/agent-sandbox-controller",
            "clusterrolebinding.rbac.authorization.k8s.io/agent-sandbox-controller-extensions",
        ] {
            assert!(out.stdout.contains(line), "missing {line:?}: {out}");
        }
        c.k.run(&[
            "wait",
            "--for",
            "condition=established",
            "--timeout=50s",
            "crd/sandboxclaims.extensions.agents.x-k8s.io",
        ])
        .success();
        let image =
            c.k.run(&[
                "-n",
                "agent-sandbox-system",
                "get",
                "deployment",
                "agent-sandbox-controller",
                "-o",
                "jsonpath={.spec.template.spec.containers[0].image}",
            ])
            .success()
            .stdout;
        assert_eq!(
            image,
            "registry.k8s.io/agent-sandbox/agent-sandbox-controller:v1.0.8"
        );
        let as_controller =
            "--as=system:serviceaccount:agent-sandbox-system:agent-sandbox-controller";
        for (verb, resource, expected) in [
            ("update", "sandboxes.agents.x-k8s.io", "yes"),
            ("create", "pods", "yes"),
            ("delete", "customresourcedefinitions", "no"),
        ] {
            let answer =
                c.k.run(&["auth", "can-i", as_controller, verb, resource, "-A"]);
            assert_eq!(
                answer.stdout.trim(),
                expected,
                "{verb} {resource}: {answer}"
            );
        }
    }
}

macro_rules! on_kubectl {
    ($module:ident, $minor:expr) => {
        mod $module {
            #[test]
            fn a_crd_of_the_tests_own_is_served_validated_and_deleted() {
                if let Some(bin) = super::installed($minor) {
                    super::widget_scenario(&bin);
                }
            }

            #[test]
            fn bad_crds_are_refused_and_a_name_conflict_waits() {
                if let Some(bin) = super::installed($minor) {
                    super::crd_validation_scenario(&bin);
                }
            }
        }
    };
}

on_kubectl!(kubectl_1_30, 30);
on_kubectl!(kubectl_1_31, 31);
on_kubectl!(kubectl_1_32, 32);
on_kubectl!(kubectl_1_33, 33);

#[test]
fn release_manifests_apply_and_bind_the_controller() {
    if let Some(bin) = installed(33) {
        release_manifests_scenario(&bin);
    }
}
