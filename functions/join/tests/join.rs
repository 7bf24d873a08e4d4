//! `join` driven by its event file(s) in `events/` against real Redis.

use integration_tests::outbox_len;
use integration_tests::register_connection;
use lambda_http::Request;
use std::time::Duration;

use base64::Engine;
use integration_tests::connections_server::ConnectionsServer;
use integration_tests::lambda_events::{
    assert_refused, assert_unavailable, envelope, http_event, pre_join, set_caller, set_party_id,
    take_notes,
};
use integration_tests::scenarios::{player, Env};
use integration_tests::RedisServer;
use lambda_common::push::ApiGatewayPusher;
use serde_json::{json, Value};

use join::*;

const WORLDS: &str = "world1:3,world2:3";

/// The function wired as deployed: the real pusher, aimed at the
/// stand-in `@connections` endpoint.
struct Fixture {
    app: App<ApiGatewayPusher>,
    connections: ConnectionsServer,
}

async fn fixture(server: &RedisServer, ns: &str, overrides: &[(&str, &str)]) -> Fixture {
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
            // A rule set replaces the MM_WORLDS shorthand.
            store: env.store_with(
                ns,
                if overrides.iter().any(|(k, _)| *k == "MM_RULES") {
                    ""
                } else {
                    WORLDS
                },
                overrides,
            ),
            pusher,
        },
        connections,
    }
}

impl Fixture {
    /// Every push received, as (connection, JSON body), by connection.
    fn pushes(&self) -> Vec<(String, Value)> {
        let mut all: Vec<_> = self
            .connections
            .posts()
            .iter()
            .map(|p| (p.connection_id.clone(), p.json()))
            .collect();
        all.sort_by(|a, b| a.0.cmp(&b.0));
        all
    }
}

/// `events/join.json`, edited.
fn event(edit: impl FnOnce(&mut Value)) -> Request {
    http_event(include_str!("../../../events/join.json"), edit)
}

fn with_body(body: &str) -> Request {
    let body = body.to_owned();
    event(move |v| v["body"] = Value::String(body))
}

/// Calls the handler and checks the envelope; returns (status, body).
async fn call(fx: &Fixture, req: Request) -> (u16, Value) {
    envelope(handle(&fx.app, req).await.expect("handled"))
}

/// Calls with a request that must be refused with `code`, change nothing
/// and push nothing.
async fn refused(fx: &Fixture, req: Request, status: u16, code: &str) -> Value {
    let body = assert_refused(&fx.app.store, call(fx, req), status, code).await;
    assert!(fx.connections.posts().is_empty(), "{code} pushed something");
    body
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn join_event_queues_the_caller_and_pushes_queued() {
    let server = RedisServer::start();
    let fx = fixture(&server, "join-queued", &[]).await;
    register_connection(&fx.app.store, "conn-A1=", "player-1").await;
    register_connection(&fx.app.store, "conn-B1=", "player-2").await;
    pre_join(&fx.app.store, "world1", "player-2").await;

    let (status, body) = call(&fx, event(|_| {})).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        body["data"],
        json!({"status": "QUEUED", "worldType": "world1", "position": 2,
               "queueSize": 2, "estimatedWaitSeconds": null})
    );
    assert_eq!(
        fx.pushes(),
        [(
            "conn-A1=".to_owned(),
            json!({"type": "QUEUED", "worldType": "world1", "position": 2,
                   "queueSize": 2, "estimatedWaitSeconds": null})
        )]
    );
    match fx
        .app
        .store
        .player_status(&player("player-1"))
        .await
        .unwrap()
    {
        shared::PlayerStatus::Queued(q) => assert_eq!((q.position, q.queue_size), (2, 2)),
        other => panic!("player-1 should be queued, is {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn join_completing_a_group_matches_and_pushes_match_found_to_everyone() {
    let server = RedisServer::start();
    let fx = fixture(&server, "join-matched", &[]).await;
    register_connection(&fx.app.store, "conn-A1=", "player-1").await;
    register_connection(&fx.app.store, "conn-A2=", "player-1").await;
    register_connection(&fx.app.store, "conn-B1=", "player-2").await;
    register_connection(&fx.app.store, "conn-C1=", "player-3").await;
    pre_join(&fx.app.store, "world1", "player-2").await;
    pre_join(&fx.app.store, "world1", "player-3").await;

    let (status, body) = call(&fx, event(|_| {})).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["data"]["status"], "MATCHED");
    let record = &body["data"]["match"];
    assert_eq!(record["worldType"], "world1");
    assert_eq!(
        record["participants"],
        json!(["player-2", "player-3", "player-1"])
    );
    assert_eq!(
        record["playerData"],
        json!({"player-1": {"class": "mage", "mmr": 1500}})
    );
    assert!(record["matchId"].as_str().is_some_and(|id| !id.is_empty()));
    assert!(record["matchedAt"].as_u64().is_some_and(|t| t > 0));

    let pushes = fx.pushes();
    let conns: Vec<&str> = pushes.iter().map(|(c, _)| c.as_str()).collect();
    assert_eq!(conns, ["conn-A1=", "conn-A2=", "conn-B1=", "conn-C1="]);
    for (conn, message) in &pushes {
        assert_eq!(message["type"], "MATCH_FOUND", "{conn}");
        assert_eq!(message["matchId"], record["matchId"], "{conn}");
        assert_eq!(message["participants"], record["participants"], "{conn}");
    }
    assert_eq!(
        outbox_len(&fx.app.store).await,
        0,
        "all delivered and settled"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failed_pushes_never_fail_the_join() {
    let server = RedisServer::start();
    let fx = fixture(&server, "join-push-fails", &[]).await;
    // The endpoint fails every push: 500s, a gone connection, throttling.
    fx.connections.respond("conn-A1=", [500; 8]);
    fx.connections.set_gone("conn-B1=");
    fx.connections.respond("conn-C1=", [429; 8]);
    register_connection(&fx.app.store, "conn-A1=", "player-1").await;
    register_connection(&fx.app.store, "conn-B1=", "player-2").await;
    register_connection(&fx.app.store, "conn-C1=", "player-3").await;
    pre_join(&fx.app.store, "world1", "player-2").await;

    // QUEUED push fails: still queued.
    let req =
        event(|v| v["requestContext"]["authorizer"]["jwt"]["claims"]["sub"] = json!("player-3"));
    let (status, body) = call(&fx, req).await;
    assert_eq!(
        (status, body["data"]["status"].as_str()),
        (200, Some("QUEUED"))
    );

    // MATCH_FOUND pushes fail: still matched, and the notifications stay
    // in the outbox for the matcher to retry.
    let (status, body) = call(&fx, event(|_| {})).await;
    assert_eq!(
        (status, body["data"]["status"].as_str()),
        (200, Some("MATCHED")),
        "{body}"
    );
    let posts = fx.connections.posts();
    assert!(
        !posts.is_empty() && posts.iter().all(|p| !p.delivered()),
        "{posts:?}"
    );
    assert_eq!(outbox_len(&fx.app.store).await, 1, "the match's one entry");
}

/// A join never waits long on a slow `@connections` endpoint: every push is
/// bounded (`JOIN_PUSH_TIMEOUT`); what did not get through stays in the
/// outbox for the matcher.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_push_endpoint_does_not_hold_the_join() {
    let server = RedisServer::start();
    let fx = fixture(&server, "join-stalled", &[]).await;
    for (conn, p) in [
        ("conn-A1=", "player-1"),
        ("conn-B1=", "player-2"),
        ("conn-C1=", "player-3"),
    ] {
        register_connection(&fx.app.store, conn, p).await;
        fx.connections.stall(conn, Duration::from_secs(20));
    }
    pre_join(&fx.app.store, "world1", "player-2").await;
    pre_join(&fx.app.store, "world1", "player-3").await;
    let started = std::time::Instant::now();
    let (status, body) = call(&fx, event(|_| {})).await;
    let took = started.elapsed();
    assert_eq!(
        (status, body["data"]["status"].as_str()),
        (200, Some("MATCHED")),
        "{body}"
    );
    assert!(
        took < shared::use_cases::JOIN_PUSH_TIMEOUT + Duration::from_secs(2),
        "the join took {took:?} with every push stalled"
    );
    assert_eq!(outbox_len(&fx.app.store).await, 1, "left for the matcher");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn base64_bodies_and_missing_content_type_are_accepted() {
    let server = RedisServer::start();
    let fx = fixture(&server, "join-encodings", &[]).await;
    let encoded = base64::engine::general_purpose::STANDARD.encode(r#"{"worldType":"world2"}"#);
    let req = event(|v| {
        v["body"] = json!(encoded);
        v["isBase64Encoded"] = json!(true);
        v["headers"].as_object_mut().unwrap().remove("content-type");
    });
    let (status, body) = call(&fx, req).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["data"]["worldType"], "world2");

    let req = event(|v| {
        v["headers"]["content-type"] = json!("application/json; charset=UTF-8");
        v["requestContext"]["authorizer"]["jwt"]["claims"]["sub"] = json!("player-2");
    });
    let (status, body) = call(&fx, req).await;
    assert_eq!(
        (status, body["data"]["position"].as_u64()),
        (200, Some(1)),
        "{body}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn already_queued_is_a_conflict_with_the_current_place() {
    let server = RedisServer::start();
    let fx = fixture(&server, "join-already", &[]).await;
    pre_join(&fx.app.store, "world1", "player-2").await;
    pre_join(&fx.app.store, "world1", "player-1").await;

    let body = refused(&fx, event(|_| {}), 409, "ALREADY_QUEUED").await;
    assert_eq!(
        body["data"],
        json!({"error": "ALREADY_QUEUED", "worldType": "world1", "position": 2,
               "queueSize": 2, "estimatedWaitSeconds": null})
    );
    // Joining another world reports the world the player waits in.
    let body = refused(
        &fx,
        with_body(r#"{"worldType":"world2"}"#),
        409,
        "ALREADY_QUEUED",
    )
    .await;
    assert_eq!(body["data"]["worldType"], "world1");
    assert_eq!(body["data"]["position"], 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn callers_without_a_usable_identity_are_unauthorized() {
    let server = RedisServer::start();
    let fx = fixture(&server, "join-unauth", &[]).await;
    let claims = |edit: fn(&mut Value)| {
        event(move |v| edit(&mut v["requestContext"]["authorizer"]["jwt"]["claims"]))
    };
    for req in [
        event(|v| {
            v["requestContext"]
                .as_object_mut()
                .unwrap()
                .remove("authorizer");
        }),
        claims(|c| {
            c.as_object_mut().unwrap().remove("sub");
        }),
        claims(|c| c["sub"] = json!("")),
        claims(|c| c["sub"] = json!("player\n1")),
        claims(|c| c["sub"] = json!("x".repeat(129))),
    ] {
        refused(&fx, req, 401, "UNAUTHORIZED").await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_bodies_are_refused_with_what_is_wrong() {
    let server = RedisServer::start();
    let fx = fixture(&server, "join-invalid", &[]).await;
    let oversized_data = format!(
        r#"{{"worldType":"world1","data":{{"x":"{}"}}}}"#,
        "y".repeat(5000)
    );
    for (body, says) in [
        (r#"{"worldType":"world1""#, "EOF"),
        ("not json", "expected"),
        ("", "required"),
        (
            r#"{"worldType":"world1","player":"player-9"}"#,
            "unknown field `player`",
        ),
        (r#"{"worldType":1}"#, "invalid type"),
        (r#"{"data":{}}"#, "missing field `worldType`"),
        (r#"["world1"]"#, "must be a JSON object"),
        ("null", "must be a JSON object"),
        (r#"{"worldType":"w{1}"}"#, "invalid world name"),
        (r#"{"worldType":"World1"}"#, "invalid world name"),
        (
            r#"{"worldType":"world1","data":[1,2]}"#,
            "must be a JSON object",
        ),
        (
            r#"{"worldType":"world1","data":"mage"}"#,
            "must be a JSON object",
        ),
        (oversized_data.as_str(), "at most 4096"),
    ] {
        let resp = refused(&fx, with_body(body), 400, "INVALID_REQUEST").await;
        let msg = resp["msg"].as_str().unwrap();
        assert!(
            msg.contains(says),
            "{body:?}: {msg:?} should mention {says:?}"
        );
    }
    // Invalid UTF-8, delivered base64-encoded.
    let req = event(|v| {
        v["body"] = json!(base64::engine::general_purpose::STANDARD.encode([b'{', 0xff, b'}']));
        v["isBase64Encoded"] = json!(true);
    });
    let resp = refused(&fx, req, 400, "INVALID_REQUEST").await;
    assert!(resp["msg"].as_str().unwrap().contains("UTF-8"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn size_media_type_method_and_path_are_checked() {
    let server = RedisServer::start();
    let fx = fixture(&server, "join-limits", &[]).await;
    let huge = format!(r#"{{"worldType":"world1","pad":"{}"}}"#, "z".repeat(9000));
    let body = refused(&fx, with_body(&huge), 413, "PAYLOAD_TOO_LARGE").await;
    assert_eq!(body["data"]["limitBytes"], 8192);

    for ct in [
        "text/plain",
        "application/x-www-form-urlencoded",
        "application/xml",
    ] {
        let req = event(|v| v["headers"]["content-type"] = json!(ct));
        let body = refused(&fx, req, 415, "UNSUPPORTED_MEDIA_TYPE").await;
        assert_eq!(body["data"]["contentType"], ct);
    }

    let req = event(|v| v["requestContext"]["http"]["method"] = json!("GET"));
    let resp = handle(&fx.app, req).await.unwrap();
    assert_eq!(resp.headers()["allow"], "POST");
    let req = event(|v| v["requestContext"]["http"]["method"] = json!("PUT"));
    let body = refused(&fx, req, 405, "METHOD_NOT_ALLOWED").await;
    assert_eq!(body["data"]["allowed"], json!(["POST"]));

    for path in ["/v1/matching/leave", "/v1/matching/joins", "/"] {
        let req = event(|v| v["rawPath"] = json!(path));
        let body = refused(&fx, req, 404, "NOT_FOUND").await;
        assert_eq!(body["data"]["path"], path);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_worlds_list_the_configured_ones() {
    let server = RedisServer::start();
    let fx = fixture(&server, "join-unknown", &[]).await;
    let body = refused(
        &fx,
        with_body(r#"{"worldType":"world9"}"#),
        404,
        "UNKNOWN_WORLD",
    )
    .await;
    assert_eq!(
        body["data"],
        json!({"error": "UNKNOWN_WORLD", "worldType": "world9", "worlds": ["world1", "world2"]})
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_queue_is_unavailable_for_now() {
    let server = RedisServer::start();
    let fx = fixture(&server, "join-full", &[("MM_QUEUE_CAPACITY", "1")]).await;
    pre_join(&fx.app.store, "world1", "player-2").await;
    let body = refused(&fx, event(|_| {}), 503, "QUEUE_FULL").await;
    assert_eq!(body["data"]["worldType"], "world1");
    assert_eq!(body["data"]["queueSize"], 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_down_answers_503_within_the_timeout() {
    let mut server = RedisServer::start();
    let fx = fixture(
        &server,
        "join-down",
        &[
            ("REDIS_TIMEOUT_MS", "300"),
            ("REDIS_CONNECT_TIMEOUT_MS", "200"),
        ],
    )
    .await;
    server.kill();
    assert_unavailable(call(&fx, event(|_| {})), Duration::from_secs(3)).await;
    assert!(fx.pushes().is_empty());
}

/// A rated world for the rating-source tests: ratings from the `mmr` claim,
/// in [0, 5000], no default.
const RATED_RULES: &str = r#"{"ratings": {"claim": "mmr", "min": 0, "max": 5000},
    "worlds": [{"name": "ranked", "teamSize": 2, "mode": "rating",
                "rating": {"baseWindow": 50, "widenPerSecond": 5, "maxWindow": 300, "relaxAfterSeconds": 60}}]}"#;

fn rated_join(sub: &str, mmr: Option<&str>, body: &str) -> Request {
    let (sub, mmr, body) = (sub.to_owned(), mmr.map(str::to_owned), body.to_owned());
    event(move |v| {
        let claims = &mut v["requestContext"]["authorizer"]["jwt"]["claims"];
        claims["sub"] = json!(sub);
        if let Some(m) = mmr {
            claims["mmr"] = json!(m);
        }
        v["body"] = json!(body);
    })
}

/// In a rated world the rating comes from the verified claim (never from the
/// body: ticket data stays opaque); a missing or unusable claim is refused
/// with its own code and writes nothing; a rated match carries ratings and
/// its spread.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rated_joins_take_the_rating_from_the_verified_claim() {
    let server = RedisServer::start();
    let fx = fixture(&server, "join-rated", &[("MM_RULES", RATED_RULES)]).await;
    let world = r#"{"worldType":"ranked","data":{"mmr":9999}}"#;
    let (status, body) = call(&fx, rated_join("p1", Some("1500"), world)).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        body["data"]["rating"], 1500.0,
        "the claim, not the ticket data"
    );
    assert_eq!(body["data"]["ratingWindow"], 50.0);
    assert_eq!(body["data"]["relaxesInSeconds"], 60);
    let body = refused(&fx, rated_join("p2", None, world), 409, "RATING_REQUIRED").await;
    assert_eq!(body["data"]["worldType"], "ranked");
    for bad in ["high", "9000", "-3", "NaN"] {
        let body = refused(
            &fx,
            rated_join("p3", Some(bad), world),
            400,
            "INVALID_RATING",
        )
        .await;
        assert_eq!(body["data"]["source"], "claim", "{bad}");
    }
    let (status, body) = call(&fx, rated_join("p4", Some("1530"), world)).await;
    assert_eq!(status, 200, "{body}");
    let record = &body["data"]["match"];
    assert_eq!(record["participants"], json!(["p1", "p4"]));
    assert_eq!(record["ratings"], json!({"p1": 1500.0, "p4": 1530.0}));
    assert_eq!(record["spread"], 30.0);
}

const CREATE_PARTY: &str = include_str!("../../../events/create-party.json");
const JOIN_PARTY: &str = include_str!("../../../events/join-party.json");

/// `events/create-party.json` (player-1 invites player-2 and player-3 to a
/// world1 party) with another body.
fn create_party_with(body: &str) -> Request {
    let body = body.to_owned();
    http_event(CREATE_PARTY, move |v| v["body"] = json!(body))
}

/// `events/join-party.json` for caller `sub` and party `party_id`.
fn join_party_event(sub: &str, party_id: &str) -> Request {
    http_event(JOIN_PARTY, |v| {
        set_caller(v, sub);
        set_party_id(v, party_id);
    })
}

/// `(playerId, joined)` of each member of a party view.
fn members(party: &Value) -> Vec<(String, bool)> {
    party["members"]
        .as_array()
        .expect("members")
        .iter()
        .map(|m| {
            (
                m["playerId"].as_str().unwrap().to_owned(),
                m["joined"].as_bool().unwrap(),
            )
        })
        .collect()
}

fn assigned(pairs: &[(&str, bool)]) -> Vec<(String, bool)> {
    pairs.iter().map(|(p, j)| (p.to_string(), *j)).collect()
}

/// `events/create-party.json` answers 201 with the assembling party (and
/// tells the invited through the outbox, without pushing itself); each
/// invited member joins with `events/join-party.json`, and the last one
/// completes world1's three seats: the party is matched whole at once and
/// everyone gets MATCH_FOUND.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn party_events_create_a_party_that_is_matched_whole_once_everyone_joined() {
    let server = RedisServer::start();
    let fx = fixture(&server, "join-party", &[]).await;
    for (conn, p) in [
        ("conn-A1=", "player-1"),
        ("conn-B1=", "player-2"),
        ("conn-C1=", "player-3"),
    ] {
        register_connection(&fx.app.store, conn, p).await;
    }

    let (status, body) = call(&fx, http_event(CREATE_PARTY, |_| {})).await;
    assert_eq!(status, 201, "{body}");
    assert_eq!(body["data"]["status"], "PARTY", "{body}");
    let party = body["data"]["party"].clone();
    let id = party["partyId"].as_str().expect("partyId").to_owned();
    let (world, serial) = id.split_once('.').expect("<world>.<hex>-<hex>");
    assert_eq!(world, "world1");
    assert!(
        serial
            .split('-')
            .all(|h| !h.is_empty() && h.chars().all(|c| c.is_ascii_hexdigit()))
            && serial.split('-').count() == 2,
        "{id}"
    );
    assert_eq!(party["worldType"], "world1");
    assert_eq!(party["leader"], "player-1");
    assert_eq!(party["state"], "ASSEMBLING");
    assert!(
        party["expiresAt"].as_u64().is_some_and(|t| t > 0),
        "{party}"
    );
    assert_eq!(
        members(&party),
        assigned(&[("player-1", true), ("player-2", false), ("player-3", false)])
    );
    assert!(fx.pushes().is_empty(), "creating a party pushes nothing");
    assert_eq!(
        take_notes(&fx.app.store).await,
        [(
            json!({"type": "PARTY_UPDATE", "party": party}),
            vec!["player-2".to_owned(), "player-3".to_owned()]
        )],
        "the invited are told through the outbox"
    );

    // player-2 joins: still assembling; the others are told.
    let (status, body) = call(&fx, join_party_event("player-2", &id)).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["data"]["status"], "PARTY");
    let joined = &body["data"]["party"];
    assert_eq!(joined["partyId"], id.as_str());
    assert_eq!(joined["state"], "ASSEMBLING");
    assert_eq!(
        members(joined),
        assigned(&[("player-1", true), ("player-2", true), ("player-3", false)])
    );
    let notes = take_notes(&fx.app.store).await;
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert_eq!(notes[0].0["type"], "PARTY_UPDATE");
    assert_eq!(notes[0].1, ["player-1", "player-3"]);

    // Joining again changes nothing and answers the same party.
    let (status, again) = call(&fx, join_party_event("player-2", &id)).await;
    assert_eq!((status, &again["data"]), (200, &body["data"]), "{again}");

    // player-3, the last, completes the party: three seats, matched at once.
    let (status, body) = call(&fx, join_party_event("player-3", &id)).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["data"]["status"], "MATCHED", "{body}");
    let record = &body["data"]["match"];
    assert_eq!(record["worldType"], "world1");
    let trio = json!(["player-1", "player-2", "player-3"]);
    assert_eq!(record["participants"], trio);
    assert_eq!(record["parties"], json!([trio]), "{record}");
    assert_eq!(
        record["playerData"],
        json!({"player-1": {"class": "mage", "mmr": 1500},
               "player-2": {"class": "healer", "mmr": 1480},
               "player-3": {"class": "healer", "mmr": 1480}}),
        "each member's own ticket data"
    );
    let pushes = fx.pushes();
    let conns: Vec<&str> = pushes.iter().map(|(c, _)| c.as_str()).collect();
    assert_eq!(conns, ["conn-A1=", "conn-B1=", "conn-C1="]);
    for (conn, message) in &pushes {
        assert_eq!(message["type"], "MATCH_FOUND", "{conn}");
        assert_eq!(message["matchId"], record["matchId"], "{conn}");
    }
    assert_eq!(outbox_len(&fx.app.store).await, 0, "all delivered");
    // The party is gone with its match.
    let before = fx.connections.posts().len();
    assert_refused(
        &fx.app.store,
        call(&fx, join_party_event("player-3", &id)),
        404,
        "PARTY_NOT_FOUND",
    )
    .await;
    assert_eq!(fx.connections.posts().len(), before);
}

/// A complete party that finds no match waits as ONE ticket: the last
/// member's answer is QUEUED with the party.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_complete_party_without_a_match_waits_as_one_ticket() {
    let server = RedisServer::start();
    let fx = fixture(&server, "join-party-queued", &[]).await;
    let req = create_party_with(r#"{"worldType":"world2","members":["player-2"]}"#);
    let (status, body) = call(&fx, req).await;
    assert_eq!(status, 201, "{body}");
    let id = body["data"]["party"]["partyId"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(id.starts_with("world2."), "{id}");

    let (status, body) = call(&fx, join_party_event("player-2", &id)).await;
    assert_eq!(status, 200, "{body}");
    let data = &body["data"];
    assert_eq!(
        (
            data["status"].as_str(),
            data["worldType"].as_str(),
            data["position"].as_u64(),
            data["queueSize"].as_u64()
        ),
        (Some("QUEUED"), Some("world2"), Some(1), Some(1)),
        "{body}"
    );
    assert_eq!(data["party"]["state"], "QUEUED");
    assert_eq!(
        members(&data["party"]),
        assigned(&[("player-1", true), ("player-2", true)])
    );
    // A member cannot queue alone meanwhile.
    let body = refused(&fx, event(|v| set_caller(v, "player-2")), 409, "IN_PARTY").await;
    assert_eq!(body["data"]["worldType"], "world2");
}

/// The fixture's party id names no party: 404 PARTY_NOT_FOUND, as do a
/// party the caller is not invited to and one of an unconfigured world; a
/// malformed id is 400.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn joining_a_party_one_is_not_invited_to_is_party_not_found() {
    let server = RedisServer::start();
    let fx = fixture(&server, "join-party-missing", &[]).await;
    let body = refused(&fx, http_event(JOIN_PARTY, |_| {}), 404, "PARTY_NOT_FOUND").await;
    assert_eq!(
        body["data"],
        json!({"error": "PARTY_NOT_FOUND", "partyId": "world1.18f3a-2b"})
    );

    let (status, body) = call(&fx, http_event(CREATE_PARTY, |_| {})).await;
    assert_eq!(status, 201, "{body}");
    let id = body["data"]["party"]["partyId"]
        .as_str()
        .unwrap()
        .to_owned();
    let body = refused(
        &fx,
        join_party_event("player-9", &id),
        404,
        "PARTY_NOT_FOUND",
    )
    .await;
    assert_eq!(body["data"]["partyId"], id.as_str());
    refused(
        &fx,
        join_party_event("player-2", "world9.1-a"),
        404,
        "PARTY_NOT_FOUND",
    )
    .await;
    for bad in ["World1.1-a", "world1", "world1.1_a"] {
        let req = http_event(JOIN_PARTY, |v| v["pathParameters"]["partyId"] = json!(bad));
        let body = refused(&fx, req, 400, "INVALID_REQUEST").await;
        assert_eq!(body["data"]["field"], "partyId", "{bad}");
    }
}

/// Creating a party is refused, writing nothing, when it is not a party
/// (INVALID_PARTY), when someone involved is busy (MEMBER_BUSY, IN_PARTY,
/// ALREADY_QUEUED) or when the body is wrong.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn party_creation_refusals_say_what_is_wrong() {
    let server = RedisServer::start();
    let fx = fixture(&server, "join-party-refused", &[]).await;
    let body = refused(
        &fx,
        create_party_with(r#"{"worldType":"world1","members":["player-1"]}"#),
        400,
        "INVALID_PARTY",
    )
    .await;
    assert_eq!(body["data"]["field"], "members");
    let body = refused(
        &fx,
        create_party_with(r#"{"worldType":"world1","members":["player-2","player-3","player-4"]}"#),
        400,
        "INVALID_PARTY",
    )
    .await;
    assert_eq!(
        body["data"],
        json!({"error": "INVALID_PARTY", "worldType": "world1", "size": 4, "maxPartySize": 3})
    );
    for (req, status, code) in [
        (
            create_party_with(r#"{"worldType":"world1"}"#),
            400,
            "INVALID_REQUEST",
        ),
        (
            create_party_with(r#"{"worldType":"world1","members":["bad\nid"]}"#),
            400,
            "INVALID_REQUEST",
        ),
        (
            create_party_with(r#"{"worldType":"world9","members":["player-2"]}"#),
            404,
            "UNKNOWN_WORLD",
        ),
    ] {
        refused(&fx, req, status, code).await;
    }

    pre_join(&fx.app.store, "world2", "player-3").await;
    let body = refused(&fx, http_event(CREATE_PARTY, |_| {}), 409, "MEMBER_BUSY").await;
    assert_eq!(
        body["data"],
        json!({"error": "MEMBER_BUSY", "playerId": "player-3"})
    );
    // The queued player as the leader.
    let req = http_event(CREATE_PARTY, |v| {
        set_caller(v, "player-3");
        v["body"] = json!(r#"{"worldType":"world1","members":["player-1"]}"#);
    });
    let body = refused(&fx, req, 409, "ALREADY_QUEUED").await;
    assert_eq!(body["data"]["worldType"], "world2");

    let req = create_party_with(r#"{"worldType":"world1","members":["player-2"]}"#);
    let (status, body) = call(&fx, req).await;
    assert_eq!(status, 201, "{body}");
    let id = body["data"]["party"]["partyId"].clone();
    let body = refused(
        &fx,
        create_party_with(r#"{"worldType":"world1","members":["player-4"]}"#),
        409,
        "IN_PARTY",
    )
    .await;
    assert_eq!(body["data"]["partyId"], id);
}

/// A rule set of worlds `casual` and `ranked` (queueGroup "pvp"), `solo`
/// (none) and `roles` (queueGroup "pvp", a role attribute).
const GROUPED: &str = r#"{
  "attributes": {"role": {"type": "string", "values": ["tank", "healer"], "missing": "refuse"}},
  "worlds": [
    {"name": "casual", "teamSize": 3, "queueGroup": "pvp"},
    {"name": "ranked", "teamSize": 2, "queueGroup": "pvp"},
    {"name": "roles", "teamSize": 2, "queueGroup": "pvp", "attributes": ["role"]},
    {"name": "solo", "teamSize": 2}
  ]
}"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_join_queues_a_ticket_in_several_worlds_of_a_group() {
    let server = RedisServer::start();
    let fx = fixture(&server, "join-several", &[("MM_RULES", GROUPED)]).await;
    let (status, body) = call(
        &fx,
        with_body(
            r#"{"worldType":"casual","alsoIn":[{"worldType":"ranked"},
                {"worldType":"roles","attributes":{"role":"tank"}}]}"#,
        ),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["data"]["status"], "QUEUED");
    assert_eq!(body["data"]["worldType"], "casual");
    assert_eq!(body["data"]["alsoQueuedIn"], json!(["ranked", "roles"]));
    // A second player in ranked completes its match: the ticket leaves
    // casual and roles with it.
    let (status, body) = call(
        &fx,
        event(|v| {
            v["body"] = json!(r#"{"worldType":"ranked"}"#);
            v["requestContext"]["authorizer"]["jwt"]["claims"]["sub"] = json!("player-2");
        }),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["data"]["status"], "MATCHED", "{body}");
    assert_eq!(body["data"]["match"]["worldType"], "ranked");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_lists_of_worlds_are_refused_and_change_nothing() {
    let server = RedisServer::start();
    let fx = fixture(&server, "join-several-bad", &[("MM_RULES", GROUPED)]).await;
    for (body, status, code, says) in [
        (
            r#"{"worldType":"casual","alsoIn":[{"worldType":"casual"}]}"#,
            400,
            "INVALID_WORLDS",
            "listed twice",
        ),
        (
            r#"{"worldType":"casual","alsoIn":[{"worldType":"ranked"},{"worldType":"ranked"}]}"#,
            400,
            "INVALID_WORLDS",
            "listed twice",
        ),
        (
            r#"{"worldType":"casual","alsoIn":[{"worldType":"solo"}]}"#,
            400,
            "INVALID_WORLDS",
            "not in the queueGroup",
        ),
        (
            r#"{"worldType":"solo","alsoIn":[{"worldType":"casual"}]}"#,
            400,
            "INVALID_WORLDS",
            "not in the queueGroup",
        ),
        (
            r#"{"worldType":"casual","alsoIn":[{"worldType":"ranked"},{"worldType":"roles"},{"worldType":"solo"},{"worldType":"x"}]}"#,
            400,
            "INVALID_REQUEST",
            "at most 4 worlds",
        ),
        (
            r#"{"worldType":"casual","alsoIn":[{"worldType":"nowhere"}]}"#,
            404,
            "UNKNOWN_WORLD",
            "not configured",
        ),
        (
            r#"{"worldType":"casual","alsoIn":[{"worldType":"roles","attributes":{"role":"mage"}}]}"#,
            400,
            "INVALID_ATTRIBUTES",
            "role",
        ),
        (
            r#"{"worldType":"casual","alsoIn":[{"worldType":"roles"}]}"#,
            400,
            "INVALID_ATTRIBUTES",
            "role",
        ),
        (
            r#"{"worldType":"casual","alsoIn":[{"world":"ranked"}]}"#,
            400,
            "INVALID_REQUEST",
            "unknown field",
        ),
        (
            r#"{"worldType":"casual","alsoIn":{"worldType":"ranked"}}"#,
            400,
            "INVALID_REQUEST",
            "invalid type",
        ),
    ] {
        let resp = refused(&fx, with_body(body), status, code).await;
        let msg = resp["msg"].as_str().unwrap_or_default();
        assert!(
            msg.contains(says),
            "{body}: {msg:?} should mention {says:?}"
        );
    }
}

/// A party in several worlds of a group over HTTP: created with `alsoIn`,
/// joined by a member admitted by each world (the role queue asks for a
/// role), shown with `alsoQueuedIn`; worlds the party does not queue in, or
/// outside the group, are refused and change nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_party_queues_in_several_worlds_of_a_group() {
    let server = RedisServer::start();
    let fx = fixture(&server, "party-several", &[("MM_RULES", GROUPED)]).await;
    refused(
        &fx,
        create_party_with(
            r#"{"worldType":"casual","members":["player-2"],"alsoIn":[{"worldType":"solo"}]}"#,
        ),
        400,
        "INVALID_WORLDS",
    )
    .await;
    refused(
        &fx,
        create_party_with(
            r#"{"worldType":"casual","members":["player-2"],"alsoIn":[{"worldType":"roles"}]}"#,
        ),
        400,
        "INVALID_ATTRIBUTES",
    )
    .await;
    let (status, body) = call(
        &fx,
        create_party_with(
            r#"{"worldType":"casual","members":["player-2"],
                "alsoIn":[{"worldType":"roles","attributes":{"role":"tank"}}]}"#,
        ),
    )
    .await;
    assert_eq!(status, 201, "{body}");
    let party = body["data"]["party"].clone();
    assert_eq!(party["alsoQueuedIn"], json!(["roles"]), "{body}");
    let id = party["partyId"].as_str().expect("party id").to_owned();
    let join_with_body = |body: &str| {
        let body = body.to_owned();
        http_event(JOIN_PARTY, |v| {
            set_caller(v, "player-2");
            set_party_id(v, &id);
            v["body"] = json!(body);
        })
    };
    refused(
        &fx,
        join_with_body(r#"{"alsoIn":[{"worldType":"ranked"}]}"#),
        400,
        "INVALID_WORLDS",
    )
    .await;
    // No role: the role queue cannot admit player-2.
    refused(&fx, join_with_body("{}"), 400, "INVALID_ATTRIBUTES").await;
    // The join's attributes apply where the world takes attributes. The
    // party fills the role queue (2 players) at once: it plays there, each
    // member in their role there, and leaves casual.
    let (status, body) = call(&fx, join_with_body(r#"{"attributes":{"role":"healer"}}"#)).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["data"]["status"], "MATCHED", "{body}");
    let record = &body["data"]["match"];
    assert_eq!(record["worldType"], "roles");
    assert_eq!(record["parties"], json!([["player-1", "player-2"]]));
    assert_eq!(
        record["attributes"],
        json!({"player-1": {"role": "tank"}, "player-2": {"role": "healer"}})
    );
    let casual = fx
        .app
        .store
        .keys()
        .world(&shared::WorldName::parse("casual").expect("name"))
        .queue;
    let waiting: usize = fx
        .app
        .store
        .command(redis::cmd("ZCARD").arg(casual))
        .await
        .expect("ZCARD");
    assert_eq!(waiting, 0, "the party left casual");
}
