//! Client certificates: the TLS listener verified the chain against the server's CA; here the
//! certificate's subject becomes the user, as the API server's x509 authenticator reads it
//! (user = the Common Name, groups = the Organizations).

use super::user::UserInfo;
use std::fmt::Write;

/// The user a verified client certificate (DER) names; `None` when it has no Common Name.
pub(crate) fn user_of(der: &[u8]) -> Option<UserInfo> {
    let (_, cert) = x509_parser::parse_x509_certificate(der).ok()?;
    let subject = cert.subject();
    let name = subject
        .iter_common_name()
        .next()?
        .as_str()
        .ok()?
        .to_string();
    if name.is_empty() {
        return None;
    }
    let groups = subject
        .iter_organization()
        .filter_map(|o| o.as_str().ok().map(str::to_string))
        .collect();
    let mut user = UserInfo::new(name, groups);
    let digest = ring::digest::digest(&ring::digest::SHA256, der);
    let mut hex = String::with_capacity(64);
    for b in digest.as_ref() {
        let _ = write!(hex, "{b:02x}");
    }
    user.extra.insert(
        super::service_accounts::CREDENTIAL_ID.into(),
        vec![format!("X509SHA256={hex}")],
    );
    Some(user)
}
