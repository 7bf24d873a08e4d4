//! Presence and delivery through the local stack, with real WebSocket
//! clients: every open socket hears its match (even one that opens during
//! the push), no ghost is matched, no message is too big, nobody is matched
//! or shown past their deadline, evicted sockets are closed, and quiet
//! sockets are closed after the idle timeout while heartbeats keep them.

mod support;

use std::time::Duration;

use integration_tests::eventually;
use serde_json::{json, Value};
use shared::{ConnectionId, PlayerId};
use support::{call, start_stack, token, Player};

const WAIT: Duration = Duration::from_secs(30);

/// The MATCH_FOUND ids a socket has received.
fn match_ids(p: &Player) -> Vec<String> {
    p.messages_of_type("MATCH_FOUND")
        .iter()
        .filter_map(|m| m["matchId"].as_str().map(str::to_owned))
        .collect()
}

/// Waits until every socket in `sockets` has received MATCH_FOUND `id`.
async fn all_hear(sockets: &[&Player], id: &str, what: &str) {
    eventually(what, WAIT, || async {
        sockets
            .iter()
            .all(|s| match_ids(s).iter().any(|m| m == id))
            .then_some(())
    })
    .await;
}

fn rules(doc: Value) -> String {
    doc.to_string()
}

/// Defect 1 (connect race): a socket that opens while its player's match is
/// being pushed used to be answered 410 by API Gateway (its `$connect` had
/// not finished), was removed from the registry while staying open, and
/// never heard that match. Now a 410 from a connection registered moments
/// ago is retried, and a connection that opens just after a match formed
/// gets its own copy: every open socket ends up with the match.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_open_socket_hears_its_match_even_one_that_opens_during_the_push() {
    let lanes: usize = 6;
    // One world per lane, so lanes never match each other's players.
    let worlds: Vec<String> = (0..lanes).map(|l| format!("duel{l}:2")).collect();
    // API Gateway takes a moment to establish a connection after `$connect`
    // answers; pushes meanwhile get 410. A wide window makes the race
    // happen in every round.
    let owned = start_stack(&worlds.join(","), &[("MM_WS_CONNECT_LATENCY_MS", "300")]).await;
    let rounds: usize = std::env::var("MM_RACE_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(5);
    let stack = &owned;
    let lane = |lane: usize| async move {
        for round in 0..rounds {
            let a = Player::connect(stack, &format!("race-a-{lane}-{round}")).await;
            let b = Player::connect(stack, &format!("race-b-{lane}-{round}")).await;
            let world = format!("duel{lane}");
            let (status, _) = a.join(stack, &world).await;
            assert_eq!(status, 200);
            // b's join forms the match and pushes at once; b's second socket
            // opens at that very moment.
            let ((status, body), late) =
                tokio::join!(b.join(stack, &world), b.another_socket(stack));
            assert_eq!(status, 200, "{body}");
            assert_eq!(body["data"]["status"], "MATCHED", "{body}");
            let id = body["data"]["match"]["matchId"]
                .as_str()
                .unwrap()
                .to_owned();
            all_hear(
                &[&a, &b, &late],
                &id,
                &format!("lane {lane} round {round}: every open socket hears {id}"),
            )
            .await;
            for s in [&a, &b, &late] {
                let copies = match_ids(s).iter().filter(|m| **m == id).count();
                assert_eq!(
                    copies, 1,
                    "lane {lane} round {round}: {} heard {id} {copies} times",
                    s.id
                );
            }
            a.disconnect().await;
            b.disconnect().await;
            late.disconnect().await;
        }
    };
    futures_util::future::join_all((0..lanes).map(lane)).await;
    owned.stop().await;
}

/// Defect 2 (messages over the limit): a 40-player match with ~3.5 KB of
/// ticket data per player made a 142 KB MATCH_FOUND that API Gateway refused
/// for every participant until the record expired. Now the push leaves the
/// ticket data out (and says so) and participants read the full record at
/// `GET /v1/matching/matches/{matchId}`; others get 404.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_match_too_big_for_one_message_is_pushed_without_ticket_data() {
    let stack = start_stack("big:40", &[]).await;
    let mut players = Vec::new();
    for i in 0..40 {
        players.push(Player::connect(&stack, &format!("big-{i:02}")).await);
    }
    let blob = "x".repeat(3500);
    let mut last = Value::Null;
    for p in &players {
        let (status, body) = call(
            &stack,
            "POST",
            "/v1/matching/join",
            Some(&p.token),
            Some(json!({"worldType": "big", "data": {"loadout": blob}})),
        )
        .await;
        assert_eq!(status, 200, "{body}");
        last = body;
    }
    assert_eq!(last["data"]["status"], "MATCHED", "{last}");
    let id = last["data"]["match"]["matchId"]
        .as_str()
        .unwrap()
        .to_owned();
    let sockets: Vec<&Player> = players.iter().collect();
    all_hear(&sockets, &id, "all 40 participants hear the match").await;
    for p in &players {
        let pushed = &p.messages_of_type("MATCH_FOUND")[0];
        assert_eq!(pushed["playerDataOmitted"], true, "{}", p.id);
        assert!(pushed.get("playerData").is_none());
        assert_eq!(pushed["participants"].as_array().unwrap().len(), 40);
        assert!(pushed.to_string().len() <= 128 * 1024);
    }
    let path = format!("/v1/matching/matches/{id}");
    let (status, body) = call(&stack, "GET", &path, Some(&players[7].token), None).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["data"]["matchId"], id.as_str());
    assert_eq!(body["data"]["playerData"].as_object().unwrap().len(), 40);
    assert_eq!(
        body["data"]["playerData"]["big-07"]["loadout"],
        blob.as_str()
    );
    let outsider = token(&stack, "outsider").await;
    let (status, body) = call(&stack, "GET", &path, Some(&outsider), None).await;
    assert_eq!(
        (status, body["data"]["error"].as_str()),
        (404, Some("MATCH_NOT_FOUND"))
    );
    stack.stop().await;
}

/// Defect 3 (ghosts): a player whose socket died without a `$disconnect`
/// (best effort on API Gateway) stayed queued for the registry's 2-hour
/// lifetime and was matched. Now a registration lapses after the presence
/// timeout without a heartbeat, and a world that requires presence never
/// matches a player without a live connection: the ghost's ticket is
/// removed with TICKET_REMOVED, which it hears when it comes back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ghost_is_never_matched_and_hears_why_when_it_returns() {
    let doc = rules(json!({"worlds": [
        {"name": "live", "teamSize": 2, "requirePresence": true},
        {"name": "polling", "teamSize": 2}
    ]}));
    let stack = start_stack_with_rules(
        &doc,
        &[
            ("MM_PRESENCE_TIMEOUT_SECS", "2"),
            ("MM_HEARTBEAT_SECS", "1"),
            // Only the presence check at match time stands between the ghost
            // and a match: lapsed registrations do not take tickets along.
            ("MM_REMOVE_TICKET_ON_DISCONNECT", "false"),
        ],
    )
    .await;
    let beat = Duration::from_millis(500);

    // The ghost: its `$connect` ran, then the socket died and `$disconnect`
    // never came (a registration with nobody behind it).
    let ghost = PlayerId::parse("ghost").unwrap();
    stack
        .store
        .register_connection(&ConnectionId::parse("GhostConn0=").unwrap(), &ghost)
        .await
        .unwrap();
    let ghost_token = token(&stack, "ghost").await;
    let (status, body) = call(
        &stack,
        "POST",
        "/v1/matching/join",
        Some(&ghost_token),
        Some(json!({"worldType": "live"})),
    )
    .await;
    assert_eq!((status, body["data"]["position"].as_u64()), (200, Some(1)));

    // Joining a presence world without a live connection is refused.
    let stranger = token(&stack, "stranger").await;
    let (status, body) = call(
        &stack,
        "POST",
        "/v1/matching/join",
        Some(&stranger),
        Some(json!({"worldType": "live"})),
    )
    .await;
    assert_eq!(
        (status, body["data"]["error"].as_str()),
        (409, Some("NOT_CONNECTED")),
        "{body}"
    );

    // Once the ghost's registration has lapsed, two live players queue
    // behind it and are matched with each other, never with the ghost.
    eventually("the ghost's registration to lapse", WAIT, || async {
        stack
            .store
            .connections_of(&ghost)
            .await
            .unwrap()
            .is_empty()
            .then_some(())
    })
    .await;
    let l1 = Player::connect_heartbeating(&stack, "live-1", beat).await;
    let l2 = Player::connect_heartbeating(&stack, "live-2", beat).await;
    // Longer than the presence timeout: heartbeats keep the live players.
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(l1.join(&stack, "live").await.0, 200);
    let (status, body) = l2.join(&stack, "live").await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["data"]["status"], "MATCHED", "{body}");
    assert_eq!(
        body["data"]["match"]["participants"],
        json!(["live-1", "live-2"])
    );
    let (status, body) = call(
        &stack,
        "GET",
        "/v1/matching/my-status",
        Some(&ghost_token),
        None,
    )
    .await;
    assert_eq!(
        (status, body["data"]["status"].as_str()),
        (200, Some("IDLE"))
    );

    // When the ghost comes back, it hears why its ticket went.
    let back = Player::connect_heartbeating(&stack, "ghost", beat).await;
    let removed = eventually("TICKET_REMOVED on return", WAIT, || async {
        back.messages_of_type("TICKET_REMOVED").into_iter().next()
    })
    .await;
    assert_eq!(
        removed,
        json!({"type": "TICKET_REMOVED", "worldType": "live", "reason": "NO_CONNECTION"})
    );

    // Where presence is not required, a client that only polls my-status
    // (no socket at all) is still served and matched.
    let p1 = token(&stack, "poller-1").await;
    let p2 = token(&stack, "poller-2").await;
    for t in [&p1, &p2] {
        let (status, _) = call(
            &stack,
            "POST",
            "/v1/matching/join",
            Some(t),
            Some(json!({"worldType": "polling"})),
        )
        .await;
        assert_eq!(status, 200);
    }
    let (_, body) = call(&stack, "GET", "/v1/matching/my-status", Some(&p1), None).await;
    assert_eq!(body["data"]["status"], "MATCHED", "{body}");
    stack.stop().await;
}

/// Defect 3 (idle sockets): API Gateway closes a socket after 10 idle
/// minutes, and without a heartbeat route a quiet client lost its socket.
/// The stack closes sockets idle longer than `MM_WS_IDLE_TIMEOUT_SECS`; a
/// client that heartbeats keeps its socket and its registration, and every
/// heartbeat is answered with a PONG.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn quiet_sockets_close_after_the_idle_timeout_and_heartbeats_keep_them() {
    let stack = start_stack(
        "world1:3",
        &[
            ("MM_WS_IDLE_TIMEOUT_SECS", "2"),
            ("MM_PRESENCE_TIMEOUT_SECS", "2"),
            ("MM_HEARTBEAT_SECS", "1"),
        ],
    )
    .await;
    let quiet = Player::connect(&stack, "quiet").await;
    let beating = Player::connect_heartbeating(&stack, "beating", Duration::from_millis(500)).await;
    let code = eventually("the quiet socket to be closed", WAIT, || async {
        quiet.close_code()
    })
    .await;
    assert_eq!(code, 1001, "going away: idle");
    // Well past both the idle and the presence timeout.
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(beating.close_code(), None);
    let pongs = beating.messages_of_type("PONG");
    assert!(pongs.len() >= 4, "{pongs:?}");
    assert_eq!(
        pongs[0],
        json!({"type": "PONG", "registered": true, "heartbeatSeconds": 1, "presenceTimeoutSeconds": 2})
    );
    let beating_id = PlayerId::parse("beating").unwrap();
    assert_eq!(
        stack.store.connections_of(&beating_id).await.unwrap().len(),
        1
    );
    eventually("the quiet player's registration to lapse", WAIT, || async {
        stack
            .store
            .connections_of(&PlayerId::parse("quiet").unwrap())
            .await
            .unwrap()
            .is_empty()
            .then_some(())
    })
    .await;
    stack.stop().await;
}

/// Defect 5 (eviction): past `MM_MAX_CONNECTIONS_PER_PLAYER` the oldest
/// socket was dropped from the registry but stayed open and silent, and
/// closing the newest removed the ticket while older sockets were still
/// open. Now the evicted socket is closed, and the last live socket decides.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn evicted_sockets_are_closed_and_the_last_live_one_decides() {
    let stack = start_stack("world1:3", &[("MM_MAX_CONNECTIONS_PER_PLAYER", "2")]).await;
    let first = Player::connect(&stack, "many").await;
    let second = first.another_socket(&stack).await;
    let third = first.another_socket(&stack).await;
    let code = eventually("the oldest socket to be closed", WAIT, || async {
        first.close_code()
    })
    .await;
    assert_eq!(code, 1000);
    assert_eq!(second.close_code(), None);
    let (status, _) = second.join(&stack, "world1").await;
    assert_eq!(status, 200);
    third.disconnect().await;
    assert_eq!(second.my_status(&stack).await["status"], "QUEUED");
    // The middle socket is the player's last one: closing it removes the ticket.
    let token = second.token.clone();
    second.disconnect().await;
    eventually("the ticket to go with the last socket", WAIT, || async {
        let (_, body) = call(&stack, "GET", "/v1/matching/my-status", Some(&token), None).await;
        (body["data"]["status"] == "IDLE").then_some(())
    })
    .await;
    stack.stop().await;
}

/// Defect 4 (past the deadline): tickets were matched after their deadline
/// (the matcher formed matches before sweeping) and my-status showed an
/// expired ticket as QUEUED. Now matching sweeps first, and status and
/// leave treat a ticket past its deadline as gone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nobody_is_matched_or_shown_queued_past_their_deadline() {
    let stack = start_stack("quick:2:1", &[]).await;
    let early = Player::connect(&stack, "early").await;
    let late = Player::connect(&stack, "late").await;
    assert_eq!(early.join(&stack, "quick").await.0, 200);
    // Wait until Redis's clock is past early's deadline (its ticket may or
    // may not have been swept yet: either way it must not be matched).
    let deadline: Option<f64> = stack
        .store
        .command(
            redis::cmd("ZSCORE")
                .arg(
                    stack
                        .store
                        .keys()
                        .world(&shared::WorldName::parse("quick").unwrap())
                        .deadlines,
                )
                .arg("early"),
        )
        .await
        .unwrap();
    let deadline = deadline.expect("early's deadline") as u64;
    eventually("Redis time to pass the deadline", WAIT, || async {
        let (secs, micros): (u64, u64) = stack.store.command(&redis::cmd("TIME")).await.unwrap();
        (secs * 1000 + micros / 1000 > deadline).then_some(())
    })
    .await;
    assert_eq!(early.my_status(&stack).await["status"], "IDLE");
    let (status, body) = early.leave(&stack, "quick").await;
    assert_eq!(
        (status, body["data"]["error"].as_str()),
        (404, Some("NOT_QUEUED"))
    );
    let (status, body) = late.join(&stack, "quick").await;
    assert_eq!(status, 200);
    assert_eq!(
        body["data"]["status"], "QUEUED",
        "late must not be matched with expired early: {body}"
    );
    let expired = eventually("TICKET_EXPIRED for early", WAIT, || async {
        early.messages_of_type("TICKET_EXPIRED").into_iter().next()
    })
    .await;
    assert_eq!(expired["worldType"], "quick");
    assert!(early.messages_of_type("MATCH_FOUND").is_empty());
    stack.stop().await;
}

/// A stack configured by a rule set instead of `MM_WORLDS`.
async fn start_stack_with_rules(doc: &str, extra: &[(&str, &str)]) -> local_stack::LocalStack {
    let mut vars: Vec<(&str, &str)> = vec![("MM_RULES", doc)];
    vars.extend_from_slice(extra);
    support::start_stack_vars(&vars).await
}
