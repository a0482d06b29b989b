//! The two pools the main job runs (the live runs' configs in `fixtures/live/`, so the main
//! job, the live tests and `ci/kind-up.sh` agree on names) and the fixtures each gets.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use agentsandbox::PoolConfig;
use sandbox_conformance::{ClusterClock, Fixtures};
use sandbox_contract::{Capabilities, Capability};
use serde_json::Value;

use crate::error::RunError;

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

/// Fixtures sized for fakekube: it starts pods in milliseconds, so waits are short. The TTL
/// backstop is given 1.8 s past the 1 s TTL: `shutdownTime` has one-second precision and, as
/// upstream's controller does, fakekube looks at an unexpired Sandbox again after
/// max(remaining, 2 s), so a 1 s TTL set just now is acted on about 2 s later. (The embedded
/// run moves fakekube's clock instead: see [`on_fakekube_clock`]; a fakekube process reached
/// through a kubeconfig is waited for in real time.)
pub(crate) fn fast_fixtures() -> Fixtures {
    Fixtures {
        op_timeout: Duration::from_secs(20),
        trial_timeout: Duration::from_secs(60),
        stream_gap: Duration::from_millis(100),
        exec_timeout: Duration::from_millis(300),
        ttl: Duration::from_secs(1),
        ttl_backstop_wait: Some(Duration::from_millis(1800)),
        delete_wait: Duration::from_secs(10),
        list_count: 7,
        ..Fixtures::default()
    }
}

/// The TTL of the backstop trials on fakekube's clock: a minute, longer than any of their real
/// waits (`delete_wait`), so that they pass only by moving the clock past it.
const TTL_ON_A_MOVED_CLOCK: Duration = Duration::from_secs(60);

/// `base` with fakekube's `clock`, which the TTL backstop trials move past the TTL and the
/// backstop's wait instead of waiting them out (the adapter reads the same clock).
pub(crate) fn on_fakekube_clock(base: Fixtures, clock: Arc<dyn ClusterClock>) -> Fixtures {
    Fixtures {
        clock: Some(clock),
        ttl: TTL_ON_A_MOVED_CLOCK,
        ..base
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

/// Reads the pools of a server config file: its `pools:` list (a bare list works too), each
/// an agent-sandbox pool in the provider page's format.
pub(crate) fn load_pools(path: &Path) -> Result<Vec<PoolConfig>, RunError> {
    let origin = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| RunError::ReadPools {
        path: origin.clone(),
        source: e,
    })?;
    let bad = |message: String| RunError::Pools {
        path: origin.clone(),
        message,
    };
    let doc: Value =
        serde_saphyr::from_str(&text).map_err(|_| bad("is not valid YAML or JSON".to_owned()))?;
    let list = match &doc {
        Value::Array(list) => list,
        Value::Object(map) => match map.get("pools") {
            Some(Value::Array(list)) => list,
            _ => return Err(bad("has no `pools:` list".to_owned())),
        },
        _ => return Err(bad("is neither a `pools:` list nor a list".to_owned())),
    };
    if list.is_empty() {
        return Err(bad("lists no pool".to_owned()));
    }
    let mut pools = Vec::new();
    for (index, entry) in list.iter().enumerate() {
        let adapter = entry.get("adapter").and_then(Value::as_str);
        if adapter.is_some_and(|a| a != "agent-sandbox") {
            return Err(bad(format!(
                "pool {index} uses adapter {:?}; this runner drives agent-sandbox pools (use \
                 --provider-cmd for others)",
                adapter.unwrap_or_default()
            )));
        }
        let pool = PoolConfig::from_value(entry).map_err(|e| RunError::PoolEntry {
            path: origin.clone(),
            index,
            source: e,
        })?;
        if pools.iter().any(|p: &PoolConfig| p.name == pool.name) {
            return Err(bad(format!("names pool {} twice", pool.name)));
        }
        pools.push(pool);
    }
    Ok(pools)
}

/// The fixtures of a user's pool over `base`: its volume, its warm pool as the template, and
/// the capabilities its `features` add to the defaults as opt-in.
pub(crate) fn pool_fixtures(pool: &PoolConfig, base: Fixtures) -> Fixtures {
    let config = &pool.config;
    let defaults = agentsandbox::AdapterConfig {
        features: None,
        ..config.clone()
    }
    .capabilities();
    let mut opt_in = Capabilities::new();
    for capability in config.capabilities().iter() {
        if !defaults.contains(capability) {
            opt_in.insert(capability);
        }
    }
    let prefix: String = pool
        .name
        .chars()
        .filter(|c| c.is_ascii_lowercase())
        .take(3)
        .collect();
    Fixtures {
        volume_path: config
            .volume_size
            .as_ref()
            .map(|_| config.volume_path.clone()),
        template: config.warm_pool.clone(),
        opt_in,
        id_prefix: if prefix.is_empty() {
            "p".to_owned()
        } else {
            prefix
        },
        ..base
    }
}

/// Fixtures for a provider reached through the protocol: its commands are local processes
/// or remote calls, so waits are a few seconds, the TTL backstop is given ten.
pub(crate) fn remote_fixtures() -> Fixtures {
    Fixtures {
        op_timeout: Duration::from_secs(60),
        trial_timeout: Duration::from_secs(300),
        exec_timeout: Duration::from_secs(1),
        stream_gap: Duration::from_millis(250),
        ttl: Duration::from_secs(2),
        ttl_backstop_wait: Some(Duration::from_secs(10)),
        delete_wait: Duration::from_secs(10),
        ..Fixtures::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(text: &str) -> (tempfile::TempDir, std::path::PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("pools.yaml");
        std::fs::write(&path, text).unwrap();
        (dir, path)
    }

    #[test]
    fn the_server_configs_pools_list_is_read_with_each_pools_fixtures() {
        let (_dir, path) = write(
            "server: {port: 8080}\npools:\n  - name: k8s\n    adapter: agent-sandbox\n    trust: private\n    config: {namespace: team-a, volumeSize: 1Gi, features: 'exec,exec.stream,files,lifecycle.stop-start,persistence.disk,ports.expose'}\n  - name: k8s-warm\n    adapter: agent-sandbox\n    trust: private\n    config: {namespace: team-a, warmPool: py-warm}\n",
        );
        let pools = load_pools(&path).unwrap();
        assert_eq!(pools.len(), 2);
        let direct = pool_fixtures(&pools[0], Fixtures::default());
        assert_eq!(direct.volume_path.as_deref(), Some("/workspace"));
        assert_eq!(direct.template, None);
        assert_eq!(direct.opt_in, Capabilities::from([Capability::PortsExpose]));
        let warm = pool_fixtures(&pools[1], Fixtures::default());
        assert_eq!(warm.template.as_deref(), Some("py-warm"));
        assert_eq!(warm.volume_path, None);
        assert_ne!(direct.id_prefix, "");
    }

    #[test]
    fn the_fixture_pools_files_read_as_a_bare_list() {
        let direct = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../fixtures/pools/direct.yaml"
        ))
        .unwrap();
        let indented: String = direct.lines().map(|l| format!("  {l}\n")).collect();
        let (_dir, path) = write(&format!("-\n{indented}"));
        assert_eq!(load_pools(&path).unwrap()[0].name, "k8s");
    }

    #[test]
    fn bad_pools_files_say_what_is_wrong() {
        for (text, expected) in [
            ("pools: []\n", "lists no pool"),
            ("other: 1\n", "has no `pools:` list"),
            (
                "pools:\n  - name: x\n    adapter: e2b\n    trust: private\n",
                "uses adapter \"e2b\"",
            ),
            (
                "pools:\n  - {name: a, trust: private}\n  - {name: a, trust: private}\n",
                "names pool a twice",
            ),
        ] {
            let (_dir, path) = write(text);
            let error = load_pools(&path).unwrap_err().to_string();
            assert!(error.contains(expected), "{text:?}: {error}");
        }
        let (_dir, path) =
            write("pools:\n  - {name: a, trust: private, config: {namespace: 'Bad NS'}}\n");
        let error = crate::error::with_causes(&load_pools(&path).unwrap_err());
        assert!(error.contains("pool 0"), "{error}");
    }
}
