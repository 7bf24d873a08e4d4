//! `lua/backfill_request.lua`, `lua/backfill_keepalive.lua`,
//! `lua/backfill_cancel.lua`: a running match's backfill (see
//! `lua/_backfill.lua`).

use super::reply::Reply;
use super::{millis, MatchStore};
use crate::domain::{Backfill, BackfillOutcome, MatchId, MatchRecord, PlayerId, WorldName};
use crate::error::StoreError;
use crate::scripts::SCRIPTS;

fn backfill(reply: &mut Reply) -> Result<Backfill, StoreError> {
    reply.json("backfill")
}

impl MatchStore {
    /// The world of match `id`, from its record (`None`: no record).
    async fn match_world(&self, id: &MatchId) -> Result<Option<WorldName>, StoreError> {
        Ok(match self.record_text(id).await? {
            None => None,
            Some(text) => Some(
                serde_json::from_slice::<MatchRecord>(&text)
                    .map_err(|e| StoreError::UnexpectedReply(format!("match record: {e}")))?
                    .world_type,
            ),
        })
    }

    /// Opens (or replaces) the backfill of match `id`, whose current
    /// players are `teams` (one list per team). `seen_fills`: how many of
    /// the match's fills the server had heard of when it listed them;
    /// players later fills added keep their seats (`None`: the list is
    /// everyone).
    pub async fn request_backfill(
        &self,
        id: &MatchId,
        teams: &[Vec<PlayerId>],
        seen_fills: Option<u32>,
    ) -> Result<BackfillOutcome, StoreError> {
        let Some(world_name) = self.match_world(id).await? else {
            return Ok(BackfillOutcome::MatchNotFound);
        };
        let Some(world) = self.settings().worlds.get(world_name.as_str()) else {
            // A match of a world no longer configured takes nobody.
            return Ok(BackfillOutcome::MatchNotFound);
        };
        let config = self.world_config(world)?;
        let mut inv = SCRIPTS
            .backfill_request
            .invocation(self.keys(), &self.group_names(&world.name));
        inv.arg(id.as_str())
            .arg(serde_json::to_string(teams).unwrap_or_default())
            .arg(millis(self.settings().backfill_keepalive))
            .arg(config.as_ref())
            .arg(seen_fills.map(|n| n.to_string()).unwrap_or_default());
        // A repeat replaces the backfill with an equal one: safe to retry.
        let mut reply = Reply::new("backfill_request.lua", self.invoke(&inv, true).await?)?;
        let outcome = match reply.text("status")?.as_str() {
            "CREATED" => BackfillOutcome::Open {
                backfill: backfill(&mut reply)?,
                replaced: false,
            },
            "REPLACED" => BackfillOutcome::Open {
                backfill: backfill(&mut reply)?,
                replaced: true,
            },
            "NOT_FOUND" => BackfillOutcome::MatchNotFound,
            "NOT_ASSIGNED" => BackfillOutcome::NotAssigned,
            "FINISHED" => BackfillOutcome::Finished,
            "INVALID" => BackfillOutcome::Invalid(reply.text("reason")?),
            other => {
                return Err(StoreError::UnexpectedReply(format!(
                    "backfill_request.lua: status {other:?}"
                )))
            }
        };
        reply.finish()?;
        Ok(outcome)
    }

    /// Renews the open backfill of match `id`.
    pub async fn renew_backfill(&self, id: &MatchId) -> Result<BackfillOutcome, StoreError> {
        let mut inv = SCRIPTS.backfill_keepalive.invocation(self.keys(), &[]);
        inv.arg(id.as_str())
            .arg(millis(self.settings().backfill_keepalive));
        let mut reply = Reply::new("backfill_keepalive.lua", self.invoke(&inv, true).await?)?;
        let outcome = match reply.text("status")?.as_str() {
            "RENEWED" => BackfillOutcome::Renewed(backfill(&mut reply)?),
            "NOT_FOUND" => BackfillOutcome::NotFound,
            other => {
                return Err(StoreError::UnexpectedReply(format!(
                    "backfill_keepalive.lua: status {other:?}"
                )))
            }
        };
        reply.finish()?;
        Ok(outcome)
    }

    /// Cancels the open backfill of match `id`; seats filled so far stay.
    pub async fn cancel_backfill(&self, id: &MatchId) -> Result<BackfillOutcome, StoreError> {
        let Some(world_name) = self.match_world(id).await? else {
            return Ok(BackfillOutcome::MatchNotFound);
        };
        let mut inv = SCRIPTS
            .backfill_cancel
            .invocation(self.keys(), &self.group_names(&world_name));
        inv.arg(id.as_str());
        let mut reply = Reply::new("backfill_cancel.lua", self.invoke(&inv, true).await?)?;
        let outcome = match reply.text("status")?.as_str() {
            "CANCELLED" => BackfillOutcome::Cancelled(backfill(&mut reply)?),
            "NOT_FOUND" | "OTHER_WORLD" => BackfillOutcome::NotFound,
            other => {
                return Err(StoreError::UnexpectedReply(format!(
                    "backfill_cancel.lua: status {other:?}"
                )))
            }
        };
        // OTHER_WORLD carries the world; a backfill's world is its match's.
        while reply.remaining() > 0 {
            reply.text("world")?;
        }
        reply.finish()?;
        Ok(outcome)
    }
}
