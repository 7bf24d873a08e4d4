//! `lua/party_cancel.lua`: a member cancels (or declines) a party.

use super::reply::Reply;
use super::MatchStore;
use crate::domain::{PartyCancelOutcome, PartyId, PlayerId};
use crate::error::StoreError;
use crate::scripts::SCRIPTS;

const SCRIPT: &str = "party_cancel.lua";

impl MatchStore {
    /// Cancels `party` on behalf of `player`, one of its members (joined or
    /// only invited); the others are told.
    pub async fn cancel_party(
        &self,
        party: &PartyId,
        player: &PlayerId,
    ) -> Result<PartyCancelOutcome, StoreError> {
        // The party's world from its id: its keys are known even if the
        // world has since left the configuration.
        let world = party.world();
        let mut inv = SCRIPTS
            .party_cancel
            .invocation(self.keys(), &self.group_names(&world));
        inv.arg(player.as_str()).arg(party.as_str());
        let mut reply = Reply::new(SCRIPT, self.invoke(&inv, false).await?)?;
        let outcome = match reply.text("status")?.as_str() {
            "CANCELLED" => PartyCancelOutcome::Cancelled(reply.json("party")?),
            "NOT_FOUND" => PartyCancelOutcome::NotFound,
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
