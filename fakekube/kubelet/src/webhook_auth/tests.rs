use super::*;
use crate::tls::{ClientCertificate, TlsMaterial, generate};
use http::{HeaderValue, Request};
use tokio_rustls::rustls::pki_types::CertificateDer;
use tokio_rustls::rustls::pki_types::pem::PemObject;

/// The API server's side of the reviews, scripted: the tokens it knows, the subresources it
/// allows, whether it answers at all; every review it was asked, in order.
#[derive(Debug, Default)]
struct Server {
    /// Token → the user name it is, with its groups.
    users: Vec<(&'static str, &'static str, Vec<&'static str>)>,
    /// (user, subresource) pairs allowed.
    allowed: Vec<(&'static str, &'static str)>,
    /// (user, subresource) pairs denied outright.
    denied: Vec<(&'static str, &'static str)>,
    /// Whether every review fails (the API server cannot be reached).
    down: bool,
    /// The reviews asked: the collection and the review.
    asked: Mutex<Vec<(String, Value)>>,
}

impl Reviews for Server {
    fn create_review(&self, path: &str, review: &Value) -> Result<Arc<Value>, ApiError> {
        lock(&self.asked).push((path.to_string(), review.clone()));
        if self.down {
            return Err(ApiError::internal("the API server did not answer"));
        }
        let spec = &review["spec"];
        let status = if path == TOKEN_REVIEWS {
            let token = spec["token"].as_str().unwrap_or("");
            match self.users.iter().find(|(t, _, _)| *t == token) {
                Some((_, name, groups)) => json!({
                    "authenticated": true,
                    "user": { "username": name, "uid": "u-1", "groups": groups },
                }),
                None => json!({ "user": {}, "error": "invalid bearer token" }),
            }
        } else {
            let user = spec["user"].as_str().unwrap_or("");
            let sub = spec["resourceAttributes"]["subresource"]
                .as_str()
                .unwrap_or("");
            json!({
                "allowed": self.allowed.contains(&(user, sub)),
                "denied": self.denied.contains(&(user, sub)),
            })
        };
        let mut answer = review.clone();
        answer["status"] = status;
        Ok(Arc::new(answer))
    }
}

impl Server {
    /// The reviews asked so far, by collection: (TokenReviews, SubjectAccessReviews).
    fn counts(&self) -> (usize, usize) {
        let asked = lock(&self.asked);
        let tokens = asked.iter().filter(|(p, _)| p == TOKEN_REVIEWS).count();
        (tokens, asked.len() - tokens)
    }

    /// The specs of the SubjectAccessReviews asked, in order.
    fn access_specs(&self) -> Vec<Value> {
        lock(&self.asked)
            .iter()
            .filter(|(p, _)| p == SUBJECT_ACCESS_REVIEWS)
            .map(|(_, r)| r["spec"].clone())
            .collect()
    }
}

/// The cluster's CA and the access of a node that trusts it, asking `server`.
fn node_access(server: Server) -> (TlsMaterial, Arc<Server>, WebhookAccess) {
    let cluster = generate(&[]).expect("TLS material");
    let ca = ClientCa::from_pem(cluster.ca_pem.as_bytes()).expect("a client CA");
    let server = Arc::new(server);
    let access = WebhookAccess::new(ca, server.clone());
    (cluster, server, access)
}

/// A request's parts with `headers` and, when given, the client certificate its connection
/// presented.
fn request(headers: &[(&str, &str)], certificate: Option<&ClientCertificate>) -> Parts {
    let mut builder = Request::builder().uri("/pods");
    for (k, v) in headers {
        builder = builder.header(*k, HeaderValue::from_str(v).expect("a header value"));
    }
    let (mut parts, ()) = builder.body(()).expect("a request").into_parts();
    if let Some(c) = certificate {
        let der = CertificateDer::from_pem_slice(c.cert_pem.as_bytes()).expect("a certificate PEM");
        parts.extensions.insert(PeerCertificate(Arc::new(der)));
    }
    parts
}

#[test]
fn a_request_without_credentials_is_unauthorized_and_asks_nothing() {
    let (_, server, access) = node_access(Server::default());
    let refused = access.caller_allowed(&request(&[], None), "worker-1", &["proxy"], "create");
    assert_eq!(refused, Err(Refusal::Unauthorized));
    assert_eq!(server.counts(), (0, 0));
}

#[test]
fn a_certificate_of_the_client_ca_is_its_common_name_in_its_organization() {
    let (cluster, server, access) = node_access(Server {
        allowed: vec![("kube-apiserver-kubelet-client", "proxy")],
        ..Server::default()
    });
    let cert = cluster
        .ca
        .issue_client("kube-apiserver-kubelet-client", &["system:masters"])
        .expect("issued");
    let parts = request(&[], Some(&cert));
    assert_eq!(
        access.caller_allowed(&parts, "worker-1", &["proxy"], "create"),
        Ok(())
    );
    let specs = server.access_specs();
    assert_eq!(specs.len(), 1);
    let spec = &specs[0];
    assert_eq!(spec["user"], "kube-apiserver-kubelet-client");
    assert_eq!(
        spec["groups"],
        json!(["system:masters", "system:authenticated"])
    );
    assert!(
        spec["extra"][CREDENTIAL_ID][0]
            .as_str()
            .is_some_and(|id| id.starts_with("X509SHA256=")),
        "{spec}"
    );
    assert_eq!(
        spec["resourceAttributes"],
        json!({
            "verb": "create",
            "version": "v1",
            "resource": "nodes",
            "subresource": "proxy",
            "name": "worker-1",
        })
    );
    assert_eq!(server.counts().0, 0, "a certificate needs no TokenReview");
}

#[test]
fn a_certificate_of_another_ca_names_no_one_but_a_token_beside_it_is_still_tried() {
    let (_, server, access) = node_access(Server {
        users: vec![("alices-token", "alice", vec!["devs"])],
        allowed: vec![
            ("alice", "proxy"),
            ("kube-apiserver-kubelet-client", "proxy"),
        ],
        ..Server::default()
    });
    let stranger = generate(&[])
        .expect("TLS material")
        .ca
        .issue_client("kube-apiserver-kubelet-client", &["system:masters"])
        .expect("issued");
    let alone = request(&[], Some(&stranger));
    assert_eq!(
        access.caller_allowed(&alone, "worker-1", &["proxy"], "get"),
        Err(Refusal::Unauthorized)
    );
    let with_token = request(&[("authorization", "Bearer alices-token")], Some(&stranger));
    assert_eq!(
        access.caller_allowed(&with_token, "worker-1", &["proxy"], "get"),
        Ok(())
    );
    assert_eq!(server.access_specs()[0]["user"], "alice");
}

#[test]
fn a_token_is_reviewed_once_and_each_subresource_asked_in_turn() {
    let (_, server, access) = node_access(Server {
        users: vec![("bobs-token", "bob", vec!["system:authenticated"])],
        allowed: vec![("bob", "proxy")],
        ..Server::default()
    });
    let parts = request(&[("authorization", "bearer bobs-token")], None);
    for _ in 0..2 {
        assert_eq!(
            access.caller_allowed(&parts, "worker-1", &["pods", "proxy"], "get"),
            Ok(())
        );
    }
    assert_eq!(
        server.counts(),
        (1, 2),
        "the second request is answered from the caches"
    );
    let specs = server.access_specs();
    assert_eq!(specs[0]["resourceAttributes"]["subresource"], "pods");
    assert_eq!(specs[1]["resourceAttributes"]["subresource"], "proxy");
    assert_eq!(specs[0]["uid"], "u-1");
    assert_eq!(
        specs[0]["groups"],
        json!(["system:authenticated"]),
        "the group is not added twice"
    );
}

#[test]
fn a_user_no_review_allows_is_forbidden_by_name() {
    let (_, _, access) = node_access(Server {
        users: vec![("carols-token", "carol", vec![])],
        denied: vec![("carol", "pods")],
        ..Server::default()
    });
    let parts = request(&[("Authorization", "Bearer carols-token")], None);
    assert_eq!(
        access.caller_allowed(&parts, "worker-1", &["pods", "proxy"], "get"),
        Err(Refusal::Forbidden {
            user: "carol".into()
        })
    );
}

#[test]
fn a_refused_token_is_unauthorized_and_an_unanswered_review_is_asked_again() {
    let (_, server, access) = node_access(Server::default());
    let parts = request(&[("authorization", "Bearer nobodys-token")], None);
    for _ in 0..2 {
        assert_eq!(
            access.caller_allowed(&parts, "worker-1", &["proxy"], "get"),
            Err(Refusal::Unauthorized)
        );
    }
    assert_eq!(
        server.counts(),
        (2, 0),
        "a review that names an error is not kept"
    );
    let (_, server, access) = node_access(Server {
        down: true,
        ..Server::default()
    });
    for _ in 0..2 {
        assert_eq!(
            access.caller_allowed(&parts, "worker-1", &["proxy"], "get"),
            Err(Refusal::Unauthorized)
        );
    }
    assert_eq!(server.counts(), (2, 0));
}

#[test]
fn a_failed_access_review_is_an_authorization_error_naming_its_subresource() {
    let (cluster, _, access) = node_access(Server {
        down: true,
        ..Server::default()
    });
    let cert = cluster.ca.issue_client("dave", &["ops"]).expect("issued");
    assert_eq!(
        access.caller_allowed(
            &request(&[], Some(&cert)),
            "worker-1",
            &["pods", "proxy"],
            "get"
        ),
        Err(Refusal::AuthorizationError {
            user: "dave".into(),
            subresource: "pods".into(),
        })
    );
}

#[test]
fn a_denied_answer_is_kept_thirty_seconds_and_an_allowed_one_five_minutes() {
    let (_, server, access) = node_access(Server {
        allowed: vec![("erin", "proxy")],
        ..Server::default()
    });
    let erin = User {
        name: "erin".into(),
        uid: String::new(),
        groups: vec![AUTHENTICATED.into()],
        extra: BTreeMap::new(),
    };
    let start = Instant::now();
    let ask = |sub: &str, after: u64| {
        access
            .allowed(
                &erin,
                "worker-1",
                sub,
                "get",
                start + Duration::from_secs(after),
            )
            .expect("answered")
    };
    assert!(!ask("pods", 0));
    assert!(!ask("pods", 29));
    assert_eq!(server.counts().1, 1);
    assert!(!ask("pods", 30));
    assert_eq!(server.counts().1, 2, "the denial expired");
    assert!(ask("proxy", 0));
    assert!(ask("proxy", 299));
    assert_eq!(server.counts().1, 3);
    assert!(ask("proxy", 300));
    assert_eq!(server.counts().1, 4, "the allowance expired");
}

#[test]
fn an_answer_both_allowing_and_denying_is_an_error() {
    let (_, _, access) = node_access(Server {
        allowed: vec![("frank", "proxy")],
        denied: vec![("frank", "proxy")],
        ..Server::default()
    });
    let frank = User {
        name: "frank".into(),
        uid: String::new(),
        groups: Vec::new(),
        extra: BTreeMap::new(),
    };
    assert!(
        access
            .allowed(&frank, "worker-1", "proxy", "get", Instant::now())
            .is_err()
    );
}

#[test]
fn bearer_tokens_are_read_as_the_api_servers_authenticator_reads_them() {
    let token = |v: &str| {
        let parts = request(&[("authorization", v)], None);
        bearer_token(&parts).map(str::to_string)
    };
    assert_eq!(token("Bearer abc").as_deref(), Some("abc"));
    assert_eq!(token("  BEARER abc  ").as_deref(), Some("abc"));
    assert_eq!(token("Bearer abc def").as_deref(), Some("abc"));
    assert_eq!(token("Bearer  abc"), None, "an empty token before a space");
    assert_eq!(token("Basic abc"), None);
    assert_eq!(token("Bearer"), None);
}

#[test]
fn a_websocket_subprotocol_token_is_reviewed_when_no_header_names_one() {
    let (_, server, access) = node_access(Server {
        users: vec![("grace-token", "grace", vec![])],
        allowed: vec![("grace", "proxy")],
        ..Server::default()
    });
    use base64::Engine;
    let encoded = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode("grace-token");
    let protocols = format!("v5.channel.k8s.io, base64url.bearer.authorization.k8s.io.{encoded}");
    let parts = request(
        &[
            ("connection", "Upgrade"),
            ("upgrade", "websocket"),
            ("sec-websocket-protocol", &protocols),
        ],
        None,
    );
    assert_eq!(
        access.caller_allowed(&parts, "worker-1", &["proxy"], "create"),
        Ok(())
    );
    assert_eq!(server.counts(), (1, 1));
}
