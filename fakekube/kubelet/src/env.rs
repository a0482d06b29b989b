//! A container's environment and command line, built as the kubelet and the runtime build them:
//! the image's `PATH`, `HOSTNAME`, `envFrom` and `env` (with `$(VAR)` references expanded and
//! `valueFrom` resolved), the `KUBERNETES_*` service variables, and `HOME`.

use crate::meta::str_at;
use base64::Engine;
use fakekube_runtime::DEFAULT_PATH;
use serde_json::Value;

/// The cluster IP of the `kubernetes` Service, for the `KUBERNETES_*` variables.
const KUBERNETES_SERVICE_IP: &str = "10.96.0.1";

/// What an environment may be built from besides the pod itself.
pub trait Lookup {
    /// A Secret's object, when it exists.
    fn secret(&self, ns: &str, name: &str) -> Option<Value>;

    /// The node's InternalIP (`status.hostIP`).
    fn host_ip(&self) -> &str;
}

/// Expands `$(NAME)` references: a defined name gives its value, an undefined one stays as
/// written, `$$` is a literal `$`.
pub fn expand(s: &str, lookup: &dyn Fn(&str) -> Option<String>) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(pos) = rest.find('$') {
        out.push_str(&rest[..pos]);
        let after = &rest[pos + 1..];
        if let Some(tail) = after.strip_prefix('$') {
            out.push('$');
            rest = tail;
        } else if let Some(inner) = after.strip_prefix('(')
            && let Some(end) = inner.find(')')
        {
            let name = &inner[..end];
            match lookup(name) {
                Some(v) => out.push_str(&v),
                None => {
                    out.push_str("$(");
                    out.push_str(name);
                    out.push(')');
                }
            }
            rest = &inner[end + 1..];
        } else {
            out.push('$');
            rest = after;
        }
    }
    out.push_str(rest);
    out
}

/// A `fieldRef` value (`metadata.name`, `status.podIP`, `metadata.labels['k']`...).
fn field_ref(pod: &Value, pod_ip: Option<&str>, host_ip: &str, path: &str) -> Option<String> {
    let keyed = |prefix: &str| -> Option<String> {
        let key = path
            .strip_prefix(prefix)?
            .strip_prefix("['")?
            .strip_suffix("']")?;
        let map = pod
            .get("metadata")?
            .get(prefix.trim_start_matches("metadata."))?;
        Some(map.get(key)?.as_str()?.to_string())
    };
    let owned = |s: Option<&str>| s.map(str::to_string);
    match path {
        "metadata.name" => owned(str_at(pod, &["metadata", "name"])),
        "metadata.namespace" => owned(str_at(pod, &["metadata", "namespace"])),
        "metadata.uid" => owned(str_at(pod, &["metadata", "uid"])),
        "spec.nodeName" => owned(str_at(pod, &["spec", "nodeName"])),
        "spec.serviceAccountName" => owned(str_at(pod, &["spec", "serviceAccountName"])),
        "status.hostIP" | "status.hostIPs" => Some(host_ip.to_string()),
        "status.podIP" | "status.podIPs" => Some(pod_ip.unwrap_or("").to_string()),
        p if p.starts_with("metadata.labels[") => keyed("metadata.labels"),
        p if p.starts_with("metadata.annotations[") => keyed("metadata.annotations"),
        _ => None,
    }
}

/// A Secret's data, decoded.
fn secret_data(secret: &Value) -> Vec<(String, String)> {
    secret
        .get("data")
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .map(|(k, v)| {
                    let raw = v.as_str().unwrap_or("");
                    let bytes = base64::engine::general_purpose::STANDARD
                        .decode(raw)
                        .unwrap_or_default();
                    (k.clone(), String::from_utf8_lossy(&bytes).into_owned())
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The `KUBERNETES_*` variables every container gets.
fn service_env() -> Vec<(String, String)> {
    let ip = KUBERNETES_SERVICE_IP;
    [
        ("KUBERNETES_SERVICE_HOST", ip.to_string()),
        ("KUBERNETES_SERVICE_PORT", "443".to_string()),
        ("KUBERNETES_SERVICE_PORT_HTTPS", "443".to_string()),
        ("KUBERNETES_PORT", format!("tcp://{ip}:443")),
        ("KUBERNETES_PORT_443_TCP", format!("tcp://{ip}:443")),
        ("KUBERNETES_PORT_443_TCP_PROTO", "tcp".to_string()),
        ("KUBERNETES_PORT_443_TCP_PORT", "443".to_string()),
        ("KUBERNETES_PORT_443_TCP_ADDR", ip.to_string()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect()
}

/// The environment of `container` in `pod`, or the message of a `CreateContainerConfigError`
/// (a Secret or key that is missing and not optional).
pub fn container_env(
    pod: &Value,
    container: &Value,
    pod_ip: Option<&str>,
    lookup: &dyn Lookup,
) -> Result<Vec<(String, String)>, String> {
    let ns = str_at(pod, &["metadata", "namespace"]).unwrap_or("");
    let hostname = str_at(pod, &["spec", "hostname"])
        .filter(|h| !h.is_empty())
        .or_else(|| str_at(pod, &["metadata", "name"]))
        .unwrap_or("");
    let service = service_env();
    let mut user: Vec<(String, String)> = Vec::new();
    for from in container
        .get("envFrom")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let prefix = from.get("prefix").and_then(Value::as_str).unwrap_or("");
        let (kind, source) = match (from.get("secretRef"), from.get("configMapRef")) {
            (Some(s), _) => ("secret", s),
            (None, Some(c)) => ("configmap", c),
            (None, None) => continue,
        };
        let name = source.get("name").and_then(Value::as_str).unwrap_or("");
        let optional = source.get("optional").and_then(Value::as_bool) == Some(true);
        let found = if kind == "secret" {
            lookup.secret(ns, name)
        } else {
            None
        };
        match found {
            Some(obj) => {
                for (k, v) in secret_data(&obj) {
                    user.push((format!("{prefix}{k}"), v));
                }
            }
            None if optional => {}
            None => return Err(format!("{kind} \"{name}\" not found")),
        }
    }
    for e in container
        .get("env")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let Some(name) = e.get("name").and_then(Value::as_str) else {
            continue;
        };
        let value = if let Some(v) = e.get("value").and_then(Value::as_str) {
            let defined = |n: &str| {
                user.iter()
                    .rev()
                    .chain(service.iter())
                    .find(|(k, _)| k == n)
                    .map(|(_, v)| v.clone())
            };
            expand(v, &defined)
        } else if let Some(from) = e.get("valueFrom") {
            if let Some(path) = str_at(from, &["fieldRef", "fieldPath"]) {
                field_ref(pod, pod_ip, lookup.host_ip(), path).unwrap_or_default()
            } else if let Some(r) = from.get("secretKeyRef") {
                let sname = r.get("name").and_then(Value::as_str).unwrap_or("");
                let key = r.get("key").and_then(Value::as_str).unwrap_or("");
                let optional = r.get("optional").and_then(Value::as_bool) == Some(true);
                match lookup.secret(ns, sname) {
                    Some(obj) => match secret_data(&obj).into_iter().find(|(k, _)| k == key) {
                        Some((_, v)) => v,
                        None if optional => continue,
                        None => {
                            return Err(format!("couldn't find key {key} in Secret {ns}/{sname}"));
                        }
                    },
                    None if optional => continue,
                    None => return Err(format!("secret \"{sname}\" not found")),
                }
            } else if let Some(r) = from.get("configMapKeyRef") {
                let cname = r.get("name").and_then(Value::as_str).unwrap_or("");
                if r.get("optional").and_then(Value::as_bool) == Some(true) {
                    continue;
                }
                return Err(format!("configmap \"{cname}\" not found"));
            } else {
                continue;
            }
        } else {
            String::new()
        };
        user.push((name.to_string(), value));
    }
    let mut env = vec![
        ("PATH".to_string(), DEFAULT_PATH.to_string()),
        ("HOSTNAME".to_string(), hostname.to_string()),
    ];
    let user_has = |n: &str| user.iter().any(|(k, _)| k == n);
    let extra: Vec<(String, String)> = service.into_iter().filter(|(k, _)| !user_has(k)).collect();
    let has_home = user_has("HOME");
    env.extend(user);
    env.extend(extra);
    if !has_home {
        env.push(("HOME".to_string(), "/root".to_string()));
    }
    Ok(env)
}

/// The fake images' default command (see [`argv`]).
pub const DEFAULT_COMMAND: [&str; 3] = ["sh", "-c", "trap 'exit 0' TERM; sleep infinity & wait"];

/// The main process's argv: `command` then `args`, with `$(VAR)` references expanded. With
/// neither, the fake image's default command: a keep-alive that exits 0 on SIGTERM, as the
/// servers most images start do (a stop does not wait out the grace period); `args` alone
/// replace that default (the fake images have no entrypoint).
pub fn argv(container: &Value, env: &[(String, String)]) -> Vec<String> {
    image_argv(container, env, None)
}

/// The main process's argv as [`argv`] makes it, with `program` (the image's, see
/// [`crate::images::Images::program`]) in place of the keep-alive default when given.
pub fn image_argv(
    container: &Value,
    env: &[(String, String)],
    program: Option<&str>,
) -> Vec<String> {
    let defined = |n: &str| {
        env.iter()
            .rev()
            .find(|(k, _)| k == n)
            .map(|(_, v)| v.clone())
    };
    let list = |k: &str| -> Vec<String> {
        container
            .get(k)
            .and_then(Value::as_array)
            .map(|l| {
                l.iter()
                    .filter_map(Value::as_str)
                    .map(|s| expand(s, &defined))
                    .collect()
            })
            .unwrap_or_default()
    };
    let mut argv = list("command");
    argv.extend(list("args"));
    if argv.is_empty() {
        argv = match program {
            Some(p) => vec![p.to_string()],
            None => DEFAULT_COMMAND.iter().map(|s| s.to_string()).collect(),
        };
    }
    argv
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    struct Secrets(Vec<Value>);

    impl Lookup for Secrets {
        fn secret(&self, ns: &str, name: &str) -> Option<Value> {
            self.0
                .iter()
                .find(|s| {
                    str_at(s, &["metadata", "namespace"]) == Some(ns)
                        && str_at(s, &["metadata", "name"]) == Some(name)
                })
                .cloned()
        }

        fn host_ip(&self) -> &str {
            crate::pod::HOST_IP
        }
    }

    fn pod() -> Value {
        json!({
            "metadata": { "name": "p", "namespace": "n", "uid": "u1", "labels": { "app": "x" } },
            "spec": { "serviceAccountName": "sa" },
        })
    }

    fn get<'a>(env: &'a [(String, String)], k: &str) -> Option<&'a str> {
        env.iter()
            .rev()
            .find(|(n, _)| n == k)
            .map(|(_, v)| v.as_str())
    }

    #[test]
    fn expansion_replaces_defined_names_and_keeps_the_rest() {
        let lookup = |n: &str| (n == "A").then(|| "1".to_string());
        assert_eq!(expand("x$(A)y", &lookup), "x1y");
        assert_eq!(expand("$(B)", &lookup), "$(B)");
        assert_eq!(expand("$$(A) $$ $x $(", &lookup), "$(A) $ $x $(");
        assert_eq!(expand("€$(A)€", &lookup), "€1€");
    }

    #[test]
    fn the_environment_has_path_hostname_user_values_services_and_home_in_order() {
        let c = json!({ "env": [
            { "name": "A", "value": "a" },
            { "name": "B", "value": "$(A)-$(KUBERNETES_SERVICE_PORT)" },
            { "name": "POD", "valueFrom": { "fieldRef": { "fieldPath": "metadata.name" } } },
            { "name": "IP", "valueFrom": { "fieldRef": { "fieldPath": "status.podIP" } } },
            { "name": "APP", "valueFrom": { "fieldRef": { "fieldPath": "metadata.labels['app']" } } },
        ] });
        let env =
            container_env(&pod(), &c, Some("10.244.0.9"), &Secrets(vec![])).unwrap_or_default();
        let names: Vec<&str> = env.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(names.first(), Some(&"PATH"));
        assert_eq!(names.get(1), Some(&"HOSTNAME"));
        assert_eq!(names.last(), Some(&"HOME"));
        assert_eq!(get(&env, "HOSTNAME"), Some("p"));
        assert_eq!(get(&env, "B"), Some("a-443"));
        assert_eq!(get(&env, "POD"), Some("p"));
        assert_eq!(get(&env, "IP"), Some("10.244.0.9"));
        assert_eq!(get(&env, "APP"), Some("x"));
        assert_eq!(get(&env, "KUBERNETES_SERVICE_HOST"), Some("10.96.0.1"));
    }

    #[test]
    fn secret_references_resolve_or_give_the_config_error() {
        let secret = json!({
            "metadata": { "name": "s", "namespace": "n" },
            "data": { "token": "c2VjcmV0" },
        });
        let secrets = Secrets(vec![secret]);
        let c = |name: &str, key: &str, optional: bool| {
            json!({ "env": [ { "name": "T", "valueFrom": { "secretKeyRef": {
                "name": name, "key": key, "optional": optional } } } ] })
        };
        let env = container_env(&pod(), &c("s", "token", false), None, &secrets);
        assert_eq!(
            env.as_deref().ok().and_then(|e| get(e, "T")),
            Some("secret")
        );
        assert_eq!(
            container_env(&pod(), &c("nope", "token", false), None, &secrets).err(),
            Some("secret \"nope\" not found".to_string())
        );
        assert_eq!(
            container_env(&pod(), &c("s", "other", false), None, &secrets).err(),
            Some("couldn't find key other in Secret n/s".to_string())
        );
        let optional = container_env(&pod(), &c("nope", "token", true), None, &secrets);
        assert_eq!(optional.as_deref().ok().and_then(|e| get(e, "T")), None);
    }

    #[test]
    fn env_from_a_secret_adds_every_key_with_the_prefix() {
        let secret = json!({
            "metadata": { "name": "s", "namespace": "n" },
            "data": { "a": "MQ==" },
        });
        let c = json!({ "envFrom": [ { "secretRef": { "name": "s" }, "prefix": "S_" } ] });
        let env = container_env(&pod(), &c, None, &Secrets(vec![secret])).unwrap_or_default();
        assert_eq!(get(&env, "S_a"), Some("1"));
    }

    #[test]
    fn argv_is_command_then_args_or_the_keep_alive_default() {
        let env = vec![("X".to_string(), "v".to_string())];
        assert_eq!(
            argv(
                &json!({ "command": ["sh", "-c"], "args": ["echo $(X)"] }),
                &env
            ),
            ["sh", "-c", "echo v"]
        );
        assert_eq!(argv(&json!({}), &env), DEFAULT_COMMAND);
        assert_eq!(argv(&json!({ "args": ["true"] }), &env), ["true"]);
    }
}
