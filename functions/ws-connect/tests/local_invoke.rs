//! Every event `template.yaml` routes to `ws-connect` (`$connect` and
//! `$default`), run through the built binary the way `sam local invoke` runs
//! it: the real process against the in-process Lambda Runtime API emulator,
//! with `env.json`'s environment pointed at a private Redis, the
//! `@connections` stand-in and its JWKS (`integration_tests::runtime_api`).
//! Also: ws-connect starts and answers without `MM_WS_ENDPOINT`.

use integration_tests::runtime_api::local::{
    function_deadline, log_records, websocket_answer, LocalEnv, WAIT,
};
use integration_tests::runtime_api::template::claimed_events;
use integration_tests::scenarios::player;
use serde_json::{json, Value};
use shared::{ConnectionId, MatchStore};

const BIN: &str = env!("CARGO_BIN_EXE_ws-connect");
/// The function's name under `sam local invoke` (its logical id).
const NAME: &str = "WsConnectFunction";
/// The events this test has an expectation for: exactly those the template
/// routes to `ws-connect` ([`claimed_events`] checks).
const CLAIMS: &[&str] = &["ws-connect.json", "ws-message.json"];
/// The connection id in the WebSocket events.
const EVENT_CONNECTION: &str = "L0SM9cOFvHcCIhw=";
/// The placeholder `events/ws-connect.json` carries for a token.
const PLACEHOLDER: &str = "REPLACE_WITH_A_SIGNED_JWT";

/// `events/ws-connect.json` with `token` in place of the placeholder, as
/// docs/deploy.md makes it with sed.
fn with_token(event: &Value, token: &str) -> Value {
    let text = event.to_string();
    assert!(
        text.contains(PLACEHOLDER),
        "the event's token placeholder changed"
    );
    serde_json::from_str(&text.replace(PLACEHOLDER, token)).unwrap()
}

async fn connections_of(store: &MatchStore, p: &str) -> Vec<String> {
    store
        .connections_of(&player(p))
        .await
        .unwrap()
        .into_iter()
        .map(|c| c.to_string())
        .collect()
}

fn pong(body: &str) -> Value {
    serde_json::from_str(body).unwrap_or_else(|e| panic!("{body:?}: {e}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_event_routed_to_ws_connect_is_answered_by_the_built_binary() {
    let events = claimed_events("ws-connect", CLAIMS);
    let env = LocalEnv::start().await;
    let issuer = env.issuer();
    let store = env.store();
    let mut connect = env.function(BIN, NAME).await;
    for (name, event) in &events {
        env.flush().await;
        match name.as_str() {
            "ws-connect.json" => {
                // As it is, the placeholder is no token: refused.
                let answer = connect.respond(event, &function_deadline(), WAIT).await;
                assert_eq!(websocket_answer(&answer), (401, "unauthorized".into()));
                // With a token of env.json's issuer and audience for player-1.
                let signed = with_token(event, &issuer.token_for("player-1"));
                let answer = connect.respond(&signed, &function_deadline(), WAIT).await;
                assert_eq!(websocket_answer(&answer), (200, "connected".into()));
                assert_eq!(connections_of(&store, "player-1").await, [EVENT_CONNECTION]);
                assert!(
                    env.stand_in.jwks_requests() >= 1,
                    "the JWKS came from AUTH_JWKS_URL"
                );
            }
            "ws-message.json" => {
                // A heartbeat on a connection nobody registered: told so and closed.
                let answer = connect.respond(event, &function_deadline(), WAIT).await;
                let (status, body) = websocket_answer(&answer);
                assert_eq!(status, 200, "{body}");
                assert_eq!(pong(&body)["registered"], false, "{body}");
                assert_eq!(env.stand_in.deletes(), [EVENT_CONNECTION]);
                // A registered one is renewed.
                store
                    .register_connection(
                        &ConnectionId::parse(EVENT_CONNECTION).unwrap(),
                        &player("player-1"),
                    )
                    .await
                    .unwrap();
                let answer = connect.respond(event, &function_deadline(), WAIT).await;
                let (status, body) = websocket_answer(&answer);
                assert_eq!(status, 200, "{body}");
                assert_eq!(
                    pong(&body),
                    json!({"type": "PONG", "registered": true, "heartbeatSeconds": 60,
                           "presenceTimeoutSeconds": 150})
                );
            }
            other => unreachable!("{other} is not claimed"),
        }
    }
    connect.stop_without_errors();
}

/// Without `MM_WS_ENDPOINT` ws-connect starts (one warning) and answers
/// both routes; the close it cannot make is only logged.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ws_connect_answers_without_mm_ws_endpoint() {
    let events = claimed_events("ws-connect", CLAIMS);
    let env = LocalEnv::start().await;
    let issuer = env.issuer();
    let store = env.store();
    let mut connect = env
        .function_with(BIN, NAME, &[("MM_WS_ENDPOINT", None)])
        .await;
    let signed = with_token(&events["ws-connect.json"], &issuer.token_for("player-1"));
    let answer = connect.respond(&signed, &function_deadline(), WAIT).await;
    assert_eq!(websocket_answer(&answer), (200, "connected".into()));
    assert_eq!(connections_of(&store, "player-1").await, [EVENT_CONNECTION]);
    // Unregistered again: the heartbeat is answered, the close is not delivered.
    env.flush().await;
    let answer = connect
        .respond(&events["ws-message.json"], &function_deadline(), WAIT)
        .await;
    let (status, body) = websocket_answer(&answer);
    assert_eq!((status, &pong(&body)["registered"]), (200, &json!(false)));
    assert!(env.stand_in.deletes().is_empty());
    let output = connect.stop();
    let warnings = log_records(&output, "WARN")
        .into_iter()
        .filter(|r| r["variable"] == "MM_WS_ENDPOINT")
        .count();
    assert_eq!(warnings, 1, "{}", output.join("\n"));
}
