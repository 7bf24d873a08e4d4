//! What every Lambda `main` does before handing a handler to the runtime:
//! logging, configuration and clients, built once per execution environment
//! and reused by every invocation. Failures are logged (so they reach
//! CloudWatch) and returned, which fails the cold start visibly.

use shared::{MatchStore, Settings};

#[cfg(feature = "push")]
use crate::push::ApiGatewayPusher;

/// The error type the Lambda runtimes expect from `main`.
pub type BootError = Box<dyn std::error::Error + Send + Sync>;

/// Installs logging, reads the settings and builds the Redis store (which
/// connects lazily, so a cold start succeeds while Redis is down).
pub fn store_from_env() -> Result<MatchStore, BootError> {
    crate::telemetry::init();
    let settings = Settings::from_env()
        .inspect_err(|e| tracing::error!(error = %e, "invalid configuration"))?;
    let store = MatchStore::new(settings)
        .inspect_err(|e| tracing::error!(error = %e, "cannot build the Redis client"))?;
    Ok(store)
}

/// The `@connections` client for `MM_WS_ENDPOINT`.
#[cfg(feature = "push")]
pub async fn pusher_from_env() -> Result<ApiGatewayPusher, BootError> {
    let pusher = ApiGatewayPusher::from_env()
        .await
        .inspect_err(|e| tracing::error!(error = %e, "cannot build the WebSocket pusher"))?;
    Ok(pusher)
}
