//! TLS for both ends: the loopback server's own CA and serving certificate (made at start with
//! rcgen), and the client configuration that trusts a kubeconfig's CA and presents its client
//! certificate.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::sync::Arc;

use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    Issuer, KeyPair, KeyUsagePurpose, SanType,
};
use rustls::{ClientConfig, ServerConfig};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

/// ALPN protocol ids.
pub(crate) const H2: &[u8] = b"h2";
/// ALPN protocol id of HTTP/1.1.
pub(crate) const HTTP11: &[u8] = b"http/1.1";

/// Why TLS could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// rcgen refused to make a key or certificate.
    #[error("generating a certificate")]
    Generate(#[source] rcgen::Error),
    /// rustls refused a certificate, key or setting.
    #[error("configuring rustls")]
    Rustls(#[source] rustls::Error),
    /// A PEM text does not parse.
    #[error("the {what} is not PEM")]
    Pem {
        /// Which text.
        what: &'static str,
        /// Why.
        #[source]
        source: rustls_pki_types::pem::Error,
    },
    /// A PEM text holds no certificate.
    #[error("the {0} holds no certificate")]
    NoCertificate(&'static str),
}

/// A loopback server's TLS: the PEM of its CA, for clients, and its rustls configuration.
pub(crate) struct ServerIdentity {
    /// The CA certificate in PEM.
    pub(crate) ca_pem: String,
    /// The server configuration, with ALPN h2 and http/1.1.
    pub(crate) config: Arc<ServerConfig>,
}

/// Makes a fresh CA named `name` and a serving certificate it signs for 127.0.0.1, ::1 and
/// localhost.
pub(crate) fn loopback_identity(name: &str) -> Result<ServerIdentity, TlsError> {
    let ca_key = KeyPair::generate().map_err(TlsError::Generate)?;
    let mut ca = CertificateParams::default();
    let mut dn = DistinguishedName::new();
    dn.push(DnType::CommonName, format!("{name}-ca"));
    ca.distinguished_name = dn;
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    let ca_cert = ca.self_signed(&ca_key).map_err(TlsError::Generate)?;
    let ca_pem = ca_cert.pem();
    let issuer = Issuer::new(ca, ca_key);

    let key = KeyPair::generate().map_err(TlsError::Generate)?;
    let mut params = CertificateParams::default();
    let mut dn = DistinguishedName::new();
    dn.push(DnType::CommonName, name);
    params.distinguished_name = dn;
    params.subject_alt_names = vec![
        SanType::IpAddress(IpAddr::V4(Ipv4Addr::LOCALHOST)),
        SanType::IpAddress(IpAddr::V6(Ipv6Addr::LOCALHOST)),
        SanType::DnsName("localhost".try_into().map_err(TlsError::Generate)?),
    ];
    params.key_usages = vec![
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyEncipherment,
    ];
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    let cert = params
        .signed_by(&key, &issuer)
        .map_err(TlsError::Generate)?;
    let chain = vec![CertificateDer::from(cert.der().to_vec())];
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der()));
    let mut config = ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(TlsError::Rustls)?
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .map_err(TlsError::Rustls)?;
    config.alpn_protocols = vec![H2.to_vec(), HTTP11.to_vec()];
    Ok(ServerIdentity {
        ca_pem,
        config: Arc::new(config),
    })
}

/// A client certificate and its key, both PEM.
pub(crate) struct ClientAuth<'a> {
    /// The certificate chain.
    pub(crate) cert_pem: &'a [u8],
    /// The private key.
    pub(crate) key_pem: &'a [u8],
}

/// A client configuration trusting exactly the certificates in `ca_pem`, presenting `auth`
/// when given, offering the ALPN protocols `alpn`.
pub(crate) fn client_config(
    ca_pem: &[u8],
    auth: Option<ClientAuth<'_>>,
    alpn: &[&[u8]],
) -> Result<Arc<ClientConfig>, TlsError> {
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(ca_pem) {
        let cert = cert.map_err(|source| TlsError::Pem {
            what: "certificate authority",
            source,
        })?;
        roots.add(cert).map_err(TlsError::Rustls)?;
    }
    if roots.is_empty() {
        return Err(TlsError::NoCertificate("certificate authority"));
    }
    let builder = ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(TlsError::Rustls)?
        .with_root_certificates(roots);
    let mut config = match auth {
        None => builder.with_no_client_auth(),
        Some(auth) => {
            let chain = CertificateDer::pem_slice_iter(auth.cert_pem)
                .collect::<Result<Vec<_>, _>>()
                .map_err(|source| TlsError::Pem {
                    what: "client certificate",
                    source,
                })?;
            if chain.is_empty() {
                return Err(TlsError::NoCertificate("client certificate"));
            }
            let key =
                PrivateKeyDer::from_pem_slice(auth.key_pem).map_err(|source| TlsError::Pem {
                    what: "client key",
                    source,
                })?;
            builder
                .with_client_auth_cert(chain, key)
                .map_err(TlsError::Rustls)?
        }
    };
    config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    Ok(Arc::new(config))
}

/// The ring provider (aws-lc-rs builds far slower here).
fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}
