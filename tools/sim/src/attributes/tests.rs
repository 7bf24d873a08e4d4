//! The attributes scenario's analysis on hand-made runs.

use std::time::Duration;

use shared::config::{ListAggregate, MatchRule, NumberAggregate, Relax, RuleKind};
use shared::RuleOutcome;

use super::*;
use crate::outcome::{MatchRules, Shape};

fn scenario() -> Scenario {
    // Eight players: a..d list one mode, e..h more; levels 10, 12, 14, 30,
    // 50, 51, 52, 53.
    Scenario::from_csv(
        "time,player,rating,attr:modes,attr:level\n\
         0,a,1,ctf,10\n1,b,1,ctf,12\n2,c,1,koth,14\n3,d,1,tdm,30\n\
         4,e,1,ctf|koth,50\n5,f,1,koth|ctf|dm,51\n6,g,1,dm|tdm|ctf,52\n7,h,1,ctf|dm,53\n",
    )
    .unwrap()
}

fn intersection() -> MatchRule {
    MatchRule {
        name: "common".into(),
        kind: RuleKind::Intersection {
            attribute: "modes".into(),
            min_count: 1,
            party: ListAggregate::Intersection,
        },
        optional_after: None,
        relax: None,
        top: true,
    }
}

fn distance() -> MatchRule {
    MatchRule {
        name: "close".into(),
        kind: RuleKind::Distance {
            attribute: "level".into(),
            max: 5.0,
            from_anchor: false,
            party: NumberAggregate::Avg,
        },
        optional_after: None,
        relax: Some(Relax::Linear {
            per_second: 2.0,
            limit: 40.0,
        }),
        top: true,
    }
}

fn outcome(name: &str, value: Option<f64>, shared: Option<&[&str]>) -> RuleOutcome {
    RuleOutcome {
        name: name.into(),
        in_force: true,
        value: value.map(serde_json::Value::from),
        shared: shared.map(|s| s.iter().map(|x| (*x).to_owned()).collect()),
        held: None,
    }
}

fn formed(
    s: &Scenario,
    players: Vec<usize>,
    anchor_wait: f64,
    outcomes: Vec<RuleOutcome>,
) -> FormedMatch {
    let mut m = FormedMatch::new(s, 1.0, players.clone(), None);
    m.rules = Some(Box::new(MatchRules {
        anchor: players.first().copied(),
        anchor_wait: Some(anchor_wait),
        outcomes,
        violation: None,
        misrecorded: 0,
    }));
    m
}

fn run(
    variant: AttrVariant,
    rules: Vec<MatchRule>,
    fates: Vec<Fate>,
    matches: Vec<FormedMatch>,
) -> Run {
    Run {
        label: format!("w {}", variant.name()),
        kind: Kind::Attributes {
            file: "w.json".into(),
            variant,
            rules,
        },
        shape: Shape::solo_team(4),
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

#[test]
fn players_are_grouped_by_the_modes_they_list_and_their_first_choice() {
    let s = scenario();
    assert_eq!(counts_listed(&s, "modes"), [1, 2, 3]);
    assert_eq!(
        first_choices(&s, "modes"),
        [
            ("ctf".to_owned(), 4),
            ("koth".to_owned(), 2),
            ("dm".to_owned(), 1),
            ("tdm".to_owned(), 1)
        ]
    );
    let fates = vec![
        matched(4.0, 0),
        matched(2.0, 0),
        Fate::Waiting,
        Fate::Expired,
        matched(1.0, 0),
        matched(0.5, 1),
        matched(0.1, 1),
        matched(3.0, 1),
    ];
    let r = run(AttrVariant::AsWritten, vec![intersection()], fates, vec![]);
    let rows = listed_rows(&s, &r, "modes");
    let keys: Vec<&str> = rows.iter().map(|r| r.key.as_str()).collect();
    assert_eq!(keys, ["1", "2", "3"]);
    // One mode: 4, 2 and two unmatched: the p50 (2nd of 4) is 4 s, the
    // matched players' p50 2 s.
    assert_eq!((rows[0].players, rows[0].unmatched), (4, 2));
    assert_eq!(rows[0].wait.unwrap().p50, 2.0);
    assert_eq!(rows[0].p50_all, Some(4.0));
    assert_eq!(rows[2].p50_all, Some(0.1));
    let firsts = first_choice_rows(&s, &r, "modes");
    assert_eq!(firsts[0].key, "ctf");
    assert_eq!(firsts[0].players, 4);
    // Unmatched beyond the rank: infinite.
    assert_eq!(
        percentile_counting_unmatched(&[1.0], 3, 50.0),
        Some(f64::INFINITY)
    );
    assert_eq!(percentile_counting_unmatched(&[], 0, 50.0), None);
}

#[test]
fn the_criterion_compares_three_modes_with_one() {
    let s = scenario();
    let fates = |three: f64| {
        vec![
            matched(4.0, 0),
            matched(2.0, 0),
            matched(2.0, 0),
            matched(3.0, 0),
            matched(1.0, 1),
            matched(three, 1),
            matched(three, 1),
            matched(1.0, 1),
        ]
    };
    let pass = run(
        AttrVariant::AsWritten,
        vec![intersection()],
        fates(1.0),
        vec![],
    );
    let checks = criteria(&s, &[pass]);
    assert_eq!(checks.len(), 2);
    assert_eq!(checks[0].id, "A1");
    // 1.0 s against 2.0 s (the lower median of 2, 2, 3, 4).
    assert!(checks[0].pass, "{checks:?}");
    assert!(checks[0].detail.contains("0.50x"), "{}", checks[0].detail);
    let miss = run(
        AttrVariant::AsWritten,
        vec![intersection()],
        fates(1.5),
        vec![],
    );
    let checks = criteria(&s, &[miss]);
    assert!(
        !checks[0].pass && checks[0].detail.contains("0.75x"),
        "{checks:?}"
    );
    // No records re-checked: (A2) cannot pass.
    assert!(!checks[1].pass);
}

#[test]
fn modes_played_come_from_the_records_and_the_trace() {
    let s = scenario();
    let m1 = formed(
        &s,
        vec![0, 1, 4, 7],
        1.0,
        vec![outcome("common", Some(1.0), Some(&["ctf"]))],
    );
    let m2 = formed(
        &s,
        vec![2, 5, 6, 3],
        2.0,
        vec![outcome("common", Some(1.0), Some(&["dm", "koth"]))],
    );
    let r = run(
        AttrVariant::AsWritten,
        vec![intersection()],
        vec![Fate::Waiting; 8],
        vec![m1.clone(), m2],
    );
    let played = modes_played(&s, &r, "common", "modes");
    assert_eq!((played.recorded, played.several), (2, 1));
    let share = |mode: &str| played.modes.iter().find(|m| m.0 == mode).unwrap().2;
    assert_eq!(share("ctf"), 0.5);
    assert_eq!(share("koth"), 0.25);
    assert_eq!(share("dm"), 0.25);
    assert_eq!(share("tdm"), 0.0);
    // c (koth) and d (tdm) list nothing in common with the rest: the
    // second match, as a match without the rule could be.
    assert_eq!(played.none_in_common, 1);
}

#[test]
fn spreads_are_bucketed_against_the_number_in_force() {
    let s = scenario();
    let rule = distance();
    assert_eq!(spread_edges(&rule), [5.0, 10.0, 20.0, 30.0, 40.0]);
    assert_eq!(distance_limit(&rule), 40.0);
    assert_eq!(distance_in_force(&rule, 2.0), Some(9.0));
    assert_eq!(distance_in_force(&rule, 100.0), Some(40.0));
    // a, b, c: 10..14 (spread 4) at 0 s; a..d: 10..30 (20) at 8 s, where
    // 21 is in force; e..h: 50..53 (3), but the record says 2 is in force.
    let m1 = formed(
        &s,
        vec![0, 1, 2],
        0.0,
        vec![outcome("close", Some(5.0), None)],
    );
    let m2 = formed(
        &s,
        vec![3, 0, 1, 2],
        8.0,
        vec![outcome("close", Some(21.0), None)],
    );
    let m3 = formed(
        &s,
        vec![4, 5, 6, 7],
        0.5,
        vec![outcome("close", Some(2.0), None)],
    );
    let fates = vec![
        matched(3.0, 0),
        matched(2.0, 0),
        matched(1.0, 0),
        matched(8.0, 1),
        matched(0.5, 2),
        matched(0.4, 2),
        matched(0.3, 2),
        matched(0.2, 2),
    ];
    let r = run(
        AttrVariant::AsWritten,
        vec![rule.clone()],
        fates,
        vec![m1, m2, m3],
    );
    let points = spread_points(&s, &r, &rule);
    assert_eq!(points.len(), 3);
    assert_eq!(points[0].distance, 4.0);
    assert_eq!(points[0].mean_wait, 2.0);
    assert_eq!(points[1].distance, 20.0);
    assert_eq!(points[1].mean_wait, 8.0);
    assert_eq!(over_rule(&points), 1);
    let rows = spread_rows(&points, &spread_edges(&rule));
    let counts: Vec<usize> = rows.iter().map(|r| r.matches).collect();
    assert_eq!(counts, [2, 0, 1, 0, 0, 0]);
    assert_eq!(rows[2].range, (10.0, 20.0));
    assert!(rows[5].range.1.is_infinite());
    assert_eq!(player_spread(&s, &r.matches[1], "level"), Some(20.0));
    // The trace's check fails the criterion.
    let checks = criteria(&s, &[r]);
    assert_eq!(checks.len(), 1);
    assert!(
        !checks[0].pass && checks[0].detail.contains("1 of 3 matches"),
        "{checks:?}"
    );
    // From the anchor: the furthest from the anchor's value.
    let mut from_anchor = rule.clone();
    from_anchor.kind = RuleKind::Distance {
        attribute: "level".into(),
        max: 5.0,
        from_anchor: true,
        party: NumberAggregate::Avg,
    };
    let m = formed(&s, vec![1, 0, 2], 0.0, vec![]);
    assert_eq!(rule_distance(&s, &m, &from_anchor), Some(2.0));
    assert!(from_anchor.in_force(Duration::from_secs(1)).is_some());
}

#[test]
fn the_window_cost_compares_the_world_as_written_with_the_widest_window() {
    assert!(AttrVariant::WideWindow
        .name()
        .ends_with(&shared::config::MAX_CANDIDATE_WINDOW.to_string()));
    // As written: two matched (waits 10, 30) and two still waiting; the
    // widest window: all four matched (waits 1, 2, 3, 4).
    let written = run(
        AttrVariant::AsWritten,
        vec![],
        vec![
            matched(10.0, 0),
            matched(30.0, 0),
            Fate::Waiting,
            Fate::Waiting,
        ],
        vec![],
    );
    let wide = run(
        AttrVariant::WideWindow,
        vec![],
        vec![
            matched(1.0, 0),
            matched(2.0, 0),
            matched(3.0, 1),
            matched(4.0, 1),
        ],
        vec![],
    );
    assert_eq!(window_cost(&[&written]), None);
    let cost = window_cost(&[&wide, &written]).expect("both played");
    assert_eq!(cost.written.waiting, 2);
    assert_eq!(cost.wide.waiting, 0);
    // The unmatched count as the longest: p95 of the written is infinite.
    assert_eq!(cost.p95_all.0, Some(f64::INFINITY));
    let p50 = cost.p50_all;
    assert!(p50.0.unwrap() > p50.1.unwrap(), "{p50:?}");
    let table = tables::window_table(&cost);
    assert!(
        table.contains("| unmatched (expired / waiting / refused) | 2 | 0 | |"),
        "{table}"
    );
}
