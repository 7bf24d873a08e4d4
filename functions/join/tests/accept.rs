//! `POST /v1/matching/accept` (a ready check's answer), served by the join
//! function: `events/accept.json` driven through the real handler against
//! real Redis, with the real `@connections` pusher aimed at the stand-in.

use integration_tests::outbox_len;
use integration_tests::register_connection;
use std::time::Duration;

use integration_tests::connections_server::ConnectionsServer;
use integration_tests::lambda_events::{
    assert_refused, envelope, http_event, set_accept, set_caller, set_match_id, take_notes,
};
use integration_tests::scenarios::{player, Env};
use integration_tests::RedisServer;
use lambda_common::push::ApiGatewayPusher;
use lambda_http::Request;
use serde_json::{json, Value};
use shared::PlayerStatus;

use join::*;

const ACCEPT: &str = include_str!("../../../events/accept.json");
const JOIN: &str = include_str!("../../../events/join.json");

/// A two-player world with a ready check: 30 s to accept, a minute's
/// cooldown for whoever declines or misses it.
const READY_RULES: &str = r#"{"worlds": [{"name": "duel", "teamSize": 2,
    "readyCheck": {"acceptSeconds": 30, "declineCooldownSeconds": 60}}]}"#;

/// The same world with one second to accept.
const HURRIED_RULES: &str = r#"{"worlds": [{"name": "duel", "teamSize": 2,
    "readyCheck": {"acceptSeconds": 1, "declineCooldownSeconds": 60}}]}"#;

/// The join function as deployed: the real pusher, aimed at the stand-in
/// `@connections` endpoint.
struct Fixture {
    app: App<ApiGatewayPusher>,
    connections: ConnectionsServer,
}

async fn fixture(server: &RedisServer, ns: &str, rules: &str) -> Fixture {
    let env = Env {
        urls: server.url(),
        cluster: false,
    };
    let connections = ConnectionsServer::start().await;
    let pusher = ApiGatewayPusher::with_static_credentials(
        &connections.endpoint_with_stage("prod"),
        "us-east-1",
    )
    .expect("pusher");
    Fixture {
        app: App {
            store: env.store_with(ns, "", &[("MM_RULES", rules)]),
            pusher,
        },
        connections,
    }
}

impl Fixture {
    /// The pushes received so far of message type `kind`, as (connection,
    /// JSON body), by connection.
    fn pushes_of(&self, kind: &str) -> Vec<(String, Value)> {
        let mut all: Vec<_> = self
            .connections
            .posts()
            .iter()
            .map(|p| (p.connection_id.clone(), p.json()))
            .filter(|(_, m)| m["type"] == kind)
            .collect();
        all.sort_by(|a, b| a.0.cmp(&b.0));
        all
    }
}

/// Calls the handler and checks the envelope; returns (status, body).
async fn call(fx: &Fixture, req: Request) -> (u16, Value) {
    envelope(handle(&fx.app, req).await.expect("handled"))
}

/// `events/join.json` for caller `sub`, joining the duel world.
fn join_duel(sub: &str) -> Request {
    http_event(JOIN, |v| {
        set_caller(v, sub);
        v["body"] = json!(r#"{"worldType":"duel"}"#);
    })
}

/// `events/accept.json` for caller `sub` answering proposal `match_id`.
fn answer(sub: &str, match_id: &str, accept: bool) -> Request {
    http_event(ACCEPT, |v| {
        set_caller(v, sub);
        set_match_id(v, match_id);
        set_accept(v, accept);
    })
}

/// player-1 joins (QUEUED), player-2 completes the duel: `200 PROPOSED`
/// with the proposal, which is returned.
async fn propose(fx: &Fixture) -> Value {
    let (status, body) = call(fx, join_duel("player-1")).await;
    assert_eq!(
        (status, body["data"]["status"].as_str()),
        (200, Some("QUEUED")),
        "{body}"
    );
    let (status, body) = call(fx, join_duel("player-2")).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["data"]["status"], "PROPOSED", "{body}");
    let proposal = body["data"]["proposal"].clone();
    assert!(
        proposal["matchId"]
            .as_str()
            .is_some_and(|id| !id.is_empty()),
        "{proposal}"
    );
    assert_eq!(proposal["worldType"], "duel");
    assert!(
        proposal["acceptBy"].as_u64().is_some_and(|t| t > 0),
        "{proposal}"
    );
    assert_eq!(proposal["participants"], json!(["player-1", "player-2"]));
    assert_eq!(proposal["accepted"], json!([]));
    proposal
}

/// A ready check through the accept event: the joins make a proposal
/// (MATCH_PROPOSED through the outbox), the first accept answers ACCEPTED
/// (MATCH_ACCEPT_PROGRESS to both), the last answers MATCHED with the
/// record, and MATCH_FOUND is pushed to every connection of both players at
/// once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn accept_events_answer_accepted_then_matched_and_push_match_found() {
    let server = RedisServer::start();
    let fx = fixture(&server, "accept-all", READY_RULES).await;
    for (conn, p) in [
        ("conn-A1=", "player-1"),
        ("conn-A2=", "player-1"),
        ("conn-B1=", "player-2"),
    ] {
        register_connection(&fx.app.store, conn, p).await;
    }
    let proposal = propose(&fx).await;
    let id = proposal["matchId"].as_str().unwrap().to_owned();
    assert_eq!(
        take_notes(&fx.app.store).await,
        [(
            json!({"type": "MATCH_PROPOSED", "matchId": id, "worldType": "duel",
                   "acceptBy": proposal["acceptBy"], "participants": ["player-1", "player-2"]}),
            vec!["player-1".to_owned(), "player-2".to_owned()]
        )]
    );

    // Meanwhile a participant may not join again.
    let body = assert_refused(
        &fx.app.store,
        call(&fx, join_duel("player-1")),
        409,
        "PROPOSAL_PENDING",
    )
    .await;
    assert_eq!(body["data"]["matchId"], id.as_str(), "{body}");
    assert_eq!(body["data"]["participants"], proposal["participants"]);

    // Someone outside the proposal cannot answer it.
    let body = assert_refused(
        &fx.app.store,
        call(&fx, answer("player-3", &id, true)),
        404,
        "PROPOSAL_NOT_FOUND",
    )
    .await;
    assert_eq!(body["data"]["matchId"], id.as_str());

    let (status, body) = call(&fx, answer("player-1", &id, true)).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        body["data"],
        json!({"status": "ACCEPTED", "matchId": id, "accepted": 1, "total": 2})
    );
    assert!(fx.pushes_of("MATCH_FOUND").is_empty());
    let notes = take_notes(&fx.app.store).await;
    assert_eq!(
        notes,
        [(
            json!({"type": "MATCH_ACCEPT_PROGRESS", "matchId": id, "worldType": "duel",
                   "accepted": 1, "total": 2}),
            vec!["player-1".to_owned(), "player-2".to_owned()]
        )]
    );
    // Accepting again changes nothing and answers the same.
    let (status, again) = unchanged(&fx, answer("player-1", &id, true)).await;
    assert_eq!((status, &again["data"]), (200, &body["data"]), "{again}");

    // The last accept: the match is final and pushed at once.
    let (status, body) = call(&fx, answer("player-2", &id, true)).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["data"]["status"], "MATCHED", "{body}");
    let record = &body["data"]["match"];
    assert_eq!(record["matchId"], id.as_str(), "the proposal's id");
    assert_eq!(record["worldType"], "duel");
    assert_eq!(record["participants"], json!(["player-1", "player-2"]));
    assert!(record["matchedAt"].as_u64().is_some_and(|t| t > 0));
    let found = fx.pushes_of("MATCH_FOUND");
    let conns: Vec<&str> = found.iter().map(|(c, _)| c.as_str()).collect();
    assert_eq!(conns, ["conn-A1=", "conn-A2=", "conn-B1="]);
    for (conn, message) in &found {
        assert_eq!(message["matchId"], id.as_str(), "{conn}");
        assert_eq!(message["participants"], record["participants"], "{conn}");
    }
    assert_eq!(
        outbox_len(&fx.app.store).await,
        0,
        "MATCH_FOUND delivered and settled"
    );
    for p in ["player-1", "player-2"] {
        match fx.app.store.player_status(&player(p)).await.unwrap() {
            PlayerStatus::Matched(m) => assert_eq!(m.match_id.as_str(), id),
            other => panic!("{p} should be matched, is {other:?}"),
        }
    }

    // The proposal is gone with its decision.
    let before = fx.connections.posts().len();
    assert_refused(
        &fx.app.store,
        call(&fx, answer("player-2", &id, true)),
        404,
        "PROPOSAL_NOT_FOUND",
    )
    .await;
    assert_eq!(fx.connections.posts().len(), before);
}

/// Calls with a request that must leave Redis as it was (a repeated
/// accept); returns (status, body).
async fn unchanged(fx: &Fixture, req: Request) -> (u16, Value) {
    let before = integration_tests::scenarios::snapshot(&fx.app.store).await;
    let answered = call(fx, req).await;
    assert_eq!(
        integration_tests::scenarios::snapshot(&fx.app.store).await,
        before,
        "a repeated accept changed Redis"
    );
    answered
}

/// The fixture as it is names no proposal: 404 PROPOSAL_NOT_FOUND in the
/// documented envelope, nothing written, nothing pushed (also where no world
/// has a ready check). Bodies that are not an answer are 400.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_accept_fixture_as_is_is_proposal_not_found() {
    let server = RedisServer::start();
    for (ns, rules) in [
        ("accept-fixture", READY_RULES),
        (
            "accept-fixture-plain",
            r#"{"worlds": [{"name": "world1", "teamSize": 3}]}"#,
        ),
    ] {
        let fx = fixture(&server, ns, rules).await;
        let resp = handle(&fx.app, http_event(ACCEPT, |_| {}))
            .await
            .expect("handled");
        assert_eq!(resp.headers()["cache-control"], "no-store");
        let body = assert_refused(
            &fx.app.store,
            async { envelope(resp) },
            404,
            "PROPOSAL_NOT_FOUND",
        )
        .await;
        assert_eq!(
            body["data"],
            json!({"error": "PROPOSAL_NOT_FOUND", "matchId": "18f3a-4"}),
            "{ns}"
        );
        assert!(body["msg"].as_str().unwrap().contains("18f3a-4"), "{body}");
        // A decline of it is the same.
        let req = http_event(ACCEPT, |v| set_accept(v, false));
        assert_refused(&fx.app.store, call(&fx, req), 404, "PROPOSAL_NOT_FOUND").await;
        assert!(fx.connections.posts().is_empty(), "{ns}: pushed something");
    }

    let fx = fixture(&server, "accept-invalid", READY_RULES).await;
    for (body, field) in [
        (r#"{"matchId":"18f3a-4"}"#, None),
        (r#"{"accept":true}"#, None),
        (r#"{"matchId":"18f3a-4","accept":"yes"}"#, None),
        (r#"{"matchId":"18f3a-4","accept":1}"#, None),
        (r#"{"matchId":18,"accept":true}"#, None),
        (r#"{"matchId":"18f3a-4","accept":true,"player":"p"}"#, None),
        (r#"["18f3a-4",true]"#, None),
        ("", None),
        (r#"{"matchId":"18F3A-4","accept":true}"#, Some("matchId")),
        (r#"{"matchId":"","accept":true}"#, Some("matchId")),
        (r#"{"matchId":"a/b","accept":false}"#, Some("matchId")),
    ] {
        let req = http_event(ACCEPT, |v| v["body"] = json!(body));
        let resp = assert_refused(&fx.app.store, call(&fx, req), 400, "INVALID_REQUEST").await;
        assert_eq!(resp["data"]["field"].as_str(), field, "{body:?}: {resp}");
    }
    let req = http_event(ACCEPT, |v| {
        v["requestContext"]["http"]["method"] = json!("GET")
    });
    let body = assert_refused(&fx.app.store, call(&fx, req), 405, "METHOD_NOT_ALLOWED").await;
    assert_eq!(body["data"]["allowed"], json!(["POST"]));
    assert!(fx.connections.posts().is_empty());
}

/// A decline answers CANCELLED: the decliner is out and cools down (409
/// COOLING_DOWN), the other is back in the queue at their old place and
/// told so (MATCH_CANCELLED, requeued), and the next player makes a new
/// proposal with them. Nobody gets MATCH_FOUND.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_declining_accept_event_cancels_the_proposal_and_requeues_the_other() {
    let server = RedisServer::start();
    let fx = fixture(&server, "accept-decline", READY_RULES).await;
    register_connection(&fx.app.store, "conn-A1=", "player-1").await;
    register_connection(&fx.app.store, "conn-B1=", "player-2").await;
    let proposal = propose(&fx).await;
    let id = proposal["matchId"].as_str().unwrap().to_owned();
    take_notes(&fx.app.store).await;

    let (status, body) = call(&fx, answer("player-2", &id, false)).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        body["data"],
        json!({"status": "CANCELLED", "matchId": id, "worldType": "duel", "requeued": false,
               "requeuedTickets": 1})
    );
    let mut notes = take_notes(&fx.app.store).await;
    notes.sort_by_key(|(_, to)| to.clone());
    let cancelled = |requeued: bool| {
        json!({"type": "MATCH_CANCELLED", "matchId": id, "worldType": "duel",
               "reason": "DECLINED", "requeued": requeued})
    };
    assert_eq!(
        notes,
        [
            (cancelled(true), vec!["player-1".to_owned()]),
            (cancelled(false), vec!["player-2".to_owned()]),
        ]
    );
    match fx
        .app
        .store
        .player_status(&player("player-1"))
        .await
        .unwrap()
    {
        PlayerStatus::Queued(q) => assert_eq!((q.position, q.queue_size), (1, 1)),
        other => panic!("player-1 should be queued again, is {other:?}"),
    }
    assert!(matches!(
        fx.app
            .store
            .player_status(&player("player-2"))
            .await
            .unwrap(),
        PlayerStatus::Idle
    ));

    // The decided proposal cannot be answered any more.
    assert_refused(
        &fx.app.store,
        call(&fx, answer("player-1", &id, true)),
        404,
        "PROPOSAL_NOT_FOUND",
    )
    .await;
    // The decliner cools down.
    let body = assert_refused(
        &fx.app.store,
        call(&fx, join_duel("player-2")),
        409,
        "COOLING_DOWN",
    )
    .await;
    let retry = body["data"]["retryAfterSeconds"].as_u64().expect("{body}");
    assert!((1..=60).contains(&retry), "{body}");

    // Someone new makes a new proposal with the requeued player first.
    let (status, body) = call(&fx, join_duel("player-3")).await;
    assert_eq!(
        (status, body["data"]["status"].as_str()),
        (200, Some("PROPOSED")),
        "{body}"
    );
    let again = &body["data"]["proposal"];
    assert_ne!(again["matchId"], id.as_str());
    assert_eq!(again["participants"], json!(["player-1", "player-3"]));
    assert!(fx.pushes_of("MATCH_FOUND").is_empty());
}

/// An answer after `acceptSeconds` is too late: 409 PROPOSAL_EXPIRED, and
/// the proposal is cancelled as timed out (MATCH_CANCELLED, TIMEOUT).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_late_accept_event_is_proposal_expired() {
    let server = RedisServer::start();
    let fx = fixture(&server, "accept-late", HURRIED_RULES).await;
    let proposal = propose(&fx).await;
    let id = proposal["matchId"].as_str().unwrap().to_owned();
    take_notes(&fx.app.store).await;
    // Wait for the answer to be late by Redis's clock (the scripts' clock).
    let accept_by = proposal["acceptBy"].as_u64().expect("acceptBy");
    integration_tests::eventually(
        "the time to accept to run out",
        Duration::from_secs(10),
        || async {
            let (secs, micros): (u64, u64) = fx
                .app
                .store
                .command(&redis::cmd("TIME"))
                .await
                .expect("TIME");
            (secs * 1000 + micros / 1000 > accept_by).then_some(())
        },
    )
    .await;

    let (status, body) = call(&fx, answer("player-1", &id, true)).await;
    assert_eq!(status, 409, "{body}");
    assert_eq!(
        body["data"],
        json!({"error": "PROPOSAL_EXPIRED", "matchId": id})
    );
    let notes = take_notes(&fx.app.store).await;
    assert!(
        !notes.is_empty()
            && notes.iter().all(|(m, _)| m["type"] == "MATCH_CANCELLED"
                && m["matchId"] == id.as_str()
                && m["reason"] == "TIMEOUT"),
        "{notes:?}"
    );
    // Decided: a second late answer finds nothing.
    assert_refused(
        &fx.app.store,
        call(&fx, answer("player-2", &id, true)),
        404,
        "PROPOSAL_NOT_FOUND",
    )
    .await;
}
