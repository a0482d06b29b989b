//! The listener: TLS with ALPN (h2, http/1.1), one task per connection serving a [`Router`]
//! (with upgrades, for exec), graceful shutdown. It knows nothing of what the router serves; it
//! only hands each request the client certificate its connection presented
//! ([`PeerCertificate`]), which the TLS configuration verified.

use axum::Router;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use rustls_pki_types::CertificateDer;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;
use tokio_util::sync::CancellationToken;
use tower::ServiceExt;

/// The certificate (DER) a client presented in the TLS handshake, already verified against the
/// server's trust anchors; in the extensions of every request of that connection.
#[derive(Debug, Clone)]
pub(crate) struct PeerCertificate(pub(crate) Arc<CertificateDer<'static>>);

/// Accepts connections until `shutdown` fires, then waits (up to `grace`) for open connections.
pub(crate) async fn serve(
    listener: TcpListener,
    acceptor: TlsAcceptor,
    router: Router,
    shutdown: CancellationToken,
    grace: Duration,
) {
    let graceful = GracefulShutdown::new();
    loop {
        let (tcp, peer) = tokio::select! {
            () = shutdown.cancelled() => break,
            accepted = listener.accept() => match accepted {
                Ok(a) => a,
                Err(e) => {
                    tracing::warn!(error = %e, "accept");
                    continue;
                }
            },
        };
        // Without this, a response split across segments waits on the peer's delayed ACK.
        if let Err(e) = tcp.set_nodelay(true) {
            tracing::debug!(%peer, error = %e, "TCP_NODELAY");
        }
        let acceptor = acceptor.clone();
        let router = router.clone();
        let watcher = graceful.watcher();
        tokio::spawn(async move {
            let tls =
                match tokio::time::timeout(Duration::from_secs(10), acceptor.accept(tcp)).await {
                    Ok(Ok(tls)) => tls,
                    Ok(Err(e)) => {
                        tracing::debug!(%peer, error = %e, "TLS handshake");
                        return;
                    }
                    Err(_) => {
                        tracing::debug!(%peer, "TLS handshake timed out");
                        return;
                    }
                };
            let mut builder = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new());
            builder
                .http1()
                .timer(TokioTimer::new())
                .header_read_timeout(Duration::from_secs(30));
            builder.http2().timer(TokioTimer::new());
            let peer_certificate = tls
                .get_ref()
                .1
                .peer_certificates()
                .and_then(|chain| chain.first())
                .map(|c| PeerCertificate(Arc::new(c.clone().into_owned())));
            let svc = TowerToHyperService::new(router.map_request(
                move |mut req: http::Request<hyper::body::Incoming>| {
                    if let Some(c) = &peer_certificate {
                        req.extensions_mut().insert(c.clone());
                    }
                    req
                },
            ));
            let conn = builder.serve_connection_with_upgrades(TokioIo::new(tls), svc);
            if let Err(e) = watcher.watch(conn.into_owned()).await {
                tracing::debug!(%peer, error = %e, "connection");
            }
        });
    }
    drop(listener);
    if tokio::time::timeout(grace, graceful.shutdown())
        .await
        .is_err()
    {
        tracing::debug!("connections still open after the grace period");
    }
}
