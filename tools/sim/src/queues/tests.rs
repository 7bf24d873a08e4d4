use shared::MatchRecord;

use super::analysis::{criteria, queues_check, singles_check, summarize, verify};
use super::arrivals::parse_mix;
use super::drive::{assemble, Entered, Joined};
use super::*;

fn record(id: &str, world: &str, players: &[&str], at_ms: u64) -> MatchRecord {
    serde_json::from_value(serde_json::json!({
        "matchId": id, "worldType": world, "participants": players, "matchedAt": at_ms
    }))
    .unwrap()
}

#[test]
fn arrivals_queue_in_one_to_three_distinct_worlds_a_third_each() {
    let trace = Trace::generate(5.0, 600.0, &MIX, &[1.0; 3], 7).unwrap();
    let n = trace.arrivals.len();
    assert!((2700..3300).contains(&n), "{n} arrivals at 5/s for 600 s");
    assert!(trace.arrivals.windows(2).all(|w| w[0].time <= w[1].time));
    let counts = trace.counts();
    assert_eq!(counts.iter().sum::<usize>(), n);
    for c in &counts {
        assert!(
            (*c as f64 / n as f64 - 1.0 / 3.0).abs() < 0.04,
            "{counts:?}"
        );
    }
    let mut first = [0usize; 3];
    for a in &trace.arrivals {
        let mut w = a.worlds.clone();
        w.sort_unstable();
        w.dedup();
        assert_eq!(w.len(), a.queues(), "distinct worlds");
        assert!(w.iter().all(|&i| i < 3));
        first[a.worlds[0]] += 1;
    }
    // The first world is uniform: each world gets a third of the arrivals
    // in the comparison lanes.
    for f in first {
        assert!((f as f64 / n as f64 - 1.0 / 3.0).abs() < 0.04, "{first:?}");
    }
    let ids: std::collections::HashSet<&str> =
        trace.arrivals.iter().map(|a| a.player.as_str()).collect();
    assert_eq!(ids.len(), n, "every arrival a new player");
    let again = Trace::generate(5.0, 600.0, &MIX, &[1.0; 3], 7).unwrap();
    assert_eq!(again.arrivals, trace.arrivals);
    let only_three = Trace::generate(5.0, 60.0, &[0.0, 0.0, 1.0], &[1.0; 3], 7).unwrap();
    assert!(only_three.arrivals.iter().all(|a| a.queues() == 3));
    let err = Trace::generate(5.0, 60.0, &MIX, &[1.0; 2], 7).unwrap_err();
    assert!(err.contains("up to 3 worlds"), "{err}");
    assert!(Trace::generate(5.0, 60.0, &MIX, &[1.0, 0.0, 1.0], 7).is_err());
}

#[test]
fn popular_worlds_are_drawn_more_often_first_and_in_sets() {
    let trace = Trace::generate(5.0, 600.0, &MIX, &[5.0, 3.0, 2.0], 3).unwrap();
    assert_eq!(trace.popularity, [0.5, 0.3, 0.2]);
    let n = trace.arrivals.len() as f64;
    let mut first = [0.0; 3];
    for a in &trace.arrivals {
        first[a.worlds[0]] += 1.0 / n;
        let mut w = a.worlds.clone();
        w.sort_unstable();
        w.dedup();
        assert_eq!(w.len(), a.queues());
    }
    for (got, want) in first.iter().zip([0.5, 0.3, 0.2]) {
        assert!((got - want).abs() < 0.03, "{first:?}");
    }
}

#[test]
fn the_mix_is_parsed_into_shares() {
    assert_eq!(parse_mix("1,1,2").unwrap(), vec![0.25, 0.25, 0.5]);
    assert_eq!(parse_mix("3").unwrap(), vec![1.0]);
    for bad in ["0,0,0", "a,1", "-1,2", "1,1,1,1,1", ""] {
        assert!(parse_mix(bad).is_err(), "{bad}");
    }
}

#[test]
fn the_lanes_join_all_worlds_the_first_or_singles_only() {
    let a = Arrival {
        time: 0.0,
        player: shared::PlayerId::parse("q000001").unwrap(),
        worlds: vec![2, 0],
    };
    assert_eq!(Variant::Several.joins(&a), Some(&[2, 0][..]));
    assert_eq!(Variant::OneEach.joins(&a), Some(&[2][..]));
    assert_eq!(Variant::SinglesOnly.joins(&a), None);
    let one = Arrival {
        worlds: vec![1],
        ..a
    };
    assert_eq!(Variant::SinglesOnly.joins(&one), Some(&[1][..]));
}

#[test]
fn the_shipped_rule_set_is_three_2v2_fifo_worlds_of_one_group() {
    let dir = crate::rules::default_dir().join("queues");
    let files = crate::rules::expand(&[dir]).unwrap();
    assert_eq!(files.len(), 1);
    let rs = RuleSet::from_file(&files[0], None).unwrap();
    assert_eq!(group_of(&rs).unwrap(), ["arena", "brawl", "clash"]);
    let plain = RuleSet::from_text(
        "p",
        "p.json",
        r#"{"worlds": [{"name": "a", "teamSize": 2}]}"#,
        None,
    )
    .unwrap();
    assert!(group_of(&plain).unwrap_err().contains("no queueGroup"));
    let ready = RuleSet::from_text(
        "r",
        "r.json",
        r#"{"servers": {"scope": "s"}, "worlds": [{"name": "a", "teamSize": 2, "queueGroup": "g"},
            {"name": "b", "teamSize": 2, "queueGroup": "g", "readyCheck": {"acceptSeconds": 5, "declineCooldownSeconds": 0}}]}"#,
        None,
    )
    .unwrap();
    let group = group_of(&ready).unwrap();
    assert!(study_rule_set(&ready, &group)
        .unwrap_err()
        .contains("readyCheck"));
    let served = RuleSet::from_text(
        "s",
        "s.json",
        r#"{"servers": {"scope": "s"}, "worlds": [{"name": "a", "teamSize": 2, "queueGroup": "g"},
            {"name": "b", "teamSize": 2, "queueGroup": "g"}]}"#,
        None,
    )
    .unwrap();
    let study = study_rule_set(&served, &group_of(&served).unwrap()).unwrap();
    assert!(!study.text.contains("servers"));
}

/// A trace of 8 arrivals in worlds a (0), b (1), c (2): q1..q4 in one
/// world each, q5..q8 in two or three.
fn small_trace() -> Trace {
    let worlds: [&[usize]; 8] = [
        &[0],
        &[0],
        &[1],
        &[2],
        &[0, 1],
        &[1, 0],
        &[2, 0, 1],
        &[0, 2],
    ];
    Trace {
        arrivals: worlds
            .iter()
            .enumerate()
            .map(|(i, w)| Arrival {
                time: i as f64,
                player: shared::PlayerId::parse(&format!("q{:06}", i + 1)).unwrap(),
                worlds: w.to_vec(),
            })
            .collect(),
        rate: 1.0,
        seconds: 10.0,
        mix: vec![0.5, 0.25, 0.25],
        worlds: 3,
        popularity: vec![1.0 / 3.0; 3],
    }
}

fn joined(arrival: usize, also: &[&str], entered: Entered) -> Joined {
    Joined {
        arrival,
        sent: arrival as f64,
        lag: 0.0,
        also: also.iter().map(|s| s.to_string()).collect(),
        entered,
    }
}

fn lane(
    variant: Variant,
    trace: &Trace,
    records: Vec<MatchRecord>,
    waiting: &[&[&str]],
) -> LaneResult {
    let joins = trace
        .arrivals
        .iter()
        .enumerate()
        .filter_map(|(i, a)| {
            let w = variant.joins(a)?;
            let names = ["a", "b", "c"];
            let also: Vec<&str> = w[1..].iter().map(|&x| names[x]).collect();
            Some(joined(
                i,
                &also,
                Entered::Queued(also.iter().map(|s| s.to_string()).collect()),
            ))
        })
        .collect();
    let waiting: Vec<Vec<String>> = waiting
        .iter()
        .map(|q| q.iter().map(|s| s.to_string()).collect())
        .collect();
    let ledger = assemble(trace, joins, records, &waiting, |ms| ms / 1000.0);
    LaneResult {
        label: format!("r {}", variant.describe()),
        rule_set: "r".into(),
        file: "r.json".into(),
        variant,
        worlds: vec!["a".into(), "b".into(), "c".into()],
        description: "FIFO".into(),
        seats: 2,
        fates: ledger.fates,
        sent: ledger.sent,
        records: ledger.records,
        matched_at: ledger.matched_at,
        waiting,
        end: 20.0,
        ttl: 900.0,
        refused: ledger.refused,
        also_mismatch: ledger.also_mismatch,
        failures: 0,
        first_error: None,
        lagging: None,
        notes: Vec::new(),
    }
}

#[test]
fn a_clean_lane_passes_the_offline_check_and_ties_waits() {
    let t = small_trace();
    // a: q1 + q2 at 1.5 s; b: q3 + q5 at 5 s; c: q4 + q7 at 6.5 s; q6 and
    // q8 still wait in all their worlds.
    let records = vec![
        record("m2", "b", &["q000003", "q000005"], 5_000),
        record("m1", "a", &["q000001", "q000002"], 1_500),
        record("m3", "c", &["q000004", "q000007"], 6_500),
    ];
    let l = lane(
        Variant::Several,
        &t,
        records.clone(),
        &[&["q000006", "q000008"], &["q000006"], &["q000008"]],
    );
    assert_eq!(l.records[0].match_id.as_str(), "m1", "by matched_at");
    let v = verify(&l, &t);
    assert!(v.clean(), "{}", v.describe());
    assert_eq!(v.records, 3);
    let s = summarize(&l, &t, |_| true);
    assert_eq!((s.arrivals, s.matched, s.unmatched), (8, 6, 2));
    assert_eq!(s.p95_all, Some(f64::INFINITY));
    let one = summarize(&l, &t, |a| a.queues() == 1);
    // q1 1.5, q2 0.5, q3 3, q4 3.5: p50 (nearest rank) 1.5.
    assert_eq!(one.p50_all, Some(1.5));
    let many = summarize(&l, &t, |a| a.queues() == 3);
    assert_eq!((many.matched, many.p50_all), (1, Some(0.5)));
}

#[test]
fn the_offline_check_finds_planted_violations() {
    let t = small_trace();
    let base = || {
        vec![
            record("m1", "a", &["q000001", "q000002"], 1_500),
            record("m2", "b", &["q000003", "q000005"], 5_000),
        ]
    };
    let count = |records: Vec<MatchRecord>, waiting: &[&[&str]]| {
        verify(&lane(Variant::Several, &t, records, waiting), &t)
    };
    let waiting: &[&[&str]] = &[
        &["q000006", "q000008"],
        &["q000006", "q000007"],
        &["q000004", "q000007", "q000008"],
    ];
    assert!(count(
        base(),
        &[
            &["q000006", "q000007", "q000008"],
            &["q000006", "q000007"],
            &["q000004", "q000007", "q000008"]
        ]
    )
    .clean());
    // q5 matched again in a: twice.
    let mut r = base();
    r.push(record("m3", "a", &["q000005", "q000006"], 7_000));
    let v = count(r, waiting);
    assert_eq!(v.twice, 1, "{}", v.describe());
    // q4 (queued in c only) matched in a: wrong world; q7 not in a at the
    // end: partial; a stranger.
    let mut r = base();
    r.push(record("m3", "a", &["q000004", "x9"], 7_000));
    let v = count(r, waiting);
    assert_eq!((v.wrong_world, v.strangers), (1, 1), "{}", v.describe());
    assert!(v.left_behind == 1 && v.partial == 1, "{}", v.describe());
    // Nobody holds q4 nor q7 at the end: lost.
    let v = count(
        base(),
        &[&["q000006", "q000008"], &["q000006"], &["q000008"]],
    );
    assert_eq!(v.lost, 2, "{}", v.describe());
    // A short match.
    let mut r = base();
    r.push(record("m3", "c", &["q000004"], 7_000));
    assert_eq!(count(r, waiting).malformed, 1);
    // The lane with one queue each: q5 queued in a only, matched in b.
    let v = verify(&lane(Variant::OneEach, &t, base(), &[]), &t);
    assert!(v.wrong_world >= 1, "{}", v.describe());
}

#[test]
fn the_criteria_compare_three_queues_with_one_and_singles_with_the_baseline() {
    let t = small_trace();
    let several = lane(
        Variant::Several,
        &t,
        vec![
            record("m1", "a", &["q000001", "q000002"], 1_500),
            record("m2", "b", &["q000003", "q000005"], 5_000),
            record("m3", "c", &["q000004", "q000007"], 6_500),
        ],
        &[&["q000006", "q000008"], &["q000006"], &["q000008"]],
    );
    let q1 = queues_check(&several, &t);
    assert!(q1.pass, "0.5 s vs 1.5 s: {}", q1.detail);
    assert!(q1.detail.contains("0.333x"), "{}", q1.detail);
    // The baseline: the singles matched at the same times: 1.0x.
    let one_each = lane(
        Variant::OneEach,
        &t,
        vec![
            record("n1", "a", &["q000001", "q000002"], 1_500),
            record("n2", "b", &["q000003", "q000006"], 5_000),
            record("n3", "c", &["q000004", "q000007"], 6_500),
        ],
        &[&["q000005", "q000008"], &[], &[]],
    );
    assert!(singles_check(&several, &one_each, &t).pass);
    let faster = lane(
        Variant::OneEach,
        &t,
        vec![record("n1", "a", &["q000001", "q000002"], 1_100)],
        &[
            &["q000005", "q000008"],
            &["q000003", "q000006"],
            &["q000004", "q000007"],
        ],
    );
    // The singles' waits there: q2 0.1 s, q1 1.1 s, q3 and q4 unmatched:
    // p50 1.1 s, against 1.5 s with several queues.
    let c = singles_check(&several, &faster, &t);
    assert!(!c.pass && c.detail.contains("1.364x"), "{}", c.detail);
    let singles = lane(
        Variant::SinglesOnly,
        &t,
        Vec::new(),
        &[&["q000001", "q000002"], &["q000003"], &["q000004"]],
    );
    let checks = criteria(&[several, one_each, singles], &t);
    let ids: Vec<&str> = checks.iter().map(|c| c.id).collect();
    assert_eq!(ids, ["Q1", "Q2", "Q3"]);
    assert!(checks.iter().all(|c| c.pass), "{checks:?}");
}
