//! The sleeping matcher through the local stack (`MM_MATCHER_SLEEP`, on by
//! default there as in the template): with nothing to do it sleeps; the
//! first join wakes it through the functions' real waker (a `MatcherWake`
//! entry `PutEvents` sends to the EventBridge stand-in, which plays the
//! wake rule), and what the join started is served on time: a FIFO world
//! with instant matching off is matched within one tick of the join that
//! completes it, and a rated pair whose windows only widen with time is
//! matched when the window covers it.

mod support;

use std::time::{Duration, Instant};

use integration_tests::eventually;
use local_stack::LocalStack;
use serde_json::json;
use support::{call, token_with, Player};

const WAIT: Duration = Duration::from_secs(20);

/// Waits until the matcher sleeps (its first idle tick).
async fn asleep(stack: &LocalStack) {
    eventually("the matcher to sleep", WAIT, || async {
        stack.matcher_asleep().then_some(())
    })
    .await;
}

fn wake_ups(stack: &LocalStack) -> usize {
    stack
        .events
        .received()
        .iter()
        .filter(|e| e.detail_type == lambda_common::events::WAKE_DETAIL_TYPE)
        .count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_matcher_sleeps_and_the_first_join_wakes_it() {
    let stack = support::start_stack_vars(&[
        (
            "MM_RULES",
            r#"{"worlds": [{"name": "trio", "teamSize": 3}]}"#,
        ),
        ("MM_INSTANT_MATCH", "false"),
    ])
    .await;
    asleep(&stack).await;
    let slept_at = stack.matcher_ticks();
    let mark = stack.store.keys().matcher_asleep();
    let marked: u64 = stack
        .store
        .command(redis::cmd("EXISTS").arg(&mark))
        .await
        .unwrap();
    assert_eq!(marked, 1, "asleep in Redis too");

    // Sockets alone make no work: it sleeps on.
    let players = [
        Player::connect(&stack, "ann").await,
        Player::connect(&stack, "bob").await,
        Player::connect(&stack, "cat").await,
    ];
    assert!(stack.matcher_asleep());
    assert_eq!(wake_ups(&stack), 0);
    assert_eq!(stack.matcher_ticks(), slept_at, "no tick while asleep");

    // The first join wakes it: one MatcherWake, and the matcher ticks.
    assert_eq!(players[0].join(&stack, "trio").await.0, 200);
    assert_eq!(wake_ups(&stack), 1, "the join that found it asleep woke it");
    assert!(stack.ticks_pass(1, WAIT).await, "the woken matcher ticks");
    assert!(!stack.matcher_asleep(), "awake while a ticket waits");
    assert_eq!(players[1].join(&stack, "trio").await.0, 200);
    let (code, body) = players[2].join(&stack, "trio").await;
    assert_eq!(
        (code, &body["data"]["status"]),
        (200, &json!("QUEUED")),
        "instant matching is off: {body}"
    );
    let joined = stack.matcher_ticks();
    // Formed by the first tick that starts after the join (a tick running
    // during the join may have read the queue before it): at most two
    // ticks later.
    for p in &players {
        p.heard("MATCH_FOUND", 1, WAIT).await;
        let ticks = stack.matcher_ticks();
        assert!(
            ticks <= joined + 2,
            "{} heard its match {} ticks after the join",
            p.id,
            ticks - joined
        );
    }
    assert_eq!(wake_ups(&stack), 1, "awake: nobody woke it again");

    // Everything delivered: it sleeps again, and a later join wakes it again.
    asleep(&stack).await;
    assert_eq!(players[0].join(&stack, "trio").await.0, 200);
    assert_eq!(wake_ups(&stack), 2);
    stack.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_widening_rated_window_is_served_on_time_after_the_matcher_slept() {
    // The older ticket's window: 20 + 100/s, so it reaches the 200 between
    // the two after 1.8 s of its own wait.
    let rules = json!({
        "ratings": {"claim": "mmr", "default": 1500, "min": 0, "max": 5000},
        "worlds": [{"name": "ranked", "teamSize": 2, "mode": "rating",
                    "rating": {"baseWindow": 20, "widenPerSecond": 100, "maxWindow": 400,
                               "relaxAfterSeconds": 60}}],
    })
    .to_string();
    let stack = support::start_stack_vars(&[("MM_RULES", &rules)]).await;
    asleep(&stack).await;
    let low = token_with(&stack, "low", json!({"mmr": 1000})).await;
    let high = token_with(&stack, "high", json!({"mmr": 1200})).await;
    let join = |token: String| {
        let stack = &stack;
        async move {
            call(
                stack,
                "POST",
                "/v1/matching/join",
                Some(&token),
                Some(json!({"worldType": "ranked"})),
            )
            .await
        }
    };
    let joined = Instant::now();
    let (code, body) = join(low.clone()).await;
    assert_eq!((code, &body["data"]["status"]), (200, &json!("QUEUED")));
    assert_eq!(wake_ups(&stack), 1);
    let (code, body) = join(high.clone()).await;
    assert_eq!(
        (code, &body["data"]["status"]),
        (200, &json!("QUEUED")),
        "200 apart, outside the 20 window: {body}"
    );
    let matched = eventually("the widened window to cover the pair", WAIT, || async {
        let (_, body) = call(&stack, "GET", "/v1/matching/my-status", Some(&low), None).await;
        (body["data"]["status"] == "MATCHED").then_some(body)
    })
    .await;
    let waited = joined.elapsed();
    let due = Duration::from_millis(1800);
    assert!(
        waited >= due - Duration::from_millis(100),
        "matched after {waited:?}, before the window covered 200"
    );
    // The formula's time plus two ticks (and the 20 ms polling).
    assert!(
        waited <= due + Duration::from_millis(2100),
        "matched after {waited:?}"
    );
    assert_eq!(matched["data"]["match"]["spread"], 200.0, "{matched}");
    assert_eq!(wake_ups(&stack), 1, "it stayed awake while they waited");
    stack.stop().await;
}
