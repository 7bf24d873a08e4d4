//! Party use cases: create, join, cancel.

use crate::config::World;
use crate::delivery::Pusher;
use crate::domain::{PartyCancelOutcome, PartyCreateOutcome, PartyId, PartyJoinOutcome, PlayerId};
use crate::error::StoreError;
use crate::store::{JoinInput, MatchStore};

use super::push_match_found;

/// Why a party request was refused before anything was written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PartyRejection {
    #[error("a party needs at least one player besides the leader")]
    NoOtherMembers,
    #[error("a party of {size} players is larger than world {world} allows ({max})")]
    TooLarge {
        world: crate::domain::WorldName,
        size: usize,
        max: u32,
    },
}

/// `leader` creates a party of `world` with `members` (the leader may be
/// listed too; duplicates count once), queuing in the worlds of
/// `input.also` too. Everyone listed gets a PARTY_UPDATE
/// (through the outbox) and joins with [`join_party`].
#[tracing::instrument(level = "debug", skip(store, world, members, input), fields(world = %world.name))]
pub async fn create_party(
    store: &MatchStore,
    world: &World,
    leader: &PlayerId,
    members: &[PlayerId],
    input: &JoinInput<'_>,
) -> Result<Result<PartyCreateOutcome, PartyRejection>, StoreError> {
    let mut invited: Vec<PlayerId> = Vec::with_capacity(members.len());
    for m in members {
        if m != leader && !invited.contains(m) {
            invited.push(m.clone());
        }
    }
    if invited.is_empty() {
        return Ok(Err(PartyRejection::NoOtherMembers));
    }
    let size = invited.len() + 1;
    // A party queuing in several worlds fits each.
    let worlds = std::iter::once(world).chain(input.also.iter().map(|a| a.world));
    for w in worlds {
        if size > w.max_party_size as usize {
            return Ok(Err(PartyRejection::TooLarge {
                world: w.name.clone(),
                size,
                max: w.max_party_size,
            }));
        }
    }
    store
        .create_party_with(world, leader, &invited, input)
        .await
        .map(Ok)
}

/// `player` joins `party` (of `world`). When the party is complete it waits
/// as one ticket, or is matched at once: MATCH_FOUND then goes to every
/// participant right away, as after a join.
#[tracing::instrument(level = "debug", skip(store, pusher, world, input), fields(world = %world.name))]
pub async fn join_party<P: Pusher>(
    store: &MatchStore,
    pusher: &P,
    world: &World,
    party: &PartyId,
    player: &PlayerId,
    input: &JoinInput<'_>,
) -> Result<PartyJoinOutcome, StoreError> {
    let outcome = store
        .join_party_claiming(world, party, player, input, true)
        .await?;
    if let PartyJoinOutcome::Matched { claimed, .. } = &outcome {
        push_match_found(store, pusher, claimed).await;
    }
    Ok(outcome)
}

/// `player`, a member of `party`, cancels it (or declines the invitation).
pub async fn cancel_party(
    store: &MatchStore,
    party: &PartyId,
    player: &PlayerId,
) -> Result<PartyCancelOutcome, StoreError> {
    store.cancel_party(party, player).await
}
