//! `lua/queue_status.lua`: a world's queue depth, oldest wait and wait
//! statistics.

use super::reply::Reply;
use super::MatchStore;
use crate::config::World;
use crate::domain::{QueueStatus, WaitStats};
use crate::error::StoreError;
use crate::scripts::SCRIPTS;

impl MatchStore {
    /// A world's queue depth and wait estimate.
    pub async fn queue_status(&self, world: &World) -> Result<QueueStatus, StoreError> {
        let k = self.keys();
        let wk = k.world(&world.name);
        let mut inv = SCRIPTS.queue_status.prepare_invoke();
        inv.key(wk.queue)
            .key(wk.rate)
            .key(k.tickets())
            .arg(self.window_ms());
        let mut reply = Reply::new("queue_status.lua", self.invoke(&inv, true).await?)?;
        let waiting = reply.uint("waiting")?;
        let stats = WaitStats {
            players_matched: reply.uint("window players")?,
            span_ms: reply.uint("window span")?,
        };
        let oldest_wait_ms = reply.uint("oldest wait")?;
        reply.finish()?;
        Ok(QueueStatus {
            world_type: world.name.clone(),
            waiting,
            team_size: world.team_size,
            estimated_wait_seconds: stats.estimate(waiting + 1, world.team_size),
            oldest_wait_ms,
        })
    }
}
