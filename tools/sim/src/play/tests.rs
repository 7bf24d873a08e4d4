use super::*;

#[test]
fn places_rank_the_highest_first_and_share_ties() {
    assert_eq!(places(&[3.0, 9.0, 1.0]), [2, 1, 3]);
    assert_eq!(places(&[5.0, 7.0, 7.0, 1.0]), [3, 1, 1, 4]);
    assert_eq!(places(&[]), Vec::<u32>::new());
}

#[test]
fn the_noise_is_the_same_for_the_same_player_and_game() {
    let m = Performance {
        noise: 150.0,
        seed: 7,
    };
    assert_eq!(m.of(1500.0, 3, 4), m.of(1500.0, 3, 4));
    assert_ne!(m.of(1500.0, 3, 4), m.of(1500.0, 3, 5));
    assert_ne!(m.of(1500.0, 3, 4), m.of(1500.0, 4, 4));
    // The noise has sd `noise`.
    let draws: Vec<f64> = (0..4000).map(|g| m.of(0.0, 1, g) / 150.0).collect();
    let mean = draws.iter().sum::<f64>() / draws.len() as f64;
    let var = draws.iter().map(|d| (d - mean).powi(2)).sum::<f64>() / draws.len() as f64;
    assert!(
        mean.abs() < 0.06 && (var - 1.0).abs() < 0.08,
        "{mean} {var}"
    );
    let quiet = Performance {
        noise: 0.0,
        seed: 1,
    };
    assert_eq!(quiet.of(1234.0, 0, 0), 1234.0);
}

#[test]
fn reports_rank_teams_by_their_sums_or_every_player() {
    let p = |s: &str| PlayerId::parse(s).unwrap();
    let mut record: MatchRecord = serde_json::from_value(serde_json::json!({
        "matchId": "m1", "worldType": "w", "participants": ["a", "b", "c", "d"],
        "matchedAt": 1, "teams": [["a", "b"], ["c", "d"]]
    }))
    .unwrap();
    let perf: BTreeMap<PlayerId, f64> = [("a", 10.0), ("b", 1.0), ("c", 5.0), ("d", 5.0)]
        .map(|(k, v)| (p(k), v))
        .into();
    let r = report_for(&record, &perf);
    assert_eq!(r.team_ranks, Some(vec![1, 2]), "11 against 10");
    assert!(r.placing(&record).unwrap().is_some());
    record.teams = None;
    let r = report_for(&record, &perf);
    let ranks = r.player_ranks.clone().unwrap();
    assert_eq!(ranks[&p("a")], 1);
    assert_eq!(ranks[&p("b")], 4);
    assert_eq!((ranks[&p("c")], ranks[&p("d")]), (2, 2));
    assert!(r.placing(&record).unwrap().is_some());
}

#[test]
fn spreads_and_team_differences() {
    assert_eq!(spread(&[1.0, 5.0, 3.0]), 4.0);
    assert_eq!(spread(&[2.0]), 0.0);
    assert_eq!(team_difference(&[vec![1.0, 3.0], vec![4.0], vec![]]), 2.0);
}
