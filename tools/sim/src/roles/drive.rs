//! One lane of the role-queue study: every player's connection registered
//! and its roles encoded before simulated time 0, then every arrival of the
//! trace joined with its roles when its time comes (a bounded number in
//! flight) while the real matcher ticks every simulated second, until the
//! drain is over; then who is still waiting, every match record tied back
//! to the arrival it matched ([`assemble`]) and re-checked
//! ([`super::analysis::verdict`]).

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

use futures_util::stream::{self, StreamExt};
use shared::config::RuleKind;
use shared::store::JoinInput;
use shared::{JoinOutcome, MatchRecord, MatchStore};
use tokio::sync::{mpsc, watch, Semaphore};

use super::analysis::{verdict, Spec};
use super::{Config, LaneResult, Quotas, Role, Trace, Variant};
use crate::outcome::Fate;
use crate::play::{self, Lane};
use crate::stats::Dist;

/// Beyond this p95 lag of joins behind their time (simulated s) a lane is
/// flagged as not keeping up.
const MAX_LAG: f64 = 1.0;

/// What a lane is, besides its stores.
pub(super) struct Meta {
    pub rule_set: String,
    pub file: String,
    pub variant: Variant,
    /// The roles attribute.
    pub attribute: String,
    pub notes: Vec<String>,
}

/// Registers every player's connection (the `$connect` handler's call, so
/// that notifications leave the outbox) and encodes every arrival's roles
/// as the join route does (`AttributeCatalog::client_attributes`, then
/// `encode`): refused roles stop the study here. Returns the encodings,
/// by arrival.
pub(super) async fn prepare(
    lane: &Lane,
    attribute: &str,
    trace: &Trace,
    in_flight: usize,
) -> Result<Vec<String>, String> {
    let catalog = &lane.store.settings().attributes;
    let mut encoded = Vec::with_capacity(trace.arrivals.len());
    for (i, a) in trace.arrivals.iter().enumerate() {
        let body = serde_json::json!({ attribute: a.offer.json() });
        let attrs = catalog
            .client_attributes(&lane.world, Some(&body))
            .map_err(|e| format!("{}: the roles of {}: {e}", lane.label, trace.ids[i]))?;
        encoded.push(attrs.encode(catalog));
    }
    let store = &lane.store;
    let connected: Vec<Result<(), String>> = stream::iter(trace.ids.iter())
        .map(|p| play::connect(store, p))
        .buffer_unordered(in_flight.max(1))
        .collect()
        .await;
    if let Some(Err(e)) = connected.into_iter().find(Result::is_err) {
        return Err(format!("{}: registering a connection: {e}", lane.label));
    }
    Ok(encoded)
}

/// How one join went.
#[derive(Debug, Clone)]
pub(super) enum Entered {
    Queued,
    /// It completed these matches at once.
    Matched(Vec<MatchRecord>),
    /// The core refused it, with this status.
    Refused(String),
    /// The call failed.
    Failed(String),
}

/// One arrival's join as it happened.
#[derive(Debug, Clone)]
pub(super) struct Joined {
    /// Index into the trace's arrivals.
    pub arrival: usize,
    /// Fake Unix ms when it was sent.
    pub sent_ms: f64,
    /// How late it was sent against the trace (simulated s).
    pub lag: f64,
    pub entered: Entered,
}

/// The lane's quota rule as the world declares it.
fn quotas_of(world: &shared::World) -> Option<Quotas> {
    world.match_rules.iter().find_map(|r| match &r.kind {
        RuleKind::Quota {
            per_team, quotas, ..
        } => Some(Quotas {
            per_team: *per_team,
            bounds: quotas
                .iter()
                .map(|q| (q.value.clone(), q.min, q.max))
                .collect(),
        }),
        _ => None,
    })
}

/// Drives the lane through the trace and turns what it saw into a result.
pub(super) async fn drive(
    lane: Lane,
    meta: Meta,
    encoded: Arc<Vec<String>>,
    trace: Arc<Trace>,
    config: Config,
) -> LaneResult {
    let clock = lane.clock;
    let in_flight = config.in_flight.max(1);
    let (formed_tx, mut formed_rx) = mpsc::unbounded_channel::<MatchRecord>();
    let (stop_tx, stop_rx) = watch::channel(false);
    let (done_tx, _done_rx) = watch::channel(0.0);
    let ticker = play::spawn_ticker(lane.matcher.clone(), clock, formed_tx, done_tx, stop_rx);
    let (join_tx, mut join_rx) = mpsc::unbounded_channel::<Joined>();
    let permits = Arc::new(Semaphore::new(in_flight));
    for (arrival, a) in trace.arrivals.iter().enumerate() {
        let time = a.time;
        play::sleep_until(&clock, time).await;
        let Ok(permit) = permits.clone().acquire_owned().await else {
            break;
        };
        let (store, world, tx) = (lane.store.clone(), lane.world.clone(), join_tx.clone());
        let player = trace.ids[arrival].clone();
        let encoded = encoded.clone();
        tokio::spawn(async move {
            let now = clock.sim_now();
            let input = JoinInput {
                attributes: Some(&encoded[arrival]),
                ..Default::default()
            };
            let entered = match store.join_reply(&world, &player, &input, false).await {
                Ok(reply) => match reply.outcome {
                    JoinOutcome::Queued(_) => Entered::Queued,
                    JoinOutcome::Matched { formed, .. } => Entered::Matched(formed),
                    JoinOutcome::Rejected(r) => Entered::Refused(r.status().to_owned()),
                    other => Entered::Refused(format!("{other:?}").chars().take(80).collect()),
                },
                Err(e) => Entered::Failed(format!("join of {player}: {e}")),
            };
            let _ = tx.send(Joined {
                arrival,
                sent_ms: clock.fake_ms_at(now),
                lag: now - time,
                entered,
            });
            drop(permit);
        });
    }
    drop(join_tx);
    // Every join has finished once all permits are back; the drain runs
    // from the last arrival, or from then if the driver fell behind.
    let _all = permits.acquire_many(in_flight as u32).await;
    let done = clock.sim_now();
    let end = (trace.last() + config.drain).max(done + config.drain);
    play::sleep_until(&clock, end).await;
    stop_tx.send_replace(true);
    let ticks = ticker.await.unwrap_or_default();
    let mut joins = Vec::with_capacity(trace.arrivals.len());
    while let Some(j) = join_rx.recv().await {
        joins.push(j);
    }
    let mut formed = Vec::new();
    while let Ok(m) = formed_rx.try_recv() {
        formed.push(m);
    }
    let lags: Vec<f64> = joins.iter().map(|j| j.lag.max(0.0)).collect();
    let waiting = waiting(&lane.store, &lane.world).await;
    let mut notes = meta.notes;
    let ledger = assemble(&trace, joins, formed, waiting.as_deref().unwrap_or(&[]));
    let mut failures = ledger.failures + ticks.failures;
    let mut first_error = ledger.first_error.or_else(|| ticks.first_error.clone());
    if let Err(e) = &waiting {
        failures += 1;
        first_error.get_or_insert(format!("reading the queue at the end: {e}"));
    }
    let quotas = quotas_of(&lane.world);
    let spec = Spec {
        attribute: meta.attribute.clone(),
        seats: lane.world.seats() as usize,
        teams: lane.world.teams as usize,
        quotas: quotas.clone(),
    };
    let settings = lane.store.settings();
    let verdict = verdict(
        &ledger.records,
        &trace,
        &spec,
        Some((&lane.world, &settings.attributes)),
    );
    notes.push(verdict.describe());
    let lag = Dist::of(&lags);
    if let Some(d) = lag {
        notes.push(format!(
            "joins sent late against their time: p50 {:.3} s, p95 {:.3} s, max {:.2} s",
            d.p50, d.p95, d.max
        ));
    }
    notes.push(ticks.describe());
    let lagging = match (ticks.lagging(), lag) {
        (Some(why), _) => Some(why),
        (None, Some(d)) if d.p95 > MAX_LAG => Some(format!(
            "joins were sent up to {:.2} s (p95) after their time",
            d.p95
        )),
        _ => None,
    };
    LaneResult {
        label: lane.label,
        rule_set: meta.rule_set,
        file: meta.file,
        variant: meta.variant,
        description: crate::rules::describe(&lane.world),
        seats: spec.seats,
        teams: spec.teams,
        ttl: lane.world.ticket_ttl.as_secs_f64(),
        attribute: meta.attribute,
        quotas,
        fates: ledger.fates,
        played: ledger.played,
        records: ledger.records,
        verdict,
        refused: ledger.refused,
        unaccounted: ledger.unaccounted,
        failures,
        first_error,
        lagging,
        end,
        notes,
    }
}

/// The tickets still in the world's queue (a solo ticket's id is its
/// player's).
async fn waiting(store: &MatchStore, world: &shared::World) -> Result<Vec<String>, String> {
    store
        .command::<Vec<String>>(
            redis::cmd("ZRANGE")
                .arg(store.keys().world(&world.name).queue)
                .arg(0)
                .arg(-1),
        )
        .await
        .map_err(|e| e.to_string())
}

/// What a lane's joins, matches and end state say of every arrival.
#[derive(Debug, Clone, Default)]
pub(super) struct Ledger {
    pub fates: Vec<Fate>,
    pub played: Vec<Option<Role>>,
    pub records: Vec<MatchRecord>,
    pub refused: BTreeMap<String, usize>,
    pub unaccounted: usize,
    pub failures: u64,
    pub first_error: Option<String>,
}

/// Ties every match record (from join replies and ticks, each once, in
/// `matched_at` order) to its participants' arrivals (every arrival is a
/// player of its own): an accepted arrival not matched yet; its wait runs
/// from its join to the record's `matchedAt`, and its role is the record's
/// `roles` entry. Then the tickets in the queue at the end are their
/// arrivals still waiting, and the accepted arrivals left have expired. A
/// refused or failed join is `Refused`. Participants that are no accepted
/// arrival, or one matched already, are counted as unaccounted.
pub(super) fn assemble(
    trace: &Trace,
    joins: Vec<Joined>,
    formed: Vec<MatchRecord>,
    waiting: &[String],
) -> Ledger {
    let n = trace.arrivals.len();
    let mut ledger = Ledger {
        fates: vec![Fate::Expired; n],
        played: vec![None; n],
        ..Ledger::default()
    };
    let mut sent = vec![None::<f64>; n];
    let mut all = formed;
    for j in joins {
        match j.entered {
            Entered::Queued => {}
            Entered::Matched(records) => all.extend(records),
            Entered::Refused(status) => {
                ledger.fates[j.arrival] = Fate::Refused;
                *ledger.refused.entry(status).or_default() += 1;
                continue;
            }
            Entered::Failed(e) => {
                ledger.fates[j.arrival] = Fate::Refused;
                *ledger.refused.entry("error".into()).or_default() += 1;
                ledger.failures += 1;
                ledger.first_error.get_or_insert(e);
                continue;
            }
        }
        sent[j.arrival] = Some(j.sent_ms);
    }
    let mut seen = HashSet::new();
    all.retain(|r| seen.insert(r.match_id.clone()));
    all.sort_by_key(|a| a.matched_at);
    let mut matched = vec![false; n];
    for (index, record) in all.iter().enumerate() {
        let at = record.matched_at as f64;
        for p in &record.participants {
            let arrival = trace
                .index
                .get(p.as_str())
                .copied()
                .filter(|&a| !matched[a]);
            match arrival.and_then(|a| sent[a].map(|s| (a, s))) {
                Some((a, s)) => {
                    matched[a] = true;
                    ledger.fates[a] = Fate::Matched {
                        wait: ((at - s) / 1000.0).max(0.0),
                        index,
                    };
                    ledger.played[a] = record
                        .roles
                        .as_ref()
                        .and_then(|r| r.get(p.as_str()))
                        .and_then(|r| Role::parse(r));
                }
                None => ledger.unaccounted += 1,
            }
        }
    }
    for ticket in waiting {
        if let Some(&a) = trace.index.get(ticket.as_str()) {
            if sent[a].is_some() && !matched[a] {
                ledger.fates[a] = Fate::Waiting;
            }
        }
    }
    ledger.records = all;
    ledger
}
