//! Delivering outbox notifications over WebSocket connections.
//!
//! Every formed match and every expired ticket is first written to the Redis
//! outbox (see the scripts); this module drains it: claim due entries, push
//! each to all of the player's connections, then settle. Delivery is
//! at-least-once: a claimed entry that is never settled (the process died)
//! becomes due again after its lease, so clients dedupe by match id.

use std::future::Future;
use std::time::Duration;

use futures_util::future::join_all;

use crate::domain::{ConnectionId, Notification, NotificationId, OutboxEntry, ServerMessage};
use crate::error::StoreError;
use crate::store::{MatchStore, Settlement};

/// Why a push to one connection failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PushError {
    /// The connection no longer exists (API Gateway `GoneException`, 410).
    #[error("connection is gone")]
    Gone,
    /// Throttled (429) or the endpoint failed (5xx, network): try again later.
    #[error("push failed, retryable: {0}")]
    Retryable(String),
}

/// Sends a message to one WebSocket connection (API Gateway's
/// `PostToConnection`, or the local stack's socket). Small on purpose, so
/// handlers are tested against a real HTTP stand-in without AWS.
pub trait Pusher: Send + Sync {
    fn push(
        &self,
        connection: &ConnectionId,
        payload: &[u8],
    ) -> impl Future<Output = Result<(), PushError>> + Send;
}

/// How long a claimed entry stays hidden while it is being delivered.
pub const CLAIM_LEASE: Duration = Duration::from_secs(15);
/// Entries claimed per drain round.
pub const DRAIN_BATCH: usize = 500;
const MIN_BACKOFF: Duration = Duration::from_millis(250);
const MAX_BACKOFF: Duration = Duration::from_secs(15);

/// What one delivery pass did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct DeliveryReport {
    /// Entries pushed to at least one connection.
    pub delivered: u64,
    /// Entries scheduled for another attempt.
    pub retried: u64,
    /// Entries dropped undelivered (match record or ticket long gone).
    pub dropped: u64,
    /// Connections found gone and removed from the registry.
    pub gone_connections: u64,
}

impl DeliveryReport {
    fn add(&mut self, other: DeliveryReport) {
        self.delivered += other.delivered;
        self.retried += other.retried;
        self.dropped += other.dropped;
        self.gone_connections += other.gone_connections;
    }
}

/// Exponential backoff with jitter: 250 ms, 500 ms, 1 s, ... capped at 15 s.
pub fn backoff(attempts: u32) -> Duration {
    let exp = attempts.saturating_sub(1).min(16);
    let base = MIN_BACKOFF.saturating_mul(1u32 << exp).min(MAX_BACKOFF);
    // Up to +20% jitter so a burst of failures does not retry in lockstep.
    let jitter = base.mul_f64(rand::random::<f64>() * 0.2);
    base + jitter
}

/// Delivers every due outbox entry (in batches) and returns what happened.
pub async fn drain_outbox<P: Pusher>(
    store: &MatchStore,
    pusher: &P,
) -> Result<DeliveryReport, StoreError> {
    let mut report = DeliveryReport::default();
    loop {
        let entries = store
            .claim_notifications(CLAIM_LEASE, DRAIN_BATCH, &[])
            .await?;
        let claimed = entries.len();
        report.add(deliver(store, pusher, entries).await?);
        if claimed < DRAIN_BATCH {
            return Ok(report);
        }
    }
}

/// Delivers exactly the entries `ids` right away (e.g. the MATCH_FOUND pushes
/// of an instant match) if they are still due; the rest is the matcher's job.
pub async fn deliver_now<P: Pusher>(
    store: &MatchStore,
    pusher: &P,
    ids: &[NotificationId],
) -> Result<DeliveryReport, StoreError> {
    if ids.is_empty() {
        return Ok(DeliveryReport::default());
    }
    let entries = store
        .claim_notifications(CLAIM_LEASE, ids.len(), ids)
        .await?;
    deliver(store, pusher, entries).await
}

enum Fate {
    Delivered,
    Retry(Duration),
    Drop,
}

async fn deliver<P: Pusher>(
    store: &MatchStore,
    pusher: &P,
    entries: Vec<OutboxEntry>,
) -> Result<DeliveryReport, StoreError> {
    let mut report = DeliveryReport::default();
    if entries.is_empty() {
        return Ok(report);
    }
    // How long an undeliverable notification is worth retrying: as long as the
    // match record lives (the player can still learn it from my-status after).
    let give_up_after = u64::try_from(store.settings().match_ttl.as_millis()).unwrap_or(u64::MAX);
    let outcomes = join_all(entries.iter().map(|entry| deliver_one(pusher, entry))).await;

    let mut settlements = Vec::with_capacity(entries.len());
    for (entry, (fate, gone)) in entries.iter().zip(outcomes) {
        for conn in gone {
            report.gone_connections += 1;
            store.unregister_connection(&conn).await?;
        }
        let fate = match fate {
            Fate::Retry(_) if entry.age_ms > give_up_after => Fate::Drop,
            other => other,
        };
        let settlement = match fate {
            Fate::Delivered => {
                report.delivered += 1;
                Settlement::Done
            }
            Fate::Drop => {
                report.dropped += 1;
                tracing::warn!(id = %entry.id, attempts = entry.attempts, "dropping undeliverable notification");
                Settlement::Done
            }
            Fate::Retry(after) => {
                report.retried += 1;
                Settlement::RetryAfter(after)
            }
        };
        settlements.push((entry.id.clone(), settlement));
    }
    store.settle_notifications(&settlements).await?;
    Ok(report)
}

/// Pushes one entry to every connection of its player. Returns its fate and
/// the connections found gone.
async fn deliver_one<P: Pusher>(pusher: &P, entry: &OutboxEntry) -> (Fate, Vec<ConnectionId>) {
    let message = match &entry.notification {
        Notification::MatchFound {
            record: Some(record),
            ..
        } => ServerMessage::MatchFound(record.clone()),
        // The match record expired before anyone could be told.
        Notification::MatchFound { record: None, .. } => return (Fate::Drop, Vec::new()),
        Notification::TicketExpired { world, .. } => ServerMessage::TicketExpired {
            world_type: world.clone(),
        },
    };
    let payload = message.to_json();
    let results = join_all(
        entry
            .connections
            .iter()
            .map(|c| pusher.push(c, payload.as_bytes())),
    )
    .await;
    let mut delivered = false;
    let mut gone = Vec::new();
    for (conn, result) in entry.connections.iter().zip(results) {
        match result {
            Ok(()) => delivered = true,
            Err(PushError::Gone) => gone.push(conn.clone()),
            Err(PushError::Retryable(reason)) => {
                tracing::info!(connection = %conn, %reason, attempts = entry.attempts, "push failed; will retry");
            }
        }
    }
    if delivered {
        (Fate::Delivered, gone)
    } else {
        // Nobody reachable now (no connection, all gone, or throttled): the
        // player may reconnect, so keep trying until the record expires.
        (Fate::Retry(backoff(entry.attempts)), gone)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_grows_and_is_capped() {
        let first = backoff(1);
        assert!(first >= MIN_BACKOFF && first <= MIN_BACKOFF.mul_f64(1.2));
        let third = backoff(3);
        assert!(third >= Duration::from_secs(1) && third <= Duration::from_millis(1200));
        for attempts in [10, 100, u32::MAX] {
            assert!(backoff(attempts) <= MAX_BACKOFF.mul_f64(1.2));
        }
    }
}
