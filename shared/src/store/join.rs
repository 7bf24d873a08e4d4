//! `lua/join.lua`: put a player in a world's queue, matching at once when
//! the join completes a group (instant match).

use std::time::Duration;

use super::reply::{FormedMatches, Reply};
use super::MatchStore;
use crate::config::World;
use crate::domain::{
    ConnectionId, JoinOutcome, Latencies, MatchId, MatchLifecycle, PlayerId, ProposalView,
    QueuePosition, RatedTicket, Rating, TicketData, WaitStats, WorldName,
};
use crate::error::StoreError;
use crate::scripts::SCRIPTS;

const SCRIPT: &str = "join.lua";

/// What a join carries besides the player and the world.
#[derive(Debug, Clone, Copy, Default)]
pub struct JoinInput<'a> {
    pub data: Option<&'a TicketData>,
    /// The rating in the caller's verified token claim.
    pub claimed: Option<Rating>,
    /// Worlds with regions: what the client measured.
    pub latencies: Option<&'a Latencies>,
}

/// A join's outcome and, when it queued, the player's connections (read in
/// the same call, for the QUEUED push).
#[derive(Debug, Clone, PartialEq)]
pub struct JoinReply {
    pub outcome: JoinOutcome,
    pub connections: Vec<ConnectionId>,
}

impl MatchStore {
    /// Puts `player` in `world`'s queue; see [`JoinOutcome`]. In a rated
    /// world the player's rating is the ratings store's entry, else
    /// `claimed` (a verified token claim), else the configured default.
    /// Matches it forms are left in the outbox for the matcher to deliver.
    pub async fn join(
        &self,
        world: &World,
        player: &PlayerId,
        data: Option<&TicketData>,
        claimed: Option<Rating>,
    ) -> Result<JoinOutcome, StoreError> {
        let input = JoinInput {
            data,
            claimed,
            latencies: None,
        };
        Ok(self.join_reply(world, player, &input, false).await?.outcome)
    }

    /// [`MatchStore::join`], with the player's connections when it queued
    /// and, with `claim`, the outbox entries of the matches it formed
    /// claimed for the caller to deliver at once (and settle).
    #[tracing::instrument(level = "debug", skip(self, world, input), fields(world = %world.name))]
    pub async fn join_reply(
        &self,
        world: &World,
        player: &PlayerId,
        input: &JoinInput<'_>,
        claim: bool,
    ) -> Result<JoinReply, StoreError> {
        let config = self.world_config(world)?;
        // The script is given the joined world's keys only (its cost does
        // not grow with the number of configured worlds); when the player
        // holds a ticket elsewhere it answers STALE with that world, and the
        // call is repeated with that world's keys too (or, for a world no
        // longer configured, after dropping the ticket). Another join of the
        // same player can move the ticket in between, hence a few rounds.
        let mut also: Option<&World> = None;
        for _ in 0..3 {
            let mut worlds = vec![&world.name];
            worlds.extend(also.map(|w| &w.name));
            let mut inv = SCRIPTS.join.invocation(self.keys(), &worlds);
            inv.arg(player.as_str())
                .arg(input.data.map_or("", TicketData::as_json))
                .arg(
                    input
                        .claimed
                        .map(|c| c.value().to_string())
                        .unwrap_or_default(),
                )
                .arg(input.latencies.map(Latencies::as_arg).unwrap_or_default())
                .arg(config.as_ref())
                .arg(super::flag(claim));
            match self.decode_join(player, self.invoke(&inv, false).await?)? {
                Decoded::Reply(reply) => return Ok(*reply),
                Decoded::Stale(other) => match self.settings().worlds.get(&other) {
                    Some(w) if also.is_none_or(|a| a.name != w.name) => also = Some(w),
                    Some(_) => {
                        return Err(StoreError::UnexpectedReply(format!(
                            "{SCRIPT}: STALE ({other}) although its keys were given"
                        )))
                    }
                    // A ticket of a world removed from the configuration:
                    // nobody matches or sweeps it any more. Drop it, then
                    // join for real.
                    None => self.drop_stale_ticket(&other, player).await?,
                },
            }
        }
        Err(StoreError::UnexpectedReply(format!(
            "{SCRIPT}: the player's ticket kept moving between worlds"
        )))
    }

    fn decode_join(&self, player: &PlayerId, value: redis::Value) -> Result<Decoded, StoreError> {
        let mut reply = Reply::new(SCRIPT, value)?;
        let status = reply.text("status")?;
        let bad = |what: &str, e: &dyn std::fmt::Display| {
            StoreError::UnexpectedReply(format!("{SCRIPT}: {what}: {e}"))
        };
        let mut connections = Vec::new();
        let outcome = match status.as_str() {
            "STALE" => {
                let world = reply.parsed("world", WorldName::parse)?;
                reply.finish()?;
                return Ok(Decoded::Stale(world));
            }
            "QUEUED" => {
                let world = reply.parsed("world", WorldName::parse)?;
                let position = reply.uint("position")?;
                let queue_size = reply.uint("queue size")?;
                let stats = reply.wait_stats()?;
                let rating = reply.optional_rating("rating")?;
                connections = reply.connection_list("connections")?;
                // A new ticket has waited no time at all.
                JoinOutcome::Queued(self.queue_position(
                    world,
                    position,
                    queue_size,
                    stats,
                    rating,
                    Duration::ZERO,
                ))
            }
            "ALREADY" => {
                let world = reply.parsed("world", WorldName::parse)?;
                let position = reply.uint("position")?;
                let queue_size = reply.uint("queue size")?;
                let stats = reply.wait_stats()?;
                JoinOutcome::AlreadyQueued(self.queue_position(
                    world,
                    position,
                    queue_size,
                    stats,
                    None,
                    Duration::ZERO,
                ))
            }
            "MATCHED" => {
                reply.parsed("world", WorldName::parse)?;
                reply.uint("queue size")?;
                reply.optional_rating("rating")?;
                let FormedMatches {
                    record,
                    formed,
                    claimed,
                } = reply.formed_matches(player)?;
                JoinOutcome::Matched {
                    record,
                    formed,
                    claimed,
                }
            }
            "BACKFILLED" => {
                let joined = reply.match_with_lifecycle()?;
                let mut claimed = Vec::new();
                while reply.remaining() > 0 {
                    claimed.push(reply.outbox_entry()?);
                }
                JoinOutcome::Backfilled {
                    joined: Box::new(joined),
                    claimed,
                }
            }
            "PROPOSED" => JoinOutcome::Proposed(reply.json::<ProposalView>("proposal")?),
            "PENDING" => JoinOutcome::ProposalPending(reply.json::<ProposalView>("proposal")?),
            "IN_PARTY" => {
                // "" when the party is gone: no valid world name.
                let world = reply.text("world")?;
                JoinOutcome::InParty {
                    world_type: WorldName::parse(&world).map_err(|e| bad("world", &e))?,
                }
            }
            "IN_MATCH" => {
                let match_id = reply.parsed("match id", MatchId::parse)?;
                let raw = reply.text("lifecycle")?;
                let lifecycle = MatchLifecycle::parse(&raw).map_err(|e| bad("lifecycle", &e))?;
                JoinOutcome::InMatch {
                    match_id,
                    assignment: lifecycle.assignment.map(|a| a.seat_of(player)),
                }
            }
            "COOLING_DOWN" => JoinOutcome::CoolingDown {
                world_type: reply.parsed("world", WorldName::parse)?,
                retry_after_ms: reply.uint("retry after")?,
            },
            "FULL" => JoinOutcome::QueueFull {
                world_type: reply.parsed("world", WorldName::parse)?,
                queue_size: reply.uint("queue size")?,
            },
            "ABSENT" => JoinOutcome::NotConnected {
                world_type: reply.parsed("world", WorldName::parse)?,
            },
            "NO_RATING" => JoinOutcome::RatingRequired {
                world_type: reply.parsed("world", WorldName::parse)?,
            },
            "LATENCY_REQUIRED" => JoinOutcome::LatencyRequired {
                world_type: reply.parsed("world", WorldName::parse)?,
            },
            "BAD_RATING" => JoinOutcome::InvalidRating {
                world_type: reply.parsed("world", WorldName::parse)?,
                rating: reply.parsed("rating", Rating::parse)?,
            },
            other => {
                return Err(StoreError::UnexpectedReply(format!(
                    "{SCRIPT}: status {other:?}"
                )))
            }
        };
        reply.finish()?;
        Ok(Decoded::Reply(Box::new(JoinReply {
            outcome,
            connections,
        })))
    }

    /// A queue position with its wait estimate from the world's statistics
    /// and, in a rated world, the ticket's current window after `waited`.
    pub(super) fn queue_position(
        &self,
        world: WorldName,
        position: u64,
        queue_size: u64,
        stats: WaitStats,
        rating: Option<Rating>,
        waited: Duration,
    ) -> QueuePosition {
        let configured = self.settings().worlds.get(world.as_str());
        let team = configured.map_or(0, World::seats);
        let rated = configured
            .and_then(World::rating)
            .zip(rating)
            .map(|(rules, rating)| RatedTicket {
                rating,
                rating_window: rules.window_after(waited),
                relaxes_in_seconds: rules.relax_after.saturating_sub(waited).as_secs(),
            });
        QueuePosition {
            estimated_wait_seconds: if team == 0 {
                None
            } else {
                stats.estimate(position, team)
            },
            world_type: world,
            position,
            queue_size,
            rated,
            party: None,
        }
    }
}

enum Decoded {
    Reply(Box<JoinReply>),
    /// The player holds a ticket of this world, which is no longer configured.
    Stale(WorldName),
}
