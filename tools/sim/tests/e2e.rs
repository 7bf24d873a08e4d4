//! End to end through real, time-compressed redis-servers: 20-second traces
//! at x40 through a FIFO world, a rated world and a world whose tickets all
//! expire; parties through rated and FIFO team worlds; ready checks with
//! players who decline or stay silent. Checks that the counts add up
//! (every player matched, removed, expired or waiting), that no party is
//! split and that the core's records agree with the trace, never how long
//! anything took. Needs redis-server, libfaketime and (for Debian's
//! jemalloc-linked redis-server) tcmalloc; a missing one fails the test with
//! the command that installs it.

use std::collections::HashSet;
use std::path::PathBuf;
use std::time::Duration;

use sim::engine::{Answering, Refusal};
use sim::outcome::{Fate, Kind, Run};
use sim::rules::RuleSet;
use sim::scenario::{Generator, PartySizes, Scenario};
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
        accept_probabilities: vec![],
        answering: Answering::default(),
        regions: false,
        attributes: false,
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
            Kind::Regional { .. } | Kind::Attributes { .. } => {
                panic!("{}: not a regions or attributes run", run.label)
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

/// Every player is matched, removed, expired or waiting (nothing refused),
/// matches are full and distinct, every party shares one fate, and the
/// core's records agree with the trace. Returns (matched, removed, expired,
/// waiting).
fn adds_up(scenario: &Scenario, run: &Run, seats: usize) -> (usize, usize, usize, usize) {
    let arrivals = scenario.arrivals.len();
    assert_eq!(
        run.failures, 0,
        "{}: the core failed: {:?}",
        run.label, run.notes
    );
    let matched = count(run, |f| matches!(f, Fate::Matched { .. }));
    let removed = count(run, |f| matches!(f, Fate::Removed));
    let expired = count(run, |f| matches!(f, Fate::Expired));
    let waiting = count(run, |f| matches!(f, Fate::Waiting));
    let refused = count(run, |f| matches!(f, Fate::Refused));
    assert_eq!(refused, 0, "{}: {:?}", run.label, run.notes);
    assert_eq!(
        matched + removed + expired + waiting,
        arrivals,
        "{}: {matched} + {removed} + {expired} + {waiting} (notes {:?})",
        run.label,
        run.notes
    );
    let mut seen = HashSet::new();
    for m in &run.matches {
        assert_eq!(m.players.len(), seats, "{}", run.label);
        for p in &m.players {
            assert!(seen.insert(*p), "{}: player {p} matched twice", run.label);
        }
        if let Some(teams) = &m.teams {
            assert_eq!(teams.len(), run.shape.teams as usize, "{}", run.label);
            for t in teams {
                assert_eq!(t.len(), run.shape.team_size as usize, "{}", run.label);
            }
        }
    }
    assert_eq!(seen.len(), matched, "{}", run.label);
    assert_eq!(
        sim::report::parties_split(scenario, run),
        0,
        "{}: a party was split",
        run.label
    );
    for note in &run.notes {
        assert!(
            !note.starts_with("INCONSISTENT")
                && !note.starts_with("MISMATCH")
                && !note.contains("failed"),
            "{}: {note}",
            run.label
        );
    }
    (matched, removed, expired, waiting)
}

fn config(name: &str, scenario: &Scenario, rule_sets: Vec<RuleSet>, seats: u32) -> Config {
    Config {
        scenario: scenario.clone(),
        rule_sets,
        team_size: seats,
        ticket_ttl_secs: 600,
        instant_match: true,
        drain: 20.0,
        oracle_periods: vec![1.0, 5.0],
        speed: 40.0,
        in_flight: 16,
        redis_server: "redis-server".into(),
        work_dir: work_dir(name),
        accept_probabilities: vec![],
        answering: Answering::default(),
        regions: false,
        attributes: false,
    }
}

fn party_trace(seed: u64, parties: &str) -> Scenario {
    Scenario::generate(Generator {
        rate: 8.0,
        seconds: 20.0,
        mean: 1500.0,
        sd: 300.0,
        seed,
        parties: PartySizes::parse(parties).unwrap(),
        party_sd: 100.0,
    })
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn parties_are_never_split_and_every_player_is_accounted_for() {
    let scenario = party_trace(21, "1:0.6,2:0.25,3:0.15");
    assert!(scenario.has_parties() && scenario.largest_party() == 3);
    let rated = RuleSet::from_text(
        "rated",
        "rated.json",
        r#"{"worlds": [{"name": "ranked", "teamSize": 3, "teams": 2, "mode": "rating",
            "ticketTtlSeconds": 600, "maxPartySize": 3,
            "rating": {"baseWindow": 100, "widenPerSecond": 50, "maxWindow": 400, "relaxAfterSeconds": 4},
            "balance": {"baseWindow": 30, "widenPerSecond": 10, "maxWindow": 100}}]}"#,
        None,
    )
    .unwrap();
    let mut config = config("parties", &scenario, vec![rated], 6);
    let dir = config.work_dir.clone();
    config.oracle_periods = vec![2.0];
    let outcome = simulate(&config).await.unwrap_or_else(|e| panic!("{e}"));
    let labels: Vec<&str> = outcome.runs.iter().map(|r| r.label.as_str()).collect();
    assert_eq!(labels, ["rated (ranked)", "FIFO", "oracle T=2s"]);
    assert_eq!(outcome.oracle_shape.to_string(), "2x3");
    for run in &outcome.runs {
        eprintln!("{}: {:?}", run.label, run.notes);
        assert_eq!(run.shape.to_string(), "2x3", "{}", run.label);
        let (matched, removed, expired, waiting) = adds_up(&scenario, run, 6);
        assert_eq!((removed, expired), (0, 0), "{}", run.label);
        assert!(matched > scenario.arrivals.len() / 2, "{}", run.label);
        // Fewer than a match is left, give or take a party that did not fit.
        assert!(waiting < 6 + 3, "{}: {waiting} waiting", run.label);
        assert_eq!(run.matches.len(), matched / 6, "{}", run.label);
        assert!(
            run.matches.iter().all(|m| m.team_difference.is_some()),
            "{}",
            run.label
        );
    }
    let rated = &outcome.runs[0];
    for expected in [
        "rated match records agree",
        "team difference of all",
        "parties listed by all",
    ] {
        assert!(
            rated.notes.iter().any(|n| n.contains(expected)),
            "{expected}: {:?}",
            rated.notes
        );
    }
    // The report has the party and team sections and checks (d) and (e).
    let frontier = sim::report::frontier(&outcome.runs);
    let checks = sim::report::acceptance(&scenario, &outcome.runs, &frontier);
    let ids: Vec<&str> = checks.iter().map(|c| c.id).collect();
    assert_eq!(ids, ["a", "b", "c", "d", "e"]);
    assert!(checks[3].pass, "{:?}", checks[3]);
    assert_eq!(
        checks[3].detail,
        format!("0 of {} parties split", parties(&scenario))
    );
    let chart = dir.join("waits-by-party-size.svg");
    sim::plot::party_chart(&chart, &scenario, &outcome.runs).unwrap();
    let svg = std::fs::read_to_string(&chart).unwrap();
    assert!(svg.contains("<svg") && svg.contains("rated (ranked) mean / p95"));
    // (e) from the match data: each match's team averages, recomputed here
    // from the trace's ratings and the teams the core reported.
    let mean_difference = |run: &Run| {
        let diffs: Vec<f64> = run
            .matches
            .iter()
            .map(|m| {
                let averages: Vec<f64> = m
                    .teams
                    .as_ref()
                    .unwrap()
                    .iter()
                    .map(|t| {
                        t.iter().map(|&p| scenario.arrivals[p].rating).sum::<f64>() / t.len() as f64
                    })
                    .collect();
                let hi = averages.iter().copied().fold(f64::MIN, f64::max);
                let lo = averages.iter().copied().fold(f64::MAX, f64::min);
                hi - lo
            })
            .collect();
        diffs.iter().sum::<f64>() / diffs.len() as f64
    };
    let (ours, fifo) = (
        mean_difference(&outcome.runs[0]),
        mean_difference(&outcome.runs[1]),
    );
    assert!(ours < fifo, "rated {ours} vs FIFO-filled {fifo}");
    let ratio = ours / fifo;
    assert_eq!(checks[4].pass, ratio <= 0.25, "{:?}", checks[4]);
    assert_eq!(
        checks[4].detail,
        format!("{ours:.1} vs FIFO {fifo:.1}: {:.1} %", ratio * 100.0)
    );
    std::fs::remove_dir_all(&dir).ok();
}

fn parties(scenario: &Scenario) -> usize {
    scenario
        .groups
        .iter()
        .filter(|g| g.members.len() > 1)
        .count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ready_checks_with_refusals_account_for_every_player() {
    let scenario = party_trace(33, "1:0.7,2:0.3");
    let ready = RuleSet::from_text(
        "ready",
        "ready.json",
        r#"{"worlds": [{"name": "ranked", "teamSize": 4, "mode": "rating", "ticketTtlSeconds": 600,
            "maxPartySize": 2, "readyCheck": {"acceptSeconds": 10, "declineCooldownSeconds": 30},
            "rating": {"baseWindow": 100, "widenPerSecond": 50, "maxWindow": 400, "relaxAfterSeconds": 4}}]}"#,
        None,
    )
    .unwrap();
    for (refusal, probabilities) in [
        (Refusal::Decline, vec![1.0, 0.8]),
        (Refusal::Silent, vec![0.8]),
    ] {
        let mut config = config("ready", &scenario, vec![ready.clone()], 4);
        let dir = config.work_dir.clone();
        config.oracle_periods = vec![];
        // Slower than the other tests: an answer must beat a 10 s
        // (simulated) deadline, one real second here, on a busy machine.
        config.speed = 10.0;
        config.accept_probabilities = probabilities.clone();
        config.answering = Answering {
            accept_probability: 1.0,
            refusal,
            delay: (0.2, 1.0),
            seed: 5,
        };
        let outcome = simulate(&config).await.unwrap_or_else(|e| panic!("{e}"));
        let chart = dir.join("waits-by-acceptance.svg");
        sim::plot::ready_chart(&chart, &outcome.runs).unwrap();
        let svg = std::fs::read_to_string(&chart).unwrap();
        assert!(svg.contains("ready.json with its ready check mean / p95"));
        let labels: Vec<&str> = outcome.runs.iter().map(|r| r.label.as_str()).collect();
        let mut want: Vec<String> = probabilities
            .iter()
            .map(|p| format!("ready accept {p} (ranked)"))
            .collect();
        want.push("ready without ready check (ranked)".into());
        want.push("FIFO".into());
        assert_eq!(labels, want);
        for run in &outcome.runs {
            eprintln!("{}: {:?} {:?}", run.label, run.ready, run.notes);
            let (matched, removed, _, _) = adds_up(&scenario, run, 4);
            assert!(matched > 0, "{}", run.label);
            let Some(stats) = &run.ready else {
                assert_eq!(removed, 0, "{}", run.label);
                continue;
            };
            assert_eq!(
                removed,
                stats.removed_by_declines + stats.removed_by_timeouts,
                "{}",
                run.label
            );
            assert_eq!(
                stats.proposals,
                stats.accepted + stats.declined + stats.timed_out + stats.pending,
                "{}",
                run.label
            );
            // Every match is a proposal everyone accepted.
            assert_eq!(stats.accepted, run.matches.len(), "{}", run.label);
            if stats.accept_probability == 1.0 {
                assert_eq!(removed, 0, "{}", run.label);
                assert_eq!(stats.declined + stats.timed_out, 0, "{}", run.label);
            } else if refusal == Refusal::Decline {
                assert!(
                    stats.declined > 0 && stats.removed_by_declines > 0,
                    "{stats:?}"
                );
                assert!(stats.requeued > 0, "{stats:?}");
            } else {
                assert!(
                    stats.timed_out > 0 && stats.removed_by_timeouts > 0,
                    "{stats:?}"
                );
                assert_eq!(stats.declined, 0, "{stats:?}");
            }
        }
        std::fs::remove_dir_all(&dir).ok();
    }
}
