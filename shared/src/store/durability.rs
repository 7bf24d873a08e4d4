//! Durability across a failover (`MM_REPLICA_ACKS`): a write whose outcome
//! a client is told (a ticket queued, a match formed, a proposal accepted,
//! an assignment or result recorded, a backfill filled, outbox entries
//! claimed for a push) is sent in one pipeline with `WAIT <acks> <timeout>`
//! on the same connection, so its reply is only used once that many
//! replicas have everything the primary had written up to it. A read that
//! answers a player about their state (`player_status`, `match_record`) is
//! followed by a no-op write (`INCRBY match-seq 0`) and `WAIT`, which then
//! covers every write the read saw, whoever made it.
//!
//! Replication is one ordered stream per primary, and `WAIT` waits for the
//! connection's latest write offset, so one acknowledgement covers every
//! earlier write on that primary. The pipeline keeps the script and its
//! `WAIT` on one connection: a `WAIT` sent after a reconnect would report
//! a fresh connection's (empty) history as acknowledged.
//!
//! When fewer replicas acknowledge in time, the call fails with
//! [`StoreError::NotReplicated`] (HTTP 503) and nothing it decided is told;
//! the store then checks `INFO replication` before each later write and
//! refuses it before it runs while too few replicas are online, until an
//! acknowledgement comes again. What a client may see either way:
//! docs/hardening-faults.md#failover.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use redis::cluster_routing::{Route, RoutingInfo, SingleNodeRoutingInfo, SlotAddr};
use redis::{Cmd, RedisError, Value};

use super::{function_missing, Connection, MatchStore};
use crate::config::ReplicaAcks;
use crate::error::StoreError;
use crate::scripts::Invocation;

/// What a call must wait for before its reply may be used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Sync {
    /// Nothing a client is told depends on it surviving a failover.
    None,
    /// A write whose outcome is answered or pushed.
    Write,
    /// A read whose answer tells a player where they stand.
    Read,
}

/// The operations whose outcome is told: every script but the ones below
/// (new scripts are `Write` unless listed, the safe side).
pub(super) fn sync_of(file: &str) -> Sync {
    match file {
        "player_status.lua" | "match_record.lua" => Sync::Read,
        // Heartbeats, the lease, housekeeping and settling a delivery tell
        // nobody anything; a sweep's TICKET_EXPIRED notes are pushed only
        // after an outbox claim, which waits; a stale ticket's removal is
        // followed by the join that waits; queue status is aggregates.
        "conn_heartbeat.lua"
        | "conn_unregister.lua"
        | "lease_acquire.lua"
        | "lease_release.lua"
        | "matcher_sleep.lua"
        | "housekeeping.lua"
        | "sweep_tickets.lua"
        | "outbox_settle.lua"
        | "drop_stale_ticket.lua"
        | "queue_status.lua" => Sync::None,
        _ => Sync::Write,
    }
}

/// How often `auto` looks again for a replica while it has seen none.
const AUTO_RECHECK_MS: u64 = 1000;

/// Per-process state of the durability mode.
#[derive(Default)]
pub(super) struct DurabilityState {
    /// `auto`: the namespace's primary has been seen with a replica (sticky:
    /// a replica that is away, or a primary just promoted, still needs one).
    replicated: AtomicBool,
    /// `auto`: when `INFO replication` was last read (ms since the store's epoch).
    checked_ms: AtomicU64,
    /// The last wait fell short: check the replicas before writing again.
    degraded: AtomicBool,
    /// `auto`: the server refused `INFO` (logged once).
    info_refused: AtomicBool,
    waits: AtomicU64,
    short: AtomicU64,
    refused: AtomicU64,
}

/// What the durability mode did in this process (tests, the bench).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Durability {
    /// Replicas each told outcome waits for now (0: not waiting).
    pub acks: u32,
    /// Calls that waited for acknowledgements.
    pub waits: u64,
    /// Calls whose write ran but was not acknowledged in time (503).
    pub short: u64,
    /// Writes refused before running: too few replicas online (503).
    pub refused: u64,
}

/// The replication section of `INFO` of the namespace's primary.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Replication {
    /// `connected_slaves`.
    pub connected: u32,
    /// Replicas in state `online` (synced, streaming).
    pub online: u32,
}

pub(super) fn parse_replication(text: &str) -> Replication {
    let mut out = Replication {
        connected: 0,
        online: 0,
    };
    for line in text.lines() {
        if let Some(n) = line.strip_prefix("connected_slaves:") {
            out.connected = n.trim().parse().unwrap_or(0);
        } else if line.starts_with("slave") && line.contains("state=online") {
            out.online += 1;
        }
    }
    out
}

/// Why a synced call failed.
pub(super) enum CallError {
    /// From Redis: the caller's retry policy applies.
    Redis(RedisError),
    /// Decided here (not acknowledged, refused): answered as is.
    Store(StoreError),
}

impl From<RedisError> for CallError {
    fn from(e: RedisError) -> Self {
        CallError::Redis(e)
    }
}

impl Connection {
    /// Sends `cmd` to the primary of `key`'s slot (cluster), or to the one
    /// endpoint.
    async fn on_primary(&mut self, cmd: Cmd, key: &str) -> Result<Value, RedisError> {
        match self {
            Connection::Single(c) => cmd.query_async(c).await,
            Connection::Cluster(c) => {
                let route = Route::with_key(key.as_bytes(), SlotAddr::Master);
                c.route_command(
                    cmd,
                    RoutingInfo::SingleNode(SingleNodeRoutingInfo::SpecificNode(route)),
                )
                .await
            }
        }
    }
}

impl MatchStore {
    /// What this process's durability mode did so far.
    pub fn durability(&self) -> Durability {
        let d = &self.inner.durability;
        Durability {
            acks: match self.inner.settings.redis.replica_acks {
                ReplicaAcks::Off => 0,
                ReplicaAcks::Require(n) => n,
                ReplicaAcks::Auto => u32::from(d.replicated.load(Ordering::Relaxed)),
            },
            waits: d.waits.load(Ordering::Relaxed),
            short: d.short.load(Ordering::Relaxed),
            refused: d.refused.load(Ordering::Relaxed),
        }
    }

    /// `INFO replication` of the namespace's primary.
    pub(super) async fn replication(
        &self,
        conn: &mut Connection,
    ) -> Result<Replication, RedisError> {
        let mut cmd = redis::cmd("INFO");
        cmd.arg("replication");
        let value = conn.on_primary(cmd, &self.inner.keys.players()).await?;
        let text: String = redis::from_redis_value(value)?;
        Ok(parse_replication(&text))
    }

    /// Acknowledgements a told outcome needs now.
    async fn required_acks(&self, conn: &mut Connection) -> Result<u32, RedisError> {
        let d = &self.inner.durability;
        match self.inner.settings.redis.replica_acks {
            ReplicaAcks::Off => Ok(0),
            ReplicaAcks::Require(n) => Ok(n),
            ReplicaAcks::Auto => {
                if d.replicated.load(Ordering::Relaxed) {
                    return Ok(1);
                }
                let now = self.elapsed_ms();
                let last = d.checked_ms.load(Ordering::Relaxed);
                if last != 0 && now.saturating_sub(last) < AUTO_RECHECK_MS {
                    return Ok(0);
                }
                d.checked_ms.store(now.max(1), Ordering::Relaxed);
                let replication = match self.replication(conn).await {
                    Ok(r) => r,
                    // A server that refuses INFO (an ACL, a managed proxy)
                    // tells nothing about replicas: auto does not wait there.
                    Err(e) if e.kind() != redis::ErrorKind::Io && e.code().is_some() => {
                        if !d.info_refused.swap(true, Ordering::Relaxed) {
                            tracing::warn!(error = %e, "INFO replication refused; MM_REPLICA_ACKS=auto waits for no replica");
                        }
                        return Ok(0);
                    }
                    Err(e) => return Err(e),
                };
                if replication.connected > 0 {
                    d.replicated.store(true, Ordering::Relaxed);
                    tracing::info!("the namespace's primary has a replica: told outcomes wait for one acknowledgement");
                    return Ok(1);
                }
                Ok(0)
            }
        }
    }

    /// One call of `inv` that, when its outcome is told ([`sync_of`]),
    /// returns only once the required replicas acknowledged it.
    pub(super) async fn call_synced(
        &self,
        conn: &mut Connection,
        inv: &Invocation<'_>,
    ) -> Result<Value, CallError> {
        let sync = sync_of(inv.file());
        let acks = match sync {
            Sync::None => 0,
            Sync::Write | Sync::Read => self.required_acks(conn).await?,
        };
        if acks == 0 {
            return Ok(self.call(conn, inv).await?);
        }
        let d = &self.inner.durability;
        if d.degraded.load(Ordering::Relaxed) {
            let replication = self.replication(conn).await?;
            if replication.online < acks {
                d.refused.fetch_add(1, Ordering::Relaxed);
                return Err(CallError::Store(StoreError::NotReplicated {
                    acked: replication.online,
                    wanted: acks,
                    applied: false,
                }));
            }
        }
        let redis = &self.inner.settings.redis;
        let wait_ms = redis
            .replica_ack_timeout
            .min(redis.command_timeout / 2)
            .as_millis()
            .max(1);
        let mut functions = self.inner.functions.load(Ordering::Relaxed);
        let mut loaded = false;
        loop {
            let loads_before = self.inner.function_loads.load(Ordering::Acquire);
            let mut pipe = redis::pipe();
            pipe.ignore_errors();
            pipe.add_command(if functions {
                inv.fcall()
            } else {
                inv.evalsha()
            });
            if sync == Sync::Read {
                pipe.cmd("INCRBY").arg(self.inner.keys.match_seq()).arg(0);
            }
            pipe.cmd("WAIT").arg(acks).arg(wait_ms as u64);
            d.waits.fetch_add(1, Ordering::Relaxed);
            let values: Vec<Value> = pipe.query_async(conn).await?;
            let mut values = values.into_iter();
            let reply = values.next().unwrap_or(Value::Nil);
            if let Value::ServerError(_) = &reply {
                let e = reply.extract_error().expect_err("a server error");
                if !loaded && functions && function_missing(&e) {
                    loaded = true;
                    functions = self.load_functions(conn, loads_before).await?;
                    continue;
                }
                if !loaded
                    && !functions
                    && e.kind() == redis::ErrorKind::Server(redis::ServerErrorKind::NoScript)
                {
                    loaded = true;
                    inv.script_invocation().load_async(conn).await?;
                    continue;
                }
                return Err(CallError::Redis(e));
            }
            let acked = match values.last() {
                Some(Value::Int(n)) => u32::try_from(n).unwrap_or(0),
                Some(Value::ServerError(e)) => {
                    // The script ran; the server has no WAIT (ElastiCache
                    // Serverless does not list it): a configuration error.
                    return Err(CallError::Store(StoreError::Rejected(format!(
                        "MM_REPLICA_ACKS={acks} needs WAIT, which the server refused ({e:?}); \
                         use MM_REPLICA_ACKS=auto or off on this server"
                    ))));
                }
                other => {
                    return Err(CallError::Store(StoreError::UnexpectedReply(format!(
                        "WAIT answered {other:?}"
                    ))))
                }
            };
            if acked < acks {
                d.short.fetch_add(1, Ordering::Relaxed);
                if !d.degraded.swap(true, Ordering::Relaxed) {
                    tracing::warn!(acked, wanted = acks, "replica acknowledgements missing; writes check the replicas first until they are back");
                }
                return Err(CallError::Store(StoreError::NotReplicated {
                    acked,
                    wanted: acks,
                    applied: sync == Sync::Write,
                }));
            }
            if d.degraded.swap(false, Ordering::Relaxed) {
                tracing::info!("replica acknowledgements are back");
            }
            return Ok(reply);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replication_counts_online_replicas() {
        let text = "# Replication\r\nrole:master\r\nconnected_slaves:2\r\n\
                    slave0:ip=127.0.0.1,port=1,state=online,offset=10,lag=0\r\n\
                    slave1:ip=127.0.0.1,port=2,state=wait_bgsave,offset=0,lag=0\r\n\
                    master_repl_offset:10\r\n";
        assert_eq!(
            parse_replication(text),
            Replication {
                connected: 2,
                online: 1
            }
        );
        assert_eq!(
            parse_replication("role:master\r\nconnected_slaves:0\r\n"),
            Replication {
                connected: 0,
                online: 0
            }
        );
    }

    #[test]
    fn told_outcomes_wait_and_bookkeeping_does_not() {
        assert_eq!(sync_of("join.lua"), Sync::Write);
        assert_eq!(sync_of("form_matches.lua"), Sync::Write);
        assert_eq!(sync_of("outbox_claim.lua"), Sync::Write);
        assert_eq!(sync_of("a_new_script.lua"), Sync::Write);
        assert_eq!(sync_of("player_status.lua"), Sync::Read);
        assert_eq!(sync_of("conn_heartbeat.lua"), Sync::None);
    }
}
