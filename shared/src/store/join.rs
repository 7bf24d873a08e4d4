//! `lua/join.lua`: put a player in a world's queue, matching at once when
//! the join completes a group (instant match).

use super::reply::Reply;
use super::{flag, millis, MatchStore};
use crate::config::World;
use crate::domain::{
    JoinOutcome, MatchRecord, NotificationId, PlayerId, QueuePosition, TicketData, WaitStats,
    WorldName,
};
use crate::error::StoreError;
use crate::scripts::SCRIPTS;

const SCRIPT: &str = "join.lua";

impl MatchStore {
    /// Puts `player` in `world`'s queue; see [`JoinOutcome`].
    #[tracing::instrument(level = "debug", skip(self, world, data), fields(world = %world.name))]
    pub async fn join(
        &self,
        world: &World,
        player: &PlayerId,
        data: Option<&TicketData>,
    ) -> Result<JoinOutcome, StoreError> {
        let s = self.settings();
        let k = self.keys();
        let index = s
            .worlds
            .iter()
            .position(|w| w.name == world.name)
            .ok_or_else(|| {
                StoreError::Rejected(format!("world {} is not configured", world.name))
            })?;
        // KEYS and ARGV in the order of join.lua's header.
        let mut inv = SCRIPTS.join.prepare_invoke();
        inv.key(k.tickets())
            .key(k.ticket_seq())
            .key(k.matches())
            .key(k.match_expiry())
            .key(k.player_match())
            .key(k.outbox())
            .key(k.match_seq())
            .key(k.presence());
        for w in s.worlds.iter() {
            let wk = k.world(&w.name);
            inv.key(wk.queue).key(wk.deadlines).key(wk.rate);
        }
        inv.arg(player.as_str())
            .arg(index + 1)
            .arg(world.team_size)
            .arg(millis(world.ticket_ttl))
            .arg(data.map_or("", TicketData::as_json))
            .arg(flag(s.instant_match))
            .arg(millis(s.match_ttl))
            .arg(s.queue_capacity)
            .arg(self.window_ms())
            .arg(flag(world.require_presence));
        for name in self.world_names() {
            inv.arg(name);
        }
        match self.decode_join(player, self.invoke(&inv, false).await?)? {
            Decoded::Outcome(outcome) => Ok(outcome),
            Decoded::Stale(retired) => {
                // A ticket of a world removed from the configuration: nobody
                // matches or sweeps it any more. Drop it, then join for real.
                self.drop_stale_ticket(&retired, player).await?;
                match self.decode_join(player, self.invoke(&inv, false).await?)? {
                    Decoded::Outcome(outcome) => Ok(outcome),
                    Decoded::Stale(world) => Err(StoreError::UnexpectedReply(format!(
                        "{SCRIPT}: still STALE ({world}) after dropping the stale ticket"
                    ))),
                }
            }
        }
    }

    fn decode_join(&self, player: &PlayerId, value: redis::Value) -> Result<Decoded, StoreError> {
        let mut reply = Reply::new(SCRIPT, value)?;
        let status = reply.text("status")?;
        let world = reply.parsed("world", WorldName::parse);
        if status == "STALE" {
            // The world is no longer configured, but its name is still valid.
            let world = world?;
            for what in ["position", "queue size", "window players", "window span"] {
                reply.uint(what)?;
            }
            reply.finish()?;
            return Ok(Decoded::Stale(world));
        }
        let world = world?;
        let position = reply.uint("position")?;
        let queue_size = reply.uint("queue size")?;
        let stats = WaitStats {
            players_matched: reply.uint("window players")?,
            span_ms: reply.uint("window span")?,
        };
        let outcome = match status.as_str() {
            "QUEUED" | "ALREADY" => {
                let q = self.queue_position(world, position, queue_size, stats);
                if status == "QUEUED" {
                    JoinOutcome::Queued(q)
                } else {
                    JoinOutcome::AlreadyQueued(q)
                }
            }
            "FULL" => JoinOutcome::QueueFull {
                world_type: world,
                queue_size,
            },
            "ABSENT" => JoinOutcome::NotConnected { world_type: world },
            "MATCHED" => {
                let count = reply.uint("match count")?;
                let formed = (0..count)
                    .map(|_| reply.json::<MatchRecord>("match record"))
                    .collect::<Result<Vec<_>, _>>()?;
                let mut notifications = Vec::with_capacity(reply.remaining());
                while reply.remaining() > 0 {
                    notifications.push(reply.parsed("notification id", NotificationId::parse)?);
                }
                let record = formed
                    .iter()
                    .find(|m| m.includes(player))
                    .cloned()
                    .ok_or_else(|| {
                        StoreError::UnexpectedReply(format!(
                            "{SCRIPT}: MATCHED without the player's match"
                        ))
                    })?;
                JoinOutcome::Matched {
                    record,
                    formed,
                    notifications,
                }
            }
            other => {
                return Err(StoreError::UnexpectedReply(format!(
                    "{SCRIPT}: status {other:?}"
                )))
            }
        };
        reply.finish()?;
        Ok(Decoded::Outcome(outcome))
    }

    /// A queue position with its wait estimate from the world's statistics.
    pub(super) fn queue_position(
        &self,
        world: WorldName,
        position: u64,
        queue_size: u64,
        stats: WaitStats,
    ) -> QueuePosition {
        let team = self
            .settings()
            .worlds
            .get(world.as_str())
            .map_or(0, |w| w.team_size);
        QueuePosition {
            estimated_wait_seconds: if team == 0 {
                None
            } else {
                stats.estimate(position, team)
            },
            world_type: world,
            position,
            queue_size,
        }
    }
}

enum Decoded {
    Outcome(JoinOutcome),
    /// The player holds a ticket of this world, which is no longer configured.
    Stale(WorldName),
}
