//! The several-queues study's waits: per group of arrivals of a lane,
//! with the players never matched counted as waiting longest; and where
//! the matches formed.

use super::{Arrival, LaneResult, Trace};
use crate::outcome::Fate;
use crate::stats::{percentile_sorted, Dist};

/// Waits of a set of arrivals in one lane.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Summary {
    /// Arrivals the lane joined.
    pub arrivals: usize,
    pub matched: usize,
    /// Still waiting at the end, or expired.
    pub unmatched: usize,
    pub refused: usize,
    /// Waits of the matched arrivals (simulated s).
    pub wait: Option<Dist>,
    /// p50 and p95 with the unmatched counted as waiting longer than
    /// anyone matched (`INFINITY` when the percentile falls among them).
    pub p50_all: Option<f64>,
    pub p95_all: Option<f64>,
}

/// The summary of the arrivals of `lane` that `which` selects.
pub fn summarize(lane: &LaneResult, trace: &Trace, which: impl Fn(&Arrival) -> bool) -> Summary {
    let mut s = Summary::default();
    let mut waits = Vec::new();
    for (a, fate) in lane.fates.iter().enumerate() {
        let Some(fate) = fate else { continue };
        if !which(&trace.arrivals[a]) {
            continue;
        }
        s.arrivals += 1;
        match fate {
            Fate::Matched { wait, .. } => {
                s.matched += 1;
                waits.push(*wait);
            }
            Fate::Refused => s.refused += 1,
            _ => s.unmatched += 1,
        }
    }
    s.wait = Dist::of(&waits);
    waits.sort_by(f64::total_cmp);
    waits.extend(std::iter::repeat_n(f64::INFINITY, s.unmatched));
    if !waits.is_empty() {
        s.p50_all = Some(percentile_sorted(&waits, 50.0));
        s.p95_all = Some(percentile_sorted(&waits, 95.0));
    }
    s
}

/// Per number of queues `k` (1, 2, … as the trace's mix), the summary of
/// the arrivals queuing in `k` worlds (in the trace: the lane may join
/// them in fewer).
pub fn by_queues(lane: &LaneResult, trace: &Trace) -> Vec<(usize, Summary)> {
    (1..=trace.mix.len())
        .map(|k| (k, summarize(lane, trace, |a| a.queues() == k)))
        .collect()
}

/// `a / b` when both are finite and `b > 0`.
pub fn ratio_of(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(a), Some(b)) if a.is_finite() && b.is_finite() && b > 0.0 => Some(a / b),
        _ => None,
    }
}

/// A wait for the tables: seconds, or `–`, or "unmatched".
pub fn wait_text(v: Option<f64>) -> String {
    match v {
        None => "–".into(),
        Some(x) if x.is_infinite() => "unmatched".into(),
        Some(x) if x >= 100.0 => format!("{x:.0}"),
        Some(x) if x >= 10.0 => format!("{x:.1}"),
        Some(x) => format!("{x:.2}"),
    }
}

/// Per world (index), the matches formed in it.
pub fn matches_per_world(lane: &LaneResult) -> Vec<usize> {
    let mut n = vec![0; lane.worlds.len()];
    for r in &lane.records {
        if let Some(w) = lane.worlds.iter().position(|w| w == r.world_type.as_str()) {
            n[w] += 1;
        }
    }
    n
}

/// Of the matched arrivals queuing in `k` worlds, the share matched in the
/// world they listed first.
pub fn first_world_share(lane: &LaneResult, trace: &Trace, k: usize) -> Option<f64> {
    let (mut first, mut all) = (0, 0);
    for (a, fate) in lane.fates.iter().enumerate() {
        let (Some(Fate::Matched { index, .. }), arrival) = (fate, &trace.arrivals[a]) else {
            continue;
        };
        if arrival.queues() != k {
            continue;
        }
        all += 1;
        if lane.records[*index].world_type.as_str() == lane.worlds[arrival.worlds[0]] {
            first += 1;
        }
    }
    (all > 0).then(|| first as f64 / all as f64)
}
