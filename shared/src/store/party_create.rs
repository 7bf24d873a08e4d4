//! `lua/party_create.lua`: a leader creates a party and invites others.

use super::admission::Admitted;
use super::reply::Reply;
use super::{JoinInput, MatchStore};
use crate::config::World;
use crate::domain::{PartyCreateOutcome, PartyView, PlayerId, Rating, TicketData, WorldName};
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
            ..JoinInput::default()
        };
        self.create_party_with(world, leader, invited, &input).await
    }

    /// [`MatchStore::create_party`] with the leader's latencies, attributes
    /// and the other worlds the party queues in (`input.also`: the caller
    /// checks the party fits each) too.
    pub async fn create_party_with(
        &self,
        world: &World,
        leader: &PlayerId,
        invited: &[PlayerId],
        input: &JoinInput<'_>,
    ) -> Result<PartyCreateOutcome, StoreError> {
        let config = self.world_config(world)?;
        let config = config.as_ref();
        let (joined, also) = self.also_arguments(world, input.also)?;
        let also = &also;
        self.admitting(SCRIPT, &joined, leader, |worlds, features| async move {
            let names: Vec<&WorldName> = worlds.iter().collect();
            let mut inv = SCRIPTS
                .party_create
                .invocation_with(self.keys(), &names, features);
            inv.arg(leader.as_str());
            input.add_args(&mut inv);
            inv.arg(config).arg(input.also.len().to_string());
            inv.rest(also);
            for p in invited {
                inv.rest(p.as_str());
            }
            let mut reply = Reply::new(SCRIPT, self.invoke(&inv, false).await?)?;
            let status = reply.text("status")?;
            let outcome = match status.as_str() {
                "CREATED" => PartyCreateOutcome::Created(reply.json::<PartyView>("party")?),
                "BUSY" => PartyCreateOutcome::MemberBusy {
                    player: reply.parsed("player", PlayerId::parse)?,
                },
                other => {
                    return self.refused(SCRIPT, other, reply, leader, PartyCreateOutcome::Rejected)
                }
            };
            reply.finish()?;
            Ok(Admitted::Reply(outcome))
        })
        .await
    }
}
