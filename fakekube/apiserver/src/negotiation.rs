//! Content negotiation: which representation a response takes, read from the request's
//! `Accept` header as the API server reads it.
//!
//! A header is a list of clauses (`application/json;as=Table;v=v1;g=meta.k8s.io`), tried in
//! order of their `q` (highest first; a concrete type before a wildcard at equal `q`); the
//! first clause the server can serve wins. A clause names a media type (`application/json`,
//! `application/yaml`, or a wildcard) and may ask for a conversion with its `as`, `g` and `v`
//! parameters: `PartialObjectMetadata`, `PartialObjectMetadataList` or `Table` of
//! `meta.k8s.io/v1` or `v1beta1`. A clause asking for anything else (another conversion, a
//! media type fakekube does not write, protobuf among them, or a server version) is skipped;
//! when none is left the request is refused with 406 and the list of media types offered.
//!
//! Pure parsing and choosing: what a conversion does to an object is [`crate::representation`]'s.

use crate::accept::{Clause, parse_accept};
use crate::status::ApiError;
use http::StatusCode;

/// A media type the server writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Format {
    /// `application/json`.
    Json,
    /// `application/yaml`.
    Yaml,
}

impl Format {
    /// The media type, as a `Content-Type` names it.
    pub(crate) fn media_type(self) -> &'static str {
        match self {
            Format::Json => "application/json",
            Format::Yaml => "application/yaml",
        }
    }
}

/// The version of `meta.k8s.io` a conversion is asked in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum MetaVersion {
    /// `meta.k8s.io/v1`.
    V1,
    /// `meta.k8s.io/v1beta1`.
    V1beta1,
}

impl MetaVersion {
    /// `meta.k8s.io/v1` or `meta.k8s.io/v1beta1`.
    pub(crate) fn api_version(self) -> &'static str {
        match self {
            MetaVersion::V1 => "meta.k8s.io/v1",
            MetaVersion::V1beta1 => "meta.k8s.io/v1beta1",
        }
    }
}

/// What the server turns its answer into before writing it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Conversion {
    /// The object or list as it is.
    None,
    /// An object's `metadata` alone, as a `PartialObjectMetadata`.
    PartialObjectMetadata(MetaVersion),
    /// A list's items' `metadata` alone, as a `PartialObjectMetadataList`.
    PartialObjectMetadataList(MetaVersion),
    /// The rows and columns `kubectl get` prints, as a `Table`.
    Table(MetaVersion),
}

/// The representation a request negotiated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Representation {
    /// The media type written.
    pub(crate) format: Format,
    /// The conversion asked for.
    pub(crate) conversion: Conversion,
}

impl Representation {
    /// JSON, unconverted: what a request without `Accept` gets.
    pub(crate) const JSON: Representation = Representation {
        format: Format::Json,
        conversion: Conversion::None,
    };
}

/// What an endpoint can write, for [`negotiate`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Endpoint {
    /// A resource's get, list, create, update, patch or delete: JSON or YAML, with the
    /// conversions.
    Object,
    /// A watch: a stream of JSON events, whose objects may be converted.
    Watch,
}

/// The formats an endpoint writes, in the order a wildcard picks them.
fn formats(endpoint: Endpoint) -> &'static [Format] {
    match endpoint {
        Endpoint::Object => &[Format::Json, Format::Yaml],
        Endpoint::Watch => &[Format::Json],
    }
}

/// The conversion a clause asks for; `None` when it asks for one the server does not make.
fn conversion(clause: &Clause) -> Option<Conversion> {
    let (kind, group, version) = (clause.param("as"), clause.param("g"), clause.param("v"));
    if kind.is_none() && group.is_none() && version.is_none() {
        return Some(Conversion::None);
    }
    let version = match (group?, version?) {
        ("meta.k8s.io", "v1") => MetaVersion::V1,
        ("meta.k8s.io", "v1beta1") => MetaVersion::V1beta1,
        _ => return None,
    };
    Some(match kind? {
        "PartialObjectMetadata" => Conversion::PartialObjectMetadata(version),
        "PartialObjectMetadataList" => Conversion::PartialObjectMetadataList(version),
        "Table" => Conversion::Table(version),
        _ => return None,
    })
}

/// Whether a clause's other parameters let the server use it: `stream` only as `watch` and
/// only where a stream is written, `sv` never (the server serves no other group version).
fn parameters_allowed(clause: &Clause, endpoint: Endpoint) -> bool {
    clause.params.iter().all(|(k, v)| match k.as_str() {
        "stream" => v.is_empty() || (v == "watch" && endpoint == Endpoint::Watch),
        "sv" => v.is_empty(),
        _ => true,
    })
}

/// The representation of the first clause of `accept` the endpoint can write; a request
/// without `Accept` gets JSON. 406, listing the media types offered, when no clause fits.
pub(crate) fn negotiate(
    accept: Option<&str>,
    endpoint: Endpoint,
) -> Result<Representation, ApiError> {
    let header = accept.map(str::trim).unwrap_or("");
    if header.is_empty() {
        return Ok(Representation::JSON);
    }
    for clause in parse_accept(header) {
        if !parameters_allowed(&clause, endpoint) {
            continue;
        }
        let Some(conversion) = conversion(&clause) else {
            continue;
        };
        let format = formats(endpoint).iter().copied().find(|f| {
            let (t, s) = f.media_type().split_once('/').unwrap_or(("", ""));
            (clause.type_ == t || clause.type_ == "*")
                && (clause.subtype == s || clause.subtype == "*")
        });
        if let Some(format) = format {
            return Ok(Representation { format, conversion });
        }
    }
    Err(not_acceptable(endpoint))
}

/// The API server's 406 for an `Accept` header no offered media type matches.
fn not_acceptable(endpoint: Endpoint) -> ApiError {
    let offered: Vec<String> = formats(endpoint)
        .iter()
        .map(|f| match endpoint {
            Endpoint::Object => f.media_type().to_string(),
            Endpoint::Watch => format!("{};stream=watch", f.media_type()),
        })
        .collect();
    ApiError::new(
        StatusCode::NOT_ACCEPTABLE,
        "NotAcceptable",
        format!(
            "only the following media types are accepted: {}",
            offered.join(", ")
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn rep(format: Format, conversion: Conversion) -> Representation {
        Representation { format, conversion }
    }

    #[test]
    fn kubectl_get_asks_for_a_table_of_meta_v1_first() {
        let accept = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json";
        assert_eq!(
            negotiate(Some(accept), Endpoint::Object).ok(),
            Some(rep(Format::Json, Conversion::Table(MetaVersion::V1)))
        );
    }

    #[test]
    fn metadata_clients_get_partial_object_metadata() {
        let accept = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1";
        assert_eq!(
            negotiate(Some(accept), Endpoint::Object).ok(),
            Some(rep(
                Format::Json,
                Conversion::PartialObjectMetadataList(MetaVersion::V1)
            ))
        );
        let accept = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1beta1";
        assert_eq!(
            negotiate(Some(accept), Endpoint::Watch).ok(),
            Some(rep(
                Format::Json,
                Conversion::PartialObjectMetadata(MetaVersion::V1beta1)
            ))
        );
    }

    #[test]
    fn clauses_the_server_cannot_serve_are_skipped_for_the_next() {
        // protobuf first, as client-go's typed clients ask
        let accept = "application/vnd.kubernetes.protobuf, application/json";
        assert_eq!(
            negotiate(Some(accept), Endpoint::Object).ok(),
            Some(Representation::JSON)
        );
        let accept = "application/json;as=Widget;g=example.com;v=v1, application/yaml";
        assert_eq!(
            negotiate(Some(accept), Endpoint::Object).ok(),
            Some(rep(Format::Yaml, Conversion::None))
        );
        assert_eq!(
            negotiate(Some("*/*"), Endpoint::Object).ok(),
            Some(Representation::JSON)
        );
        assert_eq!(
            negotiate(Some("application/json;stream=watch"), Endpoint::Watch).ok(),
            Some(Representation::JSON)
        );
    }

    #[test]
    fn higher_quality_wins_and_wildcards_come_last() {
        let accept = "application/json;q=0.5, application/yaml";
        assert_eq!(
            negotiate(Some(accept), Endpoint::Object).ok(),
            Some(rep(Format::Yaml, Conversion::None))
        );
        let accept = "*/*, application/yaml";
        assert_eq!(
            negotiate(Some(accept), Endpoint::Object).ok(),
            Some(rep(Format::Yaml, Conversion::None))
        );
    }

    #[test]
    fn nothing_acceptable_is_406_listing_what_is_offered() {
        let e = negotiate(
            Some("application/vnd.kubernetes.protobuf"),
            Endpoint::Object,
        )
        .err()
        .map(|e| (e.code.as_u16(), e.reason, e.message));
        assert_eq!(
            e,
            Some((
                406,
                "NotAcceptable",
                "only the following media types are accepted: application/json, application/yaml"
                    .to_string()
            ))
        );
        let e = negotiate(Some("application/yaml"), Endpoint::Watch)
            .err()
            .map(|e| e.message);
        assert_eq!(
            e.as_deref(),
            Some("only the following media types are accepted: application/json;stream=watch")
        );
    }

    #[test]
    fn parameters_and_quality_parse_with_spaces_and_case() {
        let clauses =
            parse_accept(" Application/JSON ; as=Table ; q=0.9 ; g=meta.k8s.io, text/plain;q=1");
        assert_eq!(clauses.len(), 2);
        assert_eq!(clauses[0].type_, "text");
        assert_eq!(clauses[1].subtype, "json");
        assert_eq!(clauses[1].param("as"), Some("Table"));
        assert_eq!(clauses[1].param("g"), Some("meta.k8s.io"));
        assert!((clauses[1].q - 0.9).abs() < 1e-6);
    }

    proptest! {
        #[test]
        fn any_header_negotiates_or_is_refused_without_panicking(header in ".{0,200}") {
            let _ = negotiate(Some(&header), Endpoint::Object);
            let _ = negotiate(Some(&header), Endpoint::Watch);
        }

    }
}
