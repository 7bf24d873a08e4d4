use std::collections::HashSet;

use shared::MatchRecord;

use super::analysis::{criteria, matches_check, violations, violations_check, Grouping};
use super::drive::{assemble, Entered, Joined};
use super::population::{avoided_by_bands, band_of, list_bands, pair};
use super::*;
use crate::rules::Environment;

fn env() -> Environment {
    Environment {
        redis_url: "redis://127.0.0.1:1".into(),
        ticket_ttl_secs: 900,
        instant_match: true,
    }
}

fn record(id: &str, players: &[&str], at: u64) -> MatchRecord {
    serde_json::from_value(serde_json::json!({
        "matchId": id, "worldType": "w", "participants": players, "matchedAt": at
    }))
    .unwrap()
}

#[test]
fn every_list_holds_0_to_20_distinct_others_and_the_pairs_follow() {
    let pop = Population::generate(5000, (0, 20), 1500.0, 300.0, 7).unwrap();
    assert_eq!(pop.len(), 5000);
    assert_eq!(pop.ids[0].as_str(), "p00001");
    assert_eq!(pop.ids[4999].as_str(), "p05000");
    let mut sizes = HashSet::new();
    let mut pairs = HashSet::new();
    for (i, list) in pop.avoids.iter().enumerate() {
        assert!(list.len() <= 20, "{i}: {}", list.len());
        sizes.insert(list.len());
        let distinct: HashSet<usize> = list.iter().copied().collect();
        assert_eq!(distinct.len(), list.len(), "{i} lists someone twice");
        assert!(!list.contains(&i), "{i} avoids themselves");
        assert!(list.iter().all(|&j| j < 5000));
        pairs.extend(list.iter().map(|&j| pair(i, j)));
    }
    // Every size of 0..=20 is drawn, uniformly: mean 10.
    assert_eq!(sizes.len(), 21);
    let total: usize = pop.avoids.iter().map(Vec::len).sum();
    let mean = total as f64 / 5000.0;
    assert!((mean - 10.0).abs() < 0.4, "{mean}");
    assert_eq!(pop.avoided_by.iter().sum::<usize>(), total);
    assert_eq!(pop.pairs, pairs);
    assert_eq!(pop.pairs.len(), total - pop.mutual());
    let (a, b) = *pop.pairs.iter().next().unwrap();
    assert!(pop.blocked(a, b) && pop.blocked(b, a));
    // Seeded: the same seed, the same lists; another, others.
    let again = Population::generate(5000, (0, 20), 1500.0, 300.0, 7).unwrap();
    assert_eq!(again.avoids, pop.avoids);
    assert_eq!(again.ratings, pop.ratings);
    let other = Population::generate(5000, (0, 20), 1500.0, 300.0, 8).unwrap();
    assert_ne!(other.avoids, pop.avoids);
    // Fixed sizes, and lists as long as the population allows.
    let fixed = Population::generate(30, (29, 29), 0.0, 1.0, 1).unwrap();
    assert!(fixed.avoids.iter().all(|l| l.len() == 29));
    assert_eq!(fixed.pairs.len(), 30 * 29 / 2);
    assert_eq!(fixed.mutual(), 30 * 29 / 2);
    assert_eq!(fixed.blocked_share(2, 50, 1), 1.0);
    let none = Population::generate(30, (0, 0), 0.0, 1.0, 1).unwrap();
    assert!(none.pairs.is_empty());
    assert_eq!(none.blocked_share(10, 50, 1), 0.0);
}

#[test]
fn impossible_populations_are_refused() {
    let err = Population::generate(1, (0, 0), 0.0, 1.0, 1).unwrap_err();
    assert!(err.contains("at least 2"), "{err}");
    let err = Population::generate(10, (0, 10), 0.0, 1.0, 1).unwrap_err();
    assert!(err.contains("do not fit"), "{err}");
    let err = Population::generate(10, (5, 2), 0.0, 1.0, 1).unwrap_err();
    assert!(err.contains("do not fit"), "{err}");
}

#[test]
fn arrivals_draw_players_who_are_not_away() {
    let pop = Population::generate(500, (0, 20), 1500.0, 300.0, 3).unwrap();
    let trace = Trace::generate(&pop, 20.0, 300.0, (10.0, 30.0), 3).unwrap();
    let n = trace.arrivals.len();
    assert!((5400..6600).contains(&n), "{n} arrivals at 20/s for 300 s");
    assert!(trace.arrivals.windows(2).all(|w| w[0].0 <= w[1].0));
    assert!(trace.last() < 300.0);
    let mut last: Vec<Option<f64>> = vec![None; 500];
    for &(t, p) in &trace.arrivals {
        if let Some(before) = last[p] {
            assert!(t - before >= 10.0, "{p} again after {} s", t - before);
        }
        last[p] = Some(t);
    }
    let (distinct, again) = trace.distinct();
    assert!(distinct <= 500 && again > 0, "{distinct} {again}");
    assert_eq!(trace.dropped, 0);
    let same = Trace::generate(&pop, 20.0, 300.0, (10.0, 30.0), 3).unwrap();
    assert_eq!(same.arrivals, trace.arrivals);
    // Everyone away: arrivals are dropped, never doubled.
    let busy = Trace::generate(&pop, 20.0, 60.0, (1000.0, 1000.0), 3).unwrap();
    assert_eq!(busy.arrivals.len(), 500);
    assert!(busy.dropped > 0);
}

#[test]
fn players_are_grouped_in_bands() {
    let labels = |b: &[population::Band]| b.iter().map(|b| b.label()).collect::<Vec<_>>();
    assert_eq!(labels(&list_bands(20)), ["0", "1–10", "11–20"]);
    assert_eq!(labels(&list_bands(1)), ["0", "1"]);
    assert_eq!(labels(&list_bands(0)), ["0"]);
    let by = avoided_by_bands(10.0);
    assert_eq!(labels(&by), ["0–5", "6–10", "11–15", "16+"]);
    assert_eq!(band_of(&by, 0), 0);
    assert_eq!(band_of(&by, 6), 1);
    assert_eq!(band_of(&by, 15), 2);
    assert_eq!(band_of(&by, 400), 3);
    let pop = Population::generate(2000, (0, 20), 1500.0, 300.0, 5).unwrap();
    let g = Grouping::by_list_size(&pop);
    let players = g.players();
    assert_eq!(players.iter().sum::<usize>(), 2000);
    // About 1 in 21 avoid nobody, 10 in 21 each half.
    assert!((40..160).contains(&players[0]), "{players:?}");
    assert!(players[1] > 800 && players[2] > 800, "{players:?}");
}

/// A population of 12 with one planted pair: p00001 avoids p00002.
fn planted() -> Population {
    let mut pop = Population::generate(12, (0, 0), 1500.0, 300.0, 1).unwrap();
    pop.avoids[0].push(1);
    pop.avoided_by[1] += 1;
    pop.pairs.insert(pair(0, 1));
    pop
}

#[test]
fn the_offline_check_finds_a_planted_violation() {
    let pop = planted();
    let clean = record("m1", &["p00001", "p00003", "p00004", "p00005"], 10);
    let bad = record("m2", &["p00006", "p00002", "p00007", "p00001"], 20);
    let v = violations(std::slice::from_ref(&clean), &pop, 4);
    assert_eq!((v.checked, v.records, v.pairs, v.malformed), (1, 0, 0, 0));
    assert!(violations_check("r", &v).pass);
    let v = violations(&[clean.clone(), bad], &pop, 4);
    assert_eq!((v.checked, v.records, v.pairs, v.malformed), (2, 1, 1, 0));
    assert!(
        v.examples[0].contains("m2") && v.examples[0].contains("p00001 avoids p00002"),
        "{:?}",
        v.examples
    );
    let check = violations_check("r", &v);
    assert!(!check.pass && check.detail.contains("1 with a blocked pair"));
    // A player twice, a stranger, a short match: malformed.
    for players in [
        &["p00003", "p00003", "p00004", "p00005"][..],
        &["p00003", "x", "p00004", "p00005"],
        &["p00003", "p00004", "p00005"],
    ] {
        let v = violations(&[record("m3", players, 30)], &pop, 4);
        assert_eq!(v.malformed, 1, "{players:?}");
        assert!(!violations_check("r", &v).pass);
    }
}

#[test]
fn the_criterion_is_matches_with_lists_against_without() {
    assert!(matches_check("r", 95, 100).pass);
    assert!(matches_check("r", 100, 90).pass);
    let miss = matches_check("r", 94, 100);
    assert!(!miss.pass);
    assert!(miss.detail.contains("0.940x"), "{}", miss.detail);
    assert!(!matches_check("r", 0, 0).pass);
    assert!(!matches_check("r", 5, 0).pass);
}

fn joined(arrival: usize, sent_ms: f64, entered: Entered) -> Joined {
    Joined {
        arrival,
        sent_ms,
        lag: 0.0,
        entered,
    }
}

#[test]
fn every_arrival_is_tied_to_its_match_or_accounted_for() {
    let pop = planted();
    // p00003 arrives twice; p00004 is refused; p00005 still waits; p00006
    // expired.
    let trace = Trace {
        arrivals: vec![
            (0.0, 2),
            (0.5, 3),
            (1.0, 4),
            (1.5, 5),
            (2.0, 6),
            (3.0, 7),
            (9.0, 2),
        ],
        dropped: 0,
        rate: 1.0,
        seconds: 10.0,
        away: (5.0, 5.0),
    };
    let first = record("m1", &["p00003", "p00007", "p00008"], 4_000);
    let second = record("m2", &["p00003", "p00009"], 9_500);
    let joins = vec![
        joined(0, 0.0, Entered::Queued),
        joined(1, 500.0, Entered::Refused("ALREADY_QUEUED".into())),
        joined(2, 1_000.0, Entered::Queued),
        joined(3, 1_500.0, Entered::Queued),
        joined(4, 2_000.0, Entered::Queued),
        joined(5, 3_000.0, Entered::Matched(vec![first.clone()])),
        joined(6, 9_000.0, Entered::Queued),
    ];
    // The tick saw m1 again and formed m2 (with a stranger to nobody's
    // pending arrival: p00009 never arrived).
    let ledger = assemble(&trace, &pop, joins, vec![second, first], &["p00005".into()]);
    assert_eq!(ledger.records.len(), 2, "each match once");
    assert_eq!(ledger.records[0].match_id.as_str(), "m1");
    let wait = |a: usize| match ledger.fates[a] {
        Fate::Matched { wait, index } => Some((wait, index)),
        _ => None,
    };
    assert_eq!(wait(0), Some((4.0, 0)));
    assert_eq!(wait(5), Some((1.0, 0)));
    assert_eq!(wait(4), Some((2.0, 0)));
    assert_eq!(wait(6), Some((0.5, 1)));
    assert_eq!(ledger.fates[1], Fate::Refused);
    assert_eq!(ledger.fates[2], Fate::Waiting);
    assert_eq!(ledger.fates[3], Fate::Expired);
    assert_eq!(ledger.refused.get("ALREADY_QUEUED"), Some(&1));
    assert_eq!(ledger.unaccounted, 1, "p00009 in m2");
    assert_eq!(ledger.failures, 0);
}

#[test]
fn the_lanes_rule_sets_have_lists_or_none_and_no_servers() {
    let rs = RuleSet::from_text(
        "r",
        "r.json",
        r#"{"servers": {"scope": "s"}, "worlds": [{"name": "a", "teamSize": 5, "teams": 2}]}"#,
        None,
    )
    .unwrap();
    let with = variant_rule_set(&rs, Variant::WithLists, 20).unwrap();
    assert_eq!(with.label, "r with lists");
    let (settings, _) = with.settings(&env(), "b0").unwrap();
    assert_eq!(settings.block_lists.map(|b| b.max_entries), Some(20));
    assert!(with.notes.iter().any(|n| n.contains("servers removed")));
    assert!(!with.text.contains("servers"));
    let without = variant_rule_set(&with, Variant::WithoutLists, 20).unwrap();
    let (settings, _) = without.settings(&env(), "b1").unwrap();
    assert!(settings.block_lists.is_none());
    // A document's own section stays when it holds the longest list.
    let own = RuleSet::from_text(
        "o",
        "o.json",
        r#"{"blockLists": {"maxEntries": 50}, "worlds": [{"name": "a", "teamSize": 4}]}"#,
        None,
    )
    .unwrap();
    let kept = variant_rule_set(&own, Variant::WithLists, 20).unwrap();
    let (settings, _) = kept.settings(&env(), "b2").unwrap();
    assert_eq!(settings.block_lists.map(|b| b.max_entries), Some(50));
    let raised = variant_rule_set(&own, Variant::WithLists, 60).unwrap();
    let (settings, _) = raised.settings(&env(), "b3").unwrap();
    assert_eq!(settings.block_lists.map(|b| b.max_entries), Some(60));
    let ready = RuleSet::from_text(
        "q",
        "q.json",
        r#"{"worlds": [{"name": "a", "teamSize": 2, "readyCheck": {"acceptSeconds": 5, "declineCooldownSeconds": 0}}]}"#,
        None,
    )
    .unwrap();
    let err = variant_rule_set(&ready, Variant::WithLists, 20).unwrap_err();
    assert!(err.contains("readyCheck"), "{err}");
}

#[test]
fn the_shipped_rule_set_is_a_2x5_fifo_world_with_lists_of_20() {
    let dir = crate::rules::default_dir().join("blocks");
    let files = crate::rules::expand(&[dir]).unwrap();
    assert_eq!(files.len(), 1);
    let rs = RuleSet::from_file(&files[0], None).unwrap();
    let (settings, world) = rs.settings(&env(), "b0").unwrap();
    assert_eq!((world.teams, world.team_size), (2, 5));
    assert_eq!(crate::rules::relax_seconds(&world), 0.0, "FIFO");
    assert_eq!(settings.block_lists.map(|b| b.max_entries), Some(20));
}

fn lane(variant: Variant, records: Vec<MatchRecord>) -> LaneResult {
    LaneResult {
        label: format!("r {}", variant.describe()),
        rule_set: "r".into(),
        file: "r.json".into(),
        variant,
        description: "FIFO".into(),
        seats: 4,
        fates: Vec::new(),
        records,
        refused: Default::default(),
        unaccounted: 0,
        lists_written: 0,
        failures: 0,
        first_error: None,
        lagging: None,
        notes: Vec::new(),
    }
}

#[test]
fn the_criteria_compare_the_lanes_of_one_rule_set() {
    let pop = planted();
    let ok = |id: &str| record(id, &["p00003", "p00004", "p00005", "p00006"], 1);
    let bad = record("x", &["p00001", "p00002", "p00005", "p00006"], 1);
    let lanes = [
        lane(
            Variant::WithLists,
            (0..19).map(|i| ok(&format!("m{i}"))).collect(),
        ),
        lane(
            Variant::WithoutLists,
            (0..19)
                .map(|i| ok(&format!("n{i}")))
                .chain([bad.clone()])
                .collect(),
        ),
    ];
    let checks = criteria(&lanes, &pop);
    assert_eq!(checks.len(), 2);
    assert!(checks[0].pass, "19 of 20: {}", checks[0].detail);
    assert!(checks[1].pass, "{}", checks[1].detail);
    // A blocked pair in the lane with lists, and too few matches.
    let lanes = [
        lane(Variant::WithLists, vec![bad]),
        lane(
            Variant::WithoutLists,
            (0..19).map(|i| ok(&format!("n{i}"))).collect(),
        ),
    ];
    let checks = criteria(&lanes, &pop);
    assert!(!checks[0].pass && !checks[1].pass, "{checks:?}");
}
