//! `ws-disconnect` driven by its event file(s) in `events/` against real Redis.

use integration_tests::register_connection;
use integration_tests::RedisServer;
use lambda_runtime::Context;
use serde_json::Value;
use shared::{PlayerId, PlayerStatus};

use aws_lambda_events::event::apigw::ApiGatewayWebsocketProxyRequest;
use lambda_runtime::LambdaEvent;
use shared::MatchStore;
use ws_disconnect::*;

/// The connection id in events/ws-disconnect.json.
const EVENT_CONNECTION: &str = "L0SM9cOFvHcCIhw=";

fn disconnect_event(connection_id: Option<&str>) -> LambdaEvent<ApiGatewayWebsocketProxyRequest> {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../events/ws-disconnect.json"
    ))
    .unwrap();
    let mut event: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(event["requestContext"]["eventType"], "DISCONNECT");
    assert_eq!(event["requestContext"]["connectionId"], EVENT_CONNECTION);
    event["requestContext"]["connectionId"] = connection_id.into();
    LambdaEvent::new(serde_json::from_value(event).unwrap(), Context::default())
}

fn store_for(redis: &RedisServer, ns: &str) -> MatchStore {
    MatchStore::new(integration_tests::settings_for(
        &redis.url(),
        false,
        ns,
        "world1:3",
        &[("REDIS_TIMEOUT_MS", "500")],
    ))
    .unwrap()
}

async fn status(store: &MatchStore, player: &str) -> PlayerStatus {
    store
        .player_status(&PlayerId::parse(player).unwrap())
        .await
        .unwrap()
}

async fn disconnect(store: &MatchStore, conn: Option<&str>) -> i64 {
    handle_disconnect(store, disconnect_event(conn))
        .await
        .unwrap()
        .status_code
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_last_connection_closing_unregisters_it_and_removes_the_ticket() {
    let redis = RedisServer::start();
    let store = store_for(&redis, "disconnect-last");
    let world = store.settings().worlds.get("world1").unwrap().clone();
    let player = PlayerId::parse("player-1").unwrap();
    register_connection(&store, EVENT_CONNECTION, "player-1").await;
    store.join(&world, &player, None, None).await.unwrap();
    assert!(matches!(
        status(&store, "player-1").await,
        PlayerStatus::Queued(_)
    ));

    assert_eq!(disconnect(&store, Some(EVENT_CONNECTION)).await, 200);

    assert!(store.connections_of(&player).await.unwrap().is_empty());
    assert_eq!(status(&store, "player-1").await, PlayerStatus::Idle);
    assert_eq!(store.queue_status(&world).await.unwrap().waiting, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_open_connection_keeps_the_ticket() {
    let redis = RedisServer::start();
    let store = store_for(&redis, "disconnect-other");
    let world = store.settings().worlds.get("world1").unwrap().clone();
    let player = PlayerId::parse("player-1").unwrap();
    register_connection(&store, EVENT_CONNECTION, "player-1").await;
    register_connection(&store, "second-tab", "player-1").await;
    store.join(&world, &player, None, None).await.unwrap();

    assert_eq!(disconnect(&store, Some(EVENT_CONNECTION)).await, 200);

    assert_eq!(store.connections_of(&player).await.unwrap(), ["second-tab"]);
    assert!(matches!(
        status(&store, "player-1").await,
        PlayerStatus::Queued(_)
    ));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_connections_are_fine_and_invalid_ids_are_bad_requests() {
    let mut redis = RedisServer::start();
    let store = store_for(&redis, "disconnect-odd");
    register_connection(&store, "someone-else", "player-2").await;
    assert_eq!(disconnect(&store, Some(EVENT_CONNECTION)).await, 200);
    assert_eq!(disconnect(&store, Some("has space")).await, 400);
    assert_eq!(disconnect(&store, None).await, 400);
    let other = PlayerId::parse("player-2").unwrap();
    assert_eq!(
        store.connections_of(&other).await.unwrap(),
        ["someone-else"]
    );

    redis.kill();
    assert_eq!(disconnect(&store, Some(EVENT_CONNECTION)).await, 503);
}
