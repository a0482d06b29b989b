//! Client certificates: the TLS listener verified the chain against the server's CA; here the
//! certificate's subject becomes the user, as the API server's x509 authenticator reads it
//! (user = the Common Name, groups = the Organizations, the UID attribute the uid; the
//! machinery's [`certificate_user`], which the kubelet reads its callers with too).

use super::service_accounts::CREDENTIAL_ID;
use super::user::UserInfo;
use fakekube_machinery::x509::certificate_user;

/// The user a verified client certificate (DER) names; `None` when it has no Common Name or
/// its subject is refused (two UIDs, an empty one).
pub(crate) fn user_of(der: &[u8]) -> Option<UserInfo> {
    let named = certificate_user(der).ok()??;
    let mut user = UserInfo::new(named.name, named.groups);
    user.uid = named.uid;
    user.extra
        .insert(CREDENTIAL_ID.into(), vec![named.credential_id]);
    Some(user)
}
