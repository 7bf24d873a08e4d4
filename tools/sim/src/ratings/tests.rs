use super::report::*;
use super::*;

fn played(games_at: f64, true_spread: f64) -> Played {
    Played {
        formed_at: games_at * 10.0,
        games_at,
        true_spread,
        rating_spread: true_spread / 2.0,
        true_team_difference: Some(true_spread / 10.0),
        rating_team_difference: Some(0.0),
        error: 0.0,
    }
}

fn lane(variant: Variant, curve: Vec<(f64, f64)>, spreads: &[(f64, f64)]) -> LaneResult {
    LaneResult {
        label: format!("w {}", variant.describe()),
        file: "w.json".into(),
        rule_set: "w".into(),
        variant,
        curve,
        matches: spreads.iter().map(|&(g, s)| played(g, s)).collect(),
        waits: vec![1.0, 2.0],
        games: vec![30, 31],
        results: spreads.len() as u64,
        used_mismatches: 0,
        before_mismatches: 0,
        store_entries: 0,
        store_mismatches: 0,
        anomalies: Anomalies::default(),
        failures: 0,
        first_error: None,
        ticks: Ticks::default(),
        stopped_at: Some(100.0),
        ended_at: 120.0,
        notes: Vec::new(),
        lagging: None,
    }
}

fn lanes(end_mae: f64, end_spread: f64) -> Vec<LaneResult> {
    vec![
        lane(
            Variant::Updates,
            vec![(0.0, 240.0), (15.0, 120.0), (30.0, end_mae)],
            &[
                (1.0, 900.0),
                (20.0, 400.0),
                (26.0, end_spread),
                (29.0, end_spread),
            ],
        ),
        lane(
            Variant::NoUpdates,
            vec![(0.0, 240.0), (30.0, 240.0)],
            &[(1.0, 900.0), (27.0, 900.0)],
        ),
        lane(
            Variant::Known,
            vec![(0.0, 0.0), (30.0, 0.0)],
            &[(1.0, 100.0), (26.0, 100.0), (28.0, 100.0)],
        ),
    ]
}

#[test]
fn the_criteria_pass_and_miss_on_their_limits() {
    // 60 of 240 is exactly 25 %; 130 of 100 exactly 1.3x.
    let checks = criteria(&lanes(60.0, 130.0), 30.0);
    assert_eq!(checks.len(), 2);
    assert!(checks.iter().all(|c| c.pass), "{checks:?}");
    assert!(
        checks[0].detail.contains("240.0 → 60.0 (25.0 %)"),
        "{}",
        checks[0].detail
    );
    assert!(checks[0].detail.contains("without updates 240.0"));
    assert!(checks[1].detail.contains("1.30×"), "{}", checks[1].detail);
    // Only the last matches count: the early 900 and 400 do not.
    assert!(checks[1]
        .detail
        .contains("(matches formed at 25–30 games per player; 2 and 2)"));
    let checks = criteria(&lanes(61.0, 131.0), 30.0);
    assert!(checks.iter().all(|c| !c.pass), "{checks:?}");
}

#[test]
fn a_run_that_stopped_short_or_lacks_a_variant_misses() {
    let mut short = lanes(10.0, 100.0);
    short[0].curve.pop();
    let checks = criteria(&short, 30.0);
    assert!(!checks[0].pass);
    assert!(
        checks[0].detail.contains("stopped before 30"),
        "{}",
        checks[0].detail
    );
    let only_known: Vec<LaneResult> = lanes(10.0, 100.0).split_off(2);
    let checks = criteria(&only_known, 30.0);
    assert!(checks.iter().all(|c| !c.pass), "{checks:?}");
}

#[test]
fn curves_windows_and_bins() {
    let curve = vec![(0.0, 200.0), (0.5, 150.0), (1.0, 120.0)];
    assert_eq!(mae_at(&curve, 0.0), Some(200.0));
    assert_eq!(mae_at(&curve, 0.7), Some(120.0));
    assert_eq!(mae_at(&curve, 1.5), None);
    assert_eq!(end_window(30.0), (25.0, 30.0));
    assert_eq!(checkpoints(1.2), [0.0, 0.5, 1.0, 1.2]);
    assert_eq!(checkpoints(1.0), [0.0, 0.5, 1.0]);
    assert_eq!(
        table_points(30.0),
        [0.0, 1.0, 2.0, 3.0, 5.0, 10.0, 15.0, 20.0, 25.0, 30.0]
    );
    assert_eq!(table_points(2.0), [0.0, 1.0, 2.0]);
    let ms: Vec<Played> = [0.2, 0.9, 1.1, 2.0]
        .iter()
        .map(|&g| played(g, g * 100.0))
        .collect();
    let bins = over_time(&ms, 1.0, 2.0);
    assert_eq!(bins.len(), 2);
    assert_eq!(bins[0].1.matches, 2);
    // The last bin takes the match at exactly the target.
    assert_eq!(bins[1].1.matches, 2);
    assert_eq!(bins[1].1.spread.unwrap().mean, 155.0);
    assert_eq!(bins[1].1.team_difference.unwrap().mean, 15.5);
}

#[test]
fn the_population_is_seeded_and_within_the_range() {
    let a = Population::generate(500, 1500.0, 300.0, 3, (1000.0, 2000.0)).unwrap();
    let b = Population::generate(500, 1500.0, 300.0, 3, (1000.0, 2000.0)).unwrap();
    assert_eq!(a.skills, b.skills);
    assert!(a.skills.iter().all(|s| (1000.0..=2000.0).contains(s)));
    assert_eq!(a.index["q00001"], 0);
    assert_eq!(a.ids[499].as_str(), "q00500");
    let mean = crate::stats::mean(&a.skills).unwrap();
    assert!((mean - 1500.0).abs() < 40.0, "{mean}");
    assert_eq!(a.mae(&a.skills), 0.0);
    assert!((a.mae(&vec![1500.0; 500]) - 230.0).abs() < 40.0);
}

#[test]
fn variants_switch_the_updates_off_and_the_shipped_rule_sets_qualify() {
    let rs = RuleSet::from_text(
        "w",
        "w.json",
        r#"{"worlds": [{"name": "w", "teamSize": 4, "mode": "rating",
            "rating": {"baseWindow": 50, "widenPerSecond": 10, "maxWindow": 400, "relaxAfterSeconds": 30,
                       "updates": {"system": "elo", "k": 40}}}]}"#,
        None,
    )
    .unwrap();
    let (_, system, _) = rated_world(&rs).unwrap();
    assert!(system.starts_with("Elo, k 40"), "{system}");
    let none = variant_rule_set(&rs, Variant::NoUpdates).unwrap();
    assert!(rated_world(&none)
        .unwrap_err()
        .contains("updates no ratings"));
    assert!(
        none.text.contains(r#""updates":{"system":"none"}"#),
        "{}",
        none.text
    );
    assert_eq!(
        variant_rule_set(&rs, Variant::Updates).unwrap().text,
        rs.text
    );
    let fifo = RuleSet::from_text(
        "f",
        "f.json",
        r#"{"worlds": [{"name": "f", "teamSize": 4}]}"#,
        None,
    )
    .unwrap();
    assert!(rated_world(&fifo)
        .unwrap_err()
        .contains("needs a rated world"));
    assert!(variant_rule_set(&fifo, Variant::Known).is_err());
    let dir = crate::rules::default_dir().join("ratings");
    let files = crate::rules::expand(std::slice::from_ref(&dir)).unwrap();
    assert!(files.len() >= 2);
    for f in files {
        let rs = RuleSet::from_file(&f, None).unwrap();
        let (world, system, _) = rated_world(&rs).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(world.seats(), 10, "{}", f.display());
        assert!(system.starts_with("TrueSkill"), "{system}");
    }
    // The sweep behind docs/sim/ratings/analysis.md: every file a rated
    // world with updates.
    let sweep = crate::rules::expand(&[dir.join("sweep")]).unwrap();
    assert!(sweep.len() >= 7);
    for f in sweep {
        let rs = RuleSet::from_file(&f, None).unwrap();
        rated_world(&rs).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
    }
}

/// (Q1) and (Q2) have one definition each ([`q1`], [`q2`] over
/// [`end_spread`]): the checks and the report's summary show what they
/// compute, so a second computation of either fails here.
#[test]
fn the_report_shows_each_criterion_as_its_function_computes_it() {
    let lanes = lanes(55.5, 133.3);
    let checks = criteria(&lanes, 30.0);
    let (updates, known) = (&lanes[0], &lanes[2]);
    let q = q1(updates, 30.0).unwrap();
    assert_eq!((q.start, q.end), (240.0, 55.5));
    assert_eq!(q.pass, checks[0].pass);
    assert!(checks[0].detail.starts_with(&format!(
        "{:.1} → {:.1} ({:.1} %)",
        q.start,
        q.end,
        q.ratio * 100.0
    )));
    let s = q2(updates, known, 30.0).unwrap();
    assert_eq!((s.ours.mean, s.known.mean), (133.3, 100.0));
    assert_eq!(s.pass, checks[1].pass);
    assert!(checks[1].detail.starts_with(&format!(
        "{:.1} vs {:.1} known: {:.2}×",
        s.ours.mean, s.known.mean, s.ratio
    )));
    // The summary table's "MAE start", "MAE at target" and "spread mean
    // (end)" columns of each lane.
    let outcome = Outcome {
        lanes: lanes.clone(),
        population: Population::generate(10, 1500.0, 300.0, 1, (0.0, 3000.0)).unwrap(),
        measured_speed: 10.0,
        clock_error: None,
        rule_sets: Vec::new(),
    };
    let ctx = Context {
        title: "t".into(),
        games: 30.0,
        mean: 1500.0,
        sd: 300.0,
        seed: 1,
        initial: 1500.0,
        noise: 150.0,
        game_seconds: (20.0, 40.0),
        rest: (1.0, 5.0),
        ramp: 10.0,
        speed: 10.0,
        wall_seconds: 1.0,
        command: "test".into(),
        core: None,
    };
    let text = render(&ctx, &outcome, &checks, false);
    for lane in &lanes {
        let line = text
            .lines()
            .find(|l| l.starts_with(&format!("| {} |", lane.label)))
            .unwrap();
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        let mae = |g| format!("{:.1}", mae_at(&lane.curve, g).unwrap());
        assert_eq!(
            (cells[6], cells[7]),
            (mae(0.0).as_str(), mae(30.0).as_str())
        );
        let spread = end_spread(lane, 30.0).unwrap();
        assert_eq!(cells[9], format!("{:.1}", spread.mean), "{line}");
        if lane.variant == Variant::Updates {
            assert_eq!(cells[7], format!("{:.1}", q.end));
            assert_eq!(cells[9], format!("{:.1}", s.ours.mean));
        }
    }
}
