//! The offline oracle: a clairvoyant batch matcher. Every `period` seconds it
//! takes everyone waiting, sorts them by rating and groups consecutive
//! players into matches of the team size. When the number waiting is not a
//! multiple of the team size, the most recent arrivals (fewer than a team)
//! wait for the next batch, so nobody waits more than two periods while
//! players keep arriving. Tickets never expire. Several periods trace the
//! quality/wait frontier an online rule set is compared against.

use crate::outcome::{spread, Fate, FormedMatch, Kind, Run};
use crate::scenario::Scenario;

/// Runs the oracle with batches at `period`, `2 period`, ... up to and
/// including `end` (simulated seconds).
pub fn run(scenario: &Scenario, team: usize, period: f64, end: f64) -> Run {
    assert!(team >= 1 && period > 0.0);
    let arrivals = &scenario.arrivals;
    let mut fates = vec![Fate::Waiting; arrivals.len()];
    let mut matches = Vec::new();
    let mut waiting: Vec<usize> = Vec::new();
    let mut next = 0;
    let mut round = 1u64;
    loop {
        let t = round as f64 * period;
        if t > end + 1e-9 {
            break;
        }
        round += 1;
        while next < arrivals.len() && arrivals[next].time <= t {
            waiting.push(next);
            next += 1;
        }
        // `waiting` is in arrival order: hold back the newest remainder.
        let keep = waiting.len() % team;
        let held = waiting.split_off(waiting.len() - keep);
        let mut batch = std::mem::replace(&mut waiting, held);
        batch.sort_by(|a, b| {
            arrivals[*a]
                .rating
                .total_cmp(&arrivals[*b].rating)
                .then(a.cmp(b))
        });
        for group in batch.chunks(team) {
            let index = matches.len();
            for &p in group {
                fates[p] = Fate::Matched {
                    wait: t - arrivals[p].time,
                    index,
                };
            }
            matches.push(FormedMatch {
                time: t,
                players: group.to_vec(),
                spread: spread(scenario, group),
            });
        }
    }
    Run {
        label: format!("oracle T={}s", trim_float(period)),
        kind: Kind::Oracle { period },
        fates,
        matches,
        notes: Vec::new(),
        failures: 0,
        lagging: None,
    }
}

/// `5` for 5.0, `0.5` for 0.5.
pub fn trim_float(v: f64) -> String {
    if v.fract() == 0.0 {
        format!("{v:.0}")
    } else {
        format!("{v}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::{Arrival, Source};

    fn trace(rows: &[(f64, f64)]) -> Scenario {
        Scenario {
            source: Source::Csv {
                path: "test".into(),
            },
            arrivals: rows
                .iter()
                .enumerate()
                .map(|(i, (time, rating))| Arrival {
                    time: *time,
                    player: format!("p{i}"),
                    rating: *rating,
                    party_size: 1,
                })
                .collect(),
        }
    }

    #[test]
    fn a_batch_sorts_by_rating_and_groups_neighbours() {
        // Six players by t = 1, team of 2: pairs of neighbours by rating.
        let s = trace(&[
            (0.1, 1000.0),
            (0.2, 2000.0),
            (0.3, 1010.0),
            (0.4, 2040.0),
            (0.5, 1500.0),
            (0.6, 1530.0),
        ]);
        let run = run(&s, 2, 1.0, 10.0);
        let groups: Vec<Vec<usize>> = run.matches.iter().map(|m| m.players.clone()).collect();
        assert_eq!(groups, [vec![0, 2], vec![4, 5], vec![1, 3]]);
        let spreads: Vec<f64> = run.matches.iter().map(|m| m.spread).collect();
        assert_eq!(spreads, [10.0, 30.0, 40.0]);
        assert!(run.matches.iter().all(|m| m.time == 1.0));
        match run.fates[0] {
            Fate::Matched { wait, index } => {
                assert!((wait - 0.9).abs() < 1e-12);
                assert_eq!(index, 0);
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(run.label, "oracle T=1s");
    }

    #[test]
    fn the_newest_remainder_waits_for_the_next_batch() {
        // Team of 3; at t = 2 five wait: the two newest are held back, then
        // matched at t = 4 with the one who arrives in between.
        let s = trace(&[
            (0.5, 1.0),
            (1.0, 9.0),
            (1.5, 5.0),
            (1.8, 2.0),
            (1.9, 8.0),
            (3.0, 3.0),
        ]);
        let run = run(&s, 3, 2.0, 4.0);
        assert_eq!(run.matches.len(), 2);
        assert_eq!(run.matches[0].players, [0, 2, 1]);
        assert_eq!(run.matches[0].time, 2.0);
        assert_eq!(run.matches[1].players, [3, 5, 4]);
        assert_eq!(run.matches[1].time, 4.0);
        assert_eq!(run.matches[1].spread, 6.0);
        match run.fates[3] {
            Fate::Matched { wait, .. } => assert!((wait - 2.2).abs() < 1e-12),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn leftovers_at_the_end_stay_waiting() {
        let s = trace(&[(0.1, 1.0), (0.2, 2.0), (0.3, 3.0), (5.0, 4.0)]);
        let run = run(&s, 3, 1.0, 3.0);
        assert_eq!(run.matches.len(), 1);
        // Arrives after the last batch at t = 3.
        assert_eq!(run.fates[3], Fate::Waiting);
        // Deterministic: the same input gives the same output.
        let again = super::run(&s, 3, 1.0, 3.0);
        assert_eq!(run.matches, again.matches);
        assert_eq!(run.fates, again.fates);
    }

    #[test]
    fn longer_periods_trade_wait_for_quality() {
        let s = Scenario::poisson(50.0, 300.0, 1500.0, 300.0, 3).unwrap();
        let stats = |period: f64| {
            let r = run(&s, 10, period, 400.0);
            let waits: Vec<f64> = r
                .fates
                .iter()
                .filter_map(|f| match f {
                    Fate::Matched { wait, .. } => Some(*wait),
                    _ => None,
                })
                .collect();
            let spread = r.matches.iter().map(|m| m.spread).sum::<f64>() / r.matches.len() as f64;
            (waits.iter().sum::<f64>() / waits.len() as f64, spread)
        };
        let (w1, s1) = stats(1.0);
        let (w10, s10) = stats(10.0);
        let (w30, s30) = stats(30.0);
        assert!(w1 < w10 && w10 < w30, "{w1} {w10} {w30}");
        assert!(s1 > s10 && s10 > s30, "{s1} {s10} {s30}");
        // Mean wait is about half a period (arrivals are uniform in a batch).
        assert!((w10 - 5.0).abs() < 0.5, "{w10}");
    }
}
