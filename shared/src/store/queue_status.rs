//! `lua/queue_status.lua`: a world's queue depth, oldest wait, wait
//! statistics and, for rated worlds, the waiting tickets' ratings.

use super::reply::Reply;
use super::MatchStore;
use crate::config::World;
use crate::domain::{QueueStatus, Rating, RatingBucket, RatingDistribution, WaitStats};
use crate::error::StoreError;
use crate::scripts::SCRIPTS;

const SCRIPT: &str = "queue_status.lua";

/// Buckets `queue-status` splits a rated world's waiting ratings into.
pub const RATING_BUCKETS: u64 = 5;

impl MatchStore {
    /// A world's queue depth and wait estimate.
    pub async fn queue_status(&self, world: &World) -> Result<QueueStatus, StoreError> {
        let mut inv = SCRIPTS.queue_status.invocation_with(
            self.keys(),
            &[&world.name],
            self.features(&[world]),
        );
        let region_names = world
            .regions
            .as_ref()
            .map(|r| r.names.join(" "))
            .unwrap_or_default();
        inv.arg(self.window_ms())
            .arg(RATING_BUCKETS)
            .arg(region_names.as_str());
        let mut reply = Reply::new(SCRIPT, self.invoke(&inv, true).await?)?;
        let waiting = reply.uint("waiting")?;
        let stats = WaitStats {
            players_matched: reply.uint("window players")?,
            span_ms: reply.uint("window span")?,
        };
        let oldest_wait_ms = reply.uint("oldest wait")?;
        let rating = |reply: &mut Reply, what: &str| -> Result<Option<Rating>, StoreError> {
            reply
                .optional_text(what)?
                .map(|r| Rating::parse(&r))
                .transpose()
                .map_err(|e| StoreError::UnexpectedReply(format!("{SCRIPT}: {e}")))
        };
        let lowest = rating(&mut reply, "lowest rating")?;
        let highest = rating(&mut reply, "highest rating")?;
        let ratings = match lowest.zip(highest) {
            None => None,
            Some((lowest, highest)) => {
                let width = (highest.value() - lowest.value()) / RATING_BUCKETS as f64;
                let mut buckets = Vec::new();
                for b in 0..RATING_BUCKETS {
                    let from = lowest.value() + b as f64 * width;
                    let to = if b + 1 == RATING_BUCKETS {
                        highest.value()
                    } else {
                        lowest.value() + (b + 1) as f64 * width
                    };
                    buckets.push(RatingBucket {
                        from,
                        to,
                        count: reply.uint("bucket count")?,
                    });
                }
                Some(RatingDistribution {
                    lowest,
                    highest,
                    buckets,
                })
            }
        };
        let regions = match &world.regions {
            None => None,
            Some(r) => Some(
                r.names
                    .iter()
                    .map(|name| Ok((name.clone(), reply.uint("region count")?)))
                    .collect::<Result<_, StoreError>>()?,
            ),
        };
        let open_backfills = reply.uint("open backfills")?;
        reply.finish()?;
        Ok(QueueStatus {
            open_backfills,
            world_type: world.name.clone(),
            waiting,
            team_size: world.team_size,
            teams: world.teams,
            estimated_wait_seconds: stats.estimate(waiting + 1, world.seats()),
            oldest_wait_ms,
            ratings,
            regions,
        })
    }
}
