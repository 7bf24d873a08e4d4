//! The block-list scenario end to end through real, time-compressed
//! redis-servers: a small population with avoid lists of 0–20 (so that a
//! random 4-player match often holds a blocked pair) arrives for 20
//! simulated seconds through a FIFO 2x2 world, with the lists written and
//! without block lists. Checks that every arrival is accounted for, that
//! no match of the lane with lists holds a blocked pair while the lane
//! without lists shows the lists had something to prevent, and that the
//! criteria, the report and the charts are produced; never how long
//! anything took. Needs redis-server, libfaketime and (for Debian's
//! jemalloc-linked redis-server) tcmalloc, as the other e2e tests.

use sim::blocks::analysis::{criteria, violations};
use sim::blocks::{plot, report, simulate, Config, Variant};
use sim::outcome::Fate;
use sim::rules::RuleSet;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_block_list_scenario_never_matches_a_blocked_pair() {
    let dir = std::env::temp_dir().join(format!("mm-sim-test-blocks-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let rs = RuleSet::from_text(
        "duo",
        "duo.json",
        r#"{"worlds": [{"name": "duo", "teamSize": 2, "teams": 2, "ticketTtlSeconds": 600}]}"#,
        None,
    )
    .unwrap();
    let config = Config {
        rule_sets: vec![rs],
        players: 300,
        lists: (0, 20),
        rate: 8.0,
        seconds: 20.0,
        away: (4.0, 8.0),
        mean: 1500.0,
        sd: 300.0,
        seed: 11,
        drain: 15.0,
        speed: 20.0,
        in_flight: 16,
        redis_server: "redis-server".into(),
        work_dir: dir.clone(),
    };
    let outcome = simulate(&config).await.unwrap_or_else(|e| panic!("{e}"));
    let pop = &outcome.population;
    let trace = &outcome.trace;
    let n = trace.arrivals.len();
    assert!(n > 100, "{n}");
    let labels: Vec<&str> = outcome.lanes.iter().map(|l| l.label.as_str()).collect();
    assert_eq!(labels, ["duo with lists", "duo without lists"]);
    for lane in &outcome.lanes {
        eprintln!("{}: {:?} {:?}", lane.label, lane.notes, lane.refused);
        assert_eq!(lane.failures, 0, "{}: {:?}", lane.label, lane.first_error);
        assert_eq!(lane.fates.len(), n);
        assert_eq!(lane.unaccounted, 0, "{}", lane.label);
        // Only a player back while still waiting is refused.
        for (a, f) in lane.fates.iter().enumerate() {
            if *f == Fate::Refused {
                let p = trace.arrivals[a].1;
                assert!(trace.arrivals[..a].iter().any(|x| x.1 == p), "{a}");
            }
        }
        assert!(lane.refused.keys().all(|k| k == "ALREADY_QUEUED"));
        assert!(!lane.fates.contains(&Fate::Expired), "{}", lane.label);
        let matched = lane
            .fates
            .iter()
            .filter(|f| matches!(f, Fate::Matched { .. }))
            .count();
        assert_eq!(matched, lane.records.len() * 4, "{}", lane.label);
        assert!(matched > n / 2, "{}: {matched} of {n}", lane.label);
        let v = violations(&lane.records, pop, 4);
        assert_eq!(v.malformed, 0, "{}: {:?}", lane.label, v.examples);
        match lane.variant {
            Variant::WithLists => {
                assert_eq!(v.records, 0, "{:?}", v.examples);
                let lists = pop.avoids.iter().filter(|l| !l.is_empty()).count();
                assert_eq!(lane.lists_written, lists);
            }
            Variant::WithoutLists => assert_eq!(lane.lists_written, 0),
        }
    }
    // 300 players avoiding 10 others on average: a pair in about a fifth
    // of random 4-player matches, which the lane without lists forms.
    let without = &outcome.lanes[1];
    let v = violations(&without.records, pop, 4);
    assert!(v.records > 0, "{} records, none blocked", v.checked);
    let checks = criteria(&outcome.lanes, pop);
    assert_eq!(checks.len(), 2);
    assert_eq!((checks[0].id, checks[1].id), ("B1", "B2"));
    assert!(checks[1].pass, "{}", checks[1].detail);
    let charts = plot::charts(&dir, &outcome).unwrap();
    assert_eq!(charts.len(), 3);
    assert!(charts.iter().all(|c| c.exists()));
    let ctx = report::Context {
        title: "test".into(),
        mean: 1500.0,
        sd: 300.0,
        seed: 11,
        drain: 15.0,
        speed: 20.0,
        measured_speed: outcome.measured_speed,
        clock_error: outcome.clock_error,
        wall_seconds: 1.0,
        command: "test".into(),
        core: None,
        charts: vec!["duo-waits-cdf.svg".into()],
    };
    let text = report::render(&ctx, &outcome, &checks, true);
    for part in [
        "(B1)",
        "(B2)",
        "### Wait by how many others a player avoids",
        "| 11–20 |",
        "![duo-waits-cdf.svg](duo-waits-cdf.svg)",
        "duo with lists",
    ] {
        assert!(text.contains(part), "{part}:\n{text}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
