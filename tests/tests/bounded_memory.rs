//! Bounded memory at the core: every key the system writes either expires
//! or is bounded. A burst of a thousand players runs against a real
//! `redis-server` with short lifetimes while a matcher loop ticks, and the
//! namespace must come back to its warm-up baseline (same keys, same number
//! of entries, about the same `used_memory`). The same through the local
//! stack with the real matcher: `tools/local-stack/tests/faults.rs`
//! (`a_burst_through_the_stack_returns_to_the_baseline`).
//!
//! `MM_SOAK_SECS=N` repeats bursts for N seconds before checking.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use integration_tests::connections_server::ConnectionsServer;
use integration_tests::scenarios::{player, Env};
use integration_tests::{
    assert_consistent, footprint, settled_footprint, used_memory, Footprint, RedisServer,
};
use lambda_common::push::ApiGatewayPusher;
use rand::{Rng, SeedableRng};
use shared::delivery::drain_outbox;
use shared::{ConnectionId, JoinOutcome, MatchStore, Rejection, WorldName};

/// Tickets live 1 s in every world; `big` is capped by `MM_QUEUE_CAPACITY`.
// `big`'s team (the largest a world may have) exceeds its capacity, so it
// fills up instead of matching.
const WORLDS: &str = "world1:3:1,world2:2:1,short:4:1,big:100:1";
const CAPACITY: u64 = 60;

fn world<'a>(store: &'a MatchStore, name: &str) -> &'a shared::World {
    store.settings().worlds.get(name).expect("world")
}

/// The matcher's tick, step by step (`matcher::tick` lives in a crate this
/// one cannot depend on; the stack test runs the real one): form and sweep
/// every world, housekeeping, drain the outbox through the real SDK pusher,
/// queue status.
async fn tick(store: &MatchStore, pusher: &ApiGatewayPusher) -> u64 {
    for w in store.settings().worlds.iter() {
        store.form_matches(w, 0).await.expect("form");
        store.sweep_expired_tickets(w, 1000).await.expect("sweep");
    }
    store.housekeeping(1000).await.expect("housekeeping");
    let report = drain_outbox(store, pusher, &shared::NoEvents)
        .await
        .expect("drain");
    for w in store.settings().worlds.iter() {
        store.queue_status(w).await.expect("queue status");
    }
    report.dropped
}

async fn wait_for_baseline(store: &MatchStore, baseline: &Footprint, deadline: Duration) {
    let until = Instant::now() + deadline;
    loop {
        let now = footprint(store).await;
        if now == *baseline {
            return;
        }
        assert!(
            Instant::now() < until,
            "not back to the baseline after {deadline:?}: {:?}",
            now.diff(baseline)
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// What one burst did.
#[derive(Debug, Default)]
struct Burst {
    matched: u64,
    queue_full: u64,
    left: u64,
    disconnected: u64,
}

/// 1000 players, 32 at a time: a socket that works (40 %), one that
/// answers 500 forever (15 %), one API Gateway says is gone (15 %), or none
/// (30 %); each joins a random world (`big` is capped), some leave, some
/// disconnect, the rest wait for their ticket or connection to expire.
async fn burst(store: &MatchStore, server: &ConnectionsServer, round: u64) -> Burst {
    let matched = Arc::new(AtomicU64::new(0));
    let full = Arc::new(AtomicU64::new(0));
    let left = Arc::new(AtomicU64::new(0));
    let disconnected = Arc::new(AtomicU64::new(0));
    let mut tasks = Vec::new();
    for t in 0..32u64 {
        let store = store.clone();
        let (matched, full, left, disconnected) = (
            matched.clone(),
            full.clone(),
            left.clone(),
            disconnected.clone(),
        );
        let mut socket_plan = Vec::new();
        let mut rng = rand::rngs::StdRng::seed_from_u64(round * 1000 + t);
        for i in 0..32 {
            let p = format!("r{round}-t{t:02}-p{i:02}");
            let conn = format!("c-{p}");
            let kind = rng.random_range(0..100);
            match kind {
                40..55 => server.respond(&conn, std::iter::repeat_n(500, 1000)),
                55..70 => server.set_gone(&conn),
                _ => {}
            }
            socket_plan.push((p, conn, kind < 70, rng.random_range(0..100u32)));
        }
        tasks.push(tokio::spawn(async move {
            let worlds = ["world1", "world2", "short", "big"];
            for (p, conn, has_socket, roll) in socket_plan {
                let id = player(&p);
                let conn = ConnectionId::parse(&conn).unwrap();
                if has_socket {
                    store.register_connection(&conn, &id).await.unwrap();
                }
                let w = world(&store, worlds[roll as usize % worlds.len()]);
                match store.join(w, &id, None, None).await.unwrap() {
                    JoinOutcome::Matched { .. } => {
                        matched.fetch_add(1, Ordering::Relaxed);
                    }
                    JoinOutcome::Rejected(Rejection::QueueFull {
                        world_type,
                        queue_size,
                    }) => {
                        assert_eq!((world_type.as_str(), queue_size), ("big", CAPACITY));
                        full.fetch_add(1, Ordering::Relaxed);
                    }
                    JoinOutcome::Queued(q) => assert!(q.queue_size <= CAPACITY, "{q:?}"),
                    JoinOutcome::Rejected(Rejection::AlreadyQueued(q)) => {
                        panic!("fresh player already queued: {q:?}")
                    }
                    other => panic!("unexpected join outcome: {other:?}"),
                }
                if roll % 10 == 0
                    && matches!(
                        store.leave(w, &id).await.unwrap(),
                        shared::LeaveOutcome::Left { .. }
                    )
                {
                    left.fetch_add(1, Ordering::Relaxed);
                }
                if has_socket && roll % 5 == 1 {
                    store.unregister_connection(&conn).await.unwrap();
                    disconnected.fetch_add(1, Ordering::Relaxed);
                }
            }
        }));
    }
    for t in tasks {
        t.await.expect("burst task");
    }
    Burst {
        matched: matched.load(Ordering::Relaxed),
        queue_full: full.load(Ordering::Relaxed),
        left: left.load(Ordering::Relaxed),
        disconnected: disconnected.load(Ordering::Relaxed),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_returns_to_the_key_entry_and_memory_baseline() {
    let server = RedisServer::start();
    let store = Env {
        urls: server.url(),
        cluster: false,
    }
    .store_with(
        "bounded",
        WORLDS,
        &[
            ("MM_MATCH_TTL_SECS", "1"),
            ("MM_PRESENCE_TIMEOUT_SECS", "2"),
            ("MM_HEARTBEAT_SECS", "1"),
            ("MM_QUEUE_CAPACITY", "60"),
        ],
    );
    let connections = ConnectionsServer::start().await;
    let pusher = ApiGatewayPusher::with_static_credentials(
        &connections.endpoint_with_stage("prod"),
        "us-east-1",
    )
    .unwrap();

    let stop = Arc::new(AtomicBool::new(false));
    let dropped = Arc::new(AtomicU64::new(0));
    let matcher = {
        let (store, pusher, stop, dropped) =
            (store.clone(), pusher.clone(), stop.clone(), dropped.clone());
        tokio::spawn(async move {
            while !stop.load(Ordering::Relaxed) {
                dropped.fetch_add(tick(&store, &pusher).await, Ordering::Relaxed);
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        })
    };

    // Warm-up: a match in each world that can match (creating the counters
    // and rate hashes), a leave, pushes; then everything expires.
    for (world_name, n) in [("world1", 3), ("world2", 2), ("short", 4)] {
        for i in 0..n {
            let p = format!("warm-{world_name}-{i}");
            store
                .register_connection(
                    &ConnectionId::parse(&format!("c-{p}")).unwrap(),
                    &player(&p),
                )
                .await
                .unwrap();
            store
                .join(world(&store, world_name), &player(&p), None, None)
                .await
                .unwrap();
        }
    }
    store
        .join(world(&store, "big"), &player("warm-big"), None, None)
        .await
        .unwrap();
    store
        .leave(world(&store, "big"), &player("warm-big"))
        .await
        .unwrap();
    // Every script runs once, so the script cache is the same before and after.
    store
        .unregister_connection(&ConnectionId::parse("c-warm-short-0").unwrap())
        .await
        .unwrap();
    store.player_status(&player("warm-big")).await.unwrap();
    let k = store.keys();
    let rate = |w: &str| k.world(&WorldName::parse(w).unwrap()).stats;
    let expected: BTreeSet<String> = [
        k.ticket_seq(),
        k.match_seq(),
        rate("world1"),
        rate("world2"),
        rate("short"),
    ]
    .into_iter()
    .collect();
    let baseline = settled_footprint(&store, &expected, Duration::from_secs(20)).await;
    let memory_before = used_memory(&store).await;

    let soak_until = std::env::var("MM_SOAK_SECS")
        .ok()
        .and_then(|v| v.parse().ok())
        .map(|s| Instant::now() + Duration::from_secs(s));
    let mut round = 0;
    let mut peak = Footprint::default();
    loop {
        let b = burst(&store, &connections, round).await;
        let now = footprint(&store).await;
        if now.entries() > peak.entries() {
            peak = now;
        }
        assert!(b.queue_full > 0, "the capped world refused joins: {b:?}");
        assert!(b.matched > 50 && b.left > 0 && b.disconnected > 0, "{b:?}");
        eprintln!("burst {round}: {b:?}");
        round += 1;
        if soak_until.is_none_or(|u| Instant::now() >= u) {
            break;
        }
    }
    // Mid-flight the structures stay consistent too (a matcher is ticking).
    assert_consistent(&store, false).await;

    wait_for_baseline(&store, &baseline, Duration::from_secs(30)).await;
    stop.store(true, Ordering::Relaxed);
    matcher.await.expect("matcher loop");
    let memory_after = used_memory(&store).await;
    eprintln!(
        "peak {} keys / {} entries; back to {} keys / {} entries; used_memory {memory_before} -> {memory_after}; {} undeliverable notifications dropped",
        peak.keys.len(),
        peak.entries(),
        baseline.keys.len(),
        baseline.entries(),
        dropped.load(Ordering::Relaxed),
    );
    assert!(
        peak.entries() > baseline.entries() + 500,
        "the burst was real"
    );
    assert!(
        dropped.load(Ordering::Relaxed) > 0,
        "pushes to failing sockets were given up"
    );
    assert!(
        memory_after <= memory_before + 32 * 1024,
        "used_memory grew from {memory_before} to {memory_after}"
    );
}

/// Worlds are configuration: a world removed from `MM_WORLDS` (the next
/// deploy) must not strand the tickets waiting in it. No script visits the
/// retired world's keys on its own, so a stranded player's next join drops
/// the stale ticket (join answers STALE, the store removes it with a script
/// that declares the retired world's keys) and joins for real.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ticket_of_a_world_removed_from_the_configuration_does_not_strand_the_player() {
    let server = RedisServer::start();
    let env = Env {
        urls: server.url(),
        cluster: false,
    };
    let before = env.store("removed-world", "world1:3,old:3:1");
    let stranded = player("stranded");
    let queued = before
        .join(world(&before, "old"), &stranded, None, None)
        .await
        .unwrap();
    assert!(matches!(queued, JoinOutcome::Queued(_)), "{queued:?}");

    // The next deploy no longer configures `old`; its matcher keeps ticking
    // well past the ticket's 1 s lifetime.
    let after = env.store("removed-world", "world1:3");
    let connections = ConnectionsServer::start().await;
    let pusher = ApiGatewayPusher::with_static_credentials(
        &connections.endpoint_with_stage("prod"),
        "us-east-1",
    )
    .unwrap();
    let until = Instant::now() + Duration::from_secs(5);
    let outcome = loop {
        tick(&after, &pusher).await;
        let outcome = after
            .join(world(&after, "world1"), &stranded, None, None)
            .await
            .unwrap();
        if matches!(outcome, JoinOutcome::Queued(_)) || Instant::now() >= until {
            break outcome;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    let status = after.player_status(&stranded).await.unwrap();
    let keys = footprint(&after).await.names();
    assert!(
        matches!(outcome, JoinOutcome::Queued(_)),
        "5 s after its 1 s ticket lifetime the player still cannot join: {outcome:?} \
         (my-status says {status:?}; leaving world1 says {:?}; keys {keys:?})",
        after
            .leave(world(&after, "world1"), &stranded)
            .await
            .unwrap()
    );
    let old_keys: Vec<&String> = keys.iter().filter(|k| k.ends_with(":old")).collect();
    assert!(
        old_keys.is_empty(),
        "keys of the removed world remain: {old_keys:?}"
    );
}
