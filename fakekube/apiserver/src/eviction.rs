//! `POST pods/<name>/eviction` (`policy/v1` Eviction): deletes the pod with the eviction's
//! `deleteOptions` unless a PodDisruptionBudget of its namespace that selects it would be
//! violated, which answers 429 as the API server does (`kubectl drain` retries on it).
//!
//! A budget is judged from the pods as they are at the time of the request (the API server
//! reads the disruption controller's `status.disruptionsAllowed`): the healthy pods are the
//! Ready ones it selects, the pods it expects are all it selects; a pod that is not Running
//! (or is already being deleted) is evicted without looking at budgets.

use crate::meta::meta_str;
use crate::registry::ResourceType;
use crate::request::{self, Query};
use crate::response::json_response;
use crate::selector::LabelSelector;
use crate::status::ApiError;
use crate::store::Store;
use axum::body::Body;
use axum::response::Response;
use http::{HeaderMap, StatusCode};
use serde_json::{Value, json};
use std::sync::Arc;

/// Serves an Eviction of pod `name` in `ns`.
pub(crate) async fn serve(
    store: &Store,
    pods: &Arc<ResourceType>,
    ns: &str,
    name: &str,
    headers: &HeaderMap,
    query: &Query,
    body: Body,
) -> Result<Response, ApiError> {
    let raw = request::read_body(body).await?;
    let eviction = if raw.is_empty() {
        json!({})
    } else {
        request::decode(headers, &raw)?
    };
    if let Some(n) = meta_str(&eviction, "name").filter(|n| *n != name) {
        return Err(ApiError::bad_request(format!(
            "name in URL does not match name in Eviction object: {n} != {name}"
        )));
    }
    let options = eviction
        .get("deleteOptions")
        .filter(|o| o.is_object())
        .map(|o| serde_json::to_vec(o).unwrap_or_default())
        .unwrap_or_default();
    let opts = request::delete_options(query, &options)?;
    let pod = store.get(pods, ns, name)?;
    let running = pod.pointer("/status/phase").and_then(Value::as_str) == Some("Running");
    let deleting = pod
        .pointer("/metadata/deletionTimestamp")
        .is_some_and(|v| !v.is_null());
    if running && !deleting {
        check_budgets(store, pods, ns, &pod)?;
    }
    if !opts.dry_run {
        store.delete(pods, ns, name, &opts)?;
    }
    Ok(json_response(
        StatusCode::CREATED,
        &json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Success",
            "code": 201,
        }),
    ))
}

/// 429 when evicting `pod` would leave a budget that selects it with fewer healthy pods than
/// it needs.
fn check_budgets(
    store: &Store,
    pods: &Arc<ResourceType>,
    ns: &str,
    pod: &Value,
) -> Result<(), ApiError> {
    let Some(pdbs) = store
        .registry()
        .find("policy", "v1", "poddisruptionbudgets")
    else {
        return Ok(());
    };
    let labels = crate::meta::labels(pod);
    for pdb in store.list_all(&pdbs, Some(ns)) {
        let Some(selector) = pdb
            .pointer("/spec/selector")
            .and_then(|s| LabelSelector::from_object(s).ok())
        else {
            continue;
        };
        if !selector.matches(labels) {
            continue;
        }
        let selected: Vec<Arc<Value>> = store
            .list_all(pods, Some(ns))
            .into_iter()
            .filter(|p| selector.matches(crate::meta::labels(p)))
            .collect();
        let expected = i64::try_from(selected.len()).unwrap_or(i64::MAX);
        let healthy = i64::try_from(
            selected
                .iter()
                .filter(|p| {
                    p.pointer("/metadata/deletionTimestamp")
                        .is_none_or(Value::is_null)
                        && crate::meta::condition_true(p, "Ready")
                })
                .count(),
        )
        .unwrap_or(0);
        let needed = desired_healthy(&pdb, expected);
        if healthy - 1 < needed {
            let pdb_name = meta_str(&pdb, "name").unwrap_or("");
            let mut e = ApiError::new(
                StatusCode::TOO_MANY_REQUESTS,
                "TooManyRequests",
                "Cannot evict pod as it would violate the pod's disruption budget.",
            );
            e.details = Some(Box::new(json!({
                "causes": [ {
                    "reason": "DisruptionBudget",
                    "message": format!(
                        "The disruption budget {pdb_name} needs {needed} healthy pods and has {healthy} currently"
                    ),
                } ],
            })));
            return Err(e);
        }
    }
    Ok(())
}

/// How many of `expected` pods a budget wants healthy: `minAvailable`, or `expected` less
/// `maxUnavailable` (percentages of `expected`, rounded up as the disruption controller does).
fn desired_healthy(pdb: &Value, expected: i64) -> i64 {
    let resolve = |v: &Value| match v {
        Value::Number(n) => n.as_i64().unwrap_or(0),
        Value::String(s) => {
            let pct: i64 = s.trim_end_matches('%').parse().unwrap_or(0);
            (pct * expected + 99) / 100
        }
        _ => 0,
    };
    if let Some(min) = pdb.pointer("/spec/minAvailable") {
        resolve(min)
    } else if let Some(max) = pdb.pointer("/spec/maxUnavailable") {
        (expected - resolve(max)).max(0)
    } else {
        expected
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn budgets_want_min_available_or_expected_less_max_unavailable() {
        let min = json!({ "spec": { "minAvailable": 2 } });
        assert_eq!(desired_healthy(&min, 3), 2);
        let pct = json!({ "spec": { "minAvailable": "50%" } });
        assert_eq!(desired_healthy(&pct, 3), 2);
        let max = json!({ "spec": { "maxUnavailable": 1 } });
        assert_eq!(desired_healthy(&max, 3), 2);
        let none = json!({ "spec": {} });
        assert_eq!(desired_healthy(&none, 3), 3);
    }
}
