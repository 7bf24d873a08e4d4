//! `lua/outbox_settle.lua`: remove delivered notifications, reschedule the
//! ones to retry.

use std::time::Duration;

use super::reply::Reply;
use super::{millis, MatchStore};
use crate::domain::NotificationId;
use crate::error::StoreError;
use crate::scripts::SCRIPTS;

/// How to settle a claimed notification.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Settlement {
    /// Delivered, or not worth retrying: remove it.
    Done,
    /// Try again after this delay.
    RetryAfter(Duration),
}

impl MatchStore {
    /// Removes delivered notifications and reschedules the others.
    pub async fn settle_notifications(
        &self,
        settlements: &[(NotificationId, Settlement)],
    ) -> Result<(), StoreError> {
        if settlements.is_empty() {
            return Ok(());
        }
        let k = self.keys();
        let mut inv = SCRIPTS.outbox_settle.prepare_invoke();
        inv.key(k.outbox()).key(k.outbox_meta());
        for (id, settlement) in settlements {
            let delay: i64 = match settlement {
                Settlement::Done => -1,
                Settlement::RetryAfter(d) => i64::try_from(millis(*d)).unwrap_or(i64::MAX),
            };
            inv.arg(id.as_str()).arg(delay);
        }
        let mut reply = Reply::new("outbox_settle.lua", self.invoke(&inv, true).await?)?;
        reply.uint("removed")?;
        reply.uint("rescheduled")?;
        reply.finish()
    }
}
