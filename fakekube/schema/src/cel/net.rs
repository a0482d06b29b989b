//! Kubernetes' CEL network libraries: IP addresses (`ip()`, `isIP()`, `ip.isCanonical()` and
//! `family`, `isUnspecified`, `isLoopback`, `isLinkLocalMulticast`, `isLinkLocalUnicast`,
//! `isGlobalUnicast`), CIDRs (`cidr()`, `isCIDR()` and `containsIP`, `containsCIDR`, `ip`,
//! `masked`, `prefixLength`) and URLs (`url()`, `isURL()` and `getScheme`, `getHost`,
//! `getHostname`, `getPort`, `getEscapedPath`, `getQuery`), with their strict parsing: no
//! IPv4 octet with a leading zero, no IPv4-mapped IPv6 address, no zone.

use cel::objects::Opaque;
use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// The CEL type name of an IP address.
pub(super) const IP_TYPE: &str = "net.IP";
/// The CEL type name of a CIDR.
pub(super) const CIDR_TYPE: &str = "net.CIDR";
/// The CEL type name of a URL.
pub(super) const URL_TYPE: &str = "kubernetes.URL";

/// An IP address.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Ip(pub(super) IpAddr);

impl Opaque for Ip {
    fn runtime_type_name(&self) -> &str {
        IP_TYPE
    }
}

/// A CIDR: an address and a prefix length.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Cidr {
    pub(super) addr: IpAddr,
    pub(super) prefix: u8,
}

impl Opaque for Cidr {
    fn runtime_type_name(&self) -> &str {
        CIDR_TYPE
    }
}

/// A URL, split as Go's `url.ParseRequestURI` splits it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Url {
    pub(super) scheme: String,
    pub(super) host: String,
    pub(super) path: String,
    pub(super) query: String,
}

impl Opaque for Url {
    fn runtime_type_name(&self) -> &str {
        URL_TYPE
    }
}

/// Parses an IP address as the Kubernetes library does.
pub(super) fn parse_ip(s: &str) -> Result<IpAddr, String> {
    let bad = || format!("IP Address {s:?} parse error during conversion from string");
    if s.contains('%') {
        return Err(format!("IP address {s:?} with zone value is not allowed"));
    }
    let ip: IpAddr = s.parse().map_err(|_| bad())?;
    if let IpAddr::V6(v6) = ip
        && v6.to_ipv4_mapped().is_some()
    {
        return Err(format!("IPv4-mapped IPv6 address {s:?} is not allowed"));
    }
    Ok(ip)
}

/// Parses a CIDR as the Kubernetes library does.
pub(super) fn parse_cidr(s: &str) -> Result<Cidr, String> {
    let bad = || {
        format!(
            "network address parse error during conversion from string: invalid CIDR address: {s}"
        )
    };
    let (addr, prefix) = s.split_once('/').ok_or_else(bad)?;
    let addr = parse_ip(addr).map_err(|_| bad())?;
    if prefix.is_empty() || prefix.len() > 3 || !prefix.bytes().all(|b| b.is_ascii_digit()) {
        return Err(bad());
    }
    let prefix: u8 = prefix.parse().map_err(|_| bad())?;
    let max = if addr.is_ipv4() { 32 } else { 128 };
    if prefix > max {
        return Err(bad());
    }
    Ok(Cidr { addr, prefix })
}

/// Whether `s` is an IP address in its canonical form.
pub(super) fn is_canonical(s: &str) -> Result<bool, String> {
    let ip = parse_ip(s)?;
    Ok(ip.to_string() == s)
}

/// `addr` with the host bits below `prefix` cleared.
pub(super) fn mask(addr: IpAddr, prefix: u8) -> IpAddr {
    match addr {
        IpAddr::V4(a) => {
            let bits = u32::from(a);
            let m = u32::MAX.checked_shl(32 - u32::from(prefix)).unwrap_or(0);
            IpAddr::V4(Ipv4Addr::from(bits & m))
        }
        IpAddr::V6(a) => {
            let bits = u128::from(a);
            let m = u128::MAX.checked_shl(128 - u32::from(prefix)).unwrap_or(0);
            IpAddr::V6(Ipv6Addr::from(bits & m))
        }
    }
}

impl Cidr {
    /// Whether the CIDR holds `ip`.
    pub(super) fn contains_ip(&self, ip: IpAddr) -> bool {
        ip.is_ipv4() == self.addr.is_ipv4() && mask(ip, self.prefix) == mask(self.addr, self.prefix)
    }

    /// Whether the CIDR holds all of `other`.
    pub(super) fn contains_cidr(&self, other: &Cidr) -> bool {
        other.prefix >= self.prefix && self.contains_ip(other.addr)
    }
}

/// Go's `IP.IsGlobalUnicast`.
pub(super) fn is_global_unicast(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(a) => {
            !(a.is_unspecified()
                || a.is_loopback()
                || a.is_link_local()
                || a.is_multicast()
                || a.is_broadcast())
        }
        IpAddr::V6(a) => {
            !(a.is_unspecified()
                || a.is_loopback()
                || a.is_multicast()
                || (a.segments()[0] & 0xffc0) == 0xfe80)
        }
    }
}

/// Go's `IP.IsLinkLocalUnicast`.
pub(super) fn is_link_local_unicast(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(a) => a.is_link_local(),
        IpAddr::V6(a) => (a.segments()[0] & 0xffc0) == 0xfe80,
    }
}

/// Go's `IP.IsLinkLocalMulticast`.
pub(super) fn is_link_local_multicast(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(a) => a.octets()[..3] == [224, 0, 0],
        IpAddr::V6(a) => (a.segments()[0] & 0xff0f) == 0xff02,
    }
}

/// Parses a URL as Go's `url.ParseRequestURI` does: an absolute URL or an absolute path.
pub(super) fn parse_url(s: &str) -> Result<Url, String> {
    let bad =
        |why: &str| format!("URL parse error during conversion from string: parse {s:?}: {why}");
    if s.is_empty() {
        return Err(bad("empty url"));
    }
    if s.bytes().any(|b| b < 0x20 || b == 0x7f) {
        return Err(bad("net/url: invalid control character in URL"));
    }
    let (rest, query) = match s.split_once('?') {
        Some((r, q)) => (r, q.to_string()),
        None => (s, String::new()),
    };
    if let Some(path) = rest.strip_prefix('/') {
        return Ok(Url {
            scheme: String::new(),
            host: String::new(),
            path: format!("/{path}"),
            query,
        });
    }
    let Some((scheme, after)) = rest.split_once(':') else {
        return Err(bad("invalid URI for request"));
    };
    let scheme_ok = scheme
        .bytes()
        .next()
        .is_some_and(|b| b.is_ascii_alphabetic())
        && scheme
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'-' | b'.'));
    if !scheme_ok {
        return Err(bad("first path segment in URL cannot contain colon"));
    }
    let (host, path) = match after.strip_prefix("//") {
        Some(auth_path) => {
            let (auth, path) = match auth_path.find('/') {
                Some(i) => (&auth_path[..i], &auth_path[i..]),
                None => (auth_path, ""),
            };
            let host = auth.rsplit_once('@').map_or(auth, |(_, h)| h);
            (host.to_string(), path.to_string())
        }
        None if after.starts_with('/') => (String::new(), after.to_string()),
        None => return Err(bad("invalid URI for request")),
    };
    Ok(Url {
        scheme: scheme.to_string(),
        host,
        path,
        query,
    })
}

impl Url {
    /// The host without its port and without IPv6 brackets.
    pub(super) fn hostname(&self) -> String {
        let h = &self.host;
        if let Some(rest) = h.strip_prefix('[') {
            return rest.split(']').next().unwrap_or("").to_string();
        }
        h.rsplit_once(':')
            .map_or(h.as_str(), |(n, _)| n)
            .to_string()
    }

    /// The port, empty when there is none.
    pub(super) fn port(&self) -> String {
        let h = &self.host;
        let after_bracket = h.rsplit_once(']').map_or(h.as_str(), |(_, p)| p);
        after_bracket
            .rsplit_once(':')
            .map_or("", |(_, p)| p)
            .to_string()
    }

    /// The query as Go's `url.Values`: each key with its values, in order.
    pub(super) fn query_values(&self) -> BTreeMap<String, Vec<String>> {
        let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for (k, v) in form_urlencoded::parse(self.query.as_bytes()) {
            out.entry(k.into_owned()).or_default().push(v.into_owned());
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn parsers_never_panic(s in "\\PC{0,40}") {
            let _ = parse_ip(&s);
            let _ = parse_cidr(&s);
            if let Ok(u) = parse_url(&s) {
                let _ = (u.hostname(), u.port(), u.query_values());
            }
        }
    }

    #[test]
    fn addresses_and_cidrs_parse_strictly() {
        assert!(parse_ip("10.0.0.1").is_ok());
        assert!(parse_ip("010.0.0.1").is_err());
        assert!(parse_ip("::ffff:10.0.0.1").is_err());
        assert!(parse_ip("fe80::1%eth0").is_err());
        let c = parse_cidr("10.0.0.0/8").expect("a CIDR");
        assert!(c.contains_ip(IpAddr::from([10, 1, 2, 3])));
        assert!(!c.contains_ip(IpAddr::from([11, 0, 0, 0])));
        assert!(c.contains_cidr(&parse_cidr("10.1.0.0/16").expect("a CIDR")));
        assert_eq!(
            mask(IpAddr::from([10, 1, 2, 3]), 16),
            IpAddr::from([10, 1, 0, 0])
        );
        assert!(parse_cidr("10.0.0.0/33").is_err());
        assert_eq!(is_canonical("2001:db8::1"), Ok(true));
        assert_eq!(is_canonical("2001:DB8::1"), Ok(false));
    }

    #[test]
    fn urls_split_as_go_splits_them() {
        let u = parse_url("https://user@example.com:8443/a/b?x=1&x=2&y=").expect("a URL");
        assert_eq!(u.scheme, "https");
        assert_eq!(u.host, "example.com:8443");
        assert_eq!(u.hostname(), "example.com");
        assert_eq!(u.port(), "8443");
        assert_eq!(u.path, "/a/b");
        assert_eq!(u.query_values()["x"], ["1", "2"]);
        let v6 = parse_url("http://[::1]:80/").expect("a URL");
        assert_eq!(v6.hostname(), "::1");
        assert_eq!(v6.port(), "80");
        assert!(parse_url("/just/a/path").is_ok());
        assert!(parse_url("not a url").is_err());
        assert!(parse_url("").is_err());
    }
}
