//! `sandbox-router [--port 8080]`: agent-sandbox's sandbox router, which the SDK reaches
//! through a port-forward or a gateway and which forwards each request to the sandbox its
//! headers name.
//!
//! - `GET /healthz`: `{"status":"ok"}` (the Deployment's probes);
//! - any other `GET`, `POST`, `PUT`, `DELETE` or `PATCH`: `X-Sandbox-ID` (a DNS label,
//!   required), `X-Sandbox-Namespace` (`default`) and `X-Sandbox-Port` (8888) name the
//!   target, `http://ID.NAMESPACE.svc.CLUSTER_DOMAIN:PORT` with the same path and query
//!   (`X-Sandbox-Pod-IP`, when given, the pod's address instead); the request goes there
//!   through the pod's network without the routing, hop-by-hop, `Host` and `Authorization`
//!   headers, and the answer comes back streamed. Bad headers are 400, a sandbox that cannot
//!   be reached (unknown name, nothing listening) 502, no answer within the timeout
//!   (`X-Sandbox-Timeout`, capped by `PROXY_TIMEOUT_SECONDS`, 180 s by default) 504, each
//!   with FastAPI's `{"detail": "…"}`;
//! - authentication: with `ROUTER_AUTH_TOKEN` set, proxied requests need
//!   `Authorization: Bearer TOKEN` (401 otherwise); without it the router starts only when
//!   `ALLOW_UNAUTHENTICATED_ROUTER` is true, and otherwise exits 1 at start, as upstream's
//!   does.
//!
//! WebSocket upgrades are not forwarded.

use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use http::{HeaderMap, Method, Request, Response, StatusCode, header};
use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;

use super::{Body, detail, json, log, port_arg, serve};
use fakekube_runtime::process::Process;

/// The port without `--port` (the image's `uvicorn --port 8080`).
const DEFAULT_PORT: u16 = 8080;
/// The sandbox port without `X-Sandbox-Port`.
const DEFAULT_SANDBOX_PORT: i64 = 8888;
/// The proxy timeout without `PROXY_TIMEOUT_SECONDS`.
const DEFAULT_PROXY_TIMEOUT: f64 = 180.0;
/// The longest a connection to a sandbox may take.
const CONNECT_TIMEOUT: f64 = 5.0;

/// The headers that route a request, never forwarded.
const ROUTING_HEADERS: [&str; 5] = [
    "x-sandbox-id",
    "x-sandbox-namespace",
    "x-sandbox-port",
    "x-sandbox-pod-ip",
    "x-sandbox-timeout",
];

/// Hop-by-hop headers (RFC 9110), never forwarded either way.
const HOP_BY_HOP: [&str; 8] = [
    "connection",
    "keep-alive",
    "proxy-authenticate",
    "proxy-authorization",
    "te",
    "trailers",
    "transfer-encoding",
    "upgrade",
];

/// What the router was started with.
#[derive(Debug)]
struct Config {
    /// `ROUTER_AUTH_TOKEN`, when set.
    token: Option<String>,
    /// `PROXY_TIMEOUT_SECONDS`.
    timeout: f64,
    /// `CLUSTER_DOMAIN`.
    cluster_domain: String,
    /// The router's own process: its network reaches the sandboxes.
    proc: Process,
}

/// Whether an environment value means yes, as upstream reads its switches.
fn truthy(value: Option<&str>) -> bool {
    value.is_some_and(|v| {
        matches!(
            v.trim().to_ascii_lowercase().as_str(),
            "1" | "true" | "t" | "yes" | "y" | "on"
        )
    })
}

/// A positive, finite number of seconds from the environment, or `default`.
fn seconds(value: Option<&str>, default: f64) -> f64 {
    value
        .and_then(|v| v.trim().parse::<f64>().ok())
        .filter(|v| v.is_finite() && *v > 0.0)
        .unwrap_or(default)
}

/// `sandbox-router [--port N]`.
pub(crate) async fn sandbox_router(proc: Process) -> i32 {
    let port = match port_arg(proc.args(), DEFAULT_PORT) {
        Ok(p) => p,
        Err(e) => {
            let _ = proc.stderr.write_str(&format!("Error: {e}\n")).await;
            return 2;
        }
    };
    let token = proc
        .var("ROUTER_AUTH_TOKEN")
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .map(str::to_string);
    let timeout = seconds(proc.var("PROXY_TIMEOUT_SECONDS"), DEFAULT_PROXY_TIMEOUT);
    let cluster_domain = proc
        .var("CLUSTER_DOMAIN")
        .filter(|d| !d.is_empty())
        .unwrap_or("cluster.local")
        .to_string();
    let _ = proc
        .stdout
        .write_str(&format!(
            "Sandbox router configured with proxy timeout: {timeout}s\nSandbox router configured with cluster_domain: {cluster_domain}\n"
        ))
        .await;
    if token.is_some() {
        let _ = proc
            .stdout
            .write_str("Authentication enabled: requests must include valid Bearer token.\n")
            .await;
    } else if truthy(proc.var("ALLOW_UNAUTHENTICATED_ROUTER")) {
        let _ = proc
            .stdout
            .write_str("WARNING: Running in UNAUTHENTICATED mode because ALLOW_UNAUTHENTICATED_ROUTER is enabled. Anyone can use this proxy!\n")
            .await;
    } else {
        log(&proc, "ERROR", "Error loading ASGI app.").await;
        let _ = proc
            .stderr
            .write_str("RuntimeError: ROUTER_AUTH_TOKEN must be set to start the sandbox router securely. If you intentionally need unauthenticated mode for local development or testing, set ALLOW_UNAUTHENTICATED_ROUTER=true explicitly.\n")
            .await;
        return 1;
    }
    let config = Arc::new(Config {
        token,
        timeout,
        cluster_domain,
        proc: proc.clone(),
    });
    serve(&proc, port, move |req| {
        let config = config.clone();
        async move { handle(&config, req).await }
    })
    .await
}

/// Answers one request: the health check, or the proxied answer.
async fn handle(config: &Config, req: Request<Incoming>) -> Response<Body> {
    let method = req.method().clone();
    if req.uri().path() == "/healthz" && method == Method::GET {
        return json(StatusCode::OK, &serde_json::json!({ "status": "ok" }));
    }
    let proxied = [
        Method::GET,
        Method::POST,
        Method::PUT,
        Method::DELETE,
        Method::PATCH,
    ];
    if !proxied.contains(&method) {
        return detail(StatusCode::METHOD_NOT_ALLOWED, "Method Not Allowed");
    }
    if let Err(message) = authorize(config, req.headers()) {
        return detail(StatusCode::UNAUTHORIZED, message);
    }
    let target = match Target::of(req.headers(), &config.cluster_domain) {
        Ok(t) => t,
        Err(message) => return detail(StatusCode::BAD_REQUEST, message),
    };
    let limit = request_timeout(req.headers(), config.timeout);
    proxy(config, req, &target, limit).await
}

/// Checks `Authorization: Bearer TOKEN` when the router has a token; the 401's message
/// otherwise.
fn authorize(config: &Config, headers: &HeaderMap) -> Result<(), &'static str> {
    let Some(token) = &config.token else {
        return Ok(());
    };
    const MISSING: &str = "Missing or invalid Authorization header.";
    let value = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .ok_or(MISSING)?;
    let parts: Vec<&str> = value.split_whitespace().collect();
    let [scheme, given] = parts.as_slice() else {
        return Err(MISSING);
    };
    if !scheme.eq_ignore_ascii_case("bearer") {
        return Err(MISSING);
    }
    // Compared in constant time, as secrets.compare_digest does.
    let same = given.len() == token.len()
        && given
            .bytes()
            .zip(token.bytes())
            .fold(0u8, |acc, (a, b)| acc | (a ^ b))
            == 0;
    if same { Ok(()) } else { Err("Invalid token.") }
}

/// The proxy timeout of one request: `X-Sandbox-Timeout` when it is a positive number, capped
/// by the router's.
fn request_timeout(headers: &HeaderMap, router: f64) -> f64 {
    let asked = headers
        .get("x-sandbox-timeout")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<f64>().ok())
        .filter(|v| v.is_finite() && *v > 0.0);
    asked.map_or(router, |a| a.min(router))
}

/// Where a request goes.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Target {
    /// The sandbox's name.
    id: String,
    /// The host to connect to: the sandbox's Service name, or its pod's address.
    host: String,
    /// The port.
    port: u16,
}

/// Whether `s` is a DNS label (RFC 1123: lower-case alphanumerics and `-`, at most 63).
fn dns_label(s: &str) -> bool {
    let bytes = s.as_bytes();
    !s.is_empty()
        && s.len() <= 63
        && bytes
            .iter()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-')
        && bytes.first() != Some(&b'-')
        && bytes.last() != Some(&b'-')
}

impl Target {
    /// The target the routing headers name, or the 400's message.
    fn of(headers: &HeaderMap, cluster_domain: &str) -> Result<Target, &'static str> {
        let get = |n: &str| headers.get(n).and_then(|v| v.to_str().ok());
        let id = get("x-sandbox-id")
            .filter(|v| !v.is_empty())
            .ok_or("X-Sandbox-ID header is required.")?;
        if !dns_label(id) {
            return Err("Invalid sandbox ID format.");
        }
        let namespace = get("x-sandbox-namespace").unwrap_or("default");
        if !dns_label(namespace) {
            return Err("Invalid namespace format.");
        }
        let port = match get("x-sandbox-port") {
            None => DEFAULT_SANDBOX_PORT,
            Some(p) => p
                .trim()
                .replace('_', "")
                .parse::<i64>()
                .map_err(|_| "Invalid port format.")?,
        };
        let port = u16::try_from(port)
            .ok()
            .filter(|p| *p != 0)
            .ok_or("Invalid port format.")?;
        let host = match get("x-sandbox-pod-ip").filter(|v| !v.is_empty()) {
            Some(ip) => {
                let ip: IpAddr = ip
                    .parse()
                    .map_err(|_| "Invalid target IP address format.")?;
                let link_local = match ip {
                    IpAddr::V4(v4) => v4.is_link_local(),
                    IpAddr::V6(v6) => (v6.segments()[0] & 0xffc0) == 0xfe80,
                };
                if ip.is_loopback() || link_local || ip.is_multicast() || ip.is_unspecified() {
                    return Err("Invalid target IP address.");
                }
                ip.to_string()
            }
            None => format!("{id}.{namespace}.svc.{cluster_domain}"),
        };
        Ok(Target {
            id: id.to_string(),
            host,
            port,
        })
    }
}

/// The headers of `from` without the hop-by-hop ones (and those `Connection` names).
fn end_to_end(from: &HeaderMap, also: &[&str]) -> HeaderMap {
    let named: Vec<String> = from
        .get_all(header::CONNECTION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(',').map(|t| t.trim().to_ascii_lowercase()))
        .collect();
    let mut out = HeaderMap::new();
    for (name, value) in from {
        let n = name.as_str();
        if HOP_BY_HOP.contains(&n) || also.contains(&n) || named.iter().any(|t| t == n) {
            continue;
        }
        out.append(name.clone(), value.clone());
    }
    out
}

/// Forwards `req` to `target` and streams the answer back.
async fn proxy(
    config: &Config,
    req: Request<Incoming>,
    target: &Target,
    limit: f64,
) -> Response<Body> {
    let unreachable = || {
        detail(
            StatusCode::BAD_GATEWAY,
            &format!("Could not connect to the backend sandbox: {}", target.id),
        )
    };
    let net = &config.proc.network;
    let ip = match target.host.parse::<IpAddr>() {
        Ok(ip) => Some(ip),
        Err(_) => net.lookup(&target.host).first().copied(),
    };
    let Some(ip) = ip else {
        return unreachable();
    };
    let Ok(conn) = net.connect_to(ip, target.port) else {
        return unreachable();
    };
    let connect = Duration::from_secs_f64(limit.min(CONNECT_TIMEOUT));
    let handshake = hyper::client::conn::http1::handshake::<_, Incoming>(TokioIo::new(conn));
    let Ok(Ok((mut sender, connection))) = tokio::time::timeout(connect, handshake).await else {
        return unreachable();
    };
    tokio::spawn(connection);
    let (parts, body) = req.into_parts();
    let path = parts
        .uri
        .path_and_query()
        .map(|p| p.as_str().to_string())
        .unwrap_or_else(|| "/".into());
    let mut skip: Vec<&str> = ROUTING_HEADERS.to_vec();
    skip.extend(["host", "authorization"]);
    let mut forwarded = Request::new(body);
    *forwarded.method_mut() = parts.method;
    *forwarded.headers_mut() = end_to_end(&parts.headers, &skip);
    let authority = if target.port == 80 {
        target.host.clone()
    } else {
        format!("{}:{}", target.host, target.port)
    };
    if let Ok(v) = header::HeaderValue::from_str(&authority) {
        forwarded.headers_mut().insert(header::HOST, v);
    }
    match path.parse() {
        Ok(uri) => *forwarded.uri_mut() = uri,
        Err(_) => return detail(StatusCode::BAD_REQUEST, "Invalid path."),
    }
    let answer = tokio::time::timeout(
        Duration::from_secs_f64(limit),
        sender.send_request(forwarded),
    )
    .await;
    let resp = match answer {
        Err(_) => {
            return detail(
                StatusCode::GATEWAY_TIMEOUT,
                &format!("Timed out waiting for the backend sandbox: {}", target.id),
            );
        }
        Ok(Err(_)) => {
            return detail(
                StatusCode::INTERNAL_SERVER_ERROR,
                "An internal error occurred in the proxy.",
            );
        }
        Ok(Ok(r)) => r,
    };
    if resp.status() == StatusCode::SWITCHING_PROTOCOLS {
        return detail(
            StatusCode::BAD_GATEWAY,
            "Backend attempted a WebSocket upgrade over HTTP. Connect using the WebSocket protocol instead.",
        );
    }
    let (parts, body) = resp.into_parts();
    let mut out = Response::new(body.map_err(std::io::Error::other).boxed());
    *out.status_mut() = parts.status;
    *out.headers_mut() = end_to_end(&parts.headers, &[]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(*k, header::HeaderValue::from_static(v));
        }
        h
    }

    #[test]
    fn the_routing_headers_name_the_sandboxs_service_or_its_pod() {
        let t = Target::of(
            &headers(&[("x-sandbox-id", "sb-1"), ("x-sandbox-namespace", "team")]),
            "cluster.local",
        );
        assert_eq!(
            t,
            Ok(Target {
                id: "sb-1".into(),
                host: "sb-1.team.svc.cluster.local".into(),
                port: 8888
            })
        );
        let t = Target::of(
            &headers(&[
                ("x-sandbox-id", "sb"),
                ("x-sandbox-pod-ip", "10.244.0.9"),
                ("x-sandbox-port", "9000"),
            ]),
            "cluster.local",
        );
        assert_eq!(t.map(|t| (t.host, t.port)), Ok(("10.244.0.9".into(), 9000)));
    }

    #[test]
    fn bad_routing_headers_are_refused_with_upstreams_messages() {
        let err = |pairs: &[(&'static str, &'static str)]| {
            Target::of(&headers(pairs), "cluster.local").err()
        };
        assert_eq!(err(&[]), Some("X-Sandbox-ID header is required."));
        assert_eq!(
            err(&[("x-sandbox-id", "Bad_Id")]),
            Some("Invalid sandbox ID format.")
        );
        assert_eq!(
            err(&[("x-sandbox-id", "a"), ("x-sandbox-namespace", "-x")]),
            Some("Invalid namespace format.")
        );
        assert_eq!(
            err(&[("x-sandbox-id", "a"), ("x-sandbox-port", "70000")]),
            Some("Invalid port format.")
        );
        assert_eq!(
            err(&[("x-sandbox-id", "a"), ("x-sandbox-pod-ip", "127.0.0.1")]),
            Some("Invalid target IP address.")
        );
        assert_eq!(
            err(&[("x-sandbox-id", "a"), ("x-sandbox-pod-ip", "nope")]),
            Some("Invalid target IP address format.")
        );
    }

    #[test]
    fn hop_by_hop_and_named_headers_are_dropped() {
        let h = headers(&[
            ("connection", "x-secret"),
            ("x-secret", "1"),
            ("keep-alive", "5"),
            ("content-type", "text/plain"),
        ]);
        let kept = end_to_end(&h, &["content-length"]);
        assert_eq!(kept.len(), 1);
        assert!(kept.contains_key("content-type"));
    }

    #[test]
    fn with_a_token_only_its_bearer_passes() {
        let proc = fakekube_runtime::process::Process::new(
            vec![],
            vec![],
            "/".into(),
            fakekube_runtime::fs::PodFs::new(vec![]),
            crate::registry(),
            fakekube_runtime::io::Stdio {
                stdin: fakekube_runtime::io::Input::empty(),
                stdout: fakekube_runtime::io::Output::null(),
                stderr: fakekube_runtime::io::Output::null(),
            },
            Default::default(),
        );
        let config = Config {
            token: Some("s3cret".into()),
            timeout: 180.0,
            cluster_domain: "cluster.local".into(),
            proc,
        };
        assert_eq!(
            authorize(&config, &headers(&[])),
            Err("Missing or invalid Authorization header.")
        );
        assert_eq!(
            authorize(&config, &headers(&[("authorization", "Basic s3cret")])),
            Err("Missing or invalid Authorization header.")
        );
        assert_eq!(
            authorize(&config, &headers(&[("authorization", "Bearer nope")])),
            Err("Invalid token.")
        );
        assert_eq!(
            authorize(&config, &headers(&[("authorization", "bearer s3cret")])),
            Ok(())
        );
    }

    #[test]
    fn switches_and_timeouts_read_as_upstream_reads_them() {
        assert!(truthy(Some(" Yes ")));
        assert!(!truthy(Some("false")));
        assert!(!truthy(None));
        assert_eq!(seconds(Some("-3"), 180.0), 180.0);
        assert_eq!(
            request_timeout(&headers(&[("x-sandbox-timeout", "500")]), 180.0),
            180.0
        );
        assert_eq!(
            request_timeout(&headers(&[("x-sandbox-timeout", "2.5")]), 180.0),
            2.5
        );
    }
}
