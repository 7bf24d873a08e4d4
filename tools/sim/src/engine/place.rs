//! The regions scenario: where each match plays and its worst member's
//! latency there, recomputed from the trace's latencies, and the core's
//! own `region`, `latencies` and `worstLatency` checked against them.

use shared::MatchRecord;

use super::{Drive, Regional, Route};
use crate::outcome::{Place, Variant};

/// What the records of a regional lane showed.
#[derive(Debug, Default)]
pub(super) struct PlaceLog {
    records: usize,
    /// Records whose region is missing or not one the world names.
    bad_region: usize,
    /// Records whose latencies or worst latency differ from the trace's.
    mismatched: usize,
    /// Matches with a member over the cap (from the trace's latencies).
    over_cap: usize,
    /// Matches without a region every member measured (latency ignored).
    unplaced: usize,
    /// Records of a world without regions that carry a region anyway.
    stray: usize,
    example: Option<String>,
}

impl PlaceLog {
    fn note(&mut self, what: String) {
        self.example.get_or_insert(what);
    }

    /// Where the match of `players` (arrival indices) from `record` plays.
    pub(super) fn place(
        &mut self,
        route: &Route,
        drive: &Drive,
        record: &MatchRecord,
        players: &[usize],
    ) -> Option<Place> {
        let Route::Regional(r) = route else {
            return None;
        };
        let geo = drive.scenario.geo.as_ref()?;
        self.records += 1;
        let Regional {
            variant,
            regions,
            worlds,
            cap,
        } = r.as_ref();
        let region = match variant {
            Variant::Regions => {
                let named = record.region.as_deref().and_then(|n| geo.index(n));
                match named.filter(|i| regions.contains(i)) {
                    Some(i) => Some(i),
                    None => {
                        self.bad_region += 1;
                        self.note(format!(
                            "match {} has region {:?}",
                            record.match_id, record.region
                        ));
                        None
                    }
                }
            }
            Variant::BestRegionOnly => worlds
                .iter()
                .position(|w| w.name == record.world_type)
                .map(|i| regions[i]),
            Variant::LatencyIgnored => geo.best_region(players, regions).map(|(i, _)| i),
        };
        if *variant != Variant::Regions
            && (record.region.is_some() || record.worst_latency.is_some())
        {
            self.stray += 1;
        }
        let Some(region) = region else {
            self.unplaced += 1;
            return None;
        };
        let Some((worst, _)) = geo.worst_in(players, region) else {
            self.unplaced += 1;
            self.note(format!(
                "match {} plays in {} where a member measured nothing",
                record.match_id, geo.regions[region]
            ));
            return None;
        };
        if *variant == Variant::Regions {
            if f64::from(worst) > *cap {
                self.over_cap += 1;
                self.note(format!(
                    "match {} in {}: worst latency {worst} ms over the cap {cap} ms",
                    record.match_id, geo.regions[region]
                ));
            }
            let listed_agree = record.latencies.as_ref().is_some_and(|listed| {
                listed.len() == players.len()
                    && listed.iter().all(|(p, ms)| {
                        drive
                            .index
                            .get(p.as_str())
                            .is_some_and(|&i| geo.latency[i][region] == Some(*ms))
                    })
            });
            if !listed_agree || record.worst_latency != Some(worst) {
                self.mismatched += 1;
                self.note(format!(
                    "match {}: worstLatency {:?}, the trace's {worst}",
                    record.match_id, record.worst_latency
                ));
            }
        }
        Some(Place { region, worst })
    }

    /// The report's lines about it.
    pub(super) fn notes(&self, route: &Route) -> Vec<String> {
        let Route::Regional(r) = route else {
            return Vec::new();
        };
        let mut notes = Vec::new();
        let example = self
            .example
            .as_deref()
            .map_or_else(String::new, |e| format!(", e.g. {e}"));
        if r.variant == Variant::Regions {
            if self.bad_region + self.mismatched + self.over_cap == 0 {
                notes.push(format!(
                    "the region, latencies and worstLatency of all {} match records agree with the trace; no member over the cap of {} ms",
                    self.records,
                    crate::oracle::trim_float(r.cap)
                ));
            } else {
                notes.push(format!(
                    "MISMATCH: of {} match records, {} name no region of the world, {} list latencies or a worstLatency different from the trace's, {} have a member over the cap of {} ms{example}",
                    self.records,
                    self.bad_region,
                    self.mismatched,
                    self.over_cap,
                    crate::oracle::trim_float(r.cap)
                ));
            }
        }
        if self.unplaced > 0 {
            notes.push(format!(
                "{} matches have no region every member measured: left out of the latency statistics{example}",
                self.unplaced
            ));
        }
        if self.stray > 0 {
            notes.push(format!(
                "INCONSISTENT: {} match records of a world without regions carry a region",
                self.stray
            ));
        }
        notes
    }
}
