use super::lanes::{region_world, variant_rule_set};
use super::*;
use crate::outcome::{FormedMatch, Place, Shape};
use crate::rules::{default_dir, Environment, RuleSet};

fn env() -> Environment {
    Environment {
        redis_url: "redis://127.0.0.1:1".into(),
        ticket_ttl_secs: 900,
        instant_match: true,
    }
}

#[test]
fn each_variant_is_a_valid_rule_set() {
    for file in ["fifo-5v5.json", "rated-5v5.json"] {
        let rs = RuleSet::from_file(&default_dir().join("regions").join(file), None).unwrap();
        let (_, world) = rs.settings(&env(), "sim0").unwrap();
        let names = world.regions.as_ref().unwrap().names.clone();
        assert_eq!(names.len(), 5);
        let with = variant_rule_set(&rs, Variant::Regions).unwrap();
        let (s, w) = with.settings(&env(), "sim0").unwrap();
        assert_eq!((s.worlds.len(), w.regions.is_some()), (1, true));
        let ignored = variant_rule_set(&rs, Variant::LatencyIgnored).unwrap();
        let (s, w) = ignored.settings(&env(), "sim0").unwrap();
        assert_eq!((s.worlds.len(), w.regions.is_none()), (1, true));
        assert_eq!(ignored.label, format!("{} latency ignored", rs.label));
        let best = variant_rule_set(&rs, Variant::BestRegionOnly).unwrap();
        let (s, w) = best.settings(&env(), "sim0").unwrap();
        assert_eq!(s.worlds.len(), 5);
        assert_eq!(w.name.as_str(), region_world(&rs.world, "na-east"));
        for r in &names {
            let w = s.worlds.get(&region_world(&rs.world, r)).unwrap();
            // The same rules, without regions.
            assert!(w.regions.is_none());
            assert_eq!(
                (w.teams, w.team_size, w.mode.clone()),
                (world.teams, world.team_size, world.mode.clone())
            );
        }
    }
}

fn formed(players: Vec<usize>, region: usize, worst: u32) -> FormedMatch {
    FormedMatch {
        time: 1.0,
        players,
        spread: 0.0,
        teams: None,
        team_difference: None,
        place: Some(Place { region, worst }),
        rules: None,
    }
}

/// Six players: a, b at home in r0, c, d in r1, e, f in r2 (smallest
/// clusters: r1 and r2 by order, all equal).
fn trace() -> Scenario {
    Scenario::from_csv(
        "time,player,rating,home,latency:r0,latency:r1,latency:r2\n\
         1,a,1,r0,10,90,200\n1,b,1,r0,20,80,210\n2,c,1,r1,90,10,120\n\
         2,d,1,r1,85,15,130\n3,e,1,r2,200,120,30\n3,f,1,r2,210,125,40\n",
    )
    .unwrap()
}

fn run(variant: Variant, fates: Vec<Fate>, matches: Vec<FormedMatch>) -> Run {
    Run {
        label: format!("w {}", variant.name()),
        kind: Kind::Regional {
            file: "rules/w.json".into(),
            variant,
            cap: 150.0,
        },
        shape: Shape::solo_team(2),
        fates,
        matches,
        notes: vec![],
        failures: 0,
        lagging: None,
        ready: None,
    }
}

fn matched(wait: f64, index: usize) -> Fate {
    Fate::Matched { wait, index }
}

/// The regions world and best region only on [`trace`].
fn regions_and_best() -> (Run, Run) {
    // Best region only: three home matches, the small clusters wait long.
    let best = run(
        Variant::BestRegionOnly,
        vec![
            matched(1.0, 0),
            matched(1.0, 0),
            matched(8.0, 1),
            matched(8.0, 1),
            matched(10.0, 2),
            matched(10.0, 2),
        ],
        vec![
            formed(vec![0, 1], 0, 20),
            formed(vec![2, 3], 1, 15),
            formed(vec![4, 5], 2, 40),
        ],
    );
    // Regions: c plays with e in r1 (worst 120), d with f (125) after
    // short waits.
    let regions = run(
        Variant::Regions,
        vec![
            matched(1.0, 0),
            matched(1.0, 0),
            matched(2.0, 1),
            matched(3.0, 2),
            matched(2.0, 1),
            matched(3.0, 2),
        ],
        vec![
            formed(vec![0, 1], 0, 20),
            formed(vec![2, 4], 1, 120),
            formed(vec![3, 5], 1, 125),
        ],
    );
    (regions, best)
}

#[test]
fn clusters_and_criteria_come_from_the_matches() {
    let s = trace();
    let (regions, best) = regions_and_best();
    let rows = cluster_rows(&s, &regions);
    assert_eq!(rows.len(), 3);
    assert_eq!((rows[2].region.as_str(), rows[2].players), ("r2", 2));
    assert_eq!(rows[2].away, 2);
    assert_eq!(rows[1].away, 0);
    assert_eq!(rows[2].latency.unwrap().mean, 122.5);
    assert_eq!(rows[1].wait.unwrap().p95, 3.0);
    let o = overall(&s, &regions);
    assert_eq!((o.matches, o.matched, o.unmatched, o.mixed), (3, 6, 0, 2));
    assert_eq!(r3(&regions, 150.0).over_cap, 0);
    assert_eq!(smallest_clusters(&s), [1, 2]);
    let checks = criteria(&s, &[regions.clone(), best.clone()]);
    let ids: Vec<&str> = checks.iter().map(|c| c.id).collect();
    assert_eq!(ids, ["R1", "R2", "R2", "R3"]);
    // (20 + 120 + 125) / 3 = 88.3 against 25: far over 1.2x.
    assert!(!checks[0].pass, "{:?}", checks[0]);
    assert!(
        checks[0].detail.starts_with("88.3 ms vs 25.0 ms: 3.53x"),
        "{}",
        checks[0].detail
    );
    // 3 s against 8 s and 10 s.
    assert!(
        checks[1].pass && checks[1].detail.starts_with("3.00 s vs 8.00 s: 0.38x"),
        "{:?}",
        checks[1]
    );
    assert!(checks[2].pass, "{:?}", checks[2]);
    assert!(checks[3].pass, "{:?}", checks[3]);
    // A match over the cap, and unmatched small-cluster players, miss.
    let mut over = regions.clone();
    over.matches[2].place = Some(Place {
        region: 2,
        worst: 151,
    });
    over.fates[5] = Fate::Waiting;
    let checks = criteria(&s, &[over, best]);
    assert!(!checks[2].pass, "{:?}", checks[2]);
    assert!(
        !checks[3].pass && checks[3].detail.starts_with("1 of 3 matches over the cap"),
        "{:?}",
        checks[3]
    );
}

#[test]
fn unmatched_players_count_as_the_longest_waits_of_the_p95() {
    let waits: Vec<f64> = (1..=100).map(f64::from).collect();
    assert_eq!(p95_counting_unmatched(&waits, 0), Some(95.0));
    // Two leftovers of 102 move the p95 by one rank, not to a miss.
    assert_eq!(p95_counting_unmatched(&waits, 2), Some(97.0));
    // Five of 105 still leave a matched player at the p95 rank …
    assert_eq!(p95_counting_unmatched(&waits, 5), Some(100.0));
    // … six of 106 do not: the p95 is unbounded.
    assert_eq!(p95_counting_unmatched(&waits, 6), Some(f64::INFINITY));
    assert_eq!(p95_counting_unmatched(&[], 0), None);
    assert_eq!(p95_counting_unmatched(&[], 1), Some(f64::INFINITY));
}

/// Each criterion has one definition ([`r1`], [`r2`], [`r3`]): the checks,
/// the report's tables and the functions agree to the digit, so a second
/// computation anywhere (a table's own mean or percentile) fails here.
#[test]
fn the_report_shows_each_criterion_as_its_function_computes_it() {
    let s = trace();
    let (mut regions, best) = regions_and_best();
    // One oceania-like (r2) player left waiting: (R2) counts it.
    regions.fates[5] = Fate::Waiting;
    let runs = [regions.clone(), best.clone()];
    let checks = criteria(&s, &runs);

    let l = r1(&regions, &best).unwrap();
    assert_eq!(l.ours, overall(&s, &regions).latency.unwrap().mean);
    assert_eq!(l.ours, mean_worst_latency(&regions).unwrap());
    assert_eq!(l.pass, checks[0].pass);
    assert!(checks[0].detail.starts_with(&format!(
        "{:.1} ms vs {:.1} ms: {:.2}x",
        l.ours, l.theirs, l.ratio
    )));

    let waits = r2(&s, &regions, &best);
    assert_eq!(waits.len(), 2);
    let table = report::cluster_table(&s, &[&regions, &best]);
    for ((c, w), check) in waits.iter().zip(&checks[1..3]) {
        let w = w.as_ref().unwrap();
        assert_eq!(*c, w.cluster);
        assert_eq!(w.pass, check.pass, "{check:?}");
        let rows = cluster_rows(&s, &regions);
        assert_eq!(Some(w.ours), rows[*c].wait_p95_all);
        // The definition itself: the cluster's matched waits and its
        // unmatched players, through p95_counting_unmatched.
        let matched: Vec<f64> = regions
            .fates
            .iter()
            .enumerate()
            .filter(|(p, _)| s.geo.as_ref().unwrap().home[*p] == *c)
            .filter_map(|(_, f)| match f {
                Fate::Matched { wait, .. } => Some(*wait),
                _ => None,
            })
            .collect();
        assert_eq!(
            Some(w.ours),
            p95_counting_unmatched(&matched, w.unmatched.0)
        );
        // The report's cluster table shows the same statistic.
        let shown = if w.ours.is_finite() {
            format!("{:.2}", w.ours)
        } else {
            "unmatched".into()
        };
        let line = table
            .lines()
            .find(|line| line.starts_with(&format!("| {} |", w.region)))
            .unwrap();
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        assert_eq!(cells[7], shown, "{line}");
    }
    // r2's single waiting player out of 2 is over 5 %: unbounded, a miss.
    let r2_small = waits[1].1.as_ref().unwrap();
    assert_eq!((r2_small.ours, r2_small.ratio), (f64::INFINITY, None));
    assert!(!checks[2].pass);

    let v = r3(&regions, 150.0);
    assert_eq!(v.pass(), checks[3].pass);
    assert!(checks[3].detail.starts_with(&format!(
        "{} of {} matches over the cap",
        v.over_cap, v.matches
    )));
}
