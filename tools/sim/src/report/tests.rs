use super::*;
use crate::outcome::ReadyStats;
use crate::outcome::{FormedMatch, Shape};
use crate::scenario::{Generator, PartySizes, Row, Source};

fn scenario(ratings: &[f64]) -> Scenario {
    Scenario::assemble(
        Source::Poisson(Generator {
            rate: 1.0,
            seconds: 100.0,
            mean: 0.0,
            sd: 1.0,
            seed: 0,
            parties: PartySizes::solo(),
            party_sd: 1.0,
        }),
        ratings
            .iter()
            .enumerate()
            .map(|(i, r)| Row::solo(i as f64, format!("p{i}"), *r))
            .collect(),
    )
    .unwrap()
}

fn run(label: &str, kind: Kind, fates: Vec<Fate>, spreads: &[f64]) -> Run {
    Run {
        label: label.into(),
        kind,
        shape: Shape::solo_team(10),
        fates,
        matches: spreads
            .iter()
            .map(|s| FormedMatch {
                time: 0.0,
                players: vec![],
                spread: *s,
                teams: None,
                team_difference: None,
                place: None,
                rules: None,
            })
            .collect(),
        notes: vec![],
        failures: 0,
        lagging: None,
        ready: None,
    }
}

fn matched(wait: f64) -> Fate {
    Fate::Matched { wait, index: 0 }
}

#[test]
fn summaries_count_fates() {
    let r = run(
        "x",
        Kind::Fifo,
        vec![
            matched(1.0),
            matched(3.0),
            Fate::Expired,
            Fate::Waiting,
            Fate::Refused,
        ],
        &[10.0, 30.0],
    );
    let s = summarize(&r);
    assert_eq!(
        (s.matched, s.expired, s.waiting, s.refused, s.unmatched()),
        (2, 1, 1, 1, 3)
    );
    assert_eq!(s.wait.unwrap().mean, 2.0);
    assert_eq!(s.spread.unwrap().mean, 20.0);
    let table = summary_table(&[r]);
    assert!(
        table.contains("| x | 2 | 2 | 3 (1 / 0 / 1 / 1) | 2.00 |"),
        "{table}"
    );
}

#[test]
fn checks_compare_with_fifo_the_frontier_and_outliers() {
    // 20 players: two outliers at |z| >= 3 (indices 0 and 5).
    let mut ratings = vec![0.0; 20];
    ratings[0] = 3.5;
    ratings[5] = -4.0;
    ratings[19] = 5.0; // arrives last: not counted
    let s = scenario(&ratings);
    let mut fates = vec![matched(1.0); 20];
    fates[0] = matched(12.0);
    fates[19] = Fate::Waiting;
    let runs = vec![
        run("fifo", Kind::Fifo, vec![matched(0.1); 20], &[100.0]),
        run(
            "rated",
            Kind::RuleSet {
                file: "r.json".into(),
                relax: 10.0,
            },
            fates.clone(),
            &[20.0],
        ),
        run(
            "o1",
            Kind::Oracle { period: 1.0 },
            vec![matched(0.5); 20],
            &[40.0],
        ),
        run(
            "o4",
            Kind::Oracle { period: 4.0 },
            vec![matched(2.0); 20],
            &[10.0],
        ),
    ];
    let f = frontier(&runs);
    assert_eq!(f.points().len(), 2);
    let checks = acceptance(&s, &runs, &f);
    assert_eq!(checks.len(), 3);
    // (a) 20 / 100 = 20 % <= 25 %
    assert!(checks[0].pass, "{checks:?}");
    // (b) mean wait (1.0*18 + 12 + ... ) / 19 matched; frontier between
    // (0.5, 40) and (2, 10) is 20/wait^1 -> at ~1.58 about 12.6; 20 / 12.6 > 1.25
    assert!(!checks[1].pass, "{checks:?}");
    // (c) bound 12 s: player 0 waited exactly 12 -> on time; 19 excluded
    assert!(checks[2].pass, "{checks:?}");
    assert!(
        checks[2].detail.contains("2 such players"),
        "{}",
        checks[2].detail
    );
    assert!(
        checks[2].detail.contains("1 arriving in the last 12 s"),
        "{}",
        checks[2].detail
    );
    // One more second and it is late.
    let mut late = runs.clone();
    late[1].fates[0] = matched(12.5);
    let checks = acceptance(&s, &late, &f);
    assert!(!checks[2].pass);
    assert!(checks[2].detail.contains("1 late"), "{}", checks[2].detail);
    let text = checks_table(&checks);
    assert!(text.contains("with \\|z\\| >= 3"), "{text}");
    assert!(
        text.contains("**MISS**") && text.contains("**PASS**"),
        "{text}"
    );
}

#[test]
fn decile_rows_split_waits_by_rating() {
    let ratings: Vec<f64> = (0..20).map(f64::from).collect();
    let s = scenario(&ratings);
    let fates: Vec<Fate> = (0..20)
        .map(|i| {
            if i == 19 {
                Fate::Waiting
            } else {
                matched(f64::from(i))
            }
        })
        .collect();
    let r = run("x", Kind::Fifo, fates, &[]);
    let rows = Deciles::new(&s).rows(&r);
    assert_eq!(rows.len(), 10);
    assert_eq!((rows[0].lo, rows[0].hi, rows[0].players), (0.0, 1.0, 2));
    assert_eq!(rows[0].wait.unwrap().max, 1.0);
    assert_eq!(rows[9].unmatched, 1);
    assert_eq!(rows[9].wait.unwrap().n, 1);
    assert!(decile_table(&rows).contains("| 10 | 18 – 19 | 2 | 1 |"));
}

/// Two teams of two: p0 + p1 a party, p2, p3, p4, p5 solos.
fn party_scenario() -> Scenario {
    let mut rows: Vec<Row> = [10.0, 20.0, 30.0, 40.0, 50.0, 60.0]
        .iter()
        .enumerate()
        .map(|(i, r)| Row::solo(i as f64, format!("p{i}"), *r))
        .collect();
    rows[1].time = 0.0;
    rows[0].party = Some("x".into());
    rows[1].party = Some("x".into());
    Scenario::assemble(Source::Csv { path: "t".into() }, rows).unwrap()
}

fn team_match(s: &Scenario, teams: Vec<Vec<usize>>) -> FormedMatch {
    FormedMatch::new(s, 1.0, teams.concat(), Some(teams))
}

#[test]
fn parties_split_and_team_differences_come_from_the_trace() {
    let s = party_scenario();
    let shape = Shape {
        teams: 2,
        team_size: 2,
    };
    let m = |i| Fate::Matched {
        wait: 1.0,
        index: i,
    };
    // The party together: 10 + 20 against 30 + 40 -> averages 15, 35.
    let whole = Run {
        shape,
        matches: vec![team_match(&s, vec![vec![0, 1], vec![2, 3]])],
        ..run(
            "whole",
            Kind::Fifo,
            vec![m(0), m(0), m(0), m(0), Fate::Waiting, Fate::Waiting],
            &[],
        )
    };
    assert_eq!(parties_split(&s, &whole), 0);
    assert_eq!(team_differences(&whole), [20.0]);
    // The party across two teams of one match.
    let across = Run {
        matches: vec![team_match(&s, vec![vec![0, 2], vec![1, 3]])],
        ..whole.clone()
    };
    assert_eq!(parties_split(&s, &across), 1);
    // One member matched, the other waiting.
    let apart = Run {
        fates: vec![m(0), Fate::Waiting, m(0), m(0), m(0), Fate::Waiting],
        matches: vec![team_match(&s, vec![vec![0, 2], vec![3, 4]])],
        ..whole.clone()
    };
    assert_eq!(parties_split(&s, &apart), 1);
    // Both waiting: whole.
    let waiting = Run {
        fates: vec![Fate::Waiting; 6],
        matches: vec![],
        ..whole.clone()
    };
    assert_eq!(parties_split(&s, &waiting), 0);
    // Waits by party size: the duo and the four solos.
    let rows = party_rows(&s, &whole);
    assert_eq!(rows.len(), 2);
    assert_eq!(
        (
            rows[0].size,
            rows[0].groups,
            rows[0].players,
            rows[0].unmatched
        ),
        (1, 4, 4, 2)
    );
    assert_eq!(
        (
            rows[1].size,
            rows[1].groups,
            rows[1].players,
            rows[1].unmatched
        ),
        (2, 1, 2, 0)
    );
    assert_eq!(rows[1].wait.unwrap().p90, 1.0);
    assert!(
        party_table(&s, std::slice::from_ref(&whole)).contains("| whole | 2 | 1 | 2 | 0 | 1.00 |")
    );
    assert!(teams_table(&s, &[across]).contains("| whole | 2x2 | 1 | 1 | 10.0 |"));
}

#[test]
fn team_worlds_are_checked_for_splits_and_balance_against_their_fifo() {
    let s = party_scenario();
    let shape = Shape {
        teams: 2,
        team_size: 2,
    };
    let m = |i| Fate::Matched {
        wait: 1.0,
        index: i,
    };
    let fates = vec![m(0), m(0), m(0), m(0), m(1), m(1)];
    // FIFO: 10 + 20 | 30 + 40 -> 20; nobody else for the second match's teams.
    let fifo = Run {
        shape,
        matches: vec![team_match(&s, vec![vec![0, 1], vec![2, 3]])],
        ..run("FIFO", Kind::Fifo, fates.clone(), &[])
    };
    // Rated: 10 + 20 | 30 + 4? -- here 10 + 40 is impossible (the party), so
    // the difference is 20 too; a second match 50 | 60 differs by 10.
    let mut rated = Run {
        shape,
        matches: vec![
            team_match(&s, vec![vec![0, 1], vec![2, 3]]),
            team_match(&s, vec![vec![4], vec![5]]),
        ],
        ..run(
            "rated",
            Kind::RuleSet {
                file: "r.json".into(),
                relax: 10.0,
            },
            fates,
            &[],
        )
    };
    let checks = acceptance(&s, &[rated.clone(), fifo.clone()], &frontier(&[]));
    let ids: Vec<&str> = checks.iter().map(|c| c.id).collect();
    assert_eq!(ids, ["a", "b", "c", "d", "e"]);
    assert!(checks[3].pass, "{:?}", checks[3]);
    assert_eq!(checks[3].detail, "0 of 1 parties split");
    // (e): mean 15 vs 20 = 75 % > 25 %.
    assert!(!checks[4].pass);
    assert!(
        checks[4].detail.contains("15.0 vs FIFO 20.0: 75.0 %"),
        "{}",
        checks[4].detail
    );
    // Balanced enough: 0 and 1 -> 0.5 / 20.
    rated.matches[0].team_difference = Some(0.0);
    rated.matches[1].team_difference = Some(1.0);
    let checks = acceptance(&s, &[rated, fifo], &frontier(&[]));
    assert!(checks[4].pass, "{:?}", checks[4]);
}

#[test]
fn the_ready_table_puts_each_probability_next_to_the_run_without() {
    let kind = Kind::RuleSet {
        file: "ready.json".into(),
        relax: 10.0,
    };
    let with = Run {
        ready: Some(ReadyStats {
            accept_probability: 0.9,
            refusal: "declines".into(),
            proposals: 12,
            accepted: 8,
            declined: 3,
            timed_out: 1,
            pending: 0,
            removed_by_declines: 3,
            removed_by_timeouts: 2,
            requeued: 40,
            answers: 100,
        }),
        ..run(
            "ready accept 0.9 (w)",
            kind.clone(),
            vec![matched(2.0), Fate::Removed],
            &[],
        )
    };
    let without = run(
        "ready without ready check (w)",
        kind,
        vec![matched(1.0); 2],
        &[],
    );
    let other = run(
        "other (w)",
        Kind::RuleSet {
            file: "other.json".into(),
            relax: 1.0,
        },
        vec![],
        &[],
    );
    let table = ready_table(&[with.clone(), without, other]);
    assert!(
        table.contains("| ready accept 0.9 (w) | 0.9 (else declines) | 12 | 8 | 3 / 1 | 0 | 3 / 2 | 40 | 2.00 |"),
        "{table}"
    );
    assert!(
        table.contains("| ready without ready check (w) | no ready check |"),
        "{table}"
    );
    assert!(!table.contains("other"), "{table}");
    let s = summarize(&with);
    assert_eq!((s.removed, s.unmatched()), (1, 1));
}
