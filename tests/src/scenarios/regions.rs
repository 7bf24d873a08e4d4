//! Regions: matches form only where every member plays well, under a latency
//! cap that widens with the anchor's own wait; the region chosen is the one
//! with the lowest worst latency; parties count by their worst member.

use std::time::Instant;

use shared::store::JoinInput;
use shared::{Latencies, PartyCreateOutcome, PartyJoinOutcome, RegionRules, Rejection};

use super::*;

fn geo_rules(extra: &str) -> String {
    format!(
        r#"{{"worlds": [{{"name": "geo", "teamSize": 2, {extra}
            "regions": {{"names": ["eu", "us", "asia"], "maxLatencyMs": 50,
                        "widenPerSecond": 20, "maxLatencyCapMs": 150}}}}]}}"#
    )
}

fn regions_of(store: &MatchStore, w: &str) -> RegionRules {
    world(store, w)
        .regions
        .clone()
        .expect("a world with regions")
}

fn latencies(store: &MatchStore, w: &str, value: serde_json::Value) -> Latencies {
    Latencies::from_value(&value, &regions_of(store, w).names).expect("valid latencies")
}

async fn join_from(store: &MatchStore, w: &str, p: &str, value: serde_json::Value) -> JoinOutcome {
    let lat = latencies(store, w, value);
    let input = JoinInput {
        latencies: Some(&lat),
        ..JoinInput::default()
    };
    store
        .join_reply(world(store, w), &player(p), &input, false)
        .await
        .expect("join")
        .outcome
}

/// The match `p` is in, if any.
async fn match_of(store: &MatchStore, p: &str) -> Option<MatchRecord> {
    match store.player_status(&player(p)).await.unwrap() {
        PlayerStatus::Matched(m) => Some(m.record),
        _ => None,
    }
}

/// Two players whose only common regions are over the base cap wait until
/// the cap, widening with the anchor's wait, covers one: then they play
/// there, in the region with the lower worst latency, no later than the
/// formula's time plus two ticks.
pub async fn regions_match_only_where_everyone_is_within_the_widening_cap(env: &Env) {
    let store = env.store_with(
        "regions-cap",
        "",
        &[("MM_RULES", &geo_rules("")), ("MM_INSTANT_MATCH", "false")],
    );
    let joined = Instant::now();
    join_from(&store, "geo", "a", serde_json::json!({"eu": 40, "us": 120})).await;
    join_from(
        &store,
        "geo",
        "b",
        serde_json::json!({"eu": 110, "us": 45, "asia": 30}),
    )
    .await;
    let w = world(&store, "geo");
    // eu's worst is 110, us's 120: the cap reaches 110 after (110 - 50) / 20
    // = 3 s of the anchor's wait.
    let due = Duration::from_secs(3);
    let record = eventually("the cap to cover eu", Duration::from_secs(8), || async {
        store.form_matches(w, 0).await.unwrap();
        match_of(&store, "a").await
    })
    .await;
    let waited = joined.elapsed();
    assert!(
        waited >= due - Duration::from_millis(100),
        "matched after {waited:?}, before the cap covered 110 ms"
    );
    assert!(
        waited <= due + Duration::from_secs(2),
        "matched after {waited:?}"
    );
    assert_eq!(record.region.as_deref(), Some("eu"), "{record:?}");
    assert_eq!(record.worst_latency, Some(110));
    let lat = record.latencies.clone().unwrap();
    assert_eq!((lat["a"], lat["b"]), (40, 110));
    no_region_state(&store, "geo").await;
}

/// Of the regions that qualify the one with the lowest worst latency wins,
/// ties going to the lower average; a join with instant matching finds it.
pub async fn the_region_with_the_lowest_worst_latency_is_chosen(env: &Env) {
    let store = env.store_with("regions-choice", "", &[("MM_RULES", &geo_rules(""))]);
    join_from(
        &store,
        "geo",
        "a",
        serde_json::json!({"eu": 30, "us": 40, "asia": 20}),
    )
    .await;
    let joined = join_from(
        &store,
        "geo",
        "b",
        serde_json::json!({"eu": 40, "us": 10, "asia": 40}),
    )
    .await;
    // eu: worst 40, avg 35; us: worst 40, avg 25; asia: worst 40, avg 30.
    let record = match joined {
        JoinOutcome::Matched { record, .. } => record,
        other => panic!("{other:?}"),
    };
    assert_eq!(record.region.as_deref(), Some("us"), "{record:?}");
    assert_eq!(record.worst_latency, Some(40));
}

/// A party plays only where every member qualifies: its latency to a
/// region is its worst member's, and a region one member did not report
/// does not count.
pub async fn a_party_is_placed_only_where_all_its_members_qualify(env: &Env) {
    let store = env.store_with(
        "regions-party",
        "",
        &[(
            "MM_RULES",
            r#"{"worlds": [{"name": "geo", "teamSize": 3, "maxPartySize": 2,
                "regions": {"names": ["eu", "us", "asia"], "maxLatencyMs": 50,
                            "widenPerSecond": 0, "maxLatencyCapMs": 50}}]}"#,
        )],
    );
    let input = |v: serde_json::Value| latencies(&store, "geo", v);
    // The leader plays well in eu and us, the member in eu and asia: the
    // party qualifies in eu only.
    let leader_lat = input(serde_json::json!({"eu": 20, "us": 10}));
    let party = match store
        .create_party_with(
            world(&store, "geo"),
            &player("lead"),
            &[player("mate")],
            &JoinInput {
                latencies: Some(&leader_lat),
                ..JoinInput::default()
            },
        )
        .await
        .unwrap()
    {
        PartyCreateOutcome::Created(view) => view.party_id,
        other => panic!("{other:?}"),
    };
    let mate_lat = input(serde_json::json!({"eu": 45, "asia": 5}));
    let queued = store
        .join_party_claiming(
            world(&store, "geo"),
            &party,
            &player("mate"),
            &JoinInput {
                latencies: Some(&mate_lat),
                ..JoinInput::default()
            },
            false,
        )
        .await
        .unwrap();
    assert!(matches!(queued, PartyJoinOutcome::Queued(_)), "{queued:?}");
    // A solo in us only, one in asia only: neither completes the party's
    // match; one in eu does.
    for (p, lat) in [
        ("us-solo", serde_json::json!({"us": 5})),
        ("asia-solo", serde_json::json!({"asia": 5})),
    ] {
        let outcome = join_from(&store, "geo", p, lat).await;
        assert!(
            matches!(outcome, JoinOutcome::Queued(_)),
            "{p}: {outcome:?}"
        );
    }
    store.form_matches(world(&store, "geo"), 0).await.unwrap();
    assert!(match_of(&store, "lead").await.is_none());
    // Queue status counts each waiting ticket in every region it can play in.
    let status = store.queue_status(world(&store, "geo")).await.unwrap();
    let counts: Vec<(String, u64)> = status.regions.clone().unwrap().into_iter().collect();
    assert_eq!(
        counts,
        [
            ("asia".to_string(), 1),
            ("eu".to_string(), 1),
            ("us".to_string(), 1)
        ],
        "{status:?}"
    );
    let joined = join_from(&store, "geo", "eu-solo", serde_json::json!({"eu": 30})).await;
    let record = match joined {
        JoinOutcome::Matched { record, .. } => record,
        other => panic!("{other:?}"),
    };
    let mut players: Vec<String> = record.participants.iter().map(|p| p.to_string()).collect();
    players.sort();
    assert_eq!(players, ["eu-solo", "lead", "mate"]);
    assert_eq!(record.region.as_deref(), Some("eu"));
    // Each member's own latency is reported; the worst is the member's 45.
    let lat = record.latencies.clone().unwrap();
    assert_eq!((lat["lead"], lat["mate"], lat["eu-solo"]), (20, 45, 30));
    assert_eq!(record.worst_latency, Some(45));
}

/// A world with regions: a join without latencies is refused unless a
/// default region is configured (then it plays there at the base cap); a
/// spread bound keeps a near and a far player apart whatever the cap.
pub async fn latencies_are_required_or_defaulted_and_spread_is_bounded(env: &Env) {
    let store = env.store_with("regions-required", "", &[("MM_RULES", &geo_rules(""))]);
    let refused = join(&store, "geo", "nobody").await;
    assert!(
        matches!(
            refused,
            JoinOutcome::Rejected(Rejection::LatencyRequired { .. })
        ),
        "{refused:?}"
    );
    assert_eq!(count_states(&store, StateKind::Waiting).await, 0);

    let rules = r#"{"worlds": [{"name": "geo", "teamSize": 2,
        "regions": {"names": ["eu", "us"], "maxLatencyMs": 60, "widenPerSecond": 0,
                    "maxLatencyCapMs": 60, "maxSpreadMs": 20, "defaultRegion": "eu"}}]}"#;
    let store = env.store_with("regions-default", "", &[("MM_RULES", rules)]);
    // No latencies: eu at 60 ms. A player at 10 ms in eu is 50 ms apart:
    // over the spread.
    assert!(matches!(
        join(&store, "geo", "unmeasured").await,
        JoinOutcome::Queued(_)
    ));
    let near = join_from(&store, "geo", "near", serde_json::json!({"eu": 10})).await;
    assert!(matches!(near, JoinOutcome::Queued(_)), "{near:?}");
    let close = join_from(&store, "geo", "close", serde_json::json!({"eu": 45})).await;
    let record = match close {
        JoinOutcome::Matched { record, .. } => record,
        other => panic!("{other:?}"),
    };
    let mut players: Vec<String> = record.participants.iter().map(|p| p.to_string()).collect();
    players.sort();
    assert_eq!(
        players,
        ["close", "unmeasured"],
        "45 and 60 are within 20 ms"
    );
}

/// Rated worlds with regions take the nearest rated within the window among
/// the players who play well in the region, and leaving, expiring and
/// matching leave nothing in the region structures.
pub async fn rated_worlds_with_regions_match_by_rating_within_a_region(env: &Env) {
    let rules = r#"{"worlds": [{"name": "geo", "teamSize": 2, "mode": "rating",
        "rating": {"baseWindow": 100, "widenPerSecond": 0, "maxWindow": 100, "relaxAfterSeconds": 600},
        "regions": {"names": ["eu", "us"], "maxLatencyMs": 50, "widenPerSecond": 0,
                    "maxLatencyCapMs": 50}}],
        "ratings": {"default": 1500}}"#;
    let store = env.store_with("regions-rated", "", &[("MM_RULES", rules)]);
    let join_rated_from = |p: &'static str, r: f64, v: serde_json::Value| {
        let store = &store;
        async move {
            let lat = latencies(store, "geo", v);
            let input = JoinInput {
                latencies: Some(&lat),
                claimed: Some(rating(r)),
                ..JoinInput::default()
            };
            store
                .join_reply(world(store, "geo"), &player(p), &input, false)
                .await
                .unwrap()
                .outcome
        }
    };
    // Same rating, other region: no match; far rating, same region: no match.
    assert!(matches!(
        join_rated_from("eu-1500", 1500.0, serde_json::json!({"eu": 20})).await,
        JoinOutcome::Queued(_)
    ));
    assert!(matches!(
        join_rated_from("us-1500", 1500.0, serde_json::json!({"us": 20})).await,
        JoinOutcome::Queued(_)
    ));
    assert!(matches!(
        join_rated_from("eu-2000", 2000.0, serde_json::json!({"eu": 20})).await,
        JoinOutcome::Queued(_)
    ));
    let record =
        match join_rated_from("eu-1550", 1550.0, serde_json::json!({"eu": 30, "us": 90})).await {
            JoinOutcome::Matched { record, .. } => record,
            other => panic!("{other:?}"),
        };
    let mut players: Vec<String> = record.participants.iter().map(|p| p.to_string()).collect();
    players.sort();
    assert_eq!(players, ["eu-1500", "eu-1550"]);
    assert_eq!(record.region.as_deref(), Some("eu"));
    assert_eq!(record.spread, Some(50.0));
    store
        .leave(world(&store, "geo"), &player("us-1500"))
        .await
        .unwrap();
    store
        .leave(world(&store, "geo"), &player("eu-2000"))
        .await
        .unwrap();
    no_region_state(&store, "geo").await;
}

/// Nothing is left in a world's region structures.
async fn no_region_state(store: &MatchStore, w: &str) {
    let wk = store.keys().world(&world_name(w));
    assert_eq!(hlen(store, &wk.latencies).await, 0, "latencies");
    assert_eq!(zcard(store, &wk.region_queue).await, 0, "region queue");
    assert_eq!(zcard(store, &wk.region_ratings).await, 0, "region ratings");
    assert_eq!(zcard(store, &wk.due).await, 0, "due anchors");
}

/// A ready check in a world with regions: a cancelled proposal files the
/// requeued ticket back in its regions, where the next join finds it, and
/// the accepted match keeps its region.
pub async fn a_ready_check_keeps_regions_through_a_cancelled_proposal(env: &Env) {
    let rules = r#"{"worlds": [{"name": "geo", "teamSize": 2,
        "readyCheck": {"acceptSeconds": 30},
        "regions": {"names": ["eu", "us"], "maxLatencyMs": 50, "widenPerSecond": 0,
                    "maxLatencyCapMs": 50}}]}"#;
    let store = env.store_with("regions-ready", "", &[("MM_RULES", rules)]);
    join_from(&store, "geo", "a", serde_json::json!({"eu": 20})).await;
    let proposal =
        match join_from(&store, "geo", "b", serde_json::json!({"eu": 30, "us": 10})).await {
            JoinOutcome::Proposed(view) => view,
            other => panic!("{other:?}"),
        };
    let declined = store
        .answer_proposal(&proposal.match_id, &player("a"), false)
        .await
        .unwrap();
    assert!(
        matches!(
            declined,
            shared::AnswerOutcome::Cancelled { requeued: 1, .. }
        ),
        "{declined:?}"
    );
    let status = store.queue_status(world(&store, "geo")).await.unwrap();
    let counts: Vec<(String, u64)> = status.regions.clone().unwrap().into_iter().collect();
    assert_eq!(
        counts,
        [("eu".to_string(), 1), ("us".to_string(), 1)],
        "b is filed back in both"
    );
    let again = match join_from(&store, "geo", "c", serde_json::json!({"us": 40})).await {
        JoinOutcome::Proposed(view) => view,
        other => panic!("{other:?}"),
    };
    for p in ["b", "c"] {
        store
            .answer_proposal(&again.match_id, &player(p), true)
            .await
            .unwrap();
    }
    let record = match_of(&store, "c").await.expect("the match");
    assert_eq!(record.region.as_deref(), Some("us"), "{record:?}");
    assert_eq!(record.worst_latency, Some(40));
    no_region_state(&store, "geo").await;
}
