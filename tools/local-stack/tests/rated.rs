//! Rated matchmaking through the local stack: ratings from the dev token's
//! claim and from the privileged ratings route, a window that widens while a
//! ticket waits, and matches that carry every rating and their spread.

mod support;

use std::time::Duration;

use integration_tests::eventually;
use serde_json::{json, Value};
use support::{call, token_with};

const RULES: &str = r#"{"ratings": {"claim": "mmr", "min": 0, "max": 5000,
                       "writerScope": "matchmaking/ratings.write"},
    "worlds": [{"name": "ranked", "teamSize": 2, "mode": "rating",
                "rating": {"baseWindow": 20, "widenPerSecond": 40, "maxWindow": 300,
                           "relaxAfterSeconds": 30}}]}"#;

const WAIT: Duration = Duration::from_secs(30);

async fn join(stack: &local_stack::LocalStack, token: &str) -> (u16, Value) {
    call(
        stack,
        "POST",
        "/v1/matching/join",
        Some(token),
        Some(json!({"worldType": "ranked"})),
    )
    .await
}

async fn status(stack: &local_stack::LocalStack, token: &str) -> Value {
    let (code, body) = call(stack, "GET", "/v1/matching/my-status", Some(token), None).await;
    assert_eq!(code, 200, "{body}");
    body["data"].clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rated_players_match_inside_a_window_that_widens_while_they_wait() {
    let stack = support::start_stack_vars(&[("MM_RULES", RULES)]).await;
    let low = token_with(&stack, "low", json!({"mmr": 1000})).await;
    let high = token_with(&stack, "high", json!({"mmr": 1200})).await;
    let (code, body) = join(&stack, &low).await;
    assert_eq!(code, 200, "{body}");
    assert_eq!(body["data"]["rating"], 1000.0);
    assert_eq!(body["data"]["ratingWindow"], 20.0);
    let (code, body) = join(&stack, &high).await;
    assert_eq!(
        (code, body["data"]["status"].as_str()),
        (200, Some("QUEUED"))
    );

    // The oldest ticket's window widens (40/s) until it reaches 200 away,
    // and the matcher forms the match around it.
    let first = status(&stack, &low).await["ratingWindow"]
        .as_f64()
        .expect("a window");
    let wider = eventually("low's window to widen", WAIT, || async {
        let s = status(&stack, &low).await;
        s["ratingWindow"]
            .as_f64()
            .filter(|w| *w > first)
            .map(|_| s.clone())
    })
    .await;
    assert!(wider["relaxesInSeconds"].as_u64().unwrap() <= 30, "{wider}");
    let matched = eventually("the match once the window reaches 200", WAIT, || async {
        let s = status(&stack, &low).await;
        (s["status"] == "MATCHED").then_some(s)
    })
    .await;
    let record = &matched["match"];
    assert_eq!(record["participants"], json!(["low", "high"]));
    assert_eq!(record["ratings"], json!({"low": 1000.0, "high": 1200.0}));
    assert_eq!(record["spread"], 200.0);

    // A privileged caller writes a rating; it wins over the claim.
    let server = token_with(
        &stack,
        "game-server",
        json!({"scope": "matchmaking/ratings.write"}),
    )
    .await;
    let (code, body) = call(
        &stack,
        "PUT",
        "/v1/ratings/low",
        Some(&server),
        Some(json!({"rating": 1777, "worldType": "ranked"})),
    )
    .await;
    assert_eq!(code, 200, "{body}");
    let (code, body) = call(
        &stack,
        "PUT",
        "/v1/ratings/low",
        Some(&low),
        Some(json!({"rating": 4999})),
    )
    .await;
    assert_eq!(
        (code, body["data"]["error"].as_str()),
        (403, Some("FORBIDDEN"))
    );
    let (code, body) = join(&stack, &low).await;
    assert_eq!(code, 200, "{body}");
    assert_eq!(body["data"]["rating"], 1777.0);

    let (code, body) = call(
        &stack,
        "GET",
        "/v1/matching/queue-status/ranked",
        Some(&low),
        None,
    )
    .await;
    assert_eq!(code, 200);
    assert_eq!(body["data"]["ratings"]["lowest"], 1777.0);
    assert_eq!(
        body["data"]["ratings"]["buckets"].as_array().unwrap().len(),
        5
    );
    stack.stop().await;
}
