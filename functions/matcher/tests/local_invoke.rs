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
