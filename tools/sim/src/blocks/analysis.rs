//! The block-list study's numbers: every match record re-checked offline
//! against the lists, the done criteria, and the waits overall and by
//! group of players.

use std::collections::HashSet;

use shared::MatchRecord;

use super::population::{avoided_by_bands, band_of, list_bands, Band};
use super::{LaneResult, Population, Trace, Variant};
use crate::oracle::trim_float;
use crate::outcome::Fate;
use crate::report::Check;
use crate::stats::Dist;

/// The criterion: matches formed with lists at least this share of
/// those formed without, on the same trace.
pub const MATCHES_VS_WITHOUT: f64 = 0.95;

/// What re-checking records against the lists found.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Violations {
    pub checked: usize,
    /// Records holding at least one pair where either avoids the other.
    pub records: usize,
    /// Such pairs in all.
    pub pairs: usize,
    /// Records that are not `seats` distinct players of the population
    /// (in teams of the world's shape, when it has teams).
    pub malformed: usize,
    /// The first few, described.
    pub examples: Vec<String>,
}

impl Violations {
    fn note(&mut self, what: String) {
        if self.examples.len() < 5 {
            self.examples.push(what);
        }
    }
}

/// Re-checks every record: its participants are `seats` distinct players
/// of the population (its teams, if any, hold exactly them), and no two of
/// them are a pair where either avoids the other.
pub fn violations(records: &[MatchRecord], population: &Population, seats: usize) -> Violations {
    let mut v = Violations::default();
    for r in records {
        v.checked += 1;
        let ids: Vec<Option<usize>> = r
            .participants
            .iter()
            .map(|p| population.index.get(p.as_str()).copied())
            .collect();
        let distinct: HashSet<usize> = ids.iter().flatten().copied().collect();
        let teams_ok = r.teams.as_ref().is_none_or(|teams| {
            let mut listed: Vec<&str> = teams.iter().flatten().map(|p| p.as_str()).collect();
            let mut parts: Vec<&str> = r.participants.iter().map(|p| p.as_str()).collect();
            listed.sort_unstable();
            parts.sort_unstable();
            listed == parts
        });
        if ids.len() != seats || distinct.len() != seats || !teams_ok {
            v.malformed += 1;
            v.note(format!(
                "{}: not {seats} distinct known players in its teams: {:?}",
                r.match_id, r.participants
            ));
        }
        let ids: Vec<usize> = ids.into_iter().flatten().collect();
        let mut found = 0;
        for (x, &a) in ids.iter().enumerate() {
            for &b in &ids[x + 1..] {
                if a != b && population.blocked(a, b) {
                    found += 1;
                    v.note(format!(
                        "{}: {} and {} ({} avoids {})",
                        r.match_id,
                        population.ids[a],
                        population.ids[b],
                        if population.avoids[a].contains(&b) {
                            &population.ids[a]
                        } else {
                            &population.ids[b]
                        },
                        if population.avoids[a].contains(&b) {
                            &population.ids[b]
                        } else {
                            &population.ids[a]
                        },
                    ));
                }
            }
        }
        if found > 0 {
            v.records += 1;
            v.pairs += found;
        }
    }
    v
}

/// (B1): matches formed with lists ≥ [`MATCHES_VS_WITHOUT`] × without.
pub fn matches_check(rule_set: &str, with: usize, without: usize) -> Check {
    let ratio = (without > 0).then(|| with as f64 / without as f64);
    Check {
        rule_set: rule_set.to_owned(),
        id: "B1",
        what: format!(
            "matches formed with block lists >= {}x those formed without, same trace",
            trim_float(MATCHES_VS_WITHOUT)
        ),
        pass: ratio.is_some_and(|r| r >= MATCHES_VS_WITHOUT),
        detail: match ratio {
            Some(r) => format!("{with} with lists vs {without} without: {r:.3}x"),
            None => format!("{with} with lists vs none without: no ratio"),
        },
    }
}

/// (B2): no record of the lane with lists holds a blocked pair, and every
/// record is well formed.
pub fn violations_check(rule_set: &str, v: &Violations) -> Check {
    Check {
        rule_set: rule_set.to_owned(),
        id: "B2",
        what: "no match of the lane with lists puts two players together where either avoids the other (every record re-checked offline against the lists)".into(),
        pass: v.records == 0 && v.malformed == 0,
        detail: format!(
            "{} records re-checked: {} with a blocked pair ({} pairs), {} malformed{}",
            v.checked,
            v.records,
            v.pairs,
            v.malformed,
            v.examples
                .first()
                .map_or_else(String::new, |e| format!("; e.g. {e}"))
        ),
    }
}

/// The lanes of one rule set: (with lists, without lists).
pub fn pairs_of(lanes: &[LaneResult]) -> Vec<(&LaneResult, &LaneResult)> {
    let mut out = Vec::new();
    for with in lanes.iter().filter(|l| l.variant == Variant::WithLists) {
        if let Some(without) = lanes
            .iter()
            .find(|l| l.variant == Variant::WithoutLists && l.rule_set == with.rule_set)
        {
            out.push((with, without));
        }
    }
    out
}

/// The done criteria of every rule set.
pub fn criteria(lanes: &[LaneResult], population: &Population) -> Vec<Check> {
    let mut checks = Vec::new();
    for (with, without) in pairs_of(lanes) {
        checks.push(matches_check(
            &with.rule_set,
            with.records.len(),
            without.records.len(),
        ));
        checks.push(violations_check(
            &with.rule_set,
            &violations(&with.records, population, with.seats),
        ));
    }
    checks
}

/// A lane's arrivals in all.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Summary {
    pub arrivals: usize,
    pub matches: usize,
    pub matched: usize,
    pub expired: usize,
    pub waiting: usize,
    pub refused: usize,
    /// Waits of the matched arrivals (simulated s).
    pub wait: Option<Dist>,
}

impl Summary {
    pub fn unmatched(&self) -> usize {
        self.expired + self.waiting + self.refused
    }
}

/// The summary of the arrivals `which` selects (all: `|_| true`).
pub fn summarize(lane: &LaneResult, trace: &Trace, which: impl Fn(usize) -> bool) -> Summary {
    let mut s = Summary::default();
    let mut waits = Vec::new();
    for (a, fate) in lane.fates.iter().enumerate() {
        if !which(trace.arrivals[a].1) {
            continue;
        }
        s.arrivals += 1;
        match fate {
            Fate::Matched { wait, .. } => {
                s.matched += 1;
                waits.push(*wait);
            }
            Fate::Expired | Fate::Removed => s.expired += 1,
            Fate::Waiting => s.waiting += 1,
            Fate::Refused => s.refused += 1,
        }
    }
    s.matches = lane.records.len();
    s.wait = Dist::of(&waits);
    s
}

/// One way of grouping the players: a title, the bands and each player's
/// value.
pub struct Grouping {
    pub title: &'static str,
    pub bands: Vec<Band>,
    pub value: Vec<usize>,
}

impl Grouping {
    /// By how many others a player avoids.
    pub fn by_list_size(population: &Population) -> Self {
        Self {
            title: "players they avoid",
            bands: list_bands(population.sizes.1),
            value: population.avoids.iter().map(Vec::len).collect(),
        }
    }

    /// By how many others avoid a player.
    pub fn by_avoided_by(population: &Population) -> Self {
        let (lo, hi) = population.sizes;
        Self {
            title: "players avoiding them",
            bands: avoided_by_bands((lo + hi) as f64 / 2.0),
            value: population.avoided_by.clone(),
        }
    }

    /// The band of player `p`.
    pub fn of(&self, p: usize) -> usize {
        band_of(&self.bands, self.value[p])
    }

    /// How many players of the population fall in each band.
    pub fn players(&self) -> Vec<usize> {
        let mut n = vec![0; self.bands.len()];
        for p in 0..self.value.len() {
            n[self.of(p)] += 1;
        }
        n
    }

    /// Per band, the summary of `lane`'s arrivals of its players.
    pub fn rows(&self, lane: &LaneResult, trace: &Trace) -> Vec<Summary> {
        (0..self.bands.len())
            .map(|b| summarize(lane, trace, |p| self.of(p) == b))
            .collect()
    }
}

/// `a / b` as `0.00x`, or `–`.
pub fn ratio(a: Option<f64>, b: Option<f64>) -> String {
    match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => format!("{:.2}x", a / b),
        _ => "–".into(),
    }
}
