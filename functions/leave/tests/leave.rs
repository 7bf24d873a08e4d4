//! `leave` driven by its event file(s) in `events/` against real Redis.

use lambda_http::Request;
use std::time::Duration;

use base64::Engine;
use integration_tests::lambda_events::{
    assert_refused, assert_unavailable, envelope, http_event, pre_join, set_caller, set_party_id,
    take_notes,
};
use integration_tests::scenarios::{player, Env};
use integration_tests::RedisServer;
use serde_json::{json, Value};

use leave::*;

const WORLDS: &str = "world1:3,world2:3";

fn app(server: &RedisServer, ns: &str, overrides: &[(&str, &str)]) -> App {
    let env = Env {
        urls: server.url(),
        cluster: false,
    };
    App {
        store: env.store_with(ns, WORLDS, overrides),
    }
}

/// `events/leave.json`, edited.
fn event(edit: impl FnOnce(&mut Value)) -> Request {
    http_event(include_str!("../../../events/leave.json"), edit)
}

fn with_body(body: &str) -> Request {
    let body = body.to_owned();
    event(move |v| v["body"] = Value::String(body))
}

/// Calls the handler and checks the envelope; returns (status, body).
async fn call(app: &App, req: Request) -> (u16, Value) {
    envelope(handle(app, req).await.expect("handled"))
}

/// Calls with a request that must be refused with `code` and change nothing.
async fn refused(app: &App, req: Request, status: u16, code: &str) -> Value {
    assert_refused(&app.store, call(app, req), status, code).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leave_event_removes_the_callers_ticket() {
    let server = RedisServer::start();
    let app = app(&server, "leave-ok", &[]);
    pre_join(&app.store, "world1", "player-2").await;
    pre_join(&app.store, "world1", "player-1").await;

    let (status, body) = call(&app, event(|_| {})).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        body["data"],
        json!({"worldType": "world1", "previousPosition": 2, "remainingQueueSize": 1})
    );
    assert_eq!(
        app.store.player_status(&player("player-1")).await.unwrap(),
        shared::PlayerStatus::Idle
    );
    // A base64-encoded body works the same.
    pre_join(&app.store, "world1", "player-1").await;
    let req = event(|v| {
        v["body"] =
            json!(base64::engine::general_purpose::STANDARD.encode(r#"{"worldType":"world1"}"#));
        v["isBase64Encoded"] = json!(true);
    });
    let (status, body) = call(&app, req).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["data"]["previousPosition"], 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leaving_a_queue_one_is_not_in_is_not_queued() {
    let server = RedisServer::start();
    let app = app(&server, "leave-not-queued", &[]);
    let body = refused(&app, event(|_| {}), 404, "NOT_QUEUED").await;
    assert_eq!(
        body["data"],
        json!({"error": "NOT_QUEUED", "worldType": "world1"})
    );

    pre_join(&app.store, "world2", "player-1").await;
    let body = refused(&app, event(|_| {}), 404, "NOT_QUEUED").await;
    assert_eq!(
        body["data"],
        json!({"error": "NOT_QUEUED", "worldType": "world1", "queuedIn": "world2"})
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_requests_are_refused_and_change_nothing() {
    let server = RedisServer::start();
    let app = app(&server, "leave-invalid", &[]);
    pre_join(&app.store, "world1", "player-1").await;

    for (body, says) in [
        (r#"{"worldType":"#, "EOF"),
        ("", "required"),
        (
            r#"{"worldType":"world1","player":"player-2"}"#,
            "unknown field `player`",
        ),
        (
            r#"{"worldType":"world1","data":{}}"#,
            "unknown field `data`",
        ),
        (r#"{"worldType":["world1"]}"#, "invalid type"),
        ("{}", "missing field `worldType`"),
        (r#"["world1"]"#, "must be a JSON object"),
        (r#"{"worldType":"w{1}"}"#, "invalid world name"),
    ] {
        let resp = refused(&app, with_body(body), 400, "INVALID_REQUEST").await;
        let msg = resp["msg"].as_str().unwrap();
        assert!(
            msg.contains(says),
            "{body:?}: {msg:?} should mention {says:?}"
        );
    }

    let body = refused(
        &app,
        with_body(r#"{"worldType":"world7"}"#),
        404,
        "UNKNOWN_WORLD",
    )
    .await;
    assert_eq!(body["data"]["worlds"], json!(["world1", "world2"]));

    let req = event(|v| {
        v["requestContext"]["authorizer"]["jwt"]
            .as_object_mut()
            .unwrap()
            .remove("claims");
    });
    refused(&app, req, 401, "UNAUTHORIZED").await;

    let huge = format!(r#"{{"worldType":"world1","pad":"{}"}}"#, " ".repeat(8200));
    refused(&app, with_body(&huge), 413, "PAYLOAD_TOO_LARGE").await;

    let req = event(|v| v["headers"]["content-type"] = json!("text/plain"));
    refused(&app, req, 415, "UNSUPPORTED_MEDIA_TYPE").await;

    let req = event(|v| v["requestContext"]["http"]["method"] = json!("DELETE"));
    let body = refused(&app, req, 405, "METHOD_NOT_ALLOWED").await;
    assert_eq!(body["data"]["allowed"], json!(["POST"]));

    let req = event(|v| v["rawPath"] = json!("/v1/matching/join"));
    refused(&app, req, 404, "NOT_FOUND").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_down_answers_503_within_the_timeout() {
    let mut server = RedisServer::start();
    let app = app(
        &server,
        "leave-down",
        &[
            ("REDIS_TIMEOUT_MS", "300"),
            ("REDIS_CONNECT_TIMEOUT_MS", "200"),
        ],
    );
    server.kill();
    assert_unavailable(call(&app, event(|_| {})), Duration::from_secs(3)).await;
}

const CANCEL_PARTY: &str = include_str!("../../../events/cancel-party.json");

/// `events/cancel-party.json` (player-1 cancels `world1.18f3a-2b`) for
/// caller `sub` and party `party_id`.
fn cancel_party_event(sub: &str, party_id: &str) -> Request {
    http_event(CANCEL_PARTY, |v| {
        set_caller(v, sub);
        set_party_id(v, party_id);
    })
}

/// A world1 party led by `leader` with `invited`, created through the
/// store; its id. The creation's PARTY_UPDATE notes are taken.
async fn party(app: &App, leader: &str, invited: &[&str]) -> String {
    let store = &app.store;
    let world = store.settings().worlds.get("world1").expect("world1");
    let invited: Vec<_> = invited.iter().map(|p| player(p)).collect();
    match store
        .create_party(world, &player(leader), &invited, None, None)
        .await
        .expect("create party")
    {
        shared::PartyCreateOutcome::Created(view) => {
            take_notes(store).await;
            view.party_id.to_string()
        }
        other => panic!("{other:?}"),
    }
}

/// `events/cancel-party.json` as it is names no party: 404 PARTY_NOT_FOUND
/// in the envelope, nothing written; so is a party the caller is not a
/// member of, and one of an unconfigured world; a malformed id is 400.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_party_event_for_no_such_party_is_party_not_found() {
    let server = RedisServer::start();
    let app = app(&server, "leave-party-missing", &[]);
    let body = refused(
        &app,
        http_event(CANCEL_PARTY, |_| {}),
        404,
        "PARTY_NOT_FOUND",
    )
    .await;
    assert_eq!(
        body["data"],
        json!({"error": "PARTY_NOT_FOUND", "partyId": "world1.18f3a-2b"})
    );
    assert!(
        body["msg"].as_str().unwrap().contains("world1.18f3a-2b"),
        "{body}"
    );

    let id = party(&app, "player-1", &["player-2"]).await;
    let body = refused(
        &app,
        cancel_party_event("player-9", &id),
        404,
        "PARTY_NOT_FOUND",
    )
    .await;
    assert_eq!(body["data"]["partyId"], id.as_str());
    refused(
        &app,
        cancel_party_event("player-1", "world9.1-a"),
        404,
        "PARTY_NOT_FOUND",
    )
    .await;
    let req = http_event(CANCEL_PARTY, |v| {
        v["pathParameters"]["partyId"] = json!("nope")
    });
    let body = refused(&app, req, 400, "INVALID_REQUEST").await;
    assert_eq!(body["data"]["field"], "partyId");
    let req = http_event(CANCEL_PARTY, |v| {
        v["requestContext"]["http"]["method"] = json!("POST")
    });
    let body = refused(&app, req, 405, "METHOD_NOT_ALLOWED").await;
    assert_eq!(body["data"]["allowed"], json!(["DELETE"]));
}

/// A member who joined cancels the party (reason LEFT); an invited player
/// who has not joined declines it (reason DECLINED). Either way 200 with
/// the party as it was, everyone else is told PARTY_CANCELLED through the
/// outbox, and the party is gone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_party_event_cancels_and_tells_the_other_members() {
    let server = RedisServer::start();
    let app = app(&server, "leave-party-cancel", &[]);
    let id = party(&app, "player-1", &["player-2", "player-3"]).await;

    let (status, body) = call(&app, cancel_party_event("player-1", &id)).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["data"]["cancelled"], true);
    let party_view = &body["data"]["party"];
    assert_eq!(party_view["partyId"], id.as_str());
    assert_eq!(party_view["worldType"], "world1");
    assert_eq!(party_view["leader"], "player-1");
    assert_eq!(party_view["state"], "ASSEMBLING");
    assert_eq!(
        party_view["members"],
        json!([{"playerId": "player-1", "joined": true},
               {"playerId": "player-2", "joined": false},
               {"playerId": "player-3", "joined": false}])
    );
    assert_eq!(
        take_notes(&app.store).await,
        [(
            json!({"type": "PARTY_CANCELLED", "partyId": id, "worldType": "world1",
                   "reason": "LEFT", "by": "player-1"}),
            vec!["player-2".to_owned(), "player-3".to_owned()]
        )]
    );
    assert_eq!(
        app.store.player_status(&player("player-1")).await.unwrap(),
        shared::PlayerStatus::Idle
    );
    refused(
        &app,
        cancel_party_event("player-1", &id),
        404,
        "PARTY_NOT_FOUND",
    )
    .await;

    // An invited player declines.
    let id = party(&app, "player-1", &["player-2", "player-3"]).await;
    let (status, body) = call(&app, cancel_party_event("player-3", &id)).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["data"]["party"]["partyId"], id.as_str());
    assert_eq!(
        take_notes(&app.store).await,
        [(
            json!({"type": "PARTY_CANCELLED", "partyId": id, "worldType": "world1",
                   "reason": "DECLINED", "by": "player-3"}),
            vec!["player-1".to_owned(), "player-2".to_owned()]
        )]
    );
}
