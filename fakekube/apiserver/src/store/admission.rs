//! The part of a write made before it is stored: the request's checks against the revision it
//! replaces, admission (the kind's mutator, then the schema's pruning, defaulting and
//! validation, or a core kind's defaults and checks), and the conversion to the storage
//! version. None of it reads the store but the revision given, so the store runs it outside its
//! lock and then commits the result only if that revision is still the one stored.

use super::{
    Cause, FieldValidation, Part, StatusMode, Target, WriteOptions, check_identity, compact,
    deletion, field_causes, field_keys, field_scope, finalizers, present, target,
};
use crate::managed_fields;
use crate::meta::{self, meta_str};
use crate::registry::{Registry, ResourceType};
use crate::status::ApiError;
use crate::user::UserInfo;
use serde_json::{Map, Value, json};
use std::sync::Arc;

/// The kind's mutator (an in-process mutating webhook), on a write of its main resource.
pub(super) fn mutate(
    registry: &Registry,
    rt: &ResourceType,
    obj: &mut Value,
    old: Option<&Value>,
    part: Part,
) -> Result<(), ApiError> {
    if part == Part::Main
        && let Some(mutator) = registry.mutator(&rt.group, &rt.kind)
    {
        mutator.mutate(obj, old).map_err(|reason| {
            ApiError::bad_request(format!(
                "admission webhook \"{}\" denied the request: {reason}",
                mutator.name()
            ))
        })?;
    }
    Ok(())
}

/// Admits a write of `obj`, which is not a CRD: its mutator, then the schema's pruning,
/// defaulting and validation of a custom kind, or a core kind's defaults and checks. Reads
/// nothing of the store, so it may run outside the store's lock.
pub(super) fn admit(
    registry: &Registry,
    rt: &Arc<ResourceType>,
    name: &str,
    obj: &mut Value,
    old: Option<&Value>,
    part: Part,
    opts: &WriteOptions,
) -> Result<Vec<String>, ApiError> {
    let mut warnings = Vec::new();
    mutate(registry, rt, obj, old, part)?;
    if let Some(schema) = rt.schema() {
        let unknown = schema.prune(obj);
        if !unknown.is_empty() {
            match opts.field_validation {
                FieldValidation::Strict => {
                    let list: Vec<String> = unknown
                        .iter()
                        .map(|f| format!("unknown field \"{f}\""))
                        .collect();
                    let prefix = if opts.patch {
                        String::new()
                    } else {
                        format!(
                            "{} in version \"{}\" cannot be handled as a {}: ",
                            rt.kind, rt.version, rt.kind
                        )
                    };
                    return Err(ApiError::bad_request(format!(
                        "{prefix}strict decoding error: {}",
                        list.join(", ")
                    )));
                }
                FieldValidation::Warn => {
                    warnings.extend(unknown.iter().map(|f| format!("unknown field \"{f}\"")));
                }
                FieldValidation::Ignore => {}
            }
        }
        schema.apply_defaults(obj);
        let errs = schema.validate(obj, old);
        if !errs.is_empty() {
            return Err(ApiError::invalid(target(rt, name), field_causes(errs)));
        }
    } else {
        if part == Part::Main && old.is_some() && rt.group.is_empty() && rt.plural == "pods" {
            crate::admission_plugins::admit_pod_update(obj);
        }
        let causes = crate::defaults::admit_core(rt, obj, old);
        if !causes.is_empty() {
            return Err(ApiError::invalid(target(rt, name), causes));
        }
    }
    Ok(warnings)
}

/// A create admitted and converted, to be stored if its name is still free.
pub(super) struct PreparedCreate {
    /// What to store.
    pub(super) obj: NewObject,
    /// Admission's warnings, for the answer.
    pub(super) warnings: Vec<String>,
    /// Who creates it, for the admission policies the commit runs.
    pub(super) user: Option<Arc<UserInfo>>,
}

/// What committing a [`PreparedCreate`] stores.
pub(super) enum NewObject {
    /// A dry run: the object as it would be stored, answered and not stored.
    DryRun(Value),
    /// Store this, in its storage version, once it has its resourceVersion.
    Write(Value),
}

/// Admits (with `admit`) and converts a new object named by [`Inner::name_new`]; reads
/// nothing of the store, so it may run outside the store's lock.
pub(super) fn prepare_create(
    registry: &Registry,
    rt: &Arc<ResourceType>,
    mut obj: Value,
    opts: &WriteOptions,
    admit: impl FnOnce(&mut Value) -> Result<Vec<String>, ApiError>,
) -> Result<PreparedCreate, ApiError> {
    let warnings = admit(&mut obj)?;
    managed_fields::carry_over(None, &mut obj);
    if let Some(manager) = &opts.manager {
        let scope = field_scope(rt, Part::Main);
        let keys = field_keys(rt);
        managed_fields::record_update(
            &Value::Null,
            &mut obj,
            manager,
            &rt.api_version(),
            scope,
            &keys,
        );
    }
    deletion::protect_in_use(rt, &mut obj);
    if opts.dry_run {
        return Ok(PreparedCreate {
            obj: NewObject::DryRun(obj),
            warnings,
            user: opts.user.clone(),
        });
    }
    let mut obj = registry.to_storage(rt, &obj)?.unwrap_or(obj);
    // The place of the resourceVersion, filled in by the commit.
    if let Some(md) = meta::metadata_mut(&mut obj) {
        md.insert("resourceVersion".into(), Value::Null);
    }
    compact::fit(&mut obj);
    Ok(PreparedCreate {
        obj: NewObject::Write(obj),
        warnings,
        user: opts.user.clone(),
    })
}

/// An update as its client asked for it, before it is checked against a stored revision.
pub(super) struct UpdateRequest<'a> {
    /// The kind, in the version written.
    pub(super) rt: &'a Arc<ResourceType>,
    /// The object's namespace, as the path names it.
    pub(super) ns: &'a str,
    /// The object's name, as the path names it.
    pub(super) name: &'a str,
    /// The object or its status.
    pub(super) part: Part,
    /// The request's options.
    pub(super) opts: &'a WriteOptions,
    /// Whether a custom resource's update must name the resourceVersion it read.
    pub(super) require_rv: bool,
}

/// An update checked and admitted against one stored revision.
pub(super) enum PreparedUpdate {
    /// Nothing to store: the answer as of that revision (the object unchanged, with no new
    /// resourceVersion or event, or a dry run's object).
    Answer((Arc<Value>, Vec<String>)),
    /// What to store if that revision is still the one stored when it is committed.
    Write(PendingWrite),
}

/// An update to store.
pub(super) struct PendingWrite {
    /// The revision it was prepared against.
    pub(super) stored: Arc<Value>,
    /// That revision as the written version reads it.
    pub(super) old: Arc<Value>,
    /// The object, in its storage version, once it has its resourceVersion.
    pub(super) obj: Value,
    /// Admission's warnings, for the answer.
    pub(super) warnings: Vec<String>,
    /// The part written, for the admission policies the commit runs.
    pub(super) part: Part,
    /// Who writes it.
    pub(super) user: Option<Arc<UserInfo>>,
}

impl UpdateRequest<'_> {
    /// Checks, admits and converts `obj` as an update of revision `stored`; reads nothing of
    /// the store but `stored`, so it may run outside the store's lock.
    pub(super) fn prepare(
        &self,
        registry: &Registry,
        mut obj: Value,
        stored: Arc<Value>,
        admit: impl FnOnce(&mut Value, &Value) -> Result<Vec<String>, ApiError>,
    ) -> Result<PreparedUpdate, ApiError> {
        let UpdateRequest {
            rt,
            ns,
            name,
            part,
            opts,
            require_rv,
        } = *self;
        let old = present(registry, rt, &stored)?;
        // The handler's name and namespace checks come before storage's resourceVersion
        // checks: a body naming another object is a bad request whatever its version.
        check_identity(rt, ns, name, &obj)?;
        let old_rv = meta_str(&old, "resourceVersion").unwrap_or("").to_string();
        let given_rv = meta_str(&obj, "resourceVersion").unwrap_or("").to_string();
        if given_rv.is_empty() {
            // Core kinds allow unconditional updates; custom resources do not, and the API
            // server names them by their resource in that error.
            if require_rv && rt.custom {
                let by_resource = Target {
                    kind: &rt.plural,
                    ..target(rt, name)
                };
                return Err(ApiError::invalid(
                    by_resource,
                    vec![Cause {
                        reason: "FieldValueInvalid".into(),
                        message: "Invalid value: 0x0: must be specified for an update".into(),
                        field: Some("metadata.resourceVersion".into()),
                    }],
                ));
            }
        } else if given_rv != old_rv {
            return Err(ApiError::stale(target(rt, name)));
        }
        if let Some(uid) = meta_str(&obj, "uid")
            && !uid.is_empty()
            && Some(uid) != meta_str(&old, "uid")
        {
            return Err(ApiError::conflict(
                target(rt, name),
                &format!(
                    "Precondition failed: UID in precondition: {uid}, UID in object meta: {}",
                    meta_str(&old, "uid").unwrap_or("")
                ),
            ));
        }
        // Start from the right base for the part written.
        if part == Part::Status {
            let status = obj.get("status").cloned();
            // The managed fields are the one piece of metadata a status write carries (those
            // an apply to the status computed, or a client's own).
            let managed = obj
                .get("metadata")
                .and_then(|m| m.get("managedFields"))
                .cloned();
            let mut base = Value::clone(&old);
            if let Some(o) = base.as_object_mut() {
                match status {
                    Some(s) => o.insert("status".into(), s),
                    None => o.remove("status"),
                };
            }
            if let (Some(list), Some(md)) = (managed, meta::metadata_mut(&mut base)) {
                md.insert("managedFields".into(), list);
            }
            obj = base;
        } else if rt.status == StatusMode::Subresource
            && let Some(o) = obj.as_object_mut()
        {
            match old.get("status") {
                Some(s) => o.insert("status".into(), s.clone()),
                None => o.remove("status"),
            };
        }
        // Keep what a client may not change.
        let no_metadata = Map::new();
        let old_md = old
            .get("metadata")
            .and_then(Value::as_object)
            .unwrap_or(&no_metadata);
        let old_finalizers = finalizers(&old);
        let md = meta::metadata_mut(&mut obj)
            .ok_or_else(|| ApiError::bad_request("metadata must be an object"))?;
        for k in [
            "name",
            "namespace",
            "uid",
            "creationTimestamp",
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
            "generation",
            "generateName",
        ] {
            match old_md.get(k) {
                Some(v) => md.insert(k.into(), v.clone()),
                None => md.remove(k),
            };
        }
        md.remove("resourceVersion");
        if let Some(o) = obj.as_object_mut() {
            o.insert("apiVersion".into(), json!(rt.api_version()));
            o.insert("kind".into(), json!(rt.kind));
        }
        let deleting = old_md.get("deletionTimestamp").is_some();
        if deleting {
            let new_f = finalizers(&obj);
            if let Some(added) = new_f.iter().find(|f| !old_finalizers.contains(f)) {
                return Err(ApiError::invalid(
                    target(rt, name),
                    vec![Cause {
                        reason: "FieldValueForbidden".into(),
                        message: format!(
                            "Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers []string{{\"{added}\"}}"
                        ),
                        field: Some("metadata.finalizers".into()),
                    }],
                ));
            }
        }
        let warnings = admit(&mut obj, &old)?;
        managed_fields::carry_over(Some(&old), &mut obj);
        if let Some(manager) = &opts.manager {
            let scope = field_scope(rt, part);
            let keys = field_keys(rt);
            managed_fields::record_update(&old, &mut obj, manager, &rt.api_version(), scope, &keys);
        }
        let with_status = rt.custom && rt.status == StatusMode::Plain;
        if rt.has_spec && !opts.binding && !same_spec(&obj, &old, with_status) {
            let g = old
                .get("metadata")
                .and_then(|m| m.get("generation"))
                .and_then(Value::as_i64)
                .unwrap_or(0);
            if let Some(md) = meta::metadata_mut(&mut obj) {
                md.insert("generation".into(), json!(g + 1));
            }
        }
        // A write that changes nothing keeps the resourceVersion and makes no event.
        if let Some(md) = meta::metadata_mut(&mut obj) {
            md.insert("resourceVersion".into(), json!(old_rv));
        }
        if obj == *old {
            return Ok(PreparedUpdate::Answer((old, warnings)));
        }
        if opts.dry_run {
            return Ok(PreparedUpdate::Answer((Arc::new(obj), warnings)));
        }
        // Converted and fitted here, out of the store's lock; the commit fills in the
        // resourceVersion, in the place kept for it.
        if let Some(md) = meta::metadata_mut(&mut obj) {
            md.remove("resourceVersion");
        }
        let mut obj = registry.to_storage(rt, &obj)?.unwrap_or(obj);
        if let Some(md) = meta::metadata_mut(&mut obj) {
            md.insert("resourceVersion".into(), Value::Null);
        }
        compact::fit(&mut obj);
        Ok(PreparedUpdate::Write(PendingWrite {
            stored,
            old,
            obj,
            warnings,
            part,
            user: opts.user.clone(),
        }))
    }
}

/// The answer to a write into a namespace that does not exist.
pub(super) fn namespace_not_found(ns: &str) -> ApiError {
    ApiError::not_found(Target {
        group: "",
        resource: "namespaces",
        kind: "Namespace",
        name: ns,
    })
}

/// Refuses a body that is not a JSON object.
pub(super) fn check_body(obj: &Value) -> Result<(), ApiError> {
    if obj.is_object() {
        Ok(())
    } else {
        Err(ApiError::bad_request(
            "the body of the request must be a JSON object",
        ))
    }
}

/// Whether two objects have the same spec: everything that is not metadata (or status, when
/// `status` is a subresource), what bumps `generation` when it changes. A custom kind without
/// a status subresource counts status changes too, as the API server does.
fn same_spec(a: &Value, b: &Value, with_status: bool) -> bool {
    let spec = |k: &str| {
        !matches!(k, "metadata" | "kind" | "apiVersion") && (with_status || k != "status")
    };
    let none = Map::new();
    let (a, b) = (
        a.as_object().unwrap_or(&none),
        b.as_object().unwrap_or(&none),
    );
    let count = |o: &Map<String, Value>| o.keys().filter(|k| spec(k)).count();
    count(a) == count(b)
        && a.iter()
            .filter(|(k, _)| spec(k))
            .all(|(k, v)| b.get(k) == Some(v))
}
