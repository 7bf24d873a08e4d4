//! Every event `template.yaml` routes to `leave`, run through the built
//! `leave` binary the way `sam local invoke` runs it: the real process
//! against the in-process Lambda Runtime API emulator, with `env.json`'s
//! environment pointed at a private Redis (`integration_tests::runtime_api`).
//! Also: a configuration the function refuses is reported as an init error.

use integration_tests::lambda_events::set_party_id;
use integration_tests::runtime_api::local::{function_deadline, http_envelope, LocalEnv, WAIT};
use integration_tests::runtime_api::template::claimed_events;
use integration_tests::scenarios::player;
use serde_json::json;
use shared::{MatchStore, PartyCreateOutcome};

const BIN: &str = env!("CARGO_BIN_EXE_leave");
/// The function's name under `sam local invoke` (its logical id).
const NAME: &str = "LeaveFunction";
/// The events this test has an expectation for: exactly those the template
/// routes to `leave` ([`claimed_events`] checks).
const CLAIMS: &[&str] = &["leave.json", "cancel-party.json"];

/// A world1 party of `leader` inviting `invited`, made through the store; its id.
async fn party(store: &MatchStore, leader: &str, invited: &[&str]) -> String {
    let world = store.settings().worlds.get("world1").unwrap();
    let invited: Vec<_> = invited.iter().map(|p| player(p)).collect();
    match store
        .create_party(world, &player(leader), &invited, None, None)
        .await
        .unwrap()
    {
        PartyCreateOutcome::Created(view) => view.party_id.to_string(),
        other => panic!("{other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_event_routed_to_leave_is_answered_by_the_built_binary() {
    let events = claimed_events("leave", CLAIMS);
    let env = LocalEnv::start().await;
    let store = env.store();
    let mut leave = env.function(BIN, NAME).await;
    for (name, event) in &events {
        env.flush().await;
        match name.as_str() {
            "leave.json" => {
                // On a fresh deployment player-1 waits nowhere.
                let answer = leave.respond(event, &function_deadline(), WAIT).await;
                let (status, body) = http_envelope(&answer);
                assert_eq!(
                    (status, &body["data"]),
                    (404, &json!({"error": "NOT_QUEUED", "worldType": "world1"})),
                    "{body}"
                );
                // Queued first (as after events/join.json), it leaves.
                let world1 = store.settings().worlds.get("world1").unwrap();
                store
                    .join(world1, &player("player-1"), None, None)
                    .await
                    .unwrap();
                let answer = leave.respond(event, &function_deadline(), WAIT).await;
                let (status, body) = http_envelope(&answer);
                assert_eq!(status, 200, "{body}");
                assert_eq!(
                    body["data"],
                    json!({"worldType": "world1", "previousPosition": 1, "remainingQueueSize": 0})
                );
            }
            "cancel-party.json" => {
                // As it is: party ids are made at creation.
                let answer = leave.respond(event, &function_deadline(), WAIT).await;
                let (status, body) = http_envelope(&answer);
                assert_eq!(
                    (status, &body["data"]),
                    (
                        404,
                        &json!({"error": "PARTY_NOT_FOUND", "partyId": "world1.18f3a-2b"})
                    )
                );
                // On a real party of player-1's, it is cancelled.
                let id = party(&store, "player-1", &["player-2", "player-3"]).await;
                let mut edited = event.clone();
                set_party_id(&mut edited, &id);
                let answer = leave.respond(&edited, &function_deadline(), WAIT).await;
                let (status, body) = http_envelope(&answer);
                assert_eq!(status, 200, "{body}");
                assert_eq!(body["data"]["cancelled"], true, "{body}");
                assert_eq!(body["data"]["party"]["partyId"], id.as_str());
                assert_eq!(body["data"]["party"]["leader"], "player-1");
            }
            other => unreachable!("{other} is not claimed"),
        }
    }
    leave.stop_without_errors();
}

/// A configuration the function refuses fails the start visibly: the error
/// reaches `/runtime/init/error` (the invoke answers it instead of waiting
/// for a runtime that never asks for an event) and the process exits.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_configuration_is_an_init_error_not_a_hang() {
    let events = claimed_events("leave", CLAIMS);
    let env = LocalEnv::start().await;
    let mut leave = env
        .function_with(BIN, NAME, &[("MM_WORLDS", Some("World One:3"))])
        .await;
    let event = serde_json::to_vec(&events["leave.json"]).unwrap();
    leave.expect_init_error(&event, "MM_WORLDS").await;
    // It exits: Lambda starts a fresh environment for the next invoke.
    integration_tests::eventually("leave to exit", WAIT, || {
        let exited = leave.exit_status();
        async move { exited }
    })
    .await;
    let exited = leave.exit_status().unwrap();
    assert!(!exited.success(), "{exited:?}");
}
