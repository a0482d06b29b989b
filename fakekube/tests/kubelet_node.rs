//! fakekube's kubelet as a node of a cluster (`fakekube::KubeletNode`, `fakekube kubelet`),
//! driven only through the Kubernetes API over HTTPS: here the cluster is a fakekube process
//! started without a kubelet of its own (`--api-only`), as the upstream control plane is
//! (`ci/upstream-up.sh`).

mod support;

use std::io::{Read, Write};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::authentication::v1::TokenRequest;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{
    Node, PersistentVolume, PersistentVolumeClaim, Pod, ServiceAccount,
};
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding};
use kube::Api;
use kube::api::{DeleteParams, PostParams};
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, SignatureScheme};
use serde_json::json;
use support::process::{Process, kube_client};

/// The node's client certificate and key, from the kind-style kubeconfig the binary wrote.
struct Credentials {
    ca_pem: Vec<u8>,
    cert_pem: Vec<u8>,
    key_pem: Vec<u8>,
}

fn credentials(kubeconfig: &std::path::Path) -> Credentials {
    use base64::Engine;
    let text = std::fs::read_to_string(kubeconfig).expect("the kubeconfig was written");
    let field = |key: &str| {
        let value = text
            .lines()
            .find_map(|l| l.trim().strip_prefix(key))
            .unwrap_or_else(|| panic!("the kubeconfig has no {key}"));
        base64::engine::general_purpose::STANDARD
            .decode(value.trim())
            .expect("base64")
    };
    Credentials {
        ca_pem: field("certificate-authority-data:"),
        cert_pem: field("client-certificate-data:"),
        key_pem: field("client-key-data:"),
    }
}

/// A client certificate for `user` in `group` from a CA of its own, not the cluster's.
fn stranger(user: &str, group: &str) -> Credentials {
    use rcgen::{
        BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose,
        IsCa, Issuer, KeyPair,
    };
    let ca_key = KeyPair::generate().expect("a key");
    let mut ca = CertificateParams::default();
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca_cert = ca.self_signed(&ca_key).expect("a CA certificate");
    let issuer = Issuer::new(ca, ca_key);
    let key = KeyPair::generate().expect("a key");
    let mut params = CertificateParams::default();
    let mut dn = DistinguishedName::new();
    dn.push(DnType::OrganizationName, group);
    dn.push(DnType::CommonName, user);
    params.distinguished_name = dn;
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
    let cert = params
        .signed_by(&key, &issuer)
        .expect("a client certificate");
    Credentials {
        ca_pem: ca_cert.pem().into_bytes(),
        cert_pem: cert.pem().into_bytes(),
        key_pem: key.serialize_pem().into_bytes(),
    }
}

/// Creates service account `name` in `default` and returns a TokenRequest token for it.
async fn service_account_token(client: &kube::Client, name: &str) -> String {
    let accounts: Api<ServiceAccount> = Api::namespaced(client.clone(), "default");
    let account: ServiceAccount =
        serde_json::from_value(json!({ "metadata": { "name": name } })).expect("an account");
    accounts
        .create(&PostParams::default(), &account)
        .await
        .expect("the service account is created");
    let request: TokenRequest =
        serde_json::from_value(json!({ "spec": {} })).expect("a TokenRequest");
    accounts
        .create_token_request(name, &PostParams::default(), &request)
        .await
        .expect("a token is issued")
        .status
        .and_then(|s| s.token)
        .expect("a token")
}

/// Accepts the node's serving certificate unchecked (a cluster's API server does not check
/// it either unless given `--kubelet-certificate-authority`).
#[derive(Debug)]
struct AnyServer(Arc<rustls::crypto::CryptoProvider>);

impl ServerCertVerifier for AnyServer {
    fn verify_server_cert(
        &self,
        _: &CertificateDer<'_>,
        _: &[CertificateDer<'_>],
        _: &ServerName<'_>,
        _: &[u8],
        _: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// `GET path` from the kubelet API at `addr`, presenting `client` when given; the status line
/// and body, or the TLS error.
fn kubelet_get(
    addr: SocketAddr,
    client: Option<&Credentials>,
    path: &str,
) -> Result<(String, String), String> {
    kubelet_request(addr, client, None, "GET", path)
}

/// `METHOD path` to the kubelet API at `addr`, presenting `client`'s certificate and `token`
/// as a bearer token when given; the status line and body, or the TLS error.
fn kubelet_request(
    addr: SocketAddr,
    client: Option<&Credentials>,
    token: Option<&str>,
    method: &str,
    path: &str,
) -> Result<(String, String), String> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .expect("TLS versions")
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(AnyServer(provider)));
    let config = match client {
        Some(c) => builder
            .with_client_auth_cert(
                CertificateDer::pem_slice_iter(&c.cert_pem)
                    .collect::<Result<Vec<_>, _>>()
                    .expect("certificate PEM"),
                PrivateKeyDer::from_pem_slice(&c.key_pem).expect("key PEM"),
            )
            .expect("client auth"),
        None => builder.with_no_client_auth(),
    };
    let name = ServerName::try_from("127.0.0.1").expect("a name");
    let mut conn =
        rustls::ClientConnection::new(Arc::new(config), name).map_err(|e| e.to_string())?;
    let mut tcp = std::net::TcpStream::connect(addr).map_err(|e| e.to_string())?;
    let mut tls = rustls::Stream::new(&mut conn, &mut tcp);
    let authorization = token
        .map(|t| format!("Authorization: Bearer {t}\r\n"))
        .unwrap_or_default();
    write!(
        tls,
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n{authorization}Content-Length: 0\r\nConnection: close\r\n\r\n"
    )
    .map_err(|e| e.to_string())?;
    let mut raw = Vec::new();
    match tls.read_to_end(&mut raw) {
        Ok(_) => {}
        Err(e) if raw.is_empty() => return Err(e.to_string()),
        Err(_) => {}
    }
    let text = String::from_utf8_lossy(&raw).to_string();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    Ok((
        head.lines().next().unwrap_or("").to_string(),
        body.to_string(),
    ))
}

/// Polls `check` every 20 ms for up to 60 s (generous: a loaded machine is slow, and the poll
/// returns as soon as `check` holds).
async fn eventually<T>(what: &str, mut check: impl AsyncFnMut() -> Option<T>) -> T {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    while tokio::time::Instant::now() < deadline {
        if let Some(v) = check().await {
            return v;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("timed out waiting for {what}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kubelet_joins_a_cluster_through_the_api_and_runs_its_pods() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let node_kubeconfig = dir.path().join("node.kubeconfig");
    // fakekube's RBAC has no Node authorizer (upstream's Node,RBAC is what the upstream stack
    // checks): the node's certificate is in `system:masters` here.
    let cluster = Process::start(&[
        "--api-only",
        "--client-cert-kubeconfig",
        node_kubeconfig.to_str().expect("UTF-8"),
        "--client-cert-user",
        "system:node:worker-1",
        "--client-cert-group",
        "system:masters",
    ]);
    let creds = credentials(&node_kubeconfig);
    let ca_file = cluster.dir().join("ca.crt");
    std::fs::write(&ca_file, &creds.ca_pem).expect("CA written");

    let node = fakekube::KubeletNode::start(fakekube::NodeConfig {
        kubeconfig: node_kubeconfig.clone(),
        node_name: "worker-1".into(),
        client_ca_file: ca_file,
        port: 0,
        pod_subnet: 7,
        provision_volumes: true,
        kubernetes_minor: 36,
        missing_images: Vec::new(),
    })
    .await
    .expect("the kubelet joins");
    let client = kube_client(&cluster.kubeconfig).await;

    // The Node, registered through the API, advertising the kubelet API's port on loopback.
    let nodes: Api<Node> = Api::all(client.clone());
    let registered = eventually("the Node", async || {
        nodes.get_opt("worker-1").await.ok().flatten()
    })
    .await;
    let status = registered.status.clone().unwrap_or_default();
    let port = status
        .daemon_endpoints
        .and_then(|d| d.kubelet_endpoint)
        .map(|e| e.port);
    assert_eq!(port, Some(i32::from(node.addr().port())));
    let addresses = status.addresses.unwrap_or_default();
    assert!(
        addresses
            .iter()
            .any(|a| a.type_ == "InternalIP" && a.address == "127.0.0.1"),
        "{addresses:?}"
    );
    let leases: Api<Lease> = Api::namespaced(client.clone(), "kube-node-lease");
    let lease = eventually("the Lease", async || {
        leases.get_opt("worker-1").await.ok().flatten()
    })
    .await;
    assert_eq!(
        lease.spec.and_then(|s| s.holder_identity).as_deref(),
        Some("worker-1")
    );

    // A pod bound to the node runs there, and its output is served by the kubelet API.
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    let pod: Pod = serde_json::from_value(json!({
        "metadata": { "name": "on-worker" },
        "spec": {
            "nodeName": "worker-1",
            "containers": [ {
                "name": "main",
                "image": "busybox",
                "command": ["sh", "-c", "echo hello-from-worker-1; sleep 3600"],
            } ],
        },
    }))
    .expect("a pod");
    pods.create(&PostParams::default(), &pod)
        .await
        .expect("created");
    let running = eventually("the pod to run", async || {
        pods.get("on-worker")
            .await
            .ok()
            .filter(|p| p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running"))
    })
    .await;
    let status = running.status.unwrap_or_default();
    assert!(
        status
            .pod_ip
            .as_deref()
            .is_some_and(|ip| ip.starts_with("10.244.7.")),
        "{:?}",
        status.pod_ip
    );
    assert_eq!(status.host_ip.as_deref(), Some("127.0.0.1"));
    let addr = node.addr();
    let logs = eventually("the container's log", async || {
        let creds = credentials(&node_kubeconfig);
        tokio::task::spawn_blocking(move || {
            kubelet_get(addr, Some(&creds), "/containerLogs/default/on-worker/main")
        })
        .await
        .ok()
        .and_then(Result::ok)
        .filter(|(_, body)| body.contains("hello-from-worker-1"))
    })
    .await;
    assert!(logs.0.contains("200"), "{logs:?}");
    // Without a client certificate of the cluster's CA the kubelet API lets nobody in.
    let anonymous = tokio::task::spawn_blocking(move || kubelet_get(addr, None, "/pods"))
        .await
        .expect("joined");
    assert!(
        anonymous.as_ref().is_err() || anonymous.as_ref().is_ok_and(|(s, _)| !s.contains("200")),
        "{anonymous:?}"
    );

    // A pending claim gets a volume provisioned for it, pre-bound by its uid.
    let claims: Api<PersistentVolumeClaim> = Api::namespaced(client.clone(), "default");
    let claim: PersistentVolumeClaim = serde_json::from_value(json!({
        "metadata": { "name": "data" },
        "spec": {
            "accessModes": ["ReadWriteOnce"],
            "resources": { "requests": { "storage": "1Gi" } },
        },
    }))
    .expect("a claim");
    let claim = claims
        .create(&PostParams::default(), &claim)
        .await
        .expect("created");
    let uid = claim.metadata.uid.unwrap_or_default();
    let volumes: Api<PersistentVolume> = Api::all(client.clone());
    let volume = eventually("the volume", async || {
        volumes.get_opt(&format!("pvc-{uid}")).await.ok().flatten()
    })
    .await;
    let spec = volume.spec.unwrap_or_default();
    let affinity = serde_json::to_value(&spec.node_affinity).unwrap_or_default();
    assert_eq!(
        affinity.pointer("/required/nodeSelectorTerms/0/matchExpressions/0/values/0"),
        Some(&json!("worker-1")),
        "the volume is the node's: {affinity}"
    );
    let claim_ref = spec.claim_ref.unwrap_or_default();
    assert_eq!(claim_ref.uid.as_deref(), Some(uid.as_str()));
    assert_eq!(claim_ref.name.as_deref(), Some("data"));

    // A deleted pod is stopped (its shell, as PID 1, outlives SIGTERM: the grace period runs
    // out), then removed by the kubelet's own delete.
    let delete = DeleteParams {
        grace_period_seconds: Some(1),
        ..DeleteParams::default()
    };
    pods.delete("on-worker", &delete).await.expect("deleted");
    eventually("the pod to be gone", async || {
        matches!(pods.get_opt("on-worker").await, Ok(None)).then_some(())
    })
    .await;
    node.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_kubelet_port_lets_in_only_whom_the_cluster_authenticates_and_allows() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let kubelet_client_kubeconfig = dir.path().join("kubelet-client.kubeconfig");
    // The API server's kubelet client certificate, as upstream's: the cluster's CA signed it,
    // for kube-apiserver-kubelet-client in system:masters.
    let cluster = Process::start(&[
        "--api-only",
        "--client-cert-kubeconfig",
        kubelet_client_kubeconfig.to_str().expect("UTF-8"),
        "--client-cert-user",
        "kube-apiserver-kubelet-client",
        "--client-cert-group",
        "system:masters",
    ]);
    let apiserver = credentials(&kubelet_client_kubeconfig);
    let ca_file = cluster.dir().join("ca.crt");
    std::fs::write(&ca_file, &apiserver.ca_pem).expect("CA written");
    // fakekube has no Node authorizer to let a node create reviews: it joins as the admin.
    let node = fakekube::KubeletNode::start(fakekube::NodeConfig {
        kubeconfig: cluster.kubeconfig.clone(),
        node_name: "worker-2".into(),
        client_ca_file: ca_file,
        port: 0,
        pod_subnet: 8,
        provision_volumes: false,
        kubernetes_minor: 36,
        missing_images: Vec::new(),
    })
    .await
    .expect("the kubelet joins");
    let client = kube_client(&cluster.kubeconfig).await;

    // Two service accounts: `prober` bound to a role with nodes/proxy, `reader` to nothing.
    let reader = service_account_token(&client, "reader").await;
    let prober = service_account_token(&client, "prober").await;
    let roles: Api<ClusterRole> = Api::all(client.clone());
    let role: ClusterRole = serde_json::from_value(json!({
        "metadata": { "name": "kubelet-proxy" },
        "rules": [ {
            "apiGroups": [""],
            "resources": ["nodes/proxy"],
            "verbs": ["get", "create"],
        } ],
    }))
    .expect("a role");
    roles
        .create(&PostParams::default(), &role)
        .await
        .expect("created");
    let bindings: Api<ClusterRoleBinding> = Api::all(client.clone());
    let binding: ClusterRoleBinding = serde_json::from_value(json!({
        "metadata": { "name": "prober-kubelet-proxy" },
        "roleRef": {
            "apiGroup": "rbac.authorization.k8s.io",
            "kind": "ClusterRole",
            "name": "kubelet-proxy",
        },
        "subjects": [ { "kind": "ServiceAccount", "name": "prober", "namespace": "default" } ],
    }))
    .expect("a binding");
    bindings
        .create(&PostParams::default(), &binding)
        .await
        .expect("created");

    let addr = node.addr();
    let ask = |client: Option<Credentials>, token: Option<String>, method: &str, path: &str| {
        let (method, path) = (method.to_string(), path.to_string());
        async move {
            tokio::task::spawn_blocking(move || {
                kubelet_request(addr, client.as_ref(), token.as_deref(), &method, &path)
            })
            .await
            .expect("joined")
            .expect("the TLS handshake succeeds")
        }
    };
    let exec = "/exec/default/any/main?command=sh&output=1";

    // Anonymous: 401, for a read and for exec alike.
    let anonymous = ask(None, None, "GET", "/pods").await;
    assert_eq!(
        anonymous,
        ("HTTP/1.1 401 Unauthorized".into(), "Unauthorized".into())
    );
    let anonymous_exec = ask(None, None, "POST", exec).await;
    assert_eq!(anonymous_exec.0, "HTTP/1.1 401 Unauthorized");
    let unknown_token = ask(None, Some("not-a-token".into()), "GET", "/pods").await;
    assert_eq!(unknown_token.0, "HTTP/1.1 401 Unauthorized");

    // A certificate of another CA is requested, not refused in the handshake (Go's
    // tls.RequestClientCert), then fails the x509 authenticator: 401, even for a user in
    // system:masters. A token beside it is still tried.
    let impostor = stranger("kube-apiserver-kubelet-client", "system:masters");
    let wrong_ca = ask(Some(impostor), None, "GET", "/pods").await;
    assert_eq!(
        wrong_ca,
        ("HTTP/1.1 401 Unauthorized".into(), "Unauthorized".into())
    );
    let impostor = stranger("kube-apiserver-kubelet-client", "system:masters");
    let with_token = ask(Some(impostor), Some(prober.clone()), "GET", "/pods").await;
    assert_eq!(with_token.0, "HTTP/1.1 200 OK");

    // A valid token whose user may not use nodes/proxy: the kubelet's 403, by verb and path.
    let forbidden = ask(None, Some(reader.clone()), "GET", "/pods").await;
    assert_eq!(
        forbidden,
        (
            "HTTP/1.1 403 Forbidden".into(),
            "Forbidden (user=system:serviceaccount:default:reader, verb=get, resource=nodes, \
             subresource(s)=[pods proxy])\n"
                .into()
        )
    );
    let forbidden_exec = ask(None, Some(reader), "POST", exec).await;
    assert_eq!(
        forbidden_exec.1,
        "Forbidden (user=system:serviceaccount:default:reader, verb=create, resource=nodes, \
         subresource(s)=[proxy])\n"
    );

    // A token with nodes/proxy, and the API server's own certificate: in.
    let allowed = ask(None, Some(prober.clone()), "GET", "/pods").await;
    assert_eq!(allowed.0, "HTTP/1.1 200 OK");
    assert!(allowed.1.contains("\"PodList\""), "{}", allowed.1);
    let allowed_exec = ask(None, Some(prober), "POST", exec).await;
    assert_eq!(
        allowed_exec,
        ("HTTP/1.1 404 Not Found".into(), "pod does not exist".into()),
        "authorized, exec reaches the pod lookup"
    );
    let from_apiserver = ask(Some(apiserver), None, "GET", "/pods").await;
    assert_eq!(from_apiserver.0, "HTTP/1.1 200 OK");
    node.shutdown().await;
}
