//! Live runs against a kind cluster with agent-sandbox installed.
//!
//! Not built yet (issue 6). Behind the `live` feature this crate will run the conformance suite
//! and the adapter's live checks against the cluster `KUBECONFIG` names; without the feature it
//! builds nothing heavy and runs nothing.
