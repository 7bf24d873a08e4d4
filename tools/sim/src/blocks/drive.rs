//! One lane of the block-list study: its players' connections (and, with
//! lists, every avoid list) written before simulated time 0, then every
//! arrival of the trace joined when its time comes (a bounded number in
//! flight) while the real matcher ticks every simulated second, until the
//! drain is over; then who is still waiting, and every match record tied
//! back to the arrival it matched ([`assemble`]).

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::sync::Arc;

use futures_util::stream::{self, StreamExt};
use shared::store::JoinInput;
use shared::{JoinOutcome, MatchRecord, MatchStore, PlayerId, Rating};
use tokio::sync::{mpsc, watch, Semaphore};

use super::{Config, LaneResult, Population, Trace, Variant};
use crate::outcome::Fate;
use crate::play::{self, Lane};
use crate::stats::Dist;

/// Beyond this p95 lag of joins behind their time (simulated s) a lane is
/// flagged as not keeping up.
const MAX_LAG: f64 = 1.0;
/// Avoid lists read back after writing them, to check they are stored.
const READ_BACK: usize = 50;
/// A record's `matched_at` may precede the modelled send time of the join
/// it matched by this much (fake ms): the clock model's error.
const SLACK_MS: f64 = 1000.0;

/// What a lane is, besides its stores.
pub(super) struct Meta {
    pub rule_set: String,
    pub file: String,
    pub variant: Variant,
    pub notes: Vec<String>,
}

/// Registers every player's connection (the `$connect` handler's call, so
/// that notifications leave the outbox) and, with lists, writes every
/// non-empty avoid list through `MatchStore::set_avoid_list` (what
/// `PUT /v1/avoid/{playerId}` runs), then reads the lists back: their
/// number, and a sample of them entry by entry. Returns the lists written.
pub(super) async fn prepare(
    lane: &Lane,
    variant: Variant,
    population: &Population,
    in_flight: usize,
) -> Result<usize, String> {
    let store = &lane.store;
    let connected: Vec<Result<(), String>> = stream::iter(population.ids.iter())
        .map(|p| play::connect(store, p))
        .buffer_unordered(in_flight.max(1))
        .collect()
        .await;
    if let Some(Err(e)) = connected.into_iter().find(Result::is_err) {
        return Err(format!("{}: registering a connection: {e}", lane.label));
    }
    if variant == Variant::WithoutLists {
        return Ok(0);
    }
    let lists: Vec<(usize, Vec<PlayerId>)> = population
        .avoids
        .iter()
        .enumerate()
        .filter(|(_, l)| !l.is_empty())
        .map(|(i, l)| (i, l.iter().map(|&j| population.ids[j].clone()).collect()))
        .collect();
    let written: Vec<Result<Vec<String>, String>> = stream::iter(lists.iter())
        .map(|(i, avoided)| async move {
            store
                .set_avoid_list(&population.ids[*i], avoided)
                .await
                .map_err(|e| format!("avoid list of {}: {e}", population.ids[*i]))
        })
        .buffer_unordered(in_flight.max(1))
        .collect()
        .await;
    if let Some(Err(e)) = written.into_iter().find(Result::is_err) {
        return Err(format!("{}: {e}", lane.label));
    }
    let stored: usize = store
        .command(redis::cmd("HLEN").arg(store.keys().avoid()))
        .await
        .map_err(|e| format!("{}: reading the avoid lists back: {e}", lane.label))?;
    if stored != lists.len() {
        return Err(format!(
            "{}: {} avoid lists written, {stored} stored",
            lane.label,
            lists.len()
        ));
    }
    for (i, avoided) in lists.iter().take(READ_BACK) {
        let back: HashSet<String> = store
            .avoid_list(&population.ids[*i])
            .await
            .map_err(|e| format!("{}: reading an avoid list back: {e}", lane.label))?
            .into_iter()
            .collect();
        let sent: HashSet<String> = avoided.iter().map(|p| p.as_str().to_owned()).collect();
        if back != sent {
            return Err(format!(
                "{}: the avoid list of {} reads back as {back:?}, not {sent:?}",
                lane.label, population.ids[*i]
            ));
        }
    }
    Ok(lists.len())
}

/// How one join went.
#[derive(Debug, Clone)]
pub(super) enum Entered {
    Queued,
    /// It completed these matches at once.
    Matched(Vec<MatchRecord>),
    /// The core refused it, with this status (`ALREADY_QUEUED`, …).
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

/// Drives the lane through the trace and turns what it saw into a result.
pub(super) async fn drive(
    lane: Lane,
    meta: Meta,
    written: usize,
    trace: Arc<Trace>,
    population: Arc<Population>,
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
    for (arrival, &(time, p)) in trace.arrivals.iter().enumerate() {
        play::sleep_until(&clock, time).await;
        let Ok(permit) = permits.clone().acquire_owned().await else {
            break;
        };
        let (store, world, tx) = (lane.store.clone(), lane.world.clone(), join_tx.clone());
        let player = population.ids[p].clone();
        let claimed = Rating::new(population.ratings[p]).ok();
        tokio::spawn(async move {
            let now = clock.sim_now();
            let input = JoinInput {
                claimed,
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
    play::sleep_until(
        &clock,
        (trace.last() + config.drain).max(done + config.drain),
    )
    .await;
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
    let ledger = assemble(
        &trace,
        &population,
        joins,
        formed,
        waiting.as_deref().unwrap_or(&[]),
    );
    let mut failures = ledger.failures + ticks.failures;
    let mut first_error = ledger.first_error.or_else(|| ticks.first_error.clone());
    if let Err(e) = &waiting {
        failures += 1;
        first_error.get_or_insert(format!("reading the queue at the end: {e}"));
    }
    if meta.variant == Variant::WithLists {
        notes.push(format!(
            "{written} avoid lists written before the first arrival (the other {} players avoid nobody), read back: their number and {READ_BACK} of them entry by entry",
            population.len() - written
        ));
    }
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
    let mut description = crate::rules::describe(&lane.world);
    if let Some(b) = lane.store.settings().block_lists {
        description.push_str(&format!("; block lists, at most {} each", b.max_entries));
    }
    LaneResult {
        label: lane.label,
        rule_set: meta.rule_set,
        file: meta.file,
        variant: meta.variant,
        description,
        seats: lane.world.seats() as usize,
        fates: ledger.fates,
        records: ledger.records,
        refused: ledger.refused,
        unaccounted: ledger.unaccounted,
        lists_written: written,
        failures,
        first_error,
        lagging,
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
    pub records: Vec<MatchRecord>,
    pub refused: BTreeMap<String, usize>,
    pub unaccounted: usize,
    pub failures: u64,
    pub first_error: Option<String>,
}

/// Ties every match record (from join replies and ticks, each once, in
/// `matched_at` order) to its participants' arrivals: each participant's
/// earliest accepted arrival not matched yet and sent no later than the
/// match (a player has one ticket at a time, so there is one). Then the
/// tickets in the queue at the end are their players' arrivals still
/// waiting, and the accepted arrivals left have expired. A refused or
/// failed join is `Refused`. Participants with no such arrival are
/// counted as unaccounted.
pub(super) fn assemble(
    trace: &Trace,
    population: &Population,
    joins: Vec<Joined>,
    formed: Vec<MatchRecord>,
    waiting: &[String],
) -> Ledger {
    let mut ledger = Ledger {
        fates: vec![Fate::Expired; trace.arrivals.len()],
        ..Ledger::default()
    };
    let mut sent = vec![f64::NAN; trace.arrivals.len()];
    let mut all = formed;
    let mut accepted: Vec<(f64, usize)> = Vec::new();
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
        sent[j.arrival] = j.sent_ms;
        accepted.push((j.sent_ms, j.arrival));
    }
    accepted.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    let mut pending: HashMap<usize, VecDeque<usize>> = HashMap::new();
    for (_, a) in accepted {
        pending.entry(trace.arrivals[a].1).or_default().push_back(a);
    }
    let mut seen = HashSet::new();
    all.retain(|r| seen.insert(r.match_id.clone()));
    all.sort_by_key(|a| a.matched_at);
    for (index, record) in all.iter().enumerate() {
        let at = record.matched_at as f64;
        for p in &record.participants {
            let next = population
                .index
                .get(p.as_str())
                .and_then(|i| pending.get_mut(i))
                .filter(|q| q.front().is_some_and(|&a| sent[a] <= at + SLACK_MS))
                .and_then(VecDeque::pop_front);
            match next {
                Some(a) => {
                    ledger.fates[a] = Fate::Matched {
                        wait: ((at - sent[a]) / 1000.0).max(0.0),
                        index,
                    }
                }
                None => ledger.unaccounted += 1,
            }
        }
    }
    for ticket in waiting {
        if let Some(a) = population
            .index
            .get(ticket.as_str())
            .and_then(|i| pending.get_mut(i))
            .and_then(VecDeque::pop_front)
        {
            ledger.fates[a] = Fate::Waiting;
        }
    }
    ledger.records = all;
    ledger
}
