//! The provider adapter for kubernetes-sigs/agent-sandbox.
//!
//! Not built yet (issue 4). It will create Sandboxes (or SandboxClaims on a warm pool) through the
//! Kubernetes API with hyper + rustls, and run commands and file operations through `pods/exec`
//! over WebSocket (v5, then v4), implementing `sandbox_contract::Provider`.
