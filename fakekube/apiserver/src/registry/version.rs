//! Kubernetes' ordering of version names, as discovery lists versions and picks the
//! preferred one: GA before beta before alpha, higher numbers first, and names that are not
//! Kubernetes versions (`foo`) after all of them, alphabetically.

use std::cmp::Ordering;

/// The stability of a Kubernetes version name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Stability {
    Alpha,
    Beta,
    Ga,
}

/// `v<major>[(alpha|beta)<minor>]`, parsed; `None` for other names.
fn parse(v: &str) -> Option<(u64, Stability, u64)> {
    let rest = v.strip_prefix('v')?;
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 || rest.starts_with('0') {
        return None;
    }
    let major: u64 = rest.get(..digits)?.parse().ok()?;
    let tail = rest.get(digits..)?;
    if tail.is_empty() {
        return Some((major, Stability::Ga, 0));
    }
    let (stability, minor) = if let Some(m) = tail.strip_prefix("alpha") {
        (Stability::Alpha, m)
    } else if let Some(m) = tail.strip_prefix("beta") {
        (Stability::Beta, m)
    } else {
        return None;
    };
    if minor.is_empty() {
        return Some((major, stability, 0));
    }
    if !minor.bytes().all(|b| b.is_ascii_digit()) || minor.starts_with('0') {
        return None;
    }
    Some((major, stability, minor.parse().ok()?))
}

/// Compares two version names by priority: `Greater` when `a` comes first in discovery
/// (`v2` > `v1` > `v1beta2` > `v1beta1` > `v1alpha1` > `foo`).
pub(crate) fn compare(a: &str, b: &str) -> Ordering {
    match (parse(a), parse(b)) {
        (Some((ma, sa, na)), Some((mb, sb, nb))) => sa.cmp(&sb).then(ma.cmp(&mb)).then(na.cmp(&nb)),
        (Some(_), None) => Ordering::Greater,
        (None, Some(_)) => Ordering::Less,
        (None, None) => b.cmp(a),
    }
}

/// Sorts version names by priority, highest first.
pub(crate) fn sort_by_priority(versions: &mut [String]) {
    versions.sort_by(|a, b| compare(b, a));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_sort_as_kubernetes_sorts_them() {
        let mut v: Vec<String> = [
            "v1alpha1",
            "foo",
            "v1",
            "v11alpha2",
            "v2",
            "v1beta2",
            "v10beta3",
            "v1beta1",
            "v12alpha1",
            "foo10",
            "v10",
            "v3beta1",
            "v10alpha1",
        ]
        .iter()
        .map(|s| (*s).to_string())
        .collect();
        sort_by_priority(&mut v);
        assert_eq!(
            v,
            [
                "v10",
                "v2",
                "v1",
                "v10beta3",
                "v3beta1",
                "v1beta2",
                "v1beta1",
                "v12alpha1",
                "v11alpha2",
                "v10alpha1",
                "v1alpha1",
                "foo",
                "foo10",
            ]
        );
    }

    #[test]
    fn names_that_only_look_like_versions_are_not_versions() {
        for name in [
            "v", "v01", "v1gamma1", "v1beta01", "1", "vbeta1", "v1beta1x",
        ] {
            assert_eq!(parse(name), None, "{name}");
        }
    }
}
