//! `lua/sweep_tickets.lua`: remove a world's expired tickets and queue a
//! TICKET_EXPIRED notification for each.

use super::reply::Reply;
use super::MatchStore;
use crate::config::World;
use crate::domain::TicketId;
use crate::error::StoreError;
use crate::scripts::SCRIPTS;

impl MatchStore {
    /// Removes up to `limit` of `world`'s expired tickets; returns which.
    /// Each player (every member of a party) gets a TICKET_EXPIRED.
    pub async fn sweep_expired_tickets(
        &self,
        world: &World,
        limit: u64,
    ) -> Result<Vec<TicketId>, StoreError> {
        let mut inv = self.group_invocation(&SCRIPTS.sweep_tickets, world);
        inv.arg(limit.max(1));
        let mut reply = Reply::new("sweep_tickets.lua", self.invoke(&inv, false).await?)?;
        let mut expired = Vec::with_capacity(reply.remaining());
        while reply.remaining() > 0 {
            expired.push(reply.parsed("expired ticket", TicketId::parse)?);
        }
        reply.finish()?;
        Ok(expired)
    }
}
