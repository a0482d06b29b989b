//! What a provider says about itself: [`ProviderInfo`] (capabilities, templates, limits) and
//! [`Health`].

use serde::{Deserialize, Serialize};

use crate::capability::Capabilities;

/// A provider's description of itself, from [`Provider::info`](crate::Provider::info).
///
/// The host reads it before using the provider, and the conformance suite decides from
/// `capabilities` which rules to check as promises and which operations must answer
/// `unsupported_operation`. It must not change while the provider runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProviderInfo {
    /// A short name for the provider, such as `agent-sandbox`.
    pub name: String,
    /// The capabilities the provider promises.
    pub capabilities: Capabilities,
    /// The templates the provider offers by name.
    pub templates: Vec<Template>,
    /// Whether create also accepts template names not in `templates`, such as any container
    /// image. When `false`, an unlisted template answers `invalid_request`.
    pub accepts_unlisted_templates: bool,
    /// The provider's limits.
    pub limits: Limits,
}

/// A named starting point for sandboxes: an image, a warm pool, a snapshot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Template {
    /// The name to put in [`CreateRequest::template`](crate::CreateRequest::template).
    pub name: String,
    /// A sentence for people choosing a template, if the provider has one.
    pub description: Option<String>,
}

impl Template {
    /// Returns a template with `name` and no description.
    pub fn new(name: impl Into<String>) -> Self {
        Template {
            name: name.into(),
            description: None,
        }
    }
}

/// Sizes a provider caps. `None` means the provider sets no cap of its own.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Limits {
    /// The largest file [`Provider::read_file`](crate::Provider::read_file) returns, in bytes.
    /// A read's cap is the smaller of this and the call's `max_bytes`.
    pub max_read_bytes: Option<u64>,
    /// The largest content [`Provider::write_file`](crate::Provider::write_file) accepts, in
    /// bytes; more answers `invalid_request`.
    pub max_write_bytes: Option<u64>,
    /// How many sandboxes the provider holds at once; create beyond it answers `rate_limited`
    /// or `unavailable`.
    pub max_sandboxes: Option<u64>,
}

/// Whether a provider can serve requests, from [`Provider::health`](crate::Provider::health).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Health {
    /// The verdict.
    pub status: HealthStatus,
    /// Why, when not healthy: free of credentials, like error messages.
    pub message: Option<String>,
}

impl Health {
    /// Returns a healthy report with no message.
    pub fn healthy() -> Self {
        Health {
            status: HealthStatus::Healthy,
            message: None,
        }
    }

    /// Returns a degraded report saying why.
    pub fn degraded(message: impl Into<String>) -> Self {
        Health {
            status: HealthStatus::Degraded,
            message: Some(message.into()),
        }
    }

    /// Returns an unhealthy report saying why.
    pub fn unhealthy(message: impl Into<String>) -> Self {
        Health {
            status: HealthStatus::Unhealthy,
            message: Some(message.into()),
        }
    }

    /// Returns whether the status is [`HealthStatus::Healthy`].
    pub fn is_healthy(&self) -> bool {
        self.status == HealthStatus::Healthy
    }
}

/// A provider's health verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HealthStatus {
    /// Everything the provider needs answers.
    Healthy,
    /// Requests may work but something is wrong (slow, throttled, partly missing).
    Degraded,
    /// Requests will fail (backend unreachable, credentials refused).
    Unhealthy,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn health_constructors_set_status_and_message() {
        assert!(Health::healthy().is_healthy());
        assert_eq!(Health::healthy().message, None);
        let degraded = Health::degraded("throttled");
        assert_eq!(degraded.status, HealthStatus::Degraded);
        assert!(!degraded.is_healthy());
        let unhealthy = Health::unhealthy("API server unreachable");
        assert_eq!(unhealthy.status, HealthStatus::Unhealthy);
        assert_eq!(unhealthy.message.as_deref(), Some("API server unreachable"));
    }
}
