//! Delivering outbox notifications over WebSocket connections.
//!
//! Every formed match, expired or removed ticket is first written to the
//! Redis outbox (see the scripts); this module drains it: claim due entries,
//! push each to every connection of every player it still has to tell, then
//! settle (done, or retry later with the players still untold). Delivery is
//! at-least-once: a claimed entry that is never settled (the process died)
//! becomes due again after its lease, so clients dedupe by match id.

use std::future::Future;
use std::time::Duration;

use futures_util::future::join_all;

use crate::domain::{ConnectionId, MatchEvent, NotificationId, NotificationKind, OutboxEntry};
use crate::error::StoreError;
use crate::store::{MatchStore, Settlement, CLAIM_LEASE, YOUNG_CONNECTION};

/// Why a push to one connection failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PushError {
    /// The connection no longer exists (API Gateway `GoneException`, 410).
    #[error("connection is gone")]
    Gone,
    /// The message is over API Gateway's limit (413): retrying cannot help.
    #[error("message too large for the WebSocket")]
    TooLarge,
    /// Throttled (429) or the endpoint failed (5xx, network, timeout): try
    /// again later.
    #[error("push failed, retryable: {0}")]
    Retryable(String),
}

/// Sends to and closes WebSocket connections (API Gateway's `@connections`
/// API, or the local stack's sockets). Small on purpose, so handlers are
/// tested against a real HTTP stand-in without AWS.
pub trait Pusher: Send + Sync {
    /// Sends one message (`PostToConnection`).
    fn push(
        &self,
        connection: &ConnectionId,
        payload: &[u8],
    ) -> impl Future<Output = Result<(), PushError>> + Send;

    /// Closes a connection (`DeleteConnection`); `Gone` if it already is.
    fn close(
        &self,
        connection: &ConnectionId,
    ) -> impl Future<Output = Result<(), PushError>> + Send;
}

/// Why publishing a match event failed (it is retried through the outbox).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("publishing the match event failed: {0}")]
pub struct EventError(pub String);

/// Sends match events to the studio's allocator (EventBridge `PutEvents`,
/// or the local stack's stand-in). Only the matcher publishes: a join that
/// forms a match leaves the event in the outbox for the matcher's next
/// round.
pub trait EventSink: Send + Sync {
    /// False for a sink that publishes nothing and leaves the events to the
    /// matcher (they are then due again at once).
    const PUBLISHES: bool = true;

    /// Publishes `events`; one result per event, in order.
    fn publish(
        &self,
        events: &[MatchEvent],
    ) -> impl Future<Output = Vec<Result<(), EventError>>> + Send;
}

/// For callers that publish no events (a join): the events stay in the
/// outbox for the matcher.
pub struct NoEvents;

impl EventSink for NoEvents {
    const PUBLISHES: bool = false;

    async fn publish(&self, events: &[MatchEvent]) -> Vec<Result<(), EventError>> {
        events
            .iter()
            .map(|_| Err(EventError("left to the matcher".into())))
            .collect()
    }
}

/// Entries claimed per drain round (a match entry pushes to every
/// participant's connections, so a round is a few hundred pushes).
pub const DRAIN_BATCH: usize = 200;
/// Upper bound of one push on the matcher's path; the outbox retries.
pub const MATCHER_PUSH_TIMEOUT: Duration = Duration::from_secs(3);
const MIN_BACKOFF: Duration = Duration::from_millis(250);
const MAX_BACKOFF: Duration = Duration::from_secs(15);

/// What one delivery pass did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct DeliveryReport {
    /// Entries that reached every player they had to tell.
    pub delivered: u64,
    /// Entries scheduled for another attempt (some player not reached yet).
    pub retried: u64,
    /// Entries dropped undelivered (match record or ticket long gone, or a
    /// message too large to ever deliver).
    pub dropped: u64,
    /// Connections found gone and removed from the registry.
    pub gone_connections: u64,
    /// Match events published.
    pub events: u64,
}

impl DeliveryReport {
    fn add(&mut self, other: DeliveryReport) {
        self.delivered += other.delivered;
        self.retried += other.retried;
        self.dropped += other.dropped;
        self.gone_connections += other.gone_connections;
        self.events += other.events;
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

/// Delivers every due outbox entry (in batches), publishing the match
/// events through `events`, and returns what happened.
pub async fn drain_outbox<P: Pusher, E: EventSink>(
    store: &MatchStore,
    pusher: &P,
    events: &E,
) -> Result<DeliveryReport, StoreError> {
    let mut report = DeliveryReport::default();
    loop {
        let entries = store
            .claim_notifications(CLAIM_LEASE, DRAIN_BATCH, YOUNG_CONNECTION, &[])
            .await?;
        let claimed = entries.len();
        report.add(deliver(store, pusher, events, entries, MATCHER_PUSH_TIMEOUT).await?);
        if claimed < DRAIN_BATCH {
            return Ok(report);
        }
    }
}

/// Delivers exactly the entries `ids` right away (e.g. the MATCH_FOUND of an
/// instant match) if they are still due, spending at most `push_timeout` on
/// any push: what does not get through in time is retried by the matcher.
pub async fn deliver_now<P: Pusher>(
    store: &MatchStore,
    pusher: &P,
    ids: &[NotificationId],
    push_timeout: Duration,
) -> Result<DeliveryReport, StoreError> {
    if ids.is_empty() {
        return Ok(DeliveryReport::default());
    }
    let entries = store
        .claim_notifications(CLAIM_LEASE, ids.len(), YOUNG_CONNECTION, ids)
        .await?;
    deliver(store, pusher, &NoEvents, entries, push_timeout).await
}

/// Delivers entries a script already claimed (a join that formed a match
/// claims its entries in the same call), spending at most `push_timeout` on
/// any push, and settles them: one round trip after the join's.
pub async fn deliver_claimed<P: Pusher>(
    store: &MatchStore,
    pusher: &P,
    entries: Vec<OutboxEntry>,
    push_timeout: Duration,
) -> Result<DeliveryReport, StoreError> {
    deliver(store, pusher, &NoEvents, entries, push_timeout).await
}

/// What became of one entry.
enum Fate {
    /// Every target told (or nobody left to tell).
    Delivered,
    /// Some targets not reached: try again after the delay, for these.
    Retry(Duration, Vec<u32>),
    /// Not deliverable now or ever.
    Drop(&'static str),
}

async fn deliver<P: Pusher, E: EventSink>(
    store: &MatchStore,
    pusher: &P,
    events: &E,
    entries: Vec<OutboxEntry>,
    push_timeout: Duration,
) -> Result<DeliveryReport, StoreError> {
    let mut report = DeliveryReport::default();
    if entries.is_empty() {
        return Ok(report);
    }
    // How long an undeliverable notification is worth retrying: as long as the
    // match record lives (the player can still learn it from my-status after).
    let give_up_after = u64::try_from(store.settings().match_ttl.as_millis()).unwrap_or(u64::MAX);
    let (outcomes, published) = tokio::join!(
        join_all(
            entries
                .iter()
                .map(|entry| deliver_one(pusher, entry, push_timeout)),
        ),
        publish_events(store, events, &entries),
    );
    report.events = published.iter().filter(|sent| **sent == Some(true)).count() as u64;

    let mut settlements = Vec::with_capacity(entries.len());
    for (
        entry,
        Outcome {
            fate,
            gone,
            replay_to,
        },
    ) in entries.iter().zip(outcomes)
    {
        let event_sent = published.get(settlements.len()).copied().flatten();
        for conn in gone {
            report.gone_connections += 1;
            store.unregister_connection(&conn).await?;
        }
        // A match event not sent yet is target 0: retried with the players
        // still to tell (right away when it was left to the matcher).
        let fate = match (fate, event_sent) {
            (Fate::Delivered, Some(false)) => {
                Fate::Retry(event_retry(entry, E::PUBLISHES), vec![0])
            }
            (Fate::Retry(after, mut pending), Some(false)) => {
                pending.insert(0, 0);
                Fate::Retry(after.min(event_retry(entry, E::PUBLISHES)), pending)
            }
            (fate, _) => fate,
        };
        let fate = match fate {
            Fate::Retry(..) if entry.age_ms > give_up_after => Fate::Drop("gave up retrying"),
            other => other,
        };
        let settlement = match fate {
            Fate::Delivered => {
                report.delivered += 1;
                Settlement::Done
            }
            Fate::Drop(why) => {
                report.dropped += 1;
                tracing::warn!(id = %entry.id, attempts = entry.attempts, why, "dropping undeliverable notification");
                Settlement::Done
            }
            Fate::Retry(after, pending) => {
                report.retried += 1;
                Settlement::RetryAfter(after, pending)
            }
        };
        settlements.push((entry.id.clone(), settlement, replay_to));
    }
    store.settle_with_replays(&settlements).await?;
    Ok(report)
}

/// Publishes the match events of `entries` still to send, when match events
/// are on: per entry, `Some(true)` sent, `Some(false)` not sent (retry),
/// `None` nothing to send.
async fn publish_events<E: EventSink>(
    store: &MatchStore,
    events: &E,
    entries: &[OutboxEntry],
) -> Vec<Option<bool>> {
    let on = store.settings().match_events;
    let due: Vec<(usize, MatchEvent)> = entries
        .iter()
        .enumerate()
        .filter(|(_, e)| on && e.event_pending)
        .filter_map(|(i, e)| e.event().map(|event| (i, event)))
        .collect();
    let mut sent = vec![None; entries.len()];
    if due.is_empty() {
        return sent;
    }
    if !E::PUBLISHES {
        // A join leaves its match's event to the matcher by design (only
        // the matcher publishes): nothing failed, so nothing is logged.
        for (i, _) in &due {
            sent[*i] = Some(false);
        }
        return sent;
    }
    let batch: Vec<MatchEvent> = due.iter().map(|(_, e)| e.clone()).collect();
    let results = events.publish(&batch).await;
    for (k, (i, event)) in due.iter().enumerate() {
        let ok = matches!(results.get(k), Some(Ok(())));
        if !ok {
            if let Some(Err(e)) = results.get(k) {
                tracing::info!(match_id = %event.match_id, error = %e, "match event not sent; will retry");
            }
        }
        sent[*i] = Some(ok);
    }
    sent
}

/// When to try a match event again: at once when this caller does not
/// publish (a join leaves it to the matcher), else with the entry's backoff.
fn event_retry(entry: &OutboxEntry, publishes: bool) -> Duration {
    if publishes {
        backoff(entry.attempts)
    } else {
        Duration::ZERO
    }
}

/// What delivering one entry came to.
struct Outcome {
    fate: Fate,
    /// Connections found gone, to forget.
    gone: Vec<ConnectionId>,
    /// Young connections that answered 410 while their player was told on
    /// another one: each gets the match on its own (a MATCH_FOUND entry only).
    replay_to: Vec<ConnectionId>,
}

impl Outcome {
    fn just(fate: Fate) -> Self {
        Self {
            fate,
            gone: Vec::new(),
            replay_to: Vec::new(),
        }
    }
}

/// Pushes one entry to every connection of every target. Young connections
/// are never counted as gone (their `$connect` may still be finishing): a
/// 410 from one is retried.
async fn deliver_one<P: Pusher>(
    pusher: &P,
    entry: &OutboxEntry,
    push_timeout: Duration,
) -> Outcome {
    if entry.record.is_none() && entry.note.is_none() && entry.message().is_none() {
        // The match record expired before anyone could be told.
        return Outcome::just(Fate::Drop("match record expired"));
    }
    if entry.targets.is_empty() {
        return Outcome::just(Fate::Delivered);
    }
    // One payload for all, or one per target (a player's own token or
    // rating change).
    let shared = if entry.is_personal() {
        None
    } else {
        match entry.message().map(|m| m.to_bounded_json()) {
            None => return Outcome::just(Fate::Drop("match record expired")),
            Some(Ok(payload)) => Some(payload),
            Some(Err(e)) => {
                tracing::error!(id = %entry.id, error = %e, "notification too large for API Gateway; dropped, never retried");
                return Outcome::just(Fate::Drop("message too large"));
            }
        }
    };
    let mut payloads: Vec<Vec<String>> = Vec::with_capacity(entry.targets.len());
    for target in &entry.targets {
        let list = match &shared {
            Some(payload) => vec![payload.clone()],
            None => {
                let Some(messages) = entry.messages_for(target) else {
                    return Outcome::just(Fate::Drop("match record expired"));
                };
                let mut list = Vec::with_capacity(messages.len());
                for m in messages {
                    match m.to_bounded_json() {
                        Ok(payload) => list.push(payload),
                        Err(e) => {
                            tracing::error!(id = %entry.id, error = %e, "notification too large for API Gateway; dropped, never retried");
                            return Outcome::just(Fate::Drop("message too large"));
                        }
                    }
                }
                list
            }
        };
        payloads.push(list);
    }
    // A target's messages go to each of its connections in order.
    let pushes = entry
        .targets
        .iter()
        .zip(&payloads)
        .flat_map(|(target, list)| {
            target.connections.iter().map(move |conn| async move {
                let mut result = Ok(());
                for payload in list {
                    result = match tokio::time::timeout(
                        push_timeout,
                        pusher.push(conn, payload.as_bytes()),
                    )
                    .await
                    {
                        Ok(result) => result,
                        Err(_) => Err(PushError::Retryable("timed out".into())),
                    };
                    if result.is_err() {
                        break;
                    }
                }
                (target, conn, result)
            })
        });
    let results = join_all(pushes).await;

    let mut told = std::collections::BTreeSet::new();
    let mut gone = Vec::new();
    let mut early = Vec::new();
    let mut too_large = false;
    for (target, conn, result) in results {
        match result {
            Ok(()) => {
                told.insert(target.index);
            }
            Err(PushError::Gone) if target.young.contains(conn) => {
                tracing::info!(connection = %conn, "410 from a connection registered moments ago; will retry");
                early.push((target.index, conn.clone()));
            }
            Err(PushError::Gone) => gone.push(conn.clone()),
            Err(PushError::TooLarge) => too_large = true,
            Err(PushError::Retryable(reason)) => {
                tracing::info!(connection = %conn, %reason, attempts = entry.attempts, "push failed; will retry");
            }
        }
    }
    if too_large {
        tracing::error!(id = %entry.id, "API Gateway refused the message as too large; dropped, never retried");
        return Outcome {
            fate: Fate::Drop("message too large"),
            gone,
            replay_to: Vec::new(),
        };
    }
    // A young connection of a player told elsewhere gets the match on its
    // own; one of a player not told yet is covered by retrying the player.
    let replay_to = if matches!(entry.id.kind(), NotificationKind::MatchFound { .. }) {
        early
            .into_iter()
            .filter(|(index, _)| told.contains(index))
            .map(|(_, conn)| conn)
            .collect()
    } else {
        Vec::new()
    };
    let pending: Vec<u32> = entry
        .targets
        .iter()
        .map(|t| t.index)
        .filter(|i| !told.contains(i))
        .collect();
    let fate = if pending.is_empty() {
        Fate::Delivered
    } else {
        // Somebody was not reachable now (no connection, all gone, or
        // throttled): they may reconnect, so keep trying until the record
        // expires.
        Fate::Retry(backoff(entry.attempts), pending)
    };
    Outcome {
        fate,
        gone,
        replay_to,
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
