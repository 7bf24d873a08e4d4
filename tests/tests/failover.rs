//! Failover at the core (`MatchStore` against real `redis-server`s): a
//! cluster with a replica per primary whose primary is killed and replaced
//! by its replica, and every Redis-side refusal a script can meet (READONLY,
//! MOVED, TRYAGAIN, CLUSTERDOWN, a reset connection), each with the answer
//! the caller gets and the proof that nothing was half applied. Through the
//! whole stack, with players churning: `tools/local-stack/tests/failover.rs`.
//! Summary: docs/hardening-faults.md#failover.

use std::time::{Duration, Instant};

use integration_tests::failover::{Promotion, ReplicatedCluster};
use integration_tests::scenarios::player;
use integration_tests::settings_for;
use shared::{JoinOutcome, MatchStore, PlayerStatus, Rejection, StoreError};

const WORLDS: &str = "world1:3,world2:2";

fn store_on(cluster: &ReplicatedCluster, ns: &str, extra: &[(&str, &str)]) -> MatchStore {
    let mut vars = vec![
        ("REDIS_TIMEOUT_MS", "500"),
        ("REDIS_CONNECT_TIMEOUT_MS", "300"),
        ("MM_MATCH_TTL_SECS", "3600"),
    ];
    vars.extend_from_slice(extra);
    MatchStore::new(settings_for(&cluster.urls(), true, ns, WORLDS, &vars)).expect("store")
}

fn world<'a>(store: &'a MatchStore, name: &str) -> &'a shared::World {
    store.settings().worlds.get(name).expect("world")
}

/// Joins `p` until an answer comes, for at most `limit`; returns the
/// outcome and how many refusals came first (each one unavailable).
async fn join_until_answered(
    store: &MatchStore,
    w: &str,
    p: &str,
    limit: Duration,
) -> (JoinOutcome, u32) {
    let until = Instant::now() + limit;
    let mut refused = 0;
    loop {
        match store.join(world(store, w), &player(p), None, None).await {
            Ok(outcome) => return (outcome, refused),
            Err(e) => {
                assert!(e.is_unavailable(), "{p}: {e:?}");
                refused += 1;
                // A refusal after a timeout may have been applied: the
                // caller asks where it stands before joining again.
                if let Ok(PlayerStatus::Queued(_) | PlayerStatus::Matched(_)) =
                    store.player_status(&player(p)).await
                {
                    let again = store.join(world(store, w), &player(p), None, None).await;
                    if let Ok(outcome) = again {
                        return (outcome, refused);
                    }
                }
            }
        }
        assert!(Instant::now() < until, "{p}: no answer within {limit:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The store follows a failover without a restart: the namespace's primary
/// is killed, its replica promoted (automatically, after the node timeout),
/// and joins answer again once the replica is primary and has a replica of
/// its own (the killed node, restarted); every ticket acknowledged before the
/// kill is still there, and the store waited for an acknowledgement on each.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_store_follows_a_failover_and_keeps_acknowledged_tickets() {
    let mut cluster = tokio::task::block_in_place(ReplicatedCluster::start);
    let store = store_on(&cluster, "follow", &[]);
    let key = store.keys().players();
    for i in 0..20 {
        let (outcome, _) =
            join_until_answered(&store, "world2", &format!("q{i}"), Duration::from_secs(5)).await;
        assert!(
            matches!(
                outcome,
                JoinOutcome::Queued(_) | JoinOutcome::Matched { .. }
            ),
            "{outcome:?}"
        );
    }
    let durability = store.durability();
    assert_eq!(durability.acks, 1, "auto saw the replica: {durability:?}");
    assert!(durability.waits >= 20, "{durability:?}");

    let (killed, promoted, down) =
        tokio::task::block_in_place(|| cluster.fail_over(&key, Promotion::Automatic));
    eprintln!(
        "node {killed} killed, node {promoted} promoted after {:?}",
        down.elapsed()
    );
    // The new primary has no replica yet: told outcomes are refused.
    let err = store
        .join(world(&store, "world1"), &player("lonely"), None, None)
        .await
        .expect_err("no replica to acknowledge");
    assert!(err.is_unavailable(), "{err:?}");
    let restarted = Instant::now();
    tokio::task::block_in_place(|| {
        cluster.restart(killed);
        cluster.await_healthy();
    });
    eprintln!(
        "cluster healthy {:?} after the restart",
        restarted.elapsed()
    );
    let (outcome, refused) =
        join_until_answered(&store, "world1", "after", Duration::from_secs(10)).await;
    eprintln!("first join after the failover answered {outcome:?} after {refused} refusals, {:?} after the kill", down.elapsed());
    for i in 0..20 {
        let status = store
            .player_status(&player(&format!("q{i}")))
            .await
            .unwrap();
        assert!(
            matches!(status, PlayerStatus::Queued(_) | PlayerStatus::Matched(_)),
            "q{i} was acknowledged but is {status:?} after the failover"
        );
    }
    let d = store.durability();
    eprintln!("{d:?}");
    assert!(matches!(
        err,
        StoreError::NotReplicated { .. } | StoreError::Timeout(_) | StoreError::Unavailable(_)
    ));
}

// ---------------------------------------------------------------------------
// Redis-side refusals during a script: what the caller gets, and that the
// namespace is exactly as before (nothing half applied).
// ---------------------------------------------------------------------------

use integration_tests::keyspace::{walk, Keyspace, Scope};
use integration_tests::{RedisCluster, RedisServer};

/// Every key of the namespace's layout with its contents.
async fn snapshot(store: &MatchStore) -> Keyspace {
    walk(store, Scope::Layout).await
}

fn assert_refused(what: &str, result: Result<JoinOutcome, StoreError>, mentions: &str) {
    let err = result.expect_err(what);
    assert!(err.is_unavailable(), "{what}: {err:?}");
    assert!(
        err.to_string()
            .to_ascii_lowercase()
            .contains(&mentions.to_ascii_lowercase()),
        "{what}: the error names {mentions}: {err}"
    );
}

/// READONLY: the endpoint a single-endpoint store uses is a replica (after
/// a failover that the endpoint's DNS has not followed yet, or a demoted
/// primary). The join is refused before it runs (unavailable, so HTTP 503
/// REDIS_UNAVAILABLE), nothing is written anywhere, and the store drops the
/// connection: once the endpoint is a primary again (promoted here), the
/// same store joins without a restart.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readonly_is_refused_before_running_and_the_store_reconnects() {
    let primary = RedisServer::start();
    let replica = tokio::task::block_in_place(|| RedisServer::start_replica_of(&primary));
    let on_primary = store_on_url(&primary.url(), "ro");
    let on_replica = store_on_url(&replica.url(), "ro");
    let (outcome, _) =
        join_until_answered(&on_primary, "world1", "before", Duration::from_secs(5)).await;
    assert!(matches!(outcome, JoinOutcome::Queued(_)), "{outcome:?}");
    // The replica has it too (WAIT: auto saw the replica).
    assert_eq!(on_primary.durability().acks, 1);
    let before = snapshot(&on_primary).await;
    assert!(!before.is_empty());

    let started = Instant::now();
    let refused = on_replica
        .join(world(&on_replica, "world1"), &player("p"), None, None)
        .await;
    assert_refused("join on a replica", refused, "READONLY");
    assert!(
        started.elapsed() < Duration::from_millis(700),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(snapshot(&on_primary).await, before, "nothing written");
    assert_eq!(
        snapshot(&on_replica).await,
        before,
        "the replica has the same"
    );

    // The endpoint becomes the primary (a failover): the same store works.
    let _: () = redis::cmd("REPLICAOF")
        .arg("NO")
        .arg("ONE")
        .query(&mut replica.connection())
        .unwrap();
    let outcome = on_replica
        .join(world(&on_replica, "world1"), &player("p"), None, None)
        .await
        .expect("the promoted endpoint takes writes");
    assert!(matches!(outcome, JoinOutcome::Queued(_)), "{outcome:?}");
    match on_replica.player_status(&player("p")).await.unwrap() {
        PlayerStatus::Queued(q) => assert_eq!(q.queue_size, 2, "applied once"),
        other => panic!("{other:?}"),
    }
}

fn store_on_url(url: &str, ns: &str) -> MatchStore {
    MatchStore::new(settings_for(
        url,
        false,
        ns,
        WORLDS,
        &[
            ("REDIS_TIMEOUT_MS", "500"),
            ("REDIS_CONNECT_TIMEOUT_MS", "300"),
        ],
    ))
    .expect("store")
}

fn cluster_store(cluster: &RedisCluster, ns: &str) -> MatchStore {
    MatchStore::new(settings_for(
        &cluster.urls(),
        true,
        ns,
        WORLDS,
        &[
            ("REDIS_TIMEOUT_MS", "500"),
            ("REDIS_CONNECT_TIMEOUT_MS", "300"),
        ],
    ))
    .expect("store")
}

fn node_id(node: &RedisServer) -> String {
    redis::cmd("CLUSTER")
        .arg("MYID")
        .query(&mut node.connection())
        .expect("CLUSTER MYID")
}

fn cluster_cmd(node: &RedisServer, args: &[&str]) {
    let mut cmd = redis::cmd("CLUSTER");
    for a in args {
        cmd.arg(*a);
    }
    let _: () = cmd
        .query(&mut node.connection())
        .unwrap_or_else(|e| panic!("CLUSTER {args:?} on {}: {e}", node.port));
}

/// Moves `keys` of `slot` from node `from` to node `to` (MIGRATE).
fn migrate(cluster: &RedisCluster, from: usize, to: usize, keys: &[String]) {
    if keys.is_empty() {
        return;
    }
    let mut cmd = redis::cmd("MIGRATE");
    cmd.arg("127.0.0.1")
        .arg(cluster.nodes[to].port)
        .arg("")
        .arg(0)
        .arg(5000)
        .arg("KEYS");
    for k in keys {
        cmd.arg(k);
    }
    let _: () = cmd
        .query(&mut cluster.nodes[from].connection())
        .expect("MIGRATE");
}

fn keys_in_slot(cluster: &RedisCluster, node: usize, slot: u16) -> Vec<String> {
    redis::cmd("CLUSTER")
        .arg("GETKEYSINSLOT")
        .arg(slot)
        .arg(10_000)
        .query(&mut cluster.nodes[node].connection())
        .expect("CLUSTER GETKEYSINSLOT")
}

fn slot_of(cluster: &RedisCluster, key: &str) -> u16 {
    redis::cmd("CLUSTER")
        .arg("KEYSLOT")
        .arg(key)
        .query(&mut cluster.nodes[0].connection())
        .expect("CLUSTER KEYSLOT")
}

/// Starts moving `slot` from `from` to `to` (IMPORTING / MIGRATING).
fn begin_migration(cluster: &RedisCluster, slot: u16, from: usize, to: usize) {
    let s = slot.to_string();
    cluster_cmd(
        &cluster.nodes[to],
        &["SETSLOT", &s, "IMPORTING", &node_id(&cluster.nodes[from])],
    );
    cluster_cmd(
        &cluster.nodes[from],
        &["SETSLOT", &s, "MIGRATING", &node_id(&cluster.nodes[to])],
    );
}

/// Finishes it: the rest of the keys, then the slot belongs to `to` on
/// every node.
fn finish_migration(cluster: &RedisCluster, slot: u16, from: usize, to: usize) {
    migrate(cluster, from, to, &keys_in_slot(cluster, from, slot));
    let owner = node_id(&cluster.nodes[to]);
    let s = slot.to_string();
    for node in [to, from] {
        cluster_cmd(&cluster.nodes[node], &["SETSLOT", &s, "NODE", &owner]);
    }
    for node in 0..cluster.nodes.len() {
        if node != to && node != from {
            cluster_cmd(&cluster.nodes[node], &["SETSLOT", &s, "NODE", &owner]);
        }
    }
}

/// MOVED: the namespace's slot moved to another primary behind the store's
/// back (a resharding). The first call after it is redirected; the store
/// sends it again to the new owner (MOVED proves it did not run), the join
/// answers at once and is applied exactly once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn moved_is_followed_and_the_script_runs_once() {
    let cluster = tokio::task::block_in_place(RedisCluster::start);
    let store = cluster_store(&cluster, "moved");
    let w = world(&store, "world1").clone();
    store.join(&w, &player("a"), None, None).await.unwrap();
    let key = store.keys().players();
    let slot = slot_of(&cluster, &key);
    let from = cluster.owner_of(&key);
    let to = (from + 1) % 3;
    let before = snapshot(&store).await;
    tokio::task::block_in_place(|| {
        begin_migration(&cluster, slot, from, to);
        finish_migration(&cluster, slot, from, to);
    });
    assert!(cluster.keys_on(from).iter().all(|k| !k.contains("{moved}")));
    assert_eq!(snapshot(&store).await, before, "the keys moved unchanged");
    let started = Instant::now();
    let outcome = store
        .join(&w, &player("b"), None, None)
        .await
        .expect("followed");
    assert!(
        started.elapsed() < Duration::from_millis(500),
        "{:?}",
        started.elapsed()
    );
    match outcome {
        JoinOutcome::Queued(q) => assert_eq!((q.position, q.queue_size), (2, 2), "once"),
        other => panic!("{other:?}"),
    }
    assert_eq!(cluster.owner_of(&key), to);
}

/// MOVED to a client that cannot follow it: a single-endpoint store
/// (`REDIS_CLUSTER=false`) pointed at a cluster node that does not own the
/// namespace's slot. Unavailable (503), nothing written.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn moved_to_a_single_endpoint_client_is_refused_and_writes_nothing() {
    let cluster = tokio::task::block_in_place(RedisCluster::start);
    let store = cluster_store(&cluster, "moved-single");
    store
        .join(world(&store, "world1"), &player("a"), None, None)
        .await
        .unwrap();
    let key = store.keys().players();
    let other = (cluster.owner_of(&key) + 1) % 3;
    let single = store_on_url(&cluster.nodes[other].url(), "moved-single");
    let before = snapshot(&store).await;
    let refused = single
        .join(world(&single, "world1"), &player("b"), None, None)
        .await;
    assert_refused("a redirect not followed", refused, "MOVED");
    assert_eq!(snapshot(&store).await, before);
}

/// TRYAGAIN: the slot is being migrated and the script's keys are split
/// between the two nodes (the `players` hash already moved). The store
/// retries until its deadline, then answers unavailable (503); nothing is
/// written on either node. Once the migration finishes the same store joins.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tryagain_during_a_migration_is_refused_and_nothing_is_half_applied() {
    let cluster = tokio::task::block_in_place(RedisCluster::start);
    let store = cluster_store(&cluster, "tryagain");
    let w = world(&store, "world1").clone();
    store.join(&w, &player("a"), None, None).await.unwrap();
    let key = store.keys().players();
    let slot = slot_of(&cluster, &key);
    let from = cluster.owner_of(&key);
    let to = (from + 1) % 3;
    let before = snapshot(&store).await;
    tokio::task::block_in_place(|| {
        begin_migration(&cluster, slot, from, to);
        migrate(&cluster, from, to, std::slice::from_ref(&key));
    });
    let started = Instant::now();
    let refused = store.join(&w, &player("b"), None, None).await;
    let took = started.elapsed();
    assert_refused("a join whose keys are split", refused, "TRYAGAIN");
    assert!(
        took >= Duration::from_millis(300),
        "retried until the deadline: {took:?}"
    );
    tokio::task::block_in_place(|| finish_migration(&cluster, slot, from, to));
    assert_eq!(snapshot(&store).await, before, "nothing half applied");
    let outcome = store.join(&w, &player("b"), None, None).await.unwrap();
    match outcome {
        JoinOutcome::Queued(q) => assert_eq!((q.position, q.queue_size), (2, 2)),
        other => panic!("{other:?}"),
    }
}

/// CLUSTERDOWN: the namespace's slot is not served (its owner gave it up,
/// as while a failed primary's slots have no successor yet). Retried until
/// the deadline, then unavailable (503); nothing written. The same store
/// joins once the slot is served again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clusterdown_is_refused_and_writes_nothing() {
    let cluster = tokio::task::block_in_place(RedisCluster::start);
    let store = cluster_store(&cluster, "down");
    let w = world(&store, "world1").clone();
    store.join(&w, &player("a"), None, None).await.unwrap();
    let key = store.keys().players();
    let slot = slot_of(&cluster, &key).to_string();
    let owner = cluster.owner_of(&key);
    let before = snapshot(&store).await;
    cluster_cmd(&cluster.nodes[owner], &["DELSLOTS", &slot]);
    let refused = store.join(&w, &player("b"), None, None).await;
    assert_refused(
        "a join while the slot is not served",
        refused,
        "CLUSTERDOWN",
    );
    cluster_cmd(&cluster.nodes[owner], &["ADDSLOTS", &slot]);
    let (outcome, _) = join_until_answered(&store, "world1", "b", Duration::from_secs(10)).await;
    match outcome {
        JoinOutcome::Queued(q) => assert_eq!((q.position, q.queue_size), (2, 2), "once"),
        other => panic!("{other:?}"),
    }
    let mut after = snapshot(&store).await;
    let mut expected = before;
    // Only b's ticket (and the counters it moved) differ.
    for k in [
        store.keys().players(),
        store.keys().ticket_seq(),
        store.keys().world(&w.name).queue,
        store.keys().world(&w.name).deadlines,
    ] {
        after.remove(&k);
        expected.remove(&k);
    }
    assert_eq!(after, expected);
}

/// A connection reset while a script waits to run (writes paused with
/// CLIENT PAUSE WRITE, then the store's connections killed): the join is
/// answered unavailable (503) at once and never runs; an idempotent call
/// cut off the same way is sent once more and succeeds, applied once.
async fn reset_while_waiting(store: &MatchStore, admin: &mut redis::Connection) {
    let w = world(store, "world1").clone();
    store.join(&w, &player("warm"), None, None).await.unwrap();
    let _: () = redis::cmd("CLIENT")
        .arg("PAUSE")
        .arg(3000)
        .arg("WRITE")
        .query(admin)
        .unwrap();
    let join = {
        let (store, w) = (store.clone(), w.clone());
        tokio::spawn(async move { store.join(&w, &player("cut"), None, None).await })
    };
    let register = {
        let store = store.clone();
        tokio::spawn(async move {
            store
                .register_connection(
                    &shared::ConnectionId::parse("conn-cut").unwrap(),
                    &player("cut2"),
                )
                .await
        })
    };
    tokio::time::sleep(Duration::from_millis(150)).await;
    let killed: u64 = redis::cmd("CLIENT")
        .arg("KILL")
        .arg("TYPE")
        .arg("normal")
        .query(admin)
        .unwrap();
    assert!(killed >= 1, "the store's connection was killed");
    let _: () = redis::cmd("CLIENT").arg("UNPAUSE").query(admin).unwrap();
    let joined = join.await.unwrap();
    let err = joined.expect_err("the connection was reset");
    assert!(err.is_unavailable(), "{err:?}");
    register
        .await
        .unwrap()
        .expect("an idempotent call is sent again");
    assert!(matches!(
        store.player_status(&player("cut")).await.unwrap(),
        PlayerStatus::Idle
    ));
    let conns = store.connections_of(&player("cut2")).await.unwrap();
    assert_eq!(conns.len(), 1, "registered once: {conns:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reset_connection_never_runs_a_write_twice_standalone() {
    let server = RedisServer::start();
    let store = store_on_url(&server.url(), "reset");
    reset_while_waiting(&store, &mut server.connection()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reset_connection_never_runs_a_write_twice_on_a_cluster() {
    let cluster = tokio::task::block_in_place(RedisCluster::start);
    let store = cluster_store(&cluster, "reset");
    let owner = cluster.owner_of(&store.keys().players());
    reset_while_waiting(&store, &mut cluster.nodes[owner].connection()).await;
}

/// What a client sees while acknowledgements cannot come
/// (`MM_REPLICA_ACKS=1`, the replica gone): the first join runs on the
/// primary but is answered unavailable after the acknowledgement timeout
/// (its ticket exists: retrying answers ALREADY_QUEUED, my-status QUEUED,
/// so it is at least once, never contradicted); the next writes are
/// refused before they run, at once; when a replica is attached again,
/// joins are acknowledged without a restart.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_acknowledgements_writes_are_answered_unavailable_and_never_contradicted() {
    let primary = RedisServer::start();
    let store = MatchStore::new(settings_for(
        &primary.url(),
        false,
        "acks",
        WORLDS,
        &[
            ("REDIS_TIMEOUT_MS", "1000"),
            ("MM_REPLICA_ACKS", "1"),
            ("MM_REPLICA_ACK_TIMEOUT_MS", "200"),
        ],
    ))
    .unwrap();
    let w = world(&store, "world1").clone();
    let started = Instant::now();
    let err = store
        .join(&w, &player("a"), None, None)
        .await
        .expect_err("no replica acknowledges");
    let took = started.elapsed();
    assert!(
        matches!(
            err,
            StoreError::NotReplicated {
                acked: 0,
                wanted: 1,
                applied: true
            }
        ),
        "{err:?}"
    );
    assert!(err.is_unavailable());
    assert!(
        took >= Duration::from_millis(200),
        "waited the ack timeout: {took:?}"
    );
    // Reads that tell a player where they stand need the acknowledgement
    // too: refused before they run.
    let read = store
        .player_status(&player("a"))
        .await
        .expect_err("unconfirmed");
    assert!(
        matches!(read, StoreError::NotReplicated { applied: false, .. }),
        "{read:?}"
    );
    let started = Instant::now();
    let refused = store
        .join(&w, &player("b"), None, None)
        .await
        .expect_err("refused before running");
    assert!(
        matches!(refused, StoreError::NotReplicated { applied: false, .. }),
        "{refused:?}"
    );
    assert!(
        started.elapsed() < Duration::from_millis(150),
        "{:?}",
        started.elapsed()
    );
    // a's join ran (on the primary only), b's did not.
    let players: std::collections::HashMap<String, String> = redis::cmd("HGETALL")
        .arg(store.keys().players())
        .query(&mut primary.connection())
        .unwrap();
    assert!(
        players.contains_key("a") && !players.contains_key("b"),
        "{players:?}"
    );

    let _replica = tokio::task::block_in_place(|| RedisServer::start_replica_of(&primary));
    let again = store.join(&w, &player("a"), None, None).await.unwrap();
    assert!(
        matches!(again, JoinOutcome::Rejected(Rejection::AlreadyQueued(_))),
        "{again:?}"
    );
    let b = store.join(&w, &player("b"), None, None).await.unwrap();
    assert!(matches!(b, JoinOutcome::Queued(_)), "{b:?}");
    let d = store.durability();
    assert_eq!((d.acks, d.short, d.refused), (1, 1, 2), "{d:?}");
}

/// `auto` on a server that refuses INFO (an ACL without it; a managed
/// proxy may do the same) waits for nothing rather than failing; a number
/// on a server that refuses WAIT is a configuration error, said so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auto_without_info_waits_for_nothing_and_a_number_without_wait_is_an_error() {
    let primary = RedisServer::start();
    let _replica = tokio::task::block_in_place(|| RedisServer::start_replica_of(&primary));
    let _: () = redis::cmd("ACL")
        .arg("SETUSER")
        .arg("limited")
        .arg("on")
        .arg("nopass")
        .arg("~*")
        .arg("&*")
        .arg("+@all")
        .arg("-info")
        .arg("-wait")
        .query(&mut primary.connection())
        .unwrap();
    let url = format!("redis://limited:x@127.0.0.1:{}", primary.port);
    let auto = store_on_url(&url, "acl");
    let w = world(&auto, "world1").clone();
    let outcome = auto.join(&w, &player("a"), None, None).await.unwrap();
    assert!(matches!(outcome, JoinOutcome::Queued(_)), "{outcome:?}");
    assert_eq!(auto.durability().acks, 0);
    let strict = MatchStore::new(settings_for(
        &url,
        false,
        "acl",
        WORLDS,
        &[("MM_REPLICA_ACKS", "1")],
    ))
    .unwrap();
    let err = strict
        .join(&w, &player("b"), None, None)
        .await
        .expect_err("WAIT refused");
    assert!(
        !err.is_unavailable(),
        "a configuration error, not an outage: {err:?}"
    );
    assert!(
        err.to_string().contains("MM_REPLICA_ACKS=1 needs WAIT"),
        "{err}"
    );
}
