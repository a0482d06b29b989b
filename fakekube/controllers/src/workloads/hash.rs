//! Names derived from a pod template, as the controllers derive them: the `pod-template-hash`
//! of a Deployment's ReplicaSets and the revision hashes of StatefulSets and DaemonSets. The
//! hash is FNV-1a (32 bit) of the template (and of a collision count), printed in decimal and
//! then spelt in the API server's safe alphabet, so it reads like the real ones
//! (`7854ff8877`). The real controllers hash Go's dump of the template, so the values
//! themselves differ from a cluster's.

use serde_json::Value;

/// The alphabet of `rand.SafeEncodeString`: no vowels, no look-alikes.
const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";

/// The JSON of `v` with the keys of every object sorted: the same template always hashes the
/// same, whatever order its fields were written in.
fn canonical(v: &Value, out: &mut String) {
    match v {
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            out.push('{');
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(k.clone()).to_string());
                out.push(':');
                if let Some(x) = m.get(k) {
                    canonical(x, out);
                }
            }
            out.push('}');
        }
        Value::Array(a) => {
            out.push('[');
            for (i, x) in a.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                canonical(x, out);
            }
            out.push(']');
        }
        other => out.push_str(&other.to_string()),
    }
}

/// The hash of a pod template with a collision count, spelt safely.
pub(crate) fn template_hash(template: &Value, collision_count: i64) -> String {
    let mut text = String::new();
    canonical(template, &mut text);
    if collision_count > 0 {
        text.push_str(&collision_count.to_string());
    }
    let mut h: u32 = 0x811c_9dc5;
    for b in text.bytes() {
        h ^= u32::from(b);
        h = h.wrapping_mul(0x0100_0193);
    }
    h.to_string()
        .bytes()
        .map(|b| ALPHABET[usize::from(b) % ALPHABET.len()] as char)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_hash_ignores_key_order_and_changes_with_the_template_and_collisions() {
        let a = json!({ "metadata": { "labels": { "app": "x" } }, "spec": { "containers": [ { "name": "c", "image": "i" } ] } });
        let b = json!({ "spec": { "containers": [ { "image": "i", "name": "c" } ] }, "metadata": { "labels": { "app": "x" } } });
        assert_eq!(template_hash(&a, 0), template_hash(&b, 0));
        let c = json!({ "metadata": { "labels": { "app": "x" } }, "spec": { "containers": [ { "name": "c", "image": "j" } ] } });
        assert_ne!(template_hash(&a, 0), template_hash(&c, 0));
        assert_ne!(template_hash(&a, 0), template_hash(&a, 1));
        assert!(template_hash(&a, 0).bytes().all(|b| ALPHABET.contains(&b)));
    }
}
