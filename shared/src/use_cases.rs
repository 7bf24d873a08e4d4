//! The application's use cases: what one request means, independent of how
//! it arrived. The adapters (Lambda handlers, the local stack) parse a
//! request, call exactly one of these and map the typed outcome to a
//! response.

use futures_util::future::join_all;

use crate::config::World;
use crate::delivery::{deliver_now, Pusher};
use crate::domain::{
    ConnectionId, JoinOutcome, LeaveOutcome, PlayerId, PlayerStatus, QueuePosition, QueueStatus,
    ServerMessage, TicketData,
};
use crate::error::StoreError;
use crate::store::{MatchStore, Registered, Unregistered};

/// Joins `player` to `world` and tells the player's WebSocket connections:
/// a QUEUED push after a queued join, or MATCH_FOUND to every participant
/// right away after an instant match. Pushing is best effort and never
/// fails the join: MATCH_FOUND stays in the outbox for the matcher to retry,
/// and a player who misses QUEUED can ask `my-status`.
#[tracing::instrument(level = "debug", skip(store, pusher, world, data), fields(world = %world.name))]
pub async fn join_and_notify<P: Pusher>(
    store: &MatchStore,
    pusher: &P,
    world: &World,
    player: &PlayerId,
    data: Option<&TicketData>,
) -> Result<JoinOutcome, StoreError> {
    let outcome = store.join(world, player, data).await?;
    match &outcome {
        JoinOutcome::Queued(q) => push_queued(store, pusher, player, q).await,
        JoinOutcome::Matched { notifications, .. } => {
            match deliver_now(store, pusher, notifications).await {
                Ok(report) => tracing::debug!(?report, "MATCH_FOUND pushed"),
                // The notifications stay in the outbox; the matcher retries.
                Err(e) => {
                    tracing::warn!(error = %e, "MATCH_FOUND push failed; left to the matcher")
                }
            }
        }
        JoinOutcome::AlreadyQueued(_) | JoinOutcome::QueueFull { .. } => {}
    }
    Ok(outcome)
}

/// Tells the player's connections they are queued. Failures are only logged:
/// the join itself succeeded and the player can poll my-status.
async fn push_queued<P: Pusher>(
    store: &MatchStore,
    pusher: &P,
    player: &PlayerId,
    q: &QueuePosition,
) {
    let connections = match store.connections_of(player).await {
        Ok(c) => c,
        Err(e) => {
            tracing::warn!(error = %e, "cannot look up connections for the QUEUED push");
            return;
        }
    };
    if connections.is_empty() {
        return;
    }
    let payload = ServerMessage::Queued {
        world_type: q.world_type.clone(),
        position: q.position,
        queue_size: q.queue_size,
        estimated_wait_seconds: q.estimated_wait_seconds,
    }
    .to_json();
    let results = join_all(
        connections
            .iter()
            .map(|c| pusher.push(c, payload.as_bytes())),
    )
    .await;
    for (connection, result) in connections.iter().zip(results) {
        if let Err(e) = result {
            tracing::info!(%connection, error = %e, "QUEUED push failed");
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

/// A world's queue as a whole.
pub async fn queue_status(store: &MatchStore, world: &World) -> Result<QueueStatus, StoreError> {
    store.queue_status(world).await
}

/// A WebSocket connection of `player` opened (`$connect`, token verified).
pub async fn connect(
    store: &MatchStore,
    connection: &ConnectionId,
    player: &PlayerId,
) -> Result<Registered, StoreError> {
    store.register_connection(connection, player).await
}

/// A WebSocket connection closed (`$disconnect`).
pub async fn disconnect(
    store: &MatchStore,
    connection: &ConnectionId,
) -> Result<Unregistered, StoreError> {
    store.unregister_connection(connection).await
}
