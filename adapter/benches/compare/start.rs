//! fakekube's start, two ways: in process (the builder called → the answer to a first request,
//! `GET /version` over a new TLS connection), and as a user runs it (the binary spawned → its
//! URL printed → `kubectl get ns` answered).

use fakekube::FakeKube;
use http_body_util::{BodyExt, Empty};
use hyper_util::rt::TokioIo;
use rustls_pki_types::ServerName;
use std::path::Path;
use std::time::{Duration, Instant};
use tokio::net::TcpStream;

use crate::BoxError;
use crate::client_tls::client_tls;
use crate::clients;
use crate::fakekube_process::FakeKubeProcess;

/// Times `n` in-process starts, each from the builder's call to the answer to `GET /version`;
/// the shutdown after each is not timed.
pub async fn in_process(n: usize) -> Result<Vec<Duration>, BoxError> {
    let mut times = Vec::with_capacity(n);
    for _ in 0..n {
        let began = Instant::now();
        let kube = FakeKube::builder().start().await?;
        first_request(&kube).await?;
        times.push(began.elapsed());
        kube.shutdown().await;
    }
    Ok(times)
}

/// `GET /version` over a new TLS connection trusting the server's CA; fails unless 200.
async fn first_request(kube: &FakeKube) -> Result<(), BoxError> {
    let tcp = TcpStream::connect(kube.addr()).await?;
    tcp.set_nodelay(true)?;
    let tls = client_tls(kube.ca_pem())?
        .connect(ServerName::try_from("127.0.0.1")?, tcp)
        .await?;
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tls)).await?;
    tokio::spawn(conn);
    let request = http::Request::get("/version")
        .header(http::header::HOST, kube.addr().to_string())
        .header(
            http::header::AUTHORIZATION,
            format!("Bearer {}", kube.token()),
        )
        .body(Empty::<bytes::Bytes>::new())?;
    let response = sender.send_request(request).await?;
    let status = response.status();
    response.into_body().collect().await?;
    if status != http::StatusCode::OK {
        return Err(format!("GET /version answered {status}").into());
    }
    Ok(())
}

/// The times of `n` process starts: the binary spawned → its URL printed, and (with kubectl)
/// spawned → `kubectl get ns` answered (kubectl started once the URL is printed).
pub struct ProcessStarts {
    /// Spawned → URL printed.
    pub listening: Vec<Duration>,
    /// Spawned → `kubectl get ns` answered; `None` without kubectl.
    pub answered: Option<Vec<Duration>>,
}

/// Times `n` starts of the `fakekube` binary `bin`, each killed afterwards.
pub fn process(bin: &Path, n: usize, cache: &Path) -> Result<ProcessStarts, BoxError> {
    let with_kubectl = Path::new(clients::KUBECTL).is_file();
    let mut starts = ProcessStarts {
        listening: Vec::with_capacity(n),
        answered: with_kubectl.then(|| Vec::with_capacity(n)),
    };
    for _ in 0..n {
        let began = Instant::now();
        let server = FakeKubeProcess::start(bin, &[])?;
        starts.listening.push(server.listening_after());
        if let Some(answered) = &mut starts.answered {
            clients::kubectl_get_ns(server.kubeconfig_path(), cache)?;
            answered.push(began.elapsed());
        }
    }
    Ok(starts)
}
