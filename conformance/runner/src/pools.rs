//! The two pools the main job runs (the live runs' configs in `fixtures/live/`, so the main
//! job, the live tests and `ci/kind-up.sh` agree on names) and the fixtures each gets.

use std::time::Duration;

use sandbox_conformance::Fixtures;
use sandbox_contract::{Capabilities, Capability};

/// The direct pool: Sandboxes with a volume at /workspace and ports.expose.
pub(crate) const DIRECT_POOL: &str = include_str!("../../../fixtures/live/pools/direct.yaml");
/// The warm pool: claims on the SandboxWarmPool of fixtures/live/warm-pool.yaml.
pub(crate) const WARM_POOL_CONFIG: &str = include_str!("../../../fixtures/live/pools/warm.yaml");
/// The SandboxTemplate and SandboxWarmPool a cluster operator creates (ci/kind-up.sh does).
pub(crate) const CLUSTER_OBJECTS: &str = include_str!("../../../fixtures/live/warm-pool.yaml");
/// The namespace the pools use.
pub(crate) const NAMESPACE: &str = "sandboxes";
/// The SandboxWarmPool of the warm pool, and so its only template.
pub(crate) const WARM_POOL: &str = "live-warm";
/// The SandboxTemplate of the warm pool.
pub(crate) const WARM_TEMPLATE: &str = "live-debian";
/// An image fakekube's kubelet is told does not exist.
pub(crate) const MISSING_IMAGE: &str = "registry.invalid/does-not-exist:0";

/// The direct pool's fixtures over `base`: its volume, the missing image, and the capabilities
/// its config switches on.
pub(crate) fn direct_fixtures(base: Fixtures) -> Fixtures {
    Fixtures {
        volume_path: Some("/workspace".into()),
        missing_image: Some(MISSING_IMAGE.into()),
        opt_in: opt_in(&[Capability::PortsExpose, Capability::Stdin, Capability::Ttl]),
        id_prefix: "d".into(),
        ..base
    }
}

/// The warm pool's fixtures over `base`: its template, and the capabilities its config
/// switches on.
pub(crate) fn warm_fixtures(base: Fixtures) -> Fixtures {
    Fixtures {
        template: Some(WARM_POOL.into()),
        opt_in: opt_in(&[Capability::Stdin, Capability::Ttl]),
        id_prefix: "w".into(),
        ..base
    }
}

/// Fixtures sized for fakekube: it starts pods in milliseconds and its TTL backstop fires on
/// time (shutdownTime has one-second precision), so waits are short.
pub(crate) fn fast_fixtures() -> Fixtures {
    Fixtures {
        op_timeout: Duration::from_secs(20),
        trial_timeout: Duration::from_secs(60),
        stream_gap: Duration::from_millis(100),
        exec_timeout: Duration::from_millis(300),
        ttl: Duration::from_secs(1),
        ttl_backstop_wait: Some(Duration::from_millis(1500)),
        delete_wait: Duration::from_secs(10),
        list_count: 7,
        ..Fixtures::default()
    }
}

/// Fixtures sized for a real cluster: pulling images and starting pods take their time, and
/// the TTL backstop is given 90 s to act.
pub(crate) fn cluster_fixtures() -> Fixtures {
    Fixtures {
        op_timeout: Duration::from_secs(180),
        ttl: Duration::from_secs(5),
        ttl_backstop_wait: Some(Duration::from_secs(90)),
        ..Fixtures::default()
    }
}

/// The set of `list`.
fn opt_in(list: &[Capability]) -> Capabilities {
    let mut c = Capabilities::new();
    for cap in list {
        c.insert(*cap);
    }
    c
}
