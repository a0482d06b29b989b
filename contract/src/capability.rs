//! Capabilities: the promises a provider makes, by their dotted names.
//!
//! A provider declares its capabilities in [`ProviderInfo::capabilities`]. Each declared
//! capability is a promise the conformance suite checks; each undeclared one means the operations
//! it gates answer [`ErrorCode::UnsupportedOperation`]. Names print and parse exactly as the
//! provider pages write them (`exec.stream`, `lifecycle.stop-start`), and nothing else parses.
//!
//! [`ProviderInfo::capabilities`]: crate::ProviderInfo::capabilities
//! [`ErrorCode::UnsupportedOperation`]: crate::ErrorCode::UnsupportedOperation

use std::collections::BTreeSet;
use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// How many characters of a refused name an error message repeats.
const ECHO_LIMIT: usize = 64;

/// One thing a provider can promise to do, named as on the provider pages.
///
/// The set is closed on purpose: a new capability is a change to the contract, and every `match`
/// over this enum must then decide what it means. The order of the variants is the canonical
/// order in which [`Capabilities`] prints them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Capability {
    /// `exec`: run a command to completion with [`Provider::exec`](crate::Provider::exec).
    Exec,
    /// `exec.stream`: run a command and receive its output as it arrives with
    /// [`Provider::exec_stream`](crate::Provider::exec_stream).
    ExecStream,
    /// `files`: write, read, list, stat and make directories inside a sandbox.
    Files,
    /// `stdin`: give a command standard input, with end of input that the command sees.
    Stdin,
    /// `lifecycle.stop-start`: stop a sandbox (its processes end, its persistent disk stays) and
    /// start it again.
    LifecycleStopStart,
    /// `lifecycle.pause-resume`: pause a sandbox keeping its memory and processes, and resume it.
    LifecyclePauseResume,
    /// `snapshots.disk`: snapshot a sandbox's filesystem and create sandboxes from the snapshot.
    SnapshotsDisk,
    /// `snapshots.memory`: snapshot a sandbox's memory and processes as well as its filesystem.
    SnapshotsMemory,
    /// `fork`: create a new sandbox as a copy of a running one.
    Fork,
    /// `ports.expose`: give a URL at which a port inside the sandbox is reachable.
    PortsExpose,
    /// `ttl`: the provider itself deletes a sandbox when its time to live runs out (a backstop
    /// for when the host cannot).
    Ttl,
    /// `persistence.disk`: files under the provider's persistent path survive stop and start.
    PersistenceDisk,
    /// `isolation.container`: sandboxes are containers (declared, not checked).
    IsolationContainer,
    /// `isolation.microvm`: sandboxes are micro virtual machines (declared, not checked).
    IsolationMicrovm,
}

impl Capability {
    /// Every capability, in canonical order.
    pub const ALL: [Capability; 14] = [
        Capability::Exec,
        Capability::ExecStream,
        Capability::Files,
        Capability::Stdin,
        Capability::LifecycleStopStart,
        Capability::LifecyclePauseResume,
        Capability::SnapshotsDisk,
        Capability::SnapshotsMemory,
        Capability::Fork,
        Capability::PortsExpose,
        Capability::Ttl,
        Capability::PersistenceDisk,
        Capability::IsolationContainer,
        Capability::IsolationMicrovm,
    ];

    /// Returns the capability's canonical dotted name, such as `lifecycle.stop-start`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Capability::Exec => "exec",
            Capability::ExecStream => "exec.stream",
            Capability::Files => "files",
            Capability::Stdin => "stdin",
            Capability::LifecycleStopStart => "lifecycle.stop-start",
            Capability::LifecyclePauseResume => "lifecycle.pause-resume",
            Capability::SnapshotsDisk => "snapshots.disk",
            Capability::SnapshotsMemory => "snapshots.memory",
            Capability::Fork => "fork",
            Capability::PortsExpose => "ports.expose",
            Capability::Ttl => "ttl",
            Capability::PersistenceDisk => "persistence.disk",
            Capability::IsolationContainer => "isolation.container",
            Capability::IsolationMicrovm => "isolation.microvm",
        }
    }
}

impl Capability {
    /// Returns the names of the [`Provider`](crate::Provider) methods this capability gates, as
    /// their `unsupported_operation` messages name them.
    ///
    /// Without the capability these operations answer `unsupported_operation`. `stdin` gates a
    /// feature of `exec` and `exec_stream` rather than a method; `snapshot` is gated per kind by
    /// both snapshot capabilities; `persistence.disk` and the isolation capabilities are
    /// properties, gating no method.
    pub const fn operations(self) -> &'static [&'static str] {
        match self {
            Capability::Exec => &["exec"],
            Capability::ExecStream => &["exec_stream"],
            Capability::Files => &["write_file", "read_file", "list_dir", "stat", "mkdir"],
            Capability::LifecycleStopStart => &["stop", "start"],
            Capability::LifecyclePauseResume => &["pause", "resume"],
            Capability::SnapshotsDisk | Capability::SnapshotsMemory => &["snapshot"],
            Capability::Fork => &["fork"],
            Capability::PortsExpose => &["expose_port"],
            Capability::Ttl => &["set_ttl"],
            Capability::Stdin
            | Capability::PersistenceDisk
            | Capability::IsolationContainer
            | Capability::IsolationMicrovm => &[],
        }
    }
}

impl fmt::Display for Capability {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Capability {
    type Err = ParseCapabilityError;

    /// Parses a canonical dotted name. Case, spacing and spelling must match exactly.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Capability::ALL
            .into_iter()
            .find(|capability| capability.as_str() == s)
            .ok_or_else(|| ParseCapabilityError::new(s))
    }
}

impl Serialize for Capability {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for Capability {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let name = std::borrow::Cow::<'de, str>::deserialize(deserializer)?;
        name.parse().map_err(serde::de::Error::custom)
    }
}

/// A name that is not one of the canonical capability names.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParseCapabilityError {
    /// The name is not a capability; `name` repeats it (cut to 64 characters).
    #[error(
        "unknown capability `{name}`: expected one of {expected}",
        expected = Capabilities::from(Capability::ALL)
    )]
    Unknown {
        /// The refused name, cut to 64 characters.
        name: String,
    },
    /// A comma-separated list had an empty item, as in `exec,,files` or a trailing comma.
    #[error("empty capability name in list")]
    EmptyItem,
}

impl ParseCapabilityError {
    /// Builds the error for the refused `name`, keeping at most 64 of its characters.
    fn new(name: &str) -> Self {
        ParseCapabilityError::Unknown {
            name: name.chars().take(ECHO_LIMIT).collect(),
        }
    }
}

/// A set of capabilities, such as the ones a provider declares.
///
/// It prints as a comma-separated list in canonical order (`exec,exec.stream,files`) and parses
/// from one, which is the form of the adapter's `features` key. Serialized with serde it is a list
/// of names.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Capabilities(BTreeSet<Capability>);

impl Capabilities {
    /// Returns an empty set.
    pub fn new() -> Self {
        Capabilities(BTreeSet::new())
    }

    /// Returns whether the set holds `capability`.
    pub fn contains(&self, capability: Capability) -> bool {
        self.0.contains(&capability)
    }

    /// Adds `capability`; returns whether it was new.
    pub fn insert(&mut self, capability: Capability) -> bool {
        self.0.insert(capability)
    }

    /// Removes `capability`; returns whether it was present.
    pub fn remove(&mut self, capability: Capability) -> bool {
        self.0.remove(&capability)
    }

    /// Returns the number of capabilities in the set.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Returns whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Iterates over the capabilities in canonical order.
    pub fn iter(&self) -> impl Iterator<Item = Capability> + '_ {
        self.0.iter().copied()
    }
}

impl fmt::Display for Capabilities {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (index, capability) in self.iter().enumerate() {
            if index > 0 {
                f.write_str(",")?;
            }
            f.write_str(capability.as_str())?;
        }
        Ok(())
    }
}

impl FromStr for Capabilities {
    type Err = ParseCapabilityError;

    /// Parses a comma-separated list such as `exec, exec.stream,files`.
    ///
    /// Spaces around items are ignored and a repeated item counts once. An empty or blank string
    /// is the empty set; an empty item inside a list (`exec,,files`, `exec,`) is refused, as is
    /// any name that is not canonical.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if s.trim().is_empty() {
            return Ok(Capabilities::new());
        }
        s.split(',')
            .map(|item| match item.trim() {
                "" => Err(ParseCapabilityError::EmptyItem),
                name => name.parse(),
            })
            .collect()
    }
}

impl FromIterator<Capability> for Capabilities {
    fn from_iter<I: IntoIterator<Item = Capability>>(iter: I) -> Self {
        Capabilities(iter.into_iter().collect())
    }
}

impl Extend<Capability> for Capabilities {
    fn extend<I: IntoIterator<Item = Capability>>(&mut self, iter: I) {
        self.0.extend(iter);
    }
}

impl<const N: usize> From<[Capability; N]> for Capabilities {
    fn from(capabilities: [Capability; N]) -> Self {
        capabilities.into_iter().collect()
    }
}

impl IntoIterator for Capabilities {
    type Item = Capability;
    type IntoIter = std::collections::btree_set::IntoIter<Capability>;

    fn into_iter(self) -> Self::IntoIter {
        self.0.into_iter()
    }
}

impl<'a> IntoIterator for &'a Capabilities {
    type Item = Capability;
    type IntoIter = std::iter::Copied<std::collections::btree_set::Iter<'a, Capability>>;

    fn into_iter(self) -> Self::IntoIter {
        self.0.iter().copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const NAMES: [&str; 14] = [
        "exec",
        "exec.stream",
        "files",
        "stdin",
        "lifecycle.stop-start",
        "lifecycle.pause-resume",
        "snapshots.disk",
        "snapshots.memory",
        "fork",
        "ports.expose",
        "ttl",
        "persistence.disk",
        "isolation.container",
        "isolation.microvm",
    ];

    #[test]
    fn every_capability_prints_its_seed_name_in_canonical_order() {
        let printed: Vec<&str> = Capability::ALL.iter().map(|c| c.as_str()).collect();
        assert_eq!(printed, NAMES);
    }

    #[test]
    fn every_capability_parses_back_from_its_name() {
        for capability in Capability::ALL {
            assert_eq!(capability.to_string().parse::<Capability>(), Ok(capability));
        }
    }

    #[test]
    fn all_lists_each_variant_once_and_in_declaration_order() {
        let mut sorted = Capability::ALL;
        sorted.sort();
        assert_eq!(sorted, Capability::ALL);
        let set: BTreeSet<Capability> = Capability::ALL.into_iter().collect();
        assert_eq!(set.len(), Capability::ALL.len());
    }

    #[test]
    fn near_miss_names_are_refused() {
        for near_miss in [
            "Exec",
            "EXEC",
            " exec",
            "exec ",
            "exec_stream",
            "exec-stream",
            "lifecycle.stop_start",
            "lifecycle.stopstart",
            "Lifecycle.Stop-Start",
            "snapshot.disk",
            "snapshots",
            "port.expose",
            "isolation.microVM",
            "",
        ] {
            assert!(
                near_miss.parse::<Capability>().is_err(),
                "{near_miss:?} was accepted"
            );
        }
    }

    #[test]
    fn parse_error_names_the_refused_string() {
        let error = "lifecycle.stop_start".parse::<Capability>().unwrap_err();
        assert_eq!(
            error,
            ParseCapabilityError::Unknown {
                name: "lifecycle.stop_start".to_owned()
            }
        );
        assert!(error.to_string().contains("`lifecycle.stop_start`"));
        assert!(
            error.to_string().ends_with("lifecycle.stop-start,lifecycle.pause-resume,snapshots.disk,snapshots.memory,fork,ports.expose,ttl,persistence.disk,isolation.container,isolation.microvm"),
            "{error}"
        );
    }

    #[test]
    fn parse_error_cuts_a_long_refused_string_on_a_character_boundary() {
        let long = "é".repeat(200);
        let Err(ParseCapabilityError::Unknown { name }) = long.parse::<Capability>() else {
            panic!("a long name was not refused as unknown");
        };
        assert_eq!(name.chars().count(), 64);
    }

    #[test]
    fn capability_serializes_as_its_dotted_name() {
        let json = serde_json::to_string(&Capability::LifecycleStopStart).unwrap();
        assert_eq!(json, "\"lifecycle.stop-start\"");
        let back: Capability = serde_json::from_str(&json).unwrap();
        assert_eq!(back, Capability::LifecycleStopStart);
        assert!(serde_json::from_str::<Capability>("\"LifecycleStopStart\"").is_err());
    }

    #[test]
    fn capabilities_parse_a_features_list_with_spaces() {
        let set: Capabilities = "exec, exec.stream ,files,ports.expose".parse().unwrap();
        assert_eq!(
            set,
            Capabilities::from([
                Capability::Exec,
                Capability::ExecStream,
                Capability::Files,
                Capability::PortsExpose,
            ])
        );
    }

    #[test]
    fn capabilities_print_in_canonical_order_without_spaces() {
        let set = Capabilities::from([Capability::Files, Capability::Exec, Capability::Ttl]);
        assert_eq!(set.to_string(), "exec,files,ttl");
    }

    #[test]
    fn blank_features_list_is_the_empty_set() {
        assert_eq!("".parse::<Capabilities>(), Ok(Capabilities::new()));
        assert_eq!("  ".parse::<Capabilities>(), Ok(Capabilities::new()));
    }

    #[test]
    fn features_list_with_an_empty_item_is_refused() {
        for list in ["exec,,files", "exec,", ",exec", "exec, ,files"] {
            assert_eq!(
                list.parse::<Capabilities>(),
                Err(ParseCapabilityError::EmptyItem),
                "{list:?}"
            );
        }
    }

    #[test]
    fn features_list_with_an_unknown_item_names_it() {
        let error = "exec,Files".parse::<Capabilities>().unwrap_err();
        assert_eq!(
            error,
            ParseCapabilityError::Unknown {
                name: "Files".to_owned()
            }
        );
    }

    #[test]
    fn capabilities_serialize_as_a_list_of_names() {
        let set = Capabilities::from([Capability::ExecStream, Capability::Exec]);
        let json = serde_json::to_string(&set).unwrap();
        assert_eq!(json, r#"["exec","exec.stream"]"#);
        assert_eq!(serde_json::from_str::<Capabilities>(&json).unwrap(), set);
    }

    #[test]
    fn capabilities_insert_and_remove_report_changes() {
        let mut set = Capabilities::new();
        assert!(set.insert(Capability::Fork));
        assert!(!set.insert(Capability::Fork));
        assert!(set.contains(Capability::Fork));
        assert_eq!(set.len(), 1);
        assert!(set.remove(Capability::Fork));
        assert!(!set.remove(Capability::Fork));
        assert!(set.is_empty());
    }

    proptest! {
        #[test]
        fn any_subset_of_capabilities_round_trips_through_its_list(
            mask in 0u16..(1 << 14)
        ) {
            let set: Capabilities = Capability::ALL
                .into_iter()
                .enumerate()
                .filter(|(index, _)| mask & (1 << index) != 0)
                .map(|(_, capability)| capability)
                .collect();
            prop_assert_eq!(set.to_string().parse::<Capabilities>(), Ok(set));
        }

        #[test]
        fn parsing_arbitrary_text_never_panics(text in ".{0,80}") {
            let _ = text.parse::<Capabilities>();
            let parsed = text.parse::<Capability>();
            prop_assert_eq!(parsed.is_ok(), NAMES.contains(&text.as_str()));
        }
    }
}
