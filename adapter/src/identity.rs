//! The client certificate the adapter presents in TLS: read from PEM (a kubeconfig's
//! `client-certificate`/`client-key`, or an exec plugin's output) into a [`CertSlot`] that the
//! TLS configuration reads at every handshake, so a plugin's renewed certificate is used by the
//! next connection.

use std::sync::{Arc, RwLock};

use rustls::client::ResolvesClientCert;
use rustls::sign::CertifiedKey;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};

/// The current client certificate and key, shared between its source and the TLS client.
pub(crate) type CertSlot = Arc<RwLock<Option<Arc<CertifiedKey>>>>;

/// Why a client certificate or key cannot be used. No variant carries the key.
#[derive(Debug, thiserror::Error)]
pub enum ClientCertError {
    /// The certificate is not PEM, or holds no certificate.
    #[error("the client certificate is not a PEM certificate")]
    Certificate,
    /// The key is not a PEM private key.
    #[error("the client key is not a PEM private key")]
    Key,
    /// The key's type is not supported, or it does not fit.
    #[error("the client key cannot sign")]
    Unusable(#[source] rustls::Error),
}

/// Reads a certificate chain and its private key from PEM.
pub(crate) fn certified_key(
    cert_pem: &[u8],
    key_pem: &[u8],
) -> Result<Arc<CertifiedKey>, ClientCertError> {
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(cert_pem)
        .collect::<Result<_, _>>()
        .map_err(|_| ClientCertError::Certificate)?;
    if certs.is_empty() {
        return Err(ClientCertError::Certificate);
    }
    // The PEM parser's error could quote the text: say only what failed.
    let key = PrivateKeyDer::from_pem_slice(key_pem).map_err(|_| ClientCertError::Key)?;
    let signer = rustls::crypto::ring::default_provider()
        .key_provider
        .load_private_key(key)
        .map_err(ClientCertError::Unusable)?;
    Ok(Arc::new(CertifiedKey::new(certs, signer)))
}

/// Returns a slot holding `key` from the start.
pub(crate) fn filled_slot(key: Arc<CertifiedKey>) -> CertSlot {
    Arc::new(RwLock::new(Some(key)))
}

/// Presents whatever certificate the slot holds at the time of each handshake.
#[derive(Debug)]
pub(crate) struct SlotResolver(pub(crate) CertSlot);

impl ResolvesClientCert for SlotResolver {
    fn resolve(
        &self,
        _root_hint_subjects: &[&[u8]],
        _sigschemes: &[rustls::SignatureScheme],
    ) -> Option<Arc<CertifiedKey>> {
        self.0.read().ok().and_then(|slot| slot.clone())
    }

    fn has_certs(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_that_is_not_pem_is_refused_without_quoting_it() {
        let cert = rcgen::generate_simple_self_signed(vec!["client".to_owned()]).unwrap();
        let error = certified_key(cert.cert.pem().as_bytes(), b"s3cr3t-key-material").unwrap_err();
        assert!(matches!(error, ClientCertError::Key), "{error:?}");
        assert!(!format!("{error:?} {error}").contains("s3cr3t"));
        let key = cert.signing_key.serialize_pem();
        assert!(certified_key(cert.cert.pem().as_bytes(), key.as_bytes()).is_ok());
        assert!(matches!(
            certified_key(b"nothing", key.as_bytes()),
            Err(ClientCertError::Certificate)
        ));
    }
}
