//! Error types, one enum per layer: input validation, configuration and the
//! Redis store. Domain *outcomes* (already queued, not queued, queue full)
//! are not errors; they are variants of the operation's outcome type.

use std::time::Duration;

/// Input that fails validation. Raised before anything is sent to Redis.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ValidationError {
    #[error("invalid {kind} name \"{value}\": expected 1-32 characters of a-z, 0-9, '_' or '-'")]
    BadName { kind: &'static str, value: String },
    #[error("invalid player id \"{0}\": expected 1-128 characters and no control characters")]
    BadPlayerId(String),
    #[error("invalid connection id \"{0}\"")]
    BadConnectionId(String),
    #[error("invalid ticket data: {0}")]
    BadTicketData(String),
    #[error("invalid latencies: {0}")]
    BadLatencies(String),
    #[error("invalid match id \"{0}\"")]
    BadMatchId(String),
    #[error("invalid notification id \"{0}\"")]
    BadNotificationId(String),
    #[error("invalid rating \"{0}\": expected a finite number")]
    BadRating(String),
    #[error("invalid party id \"{0}\"")]
    BadPartyId(String),
    #[error("invalid assignment: {0}")]
    BadAssignment(String),
    #[error("invalid result: {0}")]
    BadResult(String),
}

/// A configuration value that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("configuration {var}: {reason}")]
pub struct ConfigError {
    pub var: &'static str,
    pub reason: String,
}

/// A failure talking to Redis.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// Redis cannot be reached (refused, dropped, cluster down, loading).
    #[error("Redis is unavailable: {0}")]
    Unavailable(String),
    /// Redis did not answer within the configured time.
    #[error("Redis did not answer within {0:?}")]
    Timeout(Duration),
    /// Redis answered with an error (a script rejected its arguments, ...).
    #[error("Redis rejected the command: {0}")]
    Rejected(String),
    /// Durability (`MM_REPLICA_ACKS`): fewer replicas than required
    /// acknowledged the write in time (`applied`: it ran on the primary and
    /// may survive a failover or not), or fewer are online, and the write
    /// was refused before it ran (`!applied`). Nothing it decided was told.
    #[error("{}", not_replicated(*acked, *wanted, *applied))]
    NotReplicated {
        acked: u32,
        wanted: u32,
        applied: bool,
    },
    /// Redis answered with something the scripts never return.
    #[error("unexpected reply from Redis: {0}")]
    UnexpectedReply(String),
}

impl StoreError {
    /// True when the failure is about reaching Redis at all (HTTP 503), not
    /// about what was asked.
    pub fn is_unavailable(&self) -> bool {
        matches!(
            self,
            StoreError::Unavailable(_) | StoreError::Timeout(_) | StoreError::NotReplicated { .. }
        )
    }
}

fn not_replicated(acked: u32, wanted: u32, applied: bool) -> String {
    if applied {
        format!(
            "Redis replicated the write to {acked} of the {wanted} replica(s) required in time; \
             it may survive a failover or be lost, so nothing it decided was told"
        )
    } else {
        format!(
            "Redis has {acked} of the {wanted} replica(s) required online; the write was not run"
        )
    }
}

impl From<redis::RedisError> for StoreError {
    fn from(e: redis::RedisError) -> Self {
        use redis::{ErrorKind, ServerErrorKind};
        let unavailable = e.is_io_error()
            || e.is_connection_refusal()
            || e.is_connection_dropped()
            || e.is_timeout()
            || e.is_cluster_error()
            || matches!(
                e.kind(),
                ErrorKind::ClusterConnectionNotFound
                    | ErrorKind::Server(
                        ServerErrorKind::BusyLoading
                            | ServerErrorKind::TryAgain
                            | ServerErrorKind::ClusterDown
                            | ServerErrorKind::MasterDown
                            | ServerErrorKind::ReadOnly
                    )
            );
        if unavailable {
            StoreError::Unavailable(e.to_string())
        } else if matches!(e.kind(), ErrorKind::Parse | ErrorKind::UnexpectedReturnType) {
            StoreError::UnexpectedReply(e.to_string())
        } else {
            StoreError::Rejected(e.to_string())
        }
    }
}
