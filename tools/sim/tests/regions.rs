//! The regions scenario end to end through real, time-compressed
//! redis-servers: a short trace with homes and latencies from the standard
//! model (and parties) through a FIFO and a rated 2x2 world with a regions
//! rule, each played three ways (regions, best region only, latency
//! ignored). Checks that every player is accounted for, that no match of
//! the regions world has a member over the cap, that every variant plays
//! where it should (the core's records agree with the trace), and that the
//! comparisons, the report and the charts are produced; never how long
//! anything took. Needs redis-server, libfaketime and (for Debian's
//! jemalloc-linked redis-server) tcmalloc, as the other e2e tests.

use std::collections::HashSet;

use sim::engine::Answering;
use sim::outcome::{Fate, Kind, Run, Variant};
use sim::regional;
use sim::rules::RuleSet;
use sim::scenario::{Generator, LatencyModel, PartySizes, Scenario};
use sim::{simulate, Config};

const CAP: f64 = 150.0;
const SEATS: usize = 4;

fn world(name: &str, rated: bool) -> RuleSet {
    let rating = if rated {
        r#""mode": "rating", "rating": {"baseWindow": 100, "widenPerSecond": 50, "maxWindow": 400, "relaxAfterSeconds": 4},"#
    } else {
        ""
    };
    RuleSet::from_text(
        name,
        &format!("{name}.json"),
        &format!(
            r#"{{"worlds": [{{"name": "{name}", "teamSize": 2, "teams": 2, "ticketTtlSeconds": 600,
                "maxPartySize": 2, {rating}
                "regions": {{"names": ["na-east", "na-west", "eu", "asia", "oceania"],
                    "maxLatencyMs": 60, "widenPerSecond": 30, "maxLatencyCapMs": {CAP}}}}}]}}"#
        ),
        None,
    )
    .unwrap()
}

fn count(run: &Run, want: fn(&Fate) -> bool) -> usize {
    run.fates.iter().filter(|f| want(f)).count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_regions_scenario_accounts_for_everyone_and_respects_the_cap() {
    let scenario = Scenario::generate(Generator {
        rate: 15.0,
        seconds: 15.0,
        mean: 1500.0,
        sd: 300.0,
        seed: 41,
        parties: PartySizes::parse("1:0.8,2:0.2").unwrap(),
        party_sd: 100.0,
    })
    .unwrap()
    .with_latencies(&LatencyModel::standard(), 41)
    .unwrap();
    let n = scenario.arrivals.len();
    assert!(n > 150 && scenario.has_parties(), "{n}");
    let geo = scenario.geo.clone().unwrap();
    let dir = std::env::temp_dir().join(format!("mm-sim-test-regions-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let config = Config {
        scenario: scenario.clone(),
        rule_sets: vec![world("casual", false), world("ranked", true)],
        team_size: SEATS as u32,
        ticket_ttl_secs: 600,
        instant_match: true,
        drain: 20.0,
        oracle_periods: vec![],
        speed: 20.0,
        in_flight: 16,
        redis_server: "redis-server".into(),
        work_dir: dir.clone(),
        accept_probabilities: vec![],
        answering: Answering::default(),
        regions: true,
        attributes: false,
    };
    let outcome = simulate(&config).await.unwrap_or_else(|e| panic!("{e}"));
    let labels: Vec<&str> = outcome.runs.iter().map(|r| r.label.as_str()).collect();
    assert_eq!(
        labels,
        [
            "casual regions",
            "casual best region only",
            "casual latency ignored",
            "ranked regions",
            "ranked best region only",
            "ranked latency ignored",
        ]
    );
    let all: Vec<usize> = (0..geo.regions.len()).collect();
    for run in &outcome.runs {
        eprintln!("{}: {:?}", run.label, run.notes);
        let Kind::Regional { variant, cap, .. } = run.kind else {
            panic!("{}: {:?}", run.label, run.kind);
        };
        assert_eq!(cap, CAP);
        assert_eq!(run.failures, 0, "{}: {:?}", run.label, run.notes);
        // Every player is matched, expired or still waiting; nobody refused.
        let matched = count(run, |f| matches!(f, Fate::Matched { .. }));
        let waiting = count(run, |f| matches!(f, Fate::Waiting));
        let expired = count(run, |f| matches!(f, Fate::Expired));
        assert_eq!(
            count(run, |f| matches!(f, Fate::Refused)),
            0,
            "{}",
            run.label
        );
        assert_eq!(matched + waiting + expired, n, "{}", run.label);
        assert_eq!(expired, 0, "{}: nothing outlives 600 s", run.label);
        assert!(matched > n / 2, "{}: {matched} of {n}", run.label);
        assert_eq!(
            sim::report::parties_split(&scenario, run),
            0,
            "{}",
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
        let mut seen = HashSet::new();
        for m in &run.matches {
            assert_eq!(m.players.len(), SEATS, "{}", run.label);
            assert!(m.players.iter().all(|p| seen.insert(*p)), "{}", run.label);
            let place = m
                .place
                .unwrap_or_else(|| panic!("{}: a match without a place", run.label));
            // The worst latency is the members' own, from the trace.
            let (worst, _) = geo.worst_in(&m.players, place.region).unwrap();
            assert_eq!(place.worst, worst, "{}", run.label);
            match variant {
                // Nobody over the cap where the core placed the match.
                Variant::Regions => assert!(f64::from(worst) <= CAP, "{}: {worst}", run.label),
                // Every party joined the world of its lowest worst latency.
                Variant::BestRegionOnly => {
                    for &p in &m.players {
                        let g = &scenario.groups[scenario.arrivals[p].group].members;
                        assert_eq!(
                            geo.best_region(g, &all).map(|b| b.0),
                            Some(place.region),
                            "{}",
                            run.label
                        );
                    }
                }
                Variant::LatencyIgnored => assert_eq!(
                    geo.best_region(&m.players, &all),
                    Some((place.region, worst)),
                    "{}",
                    run.label
                ),
            }
        }
        assert_eq!(seen.len(), matched, "{}", run.label);
        if variant == Variant::Regions {
            assert!(
                run.notes.iter().any(|n| n.contains("worstLatency of all")),
                "{}: {:?}",
                run.label,
                run.notes
            );
        }
        // One cluster row per region, adding up to the trace.
        let rows = regional::cluster_rows(&scenario, run);
        assert_eq!(rows.len(), 5);
        assert_eq!(rows.iter().map(|r| r.players).sum::<usize>(), n);
        assert_eq!(
            rows.iter().map(|r| r.unmatched).sum::<usize>(),
            n - matched,
            "{}",
            run.label
        );
    }
    // A world that ignores latency mixes the clusters.
    let ignored = regional::overall(&scenario, &outcome.runs[2]);
    assert!(ignored.mixed > 0, "{ignored:?}");

    // The comparisons: (R1), (R2) for both smallest clusters, (R3) per
    // world; (R3) holds.
    let checks = regional::criteria(&scenario, &outcome.runs);
    let ids: Vec<&str> = checks.iter().map(|c| c.id).collect();
    assert_eq!(ids, ["R1", "R2", "R2", "R3", "R1", "R2", "R2", "R3"]);
    assert!(checks[1].what.contains("asia") && checks[2].what.contains("oceania"));
    for c in [&checks[3], &checks[7]] {
        assert!(c.pass, "{c:?}");
    }
    let charts = regional::plot::charts(&dir, &scenario, &outcome.runs).unwrap();
    assert_eq!(charts.len(), 4);
    let svg = std::fs::read_to_string(dir.join("casual-latency.svg")).unwrap();
    assert!(
        svg.contains("<svg") && svg.contains("oceania") && svg.contains("casual best region only")
    );
    let ctx = sim::report::Context {
        title: "t".into(),
        scenario: scenario.describe(),
        acceptance_note: None,
        team_size: SEATS as u32,
        oracle_shape: outcome.oracle_shape,
        drain: 20.0,
        speed: 20.0,
        measured_speed: outcome.measured_speed,
        clock_error: outcome.clock_error,
        wall_seconds: 0.0,
        instant_match: true,
        rule_sets: outcome.rule_sets.clone(),
        command: "test".into(),
        core: None,
    };
    let md = regional::report::render(&ctx, &scenario, &outcome.runs, &checks, true);
    for expected in [
        "## Latency model",
        "## Done criteria",
        "## casual",
        "## ranked",
        "![waits by home cluster](casual-waits.svg)",
        "| oceania |",
    ] {
        assert!(md.contains(expected), "{expected}");
    }
    std::fs::remove_dir_all(&dir).ok();
}
