//! The raw TLS baseline of the exec benchmarks: a rustls server on loopback that echoes one byte
//! or writes a fixed number of zero bytes in 32 KiB writes (the runtime's chunk), and its
//! client. What an exec session can at best reach over the same TLS stack in the same run.
//!
//! Shared by fakekube's `exec` bench and the adapter's `compare` bench, which include this file
//! with `#[path]`, so both measure the same limit.

use rustls::RootCertStore;
use rustls_pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer, ServerName};
use std::net::SocketAddr;
use std::sync::Arc;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio_rustls::{TlsAcceptor, TlsConnector};

/// The size of the server's writes (the runtime's chunk size).
const CHUNK: usize = 32 * 1024;

/// Anything that can fail in the baseline.
type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// A TLS server on loopback, serving in the background, and a client trusting it.
pub struct RawServer {
    addr: SocketAddr,
    connector: TlsConnector,
}

impl RawServer {
    /// Binds 127.0.0.1:0, makes a self-signed certificate and serves: a connection whose first
    /// byte is `e` gets it back, any other gets `bytes` zero bytes; then the server closes.
    pub async fn start(bytes: usize) -> Result<RawServer, BoxError> {
        let cert = rcgen::generate_simple_self_signed(vec!["127.0.0.1".to_string()])?;
        let cert_der = CertificateDer::from(cert.cert.der().to_vec());
        let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(cert.signing_key.serialize_der()));
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let server = rustls::ServerConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()?
            .with_no_client_auth()
            .with_single_cert(vec![cert_der.clone()], key)?;
        let acceptor = TlsAcceptor::from(Arc::new(server));
        let mut roots = RootCertStore::empty();
        roots.add(cert_der)?;
        let client = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()?
            .with_root_certificates(roots)
            .with_no_client_auth();
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        tokio::spawn(async move {
            while let Ok((tcp, _)) = listener.accept().await {
                let acceptor = acceptor.clone();
                tokio::spawn(async move {
                    let _ = tcp.set_nodelay(true);
                    let Ok(mut tls) = acceptor.accept(tcp).await else {
                        return;
                    };
                    let mut what = [0u8; 1];
                    if tls.read_exact(&mut what).await.is_err() {
                        return;
                    }
                    if what[0] == b'e' {
                        let _ = tls.write_all(b"e").await;
                    } else {
                        let zeros = vec![0u8; CHUNK];
                        let mut left = bytes;
                        while left > 0 {
                            let n = left.min(CHUNK);
                            if tls.write_all(&zeros[..n]).await.is_err() {
                                return;
                            }
                            left -= n;
                        }
                    }
                    let _ = tls.shutdown().await;
                });
            }
        });
        Ok(RawServer {
            addr,
            connector: TlsConnector::from(Arc::new(client)),
        })
    }

    /// Connects and sends one request byte.
    async fn connect(
        &self,
        what: u8,
    ) -> Result<tokio_rustls::client::TlsStream<TcpStream>, BoxError> {
        let tcp = TcpStream::connect(self.addr).await?;
        tcp.set_nodelay(true)?;
        let mut tls = self
            .connector
            .connect(ServerName::try_from("127.0.0.1")?, tcp)
            .await?;
        tls.write_all(&[what]).await?;
        tls.flush().await?;
        Ok(tls)
    }

    /// A connection and a one-byte round trip.
    pub async fn echo(&self) -> Result<(), BoxError> {
        let mut tls = self.connect(b'e').await?;
        let mut back = [0u8; 1];
        tls.read_exact(&mut back).await?;
        Ok(())
    }

    /// A connection that receives the server's zero bytes; returns how many arrived.
    pub async fn copy(&self) -> Result<usize, BoxError> {
        let mut tls = self.connect(b'c').await?;
        let mut buf = vec![0u8; 64 * 1024];
        let mut total = 0;
        loop {
            match tls.read(&mut buf).await {
                Ok(0) => break,
                Ok(n) => total += n,
                Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => break,
                Err(e) => return Err(e.into()),
            }
        }
        Ok(total)
    }
}
