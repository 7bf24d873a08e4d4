//! `lua/outbox_claim.lua`: claim due notifications for delivery, hidden for
//! a lease while they are pushed.

use std::time::Duration;

use super::reply::Reply;
use super::{millis, MatchStore};
use crate::domain::{NotificationId, OutboxEntry};
use crate::error::StoreError;
use crate::scripts::SCRIPTS;

const SCRIPT: &str = "outbox_claim.lua";

/// How long a claimed entry stays hidden while it is being delivered (the
/// lease of [`MatchStore::claim_notifications`], and of the scripts' own
/// claims of the entries they deliver at once: `lua/_config.lua`'s `claim`).
pub const CLAIM_LEASE: Duration = Duration::from_secs(15);
/// A connection registered this recently may answer 410 only because API
/// Gateway has not finished its `$connect`: such a 410 is retried (the
/// `young` of [`MatchStore::claim_notifications`] and of the scripts' claims).
pub const YOUNG_CONNECTION: Duration = Duration::from_secs(10);

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
            entries.push(reply.outbox_entry()?);
        }
        reply.finish()?;
        Ok(entries)
    }
}
