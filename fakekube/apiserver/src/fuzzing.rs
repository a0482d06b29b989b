//! The API server's entry points for the fuzz targets of `fakekube/fuzz/` (cargo-fuzz),
//! compiled only with the `fuzzing` feature (never a default) and in tests; `fakekube`'s
//! `fuzzing` re-exports them beside the kubelet's and the machinery's. Each takes arbitrary
//! bytes and must return without panicking whatever they are.
//!
//! Not an API: the functions and their input layouts may change with the fuzz targets.

/// A request body in the media type the first byte picks (JSON, YAML, protobuf, or another),
/// decoded as the handlers decode bodies.
pub fn request_body(data: &[u8]) {
    let Some((&pick, body)) = data.split_first() else {
        return;
    };
    let types = [
        "application/json",
        "application/yaml",
        "application/vnd.kubernetes.protobuf",
        "application/apply-patch+yaml",
        "application/merge-patch+json",
    ];
    let mut headers = http::HeaderMap::new();
    if let Ok(v) = http::HeaderValue::from_str(types[usize::from(pick) % types.len()]) {
        headers.insert(http::header::CONTENT_TYPE, v);
    }
    let _ = crate::request::decode(&headers, body);
}

/// A query string, parsed into every verb's options as the handlers parse them.
pub fn request_parameters(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let query = crate::request::Query::parse(Some(&text));
    for verb in [
        crate::request::WriteVerb::Create,
        crate::request::WriteVerb::Update,
        crate::request::WriteVerb::Patch { apply: false },
        crate::request::WriteVerb::Patch { apply: true },
    ] {
        let _ = crate::request::write_options(&query, verb);
    }
    let _ = crate::request::delete_options(&query, data);
    let _ = crate::request::timeout_param(&query);
    for verb in ["get", "list", "watch", "create", "deletecollection"] {
        let _ = crate::checks::query_parameters(verb, &query);
    }
    if let Some(rt) = crate::registry::Registry::new().find("", "v1", "pods") {
        let _ = crate::request::list_query(&rt, &query);
    }
}
