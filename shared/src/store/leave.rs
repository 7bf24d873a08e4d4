//! `lua/leave.lua`: remove a player's ticket from a world's queue.

use super::reply::Reply;
use super::MatchStore;
use crate::config::World;
use crate::domain::{LeaveOutcome, PlayerId, WorldName};
use crate::error::StoreError;
use crate::scripts::SCRIPTS;

const SCRIPT: &str = "leave.lua";

impl MatchStore {
    /// Removes `player`'s ticket from `world`'s queue; a party member's
    /// leave cancels the party (the others are told).
    #[tracing::instrument(level = "debug", skip(self, world), fields(world = %world.name))]
    pub async fn leave(
        &self,
        world: &World,
        player: &PlayerId,
    ) -> Result<LeaveOutcome, StoreError> {
        let mut inv = self.group_invocation(&SCRIPTS.leave, world);
        inv.arg(player.as_str());
        let mut reply = Reply::new(SCRIPT, self.invoke(&inv, false).await?)?;
        let outcome = match reply.text("status")?.as_str() {
            "LEFT" => LeaveOutcome::Left {
                previous_position: reply.uint("previous position")?,
                remaining_queue_size: reply.uint("remaining queue size")?,
            },
            "NOT_QUEUED" => {
                let other = reply.optional_text("world waited in")?;
                // A ticket of a world no longer configured does not count.
                let queued_in = other
                    .filter(|w| self.settings().worlds.get(w).is_some())
                    .map(|w| WorldName::parse(&w))
                    .transpose()
                    .map_err(|e| StoreError::UnexpectedReply(format!("{SCRIPT}: {e}")))?;
                LeaveOutcome::NotQueued { queued_in }
            }
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
