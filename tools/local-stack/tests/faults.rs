//! Faults through the whole system: the local stack (the Lambda handlers
//! behind the emulated API Gateway, real WebSockets, the matcher ticking) or
//! the matcher's own `tick` with the real SDK pusher against the
//! `@connections` stand-in. Summary of every fault and what was observed:
//! `docs/hardening-faults.md`. Core-level versions: `tests/tests/faults.rs`.
//!
//! `MM_SOAK_SECS=N` keeps killing and restarting Redis for N seconds in the
//! kill test.

mod support;

use integration_tests::outbox_len;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures_util::future::join_all;
use integration_tests::connections_server::ConnectionsServer;
use integration_tests::{
    assert_consistent, eventually, footprint, settings_for, settled_footprint, used_memory,
    Footprint, Heartbeat, RedisServer, PERSISTENT_ARGS,
};
use lambda_common::push::ApiGatewayPusher;
use local_stack::LocalStack;
use rand::{Rng, SeedableRng};
use serde_json::{json, Value};
use shared::store::CLAIM_LEASE;
use shared::{ConnectionId, MatchRecord, MatchStore, PlayerId, PlayerStatus, ServerMessage};
use support::{start_stack, Player};

const WORLDS: &str = "world1:3,world2:2,world3:5";
/// `REDIS_TIMEOUT_MS` of the kill test.
const TIMEOUT: Duration = Duration::from_millis(500);
/// The HTTP hop (JWT check, event building, SigV4-signed pushes in a debug
/// build) on top of the timeout.
const HTTP_SLACK: Duration = Duration::from_millis(500);
/// Scheduling slack for a direct store call.
const STORE_SLACK: Duration = Duration::from_millis(100);
const OUTAGE: Duration = Duration::from_millis(1500);
const RECOVERY: Duration = Duration::from_secs(2);
const UNAVAILABLE_MSG: &str = "temporarily unavailable";

/// The CPU-heavy tests (dozens of clients, hundreds of sockets) take turns,
/// so their latency assertions measure the system, not each other: the
/// machine has two cores. The light tests run alongside.
static HEAVY: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

fn soak() -> Option<Duration> {
    std::env::var("MM_SOAK_SECS")
        .ok()
        .and_then(|v| v.parse().ok())
        .map(Duration::from_secs)
}

/// An HTTP client for the stack's API that times every call.
#[derive(Clone)]
struct Api {
    base: String,
    client: reqwest::Client,
}

/// One answer as the client saw it; status 0 when no answer came.
#[derive(Debug, Clone)]
struct Answer {
    status: u16,
    body: Value,
    started: Instant,
    ended: Instant,
}

impl Answer {
    fn took(&self) -> Duration {
        self.ended - self.started
    }
    fn error_code(&self) -> &str {
        self.body["data"]["error"].as_str().unwrap_or_default()
    }
    /// 503 REDIS_UNAVAILABLE in the envelope, with a message saying so.
    fn is_unavailable(&self) -> bool {
        self.status == 503
            && self.error_code() == "REDIS_UNAVAILABLE"
            && self.body["resultCode"] == "503"
            && self.body["msg"]
                .as_str()
                .is_some_and(|m| m.contains(UNAVAILABLE_MSG))
    }
    fn matched(&self) -> Option<MatchRecord> {
        (self.status == 200 && self.body["data"]["status"] == "MATCHED")
            .then(|| serde_json::from_value(self.body["data"]["match"].clone()).expect("match"))
    }
}

impl Api {
    fn new(stack: &LocalStack) -> Self {
        Self {
            base: stack.http_url.clone(),
            client: reqwest::Client::builder()
                .timeout(Duration::from_secs(10))
                .build()
                .expect("http client"),
        }
    }

    async fn call(&self, method: &str, path: &str, token: &str, body: Option<Value>) -> Answer {
        let url = format!("{}{path}", self.base);
        let mut req = match method {
            "GET" => self.client.get(url),
            _ => self.client.post(url),
        }
        .header("authorization", format!("Bearer {token}"));
        if let Some(b) = body {
            req = req
                .header("content-type", "application/json")
                .body(b.to_string());
        }
        let started = Instant::now();
        let (status, body) = match req.send().await {
            Ok(res) => {
                let status = res.status().as_u16();
                let text = res.text().await.unwrap_or_default();
                (
                    status,
                    serde_json::from_str(&text).unwrap_or(Value::String(text)),
                )
            }
            Err(e) => (0, Value::String(format!("no answer: {e}"))),
        };
        Answer {
            status,
            body,
            started,
            ended: Instant::now(),
        }
    }

    async fn join(&self, token: &str, world: &str) -> Answer {
        let body = json!({ "worldType": world });
        self.call("POST", "/v1/matching/join", token, Some(body))
            .await
    }

    async fn leave(&self, token: &str, world: &str) -> Answer {
        let body = json!({ "worldType": world });
        self.call("POST", "/v1/matching/leave", token, Some(body))
            .await
    }

    async fn my_status(&self, token: &str) -> Answer {
        self.call("GET", "/v1/matching/my-status", token, None)
            .await
    }
}

async fn connect_all(stack: &LocalStack, names: &[String]) -> Vec<Player> {
    // One alone first: it opens the store's connection and loads the
    // script, which a crowd of first calls would each do within the timeout.
    let mut players = Vec::new();
    if let Some(first) = names.first() {
        players.push(Player::connect(stack, first).await);
    }
    for chunk in names[players.len()..].chunks(16) {
        players.extend(join_all(chunk.iter().map(|n| Player::connect(stack, n))).await);
    }
    players
}

/// Match ids are `<matched_at hex>-<seq hex>`: later matches have larger seqs.
fn match_seq(id: &str) -> u64 {
    let seq = id.rsplit('-').next().unwrap_or_default();
    u64::from_str_radix(seq, 16).unwrap_or_else(|_| panic!("match id {id}"))
}

/// The MATCH_FOUND push of `record`, as JSON.
fn match_found(record: &MatchRecord) -> Value {
    serde_json::from_str(&ServerMessage::match_found(record.clone()).to_json()).unwrap()
}

// ---------------------------------------------------------------------------
// 1. Redis killed and restarted (AOF) while 64 clients join and leave.
// ---------------------------------------------------------------------------

#[derive(Debug, Clone)]
struct HttpOp {
    who: String,
    route: &'static str,
    answer: Answer,
}

#[derive(Default)]
struct HttpLog {
    ops: Vec<HttpOp>,
    /// Matches told over HTTP (join or my-status answered MATCHED), by id.
    told: BTreeMap<String, MatchRecord>,
    /// player -> match ids told to them over HTTP.
    told_to: HashMap<String, BTreeSet<String>>,
}

/// 64 players with their own tokens and WebSockets join, leave and ask for
/// their status in a loop through the HTTP API. Redis (AOF, fsync always) is
/// killed with SIGKILL, kept down 1.5 s and restarted on the same port.
/// Every request during the outage is answered 503 REDIS_UNAVAILABLE with a
/// clear message, no request is slower than the timeout plus the HTTP hop,
/// nothing answers 500, the API answers again within 2 s, every match that
/// was formed is pushed to each of its players (at least once, through the
/// crash), and no player told MATCHED (HTTP or push) lost that match.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_killed_and_restarted_with_aof_while_64_clients_churn_through_the_stack() {
    churn_through(Fault::Kill, "kill-stack").await;
}

/// The same churn while Redis is frozen (SIGSTOP) for 1.5 s instead: every
/// call waits for the timeout, so this is where request latency is bounded
/// by `REDIS_TIMEOUT_MS` rather than by a refused connection.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_frozen_while_64_clients_churn_through_the_stack() {
    churn_through(Fault::Freeze, "freeze-stack").await;
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fault {
    /// SIGKILL, then a restart on the same port with the AOF.
    Kill,
    /// SIGSTOP, then SIGCONT.
    Freeze,
}

async fn churn_through(fault: Fault, ns: &str) {
    let _turn = HEAVY.lock().await;
    let mut redis = RedisServer::start_persistent();
    let url = redis.url();
    let stack = start_stack(
        WORLDS,
        &[
            ("REDIS_URL", url.as_str()),
            ("REDIS_TIMEOUT_MS", "500"),
            ("REDIS_CONNECT_TIMEOUT_MS", "300"),
            ("MM_MATCH_TTL_SECS", "3600"),
            ("MM_NAMESPACE", ns),
        ],
    )
    .await;
    let names: Vec<String> = (0..64).map(|i| format!("client-{i:02}")).collect();
    let players = connect_all(&stack, &names).await;
    let api = Api::new(&stack);
    let worlds = ["world1", "world2", "world3"];
    let log: Arc<Mutex<HttpLog>> = Arc::default();
    let stop = Arc::new(AtomicBool::new(false));

    let heartbeat = Heartbeat::start();
    let mut tasks = Vec::new();
    for (i, p) in players.iter().enumerate() {
        let (api, log, stop) = (api.clone(), log.clone(), stop.clone());
        let (name, token) = (p.id.clone(), p.token.clone());
        tasks.push(tokio::spawn(async move {
            let mut rng = rand::rngs::StdRng::seed_from_u64(i as u64);
            while !stop.load(Ordering::Relaxed) {
                let world = worlds[rng.random_range(0..worlds.len())];
                let (route, answer) = match rng.random_range(0..100) {
                    0..45 => ("join", api.join(&token, world).await),
                    45..70 => ("leave", api.leave(&token, world).await),
                    _ => ("my-status", api.my_status(&token).await),
                };
                let unavailable = answer.status == 503;
                {
                    let mut log = log.lock().unwrap();
                    if let Some(record) = answer.matched() {
                        log.told_to
                            .entry(name.clone())
                            .or_default()
                            .insert(record.match_id.to_string());
                        log.told.insert(record.match_id.to_string(), record);
                    }
                    log.ops.push(HttpOp {
                        who: name.clone(),
                        route,
                        answer,
                    });
                }
                // Think time: 64 clients without it saturate two cores
                // (debug build, SigV4-signed pushes) and every latency
                // becomes queueing. Refusals are not retried in a hot loop.
                let pause = if unavailable {
                    20
                } else {
                    rng.random_range(5..30)
                };
                tokio::time::sleep(Duration::from_millis(pause)).await;
            }
        }));
    }

    // A direct store call every 50 ms next to the HTTP clients: the Redis
    // part of the latency, without the HTTP hop and the CPU the clients use.
    let probe_task = {
        let (store, stop) = (stack.store.clone(), stop.clone());
        tokio::spawn(async move {
            let mut probes = Vec::new();
            let id = PlayerId::parse("store-probe").unwrap();
            while !stop.load(Ordering::Relaxed) {
                let started = Instant::now();
                let result = store.player_status(&id).await;
                probes.push((started, Instant::now(), result.err().map(|e| e.to_string())));
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            probes
        })
    };
    let probe = support::token(&stack, "probe").await;
    let soak_until = soak().map(|d| Instant::now() + d);
    let mut outages = Vec::new();
    loop {
        // Let the clients run (the point is time passing under load).
        tokio::time::sleep(Duration::from_millis(1500)).await;
        match fault {
            Fault::Kill => redis.kill(),
            Fault::Freeze => redis.pause(),
        }
        let down = Instant::now();
        if fault == Fault::Kill {
            // While Redis is down, $connect is refused too.
            let token = support::token(&stack, "late-comer").await;
            let url = format!("{}?token={token}", stack.websocket_url);
            match tokio_tungstenite::connect_async(url).await {
                Err(tokio_tungstenite::tungstenite::Error::Http(response)) => {
                    assert_eq!(response.status(), 503, "upgrade during the outage")
                }
                other => panic!("upgrade during the outage: {:?}", other.map(|_| ())),
            }
        }
        tokio::time::sleep_until((down + OUTAGE).into()).await; // the outage itself
        let restart = Instant::now();
        redis = match fault {
            Fault::Kill => tokio::task::spawn_blocking(move || {
                redis.restart(&PERSISTENT_ARGS);
                redis
            })
            .await
            .expect("restart"),
            Fault::Freeze => {
                redis.resume();
                redis
            }
        };
        let ready = Instant::now();
        loop {
            let answer = api.my_status(&probe).await;
            if answer.status == 200 {
                break;
            }
            assert!(answer.is_unavailable(), "{answer:?}");
            assert!(
                ready.elapsed() < RECOVERY,
                "no 200 within {RECOVERY:?} of Redis being back"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        eprintln!(
            "redis back after {:?}; API answered 200 {:?} later",
            ready - restart,
            ready.elapsed()
        );
        outages.push((down, restart, ready));
        if soak_until.is_none_or(|until| Instant::now() >= until) {
            break;
        }
    }
    tokio::time::sleep(Duration::from_millis(1500)).await;
    stop.store(true, Ordering::Relaxed);
    for t in tasks {
        t.await.expect("no client task panicked");
    }
    let log = std::mem::take(&mut *log.lock().unwrap());

    // Only the answers the API documents; never a 500 or a hang.
    let wrong: Vec<&HttpOp> = log
        .ops
        .iter()
        .filter(|o| {
            let a = &o.answer;
            !(a.status == 200
                || (a.status == 409 && a.error_code() == "ALREADY_QUEUED")
                || (a.status == 404 && a.error_code() == "NOT_QUEUED")
                || a.is_unavailable())
        })
        .collect();
    assert!(
        wrong.is_empty(),
        "{} unexpected answers, e.g. {:?}",
        wrong.len(),
        &wrong[..wrong.len().min(3)]
    );
    let probes = probe_task.await.expect("store probe");
    let stalls = heartbeat.stop().await;
    // Every limit below is stretched by the time this process's runtime was
    // itself stalled (two cores shared with builds and other tests), never
    // by time spent waiting for Redis.
    // The store never waits longer than REDIS_TIMEOUT_MS (plus scheduling).
    let slow_store: Vec<_> = probes
        .iter()
        .filter(|(started, ended, _)| {
            *ended - *started > TIMEOUT + STORE_SLACK + stalls.during(*started, *ended)
        })
        .map(|(started, ended, error)| (*ended - *started, error))
        .collect();
    assert!(
        slow_store.is_empty(),
        "store calls over the timeout: {slow_store:?}"
    );
    assert!(
        probes.iter().any(|(_, _, e)| e.is_some()),
        "the probe saw the outage"
    );
    // A refusal comes from the request's first Redis call: the timeout plus
    // the HTTP hop. A success may make up to three Redis calls in a row (join,
    // then the push's connection lookup, or claim and settle), each with its
    // own timeout: see docs/hardening-faults.md.
    let slow: Vec<&HttpOp> = log
        .ops
        .iter()
        .filter(|o| {
            let a = &o.answer;
            let limit = if a.status == 503 {
                TIMEOUT + HTTP_SLACK
            } else {
                3 * TIMEOUT + HTTP_SLACK
            };
            a.took() > limit + stalls.during(a.started, a.ended)
        })
        .collect();
    assert!(
        slow.is_empty(),
        "requests slower than allowed (503: {TIMEOUT:?} + {HTTP_SLACK:?}, 200: 3 x {TIMEOUT:?} + {HTTP_SLACK:?}): {:?}",
        slow.iter()
            .take(5)
            .map(|o| (
                &o.who,
                o.route,
                o.answer.took(),
                o.answer.status,
                stalls.during(o.answer.started, o.answer.ended)
            ))
            .collect::<Vec<_>>()
    );
    for (down, restart, ready) in &outages {
        let during: Vec<&HttpOp> = log
            .ops
            .iter()
            .filter(|o| o.answer.started >= *down && o.answer.ended <= *restart)
            .collect();
        assert!(
            during.len() >= 16,
            "clients kept calling during the outage ({})",
            during.len()
        );
        let not_503: Vec<&&HttpOp> = during
            .iter()
            .filter(|o| !o.answer.is_unavailable())
            .collect();
        assert!(
            not_503.is_empty(),
            "answered while Redis was down: {:?}",
            &not_503[..not_503.len().min(3)]
        );
        let routes: BTreeSet<&str> = during.iter().map(|o| o.route).collect();
        assert_eq!(routes.len(), 3, "every route was refused: {routes:?}");
        assert!(
            log.ops
                .iter()
                .any(|o| o.answer.started >= *ready && o.answer.status == 200),
            "clients were served again after the restart"
        );
    }

    // At least once through the crash: every stored match reaches each of
    // its players. (Deliveries whose settle was lost are repeated once their
    // claim lapses, CLAIM_LEASE later: see the cut-off test.)
    let state = eventually(
        "every match pushed to all its players",
        CLAIM_LEASE + Duration::from_secs(15),
        || async {
            let state = assert_consistent(&stack.store, true).await;
            let all = players.iter().all(|p| {
                let got: BTreeSet<String> = p
                    .messages_of_type("MATCH_FOUND")
                    .iter()
                    .filter_map(|m| m["matchId"].as_str().map(String::from))
                    .collect();
                state
                    .matches
                    .values()
                    .filter(|m| m.participants.iter().any(|x| *x == p.id))
                    .all(|m| got.contains(m.match_id.as_str()))
            });
            all.then_some(state)
        },
    )
    .await;

    for (id, told) in &log.told {
        let stored = state
            .matches
            .get(id)
            .unwrap_or_else(|| panic!("match {id} was told over HTTP but is lost"));
        assert_eq!(stored, told);
    }
    let mut duplicates = 0;
    let mut pushed_total = 0;
    for p in &players {
        let mut told: BTreeSet<String> = log.told_to.get(&p.id).cloned().unwrap_or_default();
        let mut seen = BTreeSet::new();
        for m in p.messages_of_type("MATCH_FOUND") {
            let id = m["matchId"].as_str().expect("matchId").to_owned();
            let stored = state
                .matches
                .get(&id)
                .unwrap_or_else(|| panic!("{} was pushed match {id}, which is lost", p.id));
            assert_eq!(m, match_found(stored), "push of {id} to {}", p.id);
            assert!(stored.participants.iter().any(|x| *x == p.id));
            if !seen.insert(id.clone()) {
                duplicates += 1;
            }
            told.insert(id);
        }
        pushed_total += seen.len();
        let mine: BTreeSet<String> = state
            .matches
            .values()
            .filter(|m| m.participants.iter().any(|x| *x == p.id))
            .map(|m| m.match_id.to_string())
            .collect();
        assert_eq!(seen, mine, "{} is pushed exactly its matches", p.id);
        let answer = api.my_status(&p.token).await;
        assert_eq!(answer.status, 200, "{answer:?}");
        let data = &answer.body["data"];
        match data["status"].as_str() {
            Some("QUEUED") => {}
            Some("MATCHED") => {
                let id = data["match"]["matchId"].as_str().unwrap();
                if let Some(latest) = told.iter().map(|id| match_seq(id)).max() {
                    assert!(
                        match_seq(id) >= latest,
                        "{} was told about seq {latest}, my-status shows {id}",
                        p.id
                    );
                }
            }
            other => assert!(
                told.is_empty(),
                "{} was told MATCHED ({told:?}) but my-status says {other:?}",
                p.id
            ),
        }
    }
    eprintln!(
        "{fault:?}: {} requests, {} answered 503 over {} outage(s); {} matches, {pushed_total} distinct pushes, {duplicates} repeated; slowest 503 {:?}, slowest answer {:?}, slowest store call {:?}",
        log.ops.len(),
        log.ops.iter().filter(|o| o.answer.status == 503).count(),
        outages.len(),
        state.matches.len(),
        log.ops.iter().filter(|o| o.answer.status == 503).map(|o| o.answer.took()).max().unwrap_or_default(),
        log.ops.iter().map(|o| o.answer.took()).max().unwrap_or_default(),
        probes.iter().map(|(s, e, _)| *e - *s).max().unwrap_or_default(),
    );
    eprintln!("longest runtime stall: {:?}", stalls.longest());
    assert!(!state.matches.is_empty());
    for p in players {
        p.disconnect().await;
    }
    stack.stop().await;
}

// ---------------------------------------------------------------------------
// 2. @connections answering 410, 429 and 500; the player reconnects.
// ---------------------------------------------------------------------------

/// Through the stack: alice is queued but offline, and the registry still
/// lists a connection whose `$disconnect` was lost. The instant match's push
/// to it is answered 410 (the emulated API Gateway does not know it), which
/// removes it; with no connection left the push is retried with backoff.
/// When alice reconnects, the retry reaches her new socket, and my-status
/// agrees.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_player_whose_push_found_a_gone_connection_learns_the_match_on_reconnect() {
    let _turn = HEAVY.lock().await;
    let stack = start_stack(
        "world1:3",
        &[
            ("MM_REMOVE_TICKET_ON_DISCONNECT", "false"),
            ("MM_NAMESPACE", "reconnect"),
        ],
    )
    .await;
    let store = stack.store.clone();
    let alice_id = PlayerId::parse("alice").unwrap();
    let alice = Player::connect(&stack, "alice").await;
    let (status, body) = alice.join(&stack, "world1").await;
    assert_eq!((status, &body["data"]["status"]), (200, &json!("QUEUED")));
    alice.disconnect().await;
    eventually(
        "alice's socket to be forgotten",
        Duration::from_secs(5),
        || async {
            store
                .connections_of(&alice_id)
                .await
                .unwrap()
                .is_empty()
                .then_some(())
        },
    )
    .await;
    // A $disconnect that never arrived: the registry still lists a socket,
    // registered a minute ago (a 410 from a connection registered moments
    // ago is retried instead: its $connect may still be finishing).
    let stale = ConnectionId::parse("c3RhbGUtc29ja2V0").unwrap();
    store.register_connection(&stale, &alice_id).await.unwrap();
    integration_tests::age_connection(&store, stale.as_str(), 60).await;

    let bob = Player::connect(&stack, "bob").await;
    let carol = Player::connect(&stack, "carol").await;
    assert_eq!(bob.join(&stack, "world1").await.0, 200);
    let (status, body) = carol.join(&stack, "world1").await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["data"]["status"], "MATCHED", "{body}");
    let record: MatchRecord = serde_json::from_value(body["data"]["match"].clone()).unwrap();
    assert_eq!(record.participants, ["alice", "bob", "carol"]);

    // 410 removed the stale connection from the registry.
    eventually(
        "the gone connection to be removed",
        Duration::from_secs(5),
        || async {
            store
                .connections_of(&alice_id)
                .await
                .unwrap()
                .is_empty()
                .then_some(())
        },
    )
    .await;
    let registered: Option<String> = store
        .command(
            redis::cmd("HGET")
                .arg(store.keys().conns())
                .arg(stale.as_str()),
        )
        .await
        .unwrap();
    assert_eq!(registered, None);
    for p in [&bob, &carol] {
        let found = eventually("bob and carol pushed", Duration::from_secs(5), || async {
            let m = p.messages_of_type("MATCH_FOUND");
            (!m.is_empty()).then_some(m)
        })
        .await;
        assert_eq!(found, [match_found(&record)]);
    }
    // The match's notification is still pending for alice (target 1):
    // nobody could tell her.
    let entry = format!("M|{}", record.match_id);
    let pending = eventually(
        "the retry to name only alice",
        Duration::from_secs(5),
        || async {
            let meta: Option<String> = store
                .command(
                    redis::cmd("HGET")
                        .arg(store.keys().outbox_meta())
                        .arg(&entry),
                )
                .await
                .unwrap();
            meta.filter(|m| m.ends_with(":1"))
        },
    )
    .await;
    assert!(pending.ends_with(":1"), "{pending}");

    // alice comes back: the outbox retry reaches the new socket.
    let alice = Player::connect(&stack, "alice").await;
    let found = eventually(
        "MATCH_FOUND on alice's new socket",
        Duration::from_secs(20),
        || async {
            let m = alice.messages_of_type("MATCH_FOUND");
            (!m.is_empty()).then_some(m)
        },
    )
    .await;
    assert_eq!(found[0], match_found(&record));
    let status = alice.my_status(&stack).await;
    assert_eq!(status["status"], "MATCHED");
    assert_eq!(status["match"]["matchId"], record.match_id.as_str());
    eventually("the outbox to drain", Duration::from_secs(5), || async {
        (outbox_len(&store).await == 0).then_some(())
    })
    .await;
    for p in [alice, bob, carol] {
        p.disconnect().await;
    }
    stack.stop().await;
}

/// Real Redis, the matcher's `tick` with the real SDK pusher, and the
/// `@connections` stand-in that can answer 410/429/500 or stall.
struct TickEnv {
    _redis: RedisServer,
    server: ConnectionsServer,
    store: MatchStore,
    pusher: ApiGatewayPusher,
}

impl TickEnv {
    async fn new(ns: &str, worlds: &str, instant: bool) -> Self {
        let redis = RedisServer::start();
        let instant = if instant { "true" } else { "false" };
        let settings = settings_for(
            &redis.url(),
            false,
            ns,
            worlds,
            &[("MM_INSTANT_MATCH", instant)],
        );
        let server = ConnectionsServer::start().await;
        let pusher = ApiGatewayPusher::with_static_credentials(
            &server.endpoint_with_stage("prod"),
            "us-east-1",
        )
        .unwrap();
        Self {
            _redis: redis,
            server,
            store: MatchStore::new(settings).unwrap(),
            pusher,
        }
    }

    /// Registers `conn` as a long-standing connection of `player` (a 410
    /// from it means it is gone, not that its `$connect` is finishing).
    async fn register(&self, player: &str, conn: &str) {
        self.store
            .register_connection(
                &ConnectionId::parse(conn).unwrap(),
                &PlayerId::parse(player).unwrap(),
            )
            .await
            .unwrap();
        integration_tests::age_connection(&self.store, conn, 60).await;
    }

    async fn queue(&self, world: &str, player: &str, conn: &str) {
        self.register(player, conn).await;
        let world = self.store.settings().worlds.get(world).unwrap();
        self.store
            .join(world, &PlayerId::parse(player).unwrap(), None, None)
            .await
            .unwrap();
    }

    async fn tick(&self) -> shared::matcher::TickReport {
        shared::matcher::tick(&self.store, &self.pusher)
            .await
            .expect("tick")
    }

    /// Ticks every 100 ms until `done` holds; panics after `deadline`.
    async fn tick_until(&self, what: &str, deadline: Duration, done: impl Fn(&Self) -> bool) {
        let until = Instant::now() + deadline;
        loop {
            self.tick().await;
            if done(self) {
                return;
            }
            assert!(Instant::now() < until, "timed out waiting for {what}");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    fn statuses(&self, conn: &str) -> Vec<u16> {
        self.server
            .posts_to(conn)
            .iter()
            .map(|p| p.status)
            .collect()
    }

    async fn record_of(&self, player: &str) -> MatchRecord {
        match self
            .store
            .player_status(&PlayerId::parse(player).unwrap())
            .await
            .unwrap()
        {
            PlayerStatus::Matched(m) => m.record,
            other => panic!("{player}: {other:?}"),
        }
    }
}

/// 429 and 500 from `@connections` over several outbox attempts: each
/// attempt waits longer than the one before (250 ms, then 500 ms), the
/// notification stays pending with its attempt count, and when the player
/// reconnects (the old connection now 410, a new one registered) the next
/// retry removes the old connection and delivers to the new one, once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn throttled_and_failing_pushes_back_off_and_reach_the_reconnected_player() {
    let env = TickEnv::new("retry-reconnect", "world1:3", false).await;
    for p in ["a", "b"] {
        env.queue("world1", p, &format!("c-{p}")).await;
    }
    env.queue("world1", "c", "c-c-old").await;
    // The SDK retries once by itself: two answers fail one outbox attempt.
    env.server
        .respond("c-c-old", [429, 500, 500, 500, 429, 429]);

    let first = env.tick().await;
    assert_eq!(first.worlds[0].formed.len(), 1);
    // One entry for the match: a and b told, retried for c only.
    assert_eq!((first.delivery.delivered, first.delivery.retried), (0, 1));
    let record = env.record_of("c").await;
    env.tick_until("three failed attempts", Duration::from_secs(15), |env| {
        env.server.posts_to("c-c-old").len() >= 6
    })
    .await;
    let posts = env.server.posts_to("c-c-old");
    assert_eq!(env.statuses("c-c-old"), [429, 500, 500, 500, 429, 429]);
    let gap1 = posts[2].received_at - posts[1].received_at;
    let gap2 = posts[4].received_at - posts[3].received_at;
    assert!(gap1 >= Duration::from_millis(250), "first backoff {gap1:?}");
    assert!(
        gap2 >= Duration::from_millis(500),
        "second backoff {gap2:?}"
    );
    let id = format!("M|{}", record.match_id);
    let meta: String = env
        .store
        .command(
            redis::cmd("HGET")
                .arg(env.store.keys().outbox_meta())
                .arg(&id),
        )
        .await
        .unwrap();
    assert!(meta.starts_with("3:"), "three attempts recorded: {meta}");
    assert!(
        meta.ends_with(":3"),
        "retried for c (target 3) only: {meta}"
    );
    assert!(env.server.delivered_to("c-c-old").is_empty());

    // c reconnects: the old socket is gone, a new one is registered.
    env.server.set_gone("c-c-old");
    env.register("c", "c-c-new").await;
    env.tick_until(
        "delivery to the new socket",
        Duration::from_secs(15),
        |env| !env.server.delivered_to("c-c-new").is_empty(),
    )
    .await;
    assert_eq!(env.server.delivered_to("c-c-new"), [match_found(&record)]);
    assert_eq!(env.statuses("c-c-old").last(), Some(&410));
    assert_eq!(
        env.store
            .connections_of(&PlayerId::parse("c").unwrap())
            .await
            .unwrap(),
        ["c-c-new"],
        "410 removed the old connection"
    );
    for p in ["c-a", "c-b"] {
        assert_eq!(env.statuses(p), [200], "{p} pushed once");
    }
    assert_eq!(outbox_len(&env.store).await, 0);
    // Nothing more is sent.
    env.tick().await;
    assert_eq!(env.statuses("c-c-new"), [200]);
}

// ---------------------------------------------------------------------------
// 3. The matcher killed between forming a match and pushing it.
// ---------------------------------------------------------------------------

/// A matcher's tick is cut off (its task aborted, as when an invocation
/// dies) while a push is in flight: its claim is never settled. The next
/// matcher does not push while the claim lasts (no duplicate storm), then
/// delivers to every player once the claim lapses (`CLAIM_LEASE`). The
/// "formed but never drained" and "claimed with a short lease" variants are
/// `matcher::tests::a_matcher_that_died_before_pushing_is_completed_by_the_next`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tick_cut_off_mid_delivery_is_completed_after_the_claim_lease() {
    let env = TickEnv::new("cut-off", "world1:3", false).await;
    for p in ["a", "b", "c"] {
        env.queue("world1", p, &format!("c-{p}")).await;
    }
    // c's push hangs and is never answered (recorded as a 500: the client
    // never saw an answer).
    env.server.respond("c-c", [500]);
    env.server.stall("c-c", Duration::from_secs(10));
    let (store, pusher) = (env.store.clone(), env.pusher.clone());
    let crashed = tokio::spawn(async move { shared::matcher::tick(&store, &pusher).await });
    env.server
        .wait_for_posts("c-c", 1, Duration::from_secs(10))
        .await;
    crashed.abort();
    assert!(crashed.await.unwrap_err().is_cancelled());
    let cut_off = Instant::now();
    env.server.stall("c-c", Duration::ZERO);
    let record = env.record_of("a").await;

    // While the dead tick's claim lasts, the next matcher pushes nothing.
    let next = env.tick().await;
    assert!(next.worlds[0].formed.is_empty(), "formed once");
    assert_eq!(
        (next.delivery.delivered, next.delivery.retried),
        (0, 0),
        "claimed entries stay hidden"
    );
    assert_eq!(
        outbox_len(&env.store).await,
        1,
        "the match's entry is still pending"
    );

    env.tick_until(
        "delivery to c after the claim lease",
        CLAIM_LEASE + Duration::from_secs(10),
        |env| !env.server.delivered_to("c-c").is_empty(),
    )
    .await;
    let posts = env.server.posts_to("c-c");
    assert_eq!(
        env.statuses("c-c"),
        [500, 200],
        "the hung push, then one redelivery"
    );
    let delivered_at = posts[1].received_at;
    assert!(
        delivered_at + Duration::from_millis(500) >= cut_off + CLAIM_LEASE,
        "redelivered {:?} after the cut-off, before the {CLAIM_LEASE:?} claim lapsed",
        delivered_at - cut_off
    );
    let expected = match_found(&record);
    for p in ["c-a", "c-b", "c-c"] {
        let got = env.server.delivered_to(p);
        // At least once: a and b may have been pushed before the cut-off too.
        assert!(!got.is_empty() && got.len() <= 2, "{p}: {got:?}");
        assert!(got.iter().all(|m| *m == expected), "{p}: {got:?}");
    }
    assert_eq!(outbox_len(&env.store).await, 0);
}

// ---------------------------------------------------------------------------
// 4. Matcher ticks (with delivery) racing instant matches: no double match.
// ---------------------------------------------------------------------------

fn handler_request(
    method: &str,
    path: &str,
    player: &str,
    body: Option<Value>,
) -> lambda_http::Request {
    let body = body.map_or(lambda_http::Body::Empty, |b| {
        lambda_http::Body::from(b.to_string())
    });
    let req = lambda_http::http::Request::builder()
        .method(method)
        .uri(path)
        .header("content-type", "application/json")
        .body(body)
        .expect("request");
    lambda_common::http::with_caller(req, player)
}

fn response_json(resp: lambda_http::Response<lambda_http::Body>) -> (u16, Value) {
    let status = resp.status().as_u16();
    let body: Value = serde_json::from_slice(resp.body().as_ref()).expect("JSON body");
    (status, body)
}

#[derive(Default)]
struct Ledger {
    /// Joins that created a ticket (answered QUEUED or MATCHED).
    tickets: u64,
    left: u64,
    /// Matches the join answer named.
    told: BTreeSet<String>,
}

/// 48 players join (through the join function, which pushes instant
/// matches itself), leave and ask for their status while three matcher
/// `tick` loops form matches and drain the outbox to the `@connections`
/// stand-in, all at once. Every ticket ends in at most one match (joins =
/// matched + left + still queued), and each player's MATCH_FOUND pushes,
/// deduplicated by match id, are exactly the matches they are in, each
/// pushed once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn matcher_ticks_racing_instant_matches_never_double_match() {
    let _turn = HEAVY.lock().await;
    let env = TickEnv::new("race", WORLDS, true).await;
    let players: Vec<String> = (0..48).map(|i| format!("r{i:02}")).collect();
    for p in &players {
        env.register(p, &format!("c-{p}")).await;
    }
    let join_app = Arc::new(join::App {
        store: env.store.clone(),
        pusher: env.pusher.clone(),
    });
    let leave_app = Arc::new(leave::App {
        store: env.store.clone(),
    });
    let status_app = Arc::new(status::App {
        store: env.store.clone(),
    });
    let stop = Arc::new(AtomicBool::new(false));
    let mut matchers = Vec::new();
    for _ in 0..3 {
        let (store, pusher, stop) = (env.store.clone(), env.pusher.clone(), stop.clone());
        matchers.push(tokio::spawn(async move {
            let mut ticks = 0u64;
            while !stop.load(Ordering::Relaxed) {
                shared::matcher::tick(&store, &pusher).await.expect("tick");
                ticks += 1;
            }
            ticks
        }));
    }
    let worlds = ["world1", "world2", "world3"];
    let mut clients = Vec::new();
    for (i, p) in players.iter().enumerate() {
        let (join_app, leave_app, status_app) =
            (join_app.clone(), leave_app.clone(), status_app.clone());
        let p = p.clone();
        clients.push(tokio::spawn(async move {
            let mut rng = rand::rngs::StdRng::seed_from_u64(100 + i as u64);
            let mut ledger = Ledger::default();
            for _ in 0..40 {
                let world = worlds[rng.random_range(0..worlds.len())];
                let body = json!({ "worldType": world });
                match rng.random_range(0..100) {
                    0..55 => {
                        let req = handler_request("POST", "/v1/matching/join", &p, Some(body));
                        let (status, body) =
                            response_json(join::handle(&join_app, req).await.expect("join"));
                        match (status, body["data"]["status"].as_str()) {
                            (200, Some("QUEUED")) => ledger.tickets += 1,
                            (200, Some("MATCHED")) => {
                                ledger.tickets += 1;
                                let id = body["data"]["match"]["matchId"].as_str().unwrap();
                                ledger.told.insert(id.to_owned());
                            }
                            (409, _) => assert_eq!(body["data"]["error"], "ALREADY_QUEUED"),
                            other => panic!("join answered {other:?}: {body}"),
                        }
                    }
                    55..75 => {
                        let req = handler_request("POST", "/v1/matching/leave", &p, Some(body));
                        let (status, body) =
                            response_json(leave::handle(&leave_app, req).await.expect("leave"));
                        match status {
                            200 => ledger.left += 1,
                            404 => assert_eq!(body["data"]["error"], "NOT_QUEUED"),
                            other => panic!("leave answered {other}: {body}"),
                        }
                    }
                    _ => {
                        let req = handler_request("GET", "/v1/matching/my-status", &p, None);
                        let (status, body) =
                            response_json(status::handle(&status_app, req).await.expect("status"));
                        assert_eq!(status, 200, "{body}");
                    }
                }
            }
            (p, ledger)
        }));
    }
    let mut ledgers = BTreeMap::new();
    for c in clients {
        let (p, ledger) = c.await.expect("client task");
        ledgers.insert(p, ledger);
    }
    stop.store(true, Ordering::Relaxed);
    let mut ticks = 0;
    for m in matchers {
        ticks += m.await.expect("matcher task");
    }
    // Whatever is still due (retries of pushes) is delivered now.
    eventually("the outbox to drain", Duration::from_secs(15), || async {
        env.tick().await;
        (outbox_len(&env.store).await == 0).then_some(())
    })
    .await;

    let state = assert_consistent(&env.store, true).await;
    let mut pushes = 0;
    for p in &players {
        let ledger = &ledgers[p];
        let mine: BTreeSet<String> = state
            .matches
            .values()
            .filter(|m| m.participants.iter().any(|x| x == p))
            .map(|m| m.match_id.to_string())
            .collect();
        let still = u64::from(state.queued.contains_key(p));
        assert_eq!(
            ledger.tickets,
            mine.len() as u64 + ledger.left + still,
            "{p}: {} tickets but {} matches + {} left + {still} queued",
            ledger.tickets,
            mine.len(),
            ledger.left
        );
        assert!(
            ledger.told.is_subset(&mine),
            "{p} was told a match it is not in"
        );
        let found: Vec<Value> = env
            .server
            .delivered_to(&format!("c-{p}"))
            .into_iter()
            .filter(|m| m["type"] == "MATCH_FOUND")
            .collect();
        let ids: Vec<String> = found
            .iter()
            .map(|m| m["matchId"].as_str().unwrap().to_owned())
            .collect();
        let distinct: BTreeSet<String> = ids.iter().cloned().collect();
        assert_eq!(distinct, mine, "{p}'s pushes are exactly its matches");
        assert_eq!(ids.len(), distinct.len(), "{p} was pushed a match twice");
        for m in &found {
            let id = m["matchId"].as_str().unwrap();
            assert_eq!(*m, match_found(&state.matches[id]));
        }
        pushes += ids.len();
    }
    eprintln!(
        "{} matches, {pushes} MATCH_FOUND pushes, {ticks} concurrent ticks",
        state.matches.len()
    );
    assert!(state.matches.len() >= 20, "enough matches to race");
}

// ---------------------------------------------------------------------------
// 5. Bounded memory through the stack.
// ---------------------------------------------------------------------------

const BOUNDED_WORLDS: &str = "world1:3:2,world2:2:2,short:4:1,big:100:2";

/// Waits until the namespace is back to `baseline` (same keys, same number
/// of entries); panics with the difference after `deadline`.
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

/// A burst through the stack with short lifetimes (matches and connections
/// 1 s, tickets 1–2 s) while the matcher ticks: 60 joins against a world
/// capped at 40 (503 QUEUE_FULL beyond), then 240 players who join, match,
/// leave, disconnect, or wait until their ticket or connection expires, some
/// without any socket (their pushes are retried, then dropped). Afterwards
/// the namespace returns to its warm-up baseline: the same keys (counters
/// and per-world rate hashes only), the same number of entries, and roughly
/// the same `used_memory`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_through_the_stack_returns_to_the_baseline() {
    let _turn = HEAVY.lock().await;
    let redis = RedisServer::start();
    let url = redis.url();
    let stack = start_stack(
        BOUNDED_WORLDS,
        &[
            ("REDIS_URL", url.as_str()),
            ("MM_NAMESPACE", "bounded-stack"),
            ("MM_MATCH_TTL_SECS", "1"),
            ("MM_PRESENCE_TIMEOUT_SECS", "2"),
            ("MM_HEARTBEAT_SECS", "1"),
            ("MM_QUEUE_CAPACITY", "40"),
        ],
    )
    .await;
    let store = stack.store.clone();
    let api = Api::new(&stack);

    // Warm-up: one match per matching world, a leave, queue-status, pushes.
    let warm: Vec<String> = (0..9).map(|i| format!("warm-{i}")).collect();
    let warm_players = connect_all(&stack, &warm).await;
    for (range, world) in [(0..3, "world1"), (3..5, "world2"), (5..9, "short")] {
        for p in &warm_players[range] {
            let a = api.join(&p.token, world).await;
            assert_eq!(a.status, 200, "{a:?}");
        }
    }
    let w0 = &warm_players[0].token;
    assert_eq!(api.join(w0, "big").await.status, 200);
    assert_eq!(api.leave(w0, "big").await.status, 200);
    assert_eq!(api.my_status(w0).await.status, 200);
    for world in ["world1", "world2", "short", "big"] {
        let a = api
            .call(
                "GET",
                &format!("/v1/matching/queue-status/{world}"),
                w0,
                None,
            )
            .await;
        assert_eq!(a.status, 200);
    }
    for p in warm_players {
        p.disconnect().await;
    }
    let k = store.keys();
    // The matcher, idle, sleeps: its mark stays (one string).
    let expected: BTreeSet<String> = [
        k.matcher_asleep(),
        k.ticket_seq(),
        k.match_seq(),
        k.world(&shared::WorldName::parse("world1").unwrap()).stats,
        k.world(&shared::WorldName::parse("world2").unwrap()).stats,
        k.world(&shared::WorldName::parse("short").unwrap()).stats,
    ]
    .into_iter()
    .collect();
    let baseline = settled_footprint(&store, &expected, Duration::from_secs(20)).await;
    let memory_before = used_memory(&store).await;

    // Capacity: 60 concurrent joins against a queue capped at 40.
    let stack_ref = &stack;
    let big_tokens = join_all(
        (0..60).map(|i| async move { support::token(stack_ref, &format!("big-{i}")).await }),
    )
    .await;
    let answers = join_all(big_tokens.iter().map(|t| api.join(t, "big"))).await;
    let mut queued = 0;
    let mut full = 0;
    for a in &answers {
        match (a.status, a.error_code()) {
            (200, _) => {
                assert_eq!(a.body["data"]["status"], "QUEUED", "{a:?}");
                assert!(a.body["data"]["queueSize"].as_u64().unwrap() <= 40, "{a:?}");
                queued += 1;
            }
            (503, "QUEUE_FULL") => {
                assert_eq!(a.body["data"]["queueSize"], 40, "{a:?}");
                assert!(a.body["msg"].as_str().unwrap().contains("full"), "{a:?}");
                full += 1;
            }
            _ => panic!("join answered {a:?}"),
        }
    }
    assert!(queued >= 40 && full >= 1, "{queued} queued, {full} refused");
    let waiting: u64 = store
        .command(redis::cmd("ZCARD").arg(k.world(&shared::WorldName::parse("big").unwrap()).queue))
        .await
        .unwrap();
    assert!(waiting <= 40, "the capped queue holds {waiting}");

    // The burst: 160 players with sockets, 80 without.
    let mut rng = rand::rngs::StdRng::seed_from_u64(5);
    let with_socket: Vec<String> = (0..160).map(|i| format!("ws-{i:03}")).collect();
    let sockets = connect_all(&stack, &with_socket).await;
    let mut tokens: Vec<(String, String)> = sockets
        .iter()
        .map(|p| (p.id.clone(), p.token.clone()))
        .collect();
    for i in 0..80 {
        let name = format!("nows-{i:03}");
        let token = support::token(&stack, &name).await;
        tokens.push((name, token));
    }
    let plan: Vec<(&str, bool)> = tokens
        .iter()
        .map(|_| {
            (
                ["world1", "world2", "short"][rng.random_range(0..3)],
                rng.random_range(0..100) < 15,
            )
        })
        .collect();
    for chunk in tokens.iter().zip(&plan).collect::<Vec<_>>().chunks(40) {
        let answers = join_all(chunk.iter().map(|((_, t), (world, _))| api.join(t, world))).await;
        for a in answers {
            assert_eq!(a.status, 200, "{a:?}");
        }
    }
    let leavers = tokens
        .iter()
        .zip(&plan)
        .filter(|(_, (_, leave))| *leave)
        .map(|((_, t), (world, _))| api.leave(t, world));
    for a in join_all(leavers).await {
        assert!(matches!(a.status, 200 | 404), "{a:?}");
    }
    let peak = footprint(&store).await;
    // A third of the sockets close right away; the rest are closed after a
    // while (their registry entries have expired by then).
    let mut sockets = sockets;
    let closing: Vec<Player> = sockets.drain(..sockets.len() / 3).collect();
    join_all(closing.into_iter().map(Player::disconnect)).await;
    tokio::time::sleep(Duration::from_millis(1500)).await; // connection lifetime passes
    join_all(sockets.into_iter().map(Player::disconnect)).await;

    wait_for_baseline(&store, &baseline, Duration::from_secs(30)).await;
    let memory_after = used_memory(&store).await;
    eprintln!(
        "peak {} keys / {} entries; baseline {} keys / {} entries; used_memory {memory_before} -> {memory_after}",
        peak.keys.len(),
        peak.entries(),
        baseline.keys.len(),
        baseline.entries()
    );
    assert!(
        peak.entries() > baseline.entries() + 100,
        "the burst was real"
    );
    assert!(
        memory_after <= memory_before + 32 * 1024,
        "used_memory grew from {memory_before} to {memory_after}"
    );
    stack.stop().await;
    drop(redis);
}
