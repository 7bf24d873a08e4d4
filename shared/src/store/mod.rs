//! The Redis store: one module per Lua script (`lua/<op>.lua` ->
//! `store/<op>.rs`), each building exactly that script's KEYS and ARGV and
//! decoding exactly its reply through a [`reply::Reply`] cursor. This file
//! holds what they share: the connection (single endpoint or cluster), the
//! command timeout and the idle check; `invoke.rs` runs one script.

mod admin;
mod admission;
mod attributes_set;
mod avoid_set;
mod backfill;
mod config;
mod conn_heartbeat;
mod conn_register;
mod conn_unregister;
mod drop_stale_ticket;
mod durability;
mod form_matches;
mod housekeeping;
mod invoke;
mod join;
mod lease_acquire;
mod lease_release;
mod leave;
mod match_assign;
mod match_record;
mod match_result;
mod matcher_sleep;
mod outbox_claim;
mod outbox_settle;
mod party_cancel;
mod party_create;
mod party_join;
mod player_status;
mod proposal_answer;
mod queue_status;
mod rating_set;
mod reply;
mod sweep_tickets;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use redis::aio::{ConnectionLike, ConnectionManager, ConnectionManagerConfig};
use redis::cluster::ClusterClientBuilder;
use redis::cluster_async::ClusterConnection;
use redis::{Cmd, Pipeline, RedisError, RedisFuture, Value};

use crate::config::Settings;
use crate::domain::{ConnectionId, PlayerId};
use crate::error::{ConfigError, StoreError};
use crate::keys::{Features, KeyLayout};
use crate::scripts::{Invocation, FUNCTIONS};

pub use conn_heartbeat::Heartbeat;
pub use conn_register::{Registered, MATCH_REPLAY_WINDOW};
pub use conn_unregister::Unregistered;
pub use durability::Durability;
pub use form_matches::MatchBatch;
pub use housekeeping::Housekeeping;
use invoke::{function_missing, is_read_only, MAX_RETRY_BACKOFF, RETRY_BACKOFF};
pub use join::{AlsoJoined, JoinInput, JoinReply};
pub use match_result::RatingWrite;
// The outcomes live with the others in the domain; named here too, as the
// store's answers.
pub use crate::domain::{AssignOutcome, BackfillOutcome, ResultOutcome};
pub use outbox_claim::{CLAIM_LEASE, YOUNG_CONNECTION};
pub use outbox_settle::Settlement;

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
    /// Every world's configuration argument (`lua/_config.lua`).
    world_configs: config::WorldConfigs,
    keys: KeyLayout,
    client: Client,
    /// The connection, built on first use; dropped (and built again) when a
    /// single endpoint turns out to be a read-only replica.
    conn: std::sync::Mutex<Option<Connection>>,
    connect_lock: tokio::sync::Mutex<()>,
    durability: durability::DurabilityState,
    /// Milliseconds since `epoch` of the last successful command.
    last_ok_ms: AtomicU64,
    /// What wakes the sleeping matcher when a script found it asleep and
    /// made work for it (see [`crate::wake`]); none: nobody is woken.
    waker: std::sync::OnceLock<Arc<dyn crate::wake::Waker>>,
    epoch: Instant,
    /// Operations run as `FCALL`s of the function library until the server
    /// refuses `FUNCTION LOAD`; then as EVALSHA of standalone scripts.
    functions: AtomicBool,
    /// Serializes library loads within the process and counts them, so a
    /// crowd of first calls (the local stack, a matcher's parallel work)
    /// loads the library once, not once per call.
    function_loads: AtomicU64,
    load_lock: tokio::sync::Mutex<()>,
}

/// Handle to the matchmaking state of one namespace. Cheap to clone; build it
/// once per process (Lambda init) and share it.
#[derive(Clone)]
pub struct MatchStore {
    inner: Arc<Inner>,
}

impl MatchStore {
    /// Builds the store without connecting: the first command connects, so a
    /// cold start succeeds while Redis is down and requests answer 503 until
    /// it is back. A client that cannot be built from the settings (a bad
    /// URL, an unreadable CA file) is a configuration error.
    pub fn new(settings: Settings) -> Result<Self, ConfigError> {
        let redis = &settings.redis;
        let certificates = match &redis.ca_cert {
            None => None,
            Some(path) => Some(redis::TlsCertificates {
                client_tls: None,
                root_cert: Some(std::fs::read(path).map_err(|e| ConfigError {
                    var: "REDIS_CA_CERT",
                    reason: format!("cannot read {}: {e}", path.display()),
                })?),
            }),
        };
        let url_error = |e: redis::RedisError| ConfigError {
            var: "REDIS_URL",
            reason: e.to_string(),
        };
        let client = if redis.cluster {
            let mut builder = ClusterClientBuilder::new(redis.urls.clone())
                .connection_timeout(redis.connect_timeout)
                .response_timeout(redis.command_timeout)
                // The store retries, not the driver: the driver would also
                // send a script again after a dropped connection, when it
                // may already have run (see `MatchStore::invoke`).
                .retries(0);
            if let Some(certificates) = certificates {
                builder = builder.certs(certificates);
            }
            Client::Cluster(Box::new(builder.build().map_err(url_error)?))
        } else {
            let url = redis.urls.first().map(String::as_str).unwrap_or_default();
            let client = match certificates {
                Some(certificates) => redis::Client::build_with_tls(url, certificates),
                None => redis::Client::open(url),
            };
            Client::Single(Box::new(client.map_err(url_error)?))
        };
        Ok(Self {
            inner: Arc::new(Inner {
                keys: KeyLayout::new(&settings.namespace),
                world_configs: config::WorldConfigs::new(&settings),
                client,
                conn: std::sync::Mutex::new(None),
                connect_lock: tokio::sync::Mutex::new(()),
                durability: durability::DurabilityState::default(),
                last_ok_ms: AtomicU64::new(0),
                epoch: Instant::now(),
                functions: AtomicBool::new(settings.redis.functions),
                function_loads: AtomicU64::new(0),
                waker: std::sync::OnceLock::new(),
                load_lock: tokio::sync::Mutex::new(()),
                settings,
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
        if let Some(conn) = self.cached_connection() {
            return Ok(conn);
        }
        // One connect at a time: a crowd of first calls shares it.
        let _connecting = self.inner.connect_lock.lock().await;
        if let Some(conn) = self.cached_connection() {
            return Ok(conn);
        }
        let redis = &self.inner.settings.redis;
        let conn = match &self.inner.client {
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
            Client::Cluster(client) => client.get_async_connection().await.map(Connection::Cluster),
        }?;
        *self.inner.conn.lock().unwrap_or_else(|e| e.into_inner()) = Some(conn.clone());
        Ok(conn)
    }

    fn cached_connection(&self) -> Option<Connection> {
        self.inner
            .conn
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// A single endpoint answered READONLY: it is a replica now (a failover
    /// moved the primary, and a DNS name such as ElastiCache's primary
    /// endpoint points elsewhere). The next call connects again.
    fn forget_connection(&self) {
        if matches!(self.inner.client, Client::Single(_)) {
            tracing::warn!("Redis answered READONLY: connecting again to reach the primary");
            *self.inner.conn.lock().unwrap_or_else(|e| e.into_inner()) = None;
        }
    }

    fn is_cluster(&self) -> bool {
        matches!(self.inner.client, Client::Cluster(_))
    }

    fn elapsed_ms(&self) -> u64 {
        u64::try_from(self.inner.epoch.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    /// Gives the store what wakes the sleeping matcher (once per store;
    /// false if it has one already). Every operation whose script found the
    /// matcher asleep and made work for it wakes it before it returns: the
    /// scripts hand that to exactly one caller (see [`crate::wake`]).
    pub fn set_waker(&self, waker: Arc<dyn crate::wake::Waker>) -> bool {
        self.inner.waker.set(waker).is_ok()
    }

    /// Wakes the matcher, best effort: a failure is logged and left to its
    /// schedule (within a minute).
    async fn wake_matcher(&self) {
        let Some(waker) = self.inner.waker.get() else {
            tracing::warn!(
                "the matcher sleeps and this process has no waker: its schedule wakes it within a minute"
            );
            return;
        };
        match waker.wake().await {
            Ok(()) => tracing::info!("woke the sleeping matcher"),
            Err(e) => tracing::warn!(
                error = %e,
                "could not wake the matcher; its schedule will within a minute"
            ),
        }
    }

    /// Whether operations currently run as functions (tests and tooling).
    pub fn uses_functions(&self) -> bool {
        self.inner.functions.load(Ordering::Relaxed)
    }

    /// Round trip to Redis (readiness checks).
    pub async fn ping(&self) -> Result<(), StoreError> {
        self.command::<()>(&redis::cmd("PING")).await
    }

    /// Runs a plain command (tests and tooling; the operations use scripts).
    pub async fn command<T: redis::FromRedisValue>(&self, cmd: &Cmd) -> Result<T, StoreError> {
        self.plain(|mut conn| async move { cmd.query_async::<T>(&mut conn).await })
            .await
    }

    /// Runs a pipeline of plain reads (tests and the result's reads).
    pub async fn pipeline<T: redis::FromRedisValue>(
        &self,
        pipe: &Pipeline,
    ) -> Result<T, StoreError> {
        self.plain(|mut conn| async move { pipe.query_async::<T>(&mut conn).await })
            .await
    }

    /// A plain command or pipeline within the timeout, sent again after an
    /// error that proves it did not run (see [`MatchStore::did_not_run`]).
    async fn plain<T, F, Fut>(&self, send: F) -> Result<T, StoreError>
    where
        F: Fn(Connection) -> Fut,
        Fut: std::future::Future<Output = Result<T, RedisError>>,
    {
        let timeout = self.timeout();
        let deadline = Instant::now() + timeout;
        tokio::time::timeout(timeout, async {
            let mut backoff = RETRY_BACKOFF;
            loop {
                match send(self.connection().await?).await {
                    Ok(v) => return Ok(v),
                    Err(e) if self.did_not_run(&e) && Instant::now() + backoff < deadline => {
                        if is_read_only(&e) {
                            self.forget_connection();
                        }
                        tokio::time::sleep(backoff).await;
                        backoff = (backoff * 2).min(MAX_RETRY_BACKOFF);
                    }
                    Err(e) => return Err(StoreError::from(e)),
                }
            }
        })
        .await
        .map_err(|_| StoreError::Timeout(timeout))?
    }

    /// The connections currently registered for `player` (one HGET; the
    /// registry's scripts keep it consistent).
    pub async fn connections_of(&self, player: &PlayerId) -> Result<Vec<ConnectionId>, StoreError> {
        let list: Option<String> = self
            .command(
                redis::cmd("HGET")
                    .arg(self.inner.keys.player_conns())
                    .arg(player.as_str()),
            )
            .await?;
        list.unwrap_or_default()
            .split_whitespace()
            .map(ConnectionId::parse)
            .collect::<Result<_, _>>()
            .map_err(|e| StoreError::UnexpectedReply(format!("player-conns: {e}")))
    }

    /// Every configured world's name, in configuration order (the world
    /// blocks the scripts over all worlds take).
    fn world_names(&self) -> Vec<&crate::domain::WorldName> {
        self.inner.settings.worlds.iter().map(|w| &w.name).collect()
    }

    /// `world`'s configuration, the argument of the scripts that act on a
    /// world; an error for a world that is not configured. The handlers
    /// resolve a request's world once and pass the configured one, which
    /// this recognises by address; any other (tests, tools) is compared, and
    /// encoded on the spot when it differs from the configured world.
    fn world_config(
        &self,
        world: &crate::config::World,
    ) -> Result<std::borrow::Cow<'_, str>, StoreError> {
        self.inner
            .world_configs
            .get(&self.inner.settings, world)
            .ok_or_else(|| StoreError::Rejected(format!("world {} is not configured", world.name)))
    }

    /// `world`'s configuration as the scripts receive it (their `config`
    /// argument), for tools that drive the scripts' keys and arguments
    /// without the store (the benchmark's floors).
    pub fn world_config_arg(&self, world: &crate::config::World) -> Result<String, StoreError> {
        self.world_config(world).map(std::borrow::Cow::into_owned)
    }

    /// The features a call acting on `worlds` can reach, as far as keys go
    /// (`Features`): those of the namespace (parties and ready checks in
    /// any world, since a player's state may point at any world's) and
    /// those of the worlds (rated, regions, presence). A call passes only the keys these reach.
    pub fn features(&self, worlds: &[&crate::config::World]) -> Features {
        let settings = &self.inner.settings;
        let mut features = Features::NONE;
        if settings.block_lists.is_some() {
            features = features.union(Features::BLOCKS);
        }
        for w in settings.worlds.iter() {
            if w.max_party_size > 1 {
                features = features.union(Features::PARTIES);
            }
            if w.ready_check.is_some() {
                features = features.union(Features::READY_CHECKS);
            }
        }
        for w in worlds {
            if w.rating().is_some() {
                features = features.union(Features::RATED);
            }
            if w.regions.is_some() {
                features = features.union(Features::REGIONS);
            }
            if w.require_presence {
                features = features.union(Features::PRESENCE);
            }
            if !w.attributes.is_empty() {
                features = features.union(Features::ATTRIBUTES);
            }
        }
        features
    }

    /// The worlds a call acting on `world` carries: `world`, then the rest
    /// of its `queueGroup` (a ticket waiting in several worlds leaves all
    /// of them in the call that takes it from one).
    pub(crate) fn group_of<'a>(
        &'a self,
        world: &'a crate::config::World,
    ) -> Vec<&'a crate::config::World> {
        let mut out = vec![world];
        if world.queue_group.is_some() {
            out.extend(
                self.settings()
                    .worlds
                    .group(world)
                    .into_iter()
                    .filter(|w| w.name != world.name),
            );
        }
        out
    }

    /// A call of `operation` acting on `world`: the world blocks of its
    /// group ([`MatchStore::group_of`]) and the keys their features reach.
    pub(crate) fn group_invocation<'o>(
        &self,
        operation: &'o crate::scripts::Operation,
        world: &crate::config::World,
    ) -> crate::scripts::Invocation<'o> {
        let group = self.group_of(world);
        let names: Vec<&crate::domain::WorldName> = group.iter().map(|w| &w.name).collect();
        operation.invocation_with(self.keys(), &names, self.features(&group))
    }

    /// [`MatchStore::group_of`] by name, for a world that may no longer be
    /// configured (then itself alone).
    pub(crate) fn group_names<'a>(
        &'a self,
        world: &'a crate::domain::WorldName,
    ) -> Vec<&'a crate::domain::WorldName> {
        match self.settings().worlds.get(world.as_str()) {
            Some(w) => self.group_of(w).into_iter().map(|w| &w.name).collect(),
            None => vec![world],
        }
    }

    /// The rate statistics window, in ms.
    fn window_ms(&self) -> u64 {
        millis(self.inner.settings.wait_window)
    }
}

/// A flag argument as the scripts take it ("1" or "0").
fn flag(on: bool) -> &'static str {
    if on {
        "1"
    } else {
        "0"
    }
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}
