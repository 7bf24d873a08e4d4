//! The application's use cases: what one request means, independent of how
//! it arrived. The adapters (Lambda handlers, the local stack) parse a
//! request, call exactly one of these and map the typed outcome to a
//! response.

pub mod admin;
mod lifecycle;
mod parties;
mod proposals;

use std::time::Duration;

use futures_util::future::join_all;

pub use lifecycle::{
    assign_match, cancel_backfill, is_server, match_for_server, renew_backfill, report_result,
    request_backfill, ResultReport,
};
pub use parties::{cancel_party, create_party, join_party, PartyRejection};
pub use proposals::answer_proposal;

use crate::config::World;
use crate::delivery::{deliver_claimed, deliver_now, Pusher};
use crate::domain::{
    ConnectionId, JoinOutcome, LeaveOutcome, MatchId, MatchWithLifecycle, PlayerId, PlayerStatus,
    QueuePosition, QueueStatus, Rating, ServerMessage, WorldName,
};
use crate::error::StoreError;
use crate::store::{Heartbeat, JoinInput, MatchStore, Registered, Unregistered};

/// The most a join waits on any one push before answering: a slow or
/// failing `@connections` endpoint must not hold the caller's HTTP request.
/// What does not get through in time stays in the outbox for the matcher.
pub const JOIN_PUSH_TIMEOUT: Duration = Duration::from_millis(800);

/// Joins `player` to `world` and tells the player's WebSocket connections:
/// a QUEUED push after a queued join, or MATCH_FOUND to every participant
/// right away after an instant match. Pushing is best effort, bounded by
/// [`JOIN_PUSH_TIMEOUT`], and never fails the join: MATCH_FOUND stays in the
/// outbox for the matcher to retry, and a player who misses QUEUED can ask
/// `my-status`.
#[tracing::instrument(level = "debug", skip(store, pusher, world, input), fields(world = %world.name))]
pub async fn join_and_notify<P: Pusher>(
    store: &MatchStore,
    pusher: &P,
    world: &World,
    player: &PlayerId,
    input: &JoinInput<'_>,
) -> Result<JoinOutcome, StoreError> {
    let reply = store.join_reply(world, player, input, true).await?;
    let outcome = reply.outcome;
    match &outcome {
        JoinOutcome::Queued(q) => push_queued(pusher, &reply.connections, q).await,
        JoinOutcome::Matched { claimed, .. } | JoinOutcome::Backfilled { claimed, .. } => {
            push_match_found(store, pusher, claimed).await
        }
        // MATCH_PROPOSED goes through the outbox (a note); the matcher
        // delivers it within a tick.
        JoinOutcome::Proposed(_) | JoinOutcome::Rejected(_) => {}
    }
    Ok(outcome)
}

/// Delivers the MATCH_FOUND notifications a call formed (and claimed in the
/// same call) right away, bounded by [`JOIN_PUSH_TIMEOUT`]; one settle
/// follows. What does not get through stays in the outbox for the matcher.
async fn push_match_found<P: Pusher>(
    store: &MatchStore,
    pusher: &P,
    claimed: &[crate::domain::OutboxEntry],
) {
    match deliver_claimed(store, pusher, claimed.to_vec(), JOIN_PUSH_TIMEOUT).await {
        Ok(report) => tracing::debug!(?report, "MATCH_FOUND pushed"),
        Err(e) => tracing::warn!(error = %e, "MATCH_FOUND push failed; left to the matcher"),
    }
}

/// Delivers the notifications `ids` right away (claimed first), bounded by
/// [`JOIN_PUSH_TIMEOUT`]; what does not get through stays in the outbox.
async fn push_notifications<P: Pusher>(
    store: &MatchStore,
    pusher: &P,
    ids: &[crate::domain::NotificationId],
) {
    match deliver_now(store, pusher, ids, JOIN_PUSH_TIMEOUT).await {
        Ok(report) => tracing::debug!(?report, "MATCH_FOUND pushed"),
        Err(e) => tracing::warn!(error = %e, "MATCH_FOUND push failed; left to the matcher"),
    }
}

/// Tells the player's connections (read by the join itself) they are
/// queued. Failures are only logged: the join itself succeeded and the
/// player can poll my-status.
async fn push_queued<P: Pusher>(pusher: &P, connections: &[ConnectionId], q: &QueuePosition) {
    if connections.is_empty() {
        return;
    }
    let payload = ServerMessage::Queued {
        world_type: q.world_type.clone(),
        position: q.position,
        queue_size: q.queue_size,
        estimated_wait_seconds: q.estimated_wait_seconds,
        also_queued_in: q.also_queued_in.clone(),
    }
    .to_json();
    let results = join_all(connections.iter().map(|c| async {
        tokio::time::timeout(JOIN_PUSH_TIMEOUT, pusher.push(c, payload.as_bytes())).await
    }))
    .await;
    for (connection, result) in connections.iter().zip(results) {
        match result {
            Ok(Ok(())) => {}
            Ok(Err(e)) => tracing::info!(%connection, error = %e, "QUEUED push failed"),
            Err(_) => tracing::info!(%connection, "QUEUED push timed out"),
        }
    }
}

/// Removes `player`'s ticket from `world`.
pub async fn leave(
    store: &MatchStore,
    world: &World,
    player: &PlayerId,
) -> Result<LeaveOutcome, StoreError> {
    store.leave(world, player).await
}

/// Where `player` stands.
pub async fn player_status(
    store: &MatchStore,
    player: &PlayerId,
) -> Result<PlayerStatus, StoreError> {
    store.player_status(player).await
}

/// The record of match `id`, for one of its participants only: anyone else
/// learns nothing, not even that it exists.
pub async fn match_for_participant(
    store: &MatchStore,
    id: &MatchId,
    player: &PlayerId,
) -> Result<Option<MatchWithLifecycle>, StoreError> {
    Ok(store
        .match_record(id)
        .await?
        .filter(|record| record.includes(player)))
}

/// A world's queue as a whole.
pub async fn queue_status(store: &MatchStore, world: &World) -> Result<QueueStatus, StoreError> {
    store.queue_status(world).await
}

/// A WebSocket connection of `player` opened (`$connect`, token verified).
/// A connection evicted to stay within the per-player cap is closed, so no
/// open socket is left unregistered (and silent).
pub async fn connect<P: Pusher>(
    store: &MatchStore,
    pusher: &P,
    connection: &ConnectionId,
    player: &PlayerId,
) -> Result<Registered, StoreError> {
    let registered = store.register_connection(connection, player).await?;
    if let Some(evicted) = &registered.evicted {
        close(
            pusher,
            evicted,
            "evicted: the player opened too many connections",
        )
        .await;
    }
    Ok(registered)
}

/// A client's heartbeat on `connection`. A connection that is not
/// registered any more (its registration lapsed, or it was evicted) is
/// closed, so the client reconnects with a token instead of waiting on a
/// socket that hears nothing.
pub async fn heartbeat<P: Pusher>(
    store: &MatchStore,
    pusher: &P,
    connection: &ConnectionId,
) -> Result<Heartbeat, StoreError> {
    let beat = store.heartbeat(connection).await?;
    if beat == Heartbeat::Unknown {
        close(
            pusher,
            connection,
            "heartbeat on an unregistered connection",
        )
        .await;
    }
    Ok(beat)
}

async fn close<P: Pusher>(pusher: &P, connection: &ConnectionId, why: &'static str) {
    match tokio::time::timeout(JOIN_PUSH_TIMEOUT, pusher.close(connection)).await {
        Ok(Ok(())) => tracing::info!(%connection, why, "connection closed"),
        Ok(Err(e)) => tracing::info!(%connection, why, error = %e, "closing the connection failed"),
        Err(_) => tracing::info!(%connection, why, "closing the connection timed out"),
    }
}

/// A WebSocket connection closed (`$disconnect`).
pub async fn disconnect(
    store: &MatchStore,
    connection: &ConnectionId,
) -> Result<Unregistered, StoreError> {
    store.unregister_connection(connection).await
}

/// What writing a rating came to.
#[derive(Debug, Clone, PartialEq)]
pub enum RatingWrite {
    /// Stored; the rating it replaced, if any.
    Stored { previous: Option<Rating> },
    /// The caller's token does not carry the configured writer scope (or no
    /// writer scope is configured); nothing changed.
    Forbidden,
    /// Outside the configured range; nothing changed.
    OutOfRange { min: f64, max: f64 },
}

/// Writes `player`'s rating to the trusted ratings store, for `world` or
/// (`None`) every world, if the caller's token carries the configured writer
/// scope. `caller_scopes` are the verified token's scopes.
pub async fn set_rating(
    store: &MatchStore,
    caller_scopes: &[&str],
    player: &PlayerId,
    world: Option<&WorldName>,
    rating: Rating,
) -> Result<RatingWrite, StoreError> {
    let settings = &store.settings().ratings;
    let allowed = settings
        .writer_scope
        .as_deref()
        .is_some_and(|scope| caller_scopes.contains(&scope));
    if !allowed {
        return Ok(RatingWrite::Forbidden);
    }
    if !(settings.min..=settings.max).contains(&rating.value()) {
        return Ok(RatingWrite::OutOfRange {
            min: settings.min,
            max: settings.max,
        });
    }
    let previous = store.set_rating(player, world, rating).await?;
    Ok(RatingWrite::Stored { previous })
}
