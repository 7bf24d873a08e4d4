//! `lua/party_join.lua`: an invited player joins a party; the last one puts
//! the party in the queue as one ticket (and may match it at once).

use std::time::Duration;

use super::reply::{FormedMatches, Reply};
use super::MatchStore;
use crate::config::World;
use crate::domain::{
    PartyId, PartyJoinOutcome, PartyView, PlayerId, ProposalView, Rating, TicketData, WaitStats,
    WorldName,
};
use crate::error::StoreError;
use crate::scripts::SCRIPTS;

const SCRIPT: &str = "party_join.lua";

impl MatchStore {
    /// `player` joins `party`, a party of `world` (the world the id names).
    /// `claimed` is the player's verified rating claim, if any.
    #[tracing::instrument(level = "debug", skip(self, world, data), fields(world = %world.name))]
    pub async fn join_party(
        &self,
        world: &World,
        party: &PartyId,
        player: &PlayerId,
        data: Option<&TicketData>,
        claimed: Option<Rating>,
    ) -> Result<PartyJoinOutcome, StoreError> {
        let k = self.keys();
        let wk = k.world(&world.name);
        let mut inv = SCRIPTS.party_join.prepare_invoke();
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
        for key in wk.block() {
            inv.key(key);
        }
        for key in k.proposal_block() {
            inv.key(key);
        }
        inv.arg(player.as_str())
            .arg(party.as_str())
            .arg(world.name.as_str())
            .arg(data.map_or("", TicketData::as_json))
            .arg(claimed.map(|c| c.value().to_string()).unwrap_or_default())
            .arg(self.world_config(world).as_ref());

        let mut reply = Reply::new(SCRIPT, self.invoke(&inv, false).await?)?;
        let status = reply.text("status")?;
        let detail = reply.text("detail")?;
        let position = reply.uint("position")?;
        let queue_size = reply.uint("queue size")?;
        let rating = reply
            .optional_text("rating")?
            .map(|r| Rating::parse(&r))
            .transpose();
        let bad = |what: &str, e: &dyn std::fmt::Display| {
            StoreError::UnexpectedReply(format!("{SCRIPT}: {what}: {e}"))
        };
        let rating = rating.map_err(|e| bad("rating", &e))?;
        let view = |json: &str| -> Result<PartyView, StoreError> {
            serde_json::from_str(json).map_err(|e| bad("party", &e))
        };
        let world_type = world.name.clone();
        let outcome = match status.as_str() {
            "JOINED" => PartyJoinOutcome::Joined(view(&detail)?),
            "ALREADY" => PartyJoinOutcome::AlreadyJoined(view(&detail)?),
            "QUEUED" => {
                let party = view(&detail)?;
                let mut q = self.queue_position(
                    world_type,
                    position,
                    queue_size,
                    WaitStats::default(),
                    rating,
                    Duration::ZERO,
                );
                q.party = Some(party);
                PartyJoinOutcome::Queued(q)
            }
            "MATCHED" => {
                let FormedMatches {
                    record,
                    formed,
                    notifications,
                } = reply.formed_matches(player)?;
                PartyJoinOutcome::Matched {
                    party: view(&detail)?,
                    record,
                    formed,
                    notifications,
                }
            }
            "NOT_FOUND" => PartyJoinOutcome::NotFound,
            "PROPOSED" => PartyJoinOutcome::Proposed(
                serde_json::from_str::<ProposalView>(&detail).map_err(|e| bad("proposal", &e))?,
            ),
            "COOLING_DOWN" => PartyJoinOutcome::CoolingDown {
                retry_after_ms: detail.parse().map_err(|e| bad("cool-down", &e))?,
            },
            "BUSY" => PartyJoinOutcome::Busy {
                world_type: WorldName::parse(&detail).map_err(|e| bad("world", &e))?,
            },
            "IN_PARTY" => PartyJoinOutcome::InParty {
                party_id: PartyId::parse(&detail).map_err(|e| bad("party id", &e))?,
            },
            "ABSENT" => PartyJoinOutcome::NotConnected { world_type },
            "NO_RATING" => PartyJoinOutcome::RatingRequired { world_type },
            "BAD_RATING" => PartyJoinOutcome::InvalidRating {
                world_type,
                rating: Rating::parse(&detail).map_err(|e| bad("rating", &e))?,
            },
            "FULL" => PartyJoinOutcome::QueueFull {
                world_type,
                queue_size,
            },
            other => {
                return Err(StoreError::UnexpectedReply(format!(
                    "{SCRIPT}: status {other:?}"
                )))
            }
        };
        reply.finish()?;
        Ok(outcome)
    }
}
