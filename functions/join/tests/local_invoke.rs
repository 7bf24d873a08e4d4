//! Every event `template.yaml` routes to `join`, run through the built
//! `join` binary the way `sam local invoke` runs it: the real process
//! against the in-process Lambda Runtime API emulator, with `env.json`'s
//! environment pointed at a private Redis and the `@connections` stand-in
//! (`integration_tests::runtime_api`). Also: join starts and answers without
//! `MM_WS_ENDPOINT`, and a malformed one is reported as an init error
//! instead of hanging the invoke.

use integration_tests::lambda_events::set_party_id;
use integration_tests::register_connection;
use integration_tests::runtime_api::local::{
    function_deadline, http_envelope, log_records, LocalEnv, WAIT,
};
use integration_tests::runtime_api::template::claimed_events;
use integration_tests::scenarios::player;
use serde_json::{json, Value};
use shared::MatchStore;

const BIN: &str = env!("CARGO_BIN_EXE_join");
/// The function's name under `sam local invoke` (its logical id).
const NAME: &str = "JoinFunction";
/// The events this test has an expectation for: exactly those the template
/// routes to `join` ([`claimed_events`] checks).
const CLAIMS: &[&str] = &[
    "join.json",
    "create-party.json",
    "join-party.json",
    "accept.json",
];

async fn pre_join(store: &MatchStore, p: &str) {
    let world = store.settings().worlds.get("world1").unwrap();
    store.join(world, &player(p), None, None).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_event_routed_to_join_is_answered_by_the_built_binary() {
    let events = claimed_events("join", CLAIMS);
    let env = LocalEnv::start().await;
    let store = env.store();
    // One process for every event, as Lambda reuses a warm environment.
    let mut join = env.function(BIN, NAME).await;
    for (name, event) in &events {
        env.flush().await;
        match name.as_str() {
            "join.json" => {
                register_connection(&store, "conn-player-1=", "player-1").await;
                let answer = join.respond(event, &function_deadline(), WAIT).await;
                let (status, body) = http_envelope(&answer);
                assert_eq!(status, 200, "{body}");
                assert_eq!(
                    body["data"],
                    json!({"status": "QUEUED", "worldType": "world1", "position": 1,
                           "queueSize": 1, "estimatedWaitSeconds": null})
                );
                // The caller's connection got QUEUED through @connections.
                let pushed = env
                    .stand_in
                    .wait_for_deliveries("conn-player-1=", 1, WAIT)
                    .await;
                assert_eq!(pushed[0]["type"], "QUEUED", "{pushed:?}");
                assert!(env.stand_in.posts()[0]
                    .path
                    .starts_with("/prod/@connections/"));
            }
            "create-party.json" => {
                let answer = join.respond(event, &function_deadline(), WAIT).await;
                let (status, body) = http_envelope(&answer);
                assert_eq!(status, 201, "{body}");
                let party = &body["data"]["party"];
                assert_eq!(body["data"]["status"], "PARTY", "{body}");
                assert_eq!(party["leader"], "player-1");
                assert_eq!(party["state"], "ASSEMBLING");
                assert_eq!(
                    party["members"],
                    json!([{"playerId": "player-1", "joined": true},
                           {"playerId": "player-2", "joined": false},
                           {"playerId": "player-3", "joined": false}])
                );
            }
            "join-party.json" => {
                // As it is: party ids are made at creation, so there is no
                // such party (docs/http-api.md, "Sample events").
                let answer = join.respond(event, &function_deadline(), WAIT).await;
                let (status, body) = http_envelope(&answer);
                assert_eq!(
                    (status, &body["data"]),
                    (
                        404,
                        &json!({"error": "PARTY_NOT_FOUND", "partyId": "world1.18f3a-2b"})
                    )
                );
                // With the id create-party.json was answered with, as the
                // docs say to use it: player-2 joins, player-3 still to come.
                let created = join
                    .respond(&events["create-party.json"], &function_deadline(), WAIT)
                    .await;
                let (_, created) = http_envelope(&created);
                let id = created["data"]["party"]["partyId"].as_str().unwrap();
                let mut edited: Value = event.clone();
                set_party_id(&mut edited, id);
                let answer = join.respond(&edited, &function_deadline(), WAIT).await;
                let (status, body) = http_envelope(&answer);
                assert_eq!(status, 200, "{body}");
                assert_eq!(body["data"]["status"], "PARTY", "{body}");
                assert_eq!(body["data"]["party"]["partyId"], id);
                assert_eq!(
                    body["data"]["party"]["members"][1],
                    json!({"playerId": "player-2", "joined": true})
                );
            }
            "accept.json" => {
                // As it is: match proposals get their ids when they are
                // made, and env.json's worlds have no ready check.
                let answer = join.respond(event, &function_deadline(), WAIT).await;
                let (status, body) = http_envelope(&answer);
                assert_eq!(
                    (status, &body["data"]["error"], &body["data"]["matchId"]),
                    (404, &json!("PROPOSAL_NOT_FOUND"), &json!("18f3a-4")),
                    "{body}"
                );
            }
            other => unreachable!("{other} is not claimed"),
        }
    }
    join.stop_without_errors();
}

/// Without `MM_WS_ENDPOINT` join starts (one warning), answers its event,
/// and a push it cannot make stays in the outbox for the matcher.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn join_answers_without_mm_ws_endpoint_and_keeps_the_match_for_the_matcher() {
    let events = claimed_events("join", CLAIMS);
    let env = LocalEnv::start().await;
    let store = env.store();
    for p in ["player-1", "player-2", "player-3"] {
        register_connection(&store, &format!("conn-{p}="), p).await;
    }
    // player-1's join completes a group of three: an instant match to push.
    pre_join(&store, "player-2").await;
    pre_join(&store, "player-3").await;
    let mut join = env
        .function_with(BIN, NAME, &[("MM_WS_ENDPOINT", None)])
        .await;
    let answer = join
        .respond(&events["join.json"], &function_deadline(), WAIT)
        .await;
    let (status, body) = http_envelope(&answer);
    assert_eq!(
        (status, &body["data"]["status"]),
        (200, &json!("MATCHED")),
        "{body}"
    );
    let match_id = body["data"]["match"]["matchId"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(env.stand_in.posts().is_empty(), "nothing can be pushed");
    let outbox: Vec<String> = store
        .command(
            redis::cmd("ZRANGE")
                .arg(store.keys().outbox())
                .arg(0)
                .arg(-1),
        )
        .await
        .unwrap();
    assert!(
        outbox.contains(&format!("M|{match_id}")),
        "MATCH_FOUND stays in the outbox: {outbox:?}"
    );
    let output = join.stop_without_errors();
    let warnings: Vec<Value> = log_records(&output, "WARN")
        .into_iter()
        .filter(|r| r["variable"] == "MM_WS_ENDPOINT")
        .collect();
    assert_eq!(warnings.len(), 1, "{}", output.join("\n"));
    assert!(
        warnings[0]["message"]
            .as_str()
            .is_some_and(|m| m.contains("MM_WS_ENDPOINT is not set")),
        "{}",
        warnings[0]
    );
}

/// A configuration that cannot work fails the start visibly: the error is
/// posted to `/runtime/init/error` (the invoke answers it instead of
/// waiting) and the process exits.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_malformed_endpoint_is_an_init_error_not_a_hang() {
    let events = claimed_events("join", CLAIMS);
    let env = LocalEnv::start().await;
    let mut join = env
        .function_with(
            BIN,
            NAME,
            &[("MM_WS_ENDPOINT", Some("wss://not-a-management-endpoint"))],
        )
        .await;
    let event = serde_json::to_vec(&events["join.json"]).unwrap();
    let init = join.expect_init_error(&event, "MM_WS_ENDPOINT").await;
    assert_eq!(init.error_type.as_deref(), Some("Runtime.InitError"));
}
