//! The EventBridge sink against a real HTTP server speaking PutEvents
//! (AWS JSON 1.1), through the real SDK client: what each call carries,
//! batches of at most ten, and per-entry failures failing only their event.

use std::sync::{Arc, Mutex};

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Router;
use lambda_common::events::{EventBridgeSink, EventsTarget, MAX_ENTRIES_PER_CALL};
use serde_json::{json, Value};
use shared::{EventSink, MatchEvent};

/// What the server does with a call.
#[derive(Clone, Copy)]
enum Mode {
    /// Accepts every entry whose detail does not name a refused match.
    Accept,
    /// Answers the whole call with this status and an AWS JSON error.
    Fail(u16),
}

#[derive(Default)]
struct Calls {
    /// (x-amz-target, content-type, body) per call.
    seen: Vec<(String, String, Value)>,
    /// Match ids whose entries are refused (ErrorCode InternalFailure).
    refuse: Vec<String>,
    /// The n-th call (0-based) answered with the mode instead of Accept.
    failing_call: Option<(usize, Mode)>,
}

type Shared = Arc<Mutex<Calls>>;

async fn put_events(State(calls): State<Shared>, headers: HeaderMap, body: Bytes) -> Response {
    let header = |n: &str| {
        headers
            .get(n)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned()
    };
    let request: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let mut calls = calls.lock().unwrap();
    let n = calls.seen.len();
    calls.seen.push((
        header("x-amz-target"),
        header("content-type"),
        request.clone(),
    ));
    let mode = match calls.failing_call {
        Some((at, mode)) if at == n => mode,
        _ => Mode::Accept,
    };
    if let Mode::Fail(status) = mode {
        let code = if status >= 500 {
            "InternalException"
        } else {
            "ValidationException"
        };
        return (
            StatusCode::from_u16(status).unwrap(),
            [("content-type", "application/x-amz-json-1.1")],
            json!({"__type": code, "message": "refused by the test"}).to_string(),
        )
            .into_response();
    }
    let entries = request["Entries"].as_array().cloned().unwrap_or_default();
    let mut failed = 0;
    let results: Vec<Value> = entries
        .iter()
        .enumerate()
        .map(|(i, e)| {
            let detail: Value =
                serde_json::from_str(e["Detail"].as_str().unwrap_or("null")).unwrap_or_default();
            let id = detail["matchId"].as_str().unwrap_or_default();
            if calls.refuse.iter().any(|r| r == id) {
                failed += 1;
                json!({"ErrorCode": "InternalFailure", "ErrorMessage": "try again"})
            } else {
                json!({"EventId": format!("{n}-{i}")})
            }
        })
        .collect();
    (
        [("content-type", "application/x-amz-json-1.1")],
        json!({"FailedEntryCount": failed, "Entries": results}).to_string(),
    )
        .into_response()
}

async fn server() -> (String, Shared) {
    let calls: Shared = Arc::default();
    let app = Router::new()
        .route("/", axum::routing::post(put_events))
        .with_state(calls.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (format!("http://{addr}"), calls)
}

fn sink(endpoint: &str) -> EventBridgeSink {
    EventBridgeSink::with_static_credentials(
        EventsTarget {
            bus: "mm-matches".into(),
            source: "matchmaking".into(),
            endpoint: Some(endpoint.to_owned()),
        },
        "eu-west-1",
    )
}

fn events(n: usize) -> Vec<MatchEvent> {
    (0..n)
        .map(|i| {
            let record: shared::MatchRecord = serde_json::from_value(json!({
                "matchId": format!("18f3a2b4c5d-{i:x}"),
                "worldType": "duel",
                "matchedAt": 1_741_608_005_000u64 + i as u64,
                "participants": [format!("a{i}"), format!("b{i}")],
            }))
            .unwrap();
            MatchEvent::of(&record)
        })
        .collect()
}

#[tokio::test]
async fn events_go_out_in_calls_of_at_most_ten_entries_each_the_event_on_the_bus() {
    let (endpoint, calls) = server().await;
    let sent = events(23);
    let results = sink(&endpoint).publish(&sent).await;
    assert_eq!(results, vec![Ok(()); 23]);
    let calls = calls.lock().unwrap();
    let mut sizes: Vec<usize> = calls
        .seen
        .iter()
        .map(|(_, _, b)| b["Entries"].as_array().unwrap().len())
        .collect();
    sizes.sort_unstable();
    assert_eq!(sizes, [3, MAX_ENTRIES_PER_CALL, MAX_ENTRIES_PER_CALL]);
    let mut details = Vec::new();
    for (target, content_type, body) in &calls.seen {
        assert_eq!(target, "AWSEvents.PutEvents");
        assert_eq!(content_type, "application/x-amz-json-1.1");
        for entry in body["Entries"].as_array().unwrap() {
            assert_eq!(entry["EventBusName"], "mm-matches");
            assert_eq!(entry["Source"], "matchmaking");
            assert_eq!(entry["DetailType"], "MatchFormed");
            let detail: Value = serde_json::from_str(entry["Detail"].as_str().unwrap()).unwrap();
            // Time: the match's formation (epoch seconds), so a republished
            // event is the same entry.
            let at = detail["matchedAt"].as_u64().unwrap() as f64 / 1000.0;
            assert!(
                (entry["Time"].as_f64().unwrap() - at).abs() < 0.001,
                "{entry}"
            );
            details.push(entry["Detail"].as_str().unwrap().to_owned());
        }
    }
    details.sort();
    let mut expected: Vec<String> = sent.iter().map(MatchEvent::to_json).collect();
    expected.sort();
    assert_eq!(details, expected, "each event once, as its JSON");
}

#[tokio::test]
async fn a_refused_entry_fails_only_its_event() {
    let (endpoint, calls) = server().await;
    let sent = events(12);
    calls.lock().unwrap().refuse =
        vec![sent[3].match_id.to_string(), sent[11].match_id.to_string()];
    let results = sink(&endpoint).publish(&sent).await;
    for (i, result) in results.iter().enumerate() {
        match i {
            3 | 11 => {
                let e = result.as_ref().unwrap_err();
                assert!(e.0.contains("InternalFailure"), "{e}");
            }
            _ => assert_eq!(result, &Ok(()), "event {i}"),
        }
    }
    assert_eq!(results.len(), 12);
}

#[tokio::test]
async fn a_failed_call_fails_its_events_and_not_the_other_calls() {
    for status in [400, 500] {
        let (endpoint, calls) = server().await;
        // The first call the server sees fails (with 500 the SDK's one
        // retry is the second call, which succeeds: so only 400 shows).
        calls.lock().unwrap().failing_call = Some((0, Mode::Fail(status)));
        let sent = events(15);
        let results = sink(&endpoint).publish(&sent).await;
        let failed = results.iter().filter(|r| r.is_err()).count();
        if status == 400 {
            assert!(
                failed == 10 || failed == 5,
                "one whole call failed: {results:?}"
            );
            let e = results.iter().find_map(|r| r.as_ref().err()).unwrap();
            assert!(
                e.0.contains("ValidationException") && e.0.contains("400"),
                "{e}"
            );
        } else {
            assert_eq!(failed, 0, "the SDK retried the 500 once: {results:?}");
            assert_eq!(calls.lock().unwrap().seen.len(), 3);
        }
    }
}

#[tokio::test]
async fn an_unreachable_endpoint_fails_every_event() {
    // A port nothing listens on.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    let results = sink(&format!("http://127.0.0.1:{port}"))
        .publish(&events(3))
        .await;
    assert_eq!(results.len(), 3);
    assert!(results.iter().all(|r| r
        .as_ref()
        .is_err_and(|e| e.0.contains("not sent") || e.0.contains("timed out"))));
}
