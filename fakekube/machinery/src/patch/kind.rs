//! [`PatchKind`]: the patch formats of the PATCH verb and the media types that name them.

/// One of the patch formats of the PATCH verb, named by the request's `Content-Type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PatchKind {
    /// `application/merge-patch+json`: JSON merge patch (RFC 7386). `null` deletes a key,
    /// objects merge recursively, anything else (lists included) replaces.
    Merge,
    /// `application/json-patch+json`: JSON patch (RFC 6902), a list of
    /// add/remove/replace/move/copy/test operations applied all-or-nothing.
    Json,
    /// `application/strategic-merge-patch+json`: what kubectl sends for built-in kinds; lists
    /// with a merge key merge element by element. Only for built-in kinds: the caller answers
    /// 415 for custom resources, as the API server does.
    StrategicMerge,
    /// `application/apply-patch+yaml`: server-side apply. The body is the full intended
    /// object, merged here into the live object as a strategic merge patch with the same
    /// [`MergeKeys`](super::MergeKeys) (lists with a key merge, atomic lists are replaced),
    /// then `apiVersion`, `kind`, `metadata.name` and `metadata.namespace` are taken from the
    /// applied object.
    /// Field ownership is the store's next step (`managed_fields::apply`: managers,
    /// conflicts, `force`, and removing the fields the applier dropped since its last apply).
    /// When there is no live object the caller creates the applied object as it is.
    Apply,
}

impl PatchKind {
    /// Every patch kind, in the order the API server lists accepted media types.
    pub const ALL: [PatchKind; 4] = [
        PatchKind::Json,
        PatchKind::Merge,
        PatchKind::StrategicMerge,
        PatchKind::Apply,
    ];

    /// Returns the patch kind a `Content-Type` header names, or `None` for any other media type.
    ///
    /// Parameters such as `; charset=utf-8` are ignored and the media type is compared without
    /// regard to case, as media types are.
    pub fn from_content_type(ct: &str) -> Option<Self> {
        let essence = ct.split(';').next().unwrap_or_default().trim();
        Self::ALL
            .into_iter()
            .find(|kind| kind.content_type().eq_ignore_ascii_case(essence))
    }

    /// Returns the media type of this patch kind, as a `Content-Type` header spells it.
    pub fn content_type(self) -> &'static str {
        match self {
            PatchKind::Merge => "application/merge-patch+json",
            PatchKind::Json => "application/json-patch+json",
            PatchKind::StrategicMerge => "application/strategic-merge-patch+json",
            PatchKind::Apply => "application/apply-patch+yaml",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // --- content types -------------------------------------------------------------------

    #[test]
    fn content_types_name_their_patch_kinds() {
        assert_eq!(
            PatchKind::from_content_type("application/merge-patch+json"),
            Some(PatchKind::Merge)
        );
        assert_eq!(
            PatchKind::from_content_type("application/json-patch+json"),
            Some(PatchKind::Json)
        );
        assert_eq!(
            PatchKind::from_content_type("application/strategic-merge-patch+json"),
            Some(PatchKind::StrategicMerge)
        );
        assert_eq!(
            PatchKind::from_content_type("application/apply-patch+yaml"),
            Some(PatchKind::Apply)
        );
    }

    #[test]
    fn content_type_parameters_and_case_are_ignored() {
        assert_eq!(
            PatchKind::from_content_type("application/strategic-merge-patch+json; charset=utf-8"),
            Some(PatchKind::StrategicMerge)
        );
        assert_eq!(
            PatchKind::from_content_type(" Application/Merge-Patch+JSON ;charset=UTF-8"),
            Some(PatchKind::Merge)
        );
    }

    #[test]
    fn other_content_types_are_not_patches() {
        for ct in [
            "application/json",
            "application/yaml",
            "application/apply-patch+cbor",
            "",
            ";",
            "application/merge-patch+json-ish",
        ] {
            assert_eq!(PatchKind::from_content_type(ct), None, "{ct}");
        }
    }

    #[test]
    fn content_type_round_trips_through_from_content_type() {
        for kind in PatchKind::ALL {
            assert_eq!(
                PatchKind::from_content_type(kind.content_type()),
                Some(kind)
            );
        }
    }
}
