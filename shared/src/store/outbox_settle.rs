//! `lua/outbox_settle.lua`: remove delivered notifications, reschedule the
//! ones to retry.

use std::time::Duration;

use super::reply::Reply;
use super::{millis, MatchStore};
use crate::domain::{ConnectionId, NotificationId};
use crate::error::StoreError;
use crate::scripts::SCRIPTS;

/// How to settle a claimed notification.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Settlement {
    /// Delivered, or not worth retrying: remove it.
    Done,
    /// Try again after this delay, for these targets (1-based indexes
    /// among the entry's targets; empty = all of them).
    RetryAfter(Duration, Vec<u32>),
}

impl MatchStore {
    /// Removes delivered notifications and reschedules the others.
    pub async fn settle_notifications(
        &self,
        settlements: &[(NotificationId, Settlement)],
    ) -> Result<(), StoreError> {
        let with_replays: Vec<_> = settlements
            .iter()
            .map(|(id, s)| (id.clone(), s.clone(), Vec::new()))
            .collect();
        self.settle_with_replays(&with_replays).await
    }

    /// Settles notifications; a MATCH_FOUND entry's `replay_to` connections
    /// (which answered 410 while their `$connect` was finishing, though
    /// their player was told elsewhere) each get the match again on their
    /// own, after the retry delay.
    pub async fn settle_with_replays(
        &self,
        settlements: &[(NotificationId, Settlement, Vec<ConnectionId>)],
    ) -> Result<(), StoreError> {
        if settlements.is_empty() {
            return Ok(());
        }
        let mut inv = SCRIPTS.outbox_settle.invocation(self.keys(), &[]);
        for (id, settlement, replay_to) in settlements {
            let (delay, pending): (i64, String) = match settlement {
                Settlement::Done => (-1, String::new()),
                Settlement::RetryAfter(d, pending) => (
                    i64::try_from(millis(*d)).unwrap_or(i64::MAX),
                    pending
                        .iter()
                        .map(u32::to_string)
                        .collect::<Vec<_>>()
                        .join(","),
                ),
            };
            let replays = replay_to
                .iter()
                .map(ConnectionId::as_str)
                .collect::<Vec<_>>()
                .join(" ");
            inv.rest(id.as_str())
                .rest(delay)
                .rest(pending)
                .rest(replays);
        }
        let mut reply = Reply::new("outbox_settle.lua", self.invoke(&inv, true).await?)?;
        reply.uint("removed")?;
        reply.uint("rescheduled")?;
        reply.finish()
    }
}
