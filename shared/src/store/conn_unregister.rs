//! `lua/conn_unregister.lua`: forget a WebSocket connection; the player's
//! last one may take their ticket with it.

use super::reply::Reply;
use super::{flag, MatchStore};
use crate::domain::{ConnectionId, PlayerId, WorldName};
use crate::error::StoreError;
use crate::scripts::SCRIPTS;

const SCRIPT: &str = "conn_unregister.lua";

/// The result of forgetting a connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unregistered {
    /// Whose connection it was; `None` if it was not registered.
    pub player: Option<PlayerId>,
    pub remaining_connections: u64,
    /// The world whose ticket was removed because this was the last connection.
    pub removed_ticket_world: Option<WorldName>,
}

impl MatchStore {
    /// Forgets `conn`; removes the player's ticket if it was their last
    /// connection and `remove_ticket_on_disconnect` is set.
    pub async fn unregister_connection(
        &self,
        conn: &ConnectionId,
    ) -> Result<Unregistered, StoreError> {
        let s = self.settings();
        let mut inv = SCRIPTS
            .conn_unregister
            .invocation(self.keys(), &self.world_names());
        inv.arg(conn.as_str())
            .arg(flag(s.remove_ticket_on_disconnect));
        let mut reply = Reply::new(SCRIPT, self.invoke(&inv, true).await?)?;
        let bad = |e: crate::error::ValidationError| {
            StoreError::UnexpectedReply(format!("{SCRIPT}: {e}"))
        };
        let player = reply
            .optional_text("player")?
            .map(|p| PlayerId::parse(&p))
            .transpose()
            .map_err(bad)?;
        let remaining_connections = reply.uint("remaining connections")?;
        let removed_ticket_world = reply
            .optional_text("removed ticket world")?
            .map(|w| WorldName::parse(&w))
            .transpose()
            .map_err(bad)?;
        reply.finish()?;
        Ok(Unregistered {
            player,
            remaining_connections,
            removed_ticket_world,
        })
    }
}
