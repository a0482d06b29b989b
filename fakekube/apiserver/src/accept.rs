//! `Accept` headers: their clauses (`application/json;as=Table;q=0.9`), best first, as the
//! API server's `goautoneg` parses them. Pure parsing; what an endpoint makes of the clauses
//! is its own ([`crate::negotiation`], `/openapi/v2`, aggregated discovery).

/// One clause of an `Accept` header.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Clause {
    /// The type (`application`, `*`).
    pub(crate) type_: String,
    /// The subtype (`json`, `*`).
    pub(crate) subtype: String,
    /// The parameters other than `q`, in order.
    pub(crate) params: Vec<(String, String)>,
    /// The quality, 1 when not given.
    pub(crate) q: f32,
}

impl Clause {
    /// The value of parameter `name`.
    pub(crate) fn param(&self, name: &str) -> Option<&str> {
        self.params
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

/// Parses an `Accept` header into its clauses, best first: by `q`, then concrete types and
/// subtypes before wildcards; clauses that compare equal keep their order. A clause without
/// a `/` (other than `*`) is dropped, as are parameters without `=`.
pub(crate) fn parse_accept(header: &str) -> Vec<Clause> {
    let mut clauses: Vec<Clause> = header
        .split(',')
        .filter_map(|part| {
            let mut pieces = part.split(';');
            let range = pieces.next()?.trim();
            let (type_, subtype) = match range.split_once('/') {
                Some((t, s)) if !s.contains('/') => (t.trim(), s.trim()),
                None if range == "*" => ("*", "*"),
                _ => return None,
            };
            if type_.is_empty() || subtype.is_empty() {
                return None;
            }
            let mut q = 1.0_f32;
            let mut params = Vec::new();
            for p in pieces {
                let Some((k, v)) = p.split_once('=') else {
                    continue;
                };
                let (k, v) = (k.trim(), v.trim().trim_matches('"'));
                if k == "q" {
                    q = v
                        .parse::<f32>()
                        .ok()
                        .filter(|q| q.is_finite())
                        .unwrap_or(0.0);
                } else {
                    params.push((k.to_string(), v.to_string()));
                }
            }
            Some(Clause {
                type_: type_.to_ascii_lowercase(),
                subtype: subtype.to_ascii_lowercase(),
                params,
                q,
            })
        })
        .collect();
    clauses.sort_by(|a, b| {
        b.q.total_cmp(&a.q)
            .then((a.type_ == "*").cmp(&(b.type_ == "*")))
            .then((a.subtype == "*").cmp(&(b.subtype == "*")))
    });
    clauses
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

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
        fn clauses_come_out_ordered_by_quality(qs in proptest::collection::vec(0u16..=1000, 1..8)) {
            let header: Vec<String> = qs
                .iter()
                .enumerate()
                .map(|(i, q)| format!("type{i}/sub;q={}", f32::from(*q) / 1000.0))
                .collect();
            let clauses = parse_accept(&header.join(","));
            prop_assert_eq!(clauses.len(), qs.len());
            for pair in clauses.windows(2) {
                prop_assert!(pair[0].q >= pair[1].q);
            }
        }
    }
}
