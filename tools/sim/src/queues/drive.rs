//! One lane of the several-queues study: every player's connection
//! registered before simulated time 0, then every arrival the lane plays
//! joined when its time comes (one call, into all the worlds the variant
//! gives it; a bounded number in flight) while the real matcher ticks
//! every simulated second, until the drain is over; then every world's
//! queue read, and every match record tied back to the arrival it matched
//! ([`assemble`]).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

use futures_util::stream::{self, StreamExt};
use shared::store::{AlsoJoined, JoinInput};
use shared::{JoinOutcome, MatchRecord, MatchStore, World};
use tokio::sync::{mpsc, watch, Semaphore};

use super::{Config, LaneResult, Trace, Variant};
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
    /// The group's worlds, in the trace's index order.
    pub group: Vec<String>,
    pub notes: Vec<String>,
}

/// Registers every player's connection (the `$connect` handler's call, so
/// that notifications leave the outbox).
pub(super) async fn prepare(lane: &Lane, trace: &Trace, in_flight: usize) -> Result<(), String> {
    let connected: Vec<Result<(), String>> = stream::iter(trace.arrivals.iter())
        .map(|a| play::connect(&lane.store, &a.player))
        .buffer_unordered(in_flight.max(1))
        .collect()
        .await;
    match connected.into_iter().find(Result::is_err) {
        Some(Err(e)) => Err(format!("{}: registering a connection: {e}", lane.label)),
        _ => Ok(()),
    }
}

/// How one join went.
#[derive(Debug, Clone)]
pub(super) enum Entered {
    /// Queued; the other worlds the reply names (`alsoQueuedIn`).
    Queued(Vec<String>),
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
    pub arrival: usize,
    /// Simulated seconds when it was sent.
    pub sent: f64,
    /// How late it was sent against the trace (simulated s).
    pub lag: f64,
    /// The other worlds it joined, by name.
    pub also: Vec<String>,
    pub entered: Entered,
}

/// Joins `player` into `worlds` (the first, and the others as `also`).
async fn join(store: &MatchStore, worlds: &[&World], player: &shared::PlayerId) -> Entered {
    let also: Vec<AlsoJoined> = worlds[1..]
        .iter()
        .map(|w| AlsoJoined {
            world: w,
            attributes: None,
        })
        .collect();
    let input = JoinInput {
        also: &also,
        ..JoinInput::default()
    };
    match store.join_reply(worlds[0], player, &input, false).await {
        Ok(reply) => match reply.outcome {
            JoinOutcome::Queued(q) => Entered::Queued(
                q.also_queued_in
                    .iter()
                    .map(|w| w.as_str().to_owned())
                    .collect(),
            ),
            JoinOutcome::Matched { record, formed, .. } => {
                Entered::Matched(std::iter::once(record).chain(formed).collect())
            }
            JoinOutcome::Rejected(r) => Entered::Refused(r.status().to_owned()),
            other => Entered::Refused(format!("{other:?}").chars().take(80).collect()),
        },
        Err(e) => Entered::Failed(format!("join of {player}: {e}")),
    }
}

/// Drives the lane through the trace and turns what it saw into a result.
pub(super) async fn drive(lane: Lane, meta: Meta, trace: Arc<Trace>, config: Config) -> LaneResult {
    let clock = lane.clock;
    let in_flight = config.in_flight.max(1);
    let worlds: Arc<Vec<World>> = Arc::new(
        meta.group
            .iter()
            .filter_map(|n| lane.store.settings().worlds.get(n).cloned())
            .collect(),
    );
    let (formed_tx, mut formed_rx) = mpsc::unbounded_channel::<MatchRecord>();
    let (stop_tx, stop_rx) = watch::channel(false);
    let (done_tx, _done_rx) = watch::channel(0.0);
    let ticker = play::spawn_ticker(lane.matcher.clone(), clock, formed_tx, done_tx, stop_rx);
    let (join_tx, mut join_rx) = mpsc::unbounded_channel::<Joined>();
    let permits = Arc::new(Semaphore::new(in_flight));
    for (arrival, a) in trace.arrivals.iter().enumerate() {
        let Some(chosen) = meta.variant.joins(a) else {
            continue;
        };
        play::sleep_until(&clock, a.time).await;
        let Ok(permit) = permits.clone().acquire_owned().await else {
            break;
        };
        let (store, worlds, tx) = (lane.store.clone(), worlds.clone(), join_tx.clone());
        let (player, chosen, time) = (a.player.clone(), chosen.to_vec(), a.time);
        tokio::spawn(async move {
            let now = clock.sim_now();
            let joined: Vec<&World> = chosen.iter().map(|&i| &worlds[i]).collect();
            let entered = join(&store, &joined, &player).await;
            let also = joined[1..].iter().map(|w| w.name.as_str().to_owned());
            let _ = tx.send(Joined {
                arrival,
                sent: now,
                lag: now - time,
                also: also.collect(),
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
    play::sleep_until(
        &clock,
        (trace.last() + config.drain).max(done + config.drain),
    )
    .await;
    stop_tx.send_replace(true);
    let ticks = ticker.await.unwrap_or_default();
    let mut joins = Vec::new();
    while let Some(j) = join_rx.recv().await {
        joins.push(j);
    }
    let mut formed = Vec::new();
    while let Ok(m) = formed_rx.try_recv() {
        formed.push(m);
    }
    let end = clock.sim_now();
    let mut waiting = Vec::new();
    let mut failures = ticks.failures;
    let mut first_error = ticks.first_error.clone();
    for w in worlds.iter() {
        let queue: Result<Vec<String>, _> = lane
            .store
            .command(
                redis::cmd("ZRANGE")
                    .arg(lane.store.keys().world(&w.name).queue)
                    .arg(0)
                    .arg(-1),
            )
            .await;
        waiting.push(queue.unwrap_or_else(|e| {
            failures += 1;
            first_error.get_or_insert(format!("reading the queue of {} at the end: {e}", w.name));
            Vec::new()
        }));
    }
    let lags: Vec<f64> = joins.iter().map(|j| j.lag.max(0.0)).collect();
    let ledger = assemble(&trace, joins, formed, &waiting, |ms| {
        clock.sim_of_fake_ms(ms)
    });
    failures += ledger.failures;
    let first_error = first_error.or(ledger.first_error);
    let mut notes = meta.notes;
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
    let description = worlds
        .first()
        .map(crate::rules::describe)
        .unwrap_or_default();
    let ttl = worlds
        .iter()
        .map(|w| w.ticket_ttl.as_secs_f64())
        .fold(f64::INFINITY, f64::min);
    LaneResult {
        label: lane.label,
        rule_set: meta.rule_set,
        file: meta.file,
        variant: meta.variant,
        worlds: meta.group,
        description: format!(
            "{} worlds of queueGroup {}, each {description}",
            worlds.len(),
            worlds
                .first()
                .and_then(|w| w.queue_group.clone())
                .unwrap_or_default()
        ),
        seats: lane.world.seats() as usize,
        fates: ledger.fates,
        sent: ledger.sent,
        records: ledger.records,
        matched_at: ledger.matched_at,
        waiting,
        end,
        ttl,
        refused: ledger.refused,
        also_mismatch: ledger.also_mismatch,
        failures,
        first_error,
        lagging,
        notes,
    }
}

/// What a lane's joins, matches and end state say of every arrival.
#[derive(Debug, Clone, Default)]
pub(super) struct Ledger {
    pub fates: Vec<Option<Fate>>,
    pub sent: Vec<f64>,
    pub records: Vec<MatchRecord>,
    /// Each record's `matched_at` in simulated s.
    pub matched_at: Vec<f64>,
    pub refused: BTreeMap<String, usize>,
    pub also_mismatch: usize,
    pub failures: u64,
    pub first_error: Option<String>,
}

/// Ties every match record (from join replies and ticks, each once, in
/// `matched_at` order) to the arrival of each participant (every arrival
/// is a new player): its first match is its fate, its wait from the
/// join's send to the record's `matched_at` (fake Unix ms, which `to_sim`
/// turns into simulated s). Accepted arrivals not
/// matched are `Waiting` when a world's queue holds them at the end, else
/// `Expired`; refused or failed joins are `Refused`; arrivals the lane
/// does not play stay `None`. Whether anyone was matched twice, or in a
/// world they did not queue in, is [`super::analysis::verify`]'s question.
pub(super) fn assemble(
    trace: &Trace,
    joins: Vec<Joined>,
    formed: Vec<MatchRecord>,
    waiting: &[Vec<String>],
    to_sim: impl Fn(f64) -> f64,
) -> Ledger {
    let n = trace.arrivals.len();
    let mut ledger = Ledger {
        fates: vec![None; n],
        sent: vec![f64::NAN; n],
        ..Ledger::default()
    };
    let index: HashMap<&str, usize> = trace
        .arrivals
        .iter()
        .enumerate()
        .map(|(i, a)| (a.player.as_str(), i))
        .collect();
    let mut all = formed;
    for j in joins {
        match j.entered {
            Entered::Queued(named) => {
                let (mut a, mut b) = (named, j.also);
                a.sort();
                b.sort();
                if a != b {
                    ledger.also_mismatch += 1;
                }
            }
            Entered::Matched(records) => all.extend(records),
            Entered::Refused(status) => {
                ledger.fates[j.arrival] = Some(Fate::Refused);
                *ledger.refused.entry(status).or_default() += 1;
                continue;
            }
            Entered::Failed(e) => {
                ledger.fates[j.arrival] = Some(Fate::Refused);
                *ledger.refused.entry("error".into()).or_default() += 1;
                ledger.failures += 1;
                ledger.first_error.get_or_insert(e);
                continue;
            }
        }
        ledger.sent[j.arrival] = j.sent;
        ledger.fates[j.arrival] = Some(Fate::Expired);
    }
    let mut seen = HashSet::new();
    all.retain(|r| seen.insert(r.match_id.clone()));
    all.sort_by_key(|r| r.matched_at);
    ledger.matched_at = all.iter().map(|r| to_sim(r.matched_at as f64)).collect();
    for (i, record) in all.iter().enumerate() {
        for p in &record.participants {
            let Some(&a) = index.get(p.as_str()) else {
                continue;
            };
            if ledger.fates[a] == Some(Fate::Expired) {
                ledger.fates[a] = Some(Fate::Matched {
                    wait: (ledger.matched_at[i] - ledger.sent[a]).max(0.0),
                    index: i,
                });
            }
        }
    }
    for p in waiting.iter().flatten() {
        if let Some(&a) = index.get(p.as_str()) {
            if ledger.fates[a] == Some(Fate::Expired) {
                ledger.fates[a] = Some(Fate::Waiting);
            }
        }
    }
    ledger.records = all;
    ledger
}
