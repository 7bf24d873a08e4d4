//! Feeding API Gateway events (the `events/*.json` files) through the HTTP
//! handlers in tests, and checking the response envelope.

use std::future::Future;

use lambda_http::{Body, Request, Response};
use serde_json::Value;
use shared::{JoinOutcome, MatchStore, NotificationKind, Settlement};

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

/// Makes `sub` the caller of an HTTP API event (the `sub` claim the JWT
/// authorizer verified).
pub fn set_caller(event: &mut Value, sub: &str) {
    event["requestContext"]["authorizer"]["jwt"]["claims"]["sub"] = Value::String(sub.to_owned());
}

/// Points a party route event (`events/join-party.json`,
/// `events/cancel-party.json`) at the party `party_id`: the `partyId` path
/// parameter and the party segment of `rawPath` and `requestContext.http.path`.
pub fn set_party_id(event: &mut Value, party_id: &str) {
    let old = event["pathParameters"]["partyId"]
        .as_str()
        .expect("a party route event has a partyId path parameter")
        .to_owned();
    event["pathParameters"]["partyId"] = Value::String(party_id.to_owned());
    let (from, to) = (format!("/{old}"), format!("/{party_id}"));
    for pointer in ["/rawPath", "/requestContext/http/path"] {
        let field = event
            .pointer_mut(pointer)
            .expect("an HTTP API event has both paths");
        let replaced = field
            .as_str()
            .expect("paths are strings")
            .replacen(&from, &to, 1);
        *field = Value::String(replaced);
    }
}

/// Edits the JSON object in an event's (plain text) `body`, and keeps a
/// `content-length` header, if there is one, true to the new body.
fn edit_json_body(event: &mut Value, edit: impl FnOnce(&mut serde_json::Map<String, Value>)) {
    let text = event["body"].as_str().expect("a text body");
    let mut body: Value = serde_json::from_str(text).expect("the body is JSON");
    edit(body.as_object_mut().expect("the body is a JSON object"));
    let text = body.to_string();
    if let Some(length) = event
        .get_mut("headers")
        .and_then(|h| h.get_mut("content-length"))
    {
        *length = Value::String(text.len().to_string());
    }
    event["body"] = Value::String(text);
}

/// Points an accept event (`events/accept.json`) at the proposal `match_id`
/// (the body's `matchId`).
pub fn set_match_id(event: &mut Value, match_id: &str) {
    edit_json_body(event, |b| {
        b.insert("matchId".into(), Value::String(match_id.to_owned()));
    });
}

/// Makes an accept event (`events/accept.json`) accept (`true`) or decline
/// (`false`) the proposal (the body's `accept`).
pub fn set_accept(event: &mut Value, accept: bool) {
    edit_json_body(event, |b| {
        b.insert("accept".into(), Value::Bool(accept));
    });
}

/// The notes due in the outbox (PARTY_UPDATE, PARTY_CANCELLED, a party
/// ticket's TICKET_EXPIRED) as the JSON a client would be pushed, each with
/// the players to tell (sorted). Every due entry is claimed and settled, so
/// the next call sees only what came after.
pub async fn take_notes(store: &MatchStore) -> Vec<(Value, Vec<String>)> {
    let entries = store
        .claim_notifications(
            std::time::Duration::from_secs(30),
            1000,
            shared::store::YOUNG_CONNECTION,
            &[],
        )
        .await
        .expect("claim the outbox");
    let mut notes = Vec::new();
    let mut done = Vec::new();
    for e in entries {
        if let NotificationKind::Note { .. } = e.id.kind() {
            let message = e.note.as_ref().expect("a note carries its message");
            let json: Value = serde_json::from_str(&message.to_json()).expect("JSON message");
            let mut to: Vec<String> = e.targets.iter().map(|t| t.player.to_string()).collect();
            to.sort();
            notes.push((json, to));
        }
        done.push((e.id.clone(), Settlement::Done));
    }
    store.settle_notifications(&done).await.expect("settle");
    notes
}
