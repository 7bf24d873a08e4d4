//! What join, party creation and party join share (`lua/_admission.lua`):
//! the refusals, decoded once into a [`Rejection`], and the second call a
//! player's ticket in another world takes (the script answers STALE when
//! it was not given that world's keys).

use std::future::Future;
use std::time::Duration;

use super::reply::Reply;
use super::MatchStore;
use crate::config::World;
use crate::domain::{
    MatchId, MatchLifecycle, PartyId, PlayerId, ProposalView, Rating, Rejection, WorldName,
};
use crate::error::StoreError;
use crate::keys::Features;

/// A reply of an admitting script: its own answer, or STALE.
pub(super) enum Admitted<T> {
    Reply(T),
    /// The player holds a ticket of this world, whose keys were not given.
    Stale(WorldName),
}

impl MatchStore {
    /// The rest of an admitting script's reply whose `status` is none of
    /// its own answers: STALE, or a refusal (made into the script's outcome
    /// by `rejected`); any other status is an unexpected reply. `player`:
    /// the one admitted (an IN_MATCH answer carries their seat).
    pub(super) fn refused<T>(
        &self,
        script: &str,
        status: &str,
        mut reply: Reply,
        player: &PlayerId,
        rejected: impl FnOnce(Rejection) -> T,
    ) -> Result<Admitted<T>, StoreError> {
        if status == "STALE" {
            let world = reply.parsed("world", WorldName::parse)?;
            reply.finish()?;
            return Ok(Admitted::Stale(world));
        }
        let rejection = self
            .rejection(status, &mut reply, player)?
            .ok_or_else(|| StoreError::UnexpectedReply(format!("{script}: status {status:?}")))?;
        reply.finish()?;
        Ok(Admitted::Reply(rejected(rejection)))
    }

    /// The refusal `status` names, its fields read from `reply`; `None`
    /// when `status` is no refusal.
    fn rejection(
        &self,
        status: &str,
        reply: &mut Reply,
        player: &PlayerId,
    ) -> Result<Option<Rejection>, StoreError> {
        let world = |reply: &mut Reply| reply.parsed("world", WorldName::parse);
        Ok(Some(match status {
            "ALREADY_QUEUED" => {
                let world_type = world(reply)?;
                let position = reply.uint("position")?;
                let queue_size = reply.uint("queue size")?;
                let stats = reply.wait_stats()?;
                let mut q = self.queue_position(
                    world_type,
                    position,
                    queue_size,
                    stats,
                    None,
                    Duration::ZERO,
                );
                q.also_queued_in = reply.world_list("also")?;
                Rejection::AlreadyQueued(q)
            }
            "PROPOSAL_PENDING" => {
                Rejection::ProposalPending(reply.json::<ProposalView>("proposal")?)
            }
            "IN_PARTY" => Rejection::InParty {
                party_id: reply.parsed("party id", PartyId::parse)?,
                world_type: world(reply)?,
            },
            "COOLING_DOWN" => Rejection::CoolingDown {
                retry_after_ms: reply.uint("retry after")?,
            },
            "IN_MATCH" => {
                let match_id = reply.parsed("match id", MatchId::parse)?;
                let lifecycle = reply.parsed("lifecycle", MatchLifecycle::parse)?;
                Rejection::InMatch {
                    match_id,
                    assignment: lifecycle.assignment.map(|a| a.seat_of(player)),
                }
            }
            "QUEUE_FULL" => Rejection::QueueFull {
                world_type: world(reply)?,
                queue_size: reply.uint("queue size")?,
            },
            "NOT_CONNECTED" => Rejection::NotConnected {
                world_type: world(reply)?,
            },
            "LATENCY_REQUIRED" => Rejection::LatencyRequired {
                world_type: world(reply)?,
            },
            "RATING_REQUIRED" => Rejection::RatingRequired {
                world_type: world(reply)?,
            },
            "INVALID_RATING" => Rejection::InvalidRating {
                world_type: world(reply)?,
                rating: reply.parsed("rating", Rating::parse)?,
            },
            "ATTRIBUTES_REQUIRED" => Rejection::AttributesRequired {
                world_type: world(reply)?,
                attribute: reply.text("attribute")?,
            },
            _ => return Ok(None),
        }))
    }

    /// Runs an admitting script for `joined` (the world joined, then any
    /// joined with it), given those worlds' keys and their queueGroups'
    /// (its cost does not grow with the number of configured worlds); when
    /// the player holds a ticket elsewhere the script answers STALE with
    /// that world, and `call` runs again with that world's group's keys too
    /// (`call` gets the worlds and the features of the call, which decide
    /// the keys it passes) (or, for a world no longer configured, after
    /// dropping the ticket). Another call of the same player can move the
    /// ticket in between, hence a few rounds.
    pub(super) async fn admitting<T, F, Fut>(
        &self,
        script: &str,
        joined: &[&World],
        player: &PlayerId,
        mut call: F,
    ) -> Result<T, StoreError>
    where
        F: FnMut(Vec<WorldName>, Features) -> Fut,
        Fut: Future<Output = Result<Admitted<T>, StoreError>>,
    {
        let mut carried: Vec<&World> = joined.to_vec();
        for w in joined {
            add_group(self, &mut carried, w);
        }
        for _ in 0..4 {
            let worlds = carried.iter().map(|w| w.name.clone()).collect();
            match call(worlds, self.features(&carried)).await? {
                Admitted::Reply(reply) => return Ok(reply),
                Admitted::Stale(other) => match self.settings().worlds.get(&other) {
                    Some(w) if !carried.iter().any(|c| c.name == w.name) => {
                        add_group(self, &mut carried, w)
                    }
                    Some(_) => {
                        return Err(StoreError::UnexpectedReply(format!(
                            "{script}: STALE ({other}) although its keys were given"
                        )))
                    }
                    // A ticket of a world removed from the configuration:
                    // nobody matches or sweeps it any more. Drop it, then
                    // run for real.
                    None => self.drop_stale_ticket(&other, player).await?,
                },
            }
        }
        Err(StoreError::UnexpectedReply(format!(
            "{script}: the player's ticket kept moving between worlds"
        )))
    }
}

/// Adds the worlds of `world`'s queueGroup that `carried` lacks.
fn add_group<'a>(store: &'a MatchStore, carried: &mut Vec<&'a World>, world: &'a World) {
    for w in store.group_of(world) {
        if !carried.iter().any(|c| c.name == w.name) {
            carried.push(w);
        }
    }
}
