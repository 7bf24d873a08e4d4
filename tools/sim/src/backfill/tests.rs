use super::report::*;
use super::*;

fn seat(left_at: f64, wait: Option<f64>) -> Seat {
    Seat {
        left_at,
        filled_at: wait.map(|w| left_at + w),
        game_end: left_at + 100.0,
    }
}

fn fill(distance: f64, window: f64, relaxed: bool, difference: f64) -> Fill {
    Fill {
        rating: 1500.0 + distance,
        reference: Some(1500.0),
        wait: 1.0,
        window: Some(window),
        relaxed,
        team_difference: difference,
        balance_window: Some(20.0),
        completes: true,
    }
}

fn game(difference: f64, after_leaves: Vec<f64>) -> Game {
    Game {
        formed_at: 0.0,
        ended_at: 100.0,
        team_difference: difference,
        leavers: after_leaves.len(),
        after_leaves,
        empty_seconds: 50.0,
        seats: 10,
        final_counts: vec![5, 5],
    }
}

fn lane(variant: Variant, seats: Vec<Seat>, fills: Vec<Fill>, games: Vec<Game>) -> LaneResult {
    LaneResult {
        label: format!("w {}", variant.describe()),
        file: "w.json".into(),
        rule_set: "w".into(),
        variant,
        games,
        seats,
        fills,
        fresh_waits: vec![1.0],
        backfill_waits: vec![0.5],
        by_join: 1,
        by_matcher: 1,
        requests: 2,
        renewals: 1,
        lapsed: 0,
        waiting: 0,
        anomalies: Anomalies::default(),
        failures: 0,
        first_error: None,
        ticks: Ticks::default(),
        notes: Vec::new(),
        lagging: None,
        mismatches: 0,
    }
}

/// A backfill lane whose median seat waits `median`, whose farthest fill
/// lies `distance` from a window of 100, and whose completing fills leave
/// teams `after` apart against fresh matches 10 apart.
fn lanes(median: f64, distance: f64, after: f64) -> Vec<LaneResult> {
    let seats = vec![
        seat(10.0, Some(0.5)),
        seat(20.0, Some(median)),
        seat(30.0, Some(median + 1.0)),
        // In the tail (after the last arrival − 10 s): not counted.
        seat(95.0, None),
    ];
    let fills = vec![
        fill(30.0, 100.0, false, after),
        fill(distance, 100.0, false, after),
        // Relaxed: the window is lifted.
        fill(700.0, 400.0, true, after),
    ];
    vec![
        lane(
            Variant::Backfill,
            seats,
            fills,
            vec![game(10.0, vec![]), game(10.0, vec![15.0])],
        ),
        lane(
            Variant::ShortHanded,
            vec![seat(10.0, None), seat(20.0, None)],
            Vec::new(),
            vec![game(9.0, vec![12.0, 20.0])],
        ),
    ]
}

#[test]
fn the_criteria_pass_and_miss_on_their_limits() {
    let checks = criteria(&lanes(5.0, 100.0, 15.0), 100.0);
    assert_eq!(checks.len(), 3);
    assert!(checks.iter().all(|c| c.pass), "{checks:?}");
    assert!(
        checks[0].detail.contains("median 5.00 s"),
        "{}",
        checks[0].detail
    );
    assert!(checks[0]
        .detail
        .contains("3 seats emptied while players arrived (3 filled; 1 more"));
    assert!(checks[0]
        .detail
        .contains("without backfill 2 seats stay empty 100 s"));
    assert!(
        checks[1].detail.contains("0 of 3 over"),
        "{}",
        checks[1].detail
    );
    assert!(checks[1]
        .detail
        .contains("1 filled after relaxAfterSeconds"));
    assert!(checks[2]
        .detail
        .contains("15.0 after 3 completing fills vs 10.0 fresh: 1.50×"));
    assert!(checks[2]
        .detail
        .contains("short-handed without backfill 20.0"));
    let checks = criteria(&lanes(5.01, 100.01, 15.01), 100.0);
    assert!(checks.iter().all(|c| !c.pass), "{checks:?}");
}

#[test]
fn seats_never_filled_count_as_waiting_for_ever() {
    let mut seats = vec![seat(0.0, Some(1.0)), seat(0.0, None), seat(0.0, None)];
    let w = seat_waits(&seats);
    assert_eq!((w.seats, w.filled), (3, 1));
    assert_eq!(w.p50, None, "the median is a seat never filled");
    assert_eq!(w.empty_mean, Some((1.0 + 100.0 + 100.0) / 3.0));
    seats.push(seat(0.0, Some(2.0)));
    seats.push(seat(0.0, Some(3.0)));
    assert_eq!(seat_waits(&seats).p50, Some(3.0));
    assert_eq!(steady(&seats, 5.0).len(), 0);
    assert_eq!(steady(&seats, 10.0).len(), 5);
    // A lane without a backfilled seat misses (B1, B2, B3).
    let empty = vec![lane(
        Variant::Backfill,
        vec![],
        vec![],
        vec![game(1.0, vec![])],
    )];
    assert!(criteria(&empty, 100.0).iter().all(|c| !c.pass));
}

/// The world of the backfill rule file at `path` (under `rules/backfill/`).
fn backfill_world(path: &str) -> World {
    let rs = crate::rules::RuleSet::from_file(
        &crate::rules::default_dir().join("backfill").join(path),
        None,
    )
    .unwrap();
    let (_, world) = rs
        .settings(
            &crate::rules::Environment {
                redis_url: "redis://127.0.0.1:1".into(),
                ticket_ttl_secs: 900,
                instant_match: true,
            },
            "t",
        )
        .unwrap();
    world
}

#[test]
fn windows_follow_the_world() {
    let world = backfill_world("rated-5v5.json");
    assert_eq!(world.teams, 2);
    assert_eq!(window_at(&world, 0.0), Some((100.0, false)));
    assert_eq!(window_at(&world, 5.0), Some((200.0, false)));
    assert_eq!(window_at(&world, 30.0), Some((400.0, true)));
    // Fresh matches keep the world's balance (20 + 2/s, lifted at the relax
    // time); its backfills their own (2 + 0.02/s, never lifted).
    let MatchMode::Rating(r) = &world.mode else {
        panic!("a rated world")
    };
    assert_eq!(
        r.balance.as_ref().map(|b| b.after(Duration::from_secs(5))),
        Some(30.0)
    );
    assert!(balance_at(&world, 5.0).is_some_and(|b| (b - 2.1).abs() < 1e-9));
    assert!(balance_at(&world, 25.0).is_some_and(|b| (b - 2.5).abs() < 1e-9));
    let without = backfill_world("sweep/rated-5v5-b20.json");
    assert_eq!(balance_at(&without, 5.0), Some(30.0), "the world's balance");
    assert_eq!(balance_at(&without, 25.0), None, "lifted at the relax time");
    for dir in [
        crate::rules::default_dir().join("backfill"),
        crate::rules::default_dir().join("backfill").join("sweep"),
    ] {
        for f in crate::rules::expand(&[dir]).unwrap() {
            let rs = crate::rules::RuleSet::from_file(&f, None).unwrap();
            assert!(rs.text.contains("balance"), "{}", f.display());
        }
    }
}

#[test]
fn cumulative_shares_step_up_to_the_total() {
    let c = plot::cumulative(&[2.0, 1.0, f64::INFINITY], 4, 10.0);
    assert_eq!(c.first(), Some(&(0.0, 0.0)));
    assert_eq!(c.last(), Some(&(10.0, 0.5)));
    assert!(c.windows(2).all(|w| w[0].0 <= w[1].0 && w[0].1 <= w[1].1));
    let c = plot::cumulative(&[1.0, 20.0], 2, 10.0);
    assert_eq!(c.last(), Some(&(10.0, 0.5)));
}

/// A fill into a match that had nobody left has no reference, and the core
/// holds it to no window: never over the window, out of the distances.
#[test]
fn a_fill_without_a_reference_is_held_to_no_window() {
    let mut first = fill(600.0, 100.0, false, 0.0);
    assert!(first.over_window());
    first.reference = None;
    first.window = None;
    assert!(!first.over_window());
    let d = distances(&[first, fill(50.0, 100.0, false, 0.0)]);
    assert_eq!((d.fills, d.over_window), (2, 0));
    assert_eq!(d.distance.map(|x| x.mean), Some(50.0));
}
