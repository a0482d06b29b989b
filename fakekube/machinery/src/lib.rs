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
//! - [`encoding`]: the wire order of an object's fields in JSON and YAML
//!   (k8s.io/apimachinery/pkg/runtime/serializer/json, Go's `encoding/json`).
//! - [`client`]: the [`client::Client`] trait through which the kubelet reaches the API, and
//!   its HTTPS implementation with watch-fed caches (k8s.io/client-go: clientset, informers).
//!
//! No module here imports anything of the API server; `python3 ci/module-cycles.py
//! fakekube/machinery/src` finds any cycle between them.

pub mod client;
pub mod clock;
pub mod encoding;
pub mod managed_fields;
pub mod meta;
pub mod patch;
pub mod protobuf;
pub mod selector;
pub mod status;
