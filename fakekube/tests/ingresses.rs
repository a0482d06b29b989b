//! `networking.k8s.io/v1` Ingresses and IngressClasses through the HTTP API: their
//! validation, the `DefaultIngressClass` admission (a new Ingress naming no class gets the
//! newest class annotated as the default), and the Ingress `status` subresource.

mod support;

use http::{Method, StatusCode};
use serde_json::{Value, json};

const INGRESSES: &str = "/apis/networking.k8s.io/v1/namespaces/sb/ingresses";
const CLASSES: &str = "/apis/networking.k8s.io/v1/ingressclasses";

fn ingress(name: &str) -> Value {
    json!({ "apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": { "name": name },
        "spec": { "rules": [ { "host": "web.example.com", "http": { "paths": [
            { "path": "/", "pathType": "Prefix",
              "backend": { "service": { "name": "web", "port": { "number": 80 } } } } ] } } ] } })
}

fn class(name: &str, default: bool) -> Value {
    let mut c = json!({ "apiVersion": "networking.k8s.io/v1", "kind": "IngressClass",
        "metadata": { "name": name }, "spec": { "controller": "k8s.io/ingress-nginx" } });
    if default {
        c["metadata"]["annotations"] =
            json!({ "ingressclass.kubernetes.io/is-default-class": "true" });
    }
    c
}

fn fields(reply: &support::Reply) -> Vec<String> {
    reply.json()["details"]["causes"]
        .as_array()
        .map(|l| {
            l.iter()
                .map(|c| c["field"].as_str().unwrap_or("").to_string())
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test]
async fn an_ingress_naming_no_class_gets_the_default_ingress_class() {
    let (_kube, client) = support::start_api_server().await;
    for (name, default) in [("plain", false), ("nginx", true)] {
        let reply = client
            .json(Method::POST, CLASSES, &class(name, default))
            .await;
        assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.json());
    }
    let reply = client.json(Method::POST, INGRESSES, &ingress("web")).await;
    assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.json());
    assert_eq!(reply.json()["spec"]["ingressClassName"], "nginx");
    assert_eq!(reply.json()["status"], json!({ "loadBalancer": {} }));

    let mut named = ingress("named");
    named["spec"]["ingressClassName"] = json!("plain");
    let reply = client.json(Method::POST, INGRESSES, &named).await;
    assert_eq!(reply.json()["spec"]["ingressClassName"], "plain");
}

#[tokio::test]
async fn without_a_default_class_an_ingress_keeps_no_class() {
    let (_kube, client) = support::start_api_server().await;
    client
        .json(Method::POST, CLASSES, &class("plain", false))
        .await;
    let reply = client.json(Method::POST, INGRESSES, &ingress("web")).await;
    assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.json());
    assert!(reply.json()["spec"].get("ingressClassName").is_none());
}

#[tokio::test]
async fn an_invalid_ingress_is_refused_naming_each_bad_field() {
    let (_kube, client) = support::start_api_server().await;
    let body = json!({ "apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": { "name": "bad" },
        "spec": { "rules": [ { "host": "10.0.0.1", "http": { "paths": [
            { "path": "relative", "pathType": "Exact",
              "backend": { "service": { "name": "web", "port": {} } } },
            { "path": "/x", "backend": { "service": { "name": "web", "port": { "name": "http", "number": 80 } } } } ] } } ] } });
    let reply = client.json(Method::POST, INGRESSES, &body).await;
    assert_eq!(reply.status, StatusCode::UNPROCESSABLE_ENTITY);
    let got = fields(&reply);
    for want in [
        "spec.rules[0].host",
        "spec.rules[0].http.paths[0].path",
        "spec.rules[0].http.paths[0].backend.service.port",
        "spec.rules[0].http.paths[1].pathType",
        "spec.rules[0].http.paths[1].backend.service.port",
    ] {
        assert!(got.contains(&want.to_string()), "{want} not in {got:?}");
    }
    let empty = json!({ "apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
        "metadata": { "name": "empty" }, "spec": {} });
    let reply = client.json(Method::POST, INGRESSES, &empty).await;
    assert_eq!(reply.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(fields(&reply), vec!["spec".to_string()]);
}

#[tokio::test]
async fn an_ingress_class_needs_a_domain_prefixed_controller_that_never_changes() {
    let (_kube, client) = support::start_api_server().await;
    let mut bad = class("bad", false);
    bad["spec"]["controller"] = json!("nginx");
    let reply = client.json(Method::POST, CLASSES, &bad).await;
    assert_eq!(reply.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(fields(&reply), vec!["spec.controller".to_string()]);

    client.json(Method::POST, CLASSES, &class("c", false)).await;
    let reply = client
        .read_modify_put(&format!("{CLASSES}/c"), &format!("{CLASSES}/c"), |c| {
            c["spec"]["controller"] = json!("example.com/other");
        })
        .await;
    assert_eq!(reply.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(
        reply.json()["message"]
            .as_str()
            .is_some_and(|m| m.contains("field is immutable")),
        "{}",
        reply.json()
    );
}

#[tokio::test]
async fn an_ingress_status_is_written_through_its_subresource_only() {
    let (_kube, client) = support::start_api_server().await;
    client.json(Method::POST, INGRESSES, &ingress("web")).await;
    let path = format!("{INGRESSES}/web");
    let lb = json!({ "loadBalancer": { "ingress": [ { "ip": "192.0.2.10" } ] } });
    let reply = client
        .read_modify_put(&path, &path, |i| i["status"] = lb.clone())
        .await;
    assert_eq!(reply.status, StatusCode::OK);
    assert_eq!(reply.json()["status"], json!({ "loadBalancer": {} }));
    let reply = client
        .read_modify_put(&path, &format!("{path}/status"), |i| {
            i["status"] = lb.clone()
        })
        .await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.json());
    assert_eq!(client.get(&path).await.json()["status"], lb);
}
