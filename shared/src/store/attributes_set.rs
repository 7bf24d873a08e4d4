//! `lua/attributes_set.lua`: replace a player's trusted attributes.

use super::reply::Reply;
use super::MatchStore;
use crate::domain::PlayerId;
use crate::error::StoreError;
use crate::scripts::SCRIPTS;

impl MatchStore {
    /// Replaces `player`'s trusted attributes with `encoded` (as
    /// `TicketAttributes::encode` writes them; "" clears them). The caller
    /// has validated them and checked the caller's privilege. Returns the
    /// encoded attributes they replaced ("" for none).
    pub async fn set_trusted_attributes(
        &self,
        player: &PlayerId,
        encoded: &str,
    ) -> Result<String, StoreError> {
        let mut inv = SCRIPTS.attributes_set.invocation(self.keys(), &[]);
        inv.arg(player.as_str()).arg(encoded);
        let mut reply = Reply::new("attributes_set.lua", self.invoke(&inv, true).await?)?;
        let previous = reply.text("previous attributes")?;
        reply.finish()?;
        Ok(previous)
    }

    /// `player`'s trusted attributes as stored ("" for none): one HGET.
    pub async fn trusted_attributes(&self, player: &PlayerId) -> Result<String, StoreError> {
        let stored: Option<String> = self
            .command(
                redis::cmd("HGET")
                    .arg(self.inner.keys.player_attributes())
                    .arg(player.as_str()),
            )
            .await?;
        Ok(stored.unwrap_or_default())
    }
}
