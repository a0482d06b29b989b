//! TLS material made at start: a CA, a serving certificate it signs for 127.0.0.1, ::1 and
//! localhost, and client certificates it signs on request. The server asks clients for a
//! certificate and accepts those its CA signed (or none). A kubelet joining a cluster serves
//! with a certificate of its own and only requests one, checked per request against the
//! cluster's client CA ([`ClientCa`], [`kubelet_serving`]).

use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    Issuer, KeyPair, KeyUsagePurpose, SanType,
};
use rustls::client::danger::HandshakeSignatureValid;
use rustls::server::WebPkiClientVerifier;
use rustls::server::danger::{ClientCertVerified, ClientCertVerifier};
use rustls::{DigitallySignedStruct, DistinguishedName as HintName, RootCertStore};
use rustls::{ServerConfig, SignatureScheme};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer, UnixTime};
use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::sync::Arc;

/// Why TLS material could not be made.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// rcgen refused to make a key or certificate.
    #[error("generating a certificate")]
    Generate(#[source] rcgen::Error),
    /// rustls refused the certificate and key.
    #[error("configuring rustls")]
    Rustls(#[source] rustls::Error),
    /// The client CA file holds no certificate.
    #[error("the client CA file holds no PEM certificate")]
    ClientCa,
    /// rustls refused the CA as the trust anchor of client certificates.
    #[error("configuring client certificate verification")]
    ClientVerifier(#[source] rustls::server::VerifierBuilderError),
}

/// A client certificate and its private key (PEM), signed by a server's CA: it authenticates
/// as the user its Common Name names, in the groups its Organizations name. `Debug` never
/// shows the key.
#[derive(Clone, PartialEq, Eq)]
pub struct ClientCertificate {
    /// The certificate (PEM).
    pub cert_pem: String,
    /// The private key (PKCS#8 PEM).
    pub key_pem: String,
}

impl fmt::Debug for ClientCertificate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientCertificate")
            .field("cert_pem", &self.cert_pem)
            .field("key_pem", &"[REDACTED]")
            .finish()
    }
}

/// The CA of one server, which signs client certificates. `Debug` never shows its key.
#[doc(hidden)]
pub struct CertificateAuthority {
    issuer: Issuer<'static, KeyPair>,
}

impl fmt::Debug for CertificateAuthority {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CertificateAuthority")
            .finish_non_exhaustive()
    }
}

impl CertificateAuthority {
    /// A client certificate for `user` in `groups`.
    #[doc(hidden)]
    pub fn issue_client(&self, user: &str, groups: &[&str]) -> Result<ClientCertificate, TlsError> {
        let key = KeyPair::generate().map_err(TlsError::Generate)?;
        let mut params = CertificateParams::default();
        let mut dn = DistinguishedName::new();
        for g in groups {
            dn.push(DnType::OrganizationName, *g);
        }
        dn.push(DnType::CommonName, user);
        params.distinguished_name = dn;
        params.key_usages = vec![
            KeyUsagePurpose::DigitalSignature,
            KeyUsagePurpose::KeyEncipherment,
        ];
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
        let cert = params
            .signed_by(&key, &self.issuer)
            .map_err(TlsError::Generate)?;
        Ok(ClientCertificate {
            cert_pem: cert.pem(),
            key_pem: key.serialize_pem(),
        })
    }
}

/// The TLS material of one server.
#[doc(hidden)]
pub struct TlsMaterial {
    /// PEM of the CA certificate, for clients' trust stores.
    #[doc(hidden)]
    pub ca_pem: String,
    /// The CA, for client certificates.
    #[doc(hidden)]
    pub ca: CertificateAuthority,
    /// The rustls server configuration, with ALPN h2 and http/1.1, asking for (not requiring)
    /// client certificates signed by the CA.
    #[doc(hidden)]
    pub server_config: Arc<ServerConfig>,
}

/// Makes a fresh CA and serving certificate.
/// A new CA: its issuer, its certificate as PEM and DER.
fn new_ca() -> Result<(Issuer<'static, KeyPair>, String, CertificateDer<'static>), TlsError> {
    let ca_key = KeyPair::generate().map_err(TlsError::Generate)?;
    let mut ca_params = CertificateParams::default();
    let mut dn = DistinguishedName::new();
    dn.push(DnType::CommonName, "fakekube-ca");
    ca_params.distinguished_name = dn;
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    let ca_cert = ca_params.self_signed(&ca_key).map_err(TlsError::Generate)?;
    let ca_pem = ca_cert.pem();
    let ca_der = CertificateDer::from(ca_cert.der().to_vec());
    let issuer = Issuer::new(ca_params, ca_key);

    Ok((issuer, ca_pem, ca_der))
}

/// A serving certificate signed by `issuer` for loopback, `localhost` and `extra_sans`: the
/// chain and its key.
fn serving_certificate(
    issuer: &Issuer<'static, KeyPair>,
    extra_sans: &[String],
) -> Result<(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>), TlsError> {
    let key = KeyPair::generate().map_err(TlsError::Generate)?;
    let mut params = CertificateParams::default();
    let mut dn = DistinguishedName::new();
    dn.push(DnType::CommonName, "fakekube");
    params.distinguished_name = dn;
    let mut sans = vec![
        SanType::IpAddress(IpAddr::V4(Ipv4Addr::LOCALHOST)),
        SanType::IpAddress(IpAddr::V6(Ipv6Addr::LOCALHOST)),
        SanType::DnsName("localhost".try_into().map_err(TlsError::Generate)?),
    ];
    for s in extra_sans {
        match s.parse::<IpAddr>() {
            Ok(ip) => sans.push(SanType::IpAddress(ip)),
            Err(_) => sans.push(SanType::DnsName(
                s.clone().try_into().map_err(TlsError::Generate)?,
            )),
        }
    }
    params.subject_alt_names = sans;
    params.key_usages = vec![
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyEncipherment,
    ];
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    let cert = params.signed_by(&key, issuer).map_err(TlsError::Generate)?;

    let chain = vec![CertificateDer::from(cert.der().to_vec())];
    let key_der = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der()));
    Ok((chain, key_der))
}

#[doc(hidden)]
pub fn generate(extra_sans: &[String]) -> Result<TlsMaterial, TlsError> {
    let (issuer, ca_pem, ca_der) = new_ca()?;
    let (chain, key_der) = serving_certificate(&issuer, extra_sans)?;
    let mut roots = RootCertStore::empty();
    roots.add(ca_der).map_err(TlsError::Rustls)?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let client_verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider)
        .allow_unauthenticated()
        .build()
        .map_err(TlsError::ClientVerifier)?;
    let server_config = server_config(chain, key_der, client_verifier)?;
    Ok(TlsMaterial {
        ca_pem,
        ca: CertificateAuthority { issuer },
        server_config,
    })
}

/// A kubelet's client CA (its `--client-ca-file`), against which the client certificate of each
/// request is verified when the request is authenticated, as the kubelet's x509 authenticator
/// verifies it (chain to one of the CA's certificates, validity period, `clientAuth` usage).
/// `Debug` shows no certificate.
#[derive(Clone)]
pub struct ClientCa {
    verifier: Arc<dyn ClientCertVerifier>,
}

impl fmt::Debug for ClientCa {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientCa").finish_non_exhaustive()
    }
}

impl ClientCa {
    /// The CA of the PEM certificates in `pem` (a bundle: any of them may sign).
    pub fn from_pem(pem: &[u8]) -> Result<ClientCa, TlsError> {
        let mut roots = RootCertStore::empty();
        for cert in CertificateDer::pem_slice_iter(pem) {
            let cert = cert.map_err(|_| TlsError::ClientCa)?;
            roots.add(cert).map_err(TlsError::Rustls)?;
        }
        if roots.is_empty() {
            return Err(TlsError::ClientCa);
        }
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider)
            .allow_unauthenticated()
            .build()
            .map_err(TlsError::ClientVerifier)?;
        Ok(ClientCa { verifier })
    }

    /// Whether the CA signed `end_entity` (with no intermediates), for a client, valid now.
    pub fn verifies(&self, end_entity: &CertificateDer<'_>) -> bool {
        self.verifier
            .verify_client_cert(end_entity, &[], UnixTime::now())
            .is_ok()
    }
}

/// Go's `tls.RequestClientCert`, which the kubelet serves with: the client is asked for a
/// certificate (with the client CA's names as hints), need not send one, and one it sends is
/// not checked against the CA during the handshake (only its proof of the key is); each
/// request's certificate is verified when the request is authenticated ([`ClientCa::verifies`]).
#[derive(Debug)]
struct RequestClientCert(Arc<dyn ClientCertVerifier>);

impl ClientCertVerifier for RequestClientCert {
    fn offer_client_auth(&self) -> bool {
        true
    }

    fn client_auth_mandatory(&self) -> bool {
        false
    }

    fn root_hint_subjects(&self) -> &[HintName] {
        self.0.root_hint_subjects()
    }

    fn verify_client_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _now: UnixTime,
    ) -> Result<ClientCertVerified, rustls::Error> {
        Ok(ClientCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}

/// The TLS configuration of a kubelet joining a cluster: a serving certificate of its own
/// (made now, for 127.0.0.1 and `node_name`), and client certificates requested, not required
/// and not verified in the handshake (Go's `tls.RequestClientCert`, as the kubelet's server
/// sets it with a `--client-ca-file`): whether the certificate is `client_ca`'s is decided per
/// request, by the kubelet API's authentication.
#[doc(hidden)]
pub fn kubelet_serving(
    node_name: &str,
    client_ca: &ClientCa,
) -> Result<Arc<ServerConfig>, TlsError> {
    let (issuer, _, _) = new_ca()?;
    let (chain, key) = serving_certificate(&issuer, &[node_name.to_string()])?;
    let verifier = Arc::new(RequestClientCert(client_ca.verifier.clone()));
    server_config(chain, key, verifier)
}

/// A server configuration presenting `chain` (ALPN h2 and http/1.1), asking clients for a
/// certificate as `client_verifier` says.
fn server_config(
    chain: Vec<CertificateDer<'static>>,
    key: PrivateKeyDer<'static>,
    client_verifier: Arc<dyn ClientCertVerifier>,
) -> Result<Arc<ServerConfig>, TlsError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(TlsError::Rustls)?
        .with_client_cert_verifier(client_verifier)
        .with_single_cert(chain, key)
        .map_err(TlsError::Rustls)?;
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_client_certificate_names_its_user_and_groups_and_hides_its_key_in_debug() {
        let m = generate(&[]).expect("material");
        let c =
            m.ca.issue_client("alice", &["devs", "ops"])
                .expect("a client certificate");
        assert!(c.cert_pem.starts_with("-----BEGIN CERTIFICATE-----"));
        assert!(c.key_pem.contains("PRIVATE KEY"));
        let shown = format!("{c:?}");
        assert!(
            !shown.contains(&c.key_pem) && shown.contains("[REDACTED]"),
            "{shown}"
        );
    }

    #[test]
    fn a_client_ca_verifies_its_own_client_certificates_and_no_others() {
        let ours = generate(&[]).expect("material");
        let theirs = generate(&[]).expect("material");
        let ca = ClientCa::from_pem(ours.ca_pem.as_bytes()).expect("a client CA");
        let der = |c: &ClientCertificate| {
            CertificateDer::from_pem_slice(c.cert_pem.as_bytes()).expect("certificate PEM")
        };
        let signed = ours.ca.issue_client("alice", &["devs"]).expect("issued");
        let stranger = theirs.ca.issue_client("alice", &["devs"]).expect("issued");
        assert!(ca.verifies(&der(&signed)));
        assert!(!ca.verifies(&der(&stranger)));
        assert!(matches!(
            ClientCa::from_pem(b"no PEM here"),
            Err(TlsError::ClientCa)
        ));
        assert!(kubelet_serving("worker-1", &ca).is_ok());
    }
}
