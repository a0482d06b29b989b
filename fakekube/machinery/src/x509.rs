//! A client certificate as the user it names, read as k8s.io/apiserver's x509 authenticator
//! reads one (`CommonNameUserConversion`, shared by the API server and the kubelet): the
//! subject's Common Name is the user, its Organizations the groups, its UID attribute
//! (`0.9.2342.19200300.100.1.1`, read since 1.33's `AllowParsingUserUIDFromCertAuth`) the uid,
//! and the certificate's SHA-256 its credential id (`X509SHA256=<hex>`). Whether the
//! certificate is one to trust is the caller's to check first.

use std::fmt::Write;

/// The `user.extra` key of a credential's id.
pub const CREDENTIAL_ID: &str = "authentication.kubernetes.io/credential-id";

/// The OID of the subject's UID attribute.
const UID_OID: &str = "0.9.2342.19200300.100.1.1";

/// The user a client certificate names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CertificateUser {
    /// The Common Name.
    pub name: String,
    /// The UID attribute, empty when the subject has none.
    pub uid: String,
    /// The Organizations, in the subject's order.
    pub groups: Vec<String>,
    /// `X509SHA256=` and the certificate's SHA-256 in hex, for `extra`'s [`CREDENTIAL_ID`].
    pub credential_id: String,
}

/// Why a certificate names no user, as the authenticator's error says it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CertificateUserError {
    /// The DER is no X.509 certificate.
    #[error("the certificate could not be parsed")]
    Parse,
    /// The UID attribute is not a string.
    #[error("unable to parse UID into a string")]
    UidNotString,
    /// More than one UID attribute.
    #[error("expected 1 UID, but found multiple: {0:?}")]
    Uids(Vec<String>),
    /// An empty UID attribute.
    #[error("UID cannot be an empty string")]
    EmptyUid,
}

/// The user certificate `der` names; `Ok(None)` when its Common Name is empty (the
/// authenticator has no opinion on it then, and the next one is asked).
pub fn certificate_user(der: &[u8]) -> Result<Option<CertificateUser>, CertificateUserError> {
    let (_, cert) =
        x509_parser::parse_x509_certificate(der).map_err(|_| CertificateUserError::Parse)?;
    let subject = cert.subject();
    let name = subject
        .iter_common_name()
        .next()
        .and_then(|cn| cn.as_str().ok())
        .unwrap_or("");
    if name.is_empty() {
        return Ok(None);
    }
    let groups = subject
        .iter_organization()
        .filter_map(|o| o.as_str().ok().map(str::to_string))
        .collect();
    let mut uids = Vec::new();
    for attr in subject.iter_attributes() {
        if attr.attr_type().to_id_string() == UID_OID {
            let uid = attr
                .as_str()
                .map_err(|_| CertificateUserError::UidNotString)?;
            uids.push(uid.to_string());
        }
    }
    let uid = match uids.as_slice() {
        [] => String::new(),
        [one] if one.is_empty() => return Err(CertificateUserError::EmptyUid),
        [one] => one.clone(),
        _ => return Err(CertificateUserError::Uids(uids)),
    };
    let digest = ring::digest::digest(&ring::digest::SHA256, der);
    let mut credential_id = String::from("X509SHA256=");
    for b in digest.as_ref() {
        let _ = write!(credential_id, "{b:02x}");
    }
    Ok(Some(CertificateUser {
        name: name.to_string(),
        uid,
        groups,
        credential_id,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rcgen::{CertificateParams, DistinguishedName, DnType, KeyPair};

    fn certificate(attrs: &[(DnType, &str)]) -> Vec<u8> {
        let key = KeyPair::generate().expect("a key");
        let mut params = CertificateParams::default();
        let mut dn = DistinguishedName::new();
        for (t, v) in attrs {
            dn.push(t.clone(), *v);
        }
        params.distinguished_name = dn;
        params.self_signed(&key).expect("signed").der().to_vec()
    }

    fn uid() -> DnType {
        DnType::CustomDnType(vec![0, 9, 2342, 19_200_300, 100, 1, 1])
    }

    #[test]
    fn the_common_name_is_the_user_and_the_organization_its_group() {
        let der = certificate(&[
            (DnType::OrganizationName, "system:masters"),
            (DnType::CommonName, "kube-apiserver-kubelet-client"),
        ]);
        let user = certificate_user(&der).expect("parsed").expect("a user");
        assert_eq!(user.name, "kube-apiserver-kubelet-client");
        assert_eq!(user.groups, ["system:masters"]);
        assert_eq!(user.uid, "");
        let hex = user
            .credential_id
            .strip_prefix("X509SHA256=")
            .expect("the credential id names its hash");
        assert!(
            hex.len() == 64 && hex.bytes().all(|b| b.is_ascii_hexdigit()),
            "{hex}"
        );
    }

    #[test]
    fn a_certificate_without_a_common_name_names_no_user() {
        let der = certificate(&[(DnType::OrganizationName, "system:masters")]);
        assert_eq!(certificate_user(&der), Ok(None));
        assert_eq!(
            certificate_user(b"not a certificate"),
            Err(CertificateUserError::Parse)
        );
    }

    #[test]
    fn the_uid_attribute_is_the_uid() {
        let der = certificate(&[(DnType::CommonName, "alice"), (uid(), "1234")]);
        let user = certificate_user(&der).expect("parsed").expect("a user");
        assert_eq!(user.uid, "1234");
        let der = certificate(&[(DnType::CommonName, "alice"), (uid(), "")]);
        assert_eq!(certificate_user(&der), Err(CertificateUserError::EmptyUid));
    }
}
