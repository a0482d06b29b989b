//! What a container's `resources.limits` become in the runtime: `memory` the memory limit of
//! its process table (a process past it is killed, the container `OOMKilled`),
//! `ephemeral-storage` the limit of its filesystem's root (past it the pod is evicted, worded
//! as the kubelet words it); and the process limit every container gets.

use fakekube_runtime::Limits;
use serde_json::Value;

/// The runtime limits of a container whose spec is `spec`, with `processes` as its process
/// limit.
pub(super) fn container_limits(spec: &Value, processes: usize) -> Limits {
    Limits {
        processes,
        memory: limit_of(spec, "memory").map(|(bytes, _)| bytes),
        ..Limits::default()
    }
}

/// The container's `resources.limits.ephemeral-storage`, in bytes and as written.
pub(super) fn ephemeral_limit(spec: &Value) -> Option<(u64, String)> {
    limit_of(spec, "ephemeral-storage")
}

/// The kubelet's eviction message for a container past its ephemeral-storage limit.
pub(super) fn eviction_message(container: &str, limit: &str) -> String {
    format!(
        "Pod ephemeral local storage usage exceeds the total limit of containers {limit}. Container {container} exceeded its local ephemeral storage limit \"{limit}\". "
    )
}

/// `resources.limits.<name>`, parsed.
fn limit_of(spec: &Value, name: &str) -> Option<(u64, String)> {
    let text = match spec.get("resources")?.get("limits")?.get(name)? {
        Value::String(s) => s.clone(),
        Value::Number(n) => n.to_string(),
        _ => return None,
    };
    quantity_bytes(&text).map(|b| (b, text))
}

/// A resource quantity (`128Mi`, `1G`, `500k`, `1e6`, `1.5Gi`) as a whole number of bytes,
/// rounded up; `None` when it is not one.
pub(super) fn quantity_bytes(text: &str) -> Option<u64> {
    let text = text.trim();
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '+'))
        .unwrap_or(text.len());
    let (number, suffix) = text.split_at(split);
    let value: f64 = number.parse().ok()?;
    let factor: f64 = match suffix {
        "" => 1.0,
        "m" => 0.001,
        "k" => 1e3,
        "M" => 1e6,
        "G" => 1e9,
        "T" => 1e12,
        "P" => 1e15,
        "E" => 1e18,
        "Ki" => 1024.0,
        "Mi" => 1024.0 * 1024.0,
        "Gi" => 1024.0 * 1024.0 * 1024.0,
        "Ti" => 1024f64.powi(4),
        "Pi" => 1024f64.powi(5),
        "Ei" => 1024f64.powi(6),
        s if s.starts_with(['e', 'E']) => 10f64.powi(s[1..].parse::<i32>().ok()?),
        _ => return None,
    };
    let bytes = (value * factor).ceil();
    (bytes.is_finite() && bytes >= 0.0 && bytes < u64::MAX as f64).then_some(bytes as u64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn quantities_parse_with_binary_and_decimal_suffixes() {
        assert_eq!(quantity_bytes("128Mi"), Some(128 << 20));
        assert_eq!(quantity_bytes("1G"), Some(1_000_000_000));
        assert_eq!(quantity_bytes("1.5Ki"), Some(1536));
        assert_eq!(quantity_bytes("1e3"), Some(1000));
        assert_eq!(quantity_bytes("100"), Some(100));
        assert_eq!(quantity_bytes("lots"), None);
        assert_eq!(quantity_bytes("1Xi"), None);
    }

    #[test]
    fn a_containers_limits_come_from_its_resources() {
        let spec = json!({"resources": {"limits": {"memory": "64Mi", "ephemeral-storage": "1Mi"}}});
        assert_eq!(
            container_limits(&spec, 7),
            Limits {
                processes: 7,
                memory: Some(64 << 20),
                ..Limits::default()
            }
        );
        assert_eq!(ephemeral_limit(&spec), Some((1 << 20, "1Mi".to_string())));
        assert_eq!(container_limits(&json!({}), 7).memory, None);
    }
}
