//! `lua/avoid_set.lua`: replace a player's avoid list.

use super::reply::Reply;
use super::MatchStore;
use crate::domain::PlayerId;
use crate::error::StoreError;
use crate::scripts::SCRIPTS;

impl MatchStore {
    /// Replaces `player`'s avoid list with `avoided` (distinct ids, none of
    /// them `player`, at most the rule set's `blockLists.maxEntries`; an
    /// empty list clears it). The caller has checked the caller's
    /// privilege. Returns the list it replaced (empty for none).
    /// Refused (`StoreError::Rejected`) when the rule set keeps no block
    /// lists.
    pub async fn set_avoid_list(
        &self,
        player: &PlayerId,
        avoided: &[PlayerId],
    ) -> Result<Vec<String>, StoreError> {
        let Some(lists) = self.settings().block_lists else {
            return Err(StoreError::Rejected(
                "block lists are off: the rule set has no blockLists".into(),
            ));
        };
        let joined = avoided
            .iter()
            .map(PlayerId::as_str)
            .collect::<Vec<_>>()
            .join("\n");
        let mut inv = SCRIPTS.avoid_set.invocation(self.keys(), &[]);
        inv.arg(player.as_str())
            .arg(joined)
            .arg(lists.max_entries.to_string());
        let mut reply = Reply::new("avoid_set.lua", self.invoke(&inv, true).await?)?;
        let previous = reply.text("previous avoid list")?;
        reply.finish()?;
        Ok(listed(&previous))
    }

    /// `player`'s avoid list as stored (empty for none): one HGET.
    pub async fn avoid_list(&self, player: &PlayerId) -> Result<Vec<String>, StoreError> {
        let stored: Option<String> = self
            .command(
                redis::cmd("HGET")
                    .arg(self.inner.keys.avoid())
                    .arg(player.as_str()),
            )
            .await?;
        Ok(listed(&stored.unwrap_or_default()))
    }
}

/// The ids of a stored avoid list (`\n`-joined; "" for none).
fn listed(stored: &str) -> Vec<String> {
    stored
        .split('\n')
        .filter(|p| !p.is_empty())
        .map(String::from)
        .collect()
}
