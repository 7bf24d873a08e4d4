//! `lua/join.lua`: put a player in a world's queue, matching at once when
//! the join completes a group (instant match).

use std::time::Duration;

use super::reply::{FormedMatches, Reply};
use super::MatchStore;
use crate::config::World;
use crate::domain::{
    JoinOutcome, PlayerId, ProposalView, QueuePosition, RatedTicket, Rating, TicketData, WaitStats,
    WorldName,
};
use crate::error::StoreError;
use crate::scripts::{Invocation, SCRIPTS};

const SCRIPT: &str = "join.lua";

impl MatchStore {
    /// Puts `player` in `world`'s queue; see [`JoinOutcome`]. In a rated
    /// world the player's rating is the ratings store's entry, else
    /// `claimed` (a verified token claim), else the configured default.
    #[tracing::instrument(level = "debug", skip(self, world, data), fields(world = %world.name))]
    pub async fn join(
        &self,
        world: &World,
        player: &PlayerId,
        data: Option<&TicketData>,
        claimed: Option<Rating>,
    ) -> Result<JoinOutcome, StoreError> {
        if self.settings().worlds.get(&world.name).is_none() {
            return Err(StoreError::Rejected(format!(
                "world {} is not configured",
                world.name
            )));
        }
        // The script is given the joined world's keys only (its cost does
        // not grow with the number of configured worlds); when the player
        // holds a ticket elsewhere it answers STALE with that world, and the
        // call is repeated with that world's keys too (or, for a world no
        // longer configured, after dropping the ticket). Another join of the
        // same player can move the ticket in between, hence a few rounds.
        let mut also: Option<&World> = None;
        for _ in 0..3 {
            let inv = self.join_invocation(world, also, player, data, claimed);
            match self.decode_join(player, self.invoke(&inv, false).await?)? {
                Decoded::Outcome(outcome) => return Ok(*outcome),
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

    /// `join.lua`'s KEYS and ARGV, in the order of its header: the joined
    /// world first, then `also` (the world of the player's current ticket).
    fn join_invocation(
        &self,
        world: &World,
        also: Option<&World>,
        player: &PlayerId,
        data: Option<&TicketData>,
        claimed: Option<Rating>,
    ) -> Invocation<'static> {
        let k = self.keys();
        let mut inv = SCRIPTS.join.prepare_invoke();
        inv.key(k.tickets())
            .key(k.ticket_seq())
            .key(k.matches())
            .key(k.match_expiry())
            .key(k.player_match())
            .key(k.outbox())
            .key(k.match_seq())
            .key(k.presence())
            .key(k.player_ratings());
        for key in k.party_block() {
            inv.key(key);
        }
        for key in k.proposal_block() {
            inv.key(key);
        }
        let worlds: Vec<&World> = std::iter::once(world).chain(also).collect();
        for w in &worlds {
            for key in k.world(&w.name).block() {
                inv.key(key);
            }
        }
        inv.arg(player.as_str())
            .arg(1)
            .arg(data.map_or("", TicketData::as_json))
            .arg(claimed.map(|c| c.value().to_string()).unwrap_or_default())
            .arg(self.world_config(world).as_ref());
        for w in &worlds {
            inv.arg(w.name.as_str());
        }
        inv
    }

    fn decode_join(&self, player: &PlayerId, value: redis::Value) -> Result<Decoded, StoreError> {
        let mut reply = Reply::new(SCRIPT, value)?;
        let status = reply.text("status")?;
        let world = reply.parsed("world", WorldName::parse);
        if status == "STALE" {
            // The world is no longer configured, but its name is still valid.
            let world = world?;
            for what in ["position", "queue size", "window players", "window span"] {
                reply.uint(what)?;
            }
            reply.text("rating")?;
            reply.finish()?;
            return Ok(Decoded::Stale(world));
        }
        let world = world?;
        let position = reply.uint("position")?;
        let queue_size = reply.uint("queue size")?;
        let stats = WaitStats {
            players_matched: reply.uint("window players")?,
            span_ms: reply.uint("window span")?,
        };
        let rating = reply
            .optional_text("rating")?
            .map(|r| Rating::parse(&r))
            .transpose()
            .map_err(|e| StoreError::UnexpectedReply(format!("{SCRIPT}: {e}")))?;
        let outcome = match status.as_str() {
            "NO_RATING" => JoinOutcome::RatingRequired { world_type: world },
            "BAD_RATING" => JoinOutcome::InvalidRating {
                world_type: world,
                rating: rating.ok_or_else(|| {
                    StoreError::UnexpectedReply(format!("{SCRIPT}: BAD_RATING without a rating"))
                })?,
            },
            "QUEUED" | "ALREADY" => {
                // A new ticket has waited no time at all.
                let q =
                    self.queue_position(world, position, queue_size, stats, rating, Duration::ZERO);
                if status == "QUEUED" {
                    JoinOutcome::Queued(q)
                } else {
                    JoinOutcome::AlreadyQueued(q)
                }
            }
            "FULL" => JoinOutcome::QueueFull {
                world_type: world,
                queue_size,
            },
            "ABSENT" => JoinOutcome::NotConnected { world_type: world },
            "IN_PARTY" => JoinOutcome::InParty { world_type: world },
            "PROPOSED" => JoinOutcome::Proposed(reply.json::<ProposalView>("proposal")?),
            "PENDING" => JoinOutcome::ProposalPending(reply.json::<ProposalView>("proposal")?),
            "COOLING_DOWN" => JoinOutcome::CoolingDown {
                world_type: world,
                retry_after_ms: position,
            },
            "MATCHED" => {
                let FormedMatches {
                    record,
                    formed,
                    notifications,
                } = reply.formed_matches(player)?;
                JoinOutcome::Matched {
                    record,
                    formed,
                    notifications,
                }
            }
            other => {
                return Err(StoreError::UnexpectedReply(format!(
                    "{SCRIPT}: status {other:?}"
                )))
            }
        };
        reply.finish()?;
        Ok(Decoded::Outcome(Box::new(outcome)))
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
    Outcome(Box<JoinOutcome>),
    /// The player holds a ticket of this world, which is no longer configured.
    Stale(WorldName),
}
