//! `lua/housekeeping.lua`: delete expired match records and expired
//! WebSocket connections (a lapsed connection counts as a disconnect).

use super::reply::Reply;
use super::{flag, MatchStore};
use crate::error::StoreError;
use crate::scripts::SCRIPTS;

/// What housekeeping removed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Housekeeping {
    pub matches_removed: u64,
    pub connections_removed: u64,
    pub tickets_removed: u64,
    /// Parties cancelled because their assembly ran out of time.
    pub parties_expired: u64,
    /// Match proposals cancelled because not everyone accepted in time.
    pub proposals_expired: u64,
    /// Backfills whose server stopped renewing them.
    pub backfills_lapsed: u64,
}

impl MatchStore {
    /// Deletes up to `limit` expired match records and expired connections,
    /// and cancels up to `limit` parties whose assembly ran out of time.
    pub async fn housekeeping(&self, limit: u64) -> Result<Housekeeping, StoreError> {
        let s = self.settings();
        let mut inv = SCRIPTS
            .housekeeping
            .invocation(self.keys(), &self.world_names());
        inv.arg(limit.max(1))
            .arg(flag(s.remove_ticket_on_disconnect));
        let mut reply = Reply::new("housekeeping.lua", self.invoke(&inv, false).await?)?;
        let removed = Housekeeping {
            matches_removed: reply.uint("matches removed")?,
            connections_removed: reply.uint("connections removed")?,
            tickets_removed: reply.uint("tickets removed")?,
            parties_expired: reply.uint("parties expired")?,
            proposals_expired: reply.uint("proposals expired")?,
            backfills_lapsed: reply.uint("backfills lapsed")?,
        };
        reply.finish()?;
        Ok(removed)
    }
}
