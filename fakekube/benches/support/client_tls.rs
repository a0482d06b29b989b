//! The TLS client of the benches that speak to the fake over their own connections (an exec's
//! WebSocket): trusting the fake's CA, offering HTTP/1.1 only. Included with `#[path]` by the
//! `exec` and `connmem` benches, and by the adapter's `compare` bench.

use rustls::RootCertStore;
use rustls_pki_types::{CertificateDer, pem::PemObject};
use std::sync::Arc;
use tokio_rustls::TlsConnector;

/// A client TLS configuration trusting `ca_pem`, offering HTTP/1.1 only.
pub fn client_tls(ca_pem: &str) -> Result<TlsConnector, Box<dyn std::error::Error + Send + Sync>> {
    let mut roots = RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(ca_pem.as_bytes()) {
        roots.add(cert?)?;
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(TlsConnector::from(Arc::new(config)))
}
