//! The backfill scenario end to end through real, time-compressed
//! redis-servers: a short trace through a rated 2x2 world whose players
//! leave their matches early with a high probability, played with and
//! without backfill. Checks that the game servers request and renew
//! backfills, that every fill takes an open seat of its team, within the
//! world's rating and balance windows, that the lane without backfill
//! fills nothing, and that the criteria, the report and the charts are
//! produced — and that the criteria miss when no seat is ever filled;
//! never how long anything took. Needs redis-server, libfaketime and (for
//! Debian's jemalloc-linked redis-server) tcmalloc, as the other e2e tests.

use sim::backfill::{self, report, Config, Variant};
use sim::rules::RuleSet;
use sim::scenario::Scenario;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leavers_seats_are_backfilled_within_the_worlds_windows() {
    let scenario = Scenario::poisson(20.0, 25.0, 1500.0, 300.0, 13).unwrap();
    let rs = RuleSet::from_text(
        "duo",
        "duo.json",
        r#"{"worlds": [{"name": "duo", "teamSize": 2, "teams": 2, "mode": "rating", "ticketTtlSeconds": 600,
            "rating": {"baseWindow": 100, "widenPerSecond": 50, "maxWindow": 400, "relaxAfterSeconds": 6,
                       "updates": {"system": "none"}},
            "balance": {"baseWindow": 20, "widenPerSecond": 10, "maxWindow": 100}}]}"#,
        None,
    )
    .unwrap();
    let dir = std::env::temp_dir().join(format!("mm-sim-test-backfill-{}", std::process::id()));
    let config = Config {
        scenario: scenario.clone(),
        rule_sets: vec![rs],
        leave_probability: 0.4,
        game_seconds: (10.0, 15.0),
        renew: 2.0,
        noise: 150.0,
        seed: 13,
        speed: 20.0,
        in_flight: 16,
        redis_server: "redis-server".into(),
        work_dir: dir.clone(),
    };
    let outcome = backfill::simulate(&config)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(outcome.lanes.len(), 2);
    assert_eq!(outcome.keepalive, 15.0);
    for l in &outcome.lanes {
        eprintln!("{}: {:?} {:?}", l.label, l.notes, l.anomalies);
        assert_eq!(l.failures, 0, "{}: {:?}", l.label, l.first_error);
        // A fill outside its team's open seats or the balance window, a
        // request or renewal refused: all anomalies.
        assert_eq!(l.anomalies.count, 0, "{}: {:?}", l.label, l.anomalies);
        assert_eq!(l.mismatches, 0, "{}", l.label);
        assert!(l.games.len() > 50, "{}: {}", l.label, l.games.len());
        assert!(!l.seats.is_empty(), "{}: nobody left", l.label);
        // Everyone placed (a fresh match or a backfill) or still waiting.
        let placed = l.fresh_waits.len() + l.backfill_waits.len();
        assert_eq!(placed + l.waiting, scenario.arrivals.len(), "{}", l.label);
        let leavers: usize = l.games.iter().map(|g| g.leavers).sum();
        assert_eq!(leavers, l.seats.len(), "{}", l.label);
        match l.variant {
            Variant::Backfill => {
                assert!(l.requests as usize >= l.seats.len(), "{}", l.label);
                assert!(l.fills.len() > 5, "{}: {} fills", l.label, l.fills.len());
                assert_eq!(l.fills.len(), l.backfill_waits.len());
                let filled = l.seats.iter().filter(|s| s.filled_at.is_some()).count();
                assert_eq!(filled, l.fills.len(), "{}", l.label);
                assert!(l
                    .seats
                    .iter()
                    .all(|s| s.filled_at.is_none_or(|f| f >= s.left_at)));
                assert_eq!(l.by_join + l.by_matcher, l.fills.len() as u64);
                let over: Vec<_> = l.fills.iter().filter(|f| f.over_window()).collect();
                assert_eq!(report::distances(&l.fills).over_window, over.len());
                assert!(
                    over.is_empty(),
                    "{}: fills over the window: {over:?}",
                    l.label
                );
            }
            Variant::ShortHanded => {
                assert_eq!((l.requests, l.fills.len()), (0, 0), "{}", l.label);
                assert!(l.seats.iter().all(|s| s.filled_at.is_none()));
            }
        }
    }
    let checks = report::criteria(&outcome.lanes, outcome.last_arrival);
    assert_eq!(checks.len(), 3);
    assert!(checks[1].pass, "{:?}", checks[1]);
    // No seat ever filled: (B1) misses.
    let mut none = outcome.lanes.clone();
    none.retain(|l| l.variant == Variant::ShortHanded);
    none[0].variant = Variant::Backfill;
    let missed = report::criteria(&none, outcome.last_arrival);
    assert!(
        !missed[0].pass && missed[0].detail.contains("median never"),
        "{missed:?}"
    );

    let charts = backfill::plot::charts(&dir, &outcome).unwrap();
    assert_eq!(charts.len(), 2);
    assert!(charts.iter().all(|p| p.exists()));
    let ctx = report::Context {
        title: "t".into(),
        scenario: scenario.describe(),
        leave_probability: config.leave_probability,
        game_seconds: config.game_seconds,
        renew: config.renew,
        speed: 20.0,
        wall_seconds: 1.0,
        command: "scripts/sim.sh --backfill".into(),
        core: None,
        note: None,
    };
    let text = report::render(&ctx, &outcome, &checks, true);
    for want in [
        "(B1)",
        "(B2)",
        "(B3)",
        "duo-seat-waits.svg",
        "Backfilled players",
    ] {
        assert!(text.contains(want), "{want}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
