//! Every event `template.yaml` routes to `matcher`, run through the built
//! `matcher` binary the way `sam local invoke` runs it: the real process
//! against the in-process Lambda Runtime API emulator, with `env.json`'s
//! environment pointed at a private Redis and the `@connections` stand-in
//! (`integration_tests::runtime_api`). Also: deadlines no Lambda sends
//! (`cargo lambda watch`'s `600000`, zero, a day away) run one tick and say
//! so, and the matcher runs without `MM_WS_ENDPOINT`.

use std::time::{Duration, Instant};

use integration_tests::runtime_api::local::{log_records, LocalEnv, WAIT};
use integration_tests::runtime_api::template::claimed_events;
use integration_tests::runtime_api::{unix_ms, Deadline, LocalFunction};
use integration_tests::scenarios::player;
use serde_json::Value;
use shared::{ConnectionId, JoinOutcome, MatchStore};

const BIN: &str = env!("CARGO_BIN_EXE_matcher");
/// The function's name under `sam local invoke` (its logical id).
const NAME: &str = "MatcherFunction";
/// The events this test has an expectation for: exactly those the template
/// routes to `matcher` ([`claimed_events`] checks).
const CLAIMS: &[&str] = &["matcher-schedule.json"];
/// A plausible deadline, shorter than the deployed 60 s so the test is quick:
/// the loop runs until 2 s before it.
const SHORT_TIMEOUT: Duration = Duration::from_secs(6);

/// Three players with a connection each, matched by their joins (instant
/// matching, as env.json has it) with the MATCH_FOUND left in the outbox for
/// the matcher: the joins were made through the store, which does not push.
async fn a_match_to_deliver(store: &MatchStore) -> String {
    let world1 = store.settings().worlds.get("world1").unwrap().clone();
    let mut formed = None;
    for p in ["player-1", "player-2", "player-3"] {
        store
            .register_connection(
                &ConnectionId::parse(&format!("conn-{p}=")).unwrap(),
                &player(p),
            )
            .await
            .unwrap();
        if let JoinOutcome::Matched { record, .. } =
            store.join(&world1, &player(p), None, None).await.unwrap()
        {
            formed = Some(record.match_id.to_string());
        }
    }
    formed.expect("the third join formed a match")
}

async fn run(matcher: &mut LocalFunction, event: &Value, deadline: Deadline) -> (Value, Duration) {
    let started = Instant::now();
    let result = matcher.respond(event, &deadline, WAIT).await;
    (result, started.elapsed())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_event_routed_to_matcher_is_answered_by_the_built_binary() {
    let events = claimed_events("matcher", CLAIMS);
    let env = LocalEnv::start().await;
    let store = env.store();
    let mut matcher = env.function(BIN, NAME).await;
    for (name, event) in &events {
        env.flush().await;
        match name.as_str() {
            "matcher-schedule.json" => {
                // A deadline as Lambda sends it: ticks until 2 s before it.
                let match_id = a_match_to_deliver(&store).await;
                let deadline_ms = unix_ms(std::time::SystemTime::now() + SHORT_TIMEOUT);
                let (result, took) = run(
                    &mut matcher,
                    event,
                    Deadline::RawMs(deadline_ms.to_string()),
                )
                .await;
                assert_eq!(result["stop"], "deadline", "{result}");
                assert_eq!(result["invocationDeadlineMs"], deadline_ms, "{result}");
                assert!(result["ticks"].as_u64().is_some_and(|t| t >= 1), "{result}");
                assert_eq!(result["notificationsDelivered"], 1, "{result}");
                assert!(took < SHORT_TIMEOUT, "answered after {took:?}: {result}");
                for p in ["player-1", "player-2", "player-3"] {
                    let pushed = env.stand_in.delivered_to(&format!("conn-{p}="));
                    assert_eq!(pushed.len(), 1, "{p}: {pushed:?}");
                    assert_eq!(pushed[0]["type"], "MATCH_FOUND");
                    assert_eq!(pushed[0]["matchId"], match_id.as_str());
                }

                // Deadlines Lambda never sends: one tick, and why.
                let day_away = unix_ms(std::time::SystemTime::now() + Duration::from_secs(86_400));
                for (header, reason) in [
                    ("600000".to_owned(), "not in the future"),
                    ("0".to_owned(), "not in the future"),
                    (day_away.to_string(), "more than 15 minutes away"),
                ] {
                    env.flush().await;
                    a_match_to_deliver(&store).await;
                    let (result, took) =
                        run(&mut matcher, event, Deadline::RawMs(header.clone())).await;
                    assert_eq!(result["stop"], "fallback-deadline", "{header}: {result}");
                    assert!(
                        result["fallbackReason"]
                            .as_str()
                            .is_some_and(|r| r.contains(reason)),
                        "{header}: {result}"
                    );
                    assert_eq!(result["invocationDeadlineMs"].to_string(), header);
                    assert_eq!(result["ticks"], 1, "{header}: {result}");
                    assert_eq!(result["notificationsDelivered"], 1, "{header}: {result}");
                    assert!(took < WAIT, "{header}: answered after {took:?}");
                }
            }
            other => unreachable!("{other} is not claimed"),
        }
    }
    let output = matcher.stop_without_errors();
    // One EMF line per world per tick reached stdout.
    assert!(
        output
            .iter()
            .any(|l| l.starts_with("[stdout] ") && l.contains("\"CloudWatchMetrics\"")),
        "{}",
        output.join("\n")
    );
}

/// With `MM_MATCHER_SLEEP` (the template's setting), an invocation with
/// nothing to do ticks once, goes to sleep and returns at once (`"stop":
/// "asleep"`); once a join made work (and took the sleep mark), the next
/// invocation stays awake until its deadline. The wake-up itself goes
/// through EventBridge: tools/local-stack/tests/sleep.rs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_invocation_goes_to_sleep_and_returns_early() {
    let events = claimed_events("matcher", CLAIMS);
    let event = &events["matcher-schedule.json"];
    let env = LocalEnv::start().await;
    let store = env.store();
    let mut matcher = env
        .function_with(BIN, NAME, &[("MM_MATCHER_SLEEP", Some("true"))])
        .await;
    let deadline =
        || Deadline::RawMs(unix_ms(std::time::SystemTime::now() + SHORT_TIMEOUT).to_string());
    let (result, _) = run(&mut matcher, event, deadline()).await;
    assert_eq!(
        (&result["stop"], &result["slept"], &result["ticks"]),
        (&Value::from("asleep"), &Value::from(true), &Value::from(1)),
        "{result}"
    );
    let asleep: u64 = store
        .command(redis::cmd("EXISTS").arg(store.keys().matcher_asleep()))
        .await
        .unwrap();
    assert_eq!(asleep, 1);

    // A join makes work (it takes the mark); the matcher stays awake while
    // the ticket waits, until its deadline.
    let world1 = store.settings().worlds.get("world1").unwrap().clone();
    store
        .join(&world1, &player("player-1"), None, None)
        .await
        .unwrap();
    let (result, _) = run(&mut matcher, event, deadline()).await;
    assert_eq!(
        (&result["stop"], &result["slept"]),
        (&Value::from("deadline"), &Value::from(false)),
        "{result}"
    );
    assert!(result["ticks"].as_u64().is_some_and(|t| t >= 2), "{result}");
    matcher.stop_without_errors();
}

/// Without `MM_WS_ENDPOINT` the matcher starts (one warning), ticks, and
/// keeps what it could not push in the outbox for a later attempt.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_matcher_runs_without_mm_ws_endpoint() {
    let events = claimed_events("matcher", CLAIMS);
    let env = LocalEnv::start().await;
    let store = env.store();
    let match_id = a_match_to_deliver(&store).await;
    let mut matcher = env
        .function_with(BIN, NAME, &[("MM_WS_ENDPOINT", None)])
        .await;
    let (result, _) = run(
        &mut matcher,
        &events["matcher-schedule.json"],
        Deadline::RawMs("600000".into()),
    )
    .await;
    assert_eq!(result["ticks"], 1, "{result}");
    assert_eq!(result["notificationsDelivered"], 0, "{result}");
    assert_eq!(result["notificationsRetried"], 1, "{result}");
    assert!(env.stand_in.posts().is_empty());
    let outbox: Vec<String> = store
        .command(
            redis::cmd("ZRANGE")
                .arg(store.keys().outbox())
                .arg(0)
                .arg(-1),
        )
        .await
        .unwrap();
    assert!(outbox.contains(&format!("M|{match_id}")), "{outbox:?}");
    let output = matcher.stop();
    let warnings = log_records(&output, "WARN")
        .into_iter()
        .filter(|r| r["variable"] == "MM_WS_ENDPOINT")
        .count();
    assert_eq!(warnings, 1, "{}", output.join("\n"));
}

/// Match events on without a bus: the matcher refuses to start, naming
/// `MM_EVENT_BUS` (posted to `/runtime/init/error`, not a hang).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn match_events_without_a_bus_are_an_init_error() {
    let events = claimed_events("matcher", CLAIMS);
    let env = LocalEnv::start().await;
    let mut matcher = env
        .function_with(
            BIN,
            NAME,
            &[("MM_MATCH_EVENTS", Some("true")), ("MM_EVENT_BUS", None)],
        )
        .await;
    let event = serde_json::to_vec(&events["matcher-schedule.json"]).unwrap();
    let init = matcher.expect_init_error(&event, "MM_EVENT_BUS").await;
    assert_eq!(init.error_type.as_deref(), Some("Runtime.InitError"));
}

/// PutEvents bodies a tiny EventBridge endpoint received (every entry
/// accepted).
async fn put_events_endpoint() -> (String, std::sync::Arc<std::sync::Mutex<Vec<Value>>>) {
    use axum::response::IntoResponse;
    let seen: std::sync::Arc<std::sync::Mutex<Vec<Value>>> = Default::default();
    let sink = seen.clone();
    let app = axum::Router::new().route(
        "/",
        axum::routing::post(move |headers: axum::http::HeaderMap, body: String| {
            let sink = sink.clone();
            async move {
                assert_eq!(
                    headers.get("x-amz-target").and_then(|v| v.to_str().ok()),
                    Some("AWSEvents.PutEvents")
                );
                let request: Value = serde_json::from_str(&body).unwrap_or_default();
                let n = request["Entries"].as_array().map_or(0, Vec::len);
                sink.lock().unwrap().push(request);
                let entries: Vec<Value> = (0..n)
                    .map(|i| serde_json::json!({"EventId": format!("e-{i}")}))
                    .collect();
                (
                    [("content-type", "application/x-amz-json-1.1")],
                    serde_json::json!({"FailedEntryCount": 0, "Entries": entries}).to_string(),
                )
                    .into_response()
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (format!("http://{addr}"), seen)
}

/// With match events on, the built binary publishes a match's event to
/// `MM_EVENT_BUS` at `MM_EVENTS_ENDPOINT` (the template's variables), then
/// settles the entry.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_built_matcher_publishes_match_events_to_the_configured_bus() {
    let events = claimed_events("matcher", CLAIMS);
    let (endpoint, seen) = put_events_endpoint().await;
    let mut env = LocalEnv::start().await;
    env.env.insert("MM_MATCH_EVENTS".into(), "true".into());
    let store = env.store();
    let match_id = a_match_to_deliver(&store).await;
    let mut matcher = env
        .function_with(
            BIN,
            NAME,
            &[
                ("MM_EVENT_BUS", Some("mm-matches")),
                ("MM_EVENTS_ENDPOINT", Some(endpoint.as_str())),
            ],
        )
        .await;
    let (result, _) = run(
        &mut matcher,
        &events["matcher-schedule.json"],
        Deadline::RawMs("600000".into()),
    )
    .await;
    assert_eq!(result["notificationsDelivered"], 1, "{result}");
    let requests = seen.lock().unwrap().clone();
    let entries: Vec<&Value> = requests
        .iter()
        .flat_map(|r| r["Entries"].as_array().unwrap().iter())
        .collect();
    assert_eq!(entries.len(), 1, "{requests:?}");
    assert_eq!(entries[0]["EventBusName"], "mm-matches");
    assert_eq!(entries[0]["Source"], "matchmaking");
    assert_eq!(entries[0]["DetailType"], "MatchFormed");
    let detail: Value = serde_json::from_str(entries[0]["Detail"].as_str().unwrap()).unwrap();
    assert_eq!(detail["matchId"], match_id.as_str());
    let outbox: Vec<String> = store
        .command(
            redis::cmd("ZRANGE")
                .arg(store.keys().outbox())
                .arg(0)
                .arg(-1),
        )
        .await
        .unwrap();
    assert!(outbox.is_empty(), "published and delivered: {outbox:?}");
    matcher.stop_without_errors();
}
