//! `lua/drop_stale_ticket.lua`: remove a player's ticket of a world that is
//! no longer configured (`join.lua` answers STALE for it).

use super::reply::Reply;
use super::MatchStore;
use crate::domain::{PlayerId, WorldName};
use crate::error::StoreError;
use crate::scripts::SCRIPTS;

impl MatchStore {
    /// Removes `player`'s ticket of `retired`, a world no longer configured.
    pub(super) async fn drop_stale_ticket(
        &self,
        retired: &WorldName,
        player: &PlayerId,
    ) -> Result<(), StoreError> {
        let mut inv = SCRIPTS
            .drop_stale_ticket
            .invocation(self.keys(), &[retired]);
        inv.arg(player.as_str());
        let removed = Reply::integer("drop_stale_ticket.lua", self.invoke(&inv, false).await?)?;
        tracing::info!(world = %retired, removed, "dropped a ticket of a world that is no longer configured");
        Ok(())
    }
}
