//! `lua/conn_register.lua`: record a WebSocket connection for a player.

use super::reply::Reply;
use super::{millis, MatchStore};
use crate::domain::{ConnectionId, MatchId, PlayerId};
use crate::error::StoreError;
use crate::scripts::SCRIPTS;

const SCRIPT: &str = "conn_register.lua";

/// A match formed this recently is pushed again to a connection that opens
/// (it may have opened while the first push was on its way).
pub const MATCH_REPLAY_WINDOW: std::time::Duration = std::time::Duration::from_secs(30);

/// A registered connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Registered {
    /// The player's connections now, this one included.
    pub connections: u64,
    /// An older connection of the player dropped to stay within the cap; the
    /// caller closes it.
    pub evicted: Option<ConnectionId>,
    /// The player's recent match, queued for delivery to this connection.
    pub replayed: Option<MatchId>,
}

impl MatchStore {
    /// Records that `conn` belongs to `player`; its registration lapses
    /// `presence_timeout` after the last heartbeat.
    pub async fn register_connection(
        &self,
        conn: &ConnectionId,
        player: &PlayerId,
    ) -> Result<Registered, StoreError> {
        let s = self.settings();
        let mut inv = SCRIPTS.conn_register.invocation(self.keys(), &[]);
        inv.arg(conn.as_str())
            .arg(player.as_str())
            .arg(millis(s.presence_timeout))
            .arg(s.max_connections_per_player)
            .arg(millis(MATCH_REPLAY_WINDOW));
        let mut reply = Reply::new(SCRIPT, self.invoke(&inv, true).await?)?;
        let connections = reply.uint("connection count")?;
        let bad = |e: crate::error::ValidationError| {
            StoreError::UnexpectedReply(format!("{SCRIPT}: {e}"))
        };
        let evicted = reply
            .optional_text("evicted connection")?
            .map(|id| ConnectionId::parse(&id))
            .transpose()
            .map_err(bad)?;
        let replayed = reply
            .optional_text("replayed match")?
            .map(|id| MatchId::parse(&id))
            .transpose()
            .map_err(bad)?;
        reply.finish()?;
        Ok(Registered {
            connections,
            evicted,
            replayed,
        })
    }
}
