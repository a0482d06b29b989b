//! fakekube's object machinery: what its API server, its kubelet and its controllers all build
//! on, with no knowledge of any of them. It is fakekube's counterpart of
//! [k8s.io/apimachinery](https://github.com/kubernetes/apimachinery) (and, for [`client`], of
//! [k8s.io/client-go](https://github.com/kubernetes/client-go)): objects are JSON values
//! (`serde_json::Value`), and these modules read, match, patch, encode and time them as the
//! upstream packages do.
//!
//! - [`status`]: `metav1.Status` and [`status::ApiError`], the error every layer answers with
//!   (k8s.io/apimachinery/pkg/api/errors, pkg/apis/meta/v1 `Status`).
//! - [`meta`]: object metadata helpers: names, timestamps, generated names, owner references
//!   (k8s.io/apimachinery/pkg/apis/meta/v1, pkg/api/meta, pkg/util/validation).
//! - [`clock`]: the cluster's clock, which tests may advance (k8s.io/utils/clock and its fake
//!   clock).
//! - [`selector`]: label and field selectors (k8s.io/apimachinery/pkg/labels, pkg/fields).
//! - [`patch`]: JSON merge, JSON, strategic merge and apply patches
//!   (k8s.io/apimachinery/pkg/util/strategicpatch, pkg/util/mergepatch, and the jsonpatch
//!   library the API server uses).
//! - [`managed_fields`]: `metadata.managedFields`, field managers and apply conflicts
//!   (k8s.io/apimachinery/pkg/util/managedfields, sigs.k8s.io/structured-merge-diff).
//! - [`protobuf`]: the protobuf request bodies client-go sends
//!   (k8s.io/apimachinery/pkg/runtime/serializer/protobuf).
//! - [`go_format`]: values printed as Go prints them in the API server's and the controllers'
//!   messages and hashes (`%v`, `strconv.Quote`, `encoding/json`).
//! - [`encoding`]: the wire order of an object's fields in JSON and YAML
//!   (k8s.io/apimachinery/pkg/runtime/serializer/json, Go's `encoding/json`).
//! - [`client`]: the [`client::Client`] trait through which the kubelet reaches the API, and
//!   its HTTPS implementation with watch-fed caches (k8s.io/client-go: clientset, informers).
//! - [`events`]: the Event recorders the kubelet and the controllers write through a
//!   [`client::Client`] (k8s.io/client-go/tools/record, tools/events).
//! - On the wire, shared by the API server and the kubelet's API: [`route`] (a request path as
//!   a route, k8s.io/apiserver/pkg/endpoints/request's `RequestInfo`), [`query`] (query
//!   parameters), [`response`] (JSON answers and warnings), [`server`] (the TLS listener: HTTP/1.1
//!   and HTTP/2, upgrades, graceful shutdown, the peer's certificate; k8s.io/apiserver's
//!   secure serving), [`tls`] (the CA, serving and client certificates, k8s.io/client-go/util/cert),
//!   [`x509`] (a client certificate's user, k8s.io/apiserver's x509 authenticator),
//!   [`subprotocol`] (WebSocket upgrade headers and the bearer token in a subprotocol entry)
//!   and [`faults`] (fakekube's injected failures and chaos, which both sides apply).
//!
//! No module here imports anything of the API server; `python3 ci/module-cycles.py
//! fakekube/machinery/src` finds any cycle between them.

pub mod client;
pub mod clock;
pub mod encoding;
pub mod events;
pub mod faults;
pub mod go_format;
pub mod managed_fields;
pub mod meta;
pub mod patch;
pub mod protobuf;
pub mod query;
pub mod response;
pub mod route;
pub mod selector;
pub mod server;
pub mod status;
pub mod subprotocol;
pub mod tls;
pub mod x509;
