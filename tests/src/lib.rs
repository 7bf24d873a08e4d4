//! Test fixtures: private `redis-server` processes (standalone and a 3-master
//! cluster) on free loopback ports, never 6379, without persistence, stopped
//! when the fixture is dropped. Tests talk to real Redis, never to mocks.

pub mod connections_server;
pub mod lambda_events;
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

fn install_hint(tool: &str) -> String {
    format!(
        "`{tool}` was not found on PATH. Install it with `sudo apt-get install -y redis-server redis-tools` \
         (Debian/Ubuntu), or run the README's test command (`./scripts/test.sh`), which installs it."
    )
}

/// Checks that `tool` runs; panics with the package to install otherwise.
fn require(tool: &str) {
    match Command::new(tool)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
    {
        Ok(s) if s.success() => {}
        _ => panic!("{}", install_hint(tool)),
    }
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

/// One `redis-server` process.
pub struct RedisServer {
    pub port: u16,
    child: Child,
    dir: PathBuf,
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

    fn start_with(extra: &[&str]) -> Self {
        require("redis-server");
        let dir = scratch_dir("redis");
        let port = free_port(extra.contains(&"--cluster-enabled"));
        let child = spawn_server(port, &dir, extra);
        let server = Self { port, child, dir };
        server.wait_ready();
        server
    }

    /// Restarts the server on the same port and directory (keeps AOF data).
    pub fn restart(&mut self, extra: &[&str]) {
        self.stop_process();
        self.child = spawn_server(self.port, &self.dir, extra);
        self.wait_ready();
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
                "redis-server on port {} did not start",
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

fn spawn_server(port: u16, dir: &Path, extra: &[&str]) -> Child {
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
    Command::new("redis-server")
        .args(&args)
        .current_dir(dir)
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap_or_else(|e| {
            panic!(
                "cannot start redis-server ({e}). {}",
                install_hint("redis-server")
            )
        })
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

/// A real Redis Cluster of three masters (no replicas), created with
/// `redis-cli --cluster create`.
pub struct RedisCluster {
    pub nodes: Vec<RedisServer>,
}

impl RedisCluster {
    pub fn start() -> Self {
        require("redis-server");
        require("redis-cli");
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
        let mut args: Vec<String> = vec!["--cluster".into(), "create".into()];
        args.extend(nodes.iter().map(|n| format!("127.0.0.1:{}", n.port)));
        args.extend([
            "--cluster-replicas".into(),
            "0".into(),
            "--cluster-yes".into(),
        ]);
        let out = Command::new("redis-cli")
            .args(&args)
            .output()
            .expect("run redis-cli --cluster create");
        let text = String::from_utf8_lossy(&out.stdout).to_string()
            + &String::from_utf8_lossy(&out.stderr);
        // redis-cli exits 0 even when the server answers an error: read its output.
        assert!(
            text.contains("[OK] All 16384 slots covered"),
            "redis-cli --cluster create failed:\n{text}"
        );
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
                if info.contains("cluster_state:ok") {
                    break;
                }
                assert!(
                    Instant::now() < deadline,
                    "cluster did not reach cluster_state:ok"
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
