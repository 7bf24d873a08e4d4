//! After "match found", through the local stack with real sockets: the
//! match events the EventBridge stand-in receives (through the deployed
//! matcher's `EventBridgeSink`), the demo allocator's assignments as every
//! participant hears them, and results moving ratings once — on a
//! standalone Redis and on a 3-master Redis Cluster.

mod support;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use integration_tests::{eventually, RedisCluster};
use local_stack::event_bus::{ReceivedEvent, LOCAL_BUS};
use local_stack::LocalStack;
use serde_json::{json, Value};
use support::{call, http, server_rules, server_token, stack_on, Player};

const WAIT: Duration = Duration::from_secs(20);

/// The match events the stand-in received for `id`.
fn events_of(stack: &LocalStack, id: &str) -> Vec<ReceivedEvent> {
    stack
        .events
        .received()
        .into_iter()
        .filter(|e| e.match_id() == Some(id))
        .collect()
}

async fn match_id_of(player: &Player) -> String {
    let found = player.heard("MATCH_FOUND", 1, WAIT).await;
    found[0]["matchId"].as_str().expect("matchId").to_owned()
}

// ---------------------------------------------------------------------------
// Assignments: every participant hears their own, a late socket too.
// ---------------------------------------------------------------------------

async fn every_participant_hears_the_assignment_with_their_own_token(
    cluster: Option<&RedisCluster>,
) {
    let stack = stack_on(
        &server_rules(json!([{"name": "trio", "teamSize": 3}])),
        cluster,
        &[],
    )
    .await;
    assert!(stack.demo_allocator, "on by default with a server scope");
    let a = Player::connect(&stack, "ann").await;
    let b = Player::connect(&stack, "ben").await;
    // cat has no socket yet: she connects after the assignment.
    let cat_token = support::token(&stack, "cat").await;
    assert_eq!(a.join(&stack, "trio").await.0, 200);
    assert_eq!(b.join(&stack, "trio").await.0, 200);
    let (status, body) = call(
        &stack,
        "POST",
        "/v1/matching/join",
        Some(&cat_token),
        Some(json!({"worldType": "trio"})),
    )
    .await;
    assert_eq!(
        (status, &body["data"]["status"]),
        (200, &json!("MATCHED")),
        "{body}"
    );
    let id = body["data"]["match"]["matchId"]
        .as_str()
        .unwrap()
        .to_owned();

    // The allocator learnt of the match from the stand-in and assigned it.
    let heard_a = a.heard("MATCH_ASSIGNED", 1, WAIT).await;
    let heard_b = b.heard("MATCH_ASSIGNED", 1, WAIT).await;
    assert!(!events_of(&stack, &id).is_empty(), "the event came first");
    let seats = stack
        .game_server
        .tokens_of(&id)
        .expect("the allocator seated the match");
    assert_eq!(
        seats.keys().map(String::as_str).collect::<Vec<_>>(),
        ["ann", "ben", "cat"]
    );
    let distinct: std::collections::BTreeSet<&String> = seats.values().collect();
    assert_eq!(distinct.len(), 3, "a token per player");

    // A socket that opens after the assignment hears it too.
    let c = Player::connect(&stack, "cat").await;
    let heard_c = c.heard("MATCH_ASSIGNED", 1, WAIT).await;

    for (player, heard) in [("ann", &heard_a), ("ben", &heard_b), ("cat", &heard_c)] {
        let expected = json!({
            "connection": stack.game_server_addr,
            "properties": {"allocator": "local-demo", "worldType": "trio"},
            "token": seats[player],
        });
        for message in heard.iter() {
            assert_eq!(message["matchId"], id.as_str(), "{message}");
            assert_eq!(message["assignment"], expected, "{player}: {message}");
            let text = message.to_string();
            for (other, token) in &seats {
                assert_eq!(
                    text.contains(token.as_str()),
                    other == player,
                    "{player} sees only their own token: {text}"
                );
            }
        }
        // The game server on that connection admits the player with it.
        let url = format!(
            "http://{}/join?match={id}&token={}",
            stack.game_server_addr, seats[player]
        );
        let res = http().get(url).send().await.expect("game server");
        assert_eq!(res.status(), 200);
        let body: Value = res.json().await.unwrap();
        assert_eq!(body["playerId"], player);
    }
    let wrong = format!(
        "http://{}/join?match={id}&token=not-a-seat",
        stack.game_server_addr
    );
    assert_eq!(http().get(wrong).send().await.unwrap().status(), 403);

    // The record shows the assignment to its participants, their seat only.
    let (status, body) = call(
        &stack,
        "GET",
        &format!("/v1/matching/matches/{id}"),
        Some(&a.token),
        None,
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert!(
        body.to_string().contains(&seats["ann"]) && !body.to_string().contains(&seats["ben"]),
        "{body}"
    );

    // A second, different assignment is refused; the same one again is not.
    let server = server_token(&stack).await;
    let path = format!("/v1/matching/matches/{id}/assignment");
    let (status, body) = call(
        &stack,
        "POST",
        &path,
        Some(&server),
        Some(json!({"connection": "203.0.113.9:1"})),
    )
    .await;
    assert_eq!(
        (status, &body["data"]["error"]),
        (409, &json!("ASSIGNMENT_CONFLICT")),
        "{body}"
    );
    let (status, _) = call(
        &stack,
        "POST",
        &path,
        Some(&a.token),
        Some(json!({"connection": "203.0.113.9:1"})),
    )
    .await;
    assert_eq!(status, 403, "a player has no server scope");
    // Nobody heard anything else.
    for p in [&a, &b, &c] {
        let copies = p.messages_of_type("MATCH_ASSIGNED");
        assert!(copies.windows(2).all(|w| w[0] == w[1]), "{copies:?}");
    }
    stack.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_participant_hears_the_assignment_with_their_own_token_standalone() {
    every_participant_hears_the_assignment_with_their_own_token(None).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_participant_hears_the_assignment_with_their_own_token_cluster() {
    let cluster = RedisCluster::start();
    every_participant_hears_the_assignment_with_their_own_token(Some(&cluster)).await;
}

/// With the demo allocator switched off, the match events still arrive and
/// nobody is assigned.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_demo_allocator_can_be_switched_off() {
    let stack = stack_on(
        &server_rules(json!([{"name": "duo", "teamSize": 2}])),
        None,
        &[("MM_DEMO_ALLOCATOR", "false")],
    )
    .await;
    assert!(!stack.demo_allocator);
    let a = Player::connect(&stack, "a").await;
    let b = Player::connect(&stack, "b").await;
    a.join(&stack, "duo").await;
    b.join(&stack, "duo").await;
    let id = match_id_of(&a).await;
    eventually("the match event", WAIT, || async {
        (!events_of(&stack, &id).is_empty()).then_some(())
    })
    .await;
    // Published and settled: an allocator following the stand-in would
    // have had the event before the matcher heard back.
    eventually("the outbox to settle", WAIT, || async {
        (integration_tests::outbox_len(&stack.store).await == 0).then_some(())
    })
    .await;
    let (status, body) = call(
        &stack,
        "GET",
        &format!("/v1/matching/matches/{id}"),
        Some(&a.token),
        None,
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert!(body["data"].get("assignment").is_none(), "{body}");
    assert!(a.messages_of_type("MATCH_ASSIGNED").is_empty());
    assert!(stack.game_server.tokens_of(&id).is_none());
    stack.stop().await;
}

// ---------------------------------------------------------------------------
// Match events: at least once, even when the matcher dies.
// ---------------------------------------------------------------------------

async fn form_duo(stack: &LocalStack, x: &Player, y: &Player) -> String {
    assert_eq!(x.join(stack, "duo").await.0, 200);
    let (status, body) = y.join(stack, "duo").await;
    assert_eq!(
        (status, &body["data"]["status"]),
        (200, &json!("MATCHED")),
        "{body}"
    );
    body["data"]["match"]["matchId"]
        .as_str()
        .unwrap()
        .to_owned()
}

async fn match_events_arrive_at_least_once_when_the_matcher_dies(cluster: Option<&RedisCluster>) {
    let stack = stack_on(
        &server_rules(json!([{"name": "duo", "teamSize": 2}])),
        cluster,
        &[("MM_DEMO_ALLOCATOR", "false")],
    )
    .await;
    let players: Vec<Player> = futures_util::future::join_all(
        ["p1", "p2", "p3", "p4", "p5", "p6"].map(|p| Player::connect(&stack, p)),
    )
    .await;

    // 1. Killed between formation and emission: the matcher is down when
    // the match forms, and the publisher that claims the event dies
    // before publishing (its claim, with a short lease, is never settled).
    stack.crash_matcher().await;
    let first = form_duo(&stack, &players[0], &players[1]).await;
    let lease = Duration::from_secs(2);
    let claimed = stack
        .store
        .claim_notifications(lease, 100, shared::store::YOUNG_CONNECTION, &[])
        .await
        .unwrap();
    assert!(
        claimed
            .iter()
            .any(|e| e.event_pending && e.id.to_string() == format!("M|{first}")),
        "the event was still to send: {claimed:?}"
    );
    let claimed_at = Instant::now();
    stack.restart_matcher();
    eventually("the first match's event", WAIT, || async {
        (!events_of(&stack, &first).is_empty()).then_some(())
    })
    .await;
    assert!(
        claimed_at.elapsed() + Duration::from_millis(300) >= lease,
        "published while the dead publisher's claim still held"
    );

    // 2. Killed in the middle of PutEvents: the stand-in took the entry but
    // the matcher dies before hearing so; the next matcher publishes it
    // again once the claim lapses (a duplicate, the same entry).
    stack.events.stall(Duration::from_secs(30));
    let second = form_duo(&stack, &players[2], &players[3]).await;
    eventually("the second event in flight", WAIT, || async {
        (!events_of(&stack, &second).is_empty()).then_some(())
    })
    .await;
    stack.crash_matcher().await;
    stack.events.stall(Duration::ZERO);
    stack.restart_matcher();
    eventually(
        "the second event published again after the claim lease",
        shared::store::CLAIM_LEASE + WAIT,
        || async { (events_of(&stack, &second).len() >= 2).then_some(()) },
    )
    .await;

    // 3. EventBridge refuses the entry (InternalFailure): retried until taken.
    let calls_before = stack.events.calls();
    stack.events.refuse_next(1);
    let third = form_duo(&stack, &players[4], &players[5]).await;
    eventually("the third event after its refusal", WAIT, || async {
        (!events_of(&stack, &third).is_empty()).then_some(())
    })
    .await;
    assert!(
        stack.events.calls() >= calls_before + 2,
        "refused, then sent again"
    );

    // Every match: at least one event, copies identical but for the
    // stand-in's own event id and receipt time, and the event is the match.
    for (id, pair) in [
        (&first, ["p1", "p2"]),
        (&second, ["p3", "p4"]),
        (&third, ["p5", "p6"]),
    ] {
        let copies = events_of(&stack, id);
        assert!(!copies.is_empty(), "{id}: no event");
        assert!(
            copies.windows(2).all(|w| w[0].as_sent() == w[1].as_sent()),
            "{id}: duplicates differ: {copies:?}"
        );
        let event = &copies[0];
        assert_eq!(event.event_bus_name.as_deref(), Some(LOCAL_BUS));
        assert_eq!(event.source, "matchmaking");
        assert_eq!(event.detail_type, "MatchFormed");
        assert_eq!(event.detail["worldType"], "duo");
        let mut seated: Vec<&str> = event.detail["teams"][0]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["playerId"].as_str().unwrap())
            .collect();
        seated.sort_unstable();
        assert_eq!(seated, pair, "{}", event.detail);
        let matched_at = event.detail["matchedAt"].as_f64().unwrap();
        assert!((event.time.unwrap() - matched_at / 1000.0).abs() < 0.001);
    }
    assert_eq!(
        events_of(&stack, &second).len(),
        2,
        "one duplicate, no storm"
    );

    // What tests and tools read over HTTP is the same list.
    let listed: Value = http()
        .get(format!("{}/dev/events", stack.http_url))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let received = stack.events.received();
    assert_eq!(listed["count"], received.len());
    assert_eq!(listed["events"], serde_json::to_value(&received).unwrap());
    let later: Value = http()
        .get(format!("{}/dev/events?since=1", stack.http_url))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        later["events"].as_array().unwrap().len(),
        received.len() - 1
    );
    stack.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn match_events_arrive_at_least_once_when_the_matcher_dies_standalone() {
    match_events_arrive_at_least_once_when_the_matcher_dies(None).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn match_events_arrive_at_least_once_when_the_matcher_dies_cluster() {
    let cluster = RedisCluster::start();
    match_events_arrive_at_least_once_when_the_matcher_dies(Some(&cluster)).await;
}

// ---------------------------------------------------------------------------
// Results: every rating moves once.
// ---------------------------------------------------------------------------

/// `<value> <mean> <uncertainty> <games>` of each player in `world`.
async fn ratings(stack: &LocalStack, world: &str, players: &[&str]) -> BTreeMap<String, String> {
    let fields: Vec<String> = players.iter().map(|p| format!("{world}|{p}")).collect();
    let entries = stack.store.rating_entries(&fields).await.unwrap();
    players
        .iter()
        .zip(entries)
        .map(|(p, e)| ((*p).to_owned(), e.unwrap_or_default()))
        .collect()
}

fn games(entry: &str) -> u64 {
    entry
        .split(' ')
        .nth(3)
        .and_then(|g| g.parse().ok())
        .unwrap_or(0)
}

async fn rated_pair(stack: &LocalStack, x: &str, y: &str) -> (Player, Player, String) {
    let px = Player::connect(stack, x).await;
    let py = Player::connect(stack, y).await;
    for p in [&px, &py] {
        let (status, body) = p.join(stack, "ranked").await;
        assert_eq!(status, 200, "{body}");
    }
    let id = match_id_of(&px).await;
    (px, py, id)
}

async fn a_result_moves_every_rating_once(cluster: Option<&RedisCluster>) {
    let stack = stack_on(
        &server_rules(json!([{"name": "ranked", "teamSize": 2, "mode": "rating",
                       "rating": {"baseWindow": 500, "widenPerSecond": 10, "maxWindow": 1000, "relaxAfterSeconds": 60}}])),
        cluster,
        &[("MM_DEMO_ALLOCATOR", "false")],
    )
    .await;
    let server = server_token(&stack).await;
    let (a, b, id) = rated_pair(&stack, "a", "b").await;
    let before = ratings(&stack, "ranked", &["a", "b"]).await;
    let path = format!("/v1/matching/matches/{id}/result");
    let report = json!({"playerRanks": {"a": 1, "b": 2}});

    let (status, body) = call(&stack, "POST", &path, Some(&server), Some(report.clone())).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["data"]["changed"], true, "{body}");
    let after = ratings(&stack, "ranked", &["a", "b"]).await;
    for p in ["a", "b"] {
        assert_eq!(games(&after[p]), games(&before[p]) + 1, "{p}: {after:?}");
    }
    let value = |entry: &str| entry.split(' ').next().unwrap().parse::<f64>().unwrap();
    assert!(
        value(&after["a"]) > value(&after["b"]),
        "the winner gains: {after:?}"
    );
    // Each player hears their own new rating.
    for (p, player) in [("a", &a), ("b", &b)] {
        let result = player.heard("MATCH_RESULT", 1, WAIT).await;
        let after_value = result[0]["rating"]["after"].as_f64().unwrap();
        assert!(
            (after_value - value(&after[p])).abs() < 1e-6,
            "{p}: {result:?}"
        );
    }

    // The same report again: 200, nothing changes; another: 409, nothing changes.
    let (status, body) = call(&stack, "POST", &path, Some(&server), Some(report)).await;
    assert_eq!(
        (status, &body["data"]["changed"]),
        (200, &json!(false)),
        "{body}"
    );
    let (status, body) = call(
        &stack,
        "POST",
        &path,
        Some(&server),
        Some(json!({"playerRanks": {"a": 2, "b": 1}})),
    )
    .await;
    assert_eq!(
        (status, &body["data"]["error"]),
        (409, &json!("RESULT_CONFLICT")),
        "{body}"
    );
    // Without the server scope: 403, nothing changes.
    let (status, _) = call(
        &stack,
        "POST",
        &path,
        Some(&a.token),
        Some(json!({"playerRanks": {"a": 1, "b": 2}})),
    )
    .await;
    assert_eq!(status, 403);
    assert_eq!(ratings(&stack, "ranked", &["a", "b"]).await, after);

    // Two game servers report the same result at once: it applies once.
    let (_c, _d, second) = rated_pair(&stack, "c", "d").await;
    let before = ratings(&stack, "ranked", &["c", "d"]).await;
    let path = format!("/v1/matching/matches/{second}/result");
    let report = json!({"playerRanks": {"c": 2, "d": 1}});
    let ((s1, b1), (s2, b2)) = tokio::join!(
        call(&stack, "POST", &path, Some(&server), Some(report.clone())),
        call(&stack, "POST", &path, Some(&server), Some(report.clone())),
    );
    assert_eq!((s1, s2), (200, 200), "{b1} {b2}");
    let changed = [&b1, &b2]
        .iter()
        .filter(|b| b["data"]["changed"] == true)
        .count();
    assert_eq!(changed, 1, "one report applied: {b1} {b2}");
    let after = ratings(&stack, "ranked", &["c", "d"]).await;
    for p in ["c", "d"] {
        assert_eq!(games(&after[p]), games(&before[p]) + 1, "{p}: {after:?}");
    }
    // And a different report racing the first: one wins, the other is 409.
    let (_e, _f, third) = rated_pair(&stack, "e", "f").await;
    let path = format!("/v1/matching/matches/{third}/result");
    let ((s1, _), (s2, _)) = tokio::join!(
        call(
            &stack,
            "POST",
            &path,
            Some(&server),
            Some(json!({"playerRanks": {"e": 1, "f": 2}}))
        ),
        call(
            &stack,
            "POST",
            &path,
            Some(&server),
            Some(json!({"playerRanks": {"e": 2, "f": 1}}))
        ),
    );
    let mut statuses = [s1, s2];
    statuses.sort_unstable();
    assert_eq!(statuses, [200, 409]);
    let after = ratings(&stack, "ranked", &["e", "f"]).await;
    assert!(after.values().all(|e| games(e) == 1), "{after:?}");
    stack.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_result_moves_every_rating_once_standalone() {
    a_result_moves_every_rating_once(None).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_result_moves_every_rating_once_cluster() {
    let cluster = RedisCluster::start();
    a_result_moves_every_rating_once(Some(&cluster)).await;
}
