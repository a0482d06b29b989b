//! What a live run reads from the environment, and what depends on the kind of server found.

use std::path::PathBuf;
use std::time::Duration;

/// The namespace the live fixtures create (`fixtures/live/namespace.yaml`).
pub const DEFAULT_NAMESPACE: &str = "sandboxes";

/// The SandboxWarmPool the live fixtures create (`fixtures/live/warm-pool.yaml`).
pub const DEFAULT_WARM_POOL: &str = "live-warm";

/// The image of the direct pool, the one the seed's live run used.
pub const DEFAULT_IMAGE: &str = "debian:bookworm-slim";

/// An image no registry has: `.invalid` is a reserved top-level domain.
pub const DEFAULT_MISSING_IMAGE: &str = "registry.invalid/does-not-exist:0";

/// The settings of one live run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    /// The kubeconfig the adapter uses (`KUBECONFIG`, its first path); `None` when unset.
    pub kubeconfig: Option<PathBuf>,
    /// The kubeconfig of the run's own observations (`LIVE_OBSERVER_KUBECONFIG`), for a
    /// pool token that may not list PVCs and Services; `None` uses [`Settings::kubeconfig`].
    pub observer_kubeconfig: Option<PathBuf>,
    /// Whether an unreachable cluster fails the run instead of skipping it
    /// (`LIVE_REQUIRE_CLUSTER=1`).
    pub require_cluster: bool,
    /// Where the pools work (`LIVE_NAMESPACE`).
    pub namespace: String,
    /// The SandboxWarmPool of the warm pool (`LIVE_WARM_POOL`).
    pub warm_pool: String,
    /// The direct pool's image (`LIVE_IMAGE`).
    pub image: String,
    /// An image that does not exist (`LIVE_MISSING_IMAGE`).
    pub missing_image: String,
    /// Whether a fakekube server was told that [`Settings::missing_image`] is missing
    /// (`LIVE_MISSING_IMAGE_MARKED=1`); a real cluster needs no telling.
    pub missing_image_marked: bool,
    /// Where to record the run's exchanges as a cassette (`LIVE_RECORD`).
    pub record: Option<PathBuf>,
    /// Where to write the live checks' outcomes as JSON (`LIVE_CHECKS_JSON`).
    pub checks_json: Option<PathBuf>,
    /// Whether the cluster injects faults the run does not control (`LIVE_CHAOS=1`): a
    /// failure that quotes a code a fault explains is counted, not failed; nothing may be
    /// left after the reconcile.
    pub chaos: bool,
    /// Contract codes a fault also explains under chaos (`LIVE_CHAOS_EXPLAINS`, a
    /// comma-separated list, as the conformance binary's `--chaos-explains`).
    pub chaos_explains: Option<String>,
}

impl Settings {
    /// Reads the settings from the process environment.
    pub fn from_env() -> Settings {
        Settings::from_lookup(|name| std::env::var(name).ok())
    }

    /// Reads the settings through `lookup` (an environment variable's value by name).
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Settings {
        let text = |name: &str, default: &str| {
            lookup(name)
                .map(|v| v.trim().to_owned())
                .filter(|v| !v.is_empty())
                .unwrap_or_else(|| default.to_owned())
        };
        let path = |name: &str| {
            lookup(name).and_then(|list| {
                list.split(':')
                    .map(str::trim)
                    .find(|p| !p.is_empty())
                    .map(PathBuf::from)
            })
        };
        let flag = |name: &str| lookup(name).is_some_and(|v| is_true(&v));
        Settings {
            kubeconfig: path("KUBECONFIG"),
            observer_kubeconfig: path("LIVE_OBSERVER_KUBECONFIG"),
            require_cluster: flag("LIVE_REQUIRE_CLUSTER"),
            namespace: text("LIVE_NAMESPACE", DEFAULT_NAMESPACE),
            warm_pool: text("LIVE_WARM_POOL", DEFAULT_WARM_POOL),
            image: text("LIVE_IMAGE", DEFAULT_IMAGE),
            missing_image: text("LIVE_MISSING_IMAGE", DEFAULT_MISSING_IMAGE),
            missing_image_marked: flag("LIVE_MISSING_IMAGE_MARKED"),
            record: path("LIVE_RECORD"),
            checks_json: path("LIVE_CHECKS_JSON"),
            chaos: flag("LIVE_CHAOS"),
            chaos_explains: lookup("LIVE_CHAOS_EXPLAINS").filter(|v| !v.trim().is_empty()),
        }
    }

    /// The kubeconfig of the run's own observations.
    pub fn observer(&self) -> Option<&PathBuf> {
        self.observer_kubeconfig
            .as_ref()
            .or(self.kubeconfig.as_ref())
    }
}

/// Returns whether an environment value means yes.
fn is_true(value: &str) -> bool {
    matches!(
        value.trim().to_ascii_lowercase().as_str(),
        "1" | "true" | "yes" | "on"
    )
}

/// The kind of API server the run found, which sets its waits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// A real Kubernetes API server (kind, or any cluster).
    Cluster,
    /// A `fakekube` process: it reports an all-zero `gitCommit` from `/version`.
    Fakekube,
}

impl Backend {
    /// Recognises the server from its `/version` document's `gitCommit`.
    pub fn from_git_commit(commit: &str) -> Backend {
        if !commit.is_empty() && commit.bytes().all(|b| b == b'0') {
            Backend::Fakekube
        } else {
            Backend::Cluster
        }
    }

    /// Returns the name printed in the run's header.
    pub fn as_str(self) -> &'static str {
        match self {
            Backend::Cluster => "cluster",
            Backend::Fakekube => "fakekube",
        }
    }

    /// The longest one provider call may take (a real create may pull an image).
    pub fn op_timeout(self) -> Duration {
        match self {
            Backend::Cluster => Duration::from_secs(180),
            Backend::Fakekube => Duration::from_secs(30),
        }
    }

    /// The longest one live check may take.
    pub fn check_timeout(self) -> Duration {
        match self {
            Backend::Cluster => Duration::from_secs(300),
            Backend::Fakekube => Duration::from_secs(30),
        }
    }

    /// How long deleted objects may take to disappear (pod grace periods, garbage collection).
    pub fn cleanup_wait(self) -> Duration {
        match self {
            Backend::Cluster => Duration::from_secs(120),
            Backend::Fakekube => Duration::from_secs(10),
        }
    }

    /// How long the warm pool may take to have a ready member at the start.
    pub fn warm_pool_wait(self) -> Duration {
        match self {
            Backend::Cluster => Duration::from_secs(300),
            Backend::Fakekube => Duration::from_secs(15),
        }
    }

    /// The short TTL of the suite's backstop trials.
    pub fn ttl(self) -> Duration {
        match self {
            Backend::Cluster => Duration::from_secs(5),
            Backend::Fakekube => Duration::from_secs(2),
        }
    }

    /// How long after its TTL the backstop may take (fakekube's controller acts at once; the
    /// suite also waits this long to see that a moved expiry is kept).
    pub fn ttl_backstop_wait(self) -> Duration {
        match self {
            Backend::Cluster => Duration::from_secs(90),
            Backend::Fakekube => Duration::from_secs(5),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn from(pairs: &[(&str, &str)]) -> Settings {
        let map: BTreeMap<String, String> = pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        Settings::from_lookup(|name| map.get(name).cloned())
    }

    #[test]
    fn an_empty_environment_gives_the_fixture_defaults_and_no_kubeconfig() {
        let s = from(&[]);
        assert_eq!(s.kubeconfig, None);
        assert_eq!(s.observer(), None);
        assert!(!s.require_cluster);
        assert!(!s.missing_image_marked);
        assert_eq!(s.namespace, "sandboxes");
        assert_eq!(s.warm_pool, "live-warm");
        assert_eq!(s.image, "debian:bookworm-slim");
        assert_eq!(s.missing_image, "registry.invalid/does-not-exist:0");
        assert_eq!(s.record, None);
        assert_eq!(s.checks_json, None);
        assert!(!s.chaos);
        assert_eq!(s.chaos_explains, None);
    }

    #[test]
    fn live_chaos_is_a_yes_or_no_flag() {
        assert!(from(&[("LIVE_CHAOS", "1")]).chaos);
        assert!(!from(&[("LIVE_CHAOS", "0")]).chaos);
    }

    #[test]
    fn live_chaos_explains_is_a_list_kept_for_the_runner_to_read() {
        let s = from(&[("LIVE_CHAOS_EXPLAINS", "permission_denied")]);
        assert_eq!(s.chaos_explains.as_deref(), Some("permission_denied"));
        assert_eq!(from(&[("LIVE_CHAOS_EXPLAINS", " ")]).chaos_explains, None);
    }

    #[test]
    fn live_record_and_live_checks_json_name_files() {
        let s = from(&[
            ("LIVE_RECORD", "/tmp/run.jsonl"),
            ("LIVE_CHECKS_JSON", "/tmp/c.json"),
        ]);
        assert_eq!(s.record, Some(PathBuf::from("/tmp/run.jsonl")));
        assert_eq!(s.checks_json, Some(PathBuf::from("/tmp/c.json")));
    }

    #[test]
    fn kubeconfig_takes_the_first_non_empty_path_of_the_list() {
        let s = from(&[("KUBECONFIG", ":/a/one:/b/two")]);
        assert_eq!(s.kubeconfig, Some(PathBuf::from("/a/one")));
    }

    #[test]
    fn observer_falls_back_to_the_pool_kubeconfig() {
        let s = from(&[("KUBECONFIG", "/pool")]);
        assert_eq!(s.observer(), Some(&PathBuf::from("/pool")));
        let s = from(&[
            ("KUBECONFIG", "/pool"),
            ("LIVE_OBSERVER_KUBECONFIG", "/obs"),
        ]);
        assert_eq!(s.observer(), Some(&PathBuf::from("/obs")));
    }

    #[test]
    fn require_cluster_accepts_one_and_true_and_refuses_zero() {
        assert!(from(&[("LIVE_REQUIRE_CLUSTER", "1")]).require_cluster);
        assert!(from(&[("LIVE_REQUIRE_CLUSTER", " TRUE ")]).require_cluster);
        assert!(!from(&[("LIVE_REQUIRE_CLUSTER", "0")]).require_cluster);
        assert!(!from(&[("LIVE_REQUIRE_CLUSTER", "")]).require_cluster);
    }

    #[test]
    fn blank_values_keep_the_defaults() {
        let s = from(&[("LIVE_NAMESPACE", "  "), ("LIVE_IMAGE", "busybox:1.37")]);
        assert_eq!(s.namespace, "sandboxes");
        assert_eq!(s.image, "busybox:1.37");
    }

    #[test]
    fn an_all_zero_git_commit_is_fakekube_and_anything_else_a_cluster() {
        assert_eq!(
            Backend::from_git_commit("0000000000000000000000000000000000000000"),
            Backend::Fakekube
        );
        assert_eq!(
            Backend::from_git_commit("8adc0f041b8e7ad1d30e29cc59c6ae7a15e19828"),
            Backend::Cluster
        );
        assert_eq!(Backend::from_git_commit(""), Backend::Cluster);
    }

    #[test]
    fn fakekube_waits_are_shorter_than_a_cluster_s() {
        assert!(Backend::Fakekube.op_timeout() < Backend::Cluster.op_timeout());
        assert!(Backend::Fakekube.cleanup_wait() < Backend::Cluster.cleanup_wait());
        assert!(Backend::Fakekube.ttl() < Backend::Cluster.ttl());
    }
}
