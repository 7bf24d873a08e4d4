//! `matcher` driven by its event file(s) in `events/` against real Redis.

use std::collections::{HashMap, HashSet};

use integration_tests::connections_server::ConnectionsServer;
use integration_tests::{eventually, settings_for, RedisServer};
use lambda_common::push::ApiGatewayPusher;
use lambda_runtime::Context;
use serde_json::{json, Value};
use shared::delivery::{DeliveryReport, NoEvents};
use shared::matcher::{run_until, tick, MatcherLoop, Round, RunSummary, TickReport, LEASE_TTL};
use shared::{
    ConnectionId, MatchRecord, MatchStore, NotificationId, NotificationKind, PlayerId,
    PlayerStatus, ServerMessage, World,
};
use tokio::time::{Duration, Instant};

use aws_lambda_events::event::eventbridge::EventBridgeEvent;
use lambda_runtime::LambdaEvent;
use matcher::*;

const WAIT: Duration = Duration::from_secs(15);

struct Env {
    redis: RedisServer,
    server: ConnectionsServer,
    store: MatchStore,
    pusher: ApiGatewayPusher,
}

/// Real Redis, the real SDK pusher and the @connections stand-in.
/// Joins only queue (no instant match), so forming is the matcher's job.
async fn env(ns: &str, worlds: &str) -> Env {
    let redis = RedisServer::start();
    let settings = settings_for(
        &redis.url(),
        false,
        ns,
        worlds,
        &[("MM_INSTANT_MATCH", "false"), ("REDIS_TIMEOUT_MS", "500")],
    );
    let store = MatchStore::new(settings).unwrap();
    let server = ConnectionsServer::start().await;
    let pusher =
        ApiGatewayPusher::with_static_credentials(&server.endpoint_with_stage("prod"), "us-east-1")
            .unwrap();
    Env {
        redis,
        server,
        store,
        pusher,
    }
}

impl Env {
    fn world(&self, name: &str) -> World {
        self.store.settings().worlds.get(name).unwrap().clone()
    }

    /// Registers `conns` for `player` as long-standing connections (a 410
    /// from one means it is gone) and queues the player in `world`.
    async fn queue<S: AsRef<str>>(&self, world: &str, player: &str, conns: &[S]) {
        let id = PlayerId::parse(player).unwrap();
        for conn in conns {
            self.store
                .register_connection(&ConnectionId::parse(conn.as_ref()).unwrap(), &id)
                .await
                .unwrap();
            integration_tests::age_connection(&self.store, conn.as_ref(), 60).await;
        }
        self.store
            .join(&self.world(world), &id, None, None)
            .await
            .unwrap();
    }

    async fn matched_record(&self, player: &str) -> MatchRecord {
        match self
            .store
            .player_status(&PlayerId::parse(player).unwrap())
            .await
            .unwrap()
        {
            PlayerStatus::Matched(m) => m.record,
            other => panic!("{player} is not matched: {other:?}"),
        }
    }
}

fn json_of(message: &ServerMessage) -> Value {
    serde_json::from_str(&message.to_json()).unwrap()
}

fn statuses(server: &ConnectionsServer, conn: &str) -> Vec<u16> {
    server.posts_to(conn).iter().map(|p| p.status).collect()
}

fn schedule_event(deadline_in: Duration) -> LambdaEvent<EventBridgeEvent<Value>> {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../events/matcher-schedule.json"
    ))
    .unwrap();
    let payload: EventBridgeEvent<Value> = serde_json::from_str(&text).unwrap();
    assert_eq!(payload.detail_type, "Scheduled Event");
    let mut context = Context::default();
    context.request_id = "test-invocation".into();
    context.deadline = u64::try_from(
        (std::time::SystemTime::now() + deadline_in)
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis(),
    )
    .unwrap();
    LambdaEvent::new(payload, context)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_tick_pushes_exactly_the_match_found_json_to_every_connection() {
    let env = env("tick-once", "world1:3").await;
    env.queue("world1", "alice", &["c-alice-1", "c-alice-2"])
        .await;
    env.queue("world1", "bob", &["c-bob"]).await;
    env.queue("world1", "carol", &["c-carol"]).await;
    env.queue("world1", "dave", &["c-dave"]).await;

    let report = tick(&env.store, &env.pusher).await.unwrap();

    let formed = &report.worlds[0].formed;
    assert_eq!(formed.len(), 1);
    assert_eq!(formed[0].participants, ["alice", "bob", "carol"]);
    assert_eq!(report.worlds[0].queue_depth, 1, "dave still waits");
    assert_eq!(report.delivery.delivered, 1, "the match's one notification");
    let record = env.matched_record("alice").await;
    assert_eq!(&record, &formed[0]);
    let expected = json_of(&ServerMessage::match_found(record));
    assert_eq!(expected["type"], "MATCH_FOUND");
    for conn in ["c-alice-1", "c-alice-2", "c-bob", "c-carol"] {
        assert_eq!(
            env.server.delivered_to(conn),
            vec![expected.clone()],
            "{conn}"
        );
        assert_eq!(
            statuses(&env.server, conn),
            [200],
            "{conn} got exactly one push"
        );
    }
    assert!(env.server.posts_to("c-dave").is_empty());
    // Nothing is left to deliver: another tick pushes nothing.
    let again = tick(&env.store, &env.pusher).await.unwrap();
    assert_eq!(again.delivery, DeliveryReport::default());
    assert_eq!(env.server.posts().len(), 4);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_schedule_event_runs_the_loop_and_returns_before_the_deadline() {
    let env = env("handler", "world1:3").await;
    for p in ["p1", "p2", "p3"] {
        env.queue("world1", p, &[format!("c-{p}")]).await;
    }
    // Deadline in 3.5 s: the loop keeps 2 s free, so one 1 s tick fits.
    let event = schedule_event(Duration::from_millis(3500));
    let started = Instant::now();
    let deadline_ms = event.context.deadline;
    let result = handle_schedule(&env.store, &env.pusher, &NoEvents, event)
        .await
        .unwrap();
    let took = started.elapsed();
    assert!(
        took < Duration::from_millis(1500),
        "returned after {took:?}"
    );
    assert_eq!(result["ticks"], 1, "{result}");
    assert_eq!(result["matchesFormed"], 1);
    assert_eq!(result["playersMatched"], 3);
    assert_eq!(
        result["notificationsDelivered"], 1,
        "one notification per match"
    );
    assert_eq!(result["stop"], "deadline", "{result}");
    assert_eq!(result["invocationDeadlineMs"], deadline_ms);
    assert!(result.get("fallbackReason").is_none(), "{result}");
    let record = env.matched_record("p1").await;
    for p in ["p1", "p2", "p3"] {
        assert_eq!(
            env.server.delivered_to(&format!("c-{p}")),
            [json_of(&ServerMessage::match_found(record.clone()))]
        );
    }
    // The lease was released for the next invocation.
    let next = MatcherLoop::new(&env.store, &env.pusher);
    assert!(env
        .store
        .acquire_lease(next.lease_token(), LEASE_TTL)
        .await
        .unwrap());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expired_ticket_yields_ticket_expired() {
    let env = env("expiry", "quick:3:1").await;
    env.queue("quick", "erin", &["c-erin"]).await;
    let deliveries = eventually("TICKET_EXPIRED at c-erin", WAIT, || async {
        tick(&env.store, &env.pusher).await.unwrap();
        let delivered = env.server.delivered_to("c-erin");
        (!delivered.is_empty()).then_some(delivered)
    })
    .await;
    assert_eq!(
        deliveries,
        [json!({"type": "TICKET_EXPIRED", "worldType": "quick"})]
    );
    assert_eq!(
        deliveries[0],
        json_of(&ServerMessage::TicketExpired {
            world_type: shared::WorldName::parse("quick").unwrap()
        })
    );
    let status = env
        .store
        .player_status(&PlayerId::parse("erin").unwrap())
        .await
        .unwrap();
    assert_eq!(status, PlayerStatus::Idle);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gone_connection_is_removed_from_the_registry() {
    let env = env("gone", "world1:3").await;
    env.queue("world1", "a", &["c-a-old", "c-a-new"]).await;
    env.queue("world1", "b", &["c-b"]).await;
    env.queue("world1", "c", &["c-c"]).await;
    env.server.set_gone("c-a-old");
    env.server.set_gone("c-c");

    let report = tick(&env.store, &env.pusher).await.unwrap();

    assert_eq!(report.delivery.gone_connections, 2);
    assert_eq!(statuses(&env.server, "c-a-old"), [410]);
    assert_eq!(env.server.delivered_to("c-a-new").len(), 1);
    let conns = |p: &'static str| {
        let store = env.store.clone();
        async move {
            store
                .connections_of(&PlayerId::parse(p).unwrap())
                .await
                .unwrap()
        }
    };
    assert_eq!(conns("a").await, ["c-a-new"]);
    assert!(conns("c").await.is_empty(), "c's only connection is gone");
    // c could not be told (no connection left): kept for a reconnect.
    assert_eq!(report.delivery.delivered, 0);
    assert_eq!(report.delivery.retried, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn throttling_and_server_errors_are_retried_with_backoff_until_delivered() {
    let env = env("retry", "world1:3").await;
    for p in ["a", "b", "c"] {
        env.queue("world1", p, &[format!("c-{p}")]).await;
    }
    // The SDK retries once on its own, so 429+500 fail one outbox attempt.
    env.server.respond("c-c", [429, 500]);

    let first = tick(&env.store, &env.pusher).await.unwrap();
    // One notification for the match: a and b told, retried for c only.
    assert_eq!((first.delivery.delivered, first.delivery.retried), (0, 1));
    assert_eq!(statuses(&env.server, "c-c"), [429, 500]);

    let delivered = eventually("delivery to c-c after the backoff", WAIT, || async {
        tick(&env.store, &env.pusher).await.unwrap();
        let delivered = env.server.delivered_to("c-c");
        (!delivered.is_empty()).then_some(delivered)
    })
    .await;
    let record = env.matched_record("c").await;
    assert_eq!(delivered, [json_of(&ServerMessage::match_found(record))]);
    let posts = env.server.posts_to("c-c");
    assert_eq!(
        posts.iter().map(|p| p.status).collect::<Vec<_>>(),
        [429, 500, 200]
    );
    let waited = posts[2].received_at - posts[1].received_at;
    assert!(
        waited >= Duration::from_millis(250),
        "the outbox backs off before retrying (waited {waited:?})"
    );
    for p in ["c-a", "c-b"] {
        assert_eq!(statuses(&env.server, p), [200], "{p} is not pushed twice");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_matcher_that_died_before_pushing_is_completed_by_the_next() {
    let env = env("crash", "world1:3").await;
    for p in ["a", "b", "c", "d", "e", "f"] {
        env.queue("world1", p, &[format!("c-{p}")]).await;
    }
    // Matcher 1 forms the first match and dies before draining.
    let first = env
        .store
        .form_matches(&env.world("world1"), 1)
        .await
        .unwrap();
    assert_eq!(first.matches[0].participants, ["a", "b", "c"]);
    // Matcher 2 forms the second, claims its pushes and dies mid-delivery
    // (claimed, never settled).
    let second = env
        .store
        .form_matches(&env.world("world1"), 1)
        .await
        .unwrap();
    // The outbox entries announcing the second match, as the script wrote them.
    let queued: Vec<String> = env
        .store
        .command(
            redis::cmd("ZRANGE")
                .arg(env.store.keys().outbox())
                .arg(0)
                .arg(-1),
        )
        .await
        .unwrap();
    let ids: Vec<NotificationId> = queued
        .iter()
        .map(|raw| NotificationId::parse(raw).unwrap())
        .filter(|id| matches!(id.kind(), NotificationKind::MatchFound { match_id, .. } if *match_id == second.matches[0].match_id))
        .collect();
    let claimed = env
        .store
        .claim_notifications(
            Duration::from_millis(300),
            10,
            shared::store::YOUNG_CONNECTION,
            &ids,
        )
        .await
        .unwrap();
    assert_eq!(claimed.len(), 1, "one outbox entry per match");
    assert_eq!(claimed[0].targets.len(), 3);
    assert!(env.server.posts().is_empty());

    // A fresh matcher delivers both: the first at once, the second once
    // the dead matcher's claim has lapsed.
    eventually("every player told once", WAIT, || async {
        tick(&env.store, &env.pusher).await.unwrap();
        (env.server.posts().len() >= 6).then_some(())
    })
    .await;
    for (record, players) in [
        (&first.matches[0], ["a", "b", "c"]),
        (&second.matches[0], ["d", "e", "f"]),
    ] {
        let expected = json_of(&ServerMessage::match_found(record.clone()));
        for p in players {
            assert_eq!(
                env.server.delivered_to(&format!("c-{p}")),
                vec![expected.clone()]
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_matcher_loops_share_one_lease_and_never_double_match() {
    let env = env("two-loops", "world1:3").await;
    let players: Vec<String> = (0..30).map(|i| format!("p{i:02}")).collect();
    for p in &players {
        env.queue("world1", p, &[format!("c-{p}")]).await;
    }
    let deadline = Instant::now() + Duration::from_millis(1500);
    let period = Duration::from_millis(100);
    let (one, two) = tokio::join!(
        run_until(
            MatcherLoop::new(&env.store, &env.pusher),
            deadline,
            period,
            |_| {}
        ),
        run_until(
            MatcherLoop::new(&env.store, &env.pusher),
            deadline,
            period,
            |_| {}
        ),
    );
    let (leader, follower) = if one.ticks > 0 {
        (one, two)
    } else {
        (two, one)
    };
    assert!(
        leader.ticks > 0 && leader.ticks_without_lease == 0,
        "{leader:?}"
    );
    assert!(
        follower.ticks == 0 && follower.ticks_without_lease > 0,
        "{follower:?}"
    );
    assert_eq!(leader.matches_formed, 10);
    assert_no_double_match(&env, &players);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_ticks_without_the_lease_still_never_double_match() {
    let env = env("no-lease", "world1:3").await;
    let players: Vec<String> = (0..60).map(|i| format!("q{i:02}")).collect();
    // Players keep joining while four matchers tick at once.
    let joining = async {
        for p in &players {
            env.queue("world1", p, &[format!("c-{p}")]).await;
        }
    };
    let ticking = async {
        let mut formed = 0;
        for _ in 0..10 {
            let reports = tick_four_at_once(&env).await;
            formed += reports
                .iter()
                .map(|r| r.worlds[0].formed.len())
                .sum::<usize>();
        }
        formed
    };
    let ((), mut formed) = tokio::join!(joining, ticking);
    // Whatever is left complete after the joins is formed now.
    formed += tick(&env.store, &env.pusher).await.unwrap().worlds[0]
        .formed
        .len();
    assert_eq!(formed, 20);
    assert_no_double_match(&env, &players);
}

async fn tick_four_at_once(env: &Env) -> Vec<TickReport> {
    let t = || tick(&env.store, &env.pusher);
    let (a, b, c, d) = tokio::join!(t(), t(), t(), t());
    vec![a.unwrap(), b.unwrap(), c.unwrap(), d.unwrap()]
}

/// Every player is in exactly one match and told exactly once.
fn assert_no_double_match(env: &Env, players: &[String]) {
    let mut match_of: HashMap<String, String> = HashMap::new();
    let mut matches: HashMap<String, Vec<String>> = HashMap::new();
    for p in players {
        let delivered = env.server.delivered_to(&format!("c-{p}"));
        assert_eq!(delivered.len(), 1, "{p} got {delivered:?}");
        let message = &delivered[0];
        let id = message["matchId"].as_str().unwrap().to_owned();
        let participants: Vec<String> =
            serde_json::from_value(message["participants"].clone()).unwrap();
        assert!(participants.contains(p), "{p} is told about its own match");
        match_of.insert(p.clone(), id.clone());
        matches.insert(id, participants);
    }
    let mut seen = HashSet::new();
    for participants in matches.values() {
        assert_eq!(participants.len(), 3);
        for p in participants {
            assert!(seen.insert(p.clone()), "{p} is in two matches");
        }
    }
    assert_eq!(seen.len(), players.len());
    assert_eq!(
        env.server.posts().len(),
        players.len(),
        "no duplicate pushes"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redis_outage_fails_the_round_and_the_next_round_carries_on() {
    let mut env = env("outage", "world1:3").await;
    let (store, pusher) = (env.store.clone(), env.pusher.clone());
    let mut matcher = MatcherLoop::new(&store, &pusher);
    assert!(matches!(matcher.round().await, Round::Ticked(_)));

    env.redis.kill();
    let failed = matcher.round().await;
    assert!(
        matches!(&failed, Round::Failed(e) if e.is_unavailable()),
        "{failed:?}"
    );

    env.redis.restart(&[]);
    for p in ["a", "b", "c"] {
        env.queue("world1", p, &[format!("c-{p}")]).await;
    }
    // Poll with a deadline (the reconnect may take a round or two).
    let until = Instant::now() + WAIT;
    let report = loop {
        if let Round::Ticked(report) = matcher.round().await {
            break report;
        }
        assert!(Instant::now() < until, "no tick after Redis came back");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert_eq!(report.worlds[0].formed.len(), 1);
    assert_eq!(env.server.delivered_to("c-a").len(), 1);
    let summary = matcher.finish().await;
    assert_eq!(summary.ticks, 2);
    assert!(summary.ticks_failed >= 1, "{summary:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_run_loop_ticks_on_its_period_and_stops_before_the_deadline() {
    let env = env("deadline", "world1:3").await;
    let started = Instant::now();
    let deadline = started + Duration::from_millis(1250);
    let summary = run_until(
        MatcherLoop::new(&env.store, &env.pusher),
        deadline,
        Duration::from_millis(200),
        |_| {},
    )
    .await;
    let ended = Instant::now();
    assert!(
        ended < deadline,
        "ran {:?} past the deadline",
        ended - deadline
    );
    // Rounds at 0, 200, ..., 1000 ms; one at 1200 ms would not fit. A
    // round that overran (a loaded machine) shifts the rest, never adds one.
    assert!((4..=6).contains(&summary.ticks), "{summary:?}");
    assert_eq!(summary.ticks_failed + summary.ticks_without_lease, 0);
    assert!(ended - started >= Duration::from_millis(800));
    // A deadline already (nearly) reached runs nothing.
    let none = run_until(
        MatcherLoop::new(&env.store, &env.pusher),
        Instant::now() + Duration::from_millis(50),
        Duration::from_millis(200),
        |_| {},
    )
    .await;
    assert_eq!(none, RunSummary::default());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_tick_writes_one_emf_line_per_world() {
    let env = env("metrics", "world1:3,world2:2:1").await;
    for p in ["a", "b", "c", "d"] {
        env.queue("world1", p, &[format!("c-{p}")]).await;
    }
    env.queue("world2", "e", &["c-e"]).await;
    let report = eventually("e's ticket to expire", WAIT, || async {
        let report = tick(&env.store, &env.pusher).await.unwrap();
        (report.worlds[1].expired_tickets == 1).then_some(report)
    })
    .await;
    let mut out = Vec::new();
    write_metrics(&mut out, &report, 1_700_000_000_000).unwrap();
    let lines: Vec<Value> = String::from_utf8(out)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[0]["_aws"]["Timestamp"], 1_700_000_000_000u64);
    assert_eq!(
        lines[0]["_aws"]["CloudWatchMetrics"][0]["Namespace"],
        "Matchmaking"
    );
    let world1 = &lines[0];
    assert_eq!(world1["World"], "world1");
    // The match may have formed in an earlier round of the poll.
    assert_eq!(world1["QueueDepth"], 1, "d still waits");
    assert!(world1["OldestWaitMs"].as_u64().unwrap() < 60_000);
    assert_eq!(lines[1]["World"], "world2");
    assert_eq!(lines[1]["ExpiredTickets"], 1);
    assert_eq!(lines[1]["QueueDepth"], 0);

    // Once everything is matched, expired and delivered, a tick is idle and
    // writes nothing (no metric hours for an idle deployment).
    let idle = eventually("an idle tick", WAIT, || async {
        env.store
            .leave(&env.world("world1"), &PlayerId::parse("d").unwrap())
            .await
            .unwrap();
        let report = tick(&env.store, &env.pusher).await.unwrap();
        report.is_idle().then_some(report)
    })
    .await;
    let mut out = Vec::new();
    write_metrics(&mut out, &idle, 1_700_000_000_000).unwrap();
    assert!(out.is_empty(), "{}", String::from_utf8_lossy(&out));
}

#[test]
fn the_loop_deadline_keeps_the_margin() {
    let now_ms = u64::try_from(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis(),
    )
    .unwrap();
    let deadline = loop_deadline(now_ms + 60_000, DEADLINE_MARGIN);
    let left = deadline - Instant::now();
    assert!(
        left <= Duration::from_secs(58) && left > Duration::from_secs(57),
        "{left:?}"
    );
    assert!(loop_deadline(0, DEADLINE_MARGIN) <= Instant::now());
}

fn unix_ms(at: std::time::SystemTime) -> u64 {
    u64::try_from(
        at.duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis(),
    )
    .unwrap()
}

#[test]
fn only_plausible_deadlines_are_used() {
    let now = 1_741_608_000_000;
    let margin = DEADLINE_MARGIN;
    assert_eq!(
        plan_loop(now + 60_000, now, margin),
        LoopPlan::UntilDeadline(Duration::from_secs(58))
    );
    // Closer than the margin: a real deadline with no time left.
    assert_eq!(
        plan_loop(now + 1_500, now, margin),
        LoopPlan::UntilDeadline(Duration::ZERO)
    );
    // Exactly the longest invocation Lambda allows is still Lambda's.
    assert_eq!(
        plan_loop(now + 900_000, now, margin),
        LoopPlan::UntilDeadline(Duration::from_secs(898))
    );
    // cargo lambda watch sends 600000 (1970); others send 0 or a clock of their own.
    for past in [600_000, 0, now - 1, now] {
        assert_eq!(
            plan_loop(past, now, margin),
            LoopPlan::Fallback(DEADLINE_IN_THE_PAST),
            "{past}"
        );
    }
    for far in [now + 900_001, now + 86_400_000, u64::MAX] {
        assert_eq!(
            plan_loop(far, now, margin),
            LoopPlan::Fallback(DEADLINE_TOO_FAR),
            "{far}"
        );
    }
}

/// An emulator's deadline (in the past, or a day away) runs one tick and
/// says so, instead of returning at once with 0 ticks or running for a day.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_implausible_deadline_runs_one_tick_and_says_why() {
    let env = env("fallback", "world1:3").await;
    for p in ["p1", "p2", "p3"] {
        env.queue("world1", p, &[format!("c-{p}")]).await;
    }
    let day_away = unix_ms(std::time::SystemTime::now() + Duration::from_secs(86_400));
    for (deadline_ms, reason) in [
        (600_000, DEADLINE_IN_THE_PAST),
        (day_away, DEADLINE_TOO_FAR),
    ] {
        let mut event = schedule_event(Duration::ZERO);
        event.context.deadline = deadline_ms;
        let started = Instant::now();
        let result = handle_schedule(&env.store, &env.pusher, &NoEvents, event)
            .await
            .unwrap();
        assert!(
            started.elapsed() < FALLBACK_TICK_LIMIT,
            "took {:?}",
            started.elapsed()
        );
        assert_eq!(result["stop"], "fallback-deadline", "{result}");
        assert_eq!(result["fallbackReason"], reason, "{result}");
        assert_eq!(result["invocationDeadlineMs"], deadline_ms, "{result}");
        assert_eq!(result["ticks"], 1, "{result}");
        assert_eq!(result["ticksFailed"], 0, "{result}");
    }
    // The first run formed the match and delivered it; the lease was
    // released after each run (the second one ticked too).
    assert_eq!(
        env.server.delivered_to("c-p1").len(),
        1,
        "{:?}",
        env.server.posts()
    );
    let typed = run_invocation(&env.store, &env.pusher, &NoEvents, 0).await;
    assert_eq!(typed.stop, StopReason::FallbackDeadline);
    assert_eq!(typed.summary.ticks, 1);
    assert_eq!(typed.to_json()["stop"], "fallback-deadline");
}

/// The fallback's one tick is cut off by its limit like a loop's last tick.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_fallback_tick_is_bounded() {
    let env = env("fallback-bounded", "world1:3").await;
    // A warm connection first, so the paused server stalls a command.
    assert_eq!(
        run_one_tick(&env.store, &env.pusher, &NoEvents, WAIT, |_| {})
            .await
            .ticks,
        1
    );
    env.redis.pause();
    let started = Instant::now();
    let summary = run_one_tick(
        &env.store,
        &env.pusher,
        &NoEvents,
        Duration::from_millis(300),
        |_| {},
    )
    .await;
    let took = started.elapsed();
    env.redis.resume();
    assert_eq!(summary.ticks, 0, "{summary:?}");
    assert_eq!(summary.ticks_failed, 1, "{summary:?}");
    // The cut-off (or the 500 ms Redis timeout, whichever fires first) plus
    // releasing the lease (bounded by the same timeout).
    assert!(took < Duration::from_secs(5), "took {took:?}");
}
