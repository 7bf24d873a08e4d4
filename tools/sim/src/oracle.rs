//! The offline oracle: a clairvoyant batch matcher. Every `period` seconds it
//! takes everyone waiting, sorts them by rating and groups neighbours into
//! matches. A party is one unit (rated by its members' average) and is
//! never split: it goes into the first match, in rating order, it fits
//! whole into (with teams: whole into one team). When the players waiting
//! are not a whole number of matches, the most recent arrivals wait for the
//! next batch, so nobody waits more than about two periods while players
//! keep arriving. Tickets never expire. With teams, each match's units are
//! dealt into teams largest first, then highest rated first, each into the
//! team with the lowest rating sum that has room. Several periods trace the
//! quality/wait frontier an online rule set is compared against.

use crate::outcome::{Fate, FormedMatch, Kind, Run, Shape};
use crate::scenario::Scenario;

/// Runs the oracle with batches at `period`, `2 period`, ... up to and
/// including `end` (simulated seconds), forming matches of `shape`.
pub fn run(scenario: &Scenario, shape: Shape, period: f64, end: f64) -> Run {
    let seats = shape.seats() as usize;
    assert!(seats >= 1 && period > 0.0);
    let arrivals = &scenario.arrivals;
    let groups = &scenario.groups;
    let size = |g: usize| groups[g].members.len();
    let rating = |g: usize| {
        groups[g]
            .members
            .iter()
            .map(|&m| arrivals[m].rating)
            .sum::<f64>()
            / size(g) as f64
    };
    let mut fates = vec![Fate::Waiting; arrivals.len()];
    let mut matches = Vec::new();
    // Groups waiting, in arrival order.
    let mut waiting: Vec<usize> = Vec::new();
    let mut next = 0;
    let mut round = 1u64;
    loop {
        let t = round as f64 * period;
        if t > end + 1e-9 {
            break;
        }
        round += 1;
        while next < groups.len() && groups[next].time <= t {
            waiting.push(next);
            next += 1;
        }
        // Hold back the newest groups until the rest fill whole matches.
        let mut total: usize = waiting.iter().map(|&g| size(g)).sum();
        let mut cut = waiting.len();
        while !total.is_multiple_of(seats) && cut > 0 {
            cut -= 1;
            total -= size(waiting[cut]);
        }
        let held = waiting.split_off(cut);
        let mut batch = std::mem::take(&mut waiting);
        batch.sort_by(|a, b| rating(*a).total_cmp(&rating(*b)).then(a.cmp(b)));
        // Fill matches in rating order; a unit that does not fit the current
        // match keeps its place for the next one.
        loop {
            let mut chosen: Vec<usize> = Vec::new();
            let mut used = 0;
            for (i, &g) in batch.iter().enumerate() {
                if used + size(g) > seats {
                    continue;
                }
                let mut sizes: Vec<usize> = chosen.iter().map(|&c| size(batch[c])).collect();
                sizes.push(size(g));
                if pack(&sizes, &vec![0.0; sizes.len()], shape).is_none() {
                    continue;
                }
                chosen.push(i);
                used += size(g);
                if used == seats {
                    break;
                }
            }
            if used < seats || chosen.is_empty() {
                break;
            }
            let units: Vec<usize> = chosen.iter().map(|&c| batch[c]).collect();
            let sizes: Vec<usize> = units.iter().map(|&g| size(g)).collect();
            let sums: Vec<f64> = units.iter().map(|&g| rating(g) * size(g) as f64).collect();
            let teams = pack(&sizes, &sums, shape).map(|of| {
                let mut teams = vec![Vec::new(); shape.teams as usize];
                for (u, team) in of.into_iter().enumerate() {
                    teams[team].extend(groups[units[u]].members.iter().copied());
                }
                teams
            });
            let players: Vec<usize> = units
                .iter()
                .flat_map(|&g| groups[g].members.iter().copied())
                .collect();
            let index = matches.len();
            for &p in &players {
                fates[p] = Fate::Matched {
                    wait: t - arrivals[p].time,
                    index,
                };
            }
            matches.push(FormedMatch::new(scenario, t, players, teams));
            for &c in chosen.iter().rev() {
                batch.remove(c);
            }
        }
        // Whoever was not matched waits on, oldest first.
        batch.sort_unstable();
        waiting = batch;
        waiting.extend(held);
    }
    Run {
        label: format!("oracle T={}s", trim_float(period)),
        kind: Kind::Oracle { period },
        shape,
        fates,
        matches,
        notes: Vec::new(),
        failures: 0,
        lagging: None,
        ready: None,
    }
}

/// Deals units (`sizes` players with rating sums `sums`) into the teams of
/// `shape`, each whole into one team: largest first, then highest rated
/// first, each into the team with the lowest rating sum that has room,
/// backtracking when the rest would not fit. Returns each unit's team, or
/// `None` if the units cannot be placed (more players than seats, or sizes
/// that do not fit the teams).
pub fn pack(sizes: &[usize], sums: &[f64], shape: Shape) -> Option<Vec<usize>> {
    let teams = shape.teams as usize;
    let cap = shape.team_size as usize;
    if sizes.iter().sum::<usize>() > teams * cap || sizes.iter().any(|&s| s > cap) {
        return None;
    }
    let mut order: Vec<usize> = (0..sizes.len()).collect();
    order.sort_by(|&a, &b| sizes[b].cmp(&sizes[a]).then(sums[b].total_cmp(&sums[a])));
    let mut room = vec![cap; teams];
    let mut total = vec![0.0; teams];
    let mut of = vec![0; sizes.len()];
    fn place(
        k: usize,
        order: &[usize],
        sizes: &[usize],
        sums: &[f64],
        room: &mut [usize],
        total: &mut [f64],
        of: &mut [usize],
    ) -> bool {
        let Some(&u) = order.get(k) else {
            return true;
        };
        let mut candidates: Vec<usize> = (0..room.len()).filter(|&t| room[t] >= sizes[u]).collect();
        candidates.sort_by(|&a, &b| total[a].total_cmp(&total[b]).then(a.cmp(&b)));
        // For whether the rest fits only the room left matters: a team with
        // the same room as one already tried cannot do better.
        let mut tried: Vec<usize> = Vec::new();
        for t in candidates {
            if tried.contains(&room[t]) {
                continue;
            }
            tried.push(room[t]);
            room[t] -= sizes[u];
            total[t] += sums[u];
            of[u] = t;
            if place(k + 1, order, sizes, sums, room, total, of) {
                return true;
            }
            room[t] += sizes[u];
            total[t] -= sums[u];
        }
        false
    }
    place(0, &order, sizes, sums, &mut room, &mut total, &mut of).then_some(of)
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
    use crate::scenario::{Row, Source};

    fn trace(rows: &[(f64, f64)]) -> Scenario {
        Scenario::assemble(
            Source::Csv {
                path: "test".into(),
            },
            rows.iter()
                .enumerate()
                .map(|(i, (time, rating))| Row::solo(*time, format!("p{i}"), *rating))
                .collect(),
        )
        .unwrap()
    }

    fn team(n: u32) -> Shape {
        Shape::solo_team(n)
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
        let run = run(&s, team(2), 1.0, 10.0);
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
        let run = run(&s, team(3), 2.0, 4.0);
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
        let run = run(&s, team(3), 1.0, 3.0);
        assert_eq!(run.matches.len(), 1);
        // Arrives after the last batch at t = 3.
        assert_eq!(run.fates[3], Fate::Waiting);
        // Deterministic: the same input gives the same output.
        let again = super::run(&s, team(3), 1.0, 3.0);
        assert_eq!(run.matches, again.matches);
        assert_eq!(run.fates, again.fates);
    }

    #[test]
    fn longer_periods_trade_wait_for_quality() {
        let s = Scenario::poisson(50.0, 300.0, 1500.0, 300.0, 3).unwrap();
        let stats = |period: f64| {
            let r = run(&s, team(10), period, 400.0);
            let waits = crate::report::waits(&r);
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

    #[test]
    fn parties_stay_whole_and_teams_are_dealt_by_rating() {
        // 2 x 2: a duo (ratings 10, 12), four solos. The duo plays in one
        // team; the nearest solos by rating join it.
        let rows = vec![
            Row {
                party: Some("x".into()),
                ..Row::solo(0.1, "a", 10.0)
            },
            Row {
                party: Some("x".into()),
                ..Row::solo(0.1, "b", 12.0)
            },
            Row::solo(0.2, "c", 100.0),
            Row::solo(0.3, "d", 13.0),
            Row::solo(0.4, "e", 9.0),
            Row::solo(0.5, "f", 101.0),
            Row::solo(0.6, "g", 99.0),
            Row::solo(0.7, "h", 102.0),
        ];
        let s = Scenario::assemble(Source::Csv { path: "t".into() }, rows).unwrap();
        let shape = Shape {
            teams: 2,
            team_size: 2,
        };
        let run = run(&s, shape, 1.0, 5.0);
        assert_eq!(run.matches.len(), 2);
        let m = &run.matches[0];
        let names = |ps: &[usize]| -> Vec<String> {
            let mut v: Vec<String> = ps.iter().map(|&p| s.arrivals[p].player.clone()).collect();
            v.sort();
            v
        };
        assert_eq!(names(&m.players), ["a", "b", "d", "e"]);
        let teams = m.teams.as_ref().unwrap();
        assert_eq!(names(&teams[0]), ["a", "b"]);
        assert_eq!(names(&teams[1]), ["d", "e"]);
        assert_eq!(m.team_difference, Some(0.0));
        // 102 + 99 against 101 + 100.
        assert_eq!(names(&run.matches[1].players), ["c", "f", "g", "h"]);
        assert_eq!(run.matches[1].team_difference, Some(0.0));
        assert!(run.fates.iter().all(|f| matches!(f, Fate::Matched { .. })));
    }

    #[test]
    fn packing_keeps_units_whole_and_balances() {
        let two_by_five = Shape {
            teams: 2,
            team_size: 5,
        };
        // 3 + 3 + 3 + 1 cannot make two teams of 5.
        assert_eq!(pack(&[3, 3, 3, 1], &[0.0; 4], two_by_five), None);
        assert_eq!(pack(&[6], &[0.0], two_by_five), None);
        // 3 + 2 | 3 + 2 does.
        let of = pack(&[3, 3, 2, 2], &[0.0; 4], two_by_five).unwrap();
        let mut used = [0; 2];
        for (u, t) in of.iter().enumerate() {
            used[*t] += [3, 3, 2, 2][u];
        }
        assert_eq!(used, [5, 5]);
        // Solos 4, 3, 2, 1 into 2 x 2: 4 + 1 against 3 + 2.
        let of = pack(
            &[1, 1, 1, 1],
            &[4.0, 3.0, 2.0, 1.0],
            Shape {
                teams: 2,
                team_size: 2,
            },
        )
        .unwrap();
        assert_eq!(of[0], of[3]);
        assert_eq!(of[1], of[2]);
    }
}
