//! The several-queues scenario end to end through real, time-compressed
//! redis-servers: new players queuing in 1, 2 or 3 worlds of a queueGroup
//! of three 1 v 1 FIFO worlds arrive for 20 simulated seconds, played with
//! their tickets in all their worlds, with every player in its first world
//! and with the single-queue players only. Checks that every arrival is
//! accounted for, that the offline check finds nobody matched twice nor in
//! a world they did not queue in, that multi-queue players are matched
//! outside their first world too, and that the criteria, the report and
//! the charts are produced; never how long anything took (the criteria's
//! ratios are not asserted: 20 s of arrivals say little). Needs
//! redis-server, libfaketime and (for Debian's jemalloc-linked
//! redis-server) tcmalloc, as the other e2e tests.

use sim::outcome::Fate;
use sim::queues::analysis::{criteria, first_world_share, verify};
use sim::queues::{plot, report, simulate, Config, Variant};
use sim::rules::RuleSet;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_several_queues_scenario_matches_nobody_twice() {
    let dir = std::env::temp_dir().join(format!("mm-sim-test-queues-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let world = |n: &str| {
        format!(
            r#"{{"name": "{n}", "teamSize": 1, "teams": 2, "ticketTtlSeconds": 600, "queueGroup": "any"}}"#
        )
    };
    let text = format!(
        r#"{{"worlds": [{}, {}, {}]}}"#,
        world("a"),
        world("b"),
        world("c")
    );
    let rs = RuleSet::from_text("duel", "duel.json", &text, None).unwrap();
    let config = Config {
        rule_sets: vec![rs],
        rate: 6.0,
        seconds: 20.0,
        mix: sim::queues::MIX.to_vec(),
        popularity: Vec::new(),
        seed: 11,
        drain: 10.0,
        speed: 20.0,
        in_flight: 16,
        redis_server: "redis-server".into(),
        work_dir: dir.clone(),
    };
    let outcome = simulate(&config).await.unwrap_or_else(|e| panic!("{e}"));
    let trace = &outcome.trace;
    let n = trace.arrivals.len();
    assert!(n > 60, "{n}");
    let labels: Vec<&str> = outcome.lanes.iter().map(|l| l.label.as_str()).collect();
    assert_eq!(
        labels,
        [
            "duel several queues",
            "duel one queue each",
            "duel single-queue players only"
        ]
    );
    for lane in &outcome.lanes {
        eprintln!("{}: {:?} {:?}", lane.label, lane.notes, lane.refused);
        assert_eq!(lane.failures, 0, "{}: {:?}", lane.label, lane.first_error);
        assert!(lane.refused.is_empty(), "{}", lane.label);
        let v = verify(lane, trace);
        assert!(v.clean(), "{}: {}", lane.label, v.describe());
        let played = lane.fates.iter().flatten().count();
        let singles = trace.arrivals.iter().filter(|a| a.queues() == 1).count();
        let expected = if lane.variant == Variant::SinglesOnly {
            singles
        } else {
            n
        };
        assert_eq!(played, expected, "{}", lane.label);
        let matched = lane
            .fates
            .iter()
            .filter(|f| matches!(f, Some(Fate::Matched { .. })))
            .count();
        assert_eq!(matched, lane.records.len() * 2, "{}", lane.label);
        // At most one player waits per world at the end (1 v 1, FIFO).
        assert!(
            lane.waiting.iter().all(|q| q.len() <= 1),
            "{:?}",
            lane.waiting
        );
    }
    // Tickets in several worlds are matched in the others too.
    let several = &outcome.lanes[0];
    let share = first_world_share(several, trace, 3).unwrap();
    assert!(share < 0.9, "{share}");
    let checks = criteria(&outcome.lanes, trace);
    let ids: Vec<&str> = checks.iter().map(|c| c.id).collect();
    assert_eq!(ids, ["Q1", "Q2", "Q3"]);
    assert!(checks[2].pass, "{}", checks[2].detail);
    let charts = plot::charts(&dir, &outcome).unwrap();
    assert_eq!(charts.len(), 3);
    assert!(charts.iter().all(|c| c.exists()));
    let ctx = report::Context {
        title: "test".into(),
        seed: 11,
        drain: 10.0,
        speed: 20.0,
        measured_speed: outcome.measured_speed,
        clock_error: outcome.clock_error,
        wall_seconds: 1.0,
        command: "test".into(),
        core: None,
        charts: vec!["duel-waits-by-queues.svg".into()],
    };
    let text = report::render(&ctx, &outcome, &checks, true);
    for part in [
        "(Q1)",
        "(Q3)",
        "### Wait by number of queues",
        "| 3 queues |",
        "### Single-queue players in each lane",
        "![duel-waits-by-queues.svg](duel-waits-by-queues.svg)",
        "duel single-queue players only",
    ] {
        assert!(text.contains(part), "{part}:\n{text}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
