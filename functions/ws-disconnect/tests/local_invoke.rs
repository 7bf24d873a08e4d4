//! Every event `template.yaml` routes to `ws-disconnect`, run through the
//! built binary the way `sam local invoke` runs it: the real process against
//! the in-process Lambda Runtime API emulator, with `env.json`'s environment
//! pointed at a private Redis (`integration_tests::runtime_api`).

use integration_tests::runtime_api::local::{function_deadline, websocket_answer, LocalEnv, WAIT};
use integration_tests::runtime_api::template::claimed_events;
use integration_tests::scenarios::player;
use shared::{ConnectionId, PlayerStatus};

const BIN: &str = env!("CARGO_BIN_EXE_ws-disconnect");
/// The function's name under `sam local invoke` (its logical id).
const NAME: &str = "WsDisconnectFunction";
/// The events this test has an expectation for: exactly those the template
/// routes to `ws-disconnect` ([`claimed_events`] checks).
const CLAIMS: &[&str] = &["ws-disconnect.json"];
/// The connection id in the WebSocket events.
const EVENT_CONNECTION: &str = "L0SM9cOFvHcCIhw=";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_event_routed_to_ws_disconnect_is_answered_by_the_built_binary() {
    let events = claimed_events("ws-disconnect", CLAIMS);
    let env = LocalEnv::start().await;
    let store = env.store();
    let mut disconnect = env.function(BIN, NAME).await;
    for (name, event) in &events {
        env.flush().await;
        match name.as_str() {
            "ws-disconnect.json" => {
                // A connection nobody registered: nothing to forget, still 200.
                let answer = disconnect.respond(event, &function_deadline(), WAIT).await;
                assert_eq!(websocket_answer(&answer), (200, "disconnected".into()));
                // player-1's only connection closes while they wait: the
                // connection and the ticket go (MM_REMOVE_TICKET_ON_DISCONNECT).
                let conn = ConnectionId::parse(EVENT_CONNECTION).unwrap();
                store
                    .register_connection(&conn, &player("player-1"))
                    .await
                    .unwrap();
                let world1 = store.settings().worlds.get("world1").unwrap();
                store
                    .join(world1, &player("player-1"), None, None)
                    .await
                    .unwrap();
                let answer = disconnect.respond(event, &function_deadline(), WAIT).await;
                assert_eq!(websocket_answer(&answer), (200, "disconnected".into()));
                assert!(store
                    .connections_of(&player("player-1"))
                    .await
                    .unwrap()
                    .is_empty());
                assert!(matches!(
                    store.player_status(&player("player-1")).await.unwrap(),
                    PlayerStatus::Idle
                ));
            }
            other => unreachable!("{other} is not claimed"),
        }
    }
    disconnect.stop_without_errors();
}
