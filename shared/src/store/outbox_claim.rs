//! `lua/outbox_claim.lua`: claim due notifications for delivery, hidden for
//! a lease while they are pushed.

use std::time::Duration;

use super::reply::Reply;
use super::{millis, MatchStore};
use crate::domain::{
    ConnectionId, MatchRecord, Notification, NotificationId, NotificationKind, OutboxEntry,
};
use crate::error::StoreError;
use crate::scripts::SCRIPTS;

const SCRIPT: &str = "outbox_claim.lua";

impl MatchStore {
    /// Claims up to `limit` due notifications (or exactly `only`, if given
    /// and due), hiding them for `lease` while they are delivered.
    pub async fn claim_notifications(
        &self,
        lease: Duration,
        limit: usize,
        only: &[NotificationId],
    ) -> Result<Vec<OutboxEntry>, StoreError> {
        let k = self.keys();
        let mut inv = SCRIPTS.outbox_claim.prepare_invoke();
        inv.key(k.outbox())
            .key(k.outbox_meta())
            .key(k.matches())
            .key(k.player_conns())
            .arg(millis(lease).max(1))
            .arg(limit.max(1));
        for id in only {
            inv.arg(id.as_str());
        }
        let mut reply = Reply::new(SCRIPT, self.invoke(&inv, false).await?)?;
        let mut entries = Vec::with_capacity(reply.remaining() / 5);
        while reply.remaining() > 0 {
            let id = reply.parsed("notification id", NotificationId::parse)?;
            let attempts = u32::try_from(reply.uint("attempts")?).unwrap_or(u32::MAX);
            let age_ms = reply.uint("age")?;
            let payload = reply.bytes("payload")?;
            let connections = reply
                .text("connections")?
                .split_whitespace()
                .map(ConnectionId::parse)
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| StoreError::UnexpectedReply(format!("{SCRIPT}: {e}")))?;
            let notification = match id.kind().clone() {
                NotificationKind::MatchFound { match_id, player } => Notification::MatchFound {
                    match_id,
                    player,
                    // Empty when the match record expired before delivery.
                    record: if payload.is_empty() {
                        None
                    } else {
                        Some(
                            serde_json::from_slice::<MatchRecord>(&payload).map_err(|e| {
                                StoreError::UnexpectedReply(format!("{SCRIPT}: match record: {e}"))
                            })?,
                        )
                    },
                },
                NotificationKind::TicketExpired { world, player } => {
                    Notification::TicketExpired { world, player }
                }
            };
            entries.push(OutboxEntry {
                id,
                notification,
                attempts,
                age_ms,
                connections,
            });
        }
        reply.finish()?;
        Ok(entries)
    }
}
