//! `lua/party_join.lua`: an invited player joins a party; the last one puts
//! the party in the queue as one ticket (and may match it at once).

use std::time::Duration;

use super::admission::Admitted;
use super::reply::{FormedMatches, Reply};
use super::{JoinInput, MatchStore};
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
        let input = JoinInput {
            data,
            claimed,
            ..JoinInput::default()
        };
        self.join_party_claiming(world, party, player, &input, false)
            .await
    }

    /// [`MatchStore::join_party`]; with `claim`, the outbox entries of the
    /// matches it formed are claimed for the caller to deliver at once. A
    /// party queuing in several worlds needs them all in `input.also`, in
    /// its order ([`PartyJoinOutcome::OtherWorlds`] names them).
    pub async fn join_party_claiming(
        &self,
        world: &World,
        party: &PartyId,
        player: &PlayerId,
        input: &JoinInput<'_>,
        claim: bool,
    ) -> Result<PartyJoinOutcome, StoreError> {
        let config = self.world_config(world)?;
        let config = config.as_ref();
        let (joined, also) = self.also_arguments(world, input.also)?;
        let also = &also;
        self.admitting(SCRIPT, &joined, player, |worlds, features| async move {
            let names: Vec<&WorldName> = worlds.iter().collect();
            let mut inv = SCRIPTS
                .party_join
                .invocation_with(self.keys(), &names, features);
            inv.arg(player.as_str()).arg(party.as_str());
            input.add_args(&mut inv);
            inv.arg(config).arg(super::flag(claim));
            inv.rest(also);
            self.decode_party_join(world, player, self.invoke(&inv, false).await?)
        })
        .await
    }

    /// The other worlds `party` queues in, in its order (`also` of the
    /// party as `_parties.lua` stores it), or `None` when there is no such
    /// party. A party's worlds never change, so a member's join in a
    /// grouped world reads them first and describes them in one call.
    pub async fn party_other_worlds(
        &self,
        party: &PartyId,
    ) -> Result<Option<Vec<WorldName>>, StoreError> {
        #[derive(serde::Deserialize)]
        struct Stored {
            #[serde(default)]
            also: Vec<WorldName>,
        }
        let raw: Option<String> = self
            .command(
                redis::cmd("HGET")
                    .arg(self.keys().parties())
                    .arg(party.as_str()),
            )
            .await?;
        raw.map(|raw| {
            serde_json::from_str::<Stored>(&raw)
                .map(|stored| stored.also)
                .map_err(|e| StoreError::UnexpectedReply(format!("party {party}: {e}")))
        })
        .transpose()
    }

    fn decode_party_join(
        &self,
        world: &World,
        player: &PlayerId,
        value: redis::Value,
    ) -> Result<Admitted<PartyJoinOutcome>, StoreError> {
        let mut reply = Reply::new(SCRIPT, value)?;
        let status = reply.text("status")?;
        let view = |reply: &mut Reply| -> Result<PartyView, StoreError> { reply.json("party") };
        let world_type = world.name.clone();
        let outcome = match status.as_str() {
            "JOINED" => PartyJoinOutcome::Joined(view(&mut reply)?),
            "ALREADY" => {
                let party = view(&mut reply)?;
                reply.uint("position")?;
                reply.uint("queue size")?;
                PartyJoinOutcome::AlreadyJoined(party)
            }
            "QUEUED" => {
                let party = view(&mut reply)?;
                let position = reply.uint("position")?;
                let queue_size = reply.uint("queue size")?;
                let rating = reply.optional_rating("rating")?;
                let mut q = self.queue_position(
                    world_type,
                    position,
                    queue_size,
                    WaitStats::default(),
                    rating,
                    Duration::ZERO,
                );
                q.also_queued_in = party.also_queued_in.clone();
                q.party = Some(party);
                PartyJoinOutcome::Queued(q)
            }
            "MATCHED" => {
                let party = view(&mut reply)?;
                reply.uint("queue size")?;
                reply.optional_rating("rating")?;
                let FormedMatches {
                    record,
                    formed,
                    claimed,
                } = reply.formed_matches(player)?;
                PartyJoinOutcome::Matched {
                    party,
                    record: Box::new(record),
                    formed,
                    claimed,
                }
            }
            "NOT_FOUND" => PartyJoinOutcome::NotFound,
            "WORLDS" => PartyJoinOutcome::OtherWorlds(reply.world_list("worlds")?),
            "ATTRIBUTES_CONFLICT" => PartyJoinOutcome::AttributesConflict {
                world_type: reply.parsed("world", WorldName::parse)?,
                attribute: reply.text("attribute")?,
            },
            "PROPOSED" => PartyJoinOutcome::Proposed(reply.json::<ProposalView>("proposal")?),
            other => return self.refused(SCRIPT, other, reply, player, PartyJoinOutcome::Rejected),
        };
        reply.finish()?;
        Ok(Admitted::Reply(outcome))
    }
}
