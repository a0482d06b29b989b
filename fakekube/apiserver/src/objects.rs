//! The verbs on stored objects: get, list, create, update, patch, delete and deletecollection,
//! each reading its options from the query, its object from the body, and answering what the
//! store did in the representation the request negotiated (with the store's warnings as
//! `Warning` headers).
//!
//! The request is already routed, authorized and known to be for a served kind; watches, the
//! other subresources and the reviews have their own modules.

use crate::managed_fields;
use crate::negotiation::Representation;
use crate::patch::PatchKind;
use crate::registry::ResourceType;
use crate::representation::{self, Answer};
use crate::request::{self, Query, WriteVerb};
use crate::response::with_warnings;
use crate::route::ResourcePath;
use crate::state::Shared;
use crate::status::{self, ApiError, Target};
use crate::store::{Deleted, Item, Page, Part, Store, WriteOptions};
use axum::body::Body;
use axum::response::Response;
use http::{HeaderMap, StatusCode, header};
use serde_json::{Map, Value};
use std::sync::Arc;

/// A request for an object or a collection, routed and authorized, with the representation
/// its `Accept` header negotiated.
#[derive(Debug)]
pub(crate) struct Request<'a> {
    /// Where the objects are.
    pub(crate) store: &'a Store,
    /// The kind.
    pub(crate) rt: &'a Arc<ResourceType>,
    /// The path: namespace, name, subresource.
    pub(crate) rp: &'a ResourcePath,
    /// The request's headers (content type, user agent).
    pub(crate) headers: &'a HeaderMap,
    /// The query parameters.
    pub(crate) query: &'a Query,
    /// How the answer is written.
    pub(crate) repr: Representation,
    /// Who asks, for admission (`request.userInfo` of the admission policies).
    pub(crate) user: &'a crate::authn::UserInfo,
}

impl Request<'_> {
    /// The answer in the negotiated representation.
    fn respond(&self, code: StatusCode, answer: Answer<'_>) -> Result<Response, ApiError> {
        representation::respond(
            code,
            self.rt,
            answer,
            self.repr,
            self.query,
            self.store.wire_cache(),
        )
    }

    /// The write options of the query; a write without `fieldManager` is recorded under the
    /// manager its `User-Agent` names, as the API server records it.
    fn write_options(&self, verb: WriteVerb) -> Result<WriteOptions, ApiError> {
        let mut opts = request::write_options(self.query, verb)?;
        if opts.manager.is_none() {
            let agent = self
                .headers
                .get(header::USER_AGENT)
                .and_then(|v| v.to_str().ok())
                .unwrap_or("");
            let manager = managed_fields::manager_from_user_agent(agent);
            opts.manager = (!manager.is_empty()).then_some(manager);
        }
        opts.user = Some(Arc::new(self.user.clone()));
        Ok(opts)
    }
}

/// `GET` of one object (or of its status, which is the whole object).
pub(crate) fn get(req: &Request<'_>) -> Result<Response, ApiError> {
    let obj = req.store.get(req.rt, &req.rp.namespace, &req.rp.name)?;
    req.respond(StatusCode::OK, Answer::Object(&obj))
}

/// A page of a collection (every namespace when the path names none), as a `<Kind>List`.
pub(crate) fn list(shared: &Shared, req: &Request<'_>) -> Result<Response, ApiError> {
    let q = request::list_query(req.rt, req.query)?;
    let ns = req.rp.namespace.as_str();
    let namespace = (!ns.is_empty()).then_some(ns);
    if let Some(e) = shared.faults.list_page(q.continue_token.is_some()) {
        return Err(e);
    }
    let page = shared.store.list(req.rt, namespace, &q)?;
    req.respond(StatusCode::OK, Answer::List(&page))
}

/// `POST` of a new object into the collection.
pub async fn create(req: &Request<'_>, body: Body) -> Result<Response, ApiError> {
    let (rt, rp) = (req.rt, req.rp);
    let raw = request::read_body(body).await?;
    let opts = req.write_options(WriteVerb::Create)?;
    let obj = request::decode(req.headers, &raw)?;
    check_body(rt, rp, &obj)?;
    let (created, warnings) = req.store.create(rt, &rp.namespace, obj, opts)?;
    Ok(with_warnings(
        req.respond(StatusCode::CREATED, Answer::Object(&created))?,
        &warnings,
    ))
}

/// `PUT` of an object or of its status (`part`).
pub(crate) async fn update(
    req: &Request<'_>,
    part: Part,
    body: Body,
) -> Result<Response, ApiError> {
    let (rt, rp) = (req.rt, req.rp);
    let raw = request::read_body(body).await?;
    let opts = req.write_options(WriteVerb::Update)?;
    let obj = request::decode(req.headers, &raw)?;
    check_body(rt, rp, &obj)?;
    check_name(rp, &obj)?;
    let (updated, warnings) = req
        .store
        .update(rt, &rp.namespace, &rp.name, obj, part, opts)?;
    Ok(with_warnings(
        req.respond(StatusCode::OK, Answer::Object(&updated))?,
        &warnings,
    ))
}

/// `PATCH` of an object or of its status (`part`), in the patch type the `Content-Type`
/// names; a server-side apply that creates the object answers 201.
pub(crate) async fn patch(req: &Request<'_>, part: Part, body: Body) -> Result<Response, ApiError> {
    let (rt, rp) = (req.rt, req.rp);
    let (ns, name) = (rp.namespace.as_str(), rp.name.as_str());
    let ct = req
        .headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let kind =
        PatchKind::from_content_type(ct).ok_or_else(|| ApiError::unsupported_media_type(ct))?;
    let raw = request::read_body(body).await?;
    let opts = req.write_options(WriteVerb::Patch {
        apply: kind == PatchKind::Apply,
    })?;
    let patch = request::decode(req.headers, &raw)?;
    if kind == PatchKind::Apply {
        check_body(rt, rp, &patch)?;
    }
    let existed = req.store.get_opt(rt, ns, name).is_some();
    let (patched, warnings) = req.store.patch(rt, ns, name, kind, &patch, part, opts)?;
    let code = if !existed && kind == PatchKind::Apply {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    Ok(with_warnings(
        req.respond(code, Answer::Object(&patched))?,
        &warnings,
    ))
}

/// `DELETE` of one object: 200 with the object (a Status for custom kinds) when it is gone,
/// 200 with the object as marked when it stays for now (finalizers, a pod's grace period),
/// 202 for that only when the client said `orphanDependents: false`, as the API server's
/// delete handler answers.
pub(crate) async fn delete(req: &Request<'_>, body: Body) -> Result<Response, ApiError> {
    let (rt, rp) = (req.rt, req.rp);
    let name = rp.name.as_str();
    let raw = request::read_body(body).await?;
    let mut opts = request::delete_options(req.query, &raw)?;
    opts.user = Some(Arc::new(req.user.clone()));
    let t = Target {
        group: &rt.group,
        resource: &rt.plural,
        kind: &rt.kind,
        name,
    };
    match req.store.delete(rt, &rp.namespace, name, &opts)? {
        Deleted::Gone(obj) if rt.custom => {
            let uid = obj
                .get("metadata")
                .and_then(|m| m.get("uid"))
                .and_then(Value::as_str)
                .unwrap_or("");
            req.respond(StatusCode::OK, Answer::Status(&status::success(t, uid)))
        }
        Deleted::Gone(obj) => req.respond(StatusCode::OK, Answer::Object(&obj)),
        Deleted::Pending(obj) if opts.orphan_dependents == Some(false) => {
            req.respond(StatusCode::ACCEPTED, Answer::Object(&obj))
        }
        Deleted::Pending(obj) => req.respond(StatusCode::OK, Answer::Object(&obj)),
    }
}

/// `DELETE` of a collection (every namespace when the path names none): the list of what was
/// deleted.
pub(crate) async fn delete_collection(req: &Request<'_>, body: Body) -> Result<Response, ApiError> {
    let rt = req.rt;
    let ns = req.rp.namespace.as_str();
    let raw = request::read_body(body).await?;
    let mut opts = request::delete_options(req.query, &raw)?;
    opts.user = Some(Arc::new(req.user.clone()));
    let q = request::list_query(rt, req.query)?;
    let items = req
        .store
        .delete_collection(rt, (!ns.is_empty()).then_some(ns), &q, &opts)?;
    let mut metadata = Map::new();
    metadata.insert(
        "resourceVersion".into(),
        Value::from(req.store.resource_version().to_string()),
    );
    let page = Page {
        kind: rt.list_kind.clone(),
        api_version: rt.api_version(),
        metadata,
        // What a delete returns is its last state, not a revision the store keeps.
        items: items
            .into_iter()
            .map(|object| Item {
                object,
                revision: false,
            })
            .collect(),
    };
    req.respond(StatusCode::OK, Answer::List(&page))
}

/// The update handler's name check: the body must name the object of the URL, a missing name
/// included (`the name of the object () does not match the name on the URL (x)`).
fn check_name(rp: &ResourcePath, body: &Value) -> Result<(), ApiError> {
    let named = body
        .get("metadata")
        .and_then(|m| m.get("name"))
        .and_then(Value::as_str)
        .unwrap_or("");
    if named != rp.name {
        return Err(ApiError::bad_request(format!(
            "the name of the object ({named}) does not match the name on the URL ({})",
            rp.name
        )));
    }
    Ok(())
}

/// Checks that a body's apiVersion, kind and namespace fit the URL.
fn check_body(rt: &ResourceType, rp: &ResourcePath, body: &Value) -> Result<(), ApiError> {
    if !body.is_object() {
        return Err(ApiError::bad_request(
            "the body of the request must be a JSON object",
        ));
    }
    let want_av = rt.api_version();
    if let Some(av) = body.get("apiVersion").and_then(Value::as_str)
        && av != want_av
    {
        return Err(ApiError::bad_request(format!(
            "the API version in the data ({av}) does not match the expected API version ({want_av})"
        )));
    }
    if let Some(kind) = body.get("kind").and_then(Value::as_str)
        && kind != rt.kind
    {
        return Err(ApiError::bad_request(format!(
            "{kind} in version \"{}\" cannot be handled as a {}: the kind in the data does not match the URL",
            rt.version, rt.kind
        )));
    }
    if let Some(ns) = body
        .get("metadata")
        .and_then(|m| m.get("namespace"))
        .and_then(Value::as_str)
        && rt.namespaced
        && !ns.is_empty()
        && ns != rp.namespace
    {
        return Err(ApiError::bad_request(
            "the namespace of the provided object does not match the namespace sent on the request",
        ));
    }
    Ok(())
}
