//! The kinds fakekube serves: their group, version, names, scope, verbs and subresources.
//!
//! Discovery, routing, authorization and the store all read this one table.

use crate::schema::{self, Schema};

/// What the store does with a kind's `status` on writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StatusMode {
    /// No status subresource: `status` is written like any other field.
    Plain,
    /// A `status` subresource: main-resource writes keep the stored status, status writes keep
    /// everything else.
    Subresource,
}

/// One served resource.
#[derive(Debug)]
pub(crate) struct ResourceType {
    /// API group, empty for core.
    pub(crate) group: &'static str,
    /// Version.
    pub(crate) version: &'static str,
    /// Kind.
    pub(crate) kind: &'static str,
    /// Plural resource name, as in URLs.
    pub(crate) plural: &'static str,
    /// Singular name.
    pub(crate) singular: &'static str,
    /// Whether objects live in a namespace.
    pub(crate) namespaced: bool,
    /// Short names for kubectl.
    pub(crate) short_names: &'static [&'static str],
    /// Categories (`all`...).
    pub(crate) categories: &'static [&'static str],
    /// Status handling.
    pub(crate) status: StatusMode,
    /// Whether the scale subresource is served.
    pub(crate) scale: bool,
    /// Other subresources (`exec`, `attach`, `token`...) and their verbs.
    pub(crate) extra_subresources: &'static [(&'static str, &'static [&'static str])],
    /// Whether it is a custom resource (merge patch only, schema from a CRD).
    pub(crate) custom: bool,
    /// Field selectors accepted on lists beyond metadata.name/namespace.
    pub(crate) extra_fields: &'static [&'static str],
    /// Whether the object has a `spec` whose changes bump `generation`.
    pub(crate) has_spec: bool,
    /// The verbs of the main resource.
    pub(crate) verbs: &'static [&'static str],
    /// Whether the server only takes `create` (virtual resources such as reviews).
    pub(crate) create_only: bool,
}

const ALL_VERBS: &[&str] = &[
    "create",
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "update",
    "watch",
];
const CREATE_ONLY: &[&str] = &["create"];

impl ResourceType {
    /// `v1` or `agents.x-k8s.io/v1beta1`.
    pub(crate) fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.to_string()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    /// The CRD schema of a custom kind.
    pub(crate) fn schema(&self) -> Option<&'static Schema> {
        if !self.custom {
            return None;
        }
        schema::compiled_in(self.plural)
    }

    /// Whether `name` is a subresource this kind serves.
    pub(crate) fn has_subresource(&self, name: &str) -> bool {
        (name == "status" && self.status == StatusMode::Subresource)
            || (name == "scale" && self.scale)
            || self.extra_subresources.iter().any(|(n, _)| *n == name)
    }
}

const fn core(
    kind: &'static str,
    plural: &'static str,
    singular: &'static str,
    namespaced: bool,
    short_names: &'static [&'static str],
    status: StatusMode,
    has_spec: bool,
) -> ResourceType {
    ResourceType {
        group: "",
        version: "v1",
        kind,
        plural,
        singular,
        namespaced,
        short_names,
        categories: &[],
        status,
        scale: false,
        extra_subresources: &[],
        custom: false,
        extra_fields: &[],
        has_spec,
        verbs: ALL_VERBS,
        create_only: false,
    }
}

/// Every resource fakekube serves, in discovery order.
pub(crate) static RESOURCES: &[ResourceType] = &[
    ResourceType {
        categories: &[],
        verbs: &[
            "create", "delete", "get", "list", "patch", "update", "watch",
        ],
        ..core(
            "Namespace",
            "namespaces",
            "namespace",
            false,
            &["ns"],
            StatusMode::Subresource,
            true,
        )
    },
    ResourceType {
        categories: &["all"],
        extra_subresources: &[
            ("exec", &["create", "get"]),
            ("attach", &["create", "get"]),
            ("portforward", &["create", "get"]),
            ("log", &["get"]),
        ],
        extra_fields: &["status.phase", "spec.nodeName", "spec.serviceAccountName"],
        ..core(
            "Pod",
            "pods",
            "pod",
            true,
            &["po"],
            StatusMode::Subresource,
            true,
        )
    },
    ResourceType {
        categories: &["all"],
        ..core(
            "Service",
            "services",
            "service",
            true,
            &["svc"],
            StatusMode::Subresource,
            true,
        )
    },
    core(
        "PersistentVolumeClaim",
        "persistentvolumeclaims",
        "persistentvolumeclaim",
        true,
        &["pvc"],
        StatusMode::Subresource,
        true,
    ),
    ResourceType {
        extra_fields: &["type"],
        ..core(
            "Secret",
            "secrets",
            "secret",
            true,
            &[],
            StatusMode::Plain,
            false,
        )
    },
    ResourceType {
        extra_subresources: &[("token", &["create"])],
        ..core(
            "ServiceAccount",
            "serviceaccounts",
            "serviceaccount",
            true,
            &["sa"],
            StatusMode::Plain,
            false,
        )
    },
    ResourceType {
        extra_fields: &[
            "involvedObject.kind",
            "involvedObject.name",
            "involvedObject.namespace",
            "involvedObject.uid",
            "reason",
            "type",
        ],
        ..core(
            "Event",
            "events",
            "event",
            true,
            &["ev"],
            StatusMode::Plain,
            false,
        )
    },
    ResourceType {
        group: "networking.k8s.io",
        short_names: &["netpol"],
        ..core(
            "NetworkPolicy",
            "networkpolicies",
            "networkpolicy",
            true,
            &[],
            StatusMode::Plain,
            true,
        )
    },
    ResourceType {
        group: "agents.x-k8s.io",
        version: "v1beta1",
        categories: &[],
        custom: true,
        ..core(
            "Sandbox",
            "sandboxes",
            "sandbox",
            true,
            &["sandbox"],
            StatusMode::Subresource,
            true,
        )
    },
    ResourceType {
        group: "extensions.agents.x-k8s.io",
        version: "v1beta1",
        custom: true,
        ..core(
            "SandboxTemplate",
            "sandboxtemplates",
            "sandboxtemplate",
            true,
            &["sandboxtemplate"],
            StatusMode::Plain,
            true,
        )
    },
    ResourceType {
        group: "extensions.agents.x-k8s.io",
        version: "v1beta1",
        custom: true,
        scale: true,
        ..core(
            "SandboxWarmPool",
            "sandboxwarmpools",
            "sandboxwarmpool",
            true,
            &["swp"],
            StatusMode::Subresource,
            true,
        )
    },
    ResourceType {
        group: "extensions.agents.x-k8s.io",
        version: "v1beta1",
        custom: true,
        ..core(
            "SandboxClaim",
            "sandboxclaims",
            "sandboxclaim",
            true,
            &["sandboxclaim"],
            StatusMode::Subresource,
            true,
        )
    },
    ResourceType {
        group: "authorization.k8s.io",
        verbs: CREATE_ONLY,
        create_only: true,
        ..core(
            "SelfSubjectAccessReview",
            "selfsubjectaccessreviews",
            "",
            false,
            &[],
            StatusMode::Plain,
            true,
        )
    },
    ResourceType {
        group: "authorization.k8s.io",
        verbs: CREATE_ONLY,
        create_only: true,
        ..core(
            "SelfSubjectRulesReview",
            "selfsubjectrulesreviews",
            "",
            false,
            &[],
            StatusMode::Plain,
            true,
        )
    },
];

/// The resource served at `group`/`version` under `plural`.
pub(crate) fn find(group: &str, version: &str, plural: &str) -> Option<&'static ResourceType> {
    RESOURCES
        .iter()
        .find(|r| r.group == group && r.version == version && r.plural == plural)
}

/// The group versions served, in discovery order, each with its resources.
pub(crate) fn group_versions() -> Vec<(&'static str, &'static str)> {
    let mut out: Vec<(&str, &str)> = Vec::new();
    for r in RESOURCES {
        if !out.contains(&(r.group, r.version)) {
            out.push((r.group, r.version));
        }
    }
    out
}
