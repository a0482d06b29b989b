//! Query parameters as the API server and the kubelet read them: the first value wins.

/// Query parameters, first value wins.
#[derive(Debug, Default)]
pub struct Query(Vec<(String, String)>);

impl Query {
    /// Parses a query string (`None`: no query).
    pub fn parse(q: Option<&str>) -> Self {
        Query(
            q.map(|q| {
                form_urlencoded::parse(q.as_bytes())
                    .map(|(k, v)| (k.into_owned(), v.into_owned()))
                    .collect()
            })
            .unwrap_or_default(),
        )
    }

    /// Every value of `key`, in order.
    pub fn all<'a>(&'a self, key: &'a str) -> impl Iterator<Item = &'a str> + 'a {
        self.0
            .iter()
            .filter(move |(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// The first value of `key`.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// A boolean the way apimachinery parses one: missing is false, `0`/`false` in any case
    /// are false, anything else (even empty) is true.
    pub fn flag(&self, key: &str) -> bool {
        match self.get(key) {
            None => false,
            Some(v) => !(v == "0" || v.eq_ignore_ascii_case("false")),
        }
    }
}
