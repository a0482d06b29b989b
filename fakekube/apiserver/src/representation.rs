//! Resource answers in the representation their request negotiated ([`crate::negotiation`]):
//! an object or list as it is, its metadata alone (`PartialObjectMetadata`,
//! `PartialObjectMetadataList`) or a `Table`; written as JSON or YAML in the API server's field
//! order ([`crate::encoding`]).

use crate::encoding::{self, Shape};
use crate::meta;
use crate::negotiation::{Conversion, Format, MetaVersion, Representation};
use crate::registry::ResourceType;
use crate::request::Query;
use crate::status::ApiError;
use crate::store::{Page, WireCache};
use crate::table::{self, TableOptions};
use axum::body::Body;
use axum::response::Response;
use http::{HeaderValue, StatusCode, header};
use serde_json::{Map, Value};
use time::OffsetDateTime;

/// What a resource request answers, before its conversion.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Answer<'a> {
    /// One object of the kind.
    Object(&'a Value),
    /// A page of a collection, written as a `<Kind>List`.
    List(&'a Page),
    /// A `Status` (a custom resource's delete), never converted.
    Status(&'a Value),
}

/// The shape a kind's own objects are written in: custom resources are maps, the rest Go
/// structs.
fn shape_of(rt: &ResourceType) -> Shape {
    if rt.custom {
        Shape::Unstructured
    } else {
        Shape::Typed
    }
}

/// The Go type the API server names in a conversion's 406 (`*core.PodList`,
/// `*unstructured.Unstructured`).
fn go_type(rt: &ResourceType, list: bool) -> String {
    let suffix = if list { "List" } else { "" };
    if rt.custom {
        return format!("*unstructured.Unstructured{suffix}");
    }
    let package = match rt.group.as_str() {
        "" | "events.k8s.io" => "core",
        g => g.split('.').next().unwrap_or(g),
    };
    format!("*{package}.{}{suffix}", rt.kind)
}

fn not_acceptable(message: String) -> ApiError {
    ApiError::new(StatusCode::NOT_ACCEPTABLE, "NotAcceptable", message)
}

/// The list metadata a Table or PartialObjectMetadataList keeps from a list.
fn list_metadata(list: &Page) -> Map<String, Value> {
    let mut out = Map::new();
    for key in ["resourceVersion", "continue", "remainingItemCount"] {
        if let Some(v) = list.metadata.get(key) {
            out.insert(key.into(), v.clone());
        }
    }
    out
}

/// `answer` converted as `conversion` asks, with the shape to write it in; `None` when it is
/// written as it is. Errors are the API server's: 406 for an object asked as a list or a list
/// asked as an object, 400 for Table options it does not take.
pub(crate) fn convert(
    rt: &ResourceType,
    answer: Answer<'_>,
    conversion: Conversion,
    opts: TableOptions,
    now: OffsetDateTime,
) -> Result<Option<Value>, ApiError> {
    let version = |v: MetaVersion| v.api_version();
    Ok(match (conversion, answer) {
        (Conversion::None, _) | (_, Answer::Status(_)) => None,
        (Conversion::PartialObjectMetadata(v), Answer::Object(obj)) => {
            Some(meta::partial_object_metadata(obj, version(v)))
        }
        (Conversion::PartialObjectMetadata(_), Answer::List(_)) => {
            return Err(not_acceptable(format!(
                "you requested PartialObjectMetadata, but the requested object is a list ({})",
                go_type(rt, true)
            )));
        }
        (Conversion::PartialObjectMetadataList(v), Answer::List(list)) => {
            let partials: Vec<Value> = list
                .objects()
                .map(|item| meta::partial_object_metadata(item, version(v)))
                .collect();
            let mut out = Map::new();
            out.insert("kind".into(), Value::from("PartialObjectMetadataList"));
            out.insert("apiVersion".into(), Value::from(version(v)));
            out.insert("metadata".into(), Value::Object(list_metadata(list)));
            out.insert("items".into(), Value::Array(partials));
            Some(Value::Object(out))
        }
        (Conversion::PartialObjectMetadataList(_), Answer::Object(_)) => {
            return Err(not_acceptable(format!(
                "you requested PartialObjectMetadataList, but the requested object is not a list ({})",
                go_type(rt, false)
            )));
        }
        (Conversion::Table(v), Answer::Object(obj)) => {
            let mut metadata = Map::new();
            if let Some(rv) = obj.pointer("/metadata/resourceVersion") {
                metadata.insert("resourceVersion".into(), rv.clone());
            }
            Some(table::build(rt, &[obj], metadata, v, opts, now))
        }
        (Conversion::Table(v), Answer::List(list)) => Some(table::build(
            rt,
            &list.objects().collect::<Vec<_>>(),
            list_metadata(list),
            v,
            opts,
            now,
        )),
    })
}

/// The Table options a conversion needs (`includeObject`), read only when a Table is asked.
pub(crate) fn table_options(
    conversion: Conversion,
    query: &Query,
) -> Result<TableOptions, ApiError> {
    match conversion {
        Conversion::Table(_) => TableOptions::from_query(query),
        _ => Ok(TableOptions {
            include: table::IncludeObject::Metadata,
            no_headers: false,
        }),
    }
}

/// The response to a resource request: `answer` converted and written as `repr` asks. A list
/// written as it is in JSON is written from its items' JSON, which `wire` keeps per stored
/// revision.
pub(crate) fn respond(
    code: StatusCode,
    rt: &ResourceType,
    answer: Answer<'_>,
    repr: Representation,
    query: &Query,
    wire: &WireCache,
) -> Result<Response, ApiError> {
    let opts = table_options(repr.conversion, query)?;
    let converted = convert(rt, answer, repr.conversion, opts, OffsetDateTime::now_utc())?;
    let whole;
    let (value, shape) = match (&converted, answer) {
        (Some(c), _) => (c, Shape::Typed),
        (None, Answer::Status(s)) => (s, Shape::Typed),
        (None, Answer::Object(v)) => (v, shape_of(rt)),
        (None, Answer::List(page)) if repr.format == Format::Json => {
            let shape = shape_of(rt);
            let items = wire.items_json(&page.items, shape);
            let bytes =
                encoding::list_json(&page.kind, &page.api_version, &page.metadata, &items, shape);
            return Ok(body(code, bytes, repr.format));
        }
        (None, Answer::List(page)) => {
            whole = page.to_value();
            (&whole, shape_of(rt))
        }
    };
    let bytes = match repr.format {
        Format::Json => encoding::to_json(value, shape),
        Format::Yaml => encoding::to_yaml(value),
    };
    Ok(body(code, bytes, repr.format))
}

/// A response of `code` with `bytes` as its body, of `format`'s media type.
fn body(code: StatusCode, bytes: Vec<u8>, format: Format) -> Response {
    let mut resp = Response::new(Body::from(bytes));
    *resp.status_mut() = code;
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(format.media_type()),
    );
    resp
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::Registry;
    use serde_json::json;

    fn pods() -> std::sync::Arc<ResourceType> {
        Registry::new()
            .find("", "v1", "pods")
            .unwrap_or_else(|| std::sync::Arc::new(ResourceType::absent("", "v1", "pods", "Pod")))
    }

    fn page(metadata: Value, items: Vec<Value>) -> Page {
        Page {
            kind: "PodList".into(),
            api_version: "v1".into(),
            metadata: metadata.as_object().cloned().unwrap_or_default(),
            items: items
                .into_iter()
                .map(|v| crate::store::Item {
                    object: std::sync::Arc::new(v),
                    revision: true,
                })
                .collect(),
        }
    }

    fn opts() -> TableOptions {
        TableOptions {
            include: table::IncludeObject::Metadata,
            no_headers: false,
        }
    }

    #[test]
    fn a_list_asked_as_metadata_keeps_its_paging_and_drops_the_rest() {
        let list = page(
            json!({ "resourceVersion": "5", "continue": "abc" }),
            vec![
                json!({ "kind": "Pod", "metadata": { "name": "a", "labels": { "x": "y" } }, "spec": {} }),
            ],
        );
        let out = convert(
            &pods(),
            Answer::List(&list),
            Conversion::PartialObjectMetadataList(MetaVersion::V1),
            opts(),
            OffsetDateTime::now_utc(),
        )
        .ok()
        .flatten()
        .unwrap_or_default();
        assert_eq!(
            out,
            json!({
                "kind": "PartialObjectMetadataList", "apiVersion": "meta.k8s.io/v1",
                "metadata": { "resourceVersion": "5", "continue": "abc" },
                "items": [ { "kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
                    "metadata": { "name": "a", "labels": { "x": "y" } } } ],
            })
        );
    }

    #[test]
    fn an_object_asked_as_a_list_and_back_is_406_naming_the_go_type() {
        let pod = json!({ "kind": "Pod", "metadata": { "name": "a" } });
        let e = convert(
            &pods(),
            Answer::Object(&pod),
            Conversion::PartialObjectMetadataList(MetaVersion::V1),
            opts(),
            OffsetDateTime::now_utc(),
        )
        .err()
        .map(|e| (e.code.as_u16(), e.message));
        assert_eq!(
            e,
            Some((
                406,
                "you requested PartialObjectMetadataList, but the requested object is not a list (*core.Pod)".to_string()
            ))
        );
        let widget = ResourceType::absent("example.com", "v1", "widgets", "Widget");
        let e = convert(
            &widget,
            Answer::List(&page(json!({}), Vec::new())),
            Conversion::PartialObjectMetadata(MetaVersion::V1),
            opts(),
            OffsetDateTime::now_utc(),
        )
        .err()
        .map(|e| e.message);
        assert_eq!(
            e.as_deref(),
            Some(
                "you requested PartialObjectMetadata, but the requested object is a list (*unstructured.UnstructuredList)"
            )
        );
    }

    #[test]
    fn a_status_is_never_converted() {
        let status = json!({ "kind": "Status", "status": "Success" });
        let out = convert(
            &pods(),
            Answer::Status(&status),
            Conversion::Table(MetaVersion::V1),
            opts(),
            OffsetDateTime::now_utc(),
        );
        assert!(matches!(out, Ok(None)));
    }
}
