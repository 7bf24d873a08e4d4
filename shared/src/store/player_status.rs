//! `lua/player_status.lua`: where a player stands: queued (alone or with a
//! party), assembling a party, matched or idle.

use super::reply::Reply;
use super::MatchStore;
use std::time::Duration;

use crate::domain::{PartyView, PlayerId, PlayerStatus, WorldName};
use crate::error::StoreError;
use crate::scripts::SCRIPTS;

const SCRIPT: &str = "player_status.lua";

impl MatchStore {
    /// Where `player` stands: queued (alone or with a party), in an
    /// assembling party, matched (while the record lives) or idle.
    pub async fn player_status(&self, player: &PlayerId) -> Result<PlayerStatus, StoreError> {
        let mut inv = SCRIPTS
            .player_status
            .invocation(self.keys(), &self.world_names());
        inv.arg(player.as_str()).arg(self.window_ms());
        let mut reply = Reply::new(SCRIPT, self.invoke(&inv, true).await?)?;
        let status = match reply.text("status")?.as_str() {
            "IDLE" => PlayerStatus::Idle,
            "MATCHED" => PlayerStatus::Matched(Box::new(reply.match_with_lifecycle()?)),
            "PARTY" => PlayerStatus::Party(reply.json("party")?),
            "PROPOSED" => PlayerStatus::Proposed(reply.json("proposal")?),
            "QUEUED" => {
                let world = reply.parsed("world", WorldName::parse)?;
                let position = reply.uint("position")?;
                let queue_size = reply.uint("queue size")?;
                let stats = reply.wait_stats()?;
                let rating = reply.optional_rating("rating")?;
                let waited = Duration::from_millis(reply.uint("wait")?);
                let party = match reply.optional_text("party")? {
                    None => None,
                    Some(json) => Some(serde_json::from_str::<PartyView>(&json).map_err(|e| {
                        StoreError::UnexpectedReply(format!("{SCRIPT}: party: {e}"))
                    })?),
                };
                let mut q = self.queue_position(world, position, queue_size, stats, rating, waited);
                q.party = party;
                q.also_queued_in = reply.world_list("also")?;
                PlayerStatus::Queued(q)
            }
            other => {
                return Err(StoreError::UnexpectedReply(format!(
                    "{SCRIPT}: status {other:?}"
                )))
            }
        };
        reply.finish()?;
        Ok(status)
    }
}
