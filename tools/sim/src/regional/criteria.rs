//! The regions scenario's done criteria, each defined once: [`r1`], [`r2`]
//! and [`r3`] compute the statistic and the verdict; the report
//! ([`criteria`], the cluster table), the tests and the analysis read them
//! from here and nowhere else. The definitions in words:
//! docs/simulator.md, "Criteria: one definition each".

use super::{by_file, cluster_rows, find, variant_of, worst_latencies, ClusterRow};
use crate::outcome::{Run, Variant};
use crate::report::Check;
use crate::scenario::Scenario;
use crate::stats::Dist;

/// Criterion (R1): the regions world's mean worst-member latency against
/// best region only's.
pub const LATENCY_VS_BEST_REGION: f64 = 1.2;
/// Criterion (R2): the p95 wait of the two smallest clusters against best
/// region only's.
pub const SMALL_WAIT_VS_BEST_REGION: f64 = 0.5;

/// (R1)'s statistic of one run: the mean, over its matches with a known
/// place, of the worst member's latency where the match plays (ms; from
/// the trace's latencies). `None` without such matches.
pub fn mean_worst_latency(run: &Run) -> Option<f64> {
    Dist::of(&worst_latencies(run)).map(|d| d.mean)
}

/// (R1): the regions world's [`mean_worst_latency`] against best region
/// only's on the same trace.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LatencyRatio {
    pub ours: f64,
    pub theirs: f64,
    pub ratio: f64,
    /// `ratio <= LATENCY_VS_BEST_REGION`.
    pub pass: bool,
}

/// (R1), the one definition. `None` when either run formed no placed match.
pub fn r1(regions: &Run, best: &Run) -> Option<LatencyRatio> {
    let (ours, theirs) = (mean_worst_latency(regions)?, mean_worst_latency(best)?);
    let ratio = ours / theirs;
    Some(LatencyRatio {
        ours,
        theirs,
        ratio,
        pass: ratio <= LATENCY_VS_BEST_REGION,
    })
}

/// (R2) for one home cluster: its players' p95 wait in the regions world
/// against best region only's, each counting the cluster's unmatched
/// players as waiting longer than anyone matched
/// ([`super::p95_counting_unmatched`], the cluster rows' `wait_p95_all`).
#[derive(Debug, Clone, PartialEq)]
pub struct SmallClusterWait {
    /// The cluster (index into the trace's regions) and its name.
    pub cluster: usize,
    pub region: String,
    /// Infinite when more than 5 % of the cluster is unmatched.
    pub ours: f64,
    pub theirs: f64,
    /// `ours / theirs`; 0 when only theirs is infinite; `None` when ours is.
    pub ratio: Option<f64>,
    /// The cluster's unmatched players: (regions, best region only).
    pub unmatched: (usize, usize),
    /// A finite p95 of ours at most `SMALL_WAIT_VS_BEST_REGION` × theirs
    /// (or theirs infinite).
    pub pass: bool,
}

/// (R2), the one definition: one entry per cluster of
/// [`super::smallest_clusters`] (`None` for a cluster without players in
/// either run).
pub fn r2(
    scenario: &Scenario,
    regions: &Run,
    best: &Run,
) -> Vec<(usize, Option<SmallClusterWait>)> {
    let (ours, theirs) = (
        cluster_rows(scenario, regions),
        cluster_rows(scenario, best),
    );
    super::smallest_clusters(scenario)
        .into_iter()
        .map(|c| (c, small_cluster_wait(c, &ours[c], &theirs[c])))
        .collect()
}

fn small_cluster_wait(
    cluster: usize,
    ours: &ClusterRow,
    theirs: &ClusterRow,
) -> Option<SmallClusterWait> {
    let (o, t) = (ours.wait_p95_all?, theirs.wait_p95_all?);
    // Unmatched past the p95 on our side never passes; on theirs only a
    // finite p95 of ours does.
    let (pass, ratio) = match (o.is_finite(), t.is_finite()) {
        (true, true) => {
            let r = o / t;
            (r <= SMALL_WAIT_VS_BEST_REGION, Some(r))
        }
        (true, false) => (true, Some(0.0)),
        (false, _) => (false, None),
    };
    Some(SmallClusterWait {
        cluster,
        region: ours.region.clone(),
        ours: o,
        theirs: t,
        ratio,
        unmatched: (ours.unmatched, theirs.unmatched),
        pass,
    })
}

/// (R3) of the regions world: its matches over the cap (from the trace's
/// latencies), those without a place among the world's regions, and
/// whether the core's records disagreed with the trace (the run's
/// `MISMATCH` notes).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Violations {
    pub matches: usize,
    pub over_cap: usize,
    pub unplaced: usize,
    pub records_disagree: bool,
    /// The worst member's latency of its worst match (ms).
    pub worst: Option<f64>,
}

impl Violations {
    pub fn pass(&self) -> bool {
        self.over_cap == 0 && self.unplaced == 0 && !self.records_disagree
    }
}

/// (R3), the one definition.
pub fn r3(run: &Run, cap: f64) -> Violations {
    let latencies = worst_latencies(run);
    Violations {
        matches: run.matches.len(),
        over_cap: latencies.iter().filter(|l| **l > cap).count(),
        unplaced: run.matches.iter().filter(|m| m.place.is_none()).count(),
        records_disagree: run.notes.iter().any(|n| n.starts_with("MISMATCH")),
        worst: Dist::of(&latencies).map(|d| d.max),
    }
}

fn seconds(x: f64) -> String {
    if x.is_finite() {
        format!("{x:.2} s")
    } else {
        "unmatched (over 5 %)".to_owned()
    }
}

/// The done criteria for every rule set (they are defined for the
/// FIFO world; a rated world's are computed for comparison), as the report
/// shows them: [`r1`], [`r2`] for each of the two smallest clusters, [`r3`].
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
        let what =
            format!("mean worst-member latency <= {LATENCY_VS_BEST_REGION}x best region only's");
        checks.push(match r1(regions, best) {
            Some(r) => check(
                "R1",
                what,
                r.pass,
                format!("{:.1} ms vs {:.1} ms: {:.2}x", r.ours, r.theirs, r.ratio),
            ),
            None => check("R1", what, false, "no matches to compare".into()),
        });
        let names = scenario
            .geo
            .as_ref()
            .map(|g| g.regions.clone())
            .unwrap_or_default();
        for (c, r) in r2(scenario, regions, best) {
            let what = format!(
                "p95 wait of {} players <= {SMALL_WAIT_VS_BEST_REGION}x best region only's",
                names[c]
            );
            checks.push(match r {
                Some(r) => check(
                    "R2",
                    what,
                    r.pass,
                    format!(
                        "{} vs {}: {} ({} vs {} unmatched, counted as the longest waits)",
                        seconds(r.ours),
                        seconds(r.theirs),
                        match r.ratio {
                            Some(_) if !r.theirs.is_finite() => "0x".to_owned(),
                            Some(x) => format!("{x:.2}x"),
                            None => "–".to_owned(),
                        },
                        r.unmatched.0,
                        r.unmatched.1
                    ),
                ),
                None => check("R2", what, false, "no players to compare".into()),
            });
        }
        let v = r3(regions, cap);
        checks.push(check(
            "R3",
            format!(
                "no match with a member over maxLatencyCapMs ({} ms)",
                crate::oracle::trim_float(cap)
            ),
            v.pass(),
            format!(
                "{} of {} matches over the cap, {} without a region of the world{}; worst {} ms",
                v.over_cap,
                v.matches,
                v.unplaced,
                if v.records_disagree {
                    ", and the records disagree with the trace (see Run diagnostics)"
                } else {
                    ""
                },
                v.worst.map_or_else(|| "–".into(), |w| format!("{w:.0}"))
            ),
        ));
    }
    checks
}
