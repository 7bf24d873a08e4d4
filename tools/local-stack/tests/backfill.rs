//! Backfill through the local stack with real sockets, on a standalone
//! Redis and on a 3-master Redis Cluster: a running match's open seat is
//! taken before a new match forms from the same waiting players, a party
//! too large for the open seats is passed over, two requests at once leave
//! one backfill, a lapsed backfill gives its proposed player back their
//! place, and the server sees it all at `GET /v1/matching/matches/{id}`.

mod support;

use std::time::Duration;

use integration_tests::{eventually, RedisCluster};
use local_stack::LocalStack;
use serde_json::{json, Value};
use support::{call, server_rules, server_token, stack_on, Player};

const WAIT: Duration = Duration::from_secs(20);

/// Posts a backfill for match `id` with its current `teams`.
async fn request(stack: &LocalStack, server: &str, id: &str, teams: Value) -> (u16, Value) {
    call(
        stack,
        "POST",
        &format!("/v1/matching/matches/{id}/backfill"),
        Some(server),
        Some(json!({ "teams": teams })),
    )
    .await
}

/// The match as the server sees it.
async fn server_view(stack: &LocalStack, server: &str, id: &str) -> Value {
    let (status, body) = call(
        stack,
        "GET",
        &format!("/v1/matching/matches/{id}"),
        Some(server),
        None,
    )
    .await;
    assert_eq!(status, 200, "{body}");
    body["data"].clone()
}

/// Connects `names` and forms one match of them, waiting until the demo
/// allocator assigned it; returns its id, its teams and the players.
async fn running_match(
    stack: &LocalStack,
    world: &str,
    names: &[&str],
) -> (String, Vec<Vec<String>>, Vec<Player>) {
    let mut players = Vec::new();
    for name in names {
        let p = Player::connect(stack, name).await;
        assert_eq!(p.join(stack, world).await.0, 200);
        players.push(p);
    }
    let assigned = players[0].heard("MATCH_ASSIGNED", 1, WAIT).await;
    let id = assigned[0]["matchId"].as_str().unwrap().to_owned();
    let teams: Vec<Vec<String>> = match assigned[0].get("teams") {
        Some(t) => serde_json::from_value(t.clone()).unwrap(),
        None => vec![names.iter().map(|n| n.to_string()).collect()],
    };
    (id, teams, players)
}

fn queued_position(status: &Value) -> Option<u64> {
    (status["status"] == "QUEUED").then(|| status["position"].as_u64().unwrap())
}

// ---------------------------------------------------------------------------
// Priority: an open seat is filled before a new match forms.
// ---------------------------------------------------------------------------

async fn a_backfill_is_served_before_a_new_match_forms(cluster: Option<&RedisCluster>) {
    // Instant matching off: the four newcomers would make a 2 x 2 match at
    // the matcher's next tick, were the backfill not served first.
    let stack = stack_on(
        &server_rules(json!([{"name": "squad", "teamSize": 2, "teams": 2, "maxPartySize": 2}])),
        cluster,
        &[("MM_INSTANT_MATCH", "false")],
    )
    .await;
    let server = server_token(&stack).await;
    let (id, teams, _first) = running_match(&stack, "squad", &["a1", "a2", "a3", "a4"]).await;
    let assignment = server_view(&stack, &server, &id).await["assignment"].clone();
    assert!(assignment.is_object(), "the demo allocator assigned it");

    // The matcher stops; four players queue; one seat opens.
    stack.crash_matcher().await;
    let mut newcomers = Vec::new();
    for name in ["n1", "n2", "n3", "n4"] {
        let p = Player::connect(&stack, name).await;
        assert_eq!(p.join(&stack, "squad").await.0, 200);
        newcomers.push(p);
    }
    let (status, body) = request(
        &stack,
        &server,
        &id,
        json!([[teams[0][0]], [teams[1][0], teams[1][1]]]),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["data"]["backfill"]["openSeats"], json!([1, 0]));
    let (_, qs) = call(
        &stack,
        "GET",
        "/v1/matching/queue-status/squad",
        Some(&newcomers[0].token),
        None,
    )
    .await;
    assert_eq!(
        (&qs["data"]["waiting"], &qs["data"]["openBackfills"]),
        (&json!(4), &json!(1)),
        "a backfill is counted apart: {qs}"
    );

    // The matcher's next tick serves the backfill first: the oldest
    // newcomer takes the seat, and the three left make no match.
    stack.restart_matcher();
    let found = newcomers[0].heard("MATCH_FOUND", 1, WAIT).await;
    assert_eq!(found[0]["matchId"], id.as_str(), "{}", found[0]);
    assert_eq!(found[0]["backfill"], true, "{}", found[0]);
    assert!(
        found[0]["teams"][0]
            .as_array()
            .unwrap()
            .contains(&json!("n1")),
        "n1 sits in the team with the open seat: {}",
        found[0]
    );
    let seat = newcomers[0].heard("MATCH_ASSIGNED", 1, WAIT).await;
    assert_eq!(seat[0]["matchId"], id.as_str());
    assert_eq!(
        seat[0]["assignment"]["connection"], assignment["connection"],
        "the newcomer hears the match's server at once"
    );
    // The fill is on record, and the server sees it.
    let view = server_view(&stack, &server, &id).await;
    assert!(
        view["match"]["participants"]
            .as_array()
            .unwrap()
            .contains(&json!("n1")),
        "{view}"
    );
    assert!(view.get("backfill").is_none(), "filled, so ended: {view}");
    eventually("the BackfillFilled event", WAIT, || async {
        stack
            .events
            .received()
            .iter()
            .any(|e| e.detail_type == "BackfillFilled" && e.match_id() == Some(id.as_str()))
            .then_some(())
    })
    .await;
    // Two more whole ticks: nobody else was matched.
    assert!(stack.ticks_pass(3, WAIT).await, "the matcher ticks");
    for (p, position) in newcomers[1..].iter().zip(1..) {
        assert!(p.messages_of_type("MATCH_FOUND").is_empty(), "{}", p.id);
        assert_eq!(
            queued_position(&p.my_status(&stack).await),
            Some(position),
            "{} keeps its place",
            p.id
        );
    }
    stack.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_backfill_is_served_before_a_new_match_forms_standalone() {
    a_backfill_is_served_before_a_new_match_forms(None).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_backfill_is_served_before_a_new_match_forms_cluster() {
    let cluster = RedisCluster::start();
    a_backfill_is_served_before_a_new_match_forms(Some(&cluster)).await;
}

// ---------------------------------------------------------------------------
// Parties: never split, never seated where they do not fit whole.
// Concurrency: two requests at once leave one backfill.
// ---------------------------------------------------------------------------

async fn a_party_too_large_for_the_open_seat_is_passed_over(cluster: Option<&RedisCluster>) {
    let stack = stack_on(
        &server_rules(json!([{"name": "squad", "teamSize": 2, "teams": 2, "maxPartySize": 2}])),
        cluster,
        &[],
    )
    .await;
    let server = server_token(&stack).await;
    let (id, teams, _first) = running_match(&stack, "squad", &["a1", "a2", "a3", "a4"]).await;

    // Two requests at once: exactly one backfill stays, the other replaced.
    let one = json!([[teams[0][0]], [teams[1][0], teams[1][1]]]);
    let two = json!([[teams[0][0], teams[0][1]], [teams[1][0]]]);
    let (x, y) = tokio::join!(
        request(&stack, &server, &id, one.clone()),
        request(&stack, &server, &id, two)
    );
    assert_eq!((x.0, y.0), (200, 200), "{x:?} {y:?}");
    let replaced = [&x.1, &y.1]
        .iter()
        .filter(|b| b["data"]["replaced"] == true)
        .count();
    assert_eq!(replaced, 1, "the second replaced the first: {x:?} {y:?}");
    let view = server_view(&stack, &server, &id).await;
    let winner = if x.1["data"]["replaced"] == true {
        &x.1
    } else {
        &y.1
    };
    assert_eq!(
        view["backfill"], winner["data"]["backfill"],
        "the one that stays is the later one"
    );
    let (_, qs) = call(
        &stack,
        "GET",
        "/v1/matching/queue-status/squad",
        Some(&server),
        None,
    )
    .await;
    assert_eq!(qs["data"]["openBackfills"], 1, "{qs}");

    // Settle on one open seat in team 1, then queue a duo before a solo.
    let (status, body) = request(&stack, &server, &id, one).await;
    assert_eq!(
        (status, &body["data"]["backfill"]["openSeats"]),
        (200, &json!([1, 0])),
        "{body}"
    );
    let ana = Player::connect(&stack, "ana").await;
    let ben = Player::connect(&stack, "ben").await;
    let (code, body) = call(
        &stack,
        "POST",
        "/v1/parties",
        Some(&ana.token),
        Some(json!({"worldType": "squad", "members": ["ben"]})),
    )
    .await;
    assert_eq!(code, 201, "{body}");
    let party = body["data"]["party"]["partyId"]
        .as_str()
        .unwrap()
        .to_owned();
    let (code, body) = call(
        &stack,
        "POST",
        &format!("/v1/parties/{party}/join"),
        Some(&ben.token),
        None,
    )
    .await;
    assert_eq!((code, &body["data"]["status"]), (200, &json!("QUEUED")));
    assert!(stack.ticks_pass(3, WAIT).await, "the matcher ticks");
    assert_eq!(
        queued_position(&ana.my_status(&stack).await),
        Some(1),
        "the duo does not fit one seat and waits"
    );
    let solo = Player::connect(&stack, "sol").await;
    let (code, body) = solo.join(&stack, "squad").await;
    assert_eq!(code, 200, "{body}");
    let found = solo.heard("MATCH_FOUND", 1, WAIT).await;
    assert_eq!(
        (&found[0]["matchId"], &found[0]["backfill"]),
        (&json!(id), &json!(true)),
        "{}",
        found[0]
    );
    for p in [&ana, &ben] {
        assert!(p.messages_of_type("MATCH_FOUND").is_empty(), "{}", p.id);
    }
    assert_eq!(queued_position(&ben.my_status(&stack).await), Some(1));
    stack.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_party_too_large_for_the_open_seat_is_passed_over_standalone() {
    a_party_too_large_for_the_open_seat_is_passed_over(None).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_party_too_large_for_the_open_seat_is_passed_over_cluster() {
    let cluster = RedisCluster::start();
    a_party_too_large_for_the_open_seat_is_passed_over(Some(&cluster)).await;
}

// ---------------------------------------------------------------------------
// Ready checks and keep-alives: only the newcomer is asked; a backfill that
// lapses gives them back their place.
// ---------------------------------------------------------------------------

async fn a_lapsed_backfill_returns_its_proposed_player_to_their_place(
    cluster: Option<&RedisCluster>,
) {
    let stack = stack_on(
        &server_rules(json!([{
            "name": "quad", "teamSize": 4,
            "readyCheck": {"acceptSeconds": 60, "declineCooldownSeconds": 1}
        }])),
        cluster,
        &[("MM_BACKFILL_KEEPALIVE_SECS", "2")],
    )
    .await;
    let server = server_token(&stack).await;
    let names = ["q1", "q2", "q3", "q4"];
    let mut first = Vec::new();
    for name in names {
        let p = Player::connect(&stack, name).await;
        assert_eq!(p.join(&stack, "quad").await.0, 200);
        first.push(p);
    }
    let proposal = first[0].heard("MATCH_PROPOSED", 1, WAIT).await[0]["matchId"]
        .as_str()
        .unwrap()
        .to_owned();
    for p in &first {
        let (code, body) = call(
            &stack,
            "POST",
            "/v1/matching/accept",
            Some(&p.token),
            Some(json!({"matchId": proposal, "accept": true})),
        )
        .await;
        assert_eq!(code, 200, "{body}");
    }
    let id = first[0].heard("MATCH_ASSIGNED", 1, WAIT).await[0]["matchId"]
        .as_str()
        .unwrap()
        .to_owned();

    // Three wait; the backfill proposes the oldest to its one seat.
    let mut waiting = Vec::new();
    for name in ["w1", "w2", "w3"] {
        let p = Player::connect(&stack, name).await;
        assert_eq!(p.join(&stack, "quad").await.0, 200);
        waiting.push(p);
    }
    let (status, body) = request(&stack, &server, &id, json!([["q1", "q2", "q3"]])).await;
    assert_eq!(status, 200, "{body}");
    let asked = waiting[0].heard("MATCH_PROPOSED", 1, WAIT).await;
    assert_eq!(
        (&asked[0]["backfillOf"], &asked[0]["participants"]),
        (&json!(id), &json!(["w1"])),
        "only the newcomer is asked: {}",
        asked[0]
    );
    for p in &first {
        assert_eq!(p.messages_of_type("MATCH_PROPOSED").len(), 1, "{}", p.id);
    }
    assert_eq!(waiting[0].my_status(&stack).await["status"], "PROPOSED");

    // w1 does not answer and the server stops renewing: the backfill
    // lapses and w1 is back at the front, ahead of w2 and w3.
    let cancelled = waiting[0].heard("MATCH_CANCELLED", 1, WAIT).await;
    assert_eq!(cancelled[0]["requeued"], true, "{}", cancelled[0]);
    for (p, position) in waiting.iter().zip(1..) {
        assert_eq!(
            queued_position(&p.my_status(&stack).await),
            Some(position),
            "{}",
            p.id
        );
    }
    eventually("the BackfillExpired event", WAIT, || async {
        stack
            .events
            .received()
            .iter()
            .any(|e| e.detail_type == "BackfillExpired" && e.match_id() == Some(id.as_str()))
            .then_some(())
    })
    .await;
    let (status, body) = call(
        &stack,
        "POST",
        &format!("/v1/matching/matches/{id}/backfill/keepalive"),
        Some(&server),
        None,
    )
    .await;
    assert_eq!(
        (status, &body["data"]["error"]),
        (404, &json!("BACKFILL_NOT_FOUND")),
        "{body}"
    );
    assert!(server_view(&stack, &server, &id)
        .await
        .get("backfill")
        .is_none());
    stack.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lapsed_backfill_returns_its_proposed_player_to_their_place_standalone() {
    a_lapsed_backfill_returns_its_proposed_player_to_their_place(None).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lapsed_backfill_returns_its_proposed_player_to_their_place_cluster() {
    let cluster = RedisCluster::start();
    a_lapsed_backfill_returns_its_proposed_player_to_their_place(Some(&cluster)).await;
}
