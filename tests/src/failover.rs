//! A Redis Cluster with a replica per primary (3 + 3 nodes), for failover
//! tests: kill the primary that owns a key's slot (SIGKILL), let its replica
//! be promoted (automatically, after `cluster-node-timeout`, or at once with
//! `CLUSTER FAILOVER FORCE` / `TAKEOVER`), restart the killed node (it comes
//! back empty, rejoins as the new primary's replica and syncs) and wait until
//! every primary has an online replica again.
//!
//! Settings close to an ElastiCache node-based cluster where they matter:
//! `cluster-require-full-coverage no` (ElastiCache's default, so the other
//! shards keep serving while one fails over) and no persistence (ElastiCache
//! disables AOF on Multi-AZ replication groups). Two differ to keep tests
//! short and deterministic: `cluster-node-timeout` (default 1 s here, 15 s in
//! Redis) and `repl-diskless-sync-delay 0` (a restarted node syncs at once
//! instead of after 5 s), and `cluster-replica-validity-factor 0` (a replica
//! always stands for election, however long since it heard its primary).

use std::time::{Duration, Instant};

use shared::Settings;

use super::{require_server, settings_for, RedisServer, CLUSTER_SLOTS};

/// How long a failover step may take before the fixture gives up.
pub const FAILOVER_DEADLINE: Duration = Duration::from_secs(30);

/// How a killed primary's replica is promoted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Promotion {
    /// The cluster notices (`cluster-node-timeout`), marks it failed and
    /// the replica wins an election.
    Automatic,
    /// `CLUSTER FAILOVER FORCE` on the replica: an election without the
    /// dead primary's handshake (the other primaries vote).
    Force,
    /// `CLUSTER FAILOVER TAKEOVER`: the replica promotes itself at once,
    /// without an election.
    Takeover,
}

/// One line of `CLUSTER NODES`.
#[derive(Debug, Clone)]
pub struct NodeLine {
    pub id: String,
    pub port: u16,
    pub flags: Vec<String>,
    /// The primary's id for a replica.
    pub master: Option<String>,
    /// Slot ranges served (primaries).
    pub slots: Vec<(u16, u16)>,
}

impl NodeLine {
    fn parse(line: &str) -> Option<Self> {
        let mut parts = line.split_whitespace();
        let id = parts.next()?.to_owned();
        let addr = parts.next()?;
        let port = addr.split('@').next()?.rsplit(':').next()?.parse().ok()?;
        let flags = parts.next()?.split(',').map(String::from).collect();
        let master = parts.next().filter(|m| *m != "-").map(String::from);
        let slots = parts
            .skip(4)
            .filter(|s| !s.starts_with('['))
            .filter_map(|s| match s.split_once('-') {
                Some((lo, hi)) => Some((lo.parse().ok()?, hi.parse().ok()?)),
                None => s.parse().ok().map(|n| (n, n)),
            })
            .collect();
        Some(Self {
            id,
            port,
            flags,
            master,
            slots,
        })
    }

    pub fn has_flag(&self, flag: &str) -> bool {
        self.flags.iter().any(|f| f == flag)
    }

    pub fn serves(&self, slot: u16) -> bool {
        self.slots
            .iter()
            .any(|(lo, hi)| (*lo..=*hi).contains(&slot))
    }
}

/// A 3 + 3 Redis Cluster (`$MM_REDIS_SERVER`): nodes 0-2 start as the
/// primaries, 3-5 as their replicas; roles change with every failover.
pub struct ReplicatedCluster {
    pub nodes: Vec<RedisServer>,
    /// Whether node `i` is running (not killed).
    pub alive: Vec<bool>,
    args: Vec<Vec<String>>,
    pub node_timeout: Duration,
}

impl ReplicatedCluster {
    /// Starts the cluster with a 1 s `cluster-node-timeout`.
    pub fn start() -> Self {
        Self::start_with_node_timeout(Duration::from_millis(1000))
    }

    pub fn start_with_node_timeout(node_timeout: Duration) -> Self {
        require_server();
        let timeout_ms = node_timeout.as_millis().to_string();
        let args: Vec<Vec<String>> = (0..6)
            .map(|i| {
                [
                    "--cluster-enabled",
                    "yes",
                    "--cluster-config-file",
                    &format!("nodes-{i}.conf"),
                    "--cluster-node-timeout",
                    &timeout_ms,
                    "--cluster-require-full-coverage",
                    "no",
                    "--cluster-replica-validity-factor",
                    "0",
                    "--repl-diskless-sync-delay",
                    "0",
                ]
                .iter()
                .map(|s| s.to_string())
                .collect()
            })
            .collect();
        let nodes: Vec<RedisServer> = args
            .iter()
            .map(|a| {
                let a: Vec<&str> = a.iter().map(String::as_str).collect();
                RedisServer::start_with(&a)
            })
            .collect();
        for (i, node) in nodes[..3].iter().enumerate() {
            let i = i as u16;
            let (lo, hi) = (CLUSTER_SLOTS * i / 3, CLUSTER_SLOTS * (i + 1) / 3 - 1);
            let mut conn = node.connection();
            let _: () = redis::cmd("CLUSTER")
                .arg("ADDSLOTSRANGE")
                .arg(lo)
                .arg(hi)
                .query(&mut conn)
                .expect("CLUSTER ADDSLOTSRANGE");
            let _: () = redis::cmd("CLUSTER")
                .arg("SET-CONFIG-EPOCH")
                .arg(i + 1)
                .query(&mut conn)
                .expect("CLUSTER SET-CONFIG-EPOCH");
        }
        let mut first = nodes[0].connection();
        for node in &nodes[1..] {
            let _: () = redis::cmd("CLUSTER")
                .arg("MEET")
                .arg("127.0.0.1")
                .arg(node.port)
                .query(&mut first)
                .expect("CLUSTER MEET");
        }
        let cluster = Self {
            alive: vec![true; nodes.len()],
            nodes,
            args,
            node_timeout,
        };
        // Every node must know the primaries before it can replicate one.
        cluster.poll("every node to know all six", |c| {
            c.live()
                .all(|i| c.cluster_nodes(i).map(|n| n.len()) == Some(6))
        });
        for r in 3..6 {
            let primary = cluster.node_id(r - 3);
            let _: () = redis::cmd("CLUSTER")
                .arg("REPLICATE")
                .arg(&primary)
                .query(&mut cluster.nodes[r].connection())
                .unwrap_or_else(|e| panic!("CLUSTER REPLICATE on node {r}: {e}"));
        }
        cluster.await_healthy();
        cluster
    }

    /// Indices of the running nodes.
    pub fn live(&self) -> impl Iterator<Item = usize> + '_ {
        (0..self.nodes.len()).filter(|i| self.alive[*i])
    }

    /// Every node's URL (the client's seeds: any live one will do).
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

    fn connection(&self, i: usize) -> Option<redis::Connection> {
        let client = redis::Client::open(self.nodes[i].url()).ok()?;
        let conn = client
            .get_connection_with_timeout(Duration::from_millis(500))
            .ok()?;
        conn.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
        Some(conn)
    }

    /// A blocking connection to node `i` (assertions on raw state).
    pub fn node(&self, i: usize) -> redis::Connection {
        self.connection(i)
            .unwrap_or_else(|| panic!("node {i} does not answer"))
    }

    /// Node `i`'s `CLUSTER NODES`, `None` when it does not answer.
    pub fn cluster_nodes(&self, i: usize) -> Option<Vec<NodeLine>> {
        let text: String = redis::cmd("CLUSTER")
            .arg("NODES")
            .query(&mut self.connection(i)?)
            .ok()?;
        Some(text.lines().filter_map(NodeLine::parse).collect())
    }

    /// Node `i`'s own line.
    pub fn myself(&self, i: usize) -> Option<NodeLine> {
        self.cluster_nodes(i)?
            .into_iter()
            .find(|n| n.has_flag("myself"))
    }

    pub fn node_id(&self, i: usize) -> String {
        self.myself(i).expect("node answers").id
    }

    fn index_of_port(&self, port: u16) -> Option<usize> {
        self.nodes.iter().position(|n| n.port == port)
    }

    /// The hash slot of `key`.
    pub fn slot_of(&self, key: &str) -> u16 {
        let i = self.live().next().expect("a live node");
        redis::cmd("CLUSTER")
            .arg("KEYSLOT")
            .arg(key)
            .query(&mut self.node(i))
            .expect("CLUSTER KEYSLOT")
    }

    /// The live node that says it is the primary serving `slot`.
    pub fn primary_of_slot(&self, slot: u16) -> Option<usize> {
        self.live().find(|&i| {
            self.myself(i)
                .is_some_and(|m| m.has_flag("master") && m.serves(slot))
        })
    }

    /// The live primary of `key`'s slot (panics when there is none).
    pub fn primary_of(&self, key: &str) -> usize {
        let slot = self.slot_of(key);
        self.primary_of_slot(slot)
            .unwrap_or_else(|| panic!("no live primary serves slot {slot}"))
    }

    /// The live replica of primary `p`.
    pub fn replica_of(&self, p: usize) -> usize {
        let id = self.node_id(p);
        self.live()
            .find(|&i| {
                self.myself(i)
                    .is_some_and(|m| m.master.as_deref() == Some(&id))
            })
            .unwrap_or_else(|| panic!("node {p} has no live replica"))
    }

    /// SIGKILLs node `i`.
    pub fn kill(&mut self, i: usize) {
        self.nodes[i].kill();
        self.alive[i] = false;
    }

    /// Restarts killed node `i` on its port with its cluster configuration
    /// (no data): it learns the newer epoch and rejoins as a replica.
    pub fn restart(&mut self, i: usize) {
        let args: Vec<&str> = self.args[i].iter().map(String::as_str).collect();
        self.nodes[i].restart(&args);
        self.alive[i] = true;
    }

    /// Promotes `replica` by `how`, then waits until it serves `slot` as a
    /// primary; returns how long the promotion took from the call.
    pub fn promote(&self, replica: usize, slot: u16, how: Promotion) -> Duration {
        let started = Instant::now();
        let mode = match how {
            Promotion::Automatic => None,
            Promotion::Force => Some("FORCE"),
            Promotion::Takeover => Some("TAKEOVER"),
        };
        if let Some(mode) = mode {
            let _: () = redis::cmd("CLUSTER")
                .arg("FAILOVER")
                .arg(mode)
                .query(&mut self.node(replica))
                .unwrap_or_else(|e| panic!("CLUSTER FAILOVER {mode} on node {replica}: {e}"));
        }
        self.poll(
            &format!("node {replica} to serve slot {slot} ({how:?})"),
            |c| {
                c.myself(replica)
                    .is_some_and(|m| m.has_flag("master") && m.serves(slot))
            },
        );
        started.elapsed()
    }

    /// Kills the primary of `key`'s slot and promotes its replica by `how`;
    /// returns the killed node, the new primary and when the kill happened.
    pub fn fail_over(&mut self, key: &str, how: Promotion) -> (usize, usize, Instant) {
        let slot = self.slot_of(key);
        let primary = self.primary_of(key);
        let replica = self.replica_of(primary);
        self.kill(primary);
        let killed = Instant::now();
        self.promote(replica, slot, how);
        (primary, replica, killed)
    }

    /// A partitioned primary's end: its replica takes over
    /// (`CLUSTER FAILOVER TAKEOVER`) while the primary still serves clients
    /// (it stops replicating to the replica at that moment, and keeps
    /// acknowledging writes until it learns of the newer epoch), then the
    /// old primary is SIGKILLed. Returns the killed node, the new primary
    /// and when the replica took over.
    pub fn take_over_then_kill(&mut self, key: &str) -> (usize, usize, Instant) {
        let slot = self.slot_of(key);
        let primary = self.primary_of(key);
        let replica = self.replica_of(primary);
        let started = Instant::now();
        self.promote(replica, slot, Promotion::Takeover);
        self.kill(primary);
        (primary, replica, started)
    }

    /// A primary cut off from its replica (a network partition, emulated):
    /// the primary forgets its replica (`CLUSTER FORGET`, so it ignores the
    /// replica's claim to its slots for a while), the replica takes over
    /// (`CLUSTER FAILOVER TAKEOVER`), and the old primary, which clients
    /// still reach, keeps acknowledging writes that no replica receives for
    /// `serve_for`; then it is SIGKILLed. Returns the killed node, the new
    /// primary and when the replica took over.
    pub fn partition_then_kill(
        &mut self,
        key: &str,
        serve_for: Duration,
    ) -> (usize, usize, Instant) {
        let slot = self.slot_of(key);
        let primary = self.primary_of(key);
        let replica = self.replica_of(primary);
        let replica_id = self.node_id(replica);
        let _: () = redis::cmd("CLUSTER")
            .arg("FORGET")
            .arg(&replica_id)
            .query(&mut self.node(primary))
            .unwrap_or_else(|e| panic!("CLUSTER FORGET on node {primary}: {e}"));
        let started = Instant::now();
        self.promote(replica, slot, Promotion::Takeover);
        std::thread::sleep(serve_for.saturating_sub(started.elapsed()));
        self.kill(primary);
        (primary, replica, started)
    }

    /// Waits until every live node sees a healthy cluster: state ok, no
    /// node flagged failing, every slot served, and every primary with an
    /// online replica whose link is up.
    pub fn await_healthy(&self) {
        self.poll(
            "a healthy cluster (every primary with an online replica)",
            |c| c.is_healthy(),
        );
    }

    fn is_healthy(&self) -> bool {
        let mut primaries = 0;
        for i in self.live() {
            let Some(mut conn) = self.connection(i) else {
                return false;
            };
            let info: String = redis::cmd("CLUSTER")
                .arg("INFO")
                .query(&mut conn)
                .unwrap_or_default();
            if !info.contains("cluster_state:ok") {
                return false;
            }
            let Some(nodes) = self.cluster_nodes(i) else {
                return false;
            };
            if nodes.len() != self.nodes.len()
                || nodes
                    .iter()
                    .any(|n| n.has_flag("fail") || n.has_flag("fail?") || n.has_flag("handshake"))
            {
                return false;
            }
            let served: u32 = nodes
                .iter()
                .filter(|n| n.has_flag("master"))
                .flat_map(|n| n.slots.iter())
                .map(|(lo, hi)| u32::from(hi - lo) + 1)
                .sum();
            if served != u32::from(CLUSTER_SLOTS) {
                return false;
            }
            let replication: String = redis::cmd("INFO")
                .arg("replication")
                .query(&mut conn)
                .unwrap_or_default();
            if replication.contains("role:master") {
                primaries += 1;
                if !replication
                    .lines()
                    .any(|l| l.starts_with("slave") && l.contains("state=online"))
                {
                    return false;
                }
            } else if !replication.contains("master_link_status:up") {
                return false;
            }
        }
        primaries == 3 && self.alive.iter().all(|a| *a)
    }

    fn poll(&self, what: &str, mut done: impl FnMut(&Self) -> bool) {
        let until = Instant::now() + FAILOVER_DEADLINE;
        while !done(self) {
            assert!(
                Instant::now() < until,
                "timed out after {FAILOVER_DEADLINE:?} waiting for {what}; the nodes say: {:?}",
                self.live().map(|i| (i, self.myself(i))).collect::<Vec<_>>()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The port of node `i` (for messages).
    pub fn port(&self, i: usize) -> u16 {
        self.nodes[i].port
    }

    /// The node listening on `port`, if it is one of ours.
    pub fn node_on_port(&self, port: u16) -> Option<usize> {
        self.index_of_port(port)
    }
}

impl RedisServer {
    /// A standalone replica of `primary` (`--replicaof`), once its link is up
    /// and the initial sync is done.
    pub fn start_replica_of(primary: &RedisServer) -> RedisServer {
        let port = primary.port.to_string();
        let replica = RedisServer::start_with(&["--replicaof", "127.0.0.1", &port]);
        let until = Instant::now() + FAILOVER_DEADLINE;
        loop {
            let info: String = redis::cmd("INFO")
                .arg("replication")
                .query(&mut replica.connection())
                .unwrap_or_default();
            if info.contains("master_link_status:up") {
                return replica;
            }
            assert!(Instant::now() < until, "replica never synced: {info}");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::NodeLine;

    #[test]
    fn cluster_nodes_lines_parse() {
        let p = NodeLine::parse(
            "07c3 127.0.0.1:30004@40004 myself,master - 0 0 1 connected 0-5460 5462 [5461->-e7d1]",
        )
        .unwrap();
        assert_eq!(p.port, 30004);
        assert!(p.has_flag("myself") && p.has_flag("master"));
        assert_eq!(p.master, None);
        assert!(p.serves(0) && p.serves(5460) && p.serves(5462) && !p.serves(5461));
        let r = NodeLine::parse("e7d1 127.0.0.1:30005@40005 slave 07c3 0 1 1 connected").unwrap();
        assert_eq!(r.master.as_deref(), Some("07c3"));
        assert!(r.slots.is_empty());
    }
}
