//! `lua/match_record.lua`: a match record while it lives.

use super::reply::Reply;
use super::MatchStore;
use crate::domain::{Backfill, MatchId, MatchWithLifecycle};
use crate::error::StoreError;
use crate::scripts::SCRIPTS;

impl MatchStore {
    /// The record of match `id` and its lifecycle, unless it never existed
    /// or has expired.
    pub async fn match_record(
        &self,
        id: &MatchId,
    ) -> Result<Option<MatchWithLifecycle>, StoreError> {
        Ok(self.match_state(id).await?.map(|(m, _)| m))
    }

    /// The record of match `id`, its lifecycle and its open backfill (what
    /// the game server sees), read in one step; `None` as for
    /// [`MatchStore::match_record`].
    pub async fn match_state(
        &self,
        id: &MatchId,
    ) -> Result<Option<(MatchWithLifecycle, Option<Backfill>)>, StoreError> {
        let mut inv = SCRIPTS.match_record.invocation(self.keys(), &[]);
        inv.arg(id.as_str());
        let mut reply = Reply::new("match_record.lua", self.invoke(&inv, true).await?)?;
        let state = if reply.remaining() > 0 {
            let m = reply.match_with_lifecycle()?;
            let backfill = reply.optional_json("backfill")?;
            Some((m, backfill))
        } else {
            None
        };
        reply.finish()?;
        Ok(state)
    }
}
