//! The built-in kinds: their group, version, names, scope, verbs and subresources, as a static
//! table of data. The registry ([`crate::registry`]) starts from it and adds the kinds that
//! CustomResourceDefinitions define at run time.
//!
//! Adding a built-in kind is adding one entry to [`BUILT_IN`].

/// What the store does with a kind's `status` on writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StatusMode {
    /// No status subresource: `status` is written like any other field.
    Plain,
    /// A `status` subresource: main-resource writes keep the stored status, status writes keep
    /// everything else.
    Subresource,
}

/// One built-in resource, as data.
#[derive(Debug)]
pub(crate) struct BuiltIn {
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
    /// Field selectors accepted on lists beyond metadata.name/namespace.
    pub(crate) extra_fields: &'static [&'static str],
    /// Whether the object has a `spec` whose changes bump `generation`.
    pub(crate) has_spec: bool,
    /// The verbs of the main resource.
    pub(crate) verbs: &'static [&'static str],
    /// Whether the server only takes `create` (virtual resources such as reviews).
    pub(crate) create_only: bool,
    /// Another view of a resource stored under a different group: objects are kept as that
    /// `(group, version)` stores them and converted on every read and write (the API server
    /// keeps `events.k8s.io/v1` Events as core `v1` Events).
    pub(crate) stored_as: Option<(&'static str, &'static str)>,
    /// Field selectors of this view and the stored fields they select on.
    pub(crate) field_aliases: &'static [(&'static str, &'static str)],
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

const fn core(
    kind: &'static str,
    plural: &'static str,
    singular: &'static str,
    namespaced: bool,
    short_names: &'static [&'static str],
    status: StatusMode,
    has_spec: bool,
) -> BuiltIn {
    BuiltIn {
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
        extra_fields: &[],
        has_spec,
        verbs: ALL_VERBS,
        create_only: false,
        stored_as: None,
        field_aliases: &[],
    }
}

/// A kind of an API group other than core, version `v1`.
#[allow(clippy::too_many_arguments)]
const fn grouped(
    group: &'static str,
    kind: &'static str,
    plural: &'static str,
    singular: &'static str,
    namespaced: bool,
    short_names: &'static [&'static str],
    status: StatusMode,
    has_spec: bool,
) -> BuiltIn {
    BuiltIn {
        group,
        ..core(
            kind,
            plural,
            singular,
            namespaced,
            short_names,
            status,
            has_spec,
        )
    }
}

/// The workload kinds `kubectl get all` lists.
const ALL: &[&str] = &["all"];
const READ_ONLY: &[&str] = &["get", "list"];

/// Every resource fakekube serves, in discovery order.
pub(crate) static BUILT_IN: &[BuiltIn] = &[
    BuiltIn {
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
    BuiltIn {
        categories: &["all"],
        extra_subresources: &[
            ("exec", &["create", "get"]),
            ("attach", &["create", "get"]),
            ("portforward", &["create", "get"]),
            ("log", &["get"]),
            ("eviction", &["create"]),
            ("ephemeralcontainers", &["get", "patch", "update"]),
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
    BuiltIn {
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
    core(
        "PersistentVolume",
        "persistentvolumes",
        "persistentvolume",
        false,
        &["pv"],
        StatusMode::Subresource,
        true,
    ),
    BuiltIn {
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
    BuiltIn {
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
    BuiltIn {
        extra_fields: &[
            "involvedObject.kind",
            "involvedObject.name",
            "involvedObject.namespace",
            "involvedObject.uid",
            "involvedObject.apiVersion",
            "involvedObject.fieldPath",
            "reason",
            "reportingComponent",
            "source",
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
    core(
        "ConfigMap",
        "configmaps",
        "configmap",
        true,
        &["cm"],
        StatusMode::Plain,
        false,
    ),
    BuiltIn {
        extra_fields: &["spec.unschedulable"],
        ..core(
            "Node",
            "nodes",
            "node",
            false,
            &["no"],
            StatusMode::Subresource,
            false,
        )
    },
    core(
        "Endpoints",
        "endpoints",
        "endpoints",
        true,
        &["ep"],
        StatusMode::Plain,
        false,
    ),
    BuiltIn {
        categories: ALL,
        scale: true,
        ..core(
            "ReplicationController",
            "replicationcontrollers",
            "replicationcontroller",
            true,
            &["rc"],
            StatusMode::Subresource,
            true,
        )
    },
    BuiltIn {
        verbs: READ_ONLY,
        ..core(
            "ComponentStatus",
            "componentstatuses",
            "componentstatus",
            false,
            &["cs"],
            StatusMode::Plain,
            false,
        )
    },
    core(
        "LimitRange",
        "limitranges",
        "limitrange",
        true,
        &["limits"],
        StatusMode::Plain,
        false,
    ),
    core(
        "ResourceQuota",
        "resourcequotas",
        "resourcequota",
        true,
        &["quota"],
        StatusMode::Subresource,
        false,
    ),
    core(
        "PodTemplate",
        "podtemplates",
        "podtemplate",
        true,
        &[],
        StatusMode::Plain,
        false,
    ),
    BuiltIn {
        group: "storage.k8s.io",
        ..core(
            "StorageClass",
            "storageclasses",
            "storageclass",
            false,
            &["sc"],
            StatusMode::Plain,
            false,
        )
    },
    BuiltIn {
        group: "storage.k8s.io",
        ..core(
            "CSIDriver",
            "csidrivers",
            "csidriver",
            false,
            &[],
            StatusMode::Plain,
            false,
        )
    },
    BuiltIn {
        group: "storage.k8s.io",
        ..core(
            "CSINode",
            "csinodes",
            "csinode",
            false,
            &[],
            StatusMode::Plain,
            false,
        )
    },
    BuiltIn {
        group: "storage.k8s.io",
        ..core(
            "CSIStorageCapacity",
            "csistoragecapacities",
            "csistoragecapacity",
            true,
            &[],
            StatusMode::Plain,
            false,
        )
    },
    BuiltIn {
        group: "storage.k8s.io",
        ..core(
            "VolumeAttachment",
            "volumeattachments",
            "volumeattachment",
            false,
            &[],
            StatusMode::Subresource,
            true,
        )
    },
    BuiltIn {
        group: "flowcontrol.apiserver.k8s.io",
        ..core(
            "FlowSchema",
            "flowschemas",
            "flowschema",
            false,
            &[],
            StatusMode::Subresource,
            true,
        )
    },
    BuiltIn {
        group: "flowcontrol.apiserver.k8s.io",
        ..core(
            "PriorityLevelConfiguration",
            "prioritylevelconfigurations",
            "prioritylevelconfiguration",
            false,
            &[],
            StatusMode::Subresource,
            true,
        )
    },
    BuiltIn {
        group: "node.k8s.io",
        ..core(
            "RuntimeClass",
            "runtimeclasses",
            "runtimeclass",
            false,
            &[],
            StatusMode::Plain,
            false,
        )
    },
    BuiltIn {
        group: "scheduling.k8s.io",
        ..core(
            "PriorityClass",
            "priorityclasses",
            "priorityclass",
            false,
            &["pc"],
            StatusMode::Plain,
            false,
        )
    },
    BuiltIn {
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
    grouped(
        "networking.k8s.io",
        "Ingress",
        "ingresses",
        "ingress",
        true,
        &["ing"],
        StatusMode::Subresource,
        true,
    ),
    grouped(
        "networking.k8s.io",
        "IngressClass",
        "ingressclasses",
        "ingressclass",
        false,
        &[],
        StatusMode::Plain,
        true,
    ),
    // HorizontalPodAutoscalers are stored as `autoscaling/v2`; `v1` is a view of them.
    BuiltIn {
        version: "v2",
        categories: ALL,
        ..grouped(
            "autoscaling",
            "HorizontalPodAutoscaler",
            "horizontalpodautoscalers",
            "horizontalpodautoscaler",
            true,
            &["hpa"],
            StatusMode::Subresource,
            true,
        )
    },
    BuiltIn {
        categories: ALL,
        stored_as: Some(("autoscaling", "v2")),
        ..grouped(
            "autoscaling",
            "HorizontalPodAutoscaler",
            "horizontalpodautoscalers",
            "horizontalpodautoscaler",
            true,
            &["hpa"],
            StatusMode::Subresource,
            true,
        )
    },
    BuiltIn {
        categories: ALL,
        scale: true,
        ..grouped(
            "apps",
            "Deployment",
            "deployments",
            "deployment",
            true,
            &["deploy"],
            StatusMode::Subresource,
            true,
        )
    },
    BuiltIn {
        categories: ALL,
        scale: true,
        ..grouped(
            "apps",
            "ReplicaSet",
            "replicasets",
            "replicaset",
            true,
            &["rs"],
            StatusMode::Subresource,
            true,
        )
    },
    BuiltIn {
        categories: ALL,
        scale: true,
        ..grouped(
            "apps",
            "StatefulSet",
            "statefulsets",
            "statefulset",
            true,
            &["sts"],
            StatusMode::Subresource,
            true,
        )
    },
    BuiltIn {
        categories: ALL,
        ..grouped(
            "apps",
            "DaemonSet",
            "daemonsets",
            "daemonset",
            true,
            &["ds"],
            StatusMode::Subresource,
            true,
        )
    },
    grouped(
        "apps",
        "ControllerRevision",
        "controllerrevisions",
        "controllerrevision",
        true,
        &[],
        StatusMode::Plain,
        false,
    ),
    BuiltIn {
        categories: ALL,
        extra_fields: &["status.successful"],
        ..grouped(
            "batch",
            "Job",
            "jobs",
            "job",
            true,
            &[],
            StatusMode::Subresource,
            true,
        )
    },
    BuiltIn {
        categories: ALL,
        ..grouped(
            "batch",
            "CronJob",
            "cronjobs",
            "cronjob",
            true,
            &["cj"],
            StatusMode::Subresource,
            true,
        )
    },
    // The second view of core Events, stored as them.
    BuiltIn {
        stored_as: Some(("", "v1")),
        extra_fields: &[
            "regarding.kind",
            "regarding.name",
            "regarding.namespace",
            "regarding.uid",
            "reason",
            "reportingController",
            "type",
        ],
        field_aliases: &[
            ("regarding.kind", "involvedObject.kind"),
            ("regarding.name", "involvedObject.name"),
            ("regarding.namespace", "involvedObject.namespace"),
            ("regarding.uid", "involvedObject.uid"),
            ("reportingController", "reportingComponent"),
        ],
        ..grouped(
            "events.k8s.io",
            "Event",
            "events",
            "event",
            true,
            &["ev"],
            StatusMode::Plain,
            false,
        )
    },
    grouped(
        "discovery.k8s.io",
        "EndpointSlice",
        "endpointslices",
        "endpointslice",
        true,
        &[],
        StatusMode::Plain,
        true,
    ),
    grouped(
        "coordination.k8s.io",
        "Lease",
        "leases",
        "lease",
        true,
        &[],
        StatusMode::Plain,
        false,
    ),
    grouped(
        "policy",
        "PodDisruptionBudget",
        "poddisruptionbudgets",
        "poddisruptionbudget",
        true,
        &["pdb"],
        StatusMode::Subresource,
        true,
    ),
    BuiltIn {
        extra_subresources: &[("approval", &["get", "patch", "update"])],
        ..grouped(
            "certificates.k8s.io",
            "CertificateSigningRequest",
            "certificatesigningrequests",
            "certificatesigningrequest",
            false,
            &["csr"],
            StatusMode::Subresource,
            true,
        )
    },
    BuiltIn {
        group: "apiextensions.k8s.io",
        categories: &["api-extensions"],
        ..core(
            "CustomResourceDefinition",
            "customresourcedefinitions",
            "customresourcedefinition",
            false,
            &["crd", "crds"],
            StatusMode::Subresource,
            true,
        )
    },
    BuiltIn {
        categories: &["api-extensions"],
        ..grouped(
            "admissionregistration.k8s.io",
            "MutatingWebhookConfiguration",
            "mutatingwebhookconfigurations",
            "mutatingwebhookconfiguration",
            false,
            &[],
            StatusMode::Plain,
            false,
        )
    },
    BuiltIn {
        categories: &["api-extensions"],
        ..grouped(
            "admissionregistration.k8s.io",
            "ValidatingWebhookConfiguration",
            "validatingwebhookconfigurations",
            "validatingwebhookconfiguration",
            false,
            &[],
            StatusMode::Plain,
            false,
        )
    },
    BuiltIn {
        categories: &["api-extensions"],
        ..grouped(
            "admissionregistration.k8s.io",
            "ValidatingAdmissionPolicy",
            "validatingadmissionpolicies",
            "validatingadmissionpolicy",
            false,
            &[],
            StatusMode::Subresource,
            true,
        )
    },
    BuiltIn {
        categories: &["api-extensions"],
        ..grouped(
            "admissionregistration.k8s.io",
            "ValidatingAdmissionPolicyBinding",
            "validatingadmissionpolicybindings",
            "validatingadmissionpolicybinding",
            false,
            &[],
            StatusMode::Plain,
            true,
        )
    },
    BuiltIn {
        group: "apiregistration.k8s.io",
        categories: &["api-extensions"],
        ..core(
            "APIService",
            "apiservices",
            "apiservice",
            false,
            &[],
            StatusMode::Subresource,
            true,
        )
    },
    BuiltIn {
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
    BuiltIn {
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
    // Authentication and authorization: the four RBAC kinds and the reviews beyond the
    // self-subject ones above.
    BuiltIn {
        group: "rbac.authorization.k8s.io",
        ..core(
            "ClusterRole",
            "clusterroles",
            "clusterrole",
            false,
            &[],
            StatusMode::Plain,
            false,
        )
    },
    BuiltIn {
        group: "rbac.authorization.k8s.io",
        ..core(
            "ClusterRoleBinding",
            "clusterrolebindings",
            "clusterrolebinding",
            false,
            &[],
            StatusMode::Plain,
            false,
        )
    },
    BuiltIn {
        group: "rbac.authorization.k8s.io",
        ..core("Role", "roles", "role", true, &[], StatusMode::Plain, false)
    },
    BuiltIn {
        group: "rbac.authorization.k8s.io",
        ..core(
            "RoleBinding",
            "rolebindings",
            "rolebinding",
            true,
            &[],
            StatusMode::Plain,
            false,
        )
    },
    BuiltIn {
        group: "authorization.k8s.io",
        verbs: CREATE_ONLY,
        create_only: true,
        ..core(
            "LocalSubjectAccessReview",
            "localsubjectaccessreviews",
            "",
            true,
            &[],
            StatusMode::Plain,
            true,
        )
    },
    BuiltIn {
        group: "authorization.k8s.io",
        verbs: CREATE_ONLY,
        create_only: true,
        ..core(
            "SubjectAccessReview",
            "subjectaccessreviews",
            "",
            false,
            &[],
            StatusMode::Plain,
            true,
        )
    },
    BuiltIn {
        group: "authentication.k8s.io",
        verbs: CREATE_ONLY,
        create_only: true,
        ..core(
            "SelfSubjectReview",
            "selfsubjectreviews",
            "",
            false,
            &[],
            StatusMode::Plain,
            false,
        )
    },
    BuiltIn {
        group: "authentication.k8s.io",
        verbs: CREATE_ONLY,
        create_only: true,
        ..core(
            "TokenReview",
            "tokenreviews",
            "",
            false,
            &[],
            StatusMode::Plain,
            true,
        )
    },
];
