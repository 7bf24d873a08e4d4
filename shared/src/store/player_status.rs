//! `lua/player_status.lua`: where a player stands: queued (alone or with a
//! party), assembling a party, matched or idle.

use super::reply::Reply;
use super::MatchStore;
use std::time::Duration;

use crate::domain::{PartyView, PlayerId, PlayerStatus, Rating, WaitStats, WorldName};
use crate::error::StoreError;
use crate::scripts::SCRIPTS;

const SCRIPT: &str = "player_status.lua";

impl MatchStore {
    /// Where `player` stands: queued (alone or with a party), in an
    /// assembling party, matched (while the record lives) or idle.
    pub async fn player_status(&self, player: &PlayerId) -> Result<PlayerStatus, StoreError> {
        let k = self.keys();
        let mut inv = SCRIPTS.player_status.prepare_invoke();
        inv.key(k.tickets())
            .key(k.player_match())
            .key(k.matches())
            .key(k.match_expiry())
            .key(k.parties())
            .key(k.player_party())
            .key(k.proposals())
            .key(k.player_proposal());
        for w in self.settings().worlds.iter() {
            let wk = k.world(&w.name);
            inv.key(wk.queue).key(wk.rate).key(wk.ratings);
        }
        inv.arg(player.as_str()).arg(self.window_ms());
        for name in self.world_names() {
            inv.arg(name);
        }
        let mut reply = Reply::new(SCRIPT, self.invoke(&inv, true).await?)?;
        let status = match reply.text("status")?.as_str() {
            "IDLE" => PlayerStatus::Idle,
            "MATCHED" => PlayerStatus::Matched(reply.json("match record")?),
            "PARTY" => PlayerStatus::Party(reply.json("party")?),
            "PROPOSED" => PlayerStatus::Proposed(reply.json("proposal")?),
            "QUEUED" => {
                let world = reply.parsed("world", WorldName::parse)?;
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
                let waited = Duration::from_millis(reply.uint("wait")?);
                let party = match reply.optional_text("party")? {
                    None => None,
                    Some(json) => Some(serde_json::from_str::<PartyView>(&json).map_err(|e| {
                        StoreError::UnexpectedReply(format!("{SCRIPT}: party: {e}"))
                    })?),
                };
                let mut q = self.queue_position(world, position, queue_size, stats, rating, waited);
                q.party = party;
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
