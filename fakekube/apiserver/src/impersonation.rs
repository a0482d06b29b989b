//! Impersonation: a caller allowed the `impersonate` verb acts as another user through the
//! `Impersonate-User`, `Impersonate-Group`, `Impersonate-Uid` and `Impersonate-Extra-<key>`
//! headers (what `kubectl --as` and `--as-group` send). Each is checked as the API server
//! checks it: `impersonate` on `users` (or on the `serviceaccounts` object for a service
//! account's name), on `groups`, on `uids` and on `userextras/<key>` of
//! `authentication.k8s.io`. The impersonated user is authorized by RBAC alone.

use crate::authn::service_account_groups;
use crate::authn::{ANONYMOUS, AUTHENTICATED, Identity, UserInfo, parse_service_account};
use crate::authz::Caller;
use crate::rbac::Attributes;
use crate::status::ApiError;
use http::HeaderMap;

const USER_HEADER: &str = "impersonate-user";
const GROUP_HEADER: &str = "impersonate-group";
const UID_HEADER: &str = "impersonate-uid";
const EXTRA_HEADER_PREFIX: &str = "impersonate-extra-";

/// The caller the request acts as: `caller` itself without impersonation headers, the
/// impersonated user when `caller` may impersonate it, 403 when not.
pub(crate) fn impersonate(caller: Caller, headers: &HeaderMap) -> Result<Caller, ApiError> {
    let values = |name: &str| -> Vec<String> {
        headers
            .get_all(name)
            .iter()
            .filter_map(|v| v.to_str().ok().map(str::to_string))
            .collect()
    };
    let user = values(USER_HEADER).into_iter().next();
    let groups = values(GROUP_HEADER);
    let uid = values(UID_HEADER).into_iter().next();
    let mut extra = std::collections::BTreeMap::<String, Vec<String>>::new();
    for (name, value) in headers {
        if let Some(key) = name.as_str().strip_prefix(EXTRA_HEADER_PREFIX)
            && let Ok(v) = value.to_str()
        {
            let key = percent_decode(key);
            extra.entry(key).or_default().push(v.to_string());
        }
    }
    let Some(user) = user else {
        if groups.is_empty() && uid.is_none() && extra.is_empty() {
            return Ok(caller);
        }
        return Err(ApiError::bad_request(
            "requested impersonation of groups, a uid or extra attributes without impersonating a user",
        ));
    };
    let impersonate =
        |group: &str, resource: &str, subresource: &str, namespace: &str, name: &str| {
            caller.authorize(&Attributes {
                verb: "impersonate",
                group,
                resource,
                subresource,
                namespace,
                name,
            })
        };
    match parse_service_account(&user) {
        Some((ns, name)) => impersonate("", "serviceaccounts", "", ns, name)?,
        None => impersonate("", "users", "", "", &user)?,
    }
    for g in &groups {
        impersonate("", "groups", "", "", g)?;
    }
    if let Some(u) = &uid {
        impersonate("authentication.k8s.io", "uids", "", "", u)?;
    }
    for (key, values) in &extra {
        for v in values {
            impersonate("authentication.k8s.io", "userextras", key, "", v)?;
        }
    }
    let mut groups = groups;
    if groups.is_empty()
        && let Some((ns, _)) = parse_service_account(&user)
    {
        groups = service_account_groups(ns);
    }
    let mut info = UserInfo::new(user, groups);
    if info.name != ANONYMOUS && !info.groups.iter().any(|g| g == AUTHENTICATED) {
        info = info.authenticated();
    }
    info.uid = uid.unwrap_or_default();
    info.extra = extra;
    Ok(caller.as_identity(Identity {
        user: info,
        rules: None,
    }))
}

/// Decodes `%XX` escapes (header names cannot hold every character an extra key may).
fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && let Some(hex) = s.get(i + 1..i + 3)
            && let Ok(b) = u8::from_str_radix(hex, 16)
        {
            out.push(b);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extra_keys_are_percent_decoded() {
        assert_eq!(percent_decode("scopes"), "scopes");
        assert_eq!(percent_decode("example.com%2fteam"), "example.com/team");
        assert_eq!(percent_decode("bad%zz"), "bad%zz");
        assert_eq!(percent_decode("end%2"), "end%2");
    }
}
