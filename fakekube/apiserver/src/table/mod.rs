//! `Table` responses (`Accept: application/json;as=Table;g=meta.k8s.io;v=v1`): the rows and
//! columns `kubectl get` prints, built on the server as the API server builds them.
//!
//! Built-in kinds print the columns of the API server's printers ([`fakekube_printers`]); a
//! custom kind prints its CRD version's `additionalPrinterColumns` (`AGE` when it has none),
//! each cell the first value its JSONPath selects, typed by the column's type. Every row
//! carries its object as `includeObject` asks: `Metadata` (a `PartialObjectMetadata`, the
//! default), `Object` (the whole object) or `None`.

use fakekube_printers as printers;
use fakekube_printers::{age, jsonpath};

use crate::meta;
use crate::negotiation::MetaVersion;
use crate::registry::{PrinterColumn, ResourceType};
use crate::request::Query;
use crate::status::ApiError;
use fakekube_printers::JsonPath;
use serde_json::{Map, Value, json};
use time::OffsetDateTime;

/// What each row carries besides its cells (`includeObject`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum IncludeObject {
    /// No object.
    None,
    /// The object's metadata, as a `PartialObjectMetadata` (the default).
    Metadata,
    /// The whole object.
    Object,
}

/// The `TableOptions` of a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TableOptions {
    /// What rows carry.
    pub(crate) include: IncludeObject,
    /// Leave out the column definitions (watch events after the first).
    pub(crate) no_headers: bool,
}

impl TableOptions {
    /// Reads `includeObject` from the query; another value is the API server's 400.
    pub(crate) fn from_query(query: &Query) -> Result<Self, ApiError> {
        let include = match query.get("includeObject").unwrap_or("") {
            "" | "Metadata" => IncludeObject::Metadata,
            "None" => IncludeObject::None,
            "Object" => IncludeObject::Object,
            other => {
                return Err(ApiError::bad_request(format!(
                    "Unable to convert to Table as requested: includeObject: Invalid value: \"{other}\": must be 'Metadata', 'Object', 'None', or empty"
                )));
            }
        };
        Ok(TableOptions {
            include,
            no_headers: false,
        })
    }
}

/// The column definitions of `rt`.
fn column_definitions(rt: &ResourceType) -> Vec<Value> {
    let definition =
        |name: &str, type_name: &str, format: &str, description: &str, priority: i64| {
            json!({
                "name": name,
                "type": type_name,
                "format": format,
                "description": description,
                "priority": priority,
            })
        };
    if rt.custom {
        let mut out = vec![definition(
            "Name",
            "string",
            "name",
            "Name must be unique within a namespace. It is required when creating resources.",
            0,
        )];
        for c in custom_columns(rt) {
            let description = c.description.clone().unwrap_or_else(|| {
                format!(
                    "Custom resource definition column (in JSONPath format): {}",
                    c.json_path
                )
            });
            out.push(definition(
                &c.name,
                &c.type_name,
                c.format.as_deref().unwrap_or(""),
                &description,
                c.priority,
            ));
        }
        out
    } else {
        printers::columns(&rt.group, &rt.kind)
            .iter()
            .map(|c| definition(c.name, c.type_name, c.format, c.description, c.priority))
            .collect()
    }
}

/// A custom kind's printer columns, `Age` when its CRD version names none.
fn custom_columns(rt: &ResourceType) -> Vec<PrinterColumn> {
    if !rt.printer_columns.is_empty() {
        return rt.printer_columns.clone();
    }
    vec![PrinterColumn {
        name: "Age".into(),
        type_name: "date".into(),
        format: None,
        description: Some(
            "CreationTimestamp is a timestamp representing the server time when this object was created."
                .into(),
        ),
        priority: 0,
        json_path: ".metadata.creationTimestamp".into(),
    }]
}

/// The cells of a custom object: its name, then each column's value.
fn custom_cells(
    columns: &[(PrinterColumn, Option<JsonPath>)],
    obj: &Value,
    now: OffsetDateTime,
) -> Vec<Value> {
    let mut cells = vec![json!(meta::meta_str(obj, "name").unwrap_or(""))];
    for (column, path) in columns {
        let found = path.as_ref().and_then(|p| p.find(obj).into_iter().next());
        cells.push(match found {
            None => Value::Null,
            Some(v) => cell(&column.type_name, v, now),
        });
    }
    cells
}

/// One cell of a custom column: the value as the column's type, or null when it is not of
/// that type; a `string` column prints any value, a `date` column shows the age.
fn cell(type_name: &str, v: &Value, now: OffsetDateTime) -> Value {
    match (type_name, v) {
        (_, Value::Null) => Value::Null,
        ("string", v) => json!(jsonpath::print(v)),
        ("integer", Value::Number(n)) => n
            .as_i64()
            .or_else(|| n.as_f64().map(|f| f as i64))
            .map_or(Value::Null, |i| json!(i)),
        ("number", Value::Number(n)) => n.as_f64().map_or(Value::Null, |f| json!(f)),
        ("boolean", Value::Bool(b)) => json!(b),
        ("date", Value::String(s)) => json!(age::since(Some(s), now)),
        _ => Value::Null,
    }
}

/// Builds the `Table` of `items` (one object, or a list's items) of `rt` in `version`, with
/// the list metadata `list_meta` (`resourceVersion`, `continue`, `remainingItemCount`).
pub(crate) fn build(
    rt: &ResourceType,
    items: &[&Value],
    list_meta: Map<String, Value>,
    version: MetaVersion,
    opts: TableOptions,
    now: OffsetDateTime,
) -> Value {
    let custom: Vec<(PrinterColumn, Option<JsonPath>)> = if rt.custom {
        custom_columns(rt)
            .into_iter()
            .map(|c| {
                let path = JsonPath::parse(&c.json_path).ok();
                (c, path)
            })
            .collect()
    } else {
        Vec::new()
    };
    let rows: Vec<Value> = items
        .iter()
        .map(|obj| {
            let (cells, conditions) = if rt.custom {
                (custom_cells(&custom, obj, now), None)
            } else {
                let r = printers::row(&rt.group, &rt.kind, obj, now);
                (r.cells, r.conditions)
            };
            let mut row = Map::new();
            row.insert("cells".into(), Value::Array(cells));
            if let Some(c) = conditions {
                row.insert("conditions".into(), c);
            }
            let object = match opts.include {
                IncludeObject::None => Value::Null,
                IncludeObject::Metadata => {
                    meta::partial_object_metadata(obj, version.api_version())
                }
                IncludeObject::Object => Value::clone(obj),
            };
            row.insert("object".into(), object);
            Value::Object(row)
        })
        .collect();
    let columns = if opts.no_headers {
        Value::Null
    } else {
        Value::Array(column_definitions(rt))
    };
    json!({
        "kind": "Table",
        "apiVersion": version.api_version(),
        "metadata": list_meta,
        "columnDefinitions": columns,
        "rows": rows,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::Registry;
    use time::format_description::well_known::Rfc3339;

    fn now() -> OffsetDateTime {
        OffsetDateTime::parse("2026-03-01T12:00:00Z", &Rfc3339)
            .unwrap_or(OffsetDateTime::UNIX_EPOCH)
    }

    fn opts(include: IncludeObject) -> TableOptions {
        TableOptions {
            include,
            no_headers: false,
        }
    }

    #[test]
    fn a_pod_table_has_the_printer_columns_and_metadata_rows() {
        let registry = Registry::new();
        let Some(pods) = registry.find("", "v1", "pods") else {
            panic!("pods are served");
        };
        let pod = json!({
            "kind": "Pod", "apiVersion": "v1",
            "metadata": { "name": "p", "namespace": "d", "resourceVersion": "7" },
            "spec": { "containers": [{ "name": "a" }] },
            "status": { "phase": "Pending" },
        });
        let mut meta = Map::new();
        meta.insert("resourceVersion".into(), json!("9"));
        let t = build(
            &pods,
            &[&pod],
            meta,
            MetaVersion::V1,
            opts(IncludeObject::Metadata),
            now(),
        );
        assert_eq!(t["kind"], "Table");
        assert_eq!(t["apiVersion"], "meta.k8s.io/v1");
        assert_eq!(t["metadata"]["resourceVersion"], "9");
        let headers: Vec<&str> = t["columnDefinitions"]
            .as_array()
            .map(|c| c.iter().filter_map(|c| c["name"].as_str()).collect())
            .unwrap_or_default();
        assert_eq!(
            headers,
            [
                "Name",
                "Ready",
                "Status",
                "Restarts",
                "Age",
                "IP",
                "Node",
                "Nominated Node",
                "Readiness Gates"
            ]
        );
        assert_eq!(t["columnDefinitions"][5]["priority"], 1);
        assert_eq!(t["rows"][0]["cells"][2], "Pending");
        assert_eq!(t["rows"][0]["object"]["kind"], "PartialObjectMetadata");
        assert_eq!(t["rows"][0]["object"]["metadata"]["resourceVersion"], "7");
        let bare = build(
            &pods,
            &[&pod],
            Map::new(),
            MetaVersion::V1beta1,
            opts(IncludeObject::None),
            now(),
        );
        assert_eq!(bare["apiVersion"], "meta.k8s.io/v1beta1");
        assert!(bare["rows"][0]["object"].is_null());
        let whole = build(
            &pods,
            &[&pod],
            Map::new(),
            MetaVersion::V1,
            opts(IncludeObject::Object),
            now(),
        );
        assert_eq!(whole["rows"][0]["object"]["spec"], pod["spec"]);
    }

    #[test]
    fn custom_columns_evaluate_their_json_paths_by_type() {
        let mut rt = ResourceType::absent("example.com", "v1", "widgets", "Widget");
        let column = |name: &str, type_name: &str, path: &str| PrinterColumn {
            name: name.into(),
            type_name: type_name.into(),
            format: None,
            description: None,
            priority: 0,
            json_path: path.into(),
        };
        rt.printer_columns = vec![
            column(
                "Ready",
                "string",
                ".status.conditions[?(@.type=='Ready')].status",
            ),
            column("Replicas", "integer", ".spec.replicas"),
            column("Ratio", "number", ".spec.replicas"),
            column("Paused", "boolean", ".spec.paused"),
            column("Age", "date", ".metadata.creationTimestamp"),
            column("Wrong", "integer", ".metadata.name"),
            column("Missing", "string", ".status.nothing"),
        ];
        let w = json!({
            "metadata": { "name": "w", "creationTimestamp": "2026-03-01T11:59:00Z" },
            "spec": { "replicas": 3, "paused": false },
            "status": { "conditions": [{ "type": "Ready", "status": "True" }] },
        });
        let t = build(
            &rt,
            &[&w],
            Map::new(),
            MetaVersion::V1,
            opts(IncludeObject::Metadata),
            now(),
        );
        assert_eq!(
            t["rows"][0]["cells"],
            json!(["w", "True", 3, 3.0, false, "60s", null, null])
        );
        assert_eq!(
            t["columnDefinitions"][1]["description"],
            "Custom resource definition column (in JSONPath format): .status.conditions[?(@.type=='Ready')].status"
        );
        rt.printer_columns.clear();
        let t = build(
            &rt,
            &[&w],
            Map::new(),
            MetaVersion::V1,
            opts(IncludeObject::Metadata),
            now(),
        );
        assert_eq!(t["rows"][0]["cells"], json!(["w", "60s"]));
    }

    #[test]
    fn include_object_accepts_only_the_api_server_values() {
        let q = Query::parse(Some("includeObject=Object"));
        assert_eq!(
            TableOptions::from_query(&q).map(|o| o.include).ok(),
            Some(IncludeObject::Object)
        );
        let q = Query::parse(Some("includeObject=Everything"));
        let e = TableOptions::from_query(&q)
            .err()
            .map(|e| (e.code.as_u16(), e.message));
        assert_eq!(
            e,
            Some((
                400,
                "Unable to convert to Table as requested: includeObject: Invalid value: \"Everything\": must be 'Metadata', 'Object', 'None', or empty".to_string()
            ))
        );
    }
}
