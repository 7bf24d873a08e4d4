//! `lua/matcher_sleep.lua`: the matcher goes to sleep when nothing is to be
//! done (see [`crate::wake`]).

use super::reply::Reply;
use super::MatchStore;
use crate::error::StoreError;
use crate::scripts::SCRIPTS;

impl MatchStore {
    /// Puts the matcher to sleep if no world has a waiting ticket, no party
    /// assembles, no proposal or backfill is open and the outbox holds only
    /// entries tried `patience` times already; gives up the lease of
    /// `token`, which must hold it. True when asleep now: the caller ends
    /// its loop, and the first operation that makes work wakes it.
    pub async fn matcher_sleep(&self, token: &str, patience: u32) -> Result<bool, StoreError> {
        let mut inv = SCRIPTS
            .matcher_sleep
            .invocation(self.keys(), &self.world_names());
        inv.arg(token).arg(patience.max(1));
        Ok(Reply::integer("matcher_sleep.lua", self.invoke(&inv, true).await?)? == 1)
    }
}
