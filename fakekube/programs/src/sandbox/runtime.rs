//! `python-runtime-sandbox [--port 8888]`: the HTTP API of agent-sandbox's example runtime
//! image, which the Python SDK calls for each sandbox.
//!
//! - `GET /`: `{"status":"ok","message":"Sandbox Runtime is active."}`;
//! - `POST /execute` `{"command": "…"}`: the command split as `shlex.split` splits it and
//!   started directly (no shell) in the base directory, with the server's environment;
//!   `{"stdout","stderr","exit_code"}`. A command that cannot start or runs past
//!   `SANDBOX_EXEC_TIMEOUT_SECONDS` (300 s by default) is `exit_code` 1 with
//!   `Failed to execute command: …` on stderr, worded as Python words the exception;
//! - `POST /upload` (multipart field `file`): saved under the base directory at its file name,
//!   parents made; `GET /download/PATH`, `GET /list/PATH` (`[{"name","size","type",
//!   "mod_time"}]`), `GET /exists/PATH` (`{"path","exists"}`);
//! - paths are confined to the base directory (`SANDBOX_BASE_DIR`, `/app` by default, made at
//!   start as the image has it): one that leaves it is 403 `{"message":"Access denied"}`;
//! - a body FastAPI cannot validate is 422 with pydantic's `detail` list, an unknown path
//!   404 `{"detail":"Not Found"}`, a known path with another method 405.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::{Method, Request, Response, StatusCode, header};
use http_body_util::{BodyExt, Limited};
use hyper::body::Incoming;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::multipart;
use super::shlex::{py_repr, split};
use super::{Body, detail, full, json as reply, log, port_arg, serve};
use fakekube_runtime::fs::{self, FsError, NodeKind};
use fakekube_runtime::io::{Input, Output};
use fakekube_runtime::process::{DEFAULT_PATH, Process, resolve};

/// The port without `--port` (the image's `uvicorn --port 8888`).
const DEFAULT_PORT: u16 = 8888;
/// The base directory without `SANDBOX_BASE_DIR` (the image's `WORKDIR`).
const DEFAULT_BASE: &str = "/app";
/// The command time limit without `SANDBOX_EXEC_TIMEOUT_SECONDS`.
const DEFAULT_EXEC_TIMEOUT: f64 = 300.0;
/// The largest request body read (a file as large as the filesystem holds, plus its form).
const MAX_BODY: usize = fs::MAX_FILE_SIZE + 64 * 1024;

/// `python-runtime-sandbox [--port N]`.
pub(crate) async fn python_runtime_sandbox(proc: Process) -> i32 {
    let port = match port_arg(proc.args(), DEFAULT_PORT) {
        Ok(p) => p,
        Err(e) => {
            let _ = proc.stderr.write_str(&format!("Error: {e}\n")).await;
            return 2;
        }
    };
    let base = base_dir(&proc);
    if let Err(e) = proc.fs.mkdir_all(&base, 0o755) {
        log(&proc, "ERROR", &format!("cannot make {base}: {e}")).await;
    }
    let app = Arc::new(proc.clone());
    serve(&proc, port, move |req| {
        let app = app.clone();
        async move { handle(&app, req).await }
    })
    .await
}

/// The base directory: `SANDBOX_BASE_DIR` (trimmed), or `/app` when unset or blank.
fn base_dir(proc: &Process) -> String {
    let configured = proc.var("SANDBOX_BASE_DIR").unwrap_or_default().trim();
    let dir = if configured.is_empty() {
        DEFAULT_BASE
    } else {
        configured
    };
    fs::normalize(&fs::join("/", dir)).unwrap_or_else(|_| DEFAULT_BASE.to_string())
}

/// `path` under the base directory (leading slashes dropped, `..` resolved), or `None` when
/// it would leave it.
fn safe_path(base: &str, path: &str) -> Option<String> {
    let joined = fs::join(base, path.trim_start_matches('/'));
    let full = fs::normalize(&joined).ok()?;
    let inside = full == base || base == "/" || full.starts_with(&format!("{base}/"));
    inside.then_some(full)
}

/// Answers one request.
async fn handle(proc: &Process, req: Request<Incoming>) -> Response<Body> {
    let raw = req.uri().path().to_string();
    let path = String::from_utf8_lossy(&percent_decode(&raw)).into_owned();
    let method = req.method().clone();
    let route = |prefix: &str| path.strip_prefix(prefix).map(str::to_string);
    let (allowed, found) = if path == "/" {
        (Method::GET, true)
    } else if path == "/execute" || path == "/upload" {
        (Method::POST, true)
    } else if route("/download/").is_some()
        || route("/list/").is_some()
        || route("/exists/").is_some()
    {
        (Method::GET, true)
    } else {
        (Method::GET, false)
    };
    if !found {
        return detail(StatusCode::NOT_FOUND, "Not Found");
    }
    if method != allowed {
        let mut resp = detail(StatusCode::METHOD_NOT_ALLOWED, "Method Not Allowed");
        if let Ok(v) = header::HeaderValue::from_str(allowed.as_str()) {
            resp.headers_mut().insert(header::ALLOW, v);
        }
        return resp;
    }
    let base = base_dir(proc);
    if path == "/" {
        return reply(
            StatusCode::OK,
            &json!({ "status": "ok", "message": "Sandbox Runtime is active." }),
        );
    }
    if path == "/execute" || path == "/upload" {
        let content_type = req
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_string();
        let body = match Limited::new(req.into_body(), MAX_BODY).collect().await {
            Ok(b) => b.to_bytes(),
            Err(_) => return detail(StatusCode::PAYLOAD_TOO_LARGE, "Request body too large"),
        };
        return if path == "/execute" {
            execute(proc, &base, &body).await
        } else {
            upload(proc, &base, &content_type, &body)
        };
    }
    let (kind, param) = ["/download/", "/list/", "/exists/"]
        .iter()
        .find_map(|p| route(p).map(|rest| (*p, rest)))
        .unwrap_or_default();
    let decoded = String::from_utf8_lossy(&percent_decode(&param)).into_owned();
    let Some(full_path) = safe_path(&base, &decoded) else {
        return reply(
            StatusCode::FORBIDDEN,
            &json!({ "message": "Access denied" }),
        );
    };
    match kind {
        "/download/" => download(proc, &full_path, &decoded),
        "/list/" => list(proc, &full_path),
        _ => reply(
            StatusCode::OK,
            &json!({ "path": decoded, "exists": proc.fs.exists(&full_path) }),
        ),
    }
}

/// `%XX` escapes decoded (others left as they are).
pub(crate) fn percent_decode(text: &str) -> Vec<u8> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        match (bytes[i], bytes.get(i + 1), bytes.get(i + 2)) {
            (b'%', Some(&h), Some(&l)) if hex(h).is_some() && hex(l).is_some() => {
                let v = hex(h).unwrap_or(0) * 16 + hex(l).unwrap_or(0);
                out.push(v as u8);
                i += 3;
            }
            (b, _, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    out
}

/// One pydantic error of a request body, in FastAPI's 422 reply.
fn invalid_body(kind: &str, loc: Value, msg: &str, input: Value) -> Response<Body> {
    reply(
        StatusCode::UNPROCESSABLE_ENTITY,
        &json!({ "detail": [{ "type": kind, "loc": loc, "msg": msg, "input": input }] }),
    )
}

/// `POST /execute`.
async fn execute(proc: &Process, base: &str, body: &Bytes) -> Response<Body> {
    let parsed: Value = match serde_json::from_slice(body) {
        Ok(v) => v,
        Err(e) => {
            return invalid_body(
                "json_invalid",
                json!(["body", e.column().saturating_sub(1)]),
                "JSON decode error",
                json!({}),
            );
        }
    };
    let command = match parsed.get("command") {
        Some(Value::String(c)) => c.clone(),
        Some(other) => {
            return invalid_body(
                "string_type",
                json!(["body", "command"]),
                "Input should be a valid string",
                other.clone(),
            );
        }
        None if parsed.is_object() => {
            return invalid_body(
                "missing",
                json!(["body", "command"]),
                "Field required",
                parsed,
            );
        }
        None => {
            return invalid_body(
                "model_attributes_type",
                json!(["body"]),
                "Input should be a valid dictionary or object to extract fields from",
                parsed,
            );
        }
    };
    let (stdout, stderr, exit_code) = match run(proc, base, &command).await {
        Ok(done) => done,
        Err(message) => (
            String::new(),
            format!("Failed to execute command: {message}"),
            1,
        ),
    };
    reply(
        StatusCode::OK,
        &json!({ "stdout": stdout, "stderr": stderr, "exit_code": exit_code }),
    )
}

/// The command time limit: `SANDBOX_EXEC_TIMEOUT_SECONDS` when it is a finite number above 0.
fn exec_timeout(proc: &Process) -> f64 {
    proc.var("SANDBOX_EXEC_TIMEOUT_SECONDS")
        .and_then(|v| v.trim().parse::<f64>().ok())
        .filter(|v| v.is_finite() && *v > 0.0)
        .unwrap_or(DEFAULT_EXEC_TIMEOUT)
}

/// A float as Python prints it (`300.0`, `0.5`).
fn py_float(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e16 {
        format!("{v:.1}")
    } else {
        format!("{v}")
    }
}

/// Runs `command` as `subprocess.Popen(shlex.split(command), cwd=base)` does: the output and
/// the exit status, or the message of the exception Python would raise.
async fn run(proc: &Process, base: &str, command: &str) -> Result<(String, String, i32), String> {
    let argv = split(command).map_err(|e| e.to_string())?;
    let Some(name) = argv.first().cloned() else {
        return Err("list index out of range".into());
    };
    let path_var = proc.var("PATH").unwrap_or(DEFAULT_PATH).to_string();
    let (handler, argv) = resolve(
        &name,
        argv.clone(),
        &path_var,
        base,
        &proc.fs,
        &proc.programs,
        false,
    )
    .map_err(|e| {
        let (errno, text) = match e {
            fakekube_runtime::process::SpawnError::NotFound => (2, "No such file or directory"),
            fakekube_runtime::process::SpawnError::PermissionDenied => (13, "Permission denied"),
            _ => (8, "Exec format error"),
        };
        format!("[Errno {errno}] {text}: {}", py_repr(&name))
    })?;
    let limit = exec_timeout(proc);
    let mut child = proc.child(argv.clone());
    child.cwd = base.to_string();
    child.stdin = Input::empty();
    let (out, out_cap) = Output::capture();
    let (err, err_cap) = Output::capture();
    child.stdout = out;
    child.stderr = err;
    let token = CancellationToken::new();
    let killed = token.clone();
    let parent = proc.cancel.clone();
    child.cancel = token.clone();
    let status = tokio::select! {
        s = child.run(handler) => Some(s),
        () = tokio::time::sleep(Duration::from_secs_f64(limit)) => None,
        () = parent.cancelled() => None,
    };
    killed.cancel();
    let Some(status) = status else {
        let list: Vec<String> = argv.iter().map(|a| py_repr(a)).collect();
        return Err(format!(
            "Command '[{}]' timed out after {} seconds",
            list.join(", "),
            py_float(limit)
        ));
    };
    Ok((
        String::from_utf8_lossy(&out_cap.take()).into_owned(),
        String::from_utf8_lossy(&err_cap.take()).into_owned(),
        status,
    ))
}

/// An `OSError` as Python prints it: `[Errno N] TEXT: 'PATH'`.
fn os_error(e: &FsError, path: &str) -> String {
    let errno = match e {
        FsError::NotFound => 2,
        FsError::NotADirectory => 20,
        FsError::IsADirectory => 21,
        FsError::Exists => 17,
        FsError::NotEmpty => 39,
        FsError::NoSpace => 28,
        FsError::NameTooLong => 36,
        FsError::Busy => 16,
        _ => 22,
    };
    format!("[Errno {errno}] {e}: {}", py_repr(path))
}

/// `POST /upload`.
fn upload(proc: &Process, base: &str, content_type: &str, body: &Bytes) -> Response<Body> {
    let file = multipart::boundary(content_type)
        .and_then(|b| multipart::parse(body, &b))
        .and_then(|parts| {
            parts
                .into_iter()
                .find(|p| p.name == "file" && p.filename.is_some())
        });
    let Some(file) = file else {
        return invalid_body(
            "missing",
            json!(["body", "file"]),
            "Field required",
            Value::Null,
        );
    };
    let filename = file.filename.unwrap_or_default();
    let Some(target) = safe_path(base, &filename) else {
        return reply(
            StatusCode::FORBIDDEN,
            &json!({ "message": "Access denied" }),
        );
    };
    let parent = fs::normalize(&fs::join(&target, "..")).unwrap_or_else(|_| base.to_string());
    let written = proc
        .fs
        .mkdir_all(&parent, 0o755)
        .map_err(|e| os_error(&e, &parent))
        .and_then(|()| {
            proc.fs
                .write(&target, &file.data)
                .map_err(|e| os_error(&e, &target))
        });
    match written {
        Ok(()) => reply(
            StatusCode::OK,
            &json!({ "message": format!("File '{filename}' uploaded successfully.") }),
        ),
        Err(e) => reply(
            StatusCode::INTERNAL_SERVER_ERROR,
            &json!({ "message": format!("File upload failed: {e}") }),
        ),
    }
}

/// `GET /download/PATH`: the file as an attachment, as Starlette's `FileResponse` sends it.
fn download(proc: &Process, path: &str, name: &str) -> Response<Body> {
    let is_file = proc
        .fs
        .metadata(path)
        .is_ok_and(|m| m.kind == NodeKind::Regular);
    let data = match proc.fs.read(path) {
        Ok(d) if is_file => d,
        _ => {
            return reply(
                StatusCode::NOT_FOUND,
                &json!({ "message": "File not found" }),
            );
        }
    };
    let mtime = proc.fs.metadata(path).map(|m| m.mtime).unwrap_or(0);
    let mut resp = full(StatusCode::OK, "application/octet-stream", data);
    let quoted: String = percent_encode(name);
    let disposition = if quoted == name {
        format!("attachment; filename=\"{name}\"")
    } else {
        format!("attachment; filename*=utf-8''{quoted}")
    };
    let headers = resp.headers_mut();
    if let Ok(v) = header::HeaderValue::from_str(&disposition) {
        headers.insert(header::CONTENT_DISPOSITION, v);
    }
    if let Some(date) = http_date(mtime)
        && let Ok(v) = header::HeaderValue::from_str(&date)
    {
        headers.insert(header::LAST_MODIFIED, v);
    }
    resp
}

/// A name as Python's `urllib.parse.quote` writes it (`/` kept).
fn percent_encode(name: &str) -> String {
    let mut out = String::new();
    for b in name.bytes() {
        if b.is_ascii_alphanumeric() || b"_.-~/".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// A time as an HTTP date (`Wed, 04 Dec 2026 20:00:00 GMT`).
fn http_date(secs: i64) -> Option<String> {
    let t = time::OffsetDateTime::from_unix_timestamp(secs).ok()?;
    let fmt = time::macros::format_description!(
        "[weekday repr:short], [day] [month repr:short] [year] [hour]:[minute]:[second] GMT"
    );
    t.format(&fmt).ok()
}

/// `GET /list/PATH`.
fn list(proc: &Process, path: &str) -> Response<Body> {
    let is_dir = proc
        .fs
        .metadata(path)
        .is_ok_and(|m| m.kind == NodeKind::Directory);
    if !is_dir {
        return reply(
            StatusCode::NOT_FOUND,
            &json!({ "message": "Path is not a directory" }),
        );
    }
    match proc.fs.read_dir(path) {
        Ok(entries) => {
            let list: Vec<Value> = entries
                .iter()
                .map(|e| {
                    json!({
                        "name": e.name,
                        "size": e.meta.size,
                        "type": if e.meta.kind == NodeKind::Directory { "directory" } else { "file" },
                        "mod_time": e.meta.mtime as f64,
                    })
                })
                .collect();
            reply(StatusCode::OK, &Value::Array(list))
        }
        Err(e) => reply(
            StatusCode::INTERNAL_SERVER_ERROR,
            &json!({ "message": format!("List files failed: {}", os_error(&e, path)) }),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_stay_under_the_base_directory() {
        assert_eq!(
            safe_path("/app", "test.txt").as_deref(),
            Some("/app/test.txt")
        );
        assert_eq!(safe_path("/app", "/etc/x").as_deref(), Some("/app/etc/x"));
        assert_eq!(safe_path("/app", "").as_deref(), Some("/app"));
        assert_eq!(safe_path("/app", "a/../b").as_deref(), Some("/app/b"));
        assert_eq!(safe_path("/app", "../etc/passwd"), None);
        assert_eq!(safe_path("/app", "../application"), None);
    }

    #[test]
    fn percent_escapes_decode_and_names_encode_as_python_quotes_them() {
        assert_eq!(percent_decode("a%2Fb%20c%zz"), b"a/b c%zz");
        assert_eq!(percent_encode("dir/a b.txt"), "dir/a%20b.txt");
        assert_eq!(py_float(300.0), "300.0");
        assert_eq!(py_float(0.5), "0.5");
    }
}
