//! `ws-connect` driven by its event file(s) in `events/` against real Redis.

use integration_tests::connections_server::{
    now_secs, unsigned_token, ConnectionsServer, TestIssuer,
};
use integration_tests::{eventually, RedisServer};
use lambda_common::auth::AuthSettings;
use lambda_runtime::Context;
use serde_json::{json, Value};
use shared::{PlayerId, Settings};
use std::time::Duration;

use aws_lambda_events::event::apigw::ApiGatewayWebsocketProxyRequest;
use lambda_common::auth::JwtVerifier;
use lambda_common::push::ApiGatewayPusher;
use lambda_runtime::LambdaEvent;
use shared::MatchStore;
use ws_connect::*;

const ISSUER: &str = "https://issuer.example.test/pool-1";
const AUDIENCE: &str = "game-client";
/// The connection id in events/ws-connect.json.
const EVENT_CONNECTION: &str = "L0SM9cOFvHcCIhw=";

struct Env {
    redis: RedisServer,
    idp: ConnectionsServer,
    issuer: TestIssuer,
    store: MatchStore,
    verifier: JwtVerifier,
    /// The real SDK pusher aimed at the stand-in `@connections` endpoint.
    pusher: ApiGatewayPusher,
}

async fn env(ns: &str) -> Env {
    let redis = RedisServer::start();
    let settings: Settings = integration_tests::settings_for(
        &redis.url(),
        false,
        ns,
        "world1:3",
        &[("REDIS_TIMEOUT_MS", "500")],
    );
    let store = MatchStore::new(settings).unwrap();
    let idp = ConnectionsServer::start().await;
    let issuer = TestIssuer::new(ISSUER, AUDIENCE);
    idp.serve_jwks(issuer.jwks());
    let verifier = JwtVerifier::new(AuthSettings {
        jwks_url: idp.jwks_url(),
        issuer: ISSUER.into(),
        audience: AUDIENCE.into(),
    })
    .unwrap();
    let pusher =
        ApiGatewayPusher::with_static_credentials(&idp.endpoint_with_stage("prod"), "us-east-1")
            .unwrap();
    Env {
        redis,
        idp,
        issuer,
        store,
        verifier,
        pusher,
    }
}

/// events/ws-connect.json with `token` in place of the placeholder
/// (`None` removes the parameter).
fn connect_event(token: Option<&str>) -> LambdaEvent<ApiGatewayWebsocketProxyRequest> {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../events/ws-connect.json"
    ))
    .unwrap();
    let mut event: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(event["requestContext"]["routeKey"], "$connect");
    match token {
        Some(token) => {
            event["queryStringParameters"]["token"] = json!(token);
            event["multiValueQueryStringParameters"]["token"] = json!([token]);
        }
        None => {
            event["queryStringParameters"] = Value::Null;
            event["multiValueQueryStringParameters"] = Value::Null;
        }
    }
    let request: ApiGatewayWebsocketProxyRequest = serde_json::from_value(event).unwrap();
    LambdaEvent::new(request, Context::default())
}

impl Env {
    async fn connect(&self, token: Option<&str>) -> i64 {
        handle_connect(
            &self.store,
            &self.verifier,
            &self.pusher,
            connect_event(token),
        )
        .await
        .unwrap()
        .status_code
    }

    async fn connections_of(&self, player: &str) -> Vec<String> {
        self.store
            .connections_of(&PlayerId::parse(player).unwrap())
            .await
            .unwrap()
            .into_iter()
            .map(|c| c.to_string())
            .collect()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_valid_token_registers_the_connection_for_its_subject() {
    let env = env("connect-ok").await;
    let token = env.issuer.token_for("player-1");
    assert_eq!(env.connect(Some(&token)).await, 200);
    assert_eq!(env.connections_of("player-1").await, [EVENT_CONNECTION]);
    // Nothing may be pushed during $connect, and only the JWKS was fetched.
    assert!(env.idp.posts().is_empty());
    assert_eq!(env.idp.jwks_requests(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_tokens_are_refused_with_401_and_nothing_is_registered() {
    let env = env("connect-refused").await;
    let valid = env.issuer.claims_for("player-1");
    let with = |key: &str, value: Value| {
        let mut claims = valid.clone();
        claims[key] = value;
        claims
    };
    let forger = env.issuer.with_key(1, env.issuer.kid());
    let cases = [
        ("forged signature", Some(forger.sign(&valid))),
        (
            "wrong issuer",
            Some(
                env.issuer
                    .sign(&with("iss", json!("https://evil.example.test"))),
            ),
        ),
        (
            "wrong audience",
            Some(env.issuer.sign(&with("aud", json!("other-app")))),
        ),
        (
            "expired",
            Some(env.issuer.sign(&with("exp", json!(now_secs() - 300)))),
        ),
        ("alg none", Some(unsigned_token(&valid, env.issuer.kid()))),
        ("empty token", Some(String::new())),
        ("missing token", None),
    ];
    for (what, token) in cases {
        assert_eq!(env.connect(token.as_deref()).await, 401, "{what}");
        assert!(env.connections_of("player-1").await.is_empty(), "{what}");
    }
    // The same event with a valid token is accepted: the 401s were the tokens.
    let token = env.issuer.token_for("player-1");
    assert_eq!(env.connect(Some(&token)).await, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_invalid_connection_id_is_a_bad_request() {
    let env = env("connect-bad-id").await;
    let token = env.issuer.token_for("player-1");
    for id in [json!("has space"), Value::Null] {
        let mut event = connect_event(Some(&token));
        event.payload.request_context.connection_id = serde_json::from_value(id.clone()).unwrap();
        let status = handle_connect(&env.store, &env.verifier, &env.pusher, event)
            .await
            .unwrap()
            .status_code;
        assert_eq!(status, 400, "{id}");
    }
    assert!(env.connections_of("player-1").await.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_or_jwks_unavailable_refuses_with_503() {
    let mut env = env("connect-down").await;
    let token = env.issuer.token_for("player-1");
    env.redis.kill();
    assert_eq!(env.connect(Some(&token)).await, 503);

    // A verifier that never got keys (issuer unreachable) also says 503.
    let cold = JwtVerifier::new(AuthSettings {
        jwks_url: format!("{}/missing.json", env.idp.endpoint()),
        issuer: ISSUER.into(),
        audience: AUDIENCE.into(),
    })
    .unwrap();
    let status = handle_connect(&env.store, &cold, &env.pusher, connect_event(Some(&token)))
        .await
        .unwrap()
        .status_code;
    assert_eq!(status, 503);
}

/// `events/ws-message.json` (a heartbeat on `$default`): answered with a
/// PONG; an unregistered connection is told so and closed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn message_event_is_a_heartbeat_answered_with_pong() {
    let env = env("ws-message").await;
    let message = || {
        let text = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../events/ws-message.json"
        ))
        .unwrap();
        let event: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(event["requestContext"]["routeKey"], "$default");
        LambdaEvent::new(
            serde_json::from_value::<ApiGatewayWebsocketProxyRequest>(event).unwrap(),
            Context::default(),
        )
    };
    let app = App {
        store: env.store.clone(),
        verifier: JwtVerifier::new(AuthSettings {
            jwks_url: env.idp.jwks_url(),
            issuer: ISSUER.into(),
            audience: AUDIENCE.into(),
        })
        .unwrap(),
        pusher: env.pusher.clone(),
    };
    let body = |r: aws_lambda_events::event::apigw::ApiGatewayProxyResponse| match r.body {
        Some(aws_lambda_events::encodings::Body::Text(t)) => {
            serde_json::from_str::<Value>(&t).unwrap()
        }
        other => panic!("{other:?}"),
    };
    // Not registered: PONG says so, and the socket is closed.
    let answer = handle(&app, message()).await.unwrap();
    assert_eq!(answer.status_code, 200);
    assert_eq!(body(answer)["registered"], false);
    eventually(
        "the unregistered socket to be closed",
        Duration::from_secs(5),
        || async {
            env.idp
                .deletes()
                .iter()
                .any(|c| c == EVENT_CONNECTION)
                .then_some(())
        },
    )
    .await;
    // Registered: renewed.
    let token = env.issuer.token_for("player-1");
    assert_eq!(env.connect(Some(&token)).await, 200);
    let answer = handle(&app, message()).await.unwrap();
    assert_eq!(
        body(answer),
        json!({"type": "PONG", "registered": true, "heartbeatSeconds": 60, "presenceTimeoutSeconds": 150})
    );
}
