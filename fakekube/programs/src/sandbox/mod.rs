//! The agent-sandbox images as programs: `python-runtime-sandbox` ([`runtime`]), the HTTP API
//! upstream's example runtime image serves on port 8888 for the SDK (`/execute`, `/upload`,
//! `/download`, `/list`, `/exists`), and `sandbox-router` ([`router`]), the router that
//! forwards each request to the sandbox its headers name. Both are written after the
//! behaviour of upstream's FastAPI applications (paths, JSON bodies, status codes, error
//! bodies), served by hyper over the pod's network.
//!
//! What they share is here: serving HTTP/1.1 on a port of the pod until the process is killed,
//! with uvicorn's log lines; JSON replies as FastAPI writes them.

#[cfg(test)]
mod end_to_end;
pub(crate) mod multipart;
pub(crate) mod router;
pub(crate) mod runtime;
pub(crate) mod shlex;

use std::convert::Infallible;
use std::future::Future;
use std::sync::Arc;

use bytes::Bytes;
use http::{Response, StatusCode, header};
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use serde_json::Value;
use tokio::task::JoinSet;

use fakekube_runtime::process::Process;

/// The body of every reply: whole (JSON, files) or streamed (what the router forwards).
pub(crate) type Body = BoxBody<Bytes, std::io::Error>;

/// A reply with a whole body.
pub(crate) fn full(
    status: StatusCode,
    content_type: &str,
    body: impl Into<Bytes>,
) -> Response<Body> {
    let body = body.into();
    let mut resp = Response::new(
        Full::new(body)
            .map_err(|never: Infallible| match never {})
            .boxed(),
    );
    *resp.status_mut() = status;
    if let Ok(v) = header::HeaderValue::from_str(content_type) {
        resp.headers_mut().insert(header::CONTENT_TYPE, v);
    }
    resp
}

/// A JSON reply, serialised compactly as FastAPI's `JSONResponse` does.
pub(crate) fn json(status: StatusCode, value: &Value) -> Response<Body> {
    full(status, "application/json", value.to_string())
}

/// FastAPI's error reply for an `HTTPException`: `{"detail": "..."}`.
pub(crate) fn detail(status: StatusCode, message: &str) -> Response<Body> {
    json(status, &serde_json::json!({ "detail": message }))
}

/// A port from `--port N` (or `--port=N`) among the arguments, else `default`; `Err` names
/// the bad value.
pub(crate) fn port_arg(args: &[String], default: u16) -> Result<u16, String> {
    let mut value = None;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        if a == "--port" {
            value = it.next().cloned();
        } else if let Some(v) = a.strip_prefix("--port=") {
            value = Some(v.to_string());
        }
    }
    match value {
        None => Ok(default),
        Some(v) => v.parse::<u16>().ok().filter(|p| *p != 0).ok_or(format!(
            "Invalid value for '--port': '{v}' is not a valid integer."
        )),
    }
}

/// Writes one uvicorn-style log line (`INFO:     message`) on the program's stderr.
pub(crate) async fn log(proc: &Process, level: &str, message: &str) {
    let pad = " ".repeat(10usize.saturating_sub(level.len() + 1));
    let _ = proc
        .stderr
        .write_str(&format!("{level}:{pad}{message}\n"))
        .await;
}

/// Serves HTTP/1.1 on `port` of the pod with `handle` until the process is killed, logging as
/// uvicorn does; the exit status when the port cannot be taken (1, after uvicorn's message).
pub(crate) async fn serve<H, F>(proc: &Process, port: u16, handle: H) -> i32
where
    H: Fn(http::Request<Incoming>) -> F + Send + Sync + 'static,
    F: Future<Output = Response<Body>> + Send + 'static,
{
    let listener = match proc.network.listen(port) {
        Ok(l) => l,
        Err(e) => {
            log(
                proc,
                "ERROR",
                &format!(
                    "[Errno 98] error while attempting to bind on address ('0.0.0.0', {port}): {}",
                    e.to_string().to_lowercase()
                ),
            )
            .await;
            return 1;
        }
    };
    log(
        proc,
        "INFO",
        &format!("Started server process [{}]", proc.pid),
    )
    .await;
    log(proc, "INFO", "Waiting for application startup.").await;
    log(proc, "INFO", "Application startup complete.").await;
    log(
        proc,
        "INFO",
        &format!("Uvicorn running on http://0.0.0.0:{port} (Press CTRL+C to quit)"),
    )
    .await;
    let handle = Arc::new(handle);
    let mut tasks = JoinSet::new();
    loop {
        let conn = tokio::select! {
            c = listener.accept() => c,
            () = proc.cancel.cancelled() => return 0,
            Some(_) = tasks.join_next(), if !tasks.is_empty() => continue,
        };
        let Some(conn) = conn else { return 0 };
        let peer = format!("127.0.0.1:{}", conn.peer_port());
        let (handle, logger) = (handle.clone(), proc.stderr.clone());
        tasks.spawn(async move {
            let service = service_fn(move |req: http::Request<Incoming>| {
                let (handle, logger, peer) = (handle.clone(), logger.clone(), peer.clone());
                async move {
                    let line = format!(
                        "\"{} {} {:?}\"",
                        req.method(),
                        req.uri()
                            .path_and_query()
                            .map(|p| p.as_str())
                            .unwrap_or("/"),
                        req.version()
                    );
                    let mut resp = handle(req).await;
                    resp.headers_mut()
                        .insert(header::SERVER, header::HeaderValue::from_static("uvicorn"));
                    let status = resp.status();
                    let _ = logger
                        .write_str(&format!(
                            "INFO:     {peer} - {line} {} {}\n",
                            status.as_u16(),
                            status.canonical_reason().unwrap_or("")
                        ))
                        .await;
                    Ok::<_, Infallible>(resp)
                }
            });
            // A client may shut down its sending side while it waits for the answer
            // (`nc` does at the end of its input): that is not the end of the exchange.
            let _ = hyper::server::conn::http1::Builder::new()
                .half_close(true)
                .serve_connection(TokioIo::new(conn), service)
                .await;
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_port_comes_from_the_port_option_or_the_default() {
        let args = |l: &[&str]| l.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(port_arg(&args(&[]), 8888), Ok(8888));
        assert_eq!(port_arg(&args(&["--port", "9000"]), 8888), Ok(9000));
        assert_eq!(port_arg(&args(&["--port=81"]), 8888), Ok(81));
        assert!(port_arg(&args(&["--port", "x"]), 8888).is_err());
    }
}
