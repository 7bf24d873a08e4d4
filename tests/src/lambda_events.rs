//! Feeding API Gateway events (the `events/*.json` files) through the HTTP
//! handlers in tests, and checking the response envelope.

use std::future::Future;

use lambda_http::{Body, Request, Response};
use serde_json::Value;
use shared::{JoinOutcome, MatchStore};

use crate::scenarios::{player, snapshot};

/// An HTTP API payload 2.0 event (JSON text), edited, as Lambda hands it to
/// the handler.
pub fn http_event(file: &str, edit: impl FnOnce(&mut Value)) -> Request {
    let mut v: Value = serde_json::from_str(file).expect("event file is JSON");
    edit(&mut v);
    lambda_http::request::from_str(&v.to_string()).expect("a valid HTTP API event")
}

/// Checks the documented envelope (JSON, `resultCode` equal to the status, a
/// human message, an object in `data`) and returns (status, body).
pub fn envelope(resp: Response<Body>) -> (u16, Value) {
    let status = resp.status().as_u16();
    assert_eq!(resp.headers()["content-type"], "application/json");
    let body: Value = serde_json::from_slice(resp.body().as_ref()).expect("JSON body");
    assert_eq!(body["resultCode"], status.to_string(), "{body}");
    assert!(
        body["msg"].as_str().is_some_and(|m| !m.is_empty()),
        "{body}"
    );
    assert!(body["data"].is_object(), "{body}");
    (status, body)
}

/// Runs `call` (not started yet: futures are lazy) and asserts it was refused
/// with `status` and `code` and that Redis did not change.
pub async fn assert_refused(
    store: &MatchStore,
    call: impl Future<Output = (u16, Value)>,
    status: u16,
    code: &str,
) -> Value {
    let before = snapshot(store).await;
    let (got, body) = call.await;
    assert_eq!(
        (got, body["data"]["error"].as_str()),
        (status, Some(code)),
        "{body}"
    );
    assert_eq!(snapshot(store).await, before, "{code} changed Redis");
    body
}

/// Queues `p` in `world` directly through the store.
pub async fn pre_join(store: &MatchStore, world: &str, p: &str) -> JoinOutcome {
    let world = store
        .settings()
        .worlds
        .get(world)
        .expect("configured world");
    store
        .join(world, &player(p), None, None)
        .await
        .expect("join")
}

/// Runs `call` against a Redis that is down and asserts the documented 503:
/// `REDIS_UNAVAILABLE`, a message saying so, and an answer within `limit`
/// (the configured timeout plus slack), not a hang.
pub async fn assert_unavailable(
    call: impl Future<Output = (u16, Value)>,
    limit: std::time::Duration,
) -> Value {
    let started = std::time::Instant::now();
    let (status, body) = call.await;
    assert_eq!(
        (status, body["data"]["error"].as_str()),
        (503, Some("REDIS_UNAVAILABLE")),
        "{body}"
    );
    assert!(
        body["msg"]
            .as_str()
            .is_some_and(|m| m.contains("temporarily unavailable")),
        "{body}"
    );
    assert!(
        started.elapsed() < limit,
        "answered after {:?}",
        started.elapsed()
    );
    body
}
