//! The EventBridge stand-in: a real HTTP server speaking EventBridge's AWS
//! JSON 1.1 protocol for `PutEvents` (`POST /` with `X-Amz-Target:
//! AWSEvents.PutEvents`, `Content-Type: application/x-amz-json-1.1`), which
//! the stack's matcher reaches through the very `EventBridgeSink` the
//! deployed matcher runs (endpoint override, dummy credentials; signatures
//! are not checked). Every entry it accepts is recorded, in order, and
//! readable as [`EventBus::received`] (the stack serves it at
//! `GET /dev/events`); the demo allocator follows it ([`EventBus::wait_past`]).
//!
//! Like EventBridge it answers per entry: an entry without `Source`,
//! `DetailType` or a JSON-object `Detail` gets an `ErrorCode` and is not
//! recorded, the others are (`FailedEntryCount` counts the refused). Tests
//! can make it refuse the next entries ([`EventBus::refuse_next`], as
//! EventBridge's `InternalFailure`) or hold its answers ([`EventBus::stall`]:
//! the entries are recorded, as EventBridge would have taken them, but the
//! caller hears nothing until the stall ends, e.g. a publisher killed in
//! the middle of its call).
//!
//! It also plays the deployed stack's wake rule: an accepted entry with
//! source `matchmaking.wake` and detail type `MatcherWake` (a function
//! found the matcher asleep, [`shared::wake`]) wakes the stack's matcher
//! ([`EventBus::matcher_woken`]), as the rule's Lambda target would.

use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Router;
use serde::Serialize;
use serde_json::{json, Value};
use tokio::sync::watch;

/// The bus name of the local stack (`MM_EVENT_BUS` unless set).
pub const LOCAL_BUS: &str = "matchmaking-local";
/// What `X-Amz-Target` must say.
pub const PUT_EVENTS_TARGET: &str = "AWSEvents.PutEvents";
const JSON_1_1: &str = "application/x-amz-json-1.1";
/// EventBridge's limit of entries per call.
const MAX_ENTRIES: usize = 10;

/// One entry the stand-in accepted.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ReceivedEvent {
    /// The id it answered with (`<call>-<entry>`).
    pub event_id: String,
    pub event_bus_name: Option<String>,
    pub source: String,
    pub detail_type: String,
    /// `Detail`, parsed.
    pub detail: Value,
    /// `Time` as sent (epoch seconds), if any.
    pub time: Option<f64>,
    /// When the stand-in received it (Unix ms).
    pub received_at_ms: u64,
}

impl ReceivedEvent {
    /// What the publisher sent, without what the stand-in added (its event
    /// id and receipt time): two publications of one event are equal here.
    pub fn as_sent(&self) -> Value {
        json!({
            "EventBusName": self.event_bus_name,
            "Source": self.source,
            "DetailType": self.detail_type,
            "Detail": self.detail,
            "Time": self.time,
        })
    }

    /// The match id of a match event.
    pub fn match_id(&self) -> Option<&str> {
        self.detail["matchId"].as_str()
    }
}

#[derive(Default)]
struct Faults {
    /// Entries still to refuse (`InternalFailure`).
    refuse: usize,
    /// How long to hold each answer.
    stall: Duration,
}

/// The stand-in's state; serve it with [`EventBus::router`].
pub struct EventBus {
    received: Mutex<Vec<ReceivedEvent>>,
    calls: Mutex<u64>,
    faults: Mutex<Faults>,
    /// How many entries have been recorded.
    count: watch::Sender<usize>,
    /// Wake-ups for the matcher (the wake rule's target).
    wake: tokio::sync::Notify,
}

impl Default for EventBus {
    fn default() -> Self {
        Self {
            received: Mutex::default(),
            calls: Mutex::default(),
            faults: Mutex::default(),
            count: watch::channel(0).0,
            wake: tokio::sync::Notify::new(),
        }
    }
}

impl EventBus {
    /// Every entry accepted so far, in order.
    pub fn received(&self) -> Vec<ReceivedEvent> {
        lock(&self.received).clone()
    }

    /// The entries from position `from` on.
    pub fn received_since(&self, from: usize) -> Vec<ReceivedEvent> {
        lock(&self.received)
            .get(from..)
            .unwrap_or_default()
            .to_vec()
    }

    /// `PutEvents` calls answered or held so far.
    pub fn calls(&self) -> u64 {
        *lock(&self.calls)
    }

    /// Refuses the next `n` well-formed entries with `InternalFailure`.
    pub fn refuse_next(&self, n: usize) {
        lock(&self.faults).refuse = n;
    }

    /// Holds every answer this long (zero: answer at once).
    pub fn stall(&self, hold: Duration) {
        lock(&self.faults).stall = hold;
    }

    /// Resolves when a wake-up for the matcher arrives (one that came while
    /// nobody waited is kept for the next call).
    pub async fn matcher_woken(&self) {
        self.wake.notified().await;
    }

    /// Waits until more than `seen` entries have been recorded (or the
    /// stand-in is dropped); returns the count.
    pub async fn wait_past(&self, seen: usize) -> usize {
        let mut rx = self.count.subscribe();
        let count = match rx.wait_for(|n| *n > seen).await {
            Ok(n) => *n,
            Err(_) => seen,
        };
        count
    }

    pub fn router(self: &Arc<Self>) -> Router {
        Router::new()
            .route("/", axum::routing::post(put_events))
            .with_state(self.clone())
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// An AWS JSON 1.1 error answer.
fn aws_error(status: StatusCode, kind: &str, message: &str) -> Response {
    (
        status,
        [("content-type", JSON_1_1)],
        json!({"__type": kind, "message": message}).to_string(),
    )
        .into_response()
}

fn unix_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// Why an entry is refused, as EventBridge's `ErrorCode`s.
fn check_entry(entry: &Value) -> Result<(String, String, Value), (&'static str, String)> {
    let text = |k: &str| {
        entry[k]
            .as_str()
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
    };
    let source =
        text("Source").ok_or(("InvalidArgument", "Parameter Source is not valid.".into()))?;
    let detail_type = text("DetailType").ok_or((
        "InvalidArgument",
        "Parameter DetailType is not valid.".into(),
    ))?;
    let detail = text("Detail")
        .and_then(|d| serde_json::from_str::<Value>(&d).ok())
        .filter(Value::is_object)
        .ok_or(("MalformedDetail", "Detail is malformed.".into()))?;
    Ok((source, detail_type, detail))
}

async fn put_events(State(bus): State<Arc<EventBus>>, headers: HeaderMap, body: Bytes) -> Response {
    let target = headers
        .get("x-amz-target")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    if target != PUT_EVENTS_TARGET {
        return aws_error(
            StatusCode::BAD_REQUEST,
            "UnknownOperationException",
            &format!("this stand-in answers only {PUT_EVENTS_TARGET}, not {target:?}"),
        );
    }
    let Ok(request) = serde_json::from_slice::<Value>(&body) else {
        return aws_error(
            StatusCode::BAD_REQUEST,
            "SerializationException",
            "the body is not JSON",
        );
    };
    let Some(entries) = request["Entries"].as_array().filter(|e| !e.is_empty()) else {
        return aws_error(
            StatusCode::BAD_REQUEST,
            "ValidationException",
            "Entries must hold 1 to 10 entries",
        );
    };
    if entries.len() > MAX_ENTRIES {
        return aws_error(
            StatusCode::BAD_REQUEST,
            "ValidationException",
            &format!(
                "1 validation error detected: Value at 'entries' failed to satisfy constraint: \
                 Member must have length less than or equal to {MAX_ENTRIES}"
            ),
        );
    }
    let call = {
        let mut calls = lock(&bus.calls);
        *calls += 1;
        *calls
    };
    let now = unix_ms();
    let (results, failed, stall) = {
        let mut faults = lock(&bus.faults);
        let mut received = lock(&bus.received);
        let mut failed = 0u32;
        let mut results = Vec::with_capacity(entries.len());
        for (i, entry) in entries.iter().enumerate() {
            let refused = match check_entry(entry) {
                Err(refusal) => Some(refusal),
                Ok(_) if faults.refuse > 0 => {
                    faults.refuse -= 1;
                    Some(("InternalFailure", "injected by the local stand-in".into()))
                }
                Ok((source, detail_type, detail)) => {
                    let event_id = format!("{call}-{i}");
                    if source == lambda_common::events::WAKE_SOURCE
                        && detail_type == lambda_common::events::WAKE_DETAIL_TYPE
                    {
                        bus.wake.notify_one();
                    }
                    received.push(ReceivedEvent {
                        event_id: event_id.clone(),
                        event_bus_name: entry["EventBusName"].as_str().map(str::to_owned),
                        source,
                        detail_type,
                        detail,
                        time: entry["Time"].as_f64(),
                        received_at_ms: now,
                    });
                    results.push(json!({ "EventId": event_id }));
                    None
                }
            };
            if let Some((code, message)) = refused {
                failed += 1;
                results.push(json!({"ErrorCode": code, "ErrorMessage": message}));
            }
        }
        bus.count.send_replace(received.len());
        (results, failed, faults.stall)
    };
    if !stall.is_zero() {
        tokio::time::sleep(stall).await;
    }
    (
        [("content-type", JSON_1_1)],
        json!({"FailedEntryCount": failed, "Entries": results}).to_string(),
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_without_source_type_or_object_detail_are_refused() {
        let good = json!({"Source": "s", "DetailType": "t", "Detail": "{\"a\":1}"});
        assert!(check_entry(&good).is_ok());
        for bad in [
            json!({"DetailType": "t", "Detail": "{}"}),
            json!({"Source": "s", "Detail": "{}"}),
            json!({"Source": "s", "DetailType": "t", "Detail": "[1]"}),
            json!({"Source": "s", "DetailType": "t", "Detail": "not json"}),
        ] {
            assert!(check_entry(&bad).is_err(), "{bad}");
        }
    }
}
