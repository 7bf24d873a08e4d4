//! Statistics of each run, the acceptance checks ([`checks`]) and the
//! Markdown report ([`markdown`]).

mod checks;
mod markdown;
#[cfg(test)]
mod tests;

pub use checks::{acceptance, Check};
pub use markdown::{
    checks_table, decile_table, party_table, ready_table, render, summary_table, teams_table,
    ticking, write_header, Context,
};

use crate::frontier::{Frontier, Point};
use crate::outcome::{Fate, Kind, Run};
use crate::scenario::Scenario;
use crate::stats::{deciles, Dist};

/// Acceptance limits (the numbers).
pub const SPREAD_VS_FIFO: f64 = 0.25;
pub const SPREAD_VS_FRONTIER: f64 = 1.25;
pub const OUTLIER_Z: f64 = 3.0;
/// Check (e): a team world's mean team-average difference against its
/// FIFO-filled baseline's.
pub const TEAM_DIFFERENCE_VS_FIFO: f64 = 0.25;
pub const OUTLIER_TICKS: f64 = 2.0;
/// The matcher's tick, in simulated seconds.
pub const TICK_SECONDS: f64 = 1.0;

/// One matcher's numbers.
#[derive(Debug, Clone, PartialEq)]
pub struct Summary {
    pub label: String,
    pub matches: usize,
    pub matched: usize,
    pub expired: usize,
    /// Removed by a ready check (declined, or did not answer in time).
    pub removed: usize,
    pub waiting: usize,
    pub refused: usize,
    /// Waits of matched players, simulated seconds.
    pub wait: Option<Dist>,
    /// Spreads of matches.
    pub spread: Option<Dist>,
}

impl Summary {
    pub fn unmatched(&self) -> usize {
        self.expired + self.removed + self.waiting + self.refused
    }
}

pub fn waits(run: &Run) -> Vec<f64> {
    run.fates
        .iter()
        .filter_map(|f| match f {
            Fate::Matched { wait, .. } => Some(*wait),
            _ => None,
        })
        .collect()
}

pub fn summarize(run: &Run) -> Summary {
    let count = |want: fn(&Fate) -> bool| run.fates.iter().filter(|f| want(f)).count();
    let spreads: Vec<f64> = run.matches.iter().map(|m| m.spread).collect();
    Summary {
        label: run.label.clone(),
        matches: run.matches.len(),
        matched: count(|f| matches!(f, Fate::Matched { .. })),
        expired: count(|f| matches!(f, Fate::Expired)),
        removed: count(|f| matches!(f, Fate::Removed)),
        waiting: count(|f| matches!(f, Fate::Waiting)),
        refused: count(|f| matches!(f, Fate::Refused)),
        wait: Dist::of(&waits(run)),
        spread: Dist::of(&spreads),
    }
}

/// Parties whose members did not all share one fate: matched into
/// different matches or teams, or some matched and others not.
pub fn parties_split(scenario: &Scenario, run: &Run) -> usize {
    let mut split = 0;
    for g in scenario.groups.iter().filter(|g| g.is_party()) {
        let first = run.fates[g.members[0]];
        let whole = match first {
            Fate::Matched { index, .. } => {
                let m = &run.matches[index];
                let team_of = |p: usize| {
                    m.teams
                        .as_ref()
                        .map(|teams| teams.iter().position(|t| t.contains(&p)))
                };
                let team = team_of(g.members[0]);
                g.members.iter().all(|&p| {
                    matches!(run.fates[p], Fate::Matched { index: i, .. } if i == index)
                        && team_of(p) == team
                })
            }
            _ => g
                .members
                .iter()
                .all(|&p| std::mem::discriminant(&run.fates[p]) == std::mem::discriminant(&first)),
        };
        if !whole {
            split += 1;
        }
    }
    split
}

/// The team-average differences of a run's matches (matches with teams).
pub fn team_differences(run: &Run) -> Vec<f64> {
    run.matches
        .iter()
        .filter_map(|m| m.team_difference)
        .collect()
}

/// Waits of the players of one party size.
#[derive(Debug, Clone, PartialEq)]
pub struct PartyRow {
    pub size: u32,
    pub groups: usize,
    pub players: usize,
    pub unmatched: usize,
    pub wait: Option<Dist>,
}

/// One row per party size of the trace (1 = solo).
pub fn party_rows(scenario: &Scenario, run: &Run) -> Vec<PartyRow> {
    scenario
        .party_sizes()
        .into_iter()
        .map(|size| {
            let groups: Vec<_> = scenario
                .groups
                .iter()
                .filter(|g| g.members.len() as u32 == size)
                .collect();
            let mut waits = Vec::new();
            let mut unmatched = 0;
            for g in &groups {
                for &p in &g.members {
                    match run.fates[p] {
                        Fate::Matched { wait, .. } => waits.push(wait),
                        _ => unmatched += 1,
                    }
                }
            }
            PartyRow {
                size,
                groups: groups.len(),
                players: groups.len() * size as usize,
                unmatched,
                wait: Dist::of(&waits),
            }
        })
        .collect()
}

/// Waits of one rating decile.
#[derive(Debug, Clone, PartialEq)]
pub struct DecileRow {
    /// Rating range of the decile.
    pub lo: f64,
    pub hi: f64,
    pub players: usize,
    pub unmatched: usize,
    pub wait: Option<Dist>,
}

/// Deciles of the trace's ratings (the same for every run).
pub struct Deciles {
    of: Vec<usize>,
    ranges: Vec<(f64, f64)>,
}

impl Deciles {
    pub fn new(scenario: &Scenario) -> Self {
        let ratings: Vec<f64> = scenario.arrivals.iter().map(|a| a.rating).collect();
        let (of, ranges) = deciles(&ratings);
        Self { of, ranges }
    }

    pub fn rows(&self, run: &Run) -> Vec<DecileRow> {
        let mut waits = vec![Vec::new(); 10];
        let mut players = [0usize; 10];
        let mut unmatched = [0usize; 10];
        for (i, fate) in run.fates.iter().enumerate() {
            let d = self.of[i];
            players[d] += 1;
            match fate {
                Fate::Matched { wait, .. } => waits[d].push(*wait),
                _ => unmatched[d] += 1,
            }
        }
        (0..10)
            .map(|d| DecileRow {
                lo: self.ranges[d].0,
                hi: self.ranges[d].1,
                players: players[d],
                unmatched: unmatched[d],
                wait: Dist::of(&waits[d]),
            })
            .collect()
    }
}

/// The oracle frontier of a run set.
pub fn frontier(runs: &[Run]) -> Frontier {
    Frontier::new(
        runs.iter()
            .filter_map(|r| match r.kind {
                Kind::Oracle { period } => {
                    let s = summarize(r);
                    Some(Point {
                        period,
                        mean_wait: s.wait?.mean,
                        mean_spread: s.spread?.mean,
                    })
                }
                _ => None,
            })
            .collect(),
    )
}
