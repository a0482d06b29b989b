//! The checks a pool's cluster must pass before sandboxes can be made there: the namespace
//! exists, the warm pool and its SandboxTemplate exist, and the credentials hold every
//! permission of the provider page's Role (asked through `SelfSubjectAccessReview`, as
//! `kubectl auth can-i` does). Each problem comes with its fix.

use serde_json::{Value, json};

use crate::client::{KubeClient, KubeError};

/// One permission of the Role: an API group, a resource (with its subresource), a verb.
pub(crate) struct Permission {
    /// The API group (`""` for the core group).
    pub(crate) group: &'static str,
    /// The resource.
    pub(crate) resource: &'static str,
    /// The subresource, or `""`.
    pub(crate) subresource: &'static str,
    /// The verbs.
    pub(crate) verbs: &'static [&'static str],
}

/// The Role of the provider page (`fixtures/rbac/differently-sandboxes-role.yaml`).
pub(crate) const ROLE: [Permission; 5] = [
    Permission {
        group: "agents.x-k8s.io",
        resource: "sandboxes",
        subresource: "",
        verbs: &["get", "list", "create", "patch", "delete"],
    },
    Permission {
        group: "extensions.agents.x-k8s.io",
        resource: "sandboxclaims",
        subresource: "",
        verbs: &["get", "list", "create", "patch", "delete"],
    },
    Permission {
        group: "extensions.agents.x-k8s.io",
        resource: "sandboxwarmpools",
        subresource: "",
        verbs: &["get"],
    },
    Permission {
        group: "",
        resource: "pods",
        subresource: "",
        verbs: &["get"],
    },
    Permission {
        group: "",
        resource: "pods",
        subresource: "exec",
        verbs: &["get", "create"],
    },
];

/// Something a pool's cluster lacks, and how to fix it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PreflightProblem {
    /// What is wrong, in one sentence.
    pub problem: String,
    /// What to do about it.
    pub fix: String,
}

impl std::fmt::Display for PreflightProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}; fix: {}", self.problem, self.fix)
    }
}

/// Why the preflight itself could not run: the API server could not be asked.
#[derive(Debug, thiserror::Error)]
#[error("the preflight could not ask the API server ({what})")]
pub struct PreflightError {
    /// What was being asked.
    what: String,
    /// Why it failed.
    #[source]
    source: sandbox_contract::Error,
}

/// What a check found.
enum Found {
    /// The object exists (its body).
    Yes(Value),
    /// It does not (404).
    No,
    /// The credentials may not look (403): the permission check reports what is missing.
    Hidden,
}

/// GETs `path`, telling a missing object from one the credentials may not see.
async fn look(client: &KubeClient, path: &str, what: &str) -> Result<Found, PreflightError> {
    match client.get::<Value>(path).await {
        Ok(body) => Ok(Found::Yes(body)),
        Err(e) if e.is_not_found() => Ok(Found::No),
        Err(e) if e.code() == Some(403) => Ok(Found::Hidden),
        Err(e) => Err(failed(what, e)),
    }
}

/// Wraps a failed request.
fn failed(what: &str, error: KubeError) -> PreflightError {
    PreflightError {
        what: what.to_owned(),
        source: error.into(),
    }
}

/// Runs every check for a pool in `namespace` (claiming from `warm_pool`, if any) and returns
/// the problems found, in order: namespace, warm pool, template, permissions.
pub(crate) async fn check(
    client: &KubeClient,
    pool: &str,
    namespace: &str,
    warm_pool: Option<&str>,
) -> Result<Vec<PreflightProblem>, PreflightError> {
    let mut problems = Vec::new();
    let ns_path = format!("/api/v1/namespaces/{namespace}");
    if let Found::No = look(client, &ns_path, "the namespace").await? {
        problems.push(PreflightProblem {
            problem: format!("pool {pool}: namespace {namespace} does not exist"),
            fix: format!(
                "create it (kubectl create namespace {namespace}), or set the pool's config.namespace"
            ),
        });
        // Nothing else can exist in it; permissions are still worth reporting.
    } else if let Some(warm) = warm_pool {
        let path = format!(
            "/apis/extensions.agents.x-k8s.io/v1beta1/namespaces/{namespace}/sandboxwarmpools/{warm}"
        );
        match look(client, &path, "the warm pool").await? {
            Found::No => problems.push(PreflightProblem {
                problem: format!(
                    "pool {pool}: SandboxWarmPool {warm} does not exist in namespace {namespace}"
                ),
                fix: format!(
                    "create a SandboxTemplate and a SandboxWarmPool named {warm} there (as \
                     fixtures/live/warm-pool.yaml does), or set the pool's config.warmPool"
                ),
            }),
            Found::Yes(body) => {
                let template = body
                    .pointer("/spec/sandboxTemplateRef/name")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned();
                let path = format!(
                    "/apis/extensions.agents.x-k8s.io/v1beta1/namespaces/{namespace}/sandboxtemplates/{template}"
                );
                if template.is_empty() {
                    problems.push(PreflightProblem {
                        problem: format!("pool {pool}: SandboxWarmPool {warm} names no template"),
                        fix: "set its spec.sandboxTemplateRef.name".to_owned(),
                    });
                } else if let Found::No = look(client, &path, "the template").await? {
                    problems.push(PreflightProblem {
                        problem: format!(
                            "pool {pool}: SandboxTemplate {template} of warm pool {warm} does not \
                             exist in namespace {namespace}"
                        ),
                        fix: format!("create SandboxTemplate {template} in namespace {namespace}"),
                    });
                }
            }
            Found::Hidden => {}
        }
    }
    for permission in &ROLE {
        let mut missing = Vec::new();
        for verb in permission.verbs {
            if !allowed(client, namespace, permission, verb).await? {
                missing.push(*verb);
            }
        }
        if !missing.is_empty() {
            let resource = match (permission.group, permission.subresource) {
                ("", "") => permission.resource.to_owned(),
                ("", sub) => format!("{}/{sub}", permission.resource),
                (group, _) => format!("{}.{group}", permission.resource),
            };
            problems.push(PreflightProblem {
                problem: format!(
                    "pool {pool}: the credentials may not {} {resource} in namespace {namespace}",
                    missing.join(", ")
                ),
                fix: format!(
                    "bind the provider's Role (fixtures/rbac/differently-sandboxes-role.yaml) to \
                     this user in namespace {namespace}; check with kubectl auth can-i {} {resource} \
                     -n {namespace}",
                    missing[0]
                ),
            });
        }
    }
    Ok(problems)
}

/// Asks whether the credentials may `verb` the `permission`'s resource in `namespace`.
async fn allowed(
    client: &KubeClient,
    namespace: &str,
    permission: &Permission,
    verb: &str,
) -> Result<bool, PreflightError> {
    let review = json!({
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SelfSubjectAccessReview",
        "spec": {"resourceAttributes": {
            "namespace": namespace,
            "verb": verb,
            "group": permission.group,
            "resource": permission.resource,
            "subresource": permission.subresource,
        }},
    });
    let answer: Value = client
        .create(
            "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
            &review,
        )
        .await
        .map_err(|e| failed("a SelfSubjectAccessReview", e))?;
    Ok(answer.pointer("/status/allowed").and_then(Value::as_bool) == Some(true))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_role_is_the_fixture_role() {
        let text = include_str!("../../fixtures/rbac/differently-sandboxes-role.yaml");
        let doc: Value = serde_saphyr::from_str(text).unwrap();
        let mut from_file = Vec::new();
        for rule in doc["rules"].as_array().unwrap() {
            for resource in rule["resources"].as_array().unwrap() {
                let (resource, sub) = resource
                    .as_str()
                    .unwrap()
                    .split_once('/')
                    .unwrap_or((resource.as_str().unwrap(), ""));
                let verbs: Vec<&str> = rule["verbs"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|v| v.as_str().unwrap())
                    .collect();
                from_file.push((
                    rule["apiGroups"][0].as_str().unwrap().to_owned(),
                    resource.to_owned(),
                    sub.to_owned(),
                    verbs.join(","),
                ));
            }
        }
        let from_code: Vec<_> = ROLE
            .iter()
            .map(|p| {
                (
                    p.group.to_owned(),
                    p.resource.to_owned(),
                    p.subresource.to_owned(),
                    p.verbs.join(","),
                )
            })
            .collect();
        assert_eq!(from_code, from_file);
    }

    #[test]
    fn a_problem_prints_with_its_fix() {
        let problem = PreflightProblem {
            problem: "pool k8s: namespace x does not exist".into(),
            fix: "create it".into(),
        };
        assert_eq!(
            problem.to_string(),
            "pool k8s: namespace x does not exist; fix: create it"
        );
    }
}
