//! `lua/lease_release.lua`: give the matcher lease back.

use super::reply::Reply;
use super::MatchStore;
use crate::error::StoreError;
use crate::scripts::SCRIPTS;

impl MatchStore {
    /// Gives the lease back if `token` holds it.
    pub async fn release_lease(&self, token: &str) -> Result<bool, StoreError> {
        let mut inv = SCRIPTS.lease_release.invocation(self.keys(), &[]);
        inv.arg(token);
        Ok(Reply::integer("lease_release.lua", self.invoke(&inv, true).await?)? == 1)
    }
}
