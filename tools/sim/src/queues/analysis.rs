//! The several-queues study's numbers: every match record re-checked
//! offline against the trace and the queues at the end, the done criteria,
//! and the waits by number of queues.

use std::collections::{HashMap, HashSet};

pub use super::waits::{
    by_queues, first_world_share, matches_per_world, ratio_of, summarize, wait_text, Summary,
};
use super::{LaneResult, Trace, Variant};
use crate::oracle::trim_float;
use crate::report::Check;

/// The criteria: players in 3 queues wait at most this share (p50)
/// of players in 1; single-queue players' p50 at most this multiple of the
/// run without multi-queue players.
pub const THREE_VS_ONE: f64 = 0.6;
pub const SINGLES_VS_BASELINE: f64 = 1.1;
/// A record's `matched_at` may precede the modelled send time of a join it
/// holds by this much (simulated s): the clock model's error.
const SLACK: f64 = 1.0;

/// What re-checking one lane found.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Violations {
    pub records: usize,
    /// Players in more than one match (or twice in one).
    pub twice: usize,
    /// Participants the lane never joined (or whose join was refused).
    pub strangers: usize,
    /// Participants matched in a world they did not queue in.
    pub wrong_world: usize,
    /// Records not `seats` players in the teams of the world's shape, or
    /// of a world outside the group.
    pub malformed: usize,
    /// Participants matched before their join was sent.
    pub early: usize,
    /// Matched players still in a queue at the end.
    pub left_behind: usize,
    /// Waiting tickets missing from a world they joined, or in one they
    /// did not join.
    pub partial: usize,
    /// Joined, neither matched nor waiting, younger than the ticket TTL.
    pub lost: usize,
    /// QUEUED replies not naming the other worlds joined.
    pub also_mismatch: usize,
    pub examples: Vec<String>,
}

impl Violations {
    fn note(&mut self, what: String) {
        if self.examples.len() < 5 {
            self.examples.push(what);
        }
    }

    pub fn clean(&self) -> bool {
        self.twice
            + self.strangers
            + self.wrong_world
            + self.malformed
            + self.early
            + self.left_behind
            + self.partial
            + self.lost
            + self.also_mismatch
            == 0
    }

    pub fn describe(&self) -> String {
        format!(
            "{} records: {} players matched twice, {} strangers, {} in a world not queued in, {} malformed, {} matched before joining; at the end {} matched still queued, {} tickets not in exactly their worlds, {} lost; {} QUEUED replies naming other worlds{}",
            self.records,
            self.twice,
            self.strangers,
            self.wrong_world,
            self.malformed,
            self.early,
            self.left_behind,
            self.partial,
            self.lost,
            self.also_mismatch,
            self.examples
                .first()
                .map_or_else(String::new, |e| format!("; e.g. {e}"))
        )
    }
}

/// Re-checks every record of `lane` and its queues at the end against the
/// trace: each record is `seats` distinct players in teams of its world
/// (one of the group); each player is an arrival the lane joined, matched
/// once, in a world it queued in, no earlier than its join; a matched
/// player waits nowhere at the end; a waiting ticket waits in exactly the
/// worlds it joined; every joined arrival younger than the TTL is matched
/// or waiting.
pub fn verify(lane: &LaneResult, trace: &Trace) -> Violations {
    let mut v = Violations {
        records: lane.records.len(),
        also_mismatch: lane.also_mismatch,
        ..Violations::default()
    };
    let index: HashMap<&str, usize> = trace
        .arrivals
        .iter()
        .enumerate()
        .map(|(i, a)| (a.player.as_str(), i))
        .collect();
    let joined = |a: usize| -> Option<&[usize]> {
        let worlds = lane.variant.joins(&trace.arrivals[a])?;
        (!lane.sent[a].is_nan()).then_some(worlds)
    };
    let mut matched: HashSet<usize> = HashSet::new();
    for (r, record) in lane.records.iter().enumerate() {
        let world = lane
            .worlds
            .iter()
            .position(|w| w == record.world_type.as_str());
        let distinct: HashSet<&str> = record.participants.iter().map(|p| p.as_str()).collect();
        let teams_ok = record.teams.as_ref().is_none_or(|teams| {
            let mut listed: Vec<&str> = teams.iter().flatten().map(|p| p.as_str()).collect();
            listed.sort_unstable();
            let mut parts: Vec<&str> = distinct.iter().copied().collect();
            parts.sort_unstable();
            listed == parts
        });
        if world.is_none() || distinct.len() != lane.seats || !teams_ok {
            v.malformed += 1;
            v.note(format!(
                "{} in {}: not {} distinct players in teams of a group world: {:?}",
                record.match_id, record.world_type, lane.seats, record.participants
            ));
        }
        for p in &record.participants {
            let Some(a) = index
                .get(p.as_str())
                .copied()
                .filter(|&a| joined(a).is_some())
            else {
                v.strangers += 1;
                v.note(format!("{}: {p} never joined", record.match_id));
                continue;
            };
            if !matched.insert(a) {
                v.twice += 1;
                v.note(format!("{}: {p} matched again", record.match_id));
            }
            if !world.is_some_and(|w| joined(a).is_some_and(|j| j.contains(&w))) {
                v.wrong_world += 1;
                v.note(format!(
                    "{}: {p} matched in {}, queued in {:?}",
                    record.match_id,
                    record.world_type,
                    joined(a).unwrap_or(&[])
                ));
            }
            if lane.matched_at[r] + SLACK < lane.sent[a] {
                v.early += 1;
                v.note(format!("{}: {p} matched before joining", record.match_id));
            }
        }
    }
    let mut waits_in: HashMap<usize, Vec<usize>> = HashMap::new();
    for (w, queue) in lane.waiting.iter().enumerate() {
        for p in queue {
            match index
                .get(p.as_str())
                .copied()
                .filter(|&a| joined(a).is_some())
            {
                Some(a) => waits_in.entry(a).or_default().push(w),
                None => {
                    v.partial += 1;
                    v.note(format!(
                        "{p} waits in {} without having joined",
                        lane.worlds[w]
                    ));
                }
            }
        }
    }
    for (&a, worlds) in &waits_in {
        let p = &trace.arrivals[a].player;
        if matched.contains(&a) {
            v.left_behind += 1;
            v.note(format!("{p} matched, yet still waits in {worlds:?}"));
        }
        let mut want = joined(a).unwrap_or(&[]).to_vec();
        let mut have = worlds.clone();
        want.sort_unstable();
        have.sort_unstable();
        if want != have {
            v.partial += 1;
            v.note(format!("{p} joined {want:?}, waits in {have:?}"));
        }
    }
    for a in 0..trace.arrivals.len() {
        let young = lane.end - lane.sent[a] < lane.ttl;
        if joined(a).is_some() && young && !matched.contains(&a) && !waits_in.contains_key(&a) {
            v.lost += 1;
            v.note(format!(
                "{} neither matched nor waiting",
                trace.arrivals[a].player
            ));
        }
    }
    v
}

/// The lanes of one rule set: (several, one each, singles only).
pub fn lanes_of(lanes: &[LaneResult]) -> Vec<[&LaneResult; 3]> {
    let mut out = Vec::new();
    for s in lanes.iter().filter(|l| l.variant == Variant::Several) {
        let find = |v| {
            lanes
                .iter()
                .find(|l| l.variant == v && l.rule_set == s.rule_set)
        };
        if let (Some(o), Some(x)) = (find(Variant::OneEach), find(Variant::SinglesOnly)) {
            out.push([s, o, x]);
        }
    }
    out
}

fn ratio_check(
    rule_set: &str,
    id: &'static str,
    what: String,
    (a, a_name): (Option<f64>, &str),
    (b, b_name): (Option<f64>, &str),
    limit: f64,
) -> Check {
    let r = ratio_of(a, b);
    Check {
        rule_set: rule_set.to_owned(),
        id,
        what,
        pass: r.is_some_and(|r| r <= limit),
        detail: format!(
            "{a_name} p50 {} s vs {b_name} {} s: {}",
            wait_text(a),
            wait_text(b),
            r.map_or_else(|| "no ratio".into(), |r| format!("{r:.3}x"))
        ),
    }
}

/// (Q1) players in the most queues (3) wait at most [`THREE_VS_ONE`] ×
/// (p50) players in 1, in the lane with several queues.
pub fn queues_check(several: &LaneResult, trace: &Trace) -> Check {
    let rows = by_queues(several, trace);
    let k = rows.last().map_or(1, |r| r.0);
    ratio_check(
        &several.rule_set,
        "Q1",
        format!(
            "players in {k} queues wait <= {}x (p50) players in 1",
            trim_float(THREE_VS_ONE)
        ),
        (
            rows.last().and_then(|r| r.1.p50_all),
            &format!("{k} queues"),
        ),
        (rows.first().and_then(|r| r.1.p50_all), "1 queue"),
        THREE_VS_ONE,
    )
}

/// (Q2) single-queue players' p50 with multi-queue players around at most
/// [`SINGLES_VS_BASELINE`] × the lane where every player queues once.
pub fn singles_check(several: &LaneResult, one_each: &LaneResult, trace: &Trace) -> Check {
    let single = |l: &LaneResult| summarize(l, trace, |a| a.queues() == 1).p50_all;
    ratio_check(
        &several.rule_set,
        "Q2",
        format!(
            "single-queue players' p50 <= {}x the run without multi-queue players (everyone in one queue, the same per-world arrival rate)",
            trim_float(SINGLES_VS_BASELINE)
        ),
        (single(several), "several queues"),
        (single(one_each), "one queue each"),
        SINGLES_VS_BASELINE,
    )
}

/// (Q3) every lane's records and queues re-checked offline.
pub fn verify_check(lanes: &[&LaneResult], trace: &Trace) -> Check {
    let found: Vec<(String, Violations)> = lanes
        .iter()
        .map(|l| (l.variant.describe().to_owned(), verify(l, trace)))
        .collect();
    Check {
        rule_set: lanes.first().map_or_else(String::new, |l| l.rule_set.clone()),
        id: "Q3",
        what: "nobody matched twice, every match's players queued in its world, no ticket lost or left in a world (every record and queue re-checked offline, every lane)".into(),
        pass: found.iter().all(|(_, v)| v.clean()),
        detail: found
            .iter()
            .map(|(l, v)| format!("{l}: {}", v.describe()))
            .collect::<Vec<_>>()
            .join("; "),
    }
}

/// The done criteria of every rule set.
pub fn criteria(lanes: &[LaneResult], trace: &Trace) -> Vec<Check> {
    let mut checks = Vec::new();
    for [s, o, x] in lanes_of(lanes) {
        checks.push(queues_check(s, trace));
        checks.push(singles_check(s, o, trace));
        checks.push(verify_check(&[s, o, x], trace));
    }
    checks
}
