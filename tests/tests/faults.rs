//! Faults at the core (`MatchStore` against a real `redis-server`): Redis
//! killed with SIGKILL and restarted with its append-only file while 64
//! clients and two matchers keep going, and a frozen (SIGSTOP) Redis. The
//! same faults through the whole local stack: `tools/local-stack/tests/faults.rs`.
//! Summary of every fault and what was observed: `docs/hardening-faults.md`.
//!
//! `MM_SOAK_SECS=N` keeps killing and restarting Redis for N seconds.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use integration_tests::scenarios::{player, Env};
use integration_tests::{assert_consistent, Heartbeat, RedisServer, Stalls, PERSISTENT_ARGS};
use rand::{Rng, SeedableRng};
use shared::{
    JoinOutcome, LeaveOutcome, MatchRecord, MatchStore, PlayerStatus, Rejection, StoreError,
};

const WORLDS: &str = "world1:3,world2:2,world3:5";
/// `REDIS_TIMEOUT_MS` of these tests.
const TIMEOUT: Duration = Duration::from_millis(500);
/// Scheduling slack on top of the timeout; limits are also stretched by the
/// time the runtime itself was stalled (see `Heartbeat`).
const SLACK: Duration = Duration::from_millis(100);
/// How long Redis stays down.
const OUTAGE: Duration = Duration::from_millis(1500);
/// Service must answer again within this long after Redis is back.
const RECOVERY: Duration = Duration::from_secs(2);

fn soak() -> Option<Duration> {
    std::env::var("MM_SOAK_SECS")
        .ok()
        .and_then(|v| v.parse().ok())
        .map(Duration::from_secs)
}

fn store_on(server: &RedisServer, ns: &str) -> MatchStore {
    Env {
        urls: server.url(),
        cluster: false,
    }
    .store_with(
        ns,
        WORLDS,
        &[
            ("REDIS_TIMEOUT_MS", "500"),
            ("REDIS_CONNECT_TIMEOUT_MS", "300"),
            ("MM_MATCH_TTL_SECS", "3600"),
        ],
    )
}

/// One store call as a client saw it.
#[derive(Debug, Clone)]
struct Op {
    who: String,
    kind: &'static str,
    started: Instant,
    ended: Instant,
    /// `None` on success, else the error and whether it counts as unavailable.
    error: Option<(String, bool)>,
}

impl Op {
    fn took(&self) -> Duration {
        self.ended - self.started
    }
}

/// What the clients were told and what happened.
#[derive(Default)]
struct Log {
    ops: Vec<Op>,
    /// Every match somebody was told about, by id.
    told: BTreeMap<String, MatchRecord>,
    /// player -> ids of the matches they were told about.
    told_to: HashMap<String, Vec<String>>,
    /// player -> whether their own last join or leave may have left them
    /// with nothing: a player is in one state at a time (a join writes its
    /// ticket over the player's latest match), so one who left the queue
    /// after a later join is idle, and a leave that failed may have been
    /// applied. A successful join (queued or matched) clears it.
    may_be_idle: HashMap<String, bool>,
}

impl Log {
    fn tell(&mut self, player: &str, record: &MatchRecord) {
        self.told
            .entry(record.match_id.to_string())
            .or_insert_with(|| record.clone());
        let ids = self.told_to.entry(player.to_owned()).or_default();
        if !ids.iter().any(|id| *id == record.match_id.as_str()) {
            ids.push(record.match_id.to_string());
        }
    }
}

fn outcome<T>(result: &Result<T, StoreError>) -> Option<(String, bool)> {
    result
        .as_ref()
        .err()
        .map(|e| (e.to_string(), e.is_unavailable()))
}

/// Match ids are `<matched_at hex>-<seq hex>`: later matches have larger seqs.
fn match_seq(id: &str) -> u64 {
    let seq = id.rsplit('-').next().unwrap_or_default();
    u64::from_str_radix(seq, 16).unwrap_or_else(|_| panic!("match id {id}"))
}

/// 64 clients (one player each) join, leave and ask for their status in a
/// loop while two matchers form matches, sweep and run housekeeping. Redis
/// (AOF, fsync always) is killed with SIGKILL, kept down 1.5 s and restarted
/// on the same port. Every call during the outage fails as unavailable
/// within the timeout, the service answers again within 2 s, and afterwards
/// the structures are consistent and no match anybody was told about is lost.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_killed_and_restarted_with_aof_while_64_clients_churn() {
    let mut server = RedisServer::start_persistent();
    let store = store_on(&server, "kill-core");
    let worlds: Vec<shared::World> = store.settings().worlds.iter().cloned().collect();
    let log: Arc<Mutex<Log>> = Arc::default();
    let stop = Arc::new(AtomicBool::new(false));

    let heartbeat = Heartbeat::start();
    let mut tasks = Vec::new();
    for c in 0..64u64 {
        let (store, log, stop, worlds) = (store.clone(), log.clone(), stop.clone(), worlds.clone());
        tasks.push(tokio::spawn(async move {
            let mut rng = rand::rngs::StdRng::seed_from_u64(c);
            let name = format!("client-{c:02}");
            let id = player(&name);
            while !stop.load(Ordering::Relaxed) {
                let w = &worlds[rng.random_range(0..worlds.len())];
                let started = Instant::now();
                let (kind, error) = match rng.random_range(0..100) {
                    0..45 => {
                        let r = store.join(w, &id, None, None).await;
                        if r.is_ok() {
                            log.lock().unwrap().may_be_idle.insert(name.clone(), false);
                        }
                        if let Ok(JoinOutcome::Matched { record, formed, .. }) = &r {
                            let mut log = log.lock().unwrap();
                            log.tell(&name, record);
                            // The other participants hear about it by push.
                            for m in formed {
                                for p in &m.participants {
                                    log.tell(p, m);
                                }
                            }
                        }
                        if let Ok(JoinOutcome::Rejected(Rejection::QueueFull { .. })) = &r {
                            panic!("no capacity is configured");
                        }
                        ("join", outcome(&r))
                    }
                    45..70 => {
                        let r = store.leave(w, &id).await;
                        if matches!(&r, Ok(LeaveOutcome::Left { .. }) | Err(_)) {
                            log.lock().unwrap().may_be_idle.insert(name.clone(), true);
                        }
                        if let Ok(LeaveOutcome::Left {
                            previous_position,
                            remaining_queue_size,
                        }) = &r
                        {
                            assert!(*previous_position <= remaining_queue_size + 1);
                        }
                        ("leave", outcome(&r))
                    }
                    _ => {
                        let r = store.player_status(&id).await;
                        if let Ok(PlayerStatus::Matched(record)) = &r {
                            assert!(record.includes(&id));
                            log.lock().unwrap().tell(&name, record);
                        }
                        ("status", outcome(&r))
                    }
                };
                let failed = error.is_some();
                log.lock().unwrap().ops.push(Op {
                    who: name.clone(),
                    kind,
                    started,
                    ended: Instant::now(),
                    error,
                });
                if failed {
                    // Do not spin while Redis is away.
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
            }
        }));
    }
    for m in 0..2 {
        let (store, log, stop, worlds) = (store.clone(), log.clone(), stop.clone(), worlds.clone());
        tasks.push(tokio::spawn(async move {
            let name = format!("matcher-{m}");
            while !stop.load(Ordering::Relaxed) {
                let started = Instant::now();
                let mut error = None;
                for w in &worlds {
                    match store.form_matches(w, 0).await {
                        Ok(batch) => {
                            let mut log = log.lock().unwrap();
                            for record in &batch.matches {
                                for p in &record.participants {
                                    log.tell(p, record);
                                }
                            }
                        }
                        Err(e) => {
                            error = Some((e.to_string(), e.is_unavailable()));
                            break;
                        }
                    }
                    if let Err(e) = store.sweep_expired_tickets(w, 1000).await {
                        error = Some((e.to_string(), e.is_unavailable()));
                        break;
                    }
                }
                if error.is_none() {
                    error = outcome(&store.housekeeping(1000).await);
                }
                let failed = error.is_some();
                log.lock().unwrap().ops.push(Op {
                    who: name.clone(),
                    kind: "matcher round",
                    started,
                    ended: Instant::now(),
                    error,
                });
                let pause = if failed { 50 } else { 5 };
                tokio::time::sleep(Duration::from_millis(pause)).await;
            }
        }));
    }

    let soak_until = soak().map(|d| Instant::now() + d);
    let mut outages = Vec::new();
    loop {
        // Let the clients run (the point is time passing under load).
        tokio::time::sleep(Duration::from_millis(1200)).await;
        let (restarted, outage) = kill_and_restart(server, &store).await;
        server = restarted;
        outages.push(outage);
        if soak_until.is_none_or(|until| Instant::now() >= until) {
            break;
        }
    }
    tokio::time::sleep(Duration::from_millis(1200)).await;
    stop.store(true, Ordering::Relaxed);
    for t in tasks {
        t.await.expect("no client or matcher task panicked");
    }

    let stalls = heartbeat.stop().await;
    let log = std::mem::take(&mut *log.lock().unwrap());
    check_ops(&log.ops, &outages, &stalls);

    // Structures are consistent and positions are exactly 1..n.
    let state = assert_consistent(&store, true).await;
    // Every match anybody was told about survived the crash, unchanged.
    for (id, told) in &log.told {
        let stored = state
            .matches
            .get(id)
            .unwrap_or_else(|| panic!("match {id} was told but is lost after the restart"));
        assert_eq!(stored, told, "match {id} changed");
    }
    // Each player told MATCHED still sees that match, or a later one, or is
    // queued again, or (their own last leave) idle.
    for (p, ids) in &log.told_to {
        let latest = ids.iter().map(|id| match_seq(id)).max().unwrap();
        match store.player_status(&player(p)).await.unwrap() {
            PlayerStatus::Queued(_) => {}
            PlayerStatus::Idle if log.may_be_idle.get(p).copied().unwrap_or(true) => {}
            PlayerStatus::Matched(m) => {
                assert!(m.participants.iter().any(|x| x == p));
                assert!(
                    match_seq(&m.match_id) >= latest,
                    "{p} was told about match seq {latest} but my-status shows older {}",
                    m.match_id
                );
            }
            other @ (PlayerStatus::Idle | PlayerStatus::Party(_) | PlayerStatus::Proposed(_)) => {
                panic!("{p} was told MATCHED ({ids:?}) but is {other:?} now")
            }
        }
    }
    let failed = log.ops.iter().filter(|o| o.error.is_some()).count();
    eprintln!(
        "{} calls, {failed} failed during {} outage(s); {} matches told, all kept; slowest call {:?}",
        log.ops.len(),
        outages.len(),
        log.told.len(),
        log.ops.iter().map(Op::took).max().unwrap_or_default(),
    );
    assert!(!log.told.is_empty(), "matches were formed");
}

/// One outage as the test drove it.
#[derive(Debug, Clone, Copy)]
struct Outage {
    /// The process was dead from here...
    down: Instant,
    /// ...until the restart began.
    restart: Instant,
    /// Redis answered PING again.
    ready: Instant,
}

/// Kills Redis, keeps it down for [`OUTAGE`], restarts it with its AOF and
/// checks the service answers again within [`RECOVERY`].
async fn kill_and_restart(server: RedisServer, store: &MatchStore) -> (RedisServer, Outage) {
    let mut server = server;
    server.kill();
    let down = Instant::now();
    // The outage itself: time passing is the point.
    tokio::time::sleep(OUTAGE).await;
    let restart = Instant::now();
    let server = tokio::task::spawn_blocking(move || {
        server.restart(&PERSISTENT_ARGS);
        server
    })
    .await
    .expect("restart");
    let ready = Instant::now();
    let probe = player("probe");
    loop {
        match store.player_status(&probe).await {
            Ok(_) => break,
            Err(e) => assert!(e.is_unavailable(), "{e}"),
        }
        assert!(
            ready.elapsed() < RECOVERY,
            "no successful call within {RECOVERY:?} of Redis being back"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    eprintln!(
        "redis back after {:?}, service after {:?} more",
        ready - restart,
        ready.elapsed()
    );
    (
        server,
        Outage {
            down,
            restart,
            ready,
        },
    )
}

/// Every failure is "unavailable" and bounded by the timeout; every call
/// made while Redis was down failed; some calls succeeded after each outage.
fn check_ops(ops: &[Op], outages: &[Outage], stalls: &Stalls) {
    let wrong: Vec<&Op> = ops
        .iter()
        .filter(|o| matches!(o.error, Some((_, false))))
        .collect();
    assert!(
        wrong.is_empty(),
        "errors other than unavailable: {:?}",
        &wrong[..wrong.len().min(5)]
    );
    let slow: Vec<&Op> = ops
        .iter()
        .filter(|o| {
            o.kind != "matcher round"
                && o.took() > TIMEOUT + SLACK + stalls.during(o.started, o.ended)
        })
        .collect();
    assert!(
        slow.is_empty(),
        "calls slower than the {TIMEOUT:?} timeout (+{SLACK:?}): {:?}",
        slow.iter()
            .take(5)
            .map(|o| (&o.who, o.kind, o.took(), &o.error))
            .collect::<Vec<_>>()
    );
    for outage in outages {
        let during: Vec<&Op> = ops
            .iter()
            .filter(|o| o.started >= outage.down && o.ended <= outage.restart)
            .collect();
        assert!(
            during.len() >= 64,
            "the clients kept calling during the outage ({} calls)",
            during.len()
        );
        let served: Vec<&&Op> = during.iter().filter(|o| o.error.is_none()).collect();
        assert!(
            served.is_empty(),
            "calls succeeded while Redis was down: {served:?}"
        );
        assert!(
            ops.iter().any(|o| o.started >= outage.ready
                && o.error.is_none()
                && o.kind != "matcher round"),
            "clients were served again after the restart"
        );
    }
}

/// A Redis that stops answering (SIGSTOP: connections stay open, nothing
/// comes back) fails every call as unavailable at the configured timeout,
/// not later and not with another error; once it thaws the same store works
/// again at once and nothing is inconsistent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_frozen_redis_fails_calls_at_the_timeout_and_recovers() {
    let server = RedisServer::start();
    let store = store_on(&server, "frozen");
    let world = store.settings().worlds.get("world1").unwrap().clone();
    for p in ["a", "b"] {
        store.join(&world, &player(p), None, None).await.unwrap();
    }

    let heartbeat = Heartbeat::start();
    server.pause();
    // Three rounds while frozen: not only the calls already in flight, every
    // later call must fail at the timeout too.
    let mut results = Vec::new();
    for round in 0..3 {
        let calls = (0..16).map(|i| {
            let (store, world) = (store.clone(), world.clone());
            async move {
                let started = Instant::now();
                let id = player(&format!("f{round}-{i}"));
                let result = match i % 3 {
                    0 => store.join(&world, &id, None, None).await.map(|_| ()),
                    1 => store.leave(&world, &id).await.map(|_| ()),
                    _ => store.player_status(&id).await.map(|_| ()),
                };
                (round, result, started, Instant::now())
            }
        });
        results.extend(futures_join_all(calls).await);
    }
    server.resume();
    let stalls = heartbeat.stop().await;
    for (round, result, started, ended) in &results {
        let took = *ended - *started;
        let err = result.as_ref().expect_err("Redis is frozen");
        // The store's own deadline (Timeout) or the client's response
        // timeout (Unavailable "timed out"), which is set to the same value.
        assert!(err.is_unavailable(), "round {round}: {err:?}");
        assert!(
            took >= TIMEOUT && took <= TIMEOUT + SLACK + stalls.during(*started, *ended),
            "round {round}: failed after {took:?}, timeout {TIMEOUT:?}"
        );
    }

    let thawed = Instant::now();
    loop {
        if store.player_status(&player("a")).await.is_ok() {
            break;
        }
        assert!(thawed.elapsed() < RECOVERY, "no answer after the thaw");
    }
    // A timed-out write may still have been applied once Redis thawed (the
    // caller got 503 either way): state stays consistent, and the queue has
    // a and b plus whichever frozen joins went through.
    let state = assert_consistent(&store, true).await;
    let applied: Vec<&String> = state
        .queued
        .keys()
        .chain(state.player_match.keys())
        .filter(|p| p.starts_with('f'))
        .collect();
    for p in ["a", "b"] {
        assert!(
            state.queued.contains_key(p) || state.player_match.contains_key(p),
            "{p} is neither queued nor matched"
        );
    }
    eprintln!("frozen joins applied after the thaw although answered as unavailable: {applied:?}");
    let c = store.join(&world, &player("c"), None, None).await.unwrap();
    assert!(
        matches!(c, JoinOutcome::Queued(_) | JoinOutcome::Matched { .. }),
        "{c:?}"
    );
    assert_consistent(&store, true).await;
}

async fn futures_join_all<F>(futures: impl Iterator<Item = F>) -> Vec<F::Output>
where
    F: std::future::Future + Send + 'static,
    F::Output: Send + 'static,
{
    let handles: Vec<_> = futures.map(tokio::spawn).collect();
    let mut out = Vec::with_capacity(handles.len());
    for h in handles {
        out.push(h.await.expect("call task"));
    }
    out
}

/// A cold start while Redis is down (a Lambda initialising during an
/// outage): building the store succeeds, calls fail as unavailable within
/// the timeout, and the same store works within 2 s of Redis coming back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cold_start_during_an_outage_recovers_without_a_restart() {
    let mut server = RedisServer::start_persistent();
    server.kill();
    let store = store_on(&server, "cold");
    let world = store.settings().worlds.get("world1").unwrap().clone();
    let heartbeat = Heartbeat::start();
    let mut calls = Vec::new();
    for _ in 0..3 {
        let started = Instant::now();
        let err = store
            .join(&world, &player("early"), None, None)
            .await
            .expect_err("Redis is down");
        assert!(err.is_unavailable(), "{err:?}");
        calls.push((started, Instant::now()));
    }
    let stalls = heartbeat.stop().await;
    for (started, ended) in calls {
        let took = ended - started;
        assert!(
            took <= TIMEOUT + SLACK + stalls.during(started, ended),
            "{took:?}"
        );
    }
    let server = tokio::task::spawn_blocking(move || {
        server.restart(&PERSISTENT_ARGS);
        server
    })
    .await
    .unwrap();
    let back = Instant::now();
    let outcome = loop {
        match store.join(&world, &player("early"), None, None).await {
            Ok(outcome) => break outcome,
            Err(e) => assert!(e.is_unavailable(), "{e:?}"),
        }
        assert!(back.elapsed() < RECOVERY, "no answer within {RECOVERY:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert!(matches!(outcome, JoinOutcome::Queued(_)), "{outcome:?}");
    assert_consistent(&store, true).await;
    drop(server);
}
