//! The regions scenario (`--regions`): players in geographic clusters, each
//! with a latency to every region, and every rule set's world (which has a
//! `regions` rule) played three ways on the same trace (see [`Variant`]):
//! as written; "best region only", one world per region without the rule,
//! each player joining the world of its lowest-latency region; "latency
//! ignored", one world without the rule. Reports the waits and the worst
//! member's latency per match by home cluster ([`report`], [`plot`]) and
//! the done criteria ([`criteria`]).

mod criteria;
mod lanes;
pub mod plot;
pub mod report;
#[cfg(test)]
mod tests;

pub use criteria::{
    criteria, mean_worst_latency, r1, r2, r3, LatencyRatio, SmallClusterWait, Violations,
    LATENCY_VS_BEST_REGION, SMALL_WAIT_VS_BEST_REGION,
};
pub(crate) use lanes::lanes_of;

use crate::outcome::{Fate, Kind, Run, Variant};
use crate::scenario::Scenario;
use crate::stats::{percentile_sorted, Dist};

/// The variant of a regions-scenario run, its rule set file and its cap.
pub fn variant_of(run: &Run) -> Option<(Variant, &str, f64)> {
    match &run.kind {
        Kind::Regional { file, variant, cap } => Some((*variant, file.as_str(), *cap)),
        _ => None,
    }
}

/// The rule set files of the runs, in order, each with its runs by variant.
pub fn by_file(runs: &[Run]) -> Vec<(String, Vec<&Run>)> {
    let mut out: Vec<(String, Vec<&Run>)> = Vec::new();
    for run in runs {
        if let Some((_, file, _)) = variant_of(run) {
            match out.iter_mut().find(|(f, _)| f == file) {
                Some((_, list)) => list.push(run),
                None => out.push((file.to_owned(), vec![run])),
            }
        }
    }
    out
}

/// The run of `variant` among `runs`.
pub fn find<'a>(runs: &[&'a Run], variant: Variant) -> Option<&'a Run> {
    runs.iter()
        .copied()
        .find(|r| variant_of(r).is_some_and(|(v, _, _)| v == variant))
}

/// One matcher's numbers over all players.
#[derive(Debug, Clone, PartialEq)]
pub struct Overall {
    pub matches: usize,
    pub matched: usize,
    pub unmatched: usize,
    /// Waits of matched players, simulated seconds.
    pub wait: Option<Dist>,
    /// The worst member's latency of each match, ms.
    pub latency: Option<Dist>,
    /// Matches whose members do not all share one home region.
    pub mixed: usize,
}

/// The worst member's latency of each match with a known place, where it
/// plays (ms): what (R1) averages and (R3) checks against the cap.
pub fn worst_latencies(run: &Run) -> Vec<f64> {
    run.matches
        .iter()
        .filter_map(|m| m.place.map(|p| f64::from(p.worst)))
        .collect()
}

pub fn overall(scenario: &Scenario, run: &Run) -> Overall {
    let waits = crate::report::waits(run);
    let latencies = worst_latencies(run);
    let home = |p: usize| scenario.geo.as_ref().map(|g| g.home[p]);
    let mixed = run
        .matches
        .iter()
        .filter(|m| m.players.iter().any(|&p| home(p) != home(m.players[0])))
        .count();
    Overall {
        matches: run.matches.len(),
        matched: waits.len(),
        unmatched: run.fates.len() - waits.len(),
        wait: Dist::of(&waits),
        latency: Dist::of(&latencies),
        mixed,
    }
}

/// One home cluster's numbers under one matcher.
#[derive(Debug, Clone, PartialEq)]
pub struct ClusterRow {
    pub region: String,
    pub players: usize,
    pub unmatched: usize,
    /// Waits of its matched players, simulated seconds.
    pub wait: Option<Dist>,
    /// (R2)'s statistic: the p95 wait of all its players, the unmatched
    /// counted as waiting longer than anyone matched
    /// ([`p95_counting_unmatched`]; infinite when more than 5 % of them are
    /// unmatched); `None` without players.
    pub wait_p95_all: Option<f64>,
    /// For each of its matched players, the worst member's latency of its
    /// match, ms.
    pub latency: Option<Dist>,
    /// Matched players whose match plays outside their home region.
    pub away: usize,
}

/// One row per home region of the trace (empty without latencies).
pub fn cluster_rows(scenario: &Scenario, run: &Run) -> Vec<ClusterRow> {
    let Some(geo) = &scenario.geo else {
        return Vec::new();
    };
    let n = geo.regions.len();
    let mut waits = vec![Vec::new(); n];
    let mut latencies = vec![Vec::new(); n];
    let mut players = vec![0; n];
    let mut unmatched = vec![0; n];
    let mut away = vec![0; n];
    for (p, fate) in run.fates.iter().enumerate() {
        let h = geo.home[p];
        players[h] += 1;
        match fate {
            Fate::Matched { wait, index } => {
                waits[h].push(*wait);
                if let Some(place) = run.matches.get(*index).and_then(|m| m.place) {
                    latencies[h].push(f64::from(place.worst));
                    if place.region != h {
                        away[h] += 1;
                    }
                }
            }
            _ => unmatched[h] += 1,
        }
    }
    (0..n)
        .map(|h| ClusterRow {
            region: geo.regions[h].clone(),
            players: players[h],
            unmatched: unmatched[h],
            wait: Dist::of(&waits[h]),
            wait_p95_all: p95_counting_unmatched(&waits[h], unmatched[h]),
            latency: Dist::of(&latencies[h]),
            away: away[h],
        })
        .collect()
}

/// The nearest-rank p95 of `waits` plus `unmatched` more players who
/// never got a match, counted as waiting longer than anyone matched: so an
/// unmatched player can only raise it, and leftovers at the end of a run
/// (too few to fill a match) do not decide the criterion by count alone.
pub fn p95_counting_unmatched(waits: &[f64], unmatched: usize) -> Option<f64> {
    let mut all = waits.to_vec();
    all.extend(std::iter::repeat_n(f64::INFINITY, unmatched));
    all.sort_by(f64::total_cmp);
    (!all.is_empty()).then(|| percentile_sorted(&all, 95.0))
}

/// The two smallest home clusters of the trace (fewest players; ties: the
/// later region), smallest last.
pub fn smallest_clusters(scenario: &Scenario) -> Vec<usize> {
    let Some(geo) = &scenario.geo else {
        return Vec::new();
    };
    let sizes = geo.cluster_sizes();
    let mut order: Vec<usize> = (0..sizes.len()).collect();
    order.sort_by_key(|&r| (std::cmp::Reverse(sizes[r]), r));
    order.into_iter().rev().take(2).rev().collect()
}
