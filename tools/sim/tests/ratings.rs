//! The ratings scenario end to end through real, time-compressed
//! redis-servers: a small population plays a few games per player in a
//! rated 2x2 world, three ways (updates, none, ratings known exactly).
//! Checks that every match is assigned, played and reported through the
//! result use case, that every join matched with the rating the player's
//! latest result stored (or its claim), that the ratings store agrees with
//! the results, and that the criteria, the report and the charts are
//! produced — and that the criteria miss for a lane that learns nothing;
//! never how long anything took. Needs redis-server, libfaketime and (for
//! Debian's jemalloc-linked redis-server) tcmalloc, as the other e2e tests.

use sim::ratings::{self, report, Config, Variant};
use sim::rules::RuleSet;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_population_plays_reports_and_its_ratings_follow_the_results() {
    let rs = RuleSet::from_text(
        "duo",
        "duo.json",
        r#"{"worlds": [{"name": "duo", "teamSize": 2, "teams": 2, "mode": "rating", "ticketTtlSeconds": 600,
            "rating": {"baseWindow": 100, "widenPerSecond": 50, "maxWindow": 600, "relaxAfterSeconds": 4,
                       "updates": {"system": "weng-lin", "uncertainty": 200, "beta": 100}}}]}"#,
        None,
    )
    .unwrap();
    let dir = std::env::temp_dir().join(format!("mm-sim-test-ratings-{}", std::process::id()));
    let config = Config {
        rule_sets: vec![rs],
        players: 40,
        games: 3.0,
        mean: 1500.0,
        sd: 300.0,
        seed: 5,
        initial: 1500.0,
        noise: 150.0,
        game_seconds: (2.0, 3.0),
        rest: (0.2, 0.5),
        ramp: 2.0,
        speed: 20.0,
        in_flight: 16,
        redis_server: "redis-server".into(),
        work_dir: dir.clone(),
    };
    let outcome = ratings::simulate(&config)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(outcome.lanes.len(), 3);
    for l in &outcome.lanes {
        eprintln!("{}: {:?} {:?}", l.label, l.notes, l.anomalies);
        assert_eq!(l.failures, 0, "{}: {:?}", l.label, l.first_error);
        assert_eq!(l.anomalies.count, 0, "{}: {:?}", l.label, l.anomalies);
        assert!(l.stopped_at.is_some(), "{}", l.label);
        // Every match formed was played and reported once.
        assert_eq!(l.results, l.matches.len() as u64, "{}", l.label);
        let games: u32 = l.games.iter().sum();
        assert_eq!(games as usize, 4 * l.matches.len(), "{}", l.label);
        assert!(f64::from(games) / 40.0 >= 3.0, "{}", l.label);
        // Each join matched with what the last result stored (or the claim).
        assert_eq!(l.used_mismatches, 0, "{}", l.label);
        assert_eq!(l.before_mismatches, 0, "{}", l.label);
        assert_eq!(l.store_mismatches, 0, "{}", l.label);
        let start = l.curve[0];
        assert_eq!(start.0, 0.0);
        match l.variant {
            Variant::Updates => {
                assert_eq!(l.store_entries, 40, "{}", l.label);
                assert!(start.1 > 100.0);
                assert!(l.curve.iter().any(|(_, m)| *m != start.1), "ratings moved");
            }
            Variant::NoUpdates => {
                assert_eq!(l.store_entries, 0);
                assert!(l.curve.iter().all(|(_, m)| *m == start.1), "{:?}", l.curve);
                assert!(l.matches.iter().all(|m| m.rating_spread == 0.0));
            }
            Variant::Known => {
                assert_eq!(l.store_entries, 0);
                assert!(l.curve.iter().all(|(_, m)| *m == 0.0));
                assert!(l.matches.iter().all(|m| m.error < 0.01));
            }
        }
        assert!(l.matches.iter().all(|m| m.true_team_difference.is_some()));
    }
    let checks = report::criteria(&outcome.lanes, config.games);
    assert_eq!(checks.len(), 2);
    assert!(checks.iter().all(|c| c.rule_set == "duo"), "{checks:?}");
    // A lane that learns nothing misses (Q1): the no-updates run in the
    // place of the one with updates.
    let mut blind = outcome.lanes.clone();
    blind.retain(|l| l.variant != Variant::Updates);
    blind[0].variant = Variant::Updates;
    let missed = report::criteria(&blind, config.games);
    assert!(!missed[0].pass, "{missed:?}");
    assert!(
        missed[0].detail.contains("(100.0 %)"),
        "{}",
        missed[0].detail
    );

    let charts = ratings::plot::charts(&dir, &outcome, config.games).unwrap();
    assert_eq!(charts.len(), 2);
    assert!(charts.iter().all(|p| p.exists()));
    let ctx = report::Context {
        title: "t".into(),
        games: config.games,
        mean: 1500.0,
        sd: 300.0,
        seed: 5,
        initial: 1500.0,
        noise: 150.0,
        game_seconds: config.game_seconds,
        rest: config.rest,
        ramp: config.ramp,
        speed: 20.0,
        wall_seconds: 1.0,
        command: "scripts/sim.sh --ratings".into(),
        core: None,
    };
    let text = report::render(&ctx, &outcome, &checks, true);
    for want in [
        "## Done criteria",
        "(Q1)",
        "(Q2)",
        "duo-error.svg",
        "Mean absolute error",
    ] {
        assert!(text.contains(want), "{want}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
