//! `lua/form_matches.lua`: the matcher's per-world step, forming every
//! complete group of a world's queue, oldest first, in one atomic call.

use super::reply::Reply;
use super::MatchStore;
use crate::config::World;
use crate::domain::MatchRecord;
use crate::error::StoreError;
use crate::scripts::SCRIPTS;

/// Matches formed by one call of the matcher for one world.
#[derive(Debug, Clone, PartialEq)]
pub struct MatchBatch {
    pub matches: Vec<MatchRecord>,
    /// Tickets left in the queue afterwards (fewer than a full group unless
    /// `max_groups` limited the call).
    pub queue_size: u64,
    /// Tickets past their deadline removed before matching (TICKET_EXPIRED).
    pub expired: u64,
    /// Tickets of players without a live connection removed in a world that
    /// requires presence (TICKET_REMOVED).
    pub removed: u64,
    /// More may be matched right now (a rated world has more anchors due,
    /// or a scan or sweep was cut short): call again.
    pub more_due: bool,
    /// Matches made proposals (a ready check): final once all accept.
    pub proposed: u64,
    /// Running matches' backfills that took players (one fill each).
    pub backfilled: u64,
}

impl MatchStore {
    /// FIFO: forms every complete group `world`'s queue allows (at most
    /// `max_groups`, 0 = no limit), oldest first. Rated: tries up to the
    /// world's `anchors_per_call` due anchors, oldest first; a world with
    /// regions likewise (`max_groups` is
    /// not used). One atomic call either way.
    #[tracing::instrument(level = "debug", skip(self, world), fields(world = %world.name))]
    pub async fn form_matches(
        &self,
        world: &World,
        max_groups: u64,
    ) -> Result<MatchBatch, StoreError> {
        let config = self.world_config(world)?;
        let mut inv = self.group_invocation(&SCRIPTS.form_matches, world);
        // Rated worlds and worlds with regions or attributes are matched
        // around anchors, a bounded number per call (the script refuses a
        // limit of 0 for them: `max_groups` 0, the matcher tick's "no
        // limit", applies to plain FIFO worlds only).
        let anchored = world.regions.is_some()
            || !world.attributes.is_empty()
            || !world.match_rules.is_empty();
        let limit = match world.rating() {
            Some(r) => u64::from(r.anchors_per_call),
            None if anchored => u64::from(crate::config::rules::ANCHORS_PER_CALL),
            None => max_groups,
        };
        inv.arg(limit).arg(config.as_ref());
        let mut reply = Reply::new("form_matches.lua", self.invoke(&inv, false).await?)?;
        let queue_size = reply.uint("queue size")?;
        let expired = reply.uint("expired removed")?;
        let removed = reply.uint("absent removed")?;
        let more_due = reply.uint("more due")? == 1;
        let proposed = reply.uint("proposed")?;
        let backfilled = reply.uint("backfills filled")?;
        let mut matches = Vec::with_capacity(reply.remaining());
        while reply.remaining() > 0 {
            matches.push(reply.json("match record")?);
        }
        reply.finish()?;
        Ok(MatchBatch {
            matches,
            queue_size,
            expired,
            removed,
            more_due,
            proposed,
            backfilled,
        })
    }
}
