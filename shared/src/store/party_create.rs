//! `lua/party_create.lua`: a leader creates a party and invites others.

use super::reply::Reply;
use super::{JoinInput, MatchStore};
use crate::config::World;
use crate::domain::{
    Latencies, MatchId, PartyCreateOutcome, PartyId, PartyView, PlayerId, Rating, TicketData,
    WorldName,
};
use crate::error::StoreError;
use crate::scripts::SCRIPTS;

const SCRIPT: &str = "party_create.lua";

impl MatchStore {
    /// Creates a party of `leader` and `invited` (distinct, not the leader,
    /// at least one, at most the world's party size with the leader: the
    /// caller checks) for `world`. `claimed` is the leader's verified rating
    /// claim, if any.
    pub async fn create_party(
        &self,
        world: &World,
        leader: &PlayerId,
        invited: &[PlayerId],
        data: Option<&TicketData>,
        claimed: Option<Rating>,
    ) -> Result<PartyCreateOutcome, StoreError> {
        let input = JoinInput {
            data,
            claimed,
            latencies: None,
        };
        self.create_party_with(world, leader, invited, &input).await
    }

    /// [`MatchStore::create_party`] with the leader's latencies too.
    pub async fn create_party_with(
        &self,
        world: &World,
        leader: &PlayerId,
        invited: &[PlayerId],
        input: &JoinInput<'_>,
    ) -> Result<PartyCreateOutcome, StoreError> {
        let config = self.world_config(world)?;
        let mut inv = SCRIPTS.party_create.invocation(self.keys(), &[&world.name]);
        inv.arg(leader.as_str())
            .arg(input.data.map_or("", TicketData::as_json))
            .arg(
                input
                    .claimed
                    .map(|c| c.value().to_string())
                    .unwrap_or_default(),
            )
            .arg(input.latencies.map(Latencies::as_arg).unwrap_or_default())
            .arg(config.as_ref());
        for p in invited {
            inv.rest(p.as_str());
        }
        let mut reply = Reply::new(SCRIPT, self.invoke(&inv, false).await?)?;
        let status = reply.text("status")?;
        let world_type = world.name.clone();
        let bad = |e: crate::error::ValidationError| {
            StoreError::UnexpectedReply(format!("{SCRIPT}: {e}"))
        };
        let outcome = match status.as_str() {
            "CREATED" => PartyCreateOutcome::Created(reply.json::<PartyView>("party")?),
            "QUEUED" => PartyCreateOutcome::LeaderQueued {
                world_type: reply.parsed("world", WorldName::parse)?,
            },
            "IN_PARTY" => PartyCreateOutcome::LeaderInParty {
                party_id: reply.parsed("party id", PartyId::parse)?,
            },
            "IN_MATCH" => PartyCreateOutcome::LeaderInMatch {
                match_id: reply.parsed("match id", MatchId::parse)?,
            },
            "BUSY" => PartyCreateOutcome::MemberBusy {
                player: reply.parsed("player", PlayerId::parse)?,
            },
            "ABSENT" => PartyCreateOutcome::NotConnected { world_type },
            "NO_RATING" => PartyCreateOutcome::RatingRequired { world_type },
            "LATENCY_REQUIRED" => PartyCreateOutcome::LatencyRequired { world_type },
            "COOLING_DOWN" => PartyCreateOutcome::CoolingDown {
                retry_after_ms: reply
                    .text("cool-down")?
                    .parse()
                    .map_err(|e| StoreError::UnexpectedReply(format!("{SCRIPT}: {e}")))?,
            },
            "BAD_RATING" => PartyCreateOutcome::InvalidRating {
                world_type,
                rating: Rating::parse(&reply.text("rating")?).map_err(bad)?,
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
