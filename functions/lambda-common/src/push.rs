//! The real [`Pusher`]: API Gateway's `PostToConnection` on the WebSocket
//! API's management (`@connections`) endpoint.

use std::time::Duration;

use aws_sdk_apigatewaymanagement::config::retry::RetryConfig;
use aws_sdk_apigatewaymanagement::config::timeout::TimeoutConfig;
use aws_sdk_apigatewaymanagement::config::{BehaviorVersion, Builder, Credentials, Region};
use aws_sdk_apigatewaymanagement::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_apigatewaymanagement::operation::delete_connection::DeleteConnectionError;
use aws_sdk_apigatewaymanagement::operation::post_to_connection::PostToConnectionError;
use aws_sdk_apigatewaymanagement::primitives::Blob;
use aws_sdk_apigatewaymanagement::Client;

use shared::{ConnectionId, PushError, Pusher};

/// Environment variable naming the management endpoint,
/// `https://{api-id}.execute-api.{region}.amazonaws.com/{stage}`.
pub const WS_ENDPOINT_VAR: &str = "MM_WS_ENDPOINT";

/// Upper bound for one push, retry included. The outbox retries with its own
/// backoff, so a slow endpoint must not hold up a whole matcher tick.
const OPERATION_TIMEOUT: Duration = Duration::from_secs(3);
const CONNECT_TIMEOUT: Duration = Duration::from_secs(1);
/// One quick SDK retry absorbs a dropped connection or a throttle blip; any
/// longer retrying is the outbox's job (backoff, give-up, 410 cleanup).
const MAX_ATTEMPTS: u32 = 2;
const RETRY_INITIAL_BACKOFF: Duration = Duration::from_millis(50);
const RETRY_MAX_BACKOFF: Duration = Duration::from_millis(200);

/// The push endpoint is not configured usably.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PushConfigError {
    #[error("{WS_ENDPOINT_VAR} is not set; expected https://{{api-id}}.execute-api.{{region}}.amazonaws.com/{{stage}}")]
    MissingEndpoint,
    #[error("{WS_ENDPOINT_VAR} must be an http:// or https:// URL, got {0:?}")]
    BadEndpoint(String),
    #[error("no AWS region configured (set AWS_REGION)")]
    MissingRegion,
}

/// Pushes messages with `PostToConnection`. Build it once per process.
#[derive(Clone, Debug)]
pub struct ApiGatewayPusher {
    client: Client,
}

impl ApiGatewayPusher {
    /// Reads `MM_WS_ENDPOINT` and the standard AWS configuration (region and
    /// the function role's credentials from the Lambda environment).
    pub async fn from_env() -> Result<Self, PushConfigError> {
        let endpoint = parse_endpoint(std::env::var(WS_ENDPOINT_VAR).ok().as_deref())?;
        let sdk = aws_config::defaults(BehaviorVersion::latest()).load().await;
        if sdk.region().is_none() {
            return Err(PushConfigError::MissingRegion);
        }
        Ok(Self::from_builder(Builder::from(&sdk), endpoint))
    }

    /// A pusher with fixed dummy credentials, for the local stack and tests:
    /// the stand-in endpoints do not check SigV4 signatures.
    pub fn with_static_credentials(endpoint: &str, region: &str) -> Result<Self, PushConfigError> {
        let endpoint = parse_endpoint(Some(endpoint))?;
        let builder = aws_sdk_apigatewaymanagement::Config::builder()
            .behavior_version(BehaviorVersion::latest())
            .region(Region::new(region.to_owned()))
            .credentials_provider(Credentials::new(
                "local-access-key",
                "local-secret-key",
                None,
                None,
                "static",
            ));
        Ok(Self::from_builder(builder, endpoint))
    }

    fn from_builder(builder: Builder, endpoint: String) -> Self {
        let config = builder
            .endpoint_url(endpoint)
            .timeout_config(
                TimeoutConfig::builder()
                    .connect_timeout(CONNECT_TIMEOUT)
                    .operation_timeout(OPERATION_TIMEOUT)
                    .build(),
            )
            .retry_config(
                RetryConfig::standard()
                    .with_max_attempts(MAX_ATTEMPTS)
                    .with_initial_backoff(RETRY_INITIAL_BACKOFF)
                    .with_max_backoff(RETRY_MAX_BACKOFF),
            )
            .build();
        Self {
            client: Client::from_conf(config),
        }
    }
}

/// What every push and close answers when [`WS_ENDPOINT_VAR`] is not set.
pub const PUSH_DISABLED: &str =
    "MM_WS_ENDPOINT is not set: WebSocket pushes are disabled in this process";

/// The pusher a function runs with: the `@connections` client, or none at
/// all when [`WS_ENDPOINT_VAR`] is not set.
///
/// Without the endpoint (a local `sam local invoke` or `cargo lambda invoke`
/// with no WebSocket stand-in running) the function still starts and answers
/// its events; every push and close is reported not delivered with a
/// retryable error, so whatever was to be pushed stays in the outbox
/// (MATCH_FOUND included) for a matcher that has an endpoint. A malformed
/// endpoint or a missing region still fails the start: those are mistakes in
/// a configuration that meant to push.
#[derive(Clone, Debug)]
pub enum ConnectionsPusher {
    /// `PostToConnection` / `DeleteConnection` on `MM_WS_ENDPOINT`.
    Endpoint(ApiGatewayPusher),
    /// `MM_WS_ENDPOINT` is not set: nothing is ever delivered.
    Disabled,
}

impl ConnectionsPusher {
    /// [`ApiGatewayPusher::from_env`], or [`ConnectionsPusher::Disabled`]
    /// when `MM_WS_ENDPOINT` is unset or blank.
    pub async fn from_env() -> Result<Self, PushConfigError> {
        match ApiGatewayPusher::from_env().await {
            Ok(pusher) => Ok(Self::Endpoint(pusher)),
            Err(PushConfigError::MissingEndpoint) => Ok(Self::Disabled),
            Err(e) => Err(e),
        }
    }

    pub fn is_disabled(&self) -> bool {
        matches!(self, Self::Disabled)
    }
}

impl Pusher for ConnectionsPusher {
    async fn push(&self, connection: &ConnectionId, payload: &[u8]) -> Result<(), PushError> {
        match self {
            Self::Endpoint(pusher) => pusher.push(connection, payload).await,
            Self::Disabled => Err(PushError::Retryable(PUSH_DISABLED.to_owned())),
        }
    }

    async fn close(&self, connection: &ConnectionId) -> Result<(), PushError> {
        match self {
            Self::Endpoint(pusher) => pusher.close(connection).await,
            Self::Disabled => Err(PushError::Retryable(PUSH_DISABLED.to_owned())),
        }
    }
}

/// Checks the endpoint's shape; a trailing `/` is dropped so the SDK's
/// `/@connections/{id}` is appended to the stage path cleanly.
fn parse_endpoint(value: Option<&str>) -> Result<String, PushConfigError> {
    let value = value
        .map(str::trim)
        .filter(|v| !v.is_empty())
        .ok_or(PushConfigError::MissingEndpoint)?;
    let rest = value
        .strip_prefix("https://")
        .or_else(|| value.strip_prefix("http://"))
        .ok_or_else(|| PushConfigError::BadEndpoint(value.to_owned()))?;
    if rest.is_empty() || rest.starts_with('/') || rest.chars().any(char::is_whitespace) {
        return Err(PushConfigError::BadEndpoint(value.to_owned()));
    }
    Ok(value.trim_end_matches('/').to_owned())
}

impl Pusher for ApiGatewayPusher {
    async fn push(&self, connection: &ConnectionId, payload: &[u8]) -> Result<(), PushError> {
        self.client
            .post_to_connection()
            .connection_id(connection.as_str())
            .data(Blob::new(payload))
            .send()
            .await
            .map(|_| ())
            .map_err(|e| classify(connection, &e))
    }

    async fn close(&self, connection: &ConnectionId) -> Result<(), PushError> {
        match self
            .client
            .delete_connection()
            .connection_id(connection.as_str())
            .send()
            .await
        {
            Ok(_) => Ok(()),
            Err(e) => {
                let status = e.raw_response().map(|r| r.status().as_u16());
                match &e {
                    SdkError::ServiceError(service)
                        if matches!(service.err(), DeleteConnectionError::GoneException(_))
                            || status == Some(410) =>
                    {
                        Err(PushError::Gone)
                    }
                    _ => Err(PushError::Retryable(format!(
                        "DeleteConnection failed ({}): {e}",
                        status_text(status)
                    ))),
                }
            }
        }
    }
}

/// Maps an SDK failure onto what the outbox does next: forget the connection
/// (gone) or try again later (everything else).
fn classify(connection: &ConnectionId, err: &SdkError<PostToConnectionError>) -> PushError {
    let status = err.raw_response().map(|r| r.status().as_u16());
    match err {
        SdkError::ServiceError(service) => {
            let source = service.err();
            let code = source.code().unwrap_or("unknown");
            match source {
                PostToConnectionError::GoneException(_) => PushError::Gone,
                _ if status == Some(410) => PushError::Gone,
                PostToConnectionError::PayloadTooLargeException(_) => PushError::TooLarge,
                _ if status == Some(413) => PushError::TooLarge,
                PostToConnectionError::LimitExceededException(_) => {
                    PushError::Retryable(format!("throttled ({code})"))
                }
                _ if status.is_some_and(|s| s == 429 || s >= 500) => PushError::Retryable(format!(
                    "endpoint answered {} ({code})",
                    status_text(status)
                )),
                // 403 and other 4xx point at configuration (IAM policy, wrong
                // endpoint or stage): loud, but retried in case it is fixed
                // while the match record lives.
                _ => {
                    tracing::warn!(
                        %connection,
                        status = %status_text(status),
                        %code,
                        message = source.message().unwrap_or(""),
                        "PostToConnection refused; check MM_WS_ENDPOINT and the execute-api:ManageConnections permission"
                    );
                    PushError::Retryable(format!("refused with {} ({code})", status_text(status)))
                }
            }
        }
        SdkError::TimeoutError(_) => PushError::Retryable("timed out".into()),
        SdkError::DispatchFailure(failure) => {
            PushError::Retryable(format!("request not sent: {failure:?}"))
        }
        SdkError::ResponseError(_) => {
            PushError::Retryable(format!("unreadable response ({})", status_text(status)))
        }
        other => PushError::Retryable(format!("push failed: {other:?}")),
    }
}

fn status_text(status: Option<u16>) -> String {
    status.map_or_else(|| "no status".to_owned(), |s| s.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_disabled_pusher_delivers_nothing_and_says_why() {
        let pusher = ConnectionsPusher::Disabled;
        assert!(pusher.is_disabled());
        let conn = ConnectionId::parse("L0SM9cOFvHcCIhw=").unwrap();
        for result in [pusher.push(&conn, b"{}").await, pusher.close(&conn).await] {
            match result {
                Err(PushError::Retryable(why)) => assert_eq!(why, PUSH_DISABLED),
                other => panic!("{other:?}"),
            }
        }
    }

    #[test]
    fn endpoints_must_be_http_urls() {
        assert_eq!(
            parse_endpoint(Some(
                "https://abc.execute-api.eu-west-1.amazonaws.com/prod/"
            )),
            Ok("https://abc.execute-api.eu-west-1.amazonaws.com/prod".to_owned())
        );
        assert_eq!(
            parse_endpoint(Some(" http://127.0.0.1:4510 ")),
            Ok("http://127.0.0.1:4510".to_owned())
        );
        assert_eq!(parse_endpoint(None), Err(PushConfigError::MissingEndpoint));
        assert_eq!(
            parse_endpoint(Some("  ")),
            Err(PushConfigError::MissingEndpoint)
        );
        for bad in [
            "wss://abc/prod",
            "abc.execute-api",
            "https://",
            "https:///x",
            "http://a b",
        ] {
            assert!(
                matches!(
                    parse_endpoint(Some(bad)),
                    Err(PushConfigError::BadEndpoint(_))
                ),
                "{bad:?} must be rejected"
            );
        }
    }
}
