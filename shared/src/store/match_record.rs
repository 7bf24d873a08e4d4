//! `lua/match_record.lua`: a match record while it lives.

use super::reply::Reply;
use super::MatchStore;
use crate::domain::{MatchId, MatchWithLifecycle};
use crate::error::StoreError;
use crate::scripts::SCRIPTS;

impl MatchStore {
    /// The record of match `id` and its lifecycle, unless it never existed
    /// or has expired.
    pub async fn match_record(
        &self,
        id: &MatchId,
    ) -> Result<Option<MatchWithLifecycle>, StoreError> {
        let mut inv = SCRIPTS.match_record.invocation(self.keys(), &[]);
        inv.arg(id.as_str());
        let mut reply = Reply::new("match_record.lua", self.invoke(&inv, true).await?)?;
        let record = if reply.remaining() > 0 {
            Some(reply.match_with_lifecycle()?)
        } else {
            None
        };
        reply.finish()?;
        Ok(record)
    }
}
