//! What every Lambda `main` does before handing a handler to the runtime:
//! logging, configuration and clients, built once per execution environment
//! and reused by every invocation. Failures are logged (so they reach
//! CloudWatch), reported to the Runtime API as an init error
//! ([`reported`]) and returned, which fails the cold start visibly.

use std::time::Duration;

use shared::{MatchStore, Settings};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

#[cfg(feature = "push")]
use crate::push::{ConnectionsPusher, WS_ENDPOINT_VAR};

/// The error type the Lambda runtimes expect from `main`.
pub type BootError = Box<dyn std::error::Error + Send + Sync>;

/// The Runtime API's address (`host:port`), set by Lambda and its emulators.
pub const RUNTIME_API_VAR: &str = "AWS_LAMBDA_RUNTIME_API";
/// How long reporting an init error may take; the process exits either way.
const INIT_ERROR_TIMEOUT: Duration = Duration::from_secs(2);

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

/// The `@connections` client for `MM_WS_ENDPOINT`. Without the variable the
/// function still starts (one warning) with a pusher that reports every
/// push as not delivered: see [`ConnectionsPusher`].
#[cfg(feature = "push")]
pub async fn pusher_from_env() -> Result<ConnectionsPusher, BootError> {
    let pusher = ConnectionsPusher::from_env()
        .await
        .inspect_err(|e| tracing::error!(error = %e, "cannot build the WebSocket pusher"))?;
    if pusher.is_disabled() {
        tracing::warn!(
            variable = WS_ENDPOINT_VAR,
            "{WS_ENDPOINT_VAR} is not set: WebSocket pushes are disabled; every push is \
             reported not delivered and stays in the outbox for a matcher that can push \
             (set it to the @connections endpoint, see docs/deploy.md)"
        );
    }
    Ok(pusher)
}

/// Gives `store` what wakes the sleeping matcher: EventBridge on
/// `MM_WAKE_BUS` (a rule there invokes the matcher) when set, else nothing
/// (the matcher's schedule wakes it within a minute: only right for a
/// matcher that never sleeps, `MM_MATCHER_SLEEP` off). A malformed setting
/// fails the start.
#[cfg(feature = "events")]
pub async fn waker_from_env(store: &MatchStore) -> Result<(), BootError> {
    let waker = crate::events::EventBridgeWaker::from_env(&store.settings().namespace)
        .await
        .inspect_err(|e| tracing::error!(error = %e, "cannot build the matcher waker"))?;
    match waker {
        Some(waker) => {
            tracing::info!(
                bus = waker.bus(),
                "wakes the sleeping matcher through EventBridge"
            );
            store.set_waker(std::sync::Arc::new(waker));
        }
        None => {
            tracing::info!("MM_WAKE_BUS is not set: this function does not wake a sleeping matcher")
        }
    }
    Ok(())
}

/// The match-event sink of a matcher: EventBridge on `MM_EVENT_BUS` when
/// `settings.match_events` (`MM_MATCH_EVENTS`) is on, else none. Events on
/// without a bus (or with a malformed one) fail the start: the events would
/// otherwise pile up in the outbox unsent.
#[cfg(feature = "events")]
pub async fn events_from_env(
    settings: &Settings,
) -> Result<crate::events::MatchEventSink, BootError> {
    let sink = crate::events::MatchEventSink::from_env(settings.match_events)
        .await
        .inspect_err(|e| tracing::error!(error = %e, "cannot build the match-event sink"))?;
    match &sink {
        crate::events::MatchEventSink::EventBridge(bridge) => tracing::info!(
            bus = bridge.bus(),
            source = bridge.source(),
            "match events go to EventBridge"
        ),
        crate::events::MatchEventSink::Off => {
            tracing::info!("MM_MATCH_EVENTS is off: no match events are published")
        }
    }
    Ok(sink)
}

/// Passes `result` through; an error is first reported to the Runtime API
/// (`POST /2018-06-01/runtime/init/error`), as Lambda expects from a runtime
/// that cannot start. Without it an emulator that starts the binary on an
/// invoke (`cargo lambda watch`) waits for a first `GET .../invocation/next`
/// that never comes, and the invoke hangs; with it the invoke answers the
/// error. Best effort and bounded: the error is returned either way.
pub async fn reported<T>(result: Result<T, BootError>) -> Result<T, BootError> {
    let error = match result {
        Ok(value) => return Ok(value),
        Err(error) => error,
    };
    let Some(api) = std::env::var(RUNTIME_API_VAR)
        .ok()
        .filter(|v| !v.trim().is_empty())
    else {
        return Err(error);
    };
    let message = error.to_string();
    match tokio::time::timeout(INIT_ERROR_TIMEOUT, post_init_error(&api, &message)).await {
        Ok(Ok(status)) if (200..300).contains(&status) => {
            tracing::info!(status, "start failure reported to the Runtime API");
        }
        Ok(Ok(status)) => tracing::warn!(status, "the Runtime API refused the init error"),
        Ok(Err(e)) => tracing::warn!(error = %e, "could not report the init error"),
        Err(_) => tracing::warn!("reporting the init error timed out"),
    }
    Err(error)
}

/// `POST /2018-06-01/runtime/init/error` on `api` (`host:port`), HTTP/1.1
/// over a fresh connection; the answer's status code.
async fn post_init_error(api: &str, message: &str) -> std::io::Result<u16> {
    const ERROR_TYPE: &str = "Runtime.InitError";
    let body = serde_json::json!({
        "errorMessage": message,
        "errorType": ERROR_TYPE,
        "stackTrace": [],
    })
    .to_string();
    let request = format!(
        "POST /2018-06-01/runtime/init/error HTTP/1.1\r\n\
         Host: {api}\r\n\
         Lambda-Runtime-Function-Error-Type: {ERROR_TYPE}\r\n\
         Content-Type: application/json\r\n\
         Content-Length: {}\r\n\
         Connection: close\r\n\r\n{body}",
        body.len()
    );
    let mut stream = tokio::net::TcpStream::connect(api).await?;
    stream.write_all(request.as_bytes()).await?;
    let mut head = Vec::new();
    let mut chunk = [0u8; 512];
    while !head.windows(2).any(|w| w == b"\r\n") {
        let n = stream.read(&mut chunk).await?;
        if n == 0 {
            break;
        }
        head.extend_from_slice(&chunk[..n]);
    }
    // "HTTP/1.1 202 Accepted"
    String::from_utf8_lossy(&head)
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| {
            std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                "no HTTP status in the answer",
            )
        })
}
