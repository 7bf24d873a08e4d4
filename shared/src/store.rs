//! The Redis store: one method per operation, each one atomic Lua script
//! (one round trip), with typed results decoded from the scripts' flat replies.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use redis::aio::{ConnectionLike, ConnectionManager, ConnectionManagerConfig};
use redis::cluster::ClusterClientBuilder;
use redis::cluster_async::ClusterConnection;
use redis::{Cmd, Pipeline, RedisFuture, ScriptInvocation, Value};
use tokio::sync::OnceCell;

use crate::config::{Settings, World};
use crate::domain::{
    ConnectionId, JoinOutcome, LeaveOutcome, MatchRecord, Notification, OutboxEntry, PlayerId,
    PlayerStatus, QueuePosition, QueueStatus, TicketData, WaitStats, WorldName,
};
use crate::error::StoreError;
use crate::keys::KeyLayout;
use crate::scripts::SCRIPTS;

/// A connection to a single endpoint or to a cluster.
#[derive(Clone)]
enum Connection {
    Single(ConnectionManager),
    Cluster(ClusterConnection),
}

impl ConnectionLike for Connection {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        match self {
            Connection::Single(c) => c.req_packed_command(cmd),
            Connection::Cluster(c) => c.req_packed_command(cmd),
        }
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        match self {
            Connection::Single(c) => c.req_packed_commands(pipeline, offset, count),
            Connection::Cluster(c) => c.req_packed_commands(pipeline, offset, count),
        }
    }

    fn get_db(&self) -> i64 {
        match self {
            Connection::Single(c) => c.get_db(),
            Connection::Cluster(c) => c.get_db(),
        }
    }
}

/// Boxed: both clients are large and built once per process.
enum Client {
    Single(Box<redis::Client>),
    Cluster(Box<redis::cluster::ClusterClient>),
}

struct Inner {
    settings: Settings,
    keys: KeyLayout,
    client: Client,
    conn: OnceCell<Connection>,
    /// Milliseconds since `epoch` of the last successful command.
    last_ok_ms: AtomicU64,
    epoch: Instant,
}

/// Handle to the matchmaking state of one namespace. Cheap to clone; build it
/// once per process (Lambda init) and share it.
#[derive(Clone)]
pub struct MatchStore {
    inner: Arc<Inner>,
}

/// Matches formed by one call of the matcher for one world.
#[derive(Debug, Clone, PartialEq)]
pub struct MatchBatch {
    pub matches: Vec<MatchRecord>,
    /// Tickets left in the queue afterwards (fewer than a full group unless
    /// `max_groups` limited the call).
    pub queue_size: u64,
}

/// What housekeeping removed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Housekeeping {
    pub matches_removed: u64,
    pub connections_removed: u64,
    pub tickets_removed: u64,
}

/// A registered connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Registered {
    /// The player's connections now, this one included.
    pub connections: u64,
    /// An older connection of the player dropped to stay within the cap.
    pub evicted: Option<String>,
}

/// The result of forgetting a connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unregistered {
    /// Whose connection it was; `None` if it was not registered.
    pub player: Option<String>,
    pub remaining_connections: u64,
    /// The world whose ticket was removed because this was the last connection.
    pub removed_ticket_world: Option<String>,
}

/// How to settle a claimed notification.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Settlement {
    /// Delivered, or not worth retrying: remove it.
    Done,
    /// Try again after this delay.
    RetryAfter(Duration),
}

impl MatchStore {
    /// Builds the store without connecting: the first command connects, so a
    /// cold start succeeds while Redis is down and requests answer 503 until
    /// it is back.
    pub fn new(settings: Settings) -> Result<Self, StoreError> {
        let redis = &settings.redis;
        let certificates = match &redis.ca_cert {
            None => None,
            Some(path) => Some(redis::TlsCertificates {
                client_tls: None,
                root_cert: Some(std::fs::read(path).map_err(|e| {
                    StoreError::Rejected(format!(
                        "cannot read REDIS_CA_CERT {}: {e}",
                        path.display()
                    ))
                })?),
            }),
        };
        let client = if redis.cluster {
            let mut builder = ClusterClientBuilder::new(redis.urls.clone())
                .connection_timeout(redis.connect_timeout)
                .response_timeout(redis.command_timeout)
                .retries(2)
                .min_retry_wait(50)
                .max_retry_wait(500);
            if let Some(certificates) = certificates {
                builder = builder.certs(certificates);
            }
            Client::Cluster(Box::new(
                builder
                    .build()
                    .map_err(|e| StoreError::Rejected(format!("cluster client: {e}")))?,
            ))
        } else {
            let url = redis.urls.first().map(String::as_str).unwrap_or_default();
            let client = match certificates {
                Some(certificates) => redis::Client::build_with_tls(url, certificates),
                None => redis::Client::open(url),
            };
            Client::Single(Box::new(
                client.map_err(|e| StoreError::Rejected(format!("Redis URL: {e}")))?,
            ))
        };
        Ok(Self {
            inner: Arc::new(Inner {
                keys: KeyLayout::new(&settings.namespace),
                settings,
                client,
                conn: OnceCell::new(),
                last_ok_ms: AtomicU64::new(0),
                epoch: Instant::now(),
            }),
        })
    }

    pub fn settings(&self) -> &Settings {
        &self.inner.settings
    }

    pub fn keys(&self) -> &KeyLayout {
        &self.inner.keys
    }

    fn timeout(&self) -> Duration {
        self.inner.settings.redis.command_timeout
    }

    async fn connection(&self) -> Result<Connection, StoreError> {
        let redis = &self.inner.settings.redis;
        let conn = self
            .inner
            .conn
            .get_or_try_init(|| async {
                match &self.inner.client {
                    Client::Single(client) => {
                        let config = ConnectionManagerConfig::new()
                            .set_connection_timeout(Some(redis.connect_timeout))
                            .set_response_timeout(Some(redis.command_timeout))
                            .set_number_of_retries(3)
                            .set_min_delay(Duration::from_millis(20))
                            .set_max_delay(Duration::from_millis(250));
                        client
                            .get_connection_manager_with_config(config)
                            .await
                            .map(Connection::Single)
                    }
                    Client::Cluster(client) => {
                        client.get_async_connection().await.map(Connection::Cluster)
                    }
                }
            })
            .await?;
        Ok(conn.clone())
    }

    fn elapsed_ms(&self) -> u64 {
        u64::try_from(self.inner.epoch.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    /// Runs one script invocation within the command timeout.
    async fn invoke(
        &self,
        inv: &ScriptInvocation<'_>,
        idempotent: bool,
    ) -> Result<Value, StoreError> {
        let timeout = self.timeout();
        let attempt = async {
            let mut conn = self.connection().await?;
            let idle_ms = self
                .elapsed_ms()
                .saturating_sub(self.inner.last_ok_ms.load(Ordering::Relaxed));
            let idle_check_ms =
                u64::try_from(self.inner.settings.redis.idle_check_after.as_millis())
                    .unwrap_or(u64::MAX);
            if idle_ms >= idle_check_ms {
                // After an idle spell (a frozen-and-thawed Lambda, a NAT that
                // dropped the flow) the connection may be dead. A PING is safe
                // to retry, so it pays for the reconnect before the real
                // command goes out; writes themselves are never blindly
                // retried, since a lost reply could hide an applied write.
                if redis::cmd("PING")
                    .query_async::<()>(&mut conn)
                    .await
                    .is_err()
                {
                    redis::cmd("PING").query_async::<()>(&mut conn).await?;
                }
            }
            match inv.invoke_async::<Value>(&mut conn).await {
                Ok(v) => Ok(v),
                Err(e) if idempotent && (e.is_connection_dropped() || e.is_io_error()) => inv
                    .invoke_async::<Value>(&mut conn)
                    .await
                    .map_err(StoreError::from),
                Err(e) => Err(StoreError::from(e)),
            }
        };
        let value = tokio::time::timeout(timeout, attempt)
            .await
            .map_err(|_| StoreError::Timeout(timeout))??;
        self.inner
            .last_ok_ms
            .store(self.elapsed_ms(), Ordering::Relaxed);
        Ok(value)
    }

    /// Round trip to Redis (readiness checks).
    pub async fn ping(&self) -> Result<(), StoreError> {
        let timeout = self.timeout();
        tokio::time::timeout(timeout, async {
            let mut conn = self.connection().await?;
            redis::cmd("PING")
                .query_async::<()>(&mut conn)
                .await
                .map_err(StoreError::from)
        })
        .await
        .map_err(|_| StoreError::Timeout(timeout))?
    }

    /// Runs a plain command (tests and tooling; the operations use scripts).
    pub async fn command<T: redis::FromRedisValue>(&self, cmd: &Cmd) -> Result<T, StoreError> {
        let timeout = self.timeout();
        tokio::time::timeout(timeout, async {
            let mut conn = self.connection().await?;
            cmd.query_async::<T>(&mut conn)
                .await
                .map_err(StoreError::from)
        })
        .await
        .map_err(|_| StoreError::Timeout(timeout))?
    }

    fn world_names(&self) -> impl Iterator<Item = &str> {
        self.inner.settings.worlds.iter().map(|w| w.name.as_str())
    }

    fn window_ms(&self) -> u64 {
        millis(self.inner.settings.wait_window)
    }

    /// Puts `player` in `world`'s queue; see [`JoinOutcome`].
    #[tracing::instrument(level = "debug", skip(self, world, data), fields(world = %world.name))]
    pub async fn join(
        &self,
        world: &World,
        player: &PlayerId,
        data: Option<&TicketData>,
    ) -> Result<JoinOutcome, StoreError> {
        let s = &self.inner.settings;
        let k = &self.inner.keys;
        let index = s
            .worlds
            .iter()
            .position(|w| w.name == world.name)
            .ok_or_else(|| {
                StoreError::Rejected(format!("world {} is not configured", world.name))
            })?;
        let mut inv = SCRIPTS.join.prepare_invoke();
        inv.key(k.tickets())
            .key(k.ticket_seq())
            .key(k.matches())
            .key(k.match_expiry())
            .key(k.player_match())
            .key(k.outbox())
            .key(k.match_seq());
        for w in s.worlds.iter() {
            let wk = k.world(&w.name);
            inv.key(wk.queue).key(wk.deadlines).key(wk.rate);
        }
        inv.arg(player.as_str())
            .arg(index + 1)
            .arg(world.team_size)
            .arg(millis(world.ticket_ttl))
            .arg(data.map_or("", TicketData::as_json))
            .arg(if s.instant_match { "1" } else { "0" })
            .arg(millis(s.match_ttl))
            .arg(s.queue_capacity)
            .arg(self.window_ms());
        for name in self.world_names() {
            inv.arg(name);
        }
        let reply = Reply::new(self.invoke(&inv, false).await?)?;
        if reply.str(0)? == "STALE" {
            // A ticket of a world removed from the configuration: nobody
            // matches or sweeps it any more. Drop it, then join for real.
            let retired = WorldName::parse(reply.str(1)?)
                .map_err(|e| StoreError::UnexpectedReply(format!("stale ticket: {e}")))?;
            self.drop_stale_ticket(&retired, player).await?;
            let reply = Reply::new(self.invoke(&inv, false).await?)?;
            return decode_join(&reply, player, self);
        }
        decode_join(&reply, player, self)
    }

    /// Removes `player`'s ticket of `retired`, a world no longer configured.
    async fn drop_stale_ticket(
        &self,
        retired: &WorldName,
        player: &PlayerId,
    ) -> Result<(), StoreError> {
        let k = &self.inner.keys;
        let wk = k.world(retired);
        let mut inv = SCRIPTS.drop_stale_ticket.prepare_invoke();
        inv.key(k.tickets())
            .key(wk.queue)
            .key(wk.deadlines)
            .arg(player.as_str())
            .arg(retired.as_str());
        let removed = Reply::int_value(&self.invoke(&inv, false).await?)?;
        tracing::info!(world = %retired, removed, "dropped a ticket of a world that is no longer configured");
        Ok(())
    }

    /// Removes `player`'s ticket from `world`'s queue.
    #[tracing::instrument(level = "debug", skip(self, world), fields(world = %world.name))]
    pub async fn leave(
        &self,
        world: &World,
        player: &PlayerId,
    ) -> Result<LeaveOutcome, StoreError> {
        let k = &self.inner.keys;
        let wk = k.world(&world.name);
        let mut inv = SCRIPTS.leave.prepare_invoke();
        inv.key(wk.queue)
            .key(wk.deadlines)
            .key(k.tickets())
            .arg(player.as_str())
            .arg(world.name.as_str());
        let reply = Reply::new(self.invoke(&inv, false).await?)?;
        match reply.str(0)? {
            "LEFT" => Ok(LeaveOutcome::Left {
                previous_position: reply.uint(1)?,
                remaining_queue_size: reply.uint(2)?,
            }),
            "NOT_QUEUED" => {
                // A ticket of a world no longer configured does not count.
                let other = reply.str(1)?;
                let configured = self.inner.settings.worlds.get(other).is_some();
                Ok(LeaveOutcome::NotQueued {
                    queued_in: configured.then(|| other.to_owned()),
                })
            }
            other => Err(StoreError::UnexpectedReply(format!(
                "leave status {other:?}"
            ))),
        }
    }

    /// Forms every complete group `world`'s queue allows (at most
    /// `max_groups`, 0 = no limit), oldest first, in one atomic call.
    #[tracing::instrument(level = "debug", skip(self, world), fields(world = %world.name))]
    pub async fn form_matches(
        &self,
        world: &World,
        max_groups: u64,
    ) -> Result<MatchBatch, StoreError> {
        let s = &self.inner.settings;
        let k = &self.inner.keys;
        let wk = k.world(&world.name);
        let mut inv = SCRIPTS.form_matches.prepare_invoke();
        inv.key(wk.queue)
            .key(wk.deadlines)
            .key(wk.rate)
            .key(k.tickets())
            .key(k.matches())
            .key(k.match_expiry())
            .key(k.player_match())
            .key(k.outbox())
            .key(k.match_seq())
            .arg(world.name.as_str())
            .arg(world.team_size)
            .arg(millis(s.match_ttl))
            .arg(max_groups)
            .arg(self.window_ms());
        let reply = Reply::new(self.invoke(&inv, false).await?)?;
        let queue_size = reply.uint(0)?;
        let matches = (1..reply.len())
            .map(|i| reply.match_record(i))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(MatchBatch {
            matches,
            queue_size,
        })
    }

    /// A world's queue depth and wait estimate.
    pub async fn queue_status(&self, world: &World) -> Result<QueueStatus, StoreError> {
        let k = &self.inner.keys;
        let wk = k.world(&world.name);
        let mut inv = SCRIPTS.queue_status.prepare_invoke();
        inv.key(wk.queue)
            .key(wk.rate)
            .key(k.tickets())
            .arg(self.window_ms());
        let reply = Reply::new(self.invoke(&inv, true).await?)?;
        let waiting = reply.uint(0)?;
        let stats = WaitStats {
            players_matched: reply.uint(1)?,
            span_ms: reply.uint(2)?,
        };
        Ok(QueueStatus {
            world_type: world.name.to_string(),
            waiting,
            team_size: world.team_size,
            estimated_wait_seconds: stats.estimate(waiting + 1, world.team_size),
            oldest_wait_ms: reply.uint(3)?,
        })
    }

    /// Where `player` stands: queued, matched (while the record lives) or idle.
    pub async fn player_status(&self, player: &PlayerId) -> Result<PlayerStatus, StoreError> {
        let s = &self.inner.settings;
        let k = &self.inner.keys;
        let mut inv = SCRIPTS.player_status.prepare_invoke();
        inv.key(k.tickets())
            .key(k.player_match())
            .key(k.matches())
            .key(k.match_expiry());
        for w in s.worlds.iter() {
            let wk = k.world(&w.name);
            inv.key(wk.queue).key(wk.rate);
        }
        inv.arg(player.as_str()).arg(self.window_ms());
        for name in self.world_names() {
            inv.arg(name);
        }
        let reply = Reply::new(self.invoke(&inv, true).await?)?;
        match reply.str(0)? {
            "IDLE" => Ok(PlayerStatus::Idle),
            "MATCHED" => Ok(PlayerStatus::Matched(reply.match_record(1)?)),
            "QUEUED" => Ok(PlayerStatus::Queued(self.position(&reply)?)),
            other => Err(StoreError::UnexpectedReply(format!("status {other:?}"))),
        }
    }

    /// Decodes `[_, world, position, size, window_players, window_span_ms]`.
    fn position(&self, reply: &Reply) -> Result<QueuePosition, StoreError> {
        let world = reply.str(1)?.to_owned();
        let position = reply.uint(2)?;
        let stats = WaitStats {
            players_matched: reply.uint(4)?,
            span_ms: reply.uint(5)?,
        };
        let team = self
            .inner
            .settings
            .worlds
            .get(&world)
            .map_or(0, |w| w.team_size);
        Ok(QueuePosition {
            estimated_wait_seconds: if team == 0 {
                None
            } else {
                stats.estimate(position, team)
            },
            world_type: world,
            position,
            queue_size: reply.uint(3)?,
        })
    }

    /// Removes up to `limit` of `world`'s expired tickets; returns whose. Each
    /// also gets a TICKET_EXPIRED notification in the outbox.
    pub async fn sweep_expired_tickets(
        &self,
        world: &World,
        limit: u64,
    ) -> Result<Vec<String>, StoreError> {
        let k = &self.inner.keys;
        let wk = k.world(&world.name);
        let mut inv = SCRIPTS.sweep_tickets.prepare_invoke();
        inv.key(wk.queue)
            .key(wk.deadlines)
            .key(k.tickets())
            .key(k.outbox())
            .arg(world.name.as_str())
            .arg(limit.max(1));
        let reply = Reply::new(self.invoke(&inv, false).await?)?;
        (0..reply.len())
            .map(|i| reply.str(i).map(str::to_owned))
            .collect()
    }

    /// Deletes up to `limit` expired match records and expired connections.
    pub async fn housekeeping(&self, limit: u64) -> Result<Housekeeping, StoreError> {
        let s = &self.inner.settings;
        let k = &self.inner.keys;
        let mut inv = SCRIPTS.housekeeping.prepare_invoke();
        inv.key(k.matches())
            .key(k.match_expiry())
            .key(k.player_match())
            .key(k.conns())
            .key(k.conn_expiry())
            .key(k.player_conns())
            .key(k.tickets());
        for w in s.worlds.iter() {
            let wk = k.world(&w.name);
            inv.key(wk.queue).key(wk.deadlines);
        }
        inv.arg(limit.max(1)).arg(if s.remove_ticket_on_disconnect {
            "1"
        } else {
            "0"
        });
        for name in self.world_names() {
            inv.arg(name);
        }
        let reply = Reply::new(self.invoke(&inv, false).await?)?;
        Ok(Housekeeping {
            matches_removed: reply.uint(0)?,
            connections_removed: reply.uint(1)?,
            tickets_removed: reply.uint(2)?,
        })
    }

    /// Claims up to `limit` due notifications (or exactly `only`, if given
    /// and due), hiding them for `lease` while they are delivered.
    pub async fn claim_notifications(
        &self,
        lease: Duration,
        limit: usize,
        only: &[String],
    ) -> Result<Vec<OutboxEntry>, StoreError> {
        let k = &self.inner.keys;
        let mut inv = SCRIPTS.outbox_claim.prepare_invoke();
        inv.key(k.outbox())
            .key(k.outbox_meta())
            .key(k.matches())
            .key(k.player_conns())
            .arg(millis(lease).max(1))
            .arg(limit.max(1));
        for id in only {
            inv.arg(id.as_str());
        }
        let reply = Reply::new(self.invoke(&inv, false).await?)?;
        if reply.len() % 5 != 0 {
            return Err(StoreError::UnexpectedReply(format!(
                "claim reply of {} values",
                reply.len()
            )));
        }
        let mut entries = Vec::with_capacity(reply.len() / 5);
        for base in (0..reply.len()).step_by(5) {
            let id = reply.str(base)?.to_owned();
            let payload = reply.str(base + 3)?;
            let notification = parse_notification(&id, payload)?;
            entries.push(OutboxEntry {
                attempts: u32::try_from(reply.uint(base + 1)?).unwrap_or(u32::MAX),
                first_attempt_ms: reply.uint(base + 2)?,
                connections: reply
                    .str(base + 4)?
                    .split_whitespace()
                    .map(String::from)
                    .collect(),
                notification,
                id,
            });
        }
        Ok(entries)
    }

    /// Removes delivered notifications and reschedules the others.
    pub async fn settle_notifications(
        &self,
        settlements: &[(String, Settlement)],
    ) -> Result<(), StoreError> {
        if settlements.is_empty() {
            return Ok(());
        }
        let k = &self.inner.keys;
        let mut inv = SCRIPTS.outbox_settle.prepare_invoke();
        inv.key(k.outbox()).key(k.outbox_meta());
        for (id, settlement) in settlements {
            let delay: i64 = match settlement {
                Settlement::Done => -1,
                Settlement::RetryAfter(d) => i64::try_from(millis(*d)).unwrap_or(i64::MAX),
            };
            inv.arg(id.as_str()).arg(delay);
        }
        self.invoke(&inv, true).await?;
        Ok(())
    }

    /// Records that `conn` belongs to `player`.
    pub async fn register_connection(
        &self,
        conn: &ConnectionId,
        player: &PlayerId,
    ) -> Result<Registered, StoreError> {
        let s = &self.inner.settings;
        let k = &self.inner.keys;
        let mut inv = SCRIPTS.conn_register.prepare_invoke();
        inv.key(k.conns())
            .key(k.conn_expiry())
            .key(k.player_conns())
            .arg(conn.as_str())
            .arg(player.as_str())
            .arg(millis(s.connection_ttl))
            .arg(s.max_connections_per_player);
        let reply = Reply::new(self.invoke(&inv, true).await?)?;
        let evicted = reply.str(1)?;
        Ok(Registered {
            connections: reply.uint(0)?,
            evicted: (!evicted.is_empty()).then(|| evicted.to_owned()),
        })
    }

    /// The connections currently registered for `player`.
    pub async fn connections_of(&self, player: &PlayerId) -> Result<Vec<String>, StoreError> {
        let list: Option<String> = self
            .command(
                redis::cmd("HGET")
                    .arg(self.inner.keys.player_conns())
                    .arg(player.as_str()),
            )
            .await?;
        Ok(list
            .unwrap_or_default()
            .split_whitespace()
            .map(String::from)
            .collect())
    }

    /// Forgets `conn`; removes the player's ticket if it was their last
    /// connection and `remove_ticket_on_disconnect` is set.
    pub async fn unregister_connection(
        &self,
        conn: &ConnectionId,
    ) -> Result<Unregistered, StoreError> {
        let s = &self.inner.settings;
        let k = &self.inner.keys;
        let mut inv = SCRIPTS.conn_unregister.prepare_invoke();
        inv.key(k.conns())
            .key(k.conn_expiry())
            .key(k.player_conns())
            .key(k.tickets());
        for w in s.worlds.iter() {
            let wk = k.world(&w.name);
            inv.key(wk.queue).key(wk.deadlines);
        }
        inv.arg(conn.as_str())
            .arg(if s.remove_ticket_on_disconnect {
                "1"
            } else {
                "0"
            });
        for name in self.world_names() {
            inv.arg(name);
        }
        let reply = Reply::new(self.invoke(&inv, true).await?)?;
        let player = reply.str(0)?;
        let removed = reply.str(2)?;
        Ok(Unregistered {
            player: (!player.is_empty()).then(|| player.to_owned()),
            remaining_connections: reply.uint(1)?,
            removed_ticket_world: (!removed.is_empty()).then(|| removed.to_owned()),
        })
    }

    /// Takes or renews the matcher lease for `token`; false if another holds it.
    pub async fn acquire_lease(&self, token: &str, ttl: Duration) -> Result<bool, StoreError> {
        let mut inv = SCRIPTS.lease_acquire.prepare_invoke();
        inv.key(self.inner.keys.matcher_lease())
            .arg(token)
            .arg(millis(ttl).max(1));
        Ok(Reply::int_value(&self.invoke(&inv, true).await?)? == 1)
    }

    /// Gives the lease back if `token` holds it.
    pub async fn release_lease(&self, token: &str) -> Result<bool, StoreError> {
        let mut inv = SCRIPTS.lease_release.prepare_invoke();
        inv.key(self.inner.keys.matcher_lease()).arg(token);
        Ok(Reply::int_value(&self.invoke(&inv, true).await?)? == 1)
    }
}

/// Outbox ids of the MATCH_FOUND notifications of `record`, one per player.
pub fn match_notification_ids(record: &MatchRecord) -> Vec<String> {
    record
        .participants
        .iter()
        .map(|p| format!("M|{}|{p}", record.match_id))
        .collect()
}

fn parse_notification(id: &str, payload: &str) -> Result<Notification, StoreError> {
    let bad = || StoreError::UnexpectedReply(format!("outbox id {id:?}"));
    let (kind, rest) = id.split_once('|').ok_or_else(bad)?;
    let (reference, player) = rest.split_once('|').ok_or_else(bad)?;
    match kind {
        "M" => Ok(Notification::MatchFound {
            match_id: reference.to_owned(),
            player: player.to_owned(),
            record: if payload.is_empty() {
                None
            } else {
                Some(decode_record(payload.as_bytes())?)
            },
        }),
        "X" => Ok(Notification::TicketExpired {
            world: reference.to_owned(),
            player: player.to_owned(),
        }),
        _ => Err(bad()),
    }
}

fn decode_join(
    reply: &Reply,
    player: &PlayerId,
    store: &MatchStore,
) -> Result<JoinOutcome, StoreError> {
    match reply.str(0)? {
        "QUEUED" => Ok(JoinOutcome::Queued(store.position(reply)?)),
        "ALREADY" => Ok(JoinOutcome::AlreadyQueued(store.position(reply)?)),
        "FULL" => Ok(JoinOutcome::QueueFull {
            world_type: reply.str(1)?.to_owned(),
            queue_size: reply.uint(3)?,
        }),
        "MATCHED" => {
            let formed = (6..reply.len())
                .map(|i| reply.match_record(i))
                .collect::<Result<Vec<_>, _>>()?;
            let record = formed
                .iter()
                .find(|m| m.includes(player))
                .cloned()
                .ok_or_else(|| {
                    StoreError::UnexpectedReply("MATCHED without the player's match".into())
                })?;
            Ok(JoinOutcome::Matched { record, formed })
        }
        other => Err(StoreError::UnexpectedReply(format!(
            "join status {other:?}"
        ))),
    }
}

fn decode_record(bytes: &[u8]) -> Result<MatchRecord, StoreError> {
    serde_json::from_slice(bytes)
        .map_err(|e| StoreError::UnexpectedReply(format!("match record: {e}")))
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// A flat script reply with typed accessors.
struct Reply(Vec<Value>);

impl Reply {
    fn new(value: Value) -> Result<Self, StoreError> {
        match value {
            Value::Array(items) | Value::Set(items) => Ok(Self(items)),
            other => Err(StoreError::UnexpectedReply(format!(
                "expected an array, got {other:?}"
            ))),
        }
    }

    fn int_value(value: &Value) -> Result<i64, StoreError> {
        match value {
            Value::Int(n) => Ok(*n),
            other => Err(StoreError::UnexpectedReply(format!(
                "expected an integer, got {other:?}"
            ))),
        }
    }

    fn len(&self) -> usize {
        self.0.len()
    }

    fn get(&self, i: usize) -> Result<&Value, StoreError> {
        self.0
            .get(i)
            .ok_or_else(|| StoreError::UnexpectedReply(format!("reply has no value {i}")))
    }

    fn bytes(&self, i: usize) -> Result<&[u8], StoreError> {
        match self.get(i)? {
            Value::BulkString(b) => Ok(b),
            Value::SimpleString(s) => Ok(s.as_bytes()),
            other => Err(StoreError::UnexpectedReply(format!(
                "value {i}: expected a string, got {other:?}"
            ))),
        }
    }

    fn str(&self, i: usize) -> Result<&str, StoreError> {
        std::str::from_utf8(self.bytes(i)?)
            .map_err(|_| StoreError::UnexpectedReply(format!("value {i} is not UTF-8")))
    }

    fn uint(&self, i: usize) -> Result<u64, StoreError> {
        let n = Self::int_value(self.get(i)?)?;
        u64::try_from(n).map_err(|_| StoreError::UnexpectedReply(format!("value {i} is negative")))
    }

    fn match_record(&self, i: usize) -> Result<MatchRecord, StoreError> {
        decode_record(self.bytes(i)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outbox_ids_round_trip_players_with_separators() {
        let record = MatchRecord {
            match_id: "18f-2a".into(),
            world_type: "world1".into(),
            participants: vec!["a|b".into(), "c".into()],
            matched_at: 1,
            player_data: None,
        };
        let ids = match_notification_ids(&record);
        assert_eq!(ids, ["M|18f-2a|a|b", "M|18f-2a|c"]);
        let payload = serde_json::to_string(&record).unwrap();
        match parse_notification(&ids[0], &payload).unwrap() {
            Notification::MatchFound {
                match_id,
                player,
                record: Some(r),
            } => {
                assert_eq!((match_id.as_str(), player.as_str()), ("18f-2a", "a|b"));
                assert_eq!(r, record);
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(
            parse_notification("X|world2|p:1", "").unwrap(),
            Notification::TicketExpired {
                world: "world2".into(),
                player: "p:1".into()
            }
        );
        assert!(parse_notification("Q|x|y", "").is_err());
        assert!(parse_notification("M|no-player", "").is_err());
    }

    #[test]
    fn replies_of_the_wrong_shape_are_errors_not_panics() {
        assert!(Reply::new(Value::Nil).is_err());
        let r = Reply::new(Value::Array(vec![Value::Int(-1), Value::Nil])).unwrap();
        assert!(r.uint(0).is_err());
        assert!(r.str(1).is_err());
        assert!(r.str(7).is_err());
        assert!(
            Reply::new(Value::Array(vec![Value::BulkString(b"{".to_vec())]))
                .unwrap()
                .match_record(0)
                .is_err()
        );
    }
}
