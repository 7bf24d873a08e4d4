//! The role-queue study's numbers: every match record re-checked offline
//! (by the rules oracle and against the trace), the targets, and
//! the waits by role offered, by number of roles offered and over time.

use std::collections::{BTreeSet, HashSet};

use shared::config::AttributeCatalog;
use shared::{MatchRecord, World};

use super::arrivals::{Group, Mix, Offer, Role, Trace};
use super::{LaneResult, Quotas, Variant};
use crate::attributes::percentile_counting_unmatched;
use crate::oracle::trim_float;
use crate::outcome::Fate;
use crate::report::Check;
use crate::stats::Dist;

/// The target: the p95 wait of the scarcest role at most this
/// many times the role-agnostic world's p95.
pub const SCARCEST_VS_AGNOSTIC: f64 = 2.0;
/// The target: players offering two roles wait at most this share
/// of what players offering one wait (p50).
pub const TWO_VS_ONE: f64 = 0.7;

/// What a lane's records must be.
#[derive(Debug, Clone, PartialEq)]
pub struct Spec {
    /// The roles attribute.
    pub attribute: String,
    pub seats: usize,
    pub teams: usize,
    /// The quota rule in force (`None`: role-agnostic).
    pub quotas: Option<Quotas>,
}

/// What re-checking a lane's records found.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Verdict {
    pub checked: usize,
    /// Records the rules oracle (`shared::rules::recheck`) objects to.
    pub objections: usize,
    /// Records that are not `seats` distinct players of the trace in teams
    /// of the world's shape.
    pub malformed: usize,
    /// Participants whose recorded roles attribute is not what they sent.
    pub misrecorded: usize,
    /// Records of a role queue whose roles, recounted here from the trace,
    /// break the quotas or give someone a role they did not offer (or
    /// none).
    pub role_breaches: usize,
    /// Records that carry `roles`.
    pub with_roles: usize,
    /// The first few problems, described.
    pub examples: Vec<String>,
}

impl Verdict {
    fn note(&mut self, what: String) {
        if self.examples.len() < 5 {
            self.examples.push(what);
        }
    }

    /// Nothing found.
    pub fn clean(&self) -> bool {
        self.objections + self.malformed + self.misrecorded + self.role_breaches == 0
    }

    /// One line for the diagnostics.
    pub fn describe(&self) -> String {
        format!(
            "{}{} records re-checked: the rules oracle (shared::rules::recheck) objects to {}; {} malformed; {} participants' recorded roles differ from what they sent; {} break the quotas recounted from the trace; {} carry roles{}",
            if self.clean() { "" } else { "VIOLATION: " },
            self.checked,
            self.objections,
            self.malformed,
            self.misrecorded,
            self.role_breaches,
            self.with_roles,
            self.examples
                .first()
                .map_or_else(String::new, |e| format!("; e.g. {e}"))
        )
    }
}

/// Re-checks every record: `seats` distinct players of the trace, in
/// `teams` teams of equal size listing exactly them; each participant's
/// recorded roles attribute the roles it sent; with a quota rule, a role
/// for every participant, one it offered, and every team (or the match)
/// within each role's bounds, recounted from the trace; and, given the
/// world, the rules oracle's verdict (`shared::rules::recheck`).
pub fn verdict(
    records: &[MatchRecord],
    trace: &Trace,
    spec: &Spec,
    oracle: Option<(&World, &AttributeCatalog)>,
) -> Verdict {
    let mut v = Verdict::default();
    for r in records {
        v.checked += 1;
        let id = r.match_id.as_str();
        if let Some((world, catalog)) = oracle {
            if let Err(e) = shared::rules::recheck(world, catalog, r) {
                v.objections += 1;
                v.note(e);
            }
        }
        let arrivals: Vec<Option<usize>> = r
            .participants
            .iter()
            .map(|p| trace.index.get(p.as_str()).copied())
            .collect();
        let distinct: HashSet<usize> = arrivals.iter().flatten().copied().collect();
        let per_team = spec.seats / spec.teams.max(1);
        let teams_ok = if spec.teams > 1 {
            r.teams.as_ref().is_some_and(|teams| {
                let mut listed: Vec<&str> = teams.iter().flatten().map(|p| p.as_str()).collect();
                let mut parts: Vec<&str> = r.participants.iter().map(|p| p.as_str()).collect();
                listed.sort_unstable();
                parts.sort_unstable();
                teams.len() == spec.teams
                    && teams.iter().all(|t| t.len() == per_team)
                    && listed == parts
            })
        } else {
            true
        };
        if arrivals.len() != spec.seats || distinct.len() != spec.seats || !teams_ok {
            v.malformed += 1;
            v.note(format!(
                "{id}: not {} distinct known players in {} teams: {:?}",
                spec.seats, spec.teams, r.participants
            ));
        }
        for (p, a) in r.participants.iter().zip(&arrivals) {
            let Some(a) = a else { continue };
            let sent: BTreeSet<&str> = trace.arrivals[*a]
                .offer
                .roles()
                .into_iter()
                .map(Role::name)
                .collect();
            let recorded: Option<BTreeSet<&str>> = r
                .attributes
                .as_ref()
                .and_then(|m| m.get(p.as_str()))
                .and_then(|m| m.get(&spec.attribute))
                .and_then(|v| v.as_array())
                .map(|l| l.iter().filter_map(|x| x.as_str()).collect());
            if recorded.as_ref() != Some(&sent) {
                v.misrecorded += 1;
                v.note(format!(
                    "{id}: {p} sent {sent:?}, the record says {recorded:?}"
                ));
            }
        }
        if r.roles.is_some() {
            v.with_roles += 1;
        }
        if let Some(q) = &spec.quotas {
            if let Some(why) = role_breach(r, trace, q, &arrivals) {
                v.role_breaches += 1;
                v.note(format!("{id}: {why}"));
            }
        }
    }
    v
}

/// What is wrong with `r`'s roles under `q`, recounted from the trace.
fn role_breach(
    r: &MatchRecord,
    trace: &Trace,
    q: &Quotas,
    arrivals: &[Option<usize>],
) -> Option<String> {
    let Some(roles) = r.roles.as_ref() else {
        return Some("no roles recorded".into());
    };
    for (p, a) in r.participants.iter().zip(arrivals) {
        let Some(role) = roles.get(p.as_str()) else {
            return Some(format!("{p} has no role"));
        };
        if let Some(a) = a {
            let offer = trace.arrivals[*a].offer;
            if !Role::parse(role).is_some_and(|x| offer.offers(x)) {
                return Some(format!(
                    "{p} plays {role}, offering {:?}",
                    offer.roles().iter().map(|x| x.name()).collect::<Vec<_>>()
                ));
            }
        }
    }
    let everyone = [r.participants.clone()];
    let groups: &[Vec<shared::PlayerId>] = match (q.per_team, &r.teams) {
        (true, Some(teams)) => teams,
        _ => &everyone,
    };
    for (t, group) in groups.iter().enumerate() {
        for (value, min, max) in &q.bounds {
            let n = group
                .iter()
                .filter(|p| roles.get(p.as_str()) == Some(value))
                .count() as u32;
            if n < *min || n > *max {
                return Some(format!(
                    "team {} has {n} {value}, outside {min}..={max}",
                    t + 1
                ));
            }
        }
    }
    None
}

/// The waits of some of a lane's arrivals.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Summary {
    pub arrivals: usize,
    pub matched: usize,
    pub expired: usize,
    pub waiting: usize,
    pub refused: usize,
    /// Waits of the matched arrivals (simulated s).
    pub wait: Option<Dist>,
    /// p50 and p95 of every arrival's wait, the unmatched counted as
    /// waiting longer than anyone matched (infinite when the rank falls
    /// among them).
    pub p50_all: Option<f64>,
    pub p95_all: Option<f64>,
    /// Matched arrivals by the role their record gives them (tank, healer,
    /// damage; role queue only).
    pub played: [usize; 3],
}

impl Summary {
    pub fn unmatched(&self) -> usize {
        self.expired + self.waiting + self.refused
    }
}

/// The summary of the arrivals whose offer `which` selects.
pub fn summarize(lane: &LaneResult, trace: &Trace, which: impl Fn(&Offer) -> bool) -> Summary {
    let mut s = Summary::default();
    let mut waits = Vec::new();
    for (a, fate) in lane.fates.iter().enumerate() {
        if !which(&trace.arrivals[a].offer) {
            continue;
        }
        s.arrivals += 1;
        match fate {
            Fate::Matched { wait, .. } => {
                s.matched += 1;
                waits.push(*wait);
                if let Some(r) = lane.played.get(a).copied().flatten() {
                    s.played[r.index()] += 1;
                }
            }
            Fate::Expired | Fate::Removed => s.expired += 1,
            Fate::Waiting => s.waiting += 1,
            Fate::Refused => s.refused += 1,
        }
    }
    s.wait = Dist::of(&waits);
    s.p50_all = percentile_counting_unmatched(&waits, s.unmatched(), 50.0);
    s.p95_all = percentile_counting_unmatched(&waits, s.unmatched(), 95.0);
    s
}

/// Per group (tank only, healer only, damage only, two roles).
pub fn by_group(lane: &LaneResult, trace: &Trace) -> Vec<(Group, Summary)> {
    Group::ALL
        .into_iter()
        .map(|g| (g, summarize(lane, trace, |o| o.group() == g)))
        .collect()
}

/// Per number of roles offered (1, 2).
pub fn by_count(lane: &LaneResult, trace: &Trace) -> Vec<(usize, Summary)> {
    [1, 2]
        .into_iter()
        .map(|k| (k, summarize(lane, trace, |o| o.count() == k)))
        .collect()
}

/// Per pair of roles offered, in report order.
pub fn by_pair(lane: &LaneResult, trace: &Trace) -> Vec<((Role, Role), Summary)> {
    [
        (Role::Tank, Role::Healer),
        (Role::Tank, Role::Damage),
        (Role::Healer, Role::Damage),
    ]
    .into_iter()
    .map(|p| (p, summarize(lane, trace, |o| o.pair() == Some(p))))
    .collect()
}

/// The lanes of one rule set: (role queue, role-agnostic).
pub fn pairs_of(lanes: &[LaneResult]) -> Vec<(&LaneResult, &LaneResult)> {
    let mut out = Vec::new();
    for q in lanes.iter().filter(|l| l.variant == Variant::RoleQueue) {
        if let Some(a) = lanes
            .iter()
            .find(|l| l.variant == Variant::Agnostic && l.rule_set == q.rule_set)
        {
            out.push((q, a));
        }
    }
    out
}

/// Each role's share of the seats a quota rule fills (its `min` per team
/// or per match over the players there): what the role must supply.
pub fn seat_shares(quotas: &Quotas, seats: usize, teams: usize) -> [Option<f64>; 3] {
    let per = if quotas.per_team {
        seats / teams.max(1)
    } else {
        seats
    }
    .max(1) as f64;
    let mut out = [None; 3];
    for (value, min, _) in &quotas.bounds {
        if let Some(r) = Role::parse(value) {
            out[r.index()] = Some(f64::from(*min) / per);
        }
    }
    out
}

/// The scarcest role: the lowest share of primary roles against the share
/// of seats the quotas reserve for it (tank with the mix: 15 % of
/// the players for 20 % of the seats, 0.75; healer 1.00, damage 1.08).
/// `None` when no role has a seat share.
pub fn scarcest(mix: &Mix, shares: &[Option<f64>; 3]) -> Option<(Role, f64)> {
    Role::ALL
        .into_iter()
        .filter_map(|r| {
            shares[r.index()]
                .filter(|s| *s > 0.0)
                .map(|s| (r, mix.shares[r.index()] / s))
        })
        .min_by(|a, b| a.1.total_cmp(&b.1))
}

/// `a / b`, when both are finite and `b` > 0.
pub fn ratio_of(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(a), Some(b)) if a.is_finite() && b.is_finite() && b > 0.0 => Some(a / b),
        _ => None,
    }
}

/// A wait for the report: seconds, or "unmatched" when the percentile
/// falls among players never matched.
pub fn wait_text(v: Option<f64>) -> String {
    match v {
        None => "–".into(),
        Some(x) if !x.is_finite() => "unmatched".into(),
        Some(x) if x >= 100.0 => format!("{x:.0}"),
        Some(x) if x >= 10.0 => format!("{x:.1}"),
        Some(x) => format!("{x:.2}"),
    }
}

/// [`wait_text`] with its unit when it is a number.
fn wait_secs(v: Option<f64>) -> String {
    match v {
        Some(x) if x.is_finite() => format!("{} s", wait_text(v)),
        _ => wait_text(v),
    }
}

/// (R1): the scarcest role's p95 (only that role offered; the unmatched
/// counted as the longest) in the role queue ≤ [`SCARCEST_VS_AGNOSTIC`] ×
/// the role-agnostic world's p95 (all arrivals, likewise).
pub fn scarcest_check(q: &LaneResult, a: &LaneResult, trace: &Trace) -> Check {
    let shares = q
        .quotas
        .as_ref()
        .map_or([None; 3], |quotas| seat_shares(quotas, q.seats, q.teams));
    let role = scarcest(&trace.mix, &shares);
    let agnostic = summarize(a, trace, |_| true).p95_all;
    let (what, pass, detail) = match role {
        Some((role, supply)) => {
            let s = summarize(q, trace, |o| o.group() == Group::Only(role)).p95_all;
            let r = ratio_of(s, agnostic);
            (
                format!(
                    "p95 wait of the scarcest role ({}: {} % of primary roles for {} % of the seats, {supply:.2}; players offering only it) in the role queue <= {}x the role-agnostic world's p95 (all players)",
                    role.name(),
                    trim_float(100.0 * trace.mix.shares[role.index()]),
                    trim_float(100.0 * shares[role.index()].unwrap_or(0.0)),
                    trim_float(SCARCEST_VS_AGNOSTIC)
                ),
                r.is_some_and(|r| r <= SCARCEST_VS_AGNOSTIC),
                format!(
                    "{} against {}: {}",
                    wait_secs(s),
                    wait_secs(agnostic),
                    r.map_or_else(|| "no ratio".into(), |r| format!("{r:.2}x"))
                ),
            )
        }
        None => (
            "p95 wait of the scarcest role <= 2x the role-agnostic world's".into(),
            false,
            "the quota rule reserves no seats for any role the players offer".into(),
        ),
    };
    Check {
        rule_set: q.rule_set.clone(),
        id: "R1",
        what,
        pass,
        detail,
    }
}

/// (R2): in the role queue, the p50 wait of the players offering two roles
/// ≤ [`TWO_VS_ONE`] × that of the players offering one (the unmatched
/// counted as the longest).
pub fn two_roles_check(q: &LaneResult, trace: &Trace) -> Check {
    let rows = by_count(q, trace);
    let (one, two) = (rows[0].1.p50_all, rows[1].1.p50_all);
    let r = ratio_of(two, one);
    Check {
        rule_set: q.rule_set.clone(),
        id: "R2",
        what: format!(
            "in the role queue, players offering two roles wait <= {}x (p50) what players offering one wait",
            trim_float(TWO_VS_ONE)
        ),
        pass: r.is_some_and(|r| r <= TWO_VS_ONE),
        detail: format!(
            "{} ({} players) against {} ({}): {}",
            wait_secs(two),
            rows[1].1.arrivals,
            wait_secs(one),
            rows[0].1.arrivals,
            r.map_or_else(|| "no ratio".into(), |r| format!("{r:.2}x"))
        ),
    }
}

/// (R3): every record of both lanes re-checked without a finding (and the
/// role queue formed some), every role-queue record carrying roles, every
/// participant an arrival.
pub fn oracle_check(q: &LaneResult, a: &LaneResult) -> Check {
    let pass = q.verdict.checked > 0
        && q.verdict.clean()
        && a.verdict.clean()
        && q.verdict.with_roles == q.verdict.checked
        && q.unaccounted + a.unaccounted == 0;
    Check {
        rule_set: q.rule_set.clone(),
        id: "R3",
        what: "every match record re-checked offline: the rules oracle (shared::rules::recheck: each player plays a role they offered, every team within its quotas) objects to none, and the roles recounted from the trace agree".into(),
        pass,
        detail: format!(
            "role queue: {} records, {} objections, {} breaches recounted, {} malformed, {} misrecorded, {} with roles; role-agnostic: {} records, {} objections, {} malformed, {} misrecorded; {} participants unaccounted{}",
            q.verdict.checked,
            q.verdict.objections,
            q.verdict.role_breaches,
            q.verdict.malformed,
            q.verdict.misrecorded,
            q.verdict.with_roles,
            a.verdict.checked,
            a.verdict.objections,
            a.verdict.malformed,
            a.verdict.misrecorded,
            q.unaccounted + a.unaccounted,
            q.verdict
                .examples
                .iter()
                .chain(&a.verdict.examples)
                .next()
                .map_or_else(String::new, |e| format!("; e.g. {e}"))
        ),
    }
}

/// The targets of every rule set.
pub fn criteria(lanes: &[LaneResult], trace: &Trace) -> Vec<Check> {
    let mut checks = Vec::new();
    for (q, a) in pairs_of(lanes) {
        checks.push(scarcest_check(q, a, trace));
        checks.push(two_roles_check(q, trace));
        checks.push(oracle_check(q, a));
    }
    checks
}

/// How many players of each group wait, on average over each `step` of
/// simulated time up to `t`, for `t` = 0, `step`, 2 `step` … to the lane's
/// end (0 at `t` = 0): an arrival waits from its time until its match,
/// until its ticket's lifetime ran out (expired), or to the end (still
/// waiting).
pub fn queue_over_time(lane: &LaneResult, trace: &Trace, step: f64) -> Vec<(f64, [f64; 4])> {
    let spans: Vec<(f64, f64, usize)> = lane
        .fates
        .iter()
        .zip(&trace.arrivals)
        .filter_map(|(f, a)| {
            let leave = match f {
                Fate::Matched { wait, .. } => a.time + wait,
                Fate::Waiting => f64::INFINITY,
                Fate::Expired | Fate::Removed => a.time + lane.ttl,
                Fate::Refused => return None,
            };
            Some((a.time, leave, a.offer.group().index()))
        })
        .collect();
    let steps = (lane.end / step).floor() as usize;
    (0..=steps)
        .map(|k| {
            let t = k as f64 * step;
            let mut n = [0.0; 4];
            if k > 0 {
                for &(from, to, g) in &spans {
                    let overlap = to.min(t) - from.max(t - step);
                    if overlap > 0.0 {
                        n[g] += overlap / step;
                    }
                }
            }
            (t, n)
        })
        .collect()
}

/// The players still waiting at the end, per group: how many, and how
/// long the longest of them had waited (simulated s).
pub fn left_waiting(lane: &LaneResult, trace: &Trace) -> [(usize, f64); 4] {
    let mut out = [(0, 0.0); 4];
    for (f, a) in lane.fates.iter().zip(&trace.arrivals) {
        if *f == Fate::Waiting {
            let g = &mut out[a.offer.group().index()];
            g.0 += 1;
            g.1 = f64::max(g.1, lane.end - a.time);
        }
    }
    out
}
