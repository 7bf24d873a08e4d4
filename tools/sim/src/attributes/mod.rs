//! The attributes scenario (`--attributes`, issue 37): players with
//! attributes (the game modes they list, a level) and every rule set's
//! world (which has match rules) played several ways on the same trace
//! (see [`AttrVariant`]): as written; with every player listing only their
//! first choice of the list its intersection rule reads (one queue per
//! mode); without its rules. Reports the waits by the number of modes
//! listed, the modes played, the level spread per match against the wait
//! ([`report`], [`plot`]), every record re-checked by the rules oracle
//! (`shared::rules::recheck`), and the done criterion
//! ([`criteria`]).

mod lanes;
pub mod plot;
pub mod report;
mod tables;
#[cfg(test)]
mod tests;

pub(crate) use lanes::lanes_of;
pub use lanes::variant_rule_set;

use std::collections::BTreeMap;
use std::time::Duration;

use shared::config::{MatchRule, NumberAggregate, RuleKind};

use crate::outcome::{AttrVariant, Fate, FormedMatch, Kind, Run};
use crate::report::Check;
use crate::scenario::Scenario;
use crate::stats::{percentile_sorted, Dist};

/// The done criterion: the p50 wait of players listing 3 modes against
/// those listing 1 (the world as written).
pub const MANY_VS_ONE: f64 = 0.6;
/// The number of modes listed the criterion compares with one.
pub const MANY: usize = 3;

/// The variant of an attributes-scenario run, its rule set file and the
/// world's rules as written.
pub fn variant_of(run: &Run) -> Option<(AttrVariant, &str, &[MatchRule])> {
    match &run.kind {
        Kind::Attributes {
            file,
            variant,
            rules,
        } => Some((*variant, file.as_str(), rules.as_slice())),
        _ => None,
    }
}

/// The rule set files of the runs, in order, each with its runs.
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
pub fn find<'a>(runs: &[&'a Run], variant: AttrVariant) -> Option<&'a Run> {
    runs.iter()
        .copied()
        .find(|r| variant_of(r).is_some_and(|(v, _, _)| v == variant))
}

/// The world's first intersection rule: (rule name, list attribute).
pub fn intersection_rule(rules: &[MatchRule]) -> Option<(&str, &str)> {
    rules.iter().find_map(|r| match &r.kind {
        RuleKind::Intersection { attribute, .. } => Some((r.name.as_str(), attribute.as_str())),
        _ => None,
    })
}

/// The world's first distance rule.
pub fn distance_rule(rules: &[MatchRule]) -> Option<&MatchRule> {
    rules
        .iter()
        .find(|r| matches!(r.kind, RuleKind::Distance { .. }))
}

/// A distance rule's number in force at an anchor's wait of `wait` seconds
/// (`None`: off).
pub fn distance_in_force(rule: &MatchRule, wait: f64) -> Option<f64> {
    rule.in_force(Duration::from_secs_f64(wait.max(0.0)))
        .flatten()
}

/// The highest number a distance rule reaches (its relax limit, else its
/// `max`, or the last step's number).
pub fn distance_limit(rule: &MatchRule) -> f64 {
    let base = rule.kind.number().unwrap_or(0.0);
    match &rule.relax {
        Some(shared::config::Relax::Linear { limit, .. }) => limit.max(base),
        Some(shared::config::Relax::Steps(steps)) => {
            steps.iter().filter_map(|(_, v)| *v).fold(base, f64::max)
        }
        None => base,
    }
}

/// What the distance rule measures for match `m`, from the trace: the
/// tickets' values (a party's aggregated by the rule's `party`), highest
/// minus lowest (`from: spread`) or furthest from the anchor's (`from:
/// anchor`, the anchor from the record). `None`: fewer than two tickets
/// with a value, or no anchor for `from: anchor`.
pub fn rule_distance(scenario: &Scenario, m: &FormedMatch, rule: &MatchRule) -> Option<f64> {
    let RuleKind::Distance {
        attribute,
        from_anchor,
        party,
        ..
    } = &rule.kind
    else {
        return None;
    };
    let attrs = scenario.attrs.as_ref()?;
    let mut tickets: BTreeMap<usize, Vec<f64>> = BTreeMap::new();
    for &p in &m.players {
        if let Some(v) = attrs.number(p, attribute) {
            tickets
                .entry(scenario.arrivals[p].group)
                .or_default()
                .push(v);
        }
    }
    let value = |vs: &Vec<f64>| match party {
        NumberAggregate::Avg => vs.iter().sum::<f64>() / vs.len() as f64,
        NumberAggregate::Min => vs.iter().copied().fold(f64::INFINITY, f64::min),
        NumberAggregate::Max => vs.iter().copied().fold(f64::NEG_INFINITY, f64::max),
    };
    let values: Vec<(usize, f64)> = tickets.iter().map(|(g, vs)| (*g, value(vs))).collect();
    if *from_anchor {
        let anchor = m.rules.as_ref()?.anchor?;
        let group = scenario.arrivals[anchor].group;
        let (_, at) = values.iter().find(|(g, _)| *g == group)?;
        Some(
            values
                .iter()
                .map(|(_, v)| (v - at).abs())
                .fold(0.0, f64::max),
        )
    } else if values.len() < 2 {
        None
    } else {
        let lo = values.iter().map(|v| v.1).fold(f64::INFINITY, f64::min);
        let hi = values.iter().map(|v| v.1).fold(f64::NEG_INFINITY, f64::max);
        Some(hi - lo)
    }
}

/// The highest minus the lowest value of `attribute` among the match's
/// players (from the trace), whatever the rules: the spread a match
/// without the rule shows too.
pub fn player_spread(scenario: &Scenario, m: &FormedMatch, attribute: &str) -> Option<f64> {
    let attrs = scenario.attrs.as_ref()?;
    let values: Vec<f64> = m
        .players
        .iter()
        .filter_map(|&p| attrs.number(p, attribute))
        .collect();
    (values.len() >= 2).then(|| {
        values.iter().copied().fold(f64::NEG_INFINITY, f64::max)
            - values.iter().copied().fold(f64::INFINITY, f64::min)
    })
}

/// One matcher's numbers over all players.
#[derive(Debug, Clone, PartialEq)]
pub struct Overall {
    pub matches: usize,
    pub matched: usize,
    pub expired: usize,
    pub waiting: usize,
    pub refused: usize,
    pub wait: Option<Dist>,
    /// Match records of a world with attributes (re-checked).
    pub records: usize,
    /// Of which the rules oracle objects to.
    pub violations: usize,
    /// Participants whose recorded attributes differ from what they sent.
    pub misrecorded: usize,
}

pub fn overall(run: &Run) -> Overall {
    let waits = crate::report::waits(run);
    let count = |want: fn(&Fate) -> bool| run.fates.iter().filter(|f| want(f)).count();
    let checked: Vec<_> = run
        .matches
        .iter()
        .filter_map(|m| m.rules.as_ref())
        .collect();
    Overall {
        matches: run.matches.len(),
        matched: waits.len(),
        expired: count(|f| matches!(f, Fate::Expired | Fate::Removed)),
        waiting: count(|f| matches!(f, Fate::Waiting)),
        refused: count(|f| matches!(f, Fate::Refused)),
        wait: Dist::of(&waits),
        records: checked.len(),
        violations: checked.iter().filter(|r| r.violation.is_some()).count(),
        misrecorded: checked.iter().map(|r| r.misrecorded).sum(),
    }
}

/// The `p`-th percentile (nearest rank) of `waits` plus `unmatched` more
/// players counted as waiting longer than anyone matched (infinite when
/// the rank falls among them); `None` without players.
pub fn percentile_counting_unmatched(waits: &[f64], unmatched: usize, p: f64) -> Option<f64> {
    let mut all = waits.to_vec();
    all.extend(std::iter::repeat_n(f64::INFINITY, unmatched));
    all.sort_by(f64::total_cmp);
    (!all.is_empty()).then(|| percentile_sorted(&all, p))
}

/// What the default candidate window costs one rule set: its world as
/// written against the same world with the widest window, on the same
/// players.
#[derive(Debug, Clone, PartialEq)]
pub struct WindowCost {
    pub written: Overall,
    pub wide: Overall,
    /// p50 and p95 of every player's wait, the unmatched counted as the
    /// longest: (as written, widest window).
    pub p50_all: (Option<f64>, Option<f64>),
    pub p95_all: (Option<f64>, Option<f64>),
}

/// The window's cost among `runs` (one rule set's), when both were played.
pub fn window_cost(runs: &[&Run]) -> Option<WindowCost> {
    let written = find(runs, AttrVariant::AsWritten)?;
    let wide = find(runs, AttrVariant::WideWindow)?;
    let all = |run: &Run, p: f64| {
        let waits = crate::report::waits(run);
        percentile_counting_unmatched(&waits, run.fates.len() - waits.len(), p)
    };
    Some(WindowCost {
        written: overall(written),
        wide: overall(wide),
        p50_all: (all(written, 50.0), all(wide, 50.0)),
        p95_all: (all(written, 95.0), all(wide, 95.0)),
    })
}

/// The players of one group (by number of modes listed, or by first
/// choice) under one matcher.
#[derive(Debug, Clone, PartialEq)]
pub struct GroupRow {
    /// The number listed, or the first choice.
    pub key: String,
    pub players: usize,
    pub unmatched: usize,
    /// Waits of its matched players.
    pub wait: Option<Dist>,
    /// The p50 of all its players, the unmatched counted as the longest.
    pub p50_all: Option<f64>,
}

fn group_rows(run: &Run, keys: &[Option<String>], order: &[String]) -> Vec<GroupRow> {
    order
        .iter()
        .map(|key| {
            let mut waits = Vec::new();
            let mut players = 0;
            let mut unmatched = 0;
            for (p, fate) in run.fates.iter().enumerate() {
                if keys.get(p).and_then(Option::as_ref) != Some(key) {
                    continue;
                }
                players += 1;
                match fate {
                    Fate::Matched { wait, .. } => waits.push(*wait),
                    _ => unmatched += 1,
                }
            }
            GroupRow {
                key: key.clone(),
                players,
                unmatched,
                wait: Dist::of(&waits),
                p50_all: percentile_counting_unmatched(&waits, unmatched, 50.0),
            }
        })
        .collect()
}

/// How many items each player lists of `attribute` in the trace.
fn listed_counts(scenario: &Scenario, attribute: &str) -> Vec<Option<usize>> {
    (0..scenario.arrivals.len())
        .map(|p| {
            scenario
                .attrs
                .as_ref()
                .and_then(|a| a.list(p, attribute))
                .map(|l| l.len())
        })
        .collect()
}

/// The counts listed in the trace, ascending.
pub fn counts_listed(scenario: &Scenario, attribute: &str) -> Vec<usize> {
    let mut counts: Vec<usize> = listed_counts(scenario, attribute)
        .into_iter()
        .flatten()
        .collect();
    counts.sort_unstable();
    counts.dedup();
    counts
}

/// One row per number of items listed (of the trace's lists, whatever the
/// variant sent).
pub fn listed_rows(scenario: &Scenario, run: &Run, attribute: &str) -> Vec<GroupRow> {
    let keys: Vec<Option<String>> = listed_counts(scenario, attribute)
        .into_iter()
        .map(|c| c.map(|c| c.to_string()))
        .collect();
    let order: Vec<String> = counts_listed(scenario, attribute)
        .iter()
        .map(usize::to_string)
        .collect();
    group_rows(run, &keys, &order)
}

/// The values of `attribute` players list first, by how many do (most
/// first; ties by name).
pub fn first_choices(scenario: &Scenario, attribute: &str) -> Vec<(String, usize)> {
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    if let Some(attrs) = &scenario.attrs {
        for p in 0..scenario.arrivals.len() {
            if let Some(first) = attrs.list(p, attribute).and_then(|l| l.first().copied()) {
                *counts.entry(first.to_owned()).or_default() += 1;
            }
        }
    }
    let mut out: Vec<(String, usize)> = counts.into_iter().collect();
    out.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    out
}

/// One row per first choice.
pub fn first_choice_rows(scenario: &Scenario, run: &Run, attribute: &str) -> Vec<GroupRow> {
    let keys: Vec<Option<String>> = (0..scenario.arrivals.len())
        .map(|p| {
            scenario
                .attrs
                .as_ref()
                .and_then(|a| a.list(p, attribute))
                .and_then(|l| l.first().map(|f| (*f).to_owned()))
        })
        .collect();
    let order: Vec<String> = first_choices(scenario, attribute)
        .into_iter()
        .map(|(m, _)| m)
        .collect();
    group_rows(run, &keys, &order)
}

/// Which modes a matcher's matches were played in.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ModesPlayed {
    /// Per mode (the trace's first choices' order): the matches whose
    /// shared values include it, and its share of the matches counting a
    /// match with k shared modes 1/k to each.
    pub modes: Vec<(String, usize, f64)>,
    /// Matches with more than one shared mode.
    pub several: usize,
    /// Matches with a record of the rule.
    pub recorded: usize,
    /// Matches whose players' lists (from the trace, full lists) share no
    /// value: what the rule is there to prevent.
    pub none_in_common: usize,
    pub matches: usize,
}

/// The modes `run`'s matches were played in: the shared values its records
/// give for rule `rule` (none for a world without it), and offline how
/// many matches' players list no value in common.
pub fn modes_played(scenario: &Scenario, run: &Run, rule: &str, attribute: &str) -> ModesPlayed {
    let order: Vec<String> = first_choices(scenario, attribute)
        .into_iter()
        .map(|(m, _)| m)
        .collect();
    let mut counts: BTreeMap<&str, (usize, f64)> = BTreeMap::new();
    let mut out = ModesPlayed {
        matches: run.matches.len(),
        ..ModesPlayed::default()
    };
    for m in &run.matches {
        if let Some(shared) = m
            .rules
            .as_ref()
            .and_then(|r| r.outcome(rule))
            .and_then(|o| o.shared.as_ref())
        {
            out.recorded += 1;
            if shared.len() > 1 {
                out.several += 1;
            }
            for s in shared {
                if let Some(known) = order.iter().find(|o| *o == s) {
                    let e = counts.entry(known.as_str()).or_default();
                    e.0 += 1;
                    e.1 += 1.0 / shared.len() as f64;
                }
            }
        }
        let lists: Vec<Vec<&str>> = m
            .players
            .iter()
            .filter_map(|&p| scenario.attrs.as_ref().and_then(|a| a.list(p, attribute)))
            .collect();
        let common = lists
            .first()
            .is_none_or(|first| first.iter().any(|v| lists.iter().all(|l| l.contains(v))));
        if !common {
            out.none_in_common += 1;
        }
    }
    out.modes = order
        .iter()
        .map(|m| {
            let (n, share) = counts.get(m.as_str()).copied().unwrap_or_default();
            (m.clone(), n, share / out.recorded.max(1) as f64)
        })
        .collect();
    out
}

/// One match of a world with a distance rule, as the spread chart shows it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SpreadPoint {
    /// The anchor's wait (the record's), simulated seconds.
    pub anchor_wait: f64,
    /// What the rule measures, from the trace.
    pub distance: f64,
    /// The number in force the record states (`None`: off).
    pub in_force: Option<f64>,
    /// The players' mean wait.
    pub mean_wait: f64,
}

/// The matches of `run` with their distance, anchor wait and number in
/// force (those with a record and a measurable distance).
pub fn spread_points(scenario: &Scenario, run: &Run, rule: &MatchRule) -> Vec<SpreadPoint> {
    run.matches
        .iter()
        .enumerate()
        .filter_map(|(index, m)| {
            let rules = m.rules.as_ref()?;
            let anchor_wait = rules.anchor_wait?;
            let distance = rule_distance(scenario, m, rule)?;
            let outcome = rules.outcome(&rule.name);
            let in_force = outcome
                .filter(|o| o.in_force)
                .and_then(|o| o.value.as_ref().and_then(serde_json::Value::as_f64));
            let waits: Vec<f64> = m
                .players
                .iter()
                .filter_map(|&p| match run.fates[p] {
                    Fate::Matched { wait, index: i } if i == index => Some(wait),
                    _ => None,
                })
                .collect();
            Some(SpreadPoint {
                anchor_wait,
                distance,
                in_force,
                mean_wait: crate::stats::mean(&waits).unwrap_or(0.0),
            })
        })
        .collect()
}

/// The spread buckets of a distance rule: its `max`, then every multiple
/// of 10 up to its highest number, then that number; the last bucket is
/// open.
pub fn spread_edges(rule: &MatchRule) -> Vec<f64> {
    let base = rule.kind.number().unwrap_or(0.0);
    let limit = distance_limit(rule);
    let mut edges = vec![base];
    let mut next = (base / 10.0).floor() * 10.0 + 10.0;
    while next < limit {
        edges.push(next);
        next += 10.0;
    }
    if limit > base {
        edges.push(limit);
    }
    edges
}

/// One spread bucket's matches.
#[derive(Debug, Clone, PartialEq)]
pub struct SpreadRow {
    /// `(lo, hi]` (the first from 0 inclusive; `hi` infinite for the last).
    pub range: (f64, f64),
    pub matches: usize,
    /// The anchors' waits.
    pub anchor_wait: Option<Dist>,
    /// The players' mean wait per match.
    pub mean_wait: Option<Dist>,
}

/// The matches by spread bucket ([`spread_edges`]).
pub fn spread_rows(points: &[SpreadPoint], edges: &[f64]) -> Vec<SpreadRow> {
    let mut bounds: Vec<(f64, f64)> = Vec::new();
    let mut lo = 0.0;
    for &e in edges {
        bounds.push((lo, e));
        lo = e;
    }
    bounds.push((lo, f64::INFINITY));
    bounds
        .iter()
        .enumerate()
        .map(|(i, &(lo, hi))| {
            let inside: Vec<&SpreadPoint> = points
                .iter()
                .filter(|p| (p.distance > lo || (i == 0 && p.distance >= lo)) && p.distance <= hi)
                .collect();
            let anchor: Vec<f64> = inside.iter().map(|p| p.anchor_wait).collect();
            let mean: Vec<f64> = inside.iter().map(|p| p.mean_wait).collect();
            SpreadRow {
                range: (lo, hi),
                matches: inside.len(),
                anchor_wait: Dist::of(&anchor),
                mean_wait: Dist::of(&mean),
            }
        })
        .collect()
}

/// Matches whose distance (from the trace) exceeds the number in force
/// their record states: the trace's own check of the rule, beside the
/// oracle's.
pub fn over_rule(points: &[SpreadPoint]) -> usize {
    points
        .iter()
        .filter(|p| p.in_force.is_some_and(|v| p.distance > v + 1e-9))
        .count()
}

/// The done criteria for every rule set: (A1) a world with an
/// intersection rule: the p50 wait (unmatched counted as the longest) of
/// players listing 3 modes <= 0.6x that of players listing 1, the world as
/// written; (A2) every match record of every run with rules re-checked by
/// the rules oracle without an objection, every recorded attribute the one
/// sent, and (a distance rule) no match whose distance from the trace
/// exceeds the number in force its record states.
pub fn criteria(scenario: &Scenario, runs: &[Run]) -> Vec<Check> {
    let mut checks = Vec::new();
    for (_, list) in by_file(runs) {
        let Some(written) = find(&list, AttrVariant::AsWritten) else {
            continue;
        };
        let rules = variant_of(written).map_or(&[][..], |(_, _, r)| r);
        let check = |id, what: String, pass, detail| Check {
            rule_set: written.label.clone(),
            id,
            what,
            pass,
            detail,
        };
        if let Some((_, attribute)) = intersection_rule(rules) {
            let rows = listed_rows(scenario, written, attribute);
            let row = |n: usize| rows.iter().find(|r| r.key == n.to_string());
            let what = format!(
                "p50 wait of players listing {MANY} modes <= {MANY_VS_ONE}x those listing 1"
            );
            checks.push(match (row(MANY), row(1)) {
                (Some(many), Some(one)) => {
                    let (m, o) = (many.p50_all, one.p50_all);
                    let shown = |x: Option<f64>| match x {
                        Some(x) if x.is_finite() => format!("{x:.2} s"),
                        Some(_) => "unmatched (over half)".to_owned(),
                        None => "–".to_owned(),
                    };
                    let (pass, ratio) = match (m, o) {
                        (Some(m), Some(o)) if m.is_finite() && o > 0.0 => {
                            let r = m / o;
                            (r <= MANY_VS_ONE, format!("{r:.2}x"))
                        }
                        _ => (false, "–".to_owned()),
                    };
                    check(
                        "A1",
                        what,
                        pass,
                        format!(
                            "{} ({} players) vs {} ({} players): {ratio}",
                            shown(m),
                            many.players,
                            shown(o),
                            one.players
                        ),
                    )
                }
                _ => check(
                    "A1",
                    what,
                    false,
                    format!("the trace has no players listing {MANY} or 1"),
                ),
            });
        }
        let mut records = 0;
        let mut violations = 0;
        let mut misrecorded = 0;
        let mut over = 0;
        let mut measured = 0;
        for run in list
            .iter()
            .filter(|r| variant_of(r).is_some_and(|(v, _, _)| v != AttrVariant::WithoutRules))
        {
            let o = overall(run);
            records += o.records;
            violations += o.violations;
            misrecorded += o.misrecorded;
            if let Some(rule) = distance_rule(rules) {
                let points = spread_points(scenario, run, rule);
                measured += points.len();
                over += over_rule(&points);
            }
        }
        let unchecked: usize = list
            .iter()
            .filter(|r| variant_of(r).is_some_and(|(v, _, _)| v != AttrVariant::WithoutRules))
            .map(|r| r.matches.iter().filter(|m| m.rules.is_none()).count())
            .sum();
        checks.push(check(
            "A2",
            "every match satisfies every rule in force at its formation (the rules oracle re-checks every record)".into(),
            violations == 0 && misrecorded == 0 && over == 0 && unchecked == 0 && records > 0,
            format!(
                "{violations} violations in {records} records re-checked{}; {misrecorded} participants' recorded attributes differ from what they sent{}",
                if unchecked > 0 { format!(", {unchecked} records not re-checked") } else { String::new() },
                if distance_rule(rules).is_some() {
                    format!("; {over} of {measured} matches with a distance (from the trace) over the number in force")
                } else {
                    String::new()
                }
            ),
        ));
    }
    checks
}
