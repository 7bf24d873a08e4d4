//! Turns what a lane saw (joins, ticks, answers, the end state) into a
//! [`Run`], cross-checking the core's match records against the trace.

use std::collections::{HashMap, HashSet};

use shared::{AnswerOutcome, MatchRecord, PlayerId, Settings};

use super::enter::ticket_attributes;
use super::place::PlaceLog;
use super::{answer, close, Drive, Entered, Route, Seen, MAX_LAG, MAX_SKIPPED};
use crate::clock::SimClock;
use crate::outcome::{Fate, FormedMatch, Kind, MatchRules, Run, Shape};
use crate::scenario::Scenario;
use crate::stats::Dist;

/// Turns what the lane saw into a [`Run`]; `settings` are the lane's (its
/// worlds and attribute catalog: the records of worlds with attributes are
/// re-checked against them).
#[allow(clippy::too_many_arguments)]
pub(super) fn assemble(
    label: String,
    kind: Kind,
    shape: Shape,
    drive: &Drive,
    clock: &SimClock,
    seen: Seen,
    route: &Route,
    settings: &Settings,
) -> Run {
    let Seen {
        joins,
        ticks,
        answers,
        end,
        skipped_ticks,
    } = seen;
    let tick_count = ticks.len();
    let scenario = &drive.scenario;
    let n = scenario.arrivals.len();
    let members_of = |p: usize| &scenario.groups[scenario.arrivals[p].group].members;
    let mut notes = Vec::new();
    let mut fates = vec![Fate::Expired; n];
    let mut sent_ms: Vec<Option<f64>> = vec![None; n];
    // Each record with when it became final, if not at `matched_at` (the
    // last accept of a ready check).
    let mut records: Vec<(MatchRecord, Option<f64>)> = Vec::new();
    let mut refused: HashMap<String, (usize, String)> = HashMap::new();
    let mut parties: HashMap<String, usize> = HashMap::new();
    let mut failures = 0usize;
    let mut lags = Vec::with_capacity(joins.len());
    for j in joins {
        lags.push(j.lag.max(0.0));
        let members = &scenario.groups[j.group].members;
        for &m in members {
            sent_ms[m] = Some(j.sent_fake_ms);
        }
        if let Some(party) = j.party {
            parties.insert(party, j.group);
        }
        let why = match j.result {
            Ok(Entered::Queued | Entered::Proposed(_)) => None,
            Ok(Entered::Matched(formed)) => {
                records.extend(formed.into_iter().map(|r| (r, None)));
                None
            }
            Ok(Entered::Refused(why)) => Some(why),
            Err(e) => {
                failures += 1;
                Some(format!("error: {e}"))
            }
        };
        if let Some(why) = why {
            for &m in members {
                fates[m] = Fate::Refused;
            }
            let kind = why.split([' ', '{', '(']).next().unwrap_or("").to_owned();
            let entry = refused.entry(kind).or_insert((0, why));
            entry.0 += 1;
        }
    }
    let mut expired_by_ticks = 0u64;
    let mut swept_proposals = 0u64;
    let mut tick_errors: Vec<String> = Vec::new();
    let late: Vec<f64> = ticks.iter().map(|t| t.late.max(0.0)).collect();
    let took: Vec<f64> = ticks.iter().map(|t| t.took.max(0.0)).collect();
    for t in ticks {
        match t.result {
            Ok(report) => {
                swept_proposals += report.housekeeping.proposals_expired;
                for w in report.worlds {
                    expired_by_ticks += w.expired_tickets;
                    records.extend(w.formed.into_iter().map(|r| (r, None)));
                }
            }
            Err(e) => {
                failures += 1;
                tick_errors.push(e.to_string());
            }
        }
    }
    let mut answer_lags = Vec::new();
    let mut answer_errors: Vec<String> = Vec::new();
    if let Some(log) = &answers {
        for a in &log.answers {
            answer_lags.push((a.sent - a.due).max(0.0));
            match &a.result {
                Ok(AnswerOutcome::Matched { record, .. }) => {
                    records.push(((**record).clone(), Some(clock.fake_ms_at(a.sent))));
                }
                Ok(_) => {}
                Err(e) => {
                    failures += 1;
                    answer_errors.push(e.to_string());
                }
            }
        }
    }

    // Matches, each once, in time order.
    let mut seen = HashSet::new();
    records.retain(|(r, _)| seen.insert(r.match_id.as_str().to_owned()));
    let final_ms = |(r, at): &(MatchRecord, Option<f64>)| at.unwrap_or(r.matched_at as f64);
    records.sort_by(|a, b| final_ms(a).total_cmp(&final_ms(b)));
    let mut matches = Vec::with_capacity(records.len());
    let mut doubly_matched = 0usize;
    let mut unknown_players = 0usize;
    let mut spread_mismatches = 0usize;
    let mut reported_spreads = 0usize;
    let mut difference_mismatches = 0usize;
    let mut reported_differences = 0usize;
    let mut party_mismatches = 0usize;
    let mut reported_parties = 0usize;
    let mut places = PlaceLog::default();
    let mut rechecks = RecheckLog::default();
    let first_only = match route {
        Route::Attributes { first_only } => first_only.as_deref(),
        _ => None,
    };
    let index_of = |p: &PlayerId, unknown: &mut usize| -> Option<usize> {
        let i = drive.index.get(p.as_str()).copied();
        if i.is_none() {
            *unknown += 1;
        }
        i
    };
    for entry in &records {
        let (record, _) = entry;
        let at = final_ms(entry);
        let players: Vec<usize> = record
            .participants
            .iter()
            .filter_map(|p| index_of(p, &mut unknown_players))
            .collect();
        let teams: Option<Vec<Vec<usize>>> = record.teams.as_ref().map(|teams| {
            teams
                .iter()
                .map(|t| {
                    t.iter()
                        .filter_map(|p| drive.index.get(p.as_str()).copied())
                        .collect()
                })
                .collect()
        });
        let index = matches.len();
        for &p in &players {
            if matches!(fates[p], Fate::Matched { .. }) {
                doubly_matched += 1;
            }
            let joined = sent_ms[p].unwrap_or_else(|| clock.fake_ms_at(scenario.arrivals[p].time));
            fates[p] = Fate::Matched {
                wait: ((at - joined) / 1000.0).max(0.0),
                index,
            };
        }
        let place = places.place(route, drive, record, &players);
        let rules = rechecks.check(settings, scenario, drive, record, first_only);
        let mut formed = FormedMatch::new(scenario, clock.sim_of_fake_ms(at), players, teams);
        formed.place = place;
        formed.rules = rules;
        // Cross-check the core's own numbers when the record carries them.
        if let Some(theirs) = record.spread {
            reported_spreads += 1;
            let ratings_agree = record.ratings.as_ref().is_none_or(|rs| {
                rs.iter().all(|(p, r)| {
                    drive
                        .index
                        .get(p.as_str())
                        .is_some_and(|&i| close(scenario.arrivals[i].rating, r.value()))
                })
            });
            if !close(formed.spread, theirs) || !ratings_agree {
                spread_mismatches += 1;
            }
        }
        if let Some(theirs) = record.team_difference {
            reported_differences += 1;
            if !formed
                .team_difference
                .is_some_and(|ours| close(ours, theirs))
            {
                difference_mismatches += 1;
            }
        }
        if let Some(listed) = &record.parties {
            reported_parties += 1;
            // Each listed party is exactly one party of the trace.
            let agree = listed.iter().all(|party| {
                let Some(&first) = party.first().and_then(|p| drive.index.get(p.as_str())) else {
                    return false;
                };
                let mut theirs: Vec<usize> = party
                    .iter()
                    .filter_map(|p| drive.index.get(p.as_str()).copied())
                    .collect();
                theirs.sort_unstable();
                theirs == *members_of(first)
            });
            if !agree {
                party_mismatches += 1;
            }
        }
        matches.push(formed);
    }

    // Who is still there.
    let mut still = 0usize;
    let mut open = HashSet::new();
    match end {
        Ok(end) => {
            let mut waiting: Vec<usize> = Vec::new();
            for ticket in &end.queue {
                match ticket.strip_prefix('\u{1}') {
                    Some(party) => match parties.get(party) {
                        Some(&g) => waiting.extend(&scenario.groups[g].members),
                        None => unknown_players += 1,
                    },
                    None => match drive.index.get(ticket.as_str()) {
                        Some(&i) => waiting.push(i),
                        None => unknown_players += 1,
                    },
                }
            }
            waiting.extend(
                end.in_proposals
                    .iter()
                    .filter_map(|p| drive.index.get(p.as_str()).copied()),
            );
            for i in waiting {
                if matches!(fates[i], Fate::Expired) {
                    fates[i] = Fate::Waiting;
                    still += 1;
                }
            }
            open = end.open_proposals;
        }
        Err(e) => notes.push(format!(
            "could not read the queue at the end ({e}): players still waiting are counted as expired"
        )),
    }

    // Ready checks: what became of each proposal, and who was removed.
    let mut ready = None;
    let mut missed_proposals = None;
    if let Some(log) = &answers {
        let (stats, missed) = answer::ready_outcome(
            log,
            scenario,
            &open,
            swept_proposals,
            &mut fates,
            &mut notes,
            &mut failures,
        );
        ready = Some(stats);
        missed_proposals = missed;
    }
    let expired = fates.iter().filter(|f| matches!(f, Fate::Expired)).count();

    let mut lagging = Vec::new();
    if let Some(d) = Dist::of(&lags) {
        if d.p95 > MAX_LAG {
            lagging.push(format!(
                "95 % of joins sent within {:.2} s of their time (limit {MAX_LAG} s)",
                d.p95
            ));
        }
        notes.push(format!(
            "joins sent {:.3} s late on average against the trace (p95 {:.3} s, max {:.3} s, simulated); waits are measured from the moment each join (a party's create) was sent",
            d.mean, d.p95, d.max
        ));
    }
    if let Some(d) = Dist::of(&answer_lags) {
        if d.p95 > MAX_LAG {
            lagging.push(format!(
                "95 % of ready-check answers sent within {:.2} s of their time (limit {MAX_LAG} s)",
                d.p95
            ));
        }
        notes.push(format!(
            "ready-check answers sent {:.3} s late on average against their drawn time (p95 {:.3} s, max {:.3} s)",
            d.mean, d.p95, d.max
        ));
    }
    lagging.extend(missed_proposals);
    let planned = (tick_count as u64 + skipped_ticks).max(1) as f64;
    if skipped_ticks as f64 > MAX_SKIPPED * planned {
        lagging.push(format!(
            "{skipped_ticks} of {planned} ticks skipped (limit {:.0} %)",
            MAX_SKIPPED * 100.0
        ));
    }
    if let (Some(d), Some(t)) = (Dist::of(&late), Dist::of(&took)) {
        notes.push(format!(
            "{} ticks, started {:.3} s late on average (p95 {:.3} s, max {:.3} s), each took {:.3} s on average (p95 {:.3} s, max {:.3} s; simulated){}",
            d.n,
            d.mean,
            d.p95,
            d.max,
            t.mean,
            t.p95,
            t.max,
            if skipped_ticks > 0 {
                format!("; {skipped_ticks} ticks skipped: the previous one overran a whole second (lower --speed)")
            } else {
                String::new()
            }
        ));
    }
    // Ticks report the tickets they sweep; a join that completes a group
    // sweeps too (unreported), so the ticks can only account for fewer.
    // A party's ticket counts once however many players it holds.
    if expired_by_ticks > expired as u64 {
        notes.push(format!(
            "INCONSISTENT: the matcher reported {expired_by_ticks} expired tickets, but only {expired} players are neither matched, removed nor waiting"
        ));
    }
    if still > 0 || expired > 0 {
        notes.push(format!(
            "{still} still waiting at the end, {expired} expired ({expired_by_ticks} tickets of them swept by matcher ticks, the rest by joins)"
        ));
    }
    for (kind, (count, example)) in refused {
        notes.push(format!(
            "{count} arrivals refused or failed ({kind}), e.g. {example}"
        ));
    }
    if !tick_errors.is_empty() {
        notes.push(format!(
            "{} ticks failed, e.g. {}",
            tick_errors.len(),
            tick_errors[0]
        ));
    }
    if !answer_errors.is_empty() {
        notes.push(format!(
            "{} ready-check answers failed, e.g. {}",
            answer_errors.len(),
            answer_errors[0]
        ));
    }
    if doubly_matched > 0 || unknown_players > 0 {
        notes.push(format!(
            "INCONSISTENT: {doubly_matched} players in two matches, {unknown_players} participants or tickets not in the trace"
        ));
    }
    if reported_spreads > 0 {
        notes.push(if spread_mismatches == 0 {
            format!(
                "the spread and ratings of all {reported_spreads} rated match records agree with the trace"
            )
        } else {
            format!(
                "MISMATCH: {spread_mismatches} of {reported_spreads} match records report a spread or ratings different from the trace's"
            )
        });
    }
    if reported_differences > 0 {
        notes.push(if difference_mismatches == 0 {
            format!(
                "the team difference of all {reported_differences} rated team match records agrees with the trace"
            )
        } else {
            format!(
                "MISMATCH: {difference_mismatches} of {reported_differences} match records report a team difference different from the trace's"
            )
        });
    }
    if reported_parties > 0 {
        notes.push(if party_mismatches == 0 {
            format!(
                "the parties listed by all {reported_parties} match records with parties are the trace's"
            )
        } else {
            format!(
                "MISMATCH: {party_mismatches} of {reported_parties} match records list parties that are not the trace's"
            )
        });
    }
    notes.extend(places.notes(route));
    notes.extend(rechecks.notes());
    Run {
        label,
        kind,
        shape,
        fates,
        matches,
        notes,
        failures,
        lagging: (!lagging.is_empty()).then(|| lagging.join("; ")),
        ready,
    }
}

/// The records of worlds with attributes, re-checked.
#[derive(Debug, Default)]
struct RecheckLog {
    records: usize,
    violations: usize,
    misrecorded: usize,
    example: Option<String>,
}

impl RecheckLog {
    /// `record`'s rules and the oracle's verdict, if its world has
    /// attributes or rules: `shared::rules::recheck` (every rule in force
    /// at the anchor's wait holds for the recorded attributes, and the
    /// record states what was in force), and every participant's recorded
    /// attributes against what it sent (from the trace).
    fn check(
        &mut self,
        settings: &Settings,
        scenario: &Scenario,
        drive: &Drive,
        record: &MatchRecord,
        first_only: Option<&str>,
    ) -> Option<Box<MatchRules>> {
        let world = settings.worlds.get(record.world_type.as_str())?;
        if world.attributes.is_empty() && world.match_rules.is_empty() {
            return None;
        }
        let catalog = &settings.attributes;
        self.records += 1;
        let violation = shared::rules::recheck(world, catalog, record).err();
        if let Some(v) = &violation {
            self.violations += 1;
            self.example.get_or_insert_with(|| v.clone());
        }
        let mut misrecorded = 0;
        for id in &record.participants {
            let Some(&p) = drive.index.get(id.as_str()) else {
                continue;
            };
            let sent = ticket_attributes(catalog, scenario, p, world, first_only)
                .and_then(Result::ok)
                .map(|a| a.to_json())
                .unwrap_or_else(|| serde_json::json!({}));
            let recorded = record
                .attributes
                .as_ref()
                .and_then(|a| a.get(id.as_str()))
                .map_or_else(
                    || serde_json::json!({}),
                    |m| serde_json::Value::Object(m.clone()),
                );
            if !same_json(&sent, &recorded) {
                misrecorded += 1;
                self.example.get_or_insert_with(|| {
                    format!(
                        "match {}: {} sent {sent}, the record says {recorded}",
                        record.match_id,
                        id.as_str()
                    )
                });
            }
        }
        self.misrecorded += misrecorded;
        Some(Box::new(MatchRules {
            anchor: record
                .anchor
                .as_ref()
                .and_then(|a| drive.index.get(a.as_str()).copied()),
            anchor_wait: record.anchor_wait_ms.map(|ms| ms as f64 / 1000.0),
            outcomes: record.rules.as_deref().cloned().unwrap_or_default(),
            violation,
            misrecorded,
        }))
    }

    fn notes(&self) -> Vec<String> {
        if self.records == 0 {
            return Vec::new();
        }
        let example = self
            .example
            .as_deref()
            .map_or_else(String::new, |e| format!("; e.g. {e}"));
        vec![if self.violations + self.misrecorded == 0 {
            format!(
                "the rules oracle (shared::rules::recheck) re-checked all {} match records with attributes: 0 violations; every participant's recorded attributes are those it sent",
                self.records
            )
        } else {
            format!(
                "VIOLATION: the rules oracle (shared::rules::recheck) objects to {} of {} match records, and {} participants' recorded attributes differ from what they sent{example}",
                self.violations, self.records, self.misrecorded
            )
        }]
    }
}

/// JSON values equal as attribute values: numbers by value, lists as sets,
/// objects key by key.
fn same_json(a: &serde_json::Value, b: &serde_json::Value) -> bool {
    use serde_json::Value;
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => {
            let sorted = |v: &Vec<Value>| {
                let mut s: Vec<String> = v.iter().map(Value::to_string).collect();
                s.sort();
                s.dedup();
                s
            };
            sorted(x) == sorted(y)
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| same_json(v, w)))
        }
        _ => a == b,
    }
}
