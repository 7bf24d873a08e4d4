//! Logging setup shared by every binary.

use tracing_subscriber::EnvFilter;

/// Installs the global tracing subscriber: JSON lines on Lambda (detected by
/// `AWS_LAMBDA_FUNCTION_NAME`, so CloudWatch Logs Insights can query fields),
/// human-readable text elsewhere. `RUST_LOG` filters; the default is `info`.
/// Calling it again (or after a test installed a subscriber) does nothing.
pub fn init() {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    let on_lambda = std::env::var_os("AWS_LAMBDA_FUNCTION_NAME").is_some();
    let installed = if on_lambda {
        tracing_subscriber::fmt()
            .json()
            .flatten_event(true)
            // The runtime's per-invocation span carries the request id.
            .with_current_span(true)
            .with_span_list(false)
            .with_target(false)
            .with_ansi(false)
            // CloudWatch timestamps every line itself.
            .without_time()
            .with_env_filter(filter)
            .try_init()
    } else {
        tracing_subscriber::fmt().with_env_filter(filter).try_init()
    };
    // Err only means a subscriber is already installed; keep that one.
    let _ = installed;
}
