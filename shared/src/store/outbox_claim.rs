//! `lua/outbox_claim.lua`: claim due notifications for delivery, hidden for
//! a lease while they are pushed.

use std::time::Duration;

use super::reply::Reply;
use super::{millis, MatchStore};
use crate::domain::{
    ConnectionId, MatchRecord, NotificationId, NotificationKind, OutboxEntry, PlayerId,
    ServerMessage, Target,
};
use crate::error::StoreError;
use crate::scripts::SCRIPTS;

const SCRIPT: &str = "outbox_claim.lua";

impl MatchStore {
    /// Claims up to `limit` due notifications (or exactly `only`, if given
    /// and due), hiding them for `lease` while they are delivered.
    /// Connections registered less than `young` ago are flagged in each
    /// target.
    pub async fn claim_notifications(
        &self,
        lease: Duration,
        limit: usize,
        young: Duration,
        only: &[NotificationId],
    ) -> Result<Vec<OutboxEntry>, StoreError> {
        let mut inv = SCRIPTS.outbox_claim.invocation(self.keys(), &[]);
        inv.arg(millis(lease).max(1))
            .arg(limit.max(1))
            .arg(millis(young));
        for id in only {
            inv.rest(id.as_str());
        }
        let mut reply = Reply::new(SCRIPT, self.invoke(&inv, false).await?)?;
        let mut entries = Vec::new();
        while reply.remaining() > 0 {
            let id = reply.parsed("notification id", NotificationId::parse)?;
            let attempts = u32::try_from(reply.uint("attempts")?).unwrap_or(u32::MAX);
            let age_ms = reply.uint("age")?;
            let payload = reply.bytes("payload")?;
            // Empty when the entry carries no payload, or its record or note
            // is gone.
            let (mut record, mut note) = (None, None);
            if !payload.is_empty() {
                if matches!(id.kind(), NotificationKind::Note { .. }) {
                    let json = std::str::from_utf8(&payload)
                        .map_err(|e| StoreError::UnexpectedReply(format!("{SCRIPT}: note: {e}")))?;
                    note = Some(ServerMessage::from_note(json).map_err(|e| {
                        StoreError::UnexpectedReply(format!("{SCRIPT}: note: {e}"))
                    })?);
                } else {
                    record = Some(serde_json::from_slice::<MatchRecord>(&payload).map_err(
                        |e| StoreError::UnexpectedReply(format!("{SCRIPT}: match record: {e}")),
                    )?);
                }
            }
            let count = reply.uint("target count")?;
            let mut targets = Vec::with_capacity(usize::try_from(count).unwrap_or(0));
            for _ in 0..count {
                targets.push(Target {
                    index: u32::try_from(reply.uint("target index")?).unwrap_or(u32::MAX),
                    player: reply.parsed("target player", PlayerId::parse)?,
                    connections: connection_list(&mut reply, "connections")?,
                    young: connection_list(&mut reply, "young connections")?,
                });
            }
            entries.push(OutboxEntry {
                id,
                attempts,
                age_ms,
                record,
                note,
                targets,
            });
        }
        reply.finish()?;
        Ok(entries)
    }
}

fn connection_list(reply: &mut Reply, what: &str) -> Result<Vec<ConnectionId>, StoreError> {
    reply
        .text(what)?
        .split_whitespace()
        .map(ConnectionId::parse)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| StoreError::UnexpectedReply(format!("{SCRIPT}: {e}")))
}
