//! `lua/conn_heartbeat.lua`: a client's heartbeat renews its connection's
//! registration and the player's presence.

use super::reply::Reply;
use super::{millis, MatchStore};
use crate::domain::{ConnectionId, PlayerId};
use crate::error::StoreError;
use crate::scripts::SCRIPTS;

const SCRIPT: &str = "conn_heartbeat.lua";

/// What a heartbeat found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Heartbeat {
    /// Renewed: the registration lasts until `expires_at_ms` (Redis time).
    Renewed {
        player: PlayerId,
        expires_at_ms: u64,
    },
    /// The connection is not registered (it lapsed or was evicted).
    Unknown,
}

impl MatchStore {
    /// Renews `conn`'s registration and its player's presence.
    pub async fn heartbeat(&self, conn: &ConnectionId) -> Result<Heartbeat, StoreError> {
        let mut inv = SCRIPTS.conn_heartbeat.invocation(self.keys(), &[]);
        inv.arg(conn.as_str())
            .arg(millis(self.settings().presence_timeout));
        let mut reply = Reply::new(SCRIPT, self.invoke(&inv, true).await?)?;
        let player = reply.optional_text("player")?;
        let expires_at_ms = reply.uint("expiry")?;
        reply.finish()?;
        Ok(match player {
            None => Heartbeat::Unknown,
            Some(p) => Heartbeat::Renewed {
                player: PlayerId::parse(&p)
                    .map_err(|e| StoreError::UnexpectedReply(format!("{SCRIPT}: {e}")))?,
                expires_at_ms,
            },
        })
    }
}
