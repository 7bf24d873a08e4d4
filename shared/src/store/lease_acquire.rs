//! `lua/lease_acquire.lua`: take or renew the matcher lease.

use std::time::Duration;

use super::reply::Reply;
use super::{millis, MatchStore};
use crate::error::StoreError;
use crate::scripts::SCRIPTS;

impl MatchStore {
    /// Takes or renews the matcher lease for `token`; false if another holds it.
    pub async fn acquire_lease(&self, token: &str, ttl: Duration) -> Result<bool, StoreError> {
        let mut inv = SCRIPTS.lease_acquire.invocation(self.keys(), &[]);
        inv.arg(token).arg(millis(ttl).max(1));
        Ok(Reply::integer("lease_acquire.lua", self.invoke(&inv, true).await?)? == 1)
    }
}
