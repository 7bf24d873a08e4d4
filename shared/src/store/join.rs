//! `lua/join.lua`: put a player in a world's queue, matching at once when
//! the join completes a group (instant match).

use std::time::Duration;

use super::admission::Admitted;
use super::reply::{FormedMatches, Reply};
use super::MatchStore;
use crate::config::World;
use crate::domain::{
    ConnectionId, JoinOutcome, Latencies, PlayerId, ProposalView, QueuePosition, RatedTicket,
    Rating, TicketData, WaitStats, WorldName,
};
use crate::error::StoreError;
use crate::scripts::{Invocation, SCRIPTS};

const SCRIPT: &str = "join.lua";

/// What a join carries besides the player and the world.
#[derive(Debug, Clone, Copy, Default)]
pub struct JoinInput<'a> {
    pub data: Option<&'a TicketData>,
    /// The rating in the caller's verified token claim.
    pub claimed: Option<Rating>,
    /// Worlds with regions: what the client measured.
    pub latencies: Option<&'a Latencies>,
    /// Worlds with attributes: the client's attributes as the scripts take
    /// them (`TicketAttributes::encode`; trusted ones are read by the
    /// script from the attribute store).
    pub attributes: Option<&'a str>,
    /// The other worlds of the world's queueGroup the ticket waits in too,
    /// each with the client's attributes there (validated by the caller:
    /// grouped with the world, each once).
    pub also: &'a [AlsoJoined<'a>],
}

/// Another world a ticket joins at the same time (see [`JoinInput::also`]).
#[derive(Debug, Clone, Copy)]
pub struct AlsoJoined<'a> {
    pub world: &'a World,
    /// The client's attributes there, as the scripts take them.
    pub attributes: Option<&'a str>,
}

impl JoinInput<'_> {
    /// The `data`, `claimed`, `latencies` and `attributes` arguments, in
    /// that order (as join.lua, party_create.lua and party_join.lua take
    /// them).
    pub(super) fn add_args(&self, inv: &mut Invocation<'_>) {
        inv.arg(self.data.map_or("", TicketData::as_json))
            .arg(
                self.claimed
                    .map(|c| c.value().to_string())
                    .unwrap_or_default(),
            )
            .arg(self.latencies.map(Latencies::as_arg).unwrap_or_default())
            .arg(self.attributes.unwrap_or_default());
    }
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
            ..JoinInput::default()
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
        let config = config.as_ref();
        let (joined, also) = self.also_arguments(world, input.also)?;
        let also = &also;
        self.admitting(SCRIPT, &joined, player, |worlds, features| async move {
            let names: Vec<&WorldName> = worlds.iter().collect();
            let mut inv = SCRIPTS.join.invocation_with(self.keys(), &names, features);
            inv.arg(player.as_str());
            input.add_args(&mut inv);
            inv.arg(config).arg(super::flag(claim));
            inv.rest(also);
            self.decode_join(player, self.invoke(&inv, false).await?)
        })
        .await
    }

    /// The worlds a ticket joins (`world`, then those of `also`) and the
    /// arguments describing the others: per world, its configuration and
    /// the client's attributes there (join.lua's, party_create.lua's and
    /// party_join.lua's `also`).
    pub(super) fn also_arguments<'w>(
        &self,
        world: &'w World,
        also: &[AlsoJoined<'w>],
    ) -> Result<(Vec<&'w World>, Vec<String>), StoreError> {
        let mut joined = Vec::with_capacity(1 + also.len());
        joined.push(world);
        let mut args = Vec::with_capacity(2 * also.len());
        for a in also {
            joined.push(a.world);
            args.push(self.world_config(a.world)?.into_owned());
            args.push(a.attributes.unwrap_or_default().to_owned());
        }
        Ok((joined, args))
    }

    fn decode_join(
        &self,
        player: &PlayerId,
        value: redis::Value,
    ) -> Result<Admitted<JoinReply>, StoreError> {
        let mut reply = Reply::new(SCRIPT, value)?;
        let status = reply.text("status")?;
        let mut connections = Vec::new();
        let outcome = match status.as_str() {
            "QUEUED" => {
                let world = reply.parsed("world", WorldName::parse)?;
                let position = reply.uint("position")?;
                let queue_size = reply.uint("queue size")?;
                let stats = reply.wait_stats()?;
                let rating = reply.optional_rating("rating")?;
                connections = reply.connection_list("connections")?;
                let also_in = reply.world_list("also")?;
                // A new ticket has waited no time at all.
                let mut q =
                    self.queue_position(world, position, queue_size, stats, rating, Duration::ZERO);
                q.also_queued_in = also_in;
                JoinOutcome::Queued(q)
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
            other => {
                return self.refused(SCRIPT, other, reply, player, |r| JoinReply {
                    outcome: JoinOutcome::Rejected(r),
                    connections: Vec::new(),
                })
            }
        };
        reply.finish()?;
        Ok(Admitted::Reply(JoinReply {
            outcome,
            connections,
        }))
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
            also_queued_in: Vec::new(),
        }
    }
}
