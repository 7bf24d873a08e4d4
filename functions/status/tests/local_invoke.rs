//! Every event `template.yaml` routes to `status`, run through the built
//! `status` binary the way `sam local invoke` runs it: the real process
//! against the in-process Lambda Runtime API emulator, with `env.json`'s
//! environment pointed at a private Redis (`integration_tests::runtime_api`).

use integration_tests::runtime_api::local::{function_deadline, http_envelope, LocalEnv, WAIT};
use integration_tests::runtime_api::repo_root;
use integration_tests::runtime_api::template::claimed_events;
use integration_tests::scenarios::player;
use serde_json::{json, Value};

const BIN: &str = env!("CARGO_BIN_EXE_status");
/// The function's name under `sam local invoke` (its logical id).
const NAME: &str = "StatusFunction";
/// The events this test has an expectation for: exactly those the template
/// routes to `status` ([`claimed_events`] checks).
const CLAIMS: &[&str] = &[
    "my-status.json",
    "queue-status.json",
    "match.json",
    "rating.json",
    "assignment.json",
    "result.json",
    "backfill.json",
    "backfill-keepalive.json",
    "cancel-backfill.json",
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_event_routed_to_status_is_answered_by_the_built_binary() {
    let events = claimed_events("status", CLAIMS);
    let env = LocalEnv::start().await;
    let store = env.store();
    let world1 = store.settings().worlds.get("world1").unwrap().clone();
    let mut status = env.function(BIN, NAME).await;
    let mut call = async |event: &Value| {
        let answer = status.respond(event, &function_deadline(), WAIT).await;
        http_envelope(&answer)
    };
    for (name, event) in &events {
        env.flush().await;
        match name.as_str() {
            "my-status.json" => {
                let (code, body) = call(event).await;
                assert_eq!((code, &body["data"]), (200, &json!({"status": "IDLE"})));
                store
                    .join(&world1, &player("player-1"), None, None)
                    .await
                    .unwrap();
                let (code, body) = call(event).await;
                assert_eq!(code, 200, "{body}");
                assert_eq!(
                    (
                        &body["data"]["status"],
                        &body["data"]["worldType"],
                        &body["data"]["position"]
                    ),
                    (&json!("QUEUED"), &json!("world1"), &json!(1)),
                    "{body}"
                );
            }
            "queue-status.json" => {
                for p in ["player-1", "player-2"] {
                    store.join(&world1, &player(p), None, None).await.unwrap();
                }
                let (code, body) = call(event).await;
                assert_eq!(code, 200, "{body}");
                assert_eq!(
                    (
                        &body["data"]["worldType"],
                        &body["data"]["waiting"],
                        &body["data"]["teamSize"]
                    ),
                    (&json!("world1"), &json!(2), &json!(3)),
                    "{body}"
                );
            }
            "match.json" => {
                // As it is: match ids are made when matches form.
                let (code, body) = call(event).await;
                assert_eq!(
                    (code, &body["data"]),
                    (
                        404,
                        &json!({"error": "MATCH_NOT_FOUND", "matchId": "18f3a2b4c5d-2a"})
                    )
                );
            }
            "rating.json" => {
                // env.json configures world1..3 (the template's default
                // Worlds): the event's rated world "ranked" is not one.
                let (code, body) = call(event).await;
                assert_eq!(
                    (code, &body["data"]["error"]),
                    (404, &json!("UNKNOWN_WORLD"))
                );
                assert_eq!(body["data"]["worldType"], "ranked", "{body}");
            }
            "assignment.json"
            | "result.json"
            | "backfill.json"
            | "backfill-keepalive.json"
            | "cancel-backfill.json" => {
                // env.json's worlds come from MM_WORLDS: no rule set, so no
                // server scope, and nobody may post assignments, results or
                // backfills.
                let (code, body) = call(event).await;
                assert_eq!(
                    (code, &body["data"]["error"]),
                    (403, &json!("FORBIDDEN")),
                    "{body}"
                );
            }
            other => unreachable!("{other} is not claimed"),
        }
    }
    status.stop_without_errors();
}

/// `events/rating.json` with the local stack's rule set (which has the rated
/// world "ranked" and the writer scope the event's token carries), given as
/// `MM_RULES` the way a `Rules` parameter reaches the functions.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_rating_event_stores_a_rating_under_the_local_rule_set() {
    let events = claimed_events("status", CLAIMS);
    let rules = std::fs::read_to_string(repo_root().join("tools/local-stack/rules.json")).unwrap();
    let env = LocalEnv::start().await;
    let mut status = env
        .function_with(
            BIN,
            NAME,
            &[("MM_RULES", Some(rules.as_str())), ("MM_WORLDS", None)],
        )
        .await;
    let answer = status
        .respond(&events["rating.json"], &function_deadline(), WAIT)
        .await;
    let (code, body) = http_envelope(&answer);
    assert_eq!(code, 200, "{body}");
    assert_eq!(
        body["data"],
        json!({"playerId": "player-7", "worldType": "ranked", "rating": 1712.5, "previousRating": null})
    );
}

/// `events/assignment.json`, `events/result.json` and the backfill events
/// under the local stack's rule set (its `servers.scope` is the scope the
/// events' tokens carry): the match they name is not on record (404), and
/// the same events aimed at a match that formed assign it, open, renew and
/// cancel a backfill, and finish it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_assignment_and_result_events_under_the_local_rule_set() {
    let events = claimed_events("status", CLAIMS);
    let rules = std::fs::read_to_string(repo_root().join("tools/local-stack/rules.json")).unwrap();
    let env = LocalEnv::start().await;
    let mut vars = env.env.clone();
    vars.remove("MM_WORLDS");
    vars.insert("MM_RULES".into(), rules.clone());
    let store = shared::MatchStore::new(
        shared::Settings::from_lookup(|k| vars.get(k).cloned()).expect("rules.json settings"),
    )
    .unwrap();
    let mut status = env
        .function_with(
            BIN,
            NAME,
            &[("MM_RULES", Some(rules.as_str())), ("MM_WORLDS", None)],
        )
        .await;
    let mut call = async |event: &Value| {
        let answer = status.respond(event, &function_deadline(), WAIT).await;
        http_envelope(&answer)
    };
    for name in [
        "assignment.json",
        "result.json",
        "backfill.json",
        "cancel-backfill.json",
    ] {
        let (code, body) = call(&events[name]).await;
        assert_eq!(
            (code, &body["data"]["error"]),
            (404, &json!("MATCH_NOT_FOUND")),
            "{name}: {body}"
        );
    }
    let (code, body) = call(&events["backfill-keepalive.json"]).await;
    assert_eq!(
        (code, &body["data"]["error"]),
        (404, &json!("BACKFILL_NOT_FOUND")),
        "{body}"
    );
    let world1 = store.settings().worlds.get("world1").unwrap().clone();
    let mut formed = None;
    for p in ["player-1", "player-2", "player-3"] {
        if let shared::JoinOutcome::Matched { record, .. } =
            store.join(&world1, &player(p), None, None).await.unwrap()
        {
            formed = Some(record.match_id.to_string());
        }
    }
    let id = formed.expect("the third join formed a match");
    let aimed = |event: &Value| -> Value {
        serde_json::from_str(&event.to_string().replace("18f3a2b4c5d-2a", &id)).unwrap()
    };
    let (code, body) = call(&aimed(&events["assignment.json"])).await;
    assert_eq!(code, 200, "{body}");
    assert_eq!(body["data"]["state"], "ASSIGNED", "{body}");
    assert_eq!(
        body["data"]["assignment"]["connection"], "203.0.113.7:7777",
        "{body}"
    );
    // The running match asks for a player: world1 is one team of three,
    // the event names two of them.
    let (code, body) = call(&aimed(&events["backfill.json"])).await;
    assert_eq!(code, 200, "{body}");
    assert_eq!(
        (
            &body["data"]["backfill"]["matchId"],
            &body["data"]["backfill"]["openSeats"]
        ),
        (&json!(id), &json!([1])),
        "{body}"
    );
    let (code, body) = call(&aimed(&events["backfill-keepalive.json"])).await;
    assert_eq!(code, 200, "{body}");
    let (code, body) = call(&aimed(&events["cancel-backfill.json"])).await;
    assert_eq!(code, 200, "{body}");
    for name in ["backfill-keepalive.json", "cancel-backfill.json"] {
        let (code, body) = call(&aimed(&events[name])).await;
        assert_eq!(
            (code, &body["data"]["error"]),
            (404, &json!("BACKFILL_NOT_FOUND")),
            "{name} after the cancellation: {body}"
        );
    }
    let (code, body) = call(&aimed(&events["result.json"])).await;
    assert_eq!(code, 200, "{body}");
    assert_eq!(body["data"]["state"], "FINISHED", "{body}");
    let (code, body) = call(&aimed(&events["backfill.json"])).await;
    assert_eq!(
        (code, &body["data"]["error"]),
        (409, &json!("MATCH_FINISHED")),
        "{body}"
    );
    // The same result again changes nothing.
    let (code, body) = call(&aimed(&events["result.json"])).await;
    assert_eq!(
        (code, &body["data"]["changed"]),
        (200, &json!(false)),
        "{body}"
    );
    status.stop_without_errors();
}
