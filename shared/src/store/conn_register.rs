//! `lua/conn_register.lua`: record a WebSocket connection for a player.

use super::reply::Reply;
use super::{millis, MatchStore};
use crate::domain::{ConnectionId, PlayerId};
use crate::error::StoreError;
use crate::scripts::SCRIPTS;

/// A registered connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Registered {
    /// The player's connections now, this one included.
    pub connections: u64,
    /// An older connection of the player dropped to stay within the cap.
    pub evicted: Option<ConnectionId>,
}

impl MatchStore {
    /// Records that `conn` belongs to `player`.
    pub async fn register_connection(
        &self,
        conn: &ConnectionId,
        player: &PlayerId,
    ) -> Result<Registered, StoreError> {
        let s = self.settings();
        let k = self.keys();
        let mut inv = SCRIPTS.conn_register.prepare_invoke();
        inv.key(k.conns())
            .key(k.conn_expiry())
            .key(k.player_conns())
            .arg(conn.as_str())
            .arg(player.as_str())
            .arg(millis(s.connection_ttl))
            .arg(s.max_connections_per_player);
        let mut reply = Reply::new("conn_register.lua", self.invoke(&inv, true).await?)?;
        let connections = reply.uint("connection count")?;
        let evicted = match reply.optional_text("evicted connection")? {
            None => None,
            Some(id) => Some(
                ConnectionId::parse(&id)
                    .map_err(|e| StoreError::UnexpectedReply(format!("conn_register.lua: {e}")))?,
            ),
        };
        reply.finish()?;
        Ok(Registered {
            connections,
            evicted,
        })
    }
}
