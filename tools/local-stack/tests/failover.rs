//! Failover through the whole stack: players with real WebSockets churn
//! through the HTTP API (join, wait to be matched, sometimes leave, then a
//! new player takes their place) while the primary that owns the
//! namespace's slot in a 3 + 3 Redis Cluster is replaced by its replica, at
//! a random moment, round after round. Three kinds of round, in turn:
//!
//! 1. SIGKILL of the primary, automatic failover (`cluster-node-timeout`);
//! 2. SIGKILL of the primary, `CLUSTER FAILOVER FORCE` on its replica;
//! 3. a partitioned primary: its replica takes over (`CLUSTER FAILOVER
//!    TAKEOVER`) while the primary still serves clients, then the old
//!    primary is SIGKILLed (what it acknowledged after the takeover is gone).
//!
//! The killed node is restarted (empty) and rejoins as a replica before the
//! next round. Afterwards, per player: (a) never told two different matches
//! (join answers, my-status, MATCH_FOUND pushes); (b) every match told to
//! anyone still has its record and every participant's pointer to it; (c)
//! no ticket acknowledged as queued vanished (the player is matched and
//! told, still queued, or left); and (d) how long joins failed per round.
//!
//! With the default durability mode (`MM_REPLICA_ACKS=auto`) (a)-(c) must
//! hold; with `MM_REPLICA_ACKS=off` the same run reports what is lost.
//! Rounds: 3, or 20 with `MM_FAILOVER_LONG=1` (`MM_FAILOVER_ROUNDS=N` for
//! any number). Figures: docs/hardening-faults.md#failover.

mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use integration_tests::failover::{Promotion, ReplicatedCluster};
use integration_tests::{assert_consistent_on, eventually};

use local_stack::LocalStack;
use rand::{Rng, SeedableRng};
use serde_json::{json, Value};
use support::{call, start_stack_vars};
use tokio_tungstenite::tungstenite::Message;

const WORLDS: &str = "world1:3,world2:2";
const CLIENTS: usize = 24;

/// The two runs take turns: both are CPU-heavy on two cores.
static HEAVY: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

fn rounds() -> usize {
    if let Some(n) = std::env::var("MM_FAILOVER_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
    {
        return n;
    }
    match std::env::var("MM_FAILOVER_LONG").as_deref() {
        Ok("1" | "true" | "yes") => 20,
        _ => 3,
    }
}

/// A WebSocket that records every message it receives.
struct Socket {
    received: Arc<Mutex<Vec<Value>>>,
    _reader: tokio::task::JoinHandle<()>,
}

impl Socket {
    /// Connects, retrying while `$connect` is refused (503 during a
    /// failover), for at most `limit`.
    async fn open(stack: &LocalStack, token: &str, limit: Duration) -> Self {
        let until = Instant::now() + limit;
        let url = format!("{}?token={token}", stack.websocket_url);
        let socket = loop {
            match tokio_tungstenite::connect_async(&url).await {
                Ok((socket, _)) => break socket,
                Err(e) => {
                    assert!(Instant::now() < until, "no WebSocket within {limit:?}: {e}");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            }
        };
        let received: Arc<Mutex<Vec<Value>>> = Arc::default();
        let sink = received.clone();
        let reader = tokio::spawn(async move {
            let (_write, mut read) = socket.split();
            while let Some(Ok(message)) = read.next().await {
                if let Message::Text(text) = message {
                    let value = serde_json::from_str(&text).unwrap_or(Value::Null);
                    sink.lock().unwrap().push(value);
                }
            }
        });
        Self {
            received,
            _reader: reader,
        }
    }

    fn match_found(&self) -> BTreeSet<String> {
        self.received
            .lock()
            .unwrap()
            .iter()
            .filter(|m| m["type"] == "MATCH_FOUND")
            .filter_map(|m| m["matchId"].as_str().map(String::from))
            .collect()
    }
}

/// What one player (one session) was told.
#[derive(Default)]
struct PlayerLog {
    /// Match ids from join answers and my-status.
    told_http: BTreeSet<String>,
    /// A join (or my-status after a refused join) said QUEUED or ALREADY_QUEUED.
    queued: bool,
    /// A leave was acknowledged (200), or refused and my-status then said IDLE.
    left: bool,
    /// Leave said NOT_QUEUED and my-status IDLE: the acknowledged ticket is gone.
    vanished: bool,
}

/// One join request as the client saw it.
#[derive(Clone, Copy)]
struct JoinCall {
    started: Instant,
    ended: Instant,
    ok: bool,
}

#[derive(Default)]
struct Log {
    players: BTreeMap<String, (PlayerLog, Option<Arc<Socket>>)>,
    joins: Vec<JoinCall>,
    /// Unexpected answers (route, status, body).
    unexpected: Vec<String>,
}

/// What my-status says, read until it answers.
async fn status(stack: &LocalStack, token: &str, log: &Mutex<Log>) -> Value {
    loop {
        let (code, body) = call(stack, "GET", "/v1/matching/my-status", Some(token), None).await;
        if code == 200 {
            return body["data"].clone();
        }
        if code != 503 {
            log.lock()
                .unwrap()
                .unexpected
                .push(format!("my-status {code} {body}"));
        }
        tokio::time::sleep(Duration::from_millis(30)).await;
    }
}

/// The match id of a MATCHED answer or status.
fn matched(data: &Value) -> Option<String> {
    (data["status"] == "MATCHED")
        .then(|| data["match"]["matchId"].as_str().map(String::from))
        .flatten()
}

/// One player's session: a socket, a join answered definitively (a
/// refused join is followed by my-status before joining again, as the API
/// documents), a wait for the match, and a leave when it does not come.
async fn session(
    stack: Arc<LocalStack>,
    id: String,
    seed: u64,
    log: Arc<Mutex<Log>>,
    stop: Arc<AtomicBool>,
) {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let token = support::token(&stack, &id).await;
    let socket = Arc::new(Socket::open(&stack, &token, Duration::from_secs(30)).await);
    let mut me = PlayerLog::default();
    let world = if rng.random_bool(0.5) {
        "world1"
    } else {
        "world2"
    };
    // Join until the answer is definitive.
    loop {
        let started = Instant::now();
        let (code, body) = call(
            &stack,
            "POST",
            "/v1/matching/join",
            Some(&token),
            Some(json!({ "worldType": world })),
        )
        .await;
        log.lock().unwrap().joins.push(JoinCall {
            started,
            ended: Instant::now(),
            ok: code == 200,
        });
        let data = &body["data"];
        match code {
            200 if data["status"] == "QUEUED" => me.queued = true,
            200 if matched(data).is_some() => {
                me.told_http.insert(matched(data).unwrap());
            }
            409 if data["error"] == "ALREADY_QUEUED" => me.queued = true,
            503 => {
                let data = status(&stack, &token, &log).await;
                if data["status"] == "QUEUED" {
                    me.queued = true;
                } else if let Some(m) = matched(&data) {
                    me.told_http.insert(m);
                } else if data["status"] == "IDLE" {
                    tokio::time::sleep(Duration::from_millis(30)).await;
                    continue;
                } else {
                    log.lock()
                        .unwrap()
                        .unexpected
                        .push(format!("my-status {data}"));
                }
            }
            _ => log
                .lock()
                .unwrap()
                .unexpected
                .push(format!("join {code} {body}")),
        }
        break;
    }
    if me.queued && me.told_http.is_empty() {
        // Wait for the match; leave when it does not come.
        let patience = Duration::from_millis(rng.random_range(500..2500));
        let until = Instant::now() + patience;
        while Instant::now() < until && socket.match_found().is_empty() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        if socket.match_found().is_empty() && !stop.load(Ordering::Relaxed) {
            loop {
                let (code, body) = call(
                    &stack,
                    "POST",
                    "/v1/matching/leave",
                    Some(&token),
                    Some(json!({ "worldType": world })),
                )
                .await;
                if code == 200 {
                    me.left = true;
                    break;
                }
                if code != 404 && code != 503 {
                    log.lock()
                        .unwrap()
                        .unexpected
                        .push(format!("leave {code} {body}"));
                    break;
                }
                let data = status(&stack, &token, &log).await;
                if let Some(m) = matched(&data) {
                    me.told_http.insert(m);
                    break;
                }
                match (code, data["status"].as_str()) {
                    (404, Some("IDLE")) => {
                        me.vanished = true;
                        break;
                    }
                    // A refused leave that took effect.
                    (503, Some("IDLE")) => {
                        me.left = true;
                        break;
                    }
                    _ => tokio::time::sleep(Duration::from_millis(30)).await,
                }
            }
        }
    }
    log.lock().unwrap().players.insert(id, (me, Some(socket)));
}

/// One round's figures.
struct Round {
    kind: &'static str,
    /// The failover step: from the kill (or the takeover) to the new
    /// primary serving the slot (and, after a partition, the old one killed).
    promotion: Duration,
    /// From the kill (or the takeover) to the end of the first join that
    /// started after it and answered 200.
    joins_failed_for: Duration,
    failed_joins: usize,
}

#[derive(Debug, Default)]
struct Figures {
    players: usize,
    matches_told: usize,
    told_two: usize,
    lost_matches: usize,
    vanished_tickets: usize,
    matched_after_leaving: usize,
    /// Stored matches not pushed to every participant (a lost connection
    /// registration leaves its player unreachable).
    undelivered: usize,
}

fn p50_max(mut values: Vec<Duration>) -> (Duration, Duration) {
    values.sort();
    (
        values.get(values.len() / 2).copied().unwrap_or_default(),
        values.last().copied().unwrap_or_default(),
    )
}

async fn run(mode: &str, ns: &str) -> (Figures, Vec<Round>) {
    let _turn = HEAVY.lock().await;
    let started = Instant::now();
    let mut cluster = tokio::task::block_in_place(ReplicatedCluster::start);
    let urls = cluster.urls();
    let stack = Arc::new(
        start_stack_vars(&[
            ("MM_WORLDS", WORLDS),
            ("REDIS_URL", urls.as_str()),
            ("REDIS_CLUSTER", "true"),
            ("REDIS_TIMEOUT_MS", "1000"),
            ("REDIS_CONNECT_TIMEOUT_MS", "300"),
            ("MM_REPLICA_ACKS", mode),
            ("MM_MATCH_TTL_SECS", "3600"),
            ("MM_TICKET_TTL_SECS", "3600"),
            ("MM_NAMESPACE", ns),
        ])
        .await,
    );
    let key = stack.store.keys().players();
    let log: Arc<Mutex<Log>> = Arc::default();
    let stop = Arc::new(AtomicBool::new(false));
    let mut clients = Vec::new();
    for c in 0..CLIENTS {
        let (stack, log, stop) = (stack.clone(), log.clone(), stop.clone());
        clients.push(tokio::spawn(async move {
            let mut n = 0u64;
            while !stop.load(Ordering::Relaxed) {
                let id = format!("c{c:02}-s{n:03}");
                session(
                    stack.clone(),
                    id,
                    (c as u64) << 32 | n,
                    log.clone(),
                    stop.clone(),
                )
                .await;
                n += 1;
            }
        }));
    }

    let mut rng = rand::rngs::StdRng::seed_from_u64(7);
    let mut rounds = Vec::new();
    for r in 0..self::rounds() {
        tokio::time::sleep(Duration::from_millis(rng.random_range(1000..2500))).await;
        let kind = [
            "kill, automatic",
            "kill, FORCE",
            "partition, TAKEOVER, kill",
        ][r % 3];
        let serve_for = Duration::from_millis(rng.random_range(200..600));
        let (killed, promoted, at) = tokio::task::block_in_place(|| match r % 3 {
            0 => cluster.fail_over(&key, Promotion::Automatic),
            1 => cluster.fail_over(&key, Promotion::Force),
            _ => cluster.partition_then_kill(&key, serve_for),
        });
        let promotion = at.elapsed();
        tokio::task::block_in_place(|| cluster.restart(killed));
        // The next round starts once every primary has a replica again and
        // a join went through.
        tokio::task::block_in_place(|| cluster.await_healthy());
        let recovered = eventually(
            "a join answered 200 after the failover",
            Duration::from_secs(30),
            || {
                let log = log.clone();
                async move {
                    let log = log.lock().unwrap();
                    log.joins
                        .iter()
                        .filter(|j| j.ok && j.started >= at)
                        .map(|j| j.ended)
                        .min()
                }
            },
        )
        .await;
        let failed_joins = log
            .lock()
            .unwrap()
            .joins
            .iter()
            .filter(|j| !j.ok && j.started >= at && j.started <= recovered)
            .count();
        let round = Round {
            kind,
            promotion,
            joins_failed_for: recovered - at,
            failed_joins,
        };
        eprintln!("{mode} round {r}: node {killed} -> node {promoted}");
        rounds.push(round);
    }
    tokio::time::sleep(Duration::from_millis(1500)).await;
    stop.store(true, Ordering::Relaxed);
    for c in clients {
        c.await.expect("no client panicked");
    }

    // Every stored match reaches each participant (at least once; entries
    // claimed by a call whose acknowledgement fell short wait out their
    // claim lease), and the structures are consistent.
    let primary_url = {
        let p = tokio::task::block_in_place(|| cluster.primary_of(&key));
        cluster.nodes[p].url()
    };
    let undelivered_after = |state: &integration_tests::ConsistentState, log: &Log| {
        state
            .matches
            .values()
            .filter(|m| {
                !m.participants.iter().all(|p| {
                    log.players
                        .get(p.as_str())
                        .and_then(|(_, s)| s.as_ref())
                        .is_some_and(|s| s.match_found().contains(m.match_id.as_str()))
                })
            })
            .count()
    };
    let drain_until = Instant::now() + shared::store::CLAIM_LEASE + Duration::from_secs(10);
    // Redeliveries come at least every CLAIM_LEASE; with no progress for
    // longer than that, what is left is unreachable.
    let mut progress = (usize::MAX, Instant::now());
    let (state, undelivered) = loop {
        let state = assert_consistent_on(&stack.store, &primary_url, false).await;
        let undelivered = undelivered_after(&state, &log.lock().unwrap());
        if undelivered != progress.0 {
            progress = (undelivered, Instant::now());
        }
        let stalled = progress.1.elapsed() > shared::store::CLAIM_LEASE + Duration::from_secs(2);
        if undelivered == 0 || stalled || Instant::now() >= drain_until {
            break (state, undelivered);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let log = std::mem::take(&mut *log.lock().unwrap());
    assert!(
        log.unexpected.is_empty(),
        "{mode}: answers the API does not document: {:?}",
        &log.unexpected[..log.unexpected.len().min(5)]
    );
    let mut figures = Figures {
        players: log.players.len(),
        undelivered,
        ..Figures::default()
    };
    let mut told_matches: BTreeSet<String> = BTreeSet::new();
    for (id, (me, socket)) in &log.players {
        let mut told = me.told_http.clone();
        if let Some(s) = socket {
            told.extend(s.match_found());
        }
        if told.len() > 1 {
            figures.told_two += 1;
            eprintln!("{mode}: {id} was told {told:?}");
        }
        if me.left && !told.is_empty() {
            figures.matched_after_leaving += 1;
            eprintln!("{mode}: {id} left and was told {told:?}");
        }
        let waiting = state.queued.contains_key(id.as_str());
        if me.vanished || (me.queued && !me.left && told.is_empty() && !waiting) {
            figures.vanished_tickets += 1;
            eprintln!("{mode}: {id}'s acknowledged ticket vanished");
        }
        told_matches.extend(told);
    }
    figures.matches_told = told_matches.len();
    for id in &told_matches {
        let kept = state.matches.get(id).is_some_and(|m| {
            m.participants
                .iter()
                .all(|p| state.player_match.get(p.as_str()) == Some(id))
        });
        if !kept {
            figures.lost_matches += 1;
            eprintln!(
                "{mode}: match {id} was told but its record or a pointer is gone: {:?}",
                state.matches.get(id)
            );
        }
    }
    for (i, r) in rounds.iter().enumerate() {
        eprintln!(
            "{mode} round {i} ({}): failover step {:?}, joins failed for {:?} ({} refused)",
            r.kind, r.promotion, r.joins_failed_for, r.failed_joins
        );
    }
    let (p50, max) = p50_max(rounds.iter().map(|r| r.joins_failed_for).collect());
    eprintln!(
        "{mode}: {} rounds, {} players, {} matches told; told two matches: {}, told matches lost: {}, \
         acknowledged tickets vanished: {}, matched after leaving: {}, stored matches not pushed to all: {}; joins failed for p50 {p50:?}, max {max:?}; \
         durability {:?}; {:?} in all",
        rounds.len(),
        figures.players,
        figures.matches_told,
        figures.told_two,
        figures.lost_matches,
        figures.vanished_tickets,
        figures.matched_after_leaving,
        figures.undelivered,
        stack.store.durability(),
        started.elapsed(),
    );
    assert!(figures.matches_told > 0, "{mode}: matches were told");
    match Arc::try_unwrap(stack) {
        Ok(stack) => stack.stop().await,
        Err(_) => panic!("the stack is still shared"),
    }
    (figures, rounds)
}

/// The default durability mode: nothing told is contradicted or lost.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failover_with_replica_acks_loses_nothing_it_told() {
    let (f, rounds) = run("auto", "fo-on").await;
    assert_eq!(f.told_two, 0, "players told two different matches: {f:?}");
    assert_eq!(f.lost_matches, 0, "told matches lost: {f:?}");
    assert_eq!(
        f.vanished_tickets, 0,
        "acknowledged tickets vanished: {f:?}"
    );
    assert_eq!(f.matched_after_leaving, 0, "matched after leaving: {f:?}");
    assert_eq!(f.undelivered, 0, "stored matches not pushed to all: {f:?}");
    assert!(rounds.len() >= 3.min(self::rounds()));
}

/// The same churn and rounds without waiting for replicas: what the mode
/// prevents. Losses depend on timing (how much the old primary acknowledged
/// after its replica stopped following it), so they are reported, not
/// asserted; the structures stay consistent either way.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failover_without_replica_acks_reports_what_is_lost() {
    let (f, _) = run("off", "fo-off").await;
    eprintln!("durability off: {f:?}");
}
