//! `status` driven by its event file(s) in `events/` against real Redis.

use lambda_http::Request;
use std::time::Duration;

use integration_tests::lambda_events::{
    assert_refused, assert_unavailable, envelope, http_event, pre_join,
};
use integration_tests::scenarios::Env;
use integration_tests::{eventually, RedisServer};
use serde_json::{json, Value};
use shared::JoinOutcome;

use status::*;

const WORLDS: &str = "world1:3,world2:3";
const QUEUE_STATUS: &str = include_str!("../../../events/queue-status.json");
const MY_STATUS: &str = include_str!("../../../events/my-status.json");

fn app(server: &RedisServer, ns: &str, overrides: &[(&str, &str)]) -> App {
    let env = Env {
        urls: server.url(),
        cluster: false,
    };
    App {
        store: env.store_with(ns, WORLDS, overrides),
    }
}

/// An event file, edited.
fn event(file: &str, edit: impl FnOnce(&mut Value)) -> Request {
    http_event(file, edit)
}

/// `events/queue-status.json` for `world` (path parameter and raw path).
fn queue_status_of(world: &str) -> Request {
    event(QUEUE_STATUS, |v| {
        v["pathParameters"]["worldType"] = json!(world);
        v["rawPath"] = json!(format!("/v1/matching/queue-status/{world}"));
    })
}

fn my_status_of(p: &str) -> Request {
    event(MY_STATUS, |v| {
        v["requestContext"]["authorizer"]["jwt"]["claims"]["sub"] = json!(p)
    })
}

/// Calls the handler and checks the envelope; returns (status, body).
async fn call(app: &App, req: Request) -> (u16, Value) {
    envelope(handle(app, req).await.expect("handled"))
}

async fn ok_data(app: &App, req: Request) -> Value {
    let (status, body) = call(app, req).await;
    assert_eq!(status, 200, "{body}");
    body["data"].clone()
}

/// Calls with a request that must be refused with `code` and change nothing.
async fn refused(app: &App, req: Request, status: u16, code: &str) -> Value {
    assert_refused(&app.store, call(app, req), status, code).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn queue_status_event_reports_empty_waiting_and_estimated_queues() {
    let server = RedisServer::start();
    let app = app(&server, "status-queue", &[]);
    let event_file = || event(QUEUE_STATUS, |_| {});

    assert_eq!(
        ok_data(&app, event_file()).await,
        json!({"worldType": "world1", "waiting": 0, "teamSize": 3, "teams": 1,
               "estimatedWaitSeconds": null, "oldestWaitMs": 0, "openBackfills": 0})
    );

    pre_join(&app.store, "world1", "player-1").await;
    pre_join(&app.store, "world1", "player-2").await;
    let data = eventually(
        "the oldest ticket to have waited",
        Duration::from_secs(5),
        || async {
            let data = ok_data(&app, event_file()).await;
            (data["oldestWaitMs"].as_u64() > Some(0)).then_some(data)
        },
    )
    .await;
    assert_eq!(data["waiting"], 2);
    assert_eq!(
        data["estimatedWaitSeconds"],
        Value::Null,
        "no match history yet"
    );

    // A match gives the world a history to estimate from.
    pre_join(&app.store, "world1", "player-3").await;
    pre_join(&app.store, "world1", "player-4").await;
    let data = ok_data(&app, event_file()).await;
    assert_eq!(data["waiting"], 1);
    assert!(data["estimatedWaitSeconds"].as_u64().is_some(), "{data}");

    // Without path parameters the world comes from the raw path.
    let req = event(QUEUE_STATUS, |v| {
        v.as_object_mut().unwrap().remove("pathParameters");
        v["rawPath"] = json!("/v1/matching/queue-status/world2");
    });
    assert_eq!(ok_data(&app, req).await["worldType"], "world2");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn my_status_event_reports_idle_queued_and_matched() {
    let server = RedisServer::start();
    let app = app(&server, "status-mine", &[]);
    let event_file = || event(MY_STATUS, |_| {});

    assert_eq!(ok_data(&app, event_file()).await, json!({"status": "IDLE"}));

    pre_join(&app.store, "world2", "player-2").await;
    pre_join(&app.store, "world2", "player-1").await;
    assert_eq!(
        ok_data(&app, event_file()).await,
        json!({"status": "QUEUED", "worldType": "world2", "position": 2,
               "queueSize": 2, "estimatedWaitSeconds": null})
    );

    let JoinOutcome::Matched { record, .. } = pre_join(&app.store, "world2", "player-3").await
    else {
        panic!("the third join completes the group");
    };
    let data = ok_data(&app, event_file()).await;
    assert_eq!(data["status"], "MATCHED");
    // The record, with what became of the match since (formed, no more).
    let mut expected = serde_json::to_value(&record).unwrap();
    expected["state"] = json!("FORMED");
    assert_eq!(data["match"], expected);
    assert_eq!(
        data["match"]["participants"],
        json!(["player-2", "player-1", "player-3"])
    );
    // Everyone in the match sees it.
    assert_eq!(ok_data(&app, my_status_of("player-3")).await, data);
    assert_eq!(
        ok_data(&app, my_status_of("player-4")).await,
        json!({"status": "IDLE"})
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_named_stage_in_the_path_is_ignored() {
    let server = RedisServer::start();
    let app = app(&server, "status-stage", &[]);
    let req = event(MY_STATUS, |v| {
        v["rawPath"] = json!("/prod/v1/matching/my-status");
        v["requestContext"]["stage"] = json!("prod");
    });
    assert_eq!(ok_data(&app, req).await["status"], "IDLE");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_requests_are_refused_and_change_nothing() {
    let server = RedisServer::start();
    let app = app(&server, "status-invalid", &[]);
    pre_join(&app.store, "world1", "player-1").await;

    let body = refused(&app, queue_status_of("world9"), 404, "UNKNOWN_WORLD").await;
    assert_eq!(
        body["data"],
        json!({"error": "UNKNOWN_WORLD", "worldType": "world9", "worlds": ["world1", "world2"]})
    );
    let body = refused(&app, queue_status_of("w{1}"), 400, "INVALID_REQUEST").await;
    assert_eq!(body["data"]["field"], "worldType");
    let req = event(QUEUE_STATUS, |v| {
        v.as_object_mut().unwrap().remove("pathParameters");
        v["rawPath"] = json!("/v1/matching/queue-status/w%7B1%7D");
    });
    refused(&app, req, 400, "INVALID_REQUEST").await;

    for file in [QUEUE_STATUS, MY_STATUS] {
        let req = event(file, |v| {
            v["requestContext"]
                .as_object_mut()
                .unwrap()
                .remove("authorizer");
        });
        refused(&app, req, 401, "UNAUTHORIZED").await;
        let req = event(file, |v| {
            v["requestContext"]["authorizer"]["jwt"]["claims"]["sub"] = json!("")
        });
        refused(&app, req, 401, "UNAUTHORIZED").await;

        let req = event(file, |v| {
            v["requestContext"]["http"]["method"] = json!("POST")
        });
        let body = refused(&app, req, 405, "METHOD_NOT_ALLOWED").await;
        assert_eq!(body["data"]["allowed"], json!(["GET"]));
    }

    for path in [
        "/v1/matching/join",
        "/v1/matching/queue-status/",
        "/v1/matching/queue-status/world1/extra",
        "/v1/matching/status",
    ] {
        let req = event(MY_STATUS, |v| v["rawPath"] = json!(path));
        let body = refused(&app, req, 404, "NOT_FOUND").await;
        assert_eq!(body["data"]["path"], path);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_down_answers_503_within_the_timeout() {
    let mut server = RedisServer::start();
    let app = app(
        &server,
        "status-down",
        &[
            ("REDIS_TIMEOUT_MS", "300"),
            ("REDIS_CONNECT_TIMEOUT_MS", "200"),
        ],
    );
    server.kill();
    for req in [event(QUEUE_STATUS, |_| {}), event(MY_STATUS, |_| {})] {
        assert_unavailable(call(&app, req), Duration::from_secs(3)).await;
    }
}

/// `events/match.json`: the full record for a participant; 404 for anyone
/// else and for unknown ids, 400 for malformed ones, nothing written.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn match_event_returns_the_record_only_to_participants() {
    const MATCH: &str = include_str!("../../../events/match.json");
    let server = RedisServer::start();
    let app = App {
        store: Env {
            urls: server.url(),
            cluster: false,
        }
        .store_with("status-match", "duel:2", &[]),
    };
    let (_, body) = call(&app, event(MATCH, |_| {})).await;
    assert_eq!(body["data"]["error"], "MATCH_NOT_FOUND", "{body}");
    pre_join(&app.store, "duel", "player-2").await;
    let record = match pre_join(&app.store, "duel", "player-1").await {
        JoinOutcome::Matched { record, .. } => record,
        other => panic!("{other:?}"),
    };
    let id = record.match_id.to_string();
    let for_player = |p: &'static str, id: String| {
        event(MATCH, move |v| {
            v["pathParameters"]["matchId"] = json!(id);
            v["rawPath"] = json!(format!("/v1/matching/matches/{id}"));
            v["requestContext"]["authorizer"]["jwt"]["claims"]["sub"] = json!(p);
        })
    };
    let data = ok_data(&app, for_player("player-1", id.clone())).await;
    let mut expected = serde_json::to_value(&record).unwrap();
    expected["state"] = json!("FORMED");
    assert_eq!(data, expected);
    refused(
        &app,
        for_player("player-9", id.clone()),
        404,
        "MATCH_NOT_FOUND",
    )
    .await;
    refused(
        &app,
        for_player("player-1", "Not An Id".into()),
        400,
        "INVALID_REQUEST",
    )
    .await;
}

/// The rule set of the ratings tests: a rated world, ratings written only
/// with the `matchmaking/ratings.write` scope.
const RATED_RULES: &str = r#"{"ratings": {"min": 0, "max": 5000, "writerScope": "matchmaking/ratings.write"},
    "worlds": [{"name": "ranked", "teamSize": 2, "mode": "rating",
                "rating": {"baseWindow": 50, "widenPerSecond": 5, "maxWindow": 300, "relaxAfterSeconds": 60}}]}"#;

/// `events/rating.json` (`PUT /v1/ratings/{playerId}`): stored with the
/// writer scope, then used by a join; 403 without the scope; bad ratings,
/// ids and worlds are 4xx; nothing is written by a refusal.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rating_event_writes_the_trusted_rating_only_with_the_writer_scope() {
    const RATING: &str = include_str!("../../../events/rating.json");
    let server = RedisServer::start();
    let app = App {
        store: Env {
            urls: server.url(),
            cluster: false,
        }
        .store_with("status-rating", "", &[("MM_RULES", RATED_RULES)]),
    };
    let data = ok_data(&app, event(RATING, |_| {})).await;
    assert_eq!(
        data,
        json!({"playerId": "player-7", "worldType": "ranked", "rating": 1712.5, "previousRating": null})
    );
    let again = ok_data(
        &app,
        event(RATING, |v| v["body"] = json!(r#"{"rating": 1800}"#)),
    )
    .await;
    assert_eq!(
        again["previousRating"],
        json!(null),
        "the every-world entry is separate"
    );
    // The join uses the stored rating (the world's own entry).
    let ranked = app.store.settings().worlds.get("ranked").unwrap().clone();
    match app
        .store
        .join(
            &ranked,
            &shared::PlayerId::parse("player-7").unwrap(),
            None,
            None,
        )
        .await
        .unwrap()
    {
        JoinOutcome::Queued(q) => assert_eq!(q.rated.unwrap().rating.value(), 1712.5),
        other => panic!("{other:?}"),
    }

    let without_scope = |v: &mut Value| {
        let jwt = &mut v["requestContext"]["authorizer"]["jwt"];
        jwt["scopes"] = json!(["matchmaking/play"]);
        jwt["claims"]["scope"] = json!("matchmaking/play");
    };
    let body = refused(&app, event(RATING, without_scope), 403, "FORBIDDEN").await;
    assert_eq!(body["data"]["required"], "matchmaking/ratings.write");
    for (body, code, status) in [
        (r#"{"rating": 9000}"#, "INVALID_RATING", 400),
        (
            r#"{"rating": -1, "worldType": "ranked"}"#,
            "INVALID_RATING",
            400,
        ),
        (r#"{"rating": "high"}"#, "INVALID_REQUEST", 400),
        (r#"{"rating": 10, "player": "x"}"#, "INVALID_REQUEST", 400),
        (
            r#"{"rating": 10, "worldType": "nope"}"#,
            "UNKNOWN_WORLD",
            404,
        ),
        (r#"{"worldType": "ranked"}"#, "INVALID_REQUEST", 400),
    ] {
        let b = body.to_owned();
        refused(
            &app,
            event(RATING, move |v| v["body"] = json!(b)),
            status,
            code,
        )
        .await;
    }
    refused(
        &app,
        event(RATING, |v| {
            v["pathParameters"]["playerId"] = json!("bad\nid");
        }),
        400,
        "INVALID_REQUEST",
    )
    .await;
}

/// `events/my-status.json` for party members: PARTY with the party while it
/// assembles (an invited player who has not joined is not in it yet, so
/// IDLE), then QUEUED with the party once its ticket waits.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn my_status_event_reports_an_assembling_and_a_queued_party() {
    let server = RedisServer::start();
    let app = app(&server, "status-party", &[]);
    let store = &app.store;
    let world = store.settings().worlds.get("world2").unwrap().clone();
    let id = match store
        .create_party(
            &world,
            &shared::PlayerId::parse("player-1").unwrap(),
            &[shared::PlayerId::parse("player-2").unwrap()],
            None,
            None,
        )
        .await
        .unwrap()
    {
        shared::PartyCreateOutcome::Created(view) => view.party_id,
        other => panic!("{other:?}"),
    };
    let data = ok_data(&app, my_status_of("player-1")).await;
    assert_eq!(data["status"], "PARTY", "{data}");
    assert_eq!(data["party"]["partyId"], id.as_str());
    assert_eq!(data["party"]["state"], "ASSEMBLING");
    assert_eq!(
        data["party"]["members"],
        json!([{"playerId": "player-1", "joined": true},
               {"playerId": "player-2", "joined": false}])
    );
    assert_eq!(
        ok_data(&app, my_status_of("player-2")).await,
        json!({"status": "IDLE"}),
        "invited, not joined"
    );

    let joined = store
        .join_party(
            &world,
            &id,
            &shared::PlayerId::parse("player-2").unwrap(),
            None,
            None,
        )
        .await
        .unwrap();
    assert!(
        matches!(joined, shared::PartyJoinOutcome::Queued(_)),
        "{joined:?}"
    );
    for p in ["player-1", "player-2"] {
        let data = ok_data(&app, my_status_of(p)).await;
        assert_eq!(
            (
                data["status"].as_str(),
                data["worldType"].as_str(),
                data["position"].as_u64()
            ),
            (Some("QUEUED"), Some("world2"), Some(1)),
            "{p}: {data}"
        );
        assert_eq!(data["party"]["partyId"], id.as_str(), "{p}");
        assert_eq!(data["party"]["state"], "QUEUED", "{p}");
    }
}
