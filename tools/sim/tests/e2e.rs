//! End to end through a real, time-compressed redis-server: a 20-second
//! trace at x40 through a FIFO world, a rated world and a world whose
//! tickets all expire. Checks that the counts add up, never how long
//! anything took. Needs redis-server, libfaketime and (for Debian's
//! jemalloc-linked redis-server) tcmalloc; a missing one fails the test with
//! the command that installs it.

use std::collections::HashSet;
use std::path::PathBuf;
use std::time::Duration;

use sim::outcome::{Fate, Kind, Run};
use sim::rules::RuleSet;
use sim::scenario::Scenario;
use sim::server::FakeRedis;
use sim::{clock, simulate, Config};

const TEAM: usize = 4;

fn work_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("mm-sim-test-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn count(run: &Run, want: fn(&Fate) -> bool) -> usize {
    run.fates.iter().filter(|f| want(f)).count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_short_trace_adds_up_in_every_world() {
    let scenario = Scenario::poisson(12.0, 20.0, 1500.0, 300.0, 11).unwrap();
    let arrivals = scenario.arrivals.len();
    assert!(arrivals > 150, "{arrivals}");
    let rated = RuleSet::from_text(
        "rated",
        "rated.json",
        r#"{"worlds": [{"name": "ranked", "teamSize": 4, "mode": "rating", "ticketTtlSeconds": 600,
            "rating": {"baseWindow": 50, "widenPerSecond": 25, "maxWindow": 400, "relaxAfterSeconds": 5}}]}"#,
        None,
    )
    .unwrap();
    // A window of zero that never relaxes before the 2-second lifetime:
    // (almost) everyone expires.
    let expiring = RuleSet::from_text(
        "expiring",
        "expiring.json",
        r#"{"worlds": [{"name": "strict", "teamSize": 4, "mode": "rating", "ticketTtlSeconds": 2,
            "rating": {"baseWindow": 0, "widenPerSecond": 0, "maxWindow": 0, "relaxAfterSeconds": 1000}}]}"#,
        None,
    )
    .unwrap();
    let dir = work_dir("e2e");
    let config = Config {
        scenario: scenario.clone(),
        rule_sets: vec![rated, expiring],
        team_size: TEAM as u32,
        ticket_ttl_secs: 600,
        instant_match: true,
        drain: 20.0,
        oracle_periods: vec![1.0, 5.0],
        speed: 40.0,
        in_flight: 16,
        redis_server: "redis-server".into(),
        work_dir: dir.clone(),
    };
    let outcome = simulate(&config).await.unwrap_or_else(|e| panic!("{e}"));
    assert!((outcome.measured_speed / 40.0 - 1.0).abs() < 0.05);
    let labels: Vec<&str> = outcome.runs.iter().map(|r| r.label.as_str()).collect();
    assert_eq!(
        labels,
        [
            "rated (ranked)",
            "expiring (strict)",
            "FIFO",
            "oracle T=1s",
            "oracle T=5s"
        ]
    );

    for run in &outcome.runs {
        eprintln!("{}: {:?}", run.label, run.notes);
        assert_eq!(
            run.failures, 0,
            "{}: the core failed: {:?}",
            run.label, run.notes
        );
        let matched = count(run, |f| matches!(f, Fate::Matched { .. }));
        let expired = count(run, |f| matches!(f, Fate::Expired));
        let waiting = count(run, |f| matches!(f, Fate::Waiting));
        let refused = count(run, |f| matches!(f, Fate::Refused));
        // Every arrival is matched, expired or waiting; nothing is refused.
        assert_eq!(
            matched + expired + waiting,
            arrivals,
            "{}: {matched} + {expired} + {waiting} (notes {:?})",
            run.label,
            run.notes
        );
        assert_eq!(refused, 0, "{}: {:?}", run.label, run.notes);
        // Matches are full teams of distinct players, each matched once.
        let mut seen = HashSet::new();
        for m in &run.matches {
            assert_eq!(m.players.len(), TEAM, "{}", run.label);
            for p in &m.players {
                assert!(seen.insert(*p), "{}: player {p} matched twice", run.label);
            }
        }
        assert_eq!(seen.len(), matched, "{}", run.label);
        assert_eq!(matched, run.matches.len() * TEAM, "{}", run.label);
        // The ticker, the counts and the core agree.
        for note in &run.notes {
            assert!(
                !note.starts_with("INCONSISTENT")
                    && !note.starts_with("MISMATCH")
                    && !note.contains("failed"),
                "{}: {note}",
                run.label
            );
        }
        match run.kind {
            Kind::Fifo | Kind::Oracle { .. } => {
                // Nothing expires; fewer than a team are left over.
                assert_eq!(expired, 0, "{}", run.label);
                assert!(waiting < TEAM, "{}: {waiting} waiting", run.label);
            }
            Kind::RuleSet { .. } if run.label.starts_with("rated") => {
                assert_eq!(expired, 0, "{}", run.label);
                // Past the relax time anyone matches anyone.
                assert!(waiting < TEAM, "{}: {waiting} waiting", run.label);
                assert!(
                    run.notes
                        .iter()
                        .any(|n| n.contains("rated match records agree")),
                    "{:?}",
                    run.notes
                );
            }
            Kind::RuleSet { .. } => {
                assert!(expired > arrivals / 2, "{}: {expired} expired", run.label);
            }
        }
    }

    // The report renders with every run, and the acceptance checks exist for
    // both rule sets.
    let frontier = sim::report::frontier(&outcome.runs);
    assert_eq!(frontier.points().len(), 2);
    let checks = sim::report::acceptance(&scenario, &outcome.runs, &frontier);
    assert_eq!(checks.len(), 6);
    sim::plot::frontier_chart(&dir.join("frontier.svg"), &outcome.runs).unwrap();
    sim::plot::decile_chart(&dir.join("deciles.svg"), &scenario, &outcome.runs).unwrap();
    let svg = std::fs::read_to_string(dir.join("frontier.svg")).unwrap();
    assert!(
        svg.starts_with("<svg") && svg.contains("T=5s"),
        "{}",
        &svg[..200.min(svg.len())]
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[tokio::test]
async fn a_clock_running_at_the_wrong_speed_is_refused() {
    let dir = work_dir("speed");
    let server = FakeRedis::start("redis-server", 40.0, &dir.join("redis.log"))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let mut conn = redis::Client::open(server.url())
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap();
    let (measured, _) = clock::verify_speed(&mut conn, 40.0, Duration::from_millis(300), 0.05)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert!((measured / 40.0 - 1.0).abs() < 0.05, "x{measured}");
    let err = clock::verify_speed(&mut conn, 10.0, Duration::from_millis(300), 0.05)
        .await
        .unwrap_err();
    assert!(err.contains("not x10"), "{err}");
    drop(server);
    std::fs::remove_dir_all(&dir).ok();
}
