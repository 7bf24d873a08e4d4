//! The regions scenario (`--regions`): players in geographic clusters, each
//! with a latency to every region, and every rule set's world (which has a
//! `regions` rule) played three ways on the same trace (see [`Variant`]):
//! as written; "best region only", one world per region without the rule,
//! each player joining the world of its lowest-latency region; "latency
//! ignored", one world without the rule. Reports the waits and the worst
//! member's latency per match by home cluster ([`report`], [`plot`]) and
//! the done criteria ([`criteria`]).

mod lanes;
pub mod plot;
pub mod report;
#[cfg(test)]
mod tests;

pub(crate) use lanes::lanes_of;

use crate::outcome::{Fate, Kind, Run, Variant};
use crate::report::Check;
use crate::scenario::Scenario;
use crate::stats::{percentile_sorted, Dist};

/// Criterion (R1): the regions world's mean worst-member latency against
/// best region only's.
pub const LATENCY_VS_BEST_REGION: f64 = 1.2;
/// Criterion (R2): the p95 wait of the two smallest clusters against best
/// region only's.
pub const SMALL_WAIT_VS_BEST_REGION: f64 = 0.5;

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
    /// Matches with a member over the world's cap (from the trace).
    pub over_cap: usize,
    /// Matches without a known place (no region, or one not every member
    /// measured).
    pub unplaced: usize,
}

pub fn overall(scenario: &Scenario, run: &Run, cap: f64) -> Overall {
    let waits = crate::report::waits(run);
    let latencies: Vec<f64> = run
        .matches
        .iter()
        .filter_map(|m| m.place.map(|p| f64::from(p.worst)))
        .collect();
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
        over_cap: latencies.iter().filter(|l| **l > cap).count(),
        unplaced: run.matches.iter().filter(|m| m.place.is_none()).count(),
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
    /// The p95 wait of all its players, the unmatched counted as waiting
    /// longer than anyone matched (infinite when more than 5 % of them
    /// are unmatched); `None` without players.
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

/// The done criteria for every rule set (they are defined for the
/// FIFO world; a rated world's are computed for comparison): (R1) mean
/// worst-member latency <= 1.2x best region only's, (R2) the p95 wait of
/// each of the two smallest clusters <= 0.5x best region only's, (R3) no
/// match of the regions world with a member over its cap.
pub fn criteria(scenario: &Scenario, runs: &[Run]) -> Vec<Check> {
    let mut checks = Vec::new();
    for (_, list) in by_file(runs) {
        let (Some(regions), Some(best)) = (
            find(&list, Variant::Regions),
            find(&list, Variant::BestRegionOnly),
        ) else {
            continue;
        };
        let cap = variant_of(regions).map_or(f64::INFINITY, |(_, _, c)| c);
        let check = |id, what: String, pass, detail| Check {
            rule_set: regions.label.clone(),
            id,
            what,
            pass,
            detail,
        };
        let (ours, theirs) = (
            overall(scenario, regions, cap),
            overall(scenario, best, cap),
        );
        let what =
            format!("mean worst-member latency <= {LATENCY_VS_BEST_REGION}x best region only's");
        checks.push(match (ours.latency, theirs.latency) {
            (Some(o), Some(t)) => {
                let ratio = o.mean / t.mean;
                check(
                    "R1",
                    what,
                    ratio <= LATENCY_VS_BEST_REGION,
                    format!("{:.1} ms vs {:.1} ms: {ratio:.2}x", o.mean, t.mean),
                )
            }
            _ => check("R1", what, false, "no matches to compare".into()),
        });
        let (rows, best_rows) = (
            cluster_rows(scenario, regions),
            cluster_rows(scenario, best),
        );
        for c in smallest_clusters(scenario) {
            let what = format!(
                "p95 wait of {} players <= {SMALL_WAIT_VS_BEST_REGION}x best region only's",
                rows[c].region
            );
            checks.push(match (rows[c].wait_p95_all, best_rows[c].wait_p95_all) {
                (Some(o), Some(t)) => {
                    let shown = |x: f64| {
                        if x.is_finite() {
                            format!("{x:.2} s")
                        } else {
                            "unmatched (over 5 %)".to_owned()
                        }
                    };
                    // Unmatched past the p95 on our side never passes; on
                    // theirs only a finite p95 of ours does.
                    let (pass, ratio) = match (o.is_finite(), t.is_finite()) {
                        (true, true) => {
                            let r = o / t;
                            (r <= SMALL_WAIT_VS_BEST_REGION, format!("{r:.2}x"))
                        }
                        (true, false) => (true, "0x".to_owned()),
                        (false, _) => (false, "–".to_owned()),
                    };
                    check(
                        "R2",
                        what,
                        pass,
                        format!(
                            "{} vs {}: {ratio} ({} vs {} unmatched, counted as the longest waits)",
                            shown(o),
                            shown(t),
                            rows[c].unmatched,
                            best_rows[c].unmatched
                        ),
                    )
                }
                _ => check("R2", what, false, "no players to compare".into()),
            });
        }
        let mismatch = regions.notes.iter().any(|n| n.starts_with("MISMATCH"));
        checks.push(check(
            "R3",
            format!(
                "no match with a member over maxLatencyCapMs ({} ms)",
                crate::oracle::trim_float(cap)
            ),
            ours.over_cap == 0 && ours.unplaced == 0 && !mismatch,
            format!(
                "{} of {} matches over the cap, {} without a region of the world{}; worst {} ms",
                ours.over_cap,
                ours.matches,
                ours.unplaced,
                if mismatch {
                    ", and the records disagree with the trace (see Run diagnostics)"
                } else {
                    ""
                },
                ours.latency
                    .map_or_else(|| "–".into(), |d| format!("{:.0}", d.max))
            ),
        ));
    }
    checks
}
