//! Objects moved between the versions of their kind. With conversion `None` only `apiVersion`
//! changes; with `Webhook` an in-process [`Converter`] registered for the kind converts, and
//! without one the request fails as it fails on an API server whose webhook cannot be reached.
//! Either way the result is pruned by the target version's schema, as the API server's
//! converter does: a field the target version does not know is dropped.

use super::{Conversion, Registry, ResourceType, api_version, autoscaling, events};
use crate::status::ApiError;
use serde_json::{Value, json};
use std::sync::Arc;

/// An in-process conversion webhook for one kind, registered with
/// [`FakeKube::register_converter`](crate::FakeKube::register_converter): fakekube calls it
/// where the kind's CRD asks for a conversion webhook. Without one, a request that needs a
/// conversion fails as it fails on an API server whose webhook cannot be reached.
pub trait Converter: Send + Sync + std::fmt::Debug {
    /// Converts `object` (in any version of the kind) to `api_version` (`group/version`), or
    /// says why not (the request then fails with a 500 naming the reason).
    fn convert(&self, object: &Value, api_version: &str) -> Result<Value, String>;
}

impl Registry {
    /// `object`, stored or sent in any version of `rt`'s kind, in `rt`'s version. Returns the
    /// same `Arc` when nothing changes.
    pub(crate) fn to_version(
        &self,
        rt: &ResourceType,
        object: &Arc<Value>,
    ) -> Result<Arc<Value>, ApiError> {
        self.convert(rt, object, &rt.version)
            .map(|converted| match converted {
                Some(v) => Arc::new(v),
                None => Arc::clone(object),
            })
    }

    /// `object` in `version` of `rt`'s kind; `None` when it already is.
    pub(crate) fn convert(
        &self,
        rt: &ResourceType,
        object: &Value,
        version: &str,
    ) -> Result<Option<Value>, ApiError> {
        self.convert_to(rt, object, &rt.group, version)
    }

    /// `object` as `rt`'s kind is stored (its storage group and version); `None` when it
    /// already is.
    pub(crate) fn to_storage(
        &self,
        rt: &ResourceType,
        object: &Value,
    ) -> Result<Option<Value>, ApiError> {
        self.convert_to(rt, object, &rt.storage_group, &rt.storage_version)
    }

    fn convert_to(
        &self,
        rt: &ResourceType,
        object: &Value,
        group: &str,
        version: &str,
    ) -> Result<Option<Value>, ApiError> {
        let want = api_version(group, version);
        let have = object
            .get("apiVersion")
            .and_then(Value::as_str)
            .unwrap_or("");
        if have == want {
            return Ok(None);
        }
        let mut out = match &rt.conversion {
            Conversion::Events => events::convert(object, &want),
            Conversion::Autoscaling => autoscaling::convert(object, &want),
            Conversion::None => {
                let mut out = object.clone();
                if let Some(o) = out.as_object_mut() {
                    o.insert("apiVersion".into(), json!(want));
                }
                out
            }
            Conversion::Webhook { url, service } => {
                let kind = object
                    .get("kind")
                    .and_then(Value::as_str)
                    .unwrap_or(&rt.kind);
                let gvk = format!("{have}, Kind={kind}");
                let Some(converter) = self.converter(&rt.group, &rt.kind) else {
                    return Err(webhook_failed(&gvk, url, service.as_deref()));
                };
                converter
                    .convert(object, &want)
                    .map_err(|why| conversion_failed(&gvk, &why))?
            }
        };
        if let Some(schema) = self
            .version_entry(&rt.group, version, &rt.plural)
            .and_then(|target| target.schema.clone())
        {
            schema.prune(&mut out);
        }
        Ok(Some(out))
    }
}

/// The API server's error when the conversion webhook of a CRD cannot be reached.
fn webhook_failed(gvk: &str, url: &str, service: Option<&str>) -> ApiError {
    let cause = match service {
        Some(svc) => format!("service \"{svc}\" not found"),
        None => "dial tcp: connect: connection refused".to_string(),
    };
    conversion_failed(gvk, &format!("Post \"{url}?timeout=30s\": {cause}"))
}

/// The API server's error when the conversion webhook of a CRD fails, for `why` (what the
/// webhook answered, or why it could not be called): the same 500 either way.
fn conversion_failed(gvk: &str, why: &str) -> ApiError {
    ApiError::new(
        http::StatusCode::INTERNAL_SERVER_ERROR,
        "InternalError",
        format!("conversion webhook for {gvk} failed: {why}"),
    )
}
