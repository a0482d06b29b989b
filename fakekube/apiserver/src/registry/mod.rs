//! The registry of served kinds: the built-in table ([`crate::resources`]) and the kinds that
//! CustomResourceDefinitions add and remove at run time, each described the same way
//! ([`ResourceType`]): names, scope, verbs, subresources, schema, printer columns, the storage
//! version and how objects convert between versions.
//!
//! Routing, discovery, OpenAPI, authorization and the store all read it. Entries are shared
//! (`Arc`) and immutable: a CRD that changes replaces its entries. Every change bumps the
//! registry's generation, which discovery and OpenAPI documents hash into their ETags.
//!
//! # Layout
//! - `version`: Kubernetes' ordering of version names (`v2` before `v1beta1`).
//! - `convert`: objects rewritten to another version of their kind (conversion `None`), or
//!   handed to an in-process converter (conversion `Webhook`).
//! - `mutate`: in-process mutating admission webhooks, called on writes of their kind.
//! - `events`: core `v1` Events and their `events.k8s.io/v1` view, one stored resource.

mod autoscaling;
mod convert;
mod events;
mod mutate;
pub(crate) mod version;

pub use convert::Converter;
pub use mutate::Mutator;

use crate::resources::{BUILT_IN, BuiltIn, StatusMode};
use crate::schema::Schema;
use std::collections::HashMap;
use std::sync::{Arc, OnceLock, RwLock, RwLockReadGuard, RwLockWriteGuard};
use tokio_util::sync::CancellationToken;

/// Where the scale subresource reads and writes replicas, as the CRD's JSON paths
/// (`.spec.replicas`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ScalePaths {
    /// `specReplicasPath`.
    pub(crate) spec_replicas: String,
    /// `statusReplicasPath`.
    pub(crate) status_replicas: String,
    /// `labelSelectorPath`, when set.
    pub(crate) label_selector: Option<String>,
}

/// One `additionalPrinterColumns` entry of a CRD version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PrinterColumn {
    /// The column's header.
    pub(crate) name: String,
    /// `integer`, `number`, `string`, `boolean` or `date`.
    pub(crate) type_name: String,
    /// The OpenAPI format, when set.
    pub(crate) format: Option<String>,
    /// What the column shows.
    pub(crate) description: Option<String>,
    /// 0 for the default columns, more for `-o wide`.
    pub(crate) priority: i64,
    /// The simple JSON path of the value (`.spec.replicas`).
    pub(crate) json_path: String,
}

/// How a kind's objects move between its versions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Conversion {
    /// Only `apiVersion` changes (built-in kinds, and CRDs with strategy `None`).
    None,
    /// Between core `v1` Events and `events.k8s.io/v1` Events, whose fields have other names.
    Events,
    /// Between `autoscaling/v2` HorizontalPodAutoscalers and `autoscaling/v1`, whose other
    /// metrics ride in annotations.
    Autoscaling,
    /// A conversion webhook; fakekube calls an in-process [`Converter`] instead, and without
    /// one answers as the API server does when the webhook cannot be reached.
    Webhook {
        /// What the API server would have posted to: `https://<service>.<namespace>.svc:<port><path>`
        /// or the configured URL.
        url: String,
        /// The service name, when the webhook is a service (its absence is the error).
        service: Option<String>,
    },
}

/// One served (or storage-only) group, version and resource.
#[derive(Debug)]
pub struct ResourceType {
    /// API group, empty for core.
    pub(crate) group: String,
    /// Version.
    pub(crate) version: String,
    /// Kind.
    pub(crate) kind: String,
    /// The kind of its lists (`<Kind>List`).
    pub(crate) list_kind: String,
    /// Plural resource name, as in URLs.
    pub(crate) plural: String,
    /// Singular name.
    pub(crate) singular: String,
    /// Whether objects live in a namespace.
    pub namespaced: bool,
    /// Short names for kubectl.
    pub(crate) short_names: Vec<String>,
    /// Categories (`all`...).
    pub(crate) categories: Vec<String>,
    /// Status handling.
    pub(crate) status: StatusMode,
    /// The scale subresource, when served.
    pub(crate) scale: Option<ScalePaths>,
    /// Other subresources (`exec`, `attach`, `token`...) and their verbs.
    pub(crate) extra_subresources: &'static [(&'static str, &'static [&'static str])],
    /// Whether it is a custom resource (merge patch only, schema from a CRD).
    pub(crate) custom: bool,
    /// Field selectors accepted on lists beyond metadata.name/namespace.
    pub(crate) selectable_fields: Vec<String>,
    /// Whether the object has a `spec` whose changes bump `generation`.
    pub(crate) has_spec: bool,
    /// The verbs of the main resource.
    pub(crate) verbs: &'static [&'static str],
    /// Whether the server only takes `create` (virtual resources such as reviews).
    pub create_only: bool,
    /// Whether requests may use this version (a CRD's storage version may be unserved).
    pub(crate) served: bool,
    /// The version objects of this kind are stored in.
    pub(crate) storage_version: String,
    /// The group objects of this kind are stored in: its own, except for a second view of a
    /// resource of another group (`events.k8s.io` Events are stored as core Events).
    pub(crate) storage_group: String,
    /// Field selectors of a second view and the stored fields they select on.
    pub(crate) field_aliases: &'static [(&'static str, &'static str)],
    /// The structural schema of this version (custom kinds).
    pub(crate) schema: Option<Arc<Schema>>,
    /// `additionalPrinterColumns` of this version.
    pub(crate) printer_columns: Vec<PrinterColumn>,
    /// The `Warning` every request to this version gets, when it is deprecated.
    pub(crate) deprecation_warning: Option<String>,
    /// How objects convert to and from this version.
    pub(crate) conversion: Conversion,
    /// The CustomResourceDefinition that defines it (`<plural>.<group>`), `None` for built-ins.
    pub(crate) defined_by: Option<String>,
    /// Fires when the registry stops serving this entry: its watches end.
    pub(crate) retired: CancellationToken,
    /// [`ResourceType::fingerprint`], once computed.
    fingerprint: OnceLock<u64>,
}

/// Every verb of a stored resource.
pub(crate) const ALL_VERBS: &[&str] = &[
    "create",
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "update",
    "watch",
];

impl ResourceType {
    /// The entry of one built-in kind.
    fn built_in(b: &BuiltIn) -> Self {
        ResourceType {
            group: b.group.to_string(),
            version: b.version.to_string(),
            kind: b.kind.to_string(),
            list_kind: format!("{}List", b.kind),
            plural: b.plural.to_string(),
            singular: b.singular.to_string(),
            namespaced: b.namespaced,
            short_names: b.short_names.iter().map(|s| (*s).to_string()).collect(),
            categories: b.categories.iter().map(|s| (*s).to_string()).collect(),
            status: b.status,
            // A built-in kind's Scale shows the selector of `.spec.selector`, printed.
            scale: b.scale.then(|| ScalePaths {
                spec_replicas: ".spec.replicas".into(),
                status_replicas: ".status.replicas".into(),
                label_selector: None,
            }),
            extra_subresources: b.extra_subresources,
            custom: false,
            selectable_fields: b.extra_fields.iter().map(|s| (*s).to_string()).collect(),
            has_spec: b.has_spec,
            verbs: b.verbs,
            create_only: b.create_only,
            served: true,
            storage_version: b.stored_as.map_or(b.version, |(_, v)| v).to_string(),
            storage_group: b.stored_as.map_or(b.group, |(g, _)| g).to_string(),
            field_aliases: b.field_aliases,
            schema: None,
            printer_columns: Vec::new(),
            deprecation_warning: None,
            conversion: match b.stored_as {
                Some(("autoscaling", _)) => Conversion::Autoscaling,
                Some(_) => Conversion::Events,
                None => Conversion::None,
            },
            defined_by: None,
            retired: CancellationToken::new(),
            fingerprint: OnceLock::new(),
        }
    }

    /// A placeholder for a custom kind that is not established: never served, nothing stored
    /// under it. In-process clients (the controllers) hold one where they would hold the kind.
    pub(crate) fn absent(group: &str, version: &str, plural: &str, kind: &str) -> Self {
        ResourceType {
            group: group.to_string(),
            version: version.to_string(),
            kind: kind.to_string(),
            list_kind: format!("{kind}List"),
            plural: plural.to_string(),
            singular: kind.to_ascii_lowercase(),
            namespaced: true,
            short_names: Vec::new(),
            categories: Vec::new(),
            status: StatusMode::Subresource,
            scale: None,
            extra_subresources: &[],
            custom: true,
            selectable_fields: Vec::new(),
            has_spec: true,
            verbs: &[],
            create_only: false,
            served: false,
            storage_version: version.to_string(),
            storage_group: group.to_string(),
            field_aliases: &[],
            schema: None,
            printer_columns: Vec::new(),
            deprecation_warning: None,
            conversion: Conversion::None,
            defined_by: None,
            retired: CancellationToken::new(),
            fingerprint: OnceLock::new(),
        }
    }

    /// `v1` or `agents.x-k8s.io/v1beta1`.
    pub(crate) fn api_version(&self) -> String {
        api_version(&self.group, &self.version)
    }

    /// `pods` or `sandboxes.agents.x-k8s.io`: the resource, independent of its version.
    pub(crate) fn group_resource(&self) -> String {
        if self.group.is_empty() {
            self.plural.clone()
        } else {
            format!("{}.{}", self.plural, self.group)
        }
    }

    /// `pods` or `sandboxes.agents.x-k8s.io` of the resource its objects are stored as: the
    /// store's key, shared by every view of one stored resource.
    pub(crate) fn storage_resource(&self) -> String {
        if self.storage_group.is_empty() {
            self.plural.clone()
        } else {
            format!("{}.{}", self.plural, self.storage_group)
        }
    }

    /// Whether `other` is the same stored resource, in any version or view.
    pub(crate) fn same_resource(&self, other: &ResourceType) -> bool {
        self.storage_group == other.storage_group && self.plural == other.plural
    }

    /// The stored field a field selector of this view names (itself, but for aliases).
    pub(crate) fn stored_field<'a>(&self, field: &'a str) -> &'a str {
        self.field_aliases
            .iter()
            .find(|(served, _)| *served == field)
            .map_or(field, |(_, stored)| stored)
    }

    /// The structural schema of this version, for custom kinds.
    pub(crate) fn schema(&self) -> Option<&Schema> {
        self.schema.as_deref()
    }

    /// Whether `name` is a subresource this kind serves.
    pub(crate) fn has_subresource(&self, name: &str) -> bool {
        (name == "status" && self.status == StatusMode::Subresource)
            || (name == "scale" && self.scale.is_some())
            || self.extra_subresources.iter().any(|(n, _)| *n == name)
    }

    /// Whether this is the version objects of the kind are stored in (and not a view of
    /// another group's resource).
    pub(crate) fn is_storage_version(&self) -> bool {
        self.version == self.storage_version && self.group == self.storage_group
    }

    /// A hash of this entry's schema, computed once: documents built from the entry hash it
    /// in, so that they change exactly when it does.
    pub(crate) fn fingerprint(&self) -> u64 {
        *self.fingerprint.get_or_init(|| {
            let text = self
                .schema
                .as_ref()
                .map(|s| s.root().to_string())
                .unwrap_or_default();
            fnv1a(text.as_bytes())
        })
    }
}

/// FNV-1a, 64 bits, of `bytes`: stable across runs and processes, for ETags and document
/// hashes.
pub(crate) fn fnv1a(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// `v1` or `<group>/<version>`.
pub(crate) fn api_version(group: &str, version: &str) -> String {
    if group.is_empty() {
        version.to_string()
    } else {
        format!("{group}/{version}")
    }
}

/// The kinds served now, the converters of custom kinds, and the mutators of any kind.
#[derive(Debug)]
pub struct Registry {
    inner: RwLock<Inner>,
    converters: RwLock<HashMap<(String, String), Arc<dyn Converter>>>,
    mutators: RwLock<HashMap<(String, String), Arc<dyn Mutator>>>,
}

#[derive(Debug)]
struct Inner {
    /// Built-ins first, in table order, then each CRD's versions in the order they were
    /// installed.
    entries: Vec<Arc<ResourceType>>,
    /// Bumped by every change.
    generation: u64,
}

impl Default for Registry {
    fn default() -> Self {
        Registry::new()
    }
}

impl Registry {
    /// The built-in kinds, and no CRD.
    pub fn new() -> Self {
        Registry {
            inner: RwLock::new(Inner {
                entries: BUILT_IN
                    .iter()
                    .map(|b| Arc::new(ResourceType::built_in(b)))
                    .collect(),
                generation: 1,
            }),
            converters: RwLock::new(HashMap::new()),
            mutators: RwLock::new(HashMap::new()),
        }
    }

    /// A registry that serves what this one serves now (its CRDs' kinds, converters and
    /// mutators included), and changes apart from it afterwards.
    pub fn copy(&self) -> Registry {
        let inner = self.read();
        Registry {
            inner: RwLock::new(Inner {
                entries: inner.entries.clone(),
                generation: inner.generation,
            }),
            converters: RwLock::new(
                self.converters
                    .read()
                    .unwrap_or_else(|e| e.into_inner())
                    .clone(),
            ),
            mutators: RwLock::new(
                self.mutators
                    .read()
                    .unwrap_or_else(|e| e.into_inner())
                    .clone(),
            ),
        }
    }

    fn read(&self) -> RwLockReadGuard<'_, Inner> {
        self.inner.read().unwrap_or_else(|e| e.into_inner())
    }

    fn write(&self) -> RwLockWriteGuard<'_, Inner> {
        self.inner.write().unwrap_or_else(|e| e.into_inner())
    }

    /// How many times the registry changed: documents built from it hash this in.
    pub(crate) fn generation(&self) -> u64 {
        self.read().generation
    }

    /// The served entries, in discovery order.
    pub(crate) fn served(&self) -> Vec<Arc<ResourceType>> {
        self.read()
            .entries
            .iter()
            .filter(|r| r.served)
            .cloned()
            .collect()
    }

    /// The resource served at `group`/`version` under `plural`.
    pub fn find(&self, group: &str, version: &str, plural: &str) -> Option<Arc<ResourceType>> {
        self.read()
            .entries
            .iter()
            .find(|r| r.served && r.group == group && r.version == version && r.plural == plural)
            .cloned()
    }

    /// The served entry of `kind` in `api_version` (`v1`, `group/version`).
    pub fn by_kind(&self, api_version: &str, kind: &str) -> Option<Arc<ResourceType>> {
        self.read()
            .entries
            .iter()
            .find(|r| r.served && r.kind == kind && r.api_version() == api_version)
            .cloned()
    }

    /// The preferred served version of the resource called `plural` (its first group that
    /// serves it).
    pub fn by_plural(&self, plural: &str) -> Option<Arc<ResourceType>> {
        let inner = self.read();
        let mut found: Vec<&Arc<ResourceType>> = inner
            .entries
            .iter()
            .filter(|r| r.served && r.plural == plural)
            .collect();
        let group = found.first()?.group.clone();
        found.retain(|r| r.group == group);
        found.sort_by(|a, b| version::compare(&b.version, &a.version));
        found.first().map(|r| Arc::clone(r))
    }

    /// The entry of `version` of `group`'s resource `plural`, served or not.
    fn version_entry(&self, group: &str, version: &str, plural: &str) -> Option<Arc<ResourceType>> {
        self.read()
            .entries
            .iter()
            .find(|r| r.group == group && r.version == version && r.plural == plural)
            .cloned()
    }

    /// The entry of the storage version of `group`'s resource `plural`, served or not.
    pub(crate) fn storage(&self, group: &str, plural: &str) -> Option<Arc<ResourceType>> {
        self.read()
            .entries
            .iter()
            .find(|r| r.group == group && r.plural == plural && r.is_storage_version())
            .cloned()
    }

    /// The storage-version entry of every stored resource (built-in or defined by a CRD).
    pub(crate) fn storage_kinds(&self) -> Vec<Arc<ResourceType>> {
        self.read()
            .entries
            .iter()
            .filter(|r| r.is_storage_version() && !r.create_only)
            .cloned()
            .collect()
    }

    /// Serves `entries` for the CRD `crd_name`, replacing what it served before. Entries
    /// whose version is no longer there are retired (their watches end); an entry whose
    /// description did not change is kept as it was, so its watches go on.
    pub(crate) fn install(&self, crd_name: &str, entries: Vec<ResourceType>) {
        let mut inner = self.write();
        let old: Vec<Arc<ResourceType>> = inner
            .entries
            .iter()
            .filter(|r| r.defined_by.as_deref() == Some(crd_name))
            .cloned()
            .collect();
        let mut fresh = Vec::with_capacity(entries.len());
        for e in entries {
            let kept = old
                .iter()
                .find(|o| o.version == e.version && same_description(o, &e));
            fresh.push(kept.cloned().unwrap_or_else(|| Arc::new(e)));
        }
        for o in &old {
            if !fresh.iter().any(|f| Arc::ptr_eq(f, o))
                && !fresh.iter().any(|f| f.version == o.version)
            {
                o.retired.cancel();
            }
        }
        let position = inner
            .entries
            .iter()
            .position(|r| r.defined_by.as_deref() == Some(crd_name));
        inner
            .entries
            .retain(|r| r.defined_by.as_deref() != Some(crd_name));
        let at = position
            .unwrap_or(inner.entries.len())
            .min(inner.entries.len());
        inner.entries.splice(at..at, fresh);
        inner.generation += 1;
    }

    /// Stops serving what the CRD `crd_name` defined; its watches end.
    pub(crate) fn remove(&self, crd_name: &str) {
        let mut inner = self.write();
        let before = inner.entries.len();
        inner.entries.retain(|r| {
            let gone = r.defined_by.as_deref() == Some(crd_name);
            if gone {
                r.retired.cancel();
            }
            !gone
        });
        if inner.entries.len() != before {
            inner.generation += 1;
        }
    }

    /// Registers the in-process converter of `group`'s `kind`, used where its CRD asks for a
    /// conversion webhook. Registering again replaces it.
    pub fn register_converter(&self, group: &str, kind: &str, converter: Arc<dyn Converter>) {
        self.converters
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .insert((group.to_string(), kind.to_string()), converter);
    }

    /// The converter of `group`'s `kind`, if one is registered.
    fn converter(&self, group: &str, kind: &str) -> Option<Arc<dyn Converter>> {
        self.converters
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .get(&(group.to_string(), kind.to_string()))
            .cloned()
    }
}

/// Whether two entries describe the resource the same way (their schema included).
fn same_description(a: &ResourceType, b: &ResourceType) -> bool {
    a.group == b.group
        && a.version == b.version
        && a.kind == b.kind
        && a.list_kind == b.list_kind
        && a.plural == b.plural
        && a.singular == b.singular
        && a.namespaced == b.namespaced
        && a.short_names == b.short_names
        && a.categories == b.categories
        && a.status == b.status
        && a.scale == b.scale
        && a.selectable_fields == b.selectable_fields
        && a.served == b.served
        && a.storage_version == b.storage_version
        && a.storage_group == b.storage_group
        && a.printer_columns == b.printer_columns
        && a.deprecation_warning == b.deprecation_warning
        && a.conversion == b.conversion
        && match (&a.schema, &b.schema) {
            (Some(x), Some(y)) => x.root() == y.root(),
            (None, None) => true,
            _ => false,
        }
}

#[cfg(test)]
mod tests;
