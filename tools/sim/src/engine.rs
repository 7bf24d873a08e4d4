//! Drives one rule set (one namespace) through the real core: joins each
//! arrival when its simulated time comes (a bounded number in flight) and
//! ticks the real matcher (`shared::matcher::tick`) every simulated second,
//! until the end of the drain period. Then reads who is still waiting and
//! turns the match records into a [`Run`].

use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use shared::matcher::{tick, TickReport};
use shared::{
    ConnectionId, JoinOutcome, MatchRecord, MatchStore, PlayerId, PushError, Pusher, Rating,
    StoreError, World,
};
use tokio::sync::{mpsc, Semaphore};

use crate::clock::SimClock;
use crate::outcome::{spread, Fate, FormedMatch, Kind, Run};
use crate::scenario::{Arrival, Scenario};
use crate::stats::Dist;

/// Beyond this p95 lag of joins behind the trace (simulated seconds, one
/// tick) a run is flagged as not keeping up.
const MAX_LAG: f64 = 1.0;
/// Beyond this fraction of skipped ticks a run is flagged likewise.
const MAX_SKIPPED: f64 = 0.02;

/// The simulator has no WebSocket connections: every push "succeeds".
pub struct NullPusher;

impl Pusher for NullPusher {
    fn push(
        &self,
        _connection: &ConnectionId,
        _payload: &[u8],
    ) -> impl Future<Output = Result<(), PushError>> + Send {
        std::future::ready(Ok(()))
    }

    fn close(
        &self,
        _connection: &ConnectionId,
    ) -> impl Future<Output = Result<(), PushError>> + Send {
        std::future::ready(Ok(()))
    }
}

/// One rule set ready to drive.
pub struct Lane {
    pub label: String,
    pub kind: Kind,
    /// The joins' connection.
    pub store: MatchStore,
    /// The matcher's own connection, as a separate matcher process has: its
    /// ticks never queue behind the joins in flight.
    pub matcher: MatchStore,
    pub world: World,
    /// The lane's redis-server clock (each server has its own fake epoch).
    pub clock: SimClock,
    /// Lines for the report about the rule set itself.
    pub notes: Vec<String>,
}

/// Shared by every lane of a run.
#[derive(Clone)]
pub struct Drive {
    pub scenario: Arc<Scenario>,
    /// Player id → arrival index.
    pub index: Arc<HashMap<String, usize>>,
    /// Simulated time the lane stops at (last arrival + drain), or later:
    /// never before `drain` after its last join completed.
    pub end: f64,
    pub drain: f64,
    /// Joins in flight at once.
    pub in_flight: usize,
}

impl Drive {
    pub fn new(scenario: Arc<Scenario>, drain: f64, in_flight: usize) -> Self {
        let end = scenario.last_arrival() + drain;
        let index = scenario
            .arrivals
            .iter()
            .enumerate()
            .map(|(i, a)| (a.player.clone(), i))
            .collect();
        Self {
            scenario,
            index: Arc::new(index),
            end,
            drain,
            in_flight: in_flight.max(1),
        }
    }
}

/// One join as it happened.
struct Joined {
    index: usize,
    /// Fake Unix ms when the join was sent.
    sent_fake_ms: f64,
    /// How late it was sent against the trace, in simulated seconds.
    lag: f64,
    result: Result<JoinOutcome, StoreError>,
}

/// One tick as it happened.
struct Ticked {
    /// How late it started against its simulated second.
    late: f64,
    /// How long it took, in simulated seconds.
    took: f64,
    result: Result<TickReport, StoreError>,
}

/// Joins `arrival` with its rating. This is the one call that changes with
/// the core's join signature.
async fn join(
    store: &MatchStore,
    world: &World,
    arrival: &Arrival,
) -> Result<JoinOutcome, StoreError> {
    let player = PlayerId::parse(&arrival.player)
        .map_err(|e| StoreError::Rejected(format!("player {:?}: {e}", arrival.player)))?;
    let rating = Rating::new(arrival.rating)
        .map_err(|e| StoreError::Rejected(format!("rating {}: {e}", arrival.rating)))?;
    // The rating arrives as the verified claim would; a fresh namespace has
    // no ratings-store entry to take precedence over it.
    store.join(world, &player, None, Some(rating)).await
}

/// Drives `lane` through the whole trace and returns its run.
pub async fn drive(lane: Lane, drive: Drive) -> Run {
    let Lane {
        label,
        kind,
        store,
        matcher,
        world,
        clock,
        mut notes,
    } = lane;
    let (tick_tx, mut tick_rx) = mpsc::unbounded_channel::<Ticked>();
    // When the last join has completed (simulated time): the drain runs from
    // then, in case the driver fell behind the trace.
    let (done_tx, done_rx) = tokio::sync::watch::channel(None::<f64>);
    let ticker = {
        let store = matcher.clone();
        let (end, drain) = (drive.end, drive.drain);
        tokio::spawn(async move {
            let mut skipped = 0u64;
            let mut second = 1u64;
            let last = || match *done_rx.borrow() {
                Some(done) => end.max(done + drain).floor().max(0.0) as u64,
                None => u64::MAX,
            };
            while second <= last() {
                tokio::time::sleep_until(clock.real_at(second as f64).into()).await;
                let started = clock.sim_now();
                let result = tick(&store, &NullPusher).await;
                let _ = tick_tx.send(Ticked {
                    late: started - second as f64,
                    took: clock.sim_now() - started,
                    result,
                });
                // A late tick runs at once; a second that has passed entirely
                // while the previous tick ran is skipped.
                let next = (clock.sim_now().floor().max(0.0) as u64).max(second + 1);
                skipped += next.min(last().saturating_add(1)) - second - 1;
                second = next;
            }
            skipped
        })
    };

    let (join_tx, mut join_rx) = mpsc::unbounded_channel::<Joined>();
    let permits = Arc::new(Semaphore::new(drive.in_flight));
    for (index, arrival) in drive.scenario.arrivals.iter().enumerate() {
        let due = clock.real_at(arrival.time);
        if due > std::time::Instant::now() {
            tokio::time::sleep_until(due.into()).await;
        }
        let Ok(permit) = permits.clone().acquire_owned().await else {
            break;
        };
        let store = store.clone();
        let world = world.clone();
        let scenario = drive.scenario.clone();
        let tx = join_tx.clone();
        tokio::spawn(async move {
            let arrival = &scenario.arrivals[index];
            let now = clock.sim_now();
            let result = join(&store, &world, arrival).await;
            let _ = tx.send(Joined {
                index,
                sent_fake_ms: clock.fake_ms_at(now),
                lag: now - arrival.time,
                result,
            });
            drop(permit);
        });
    }
    drop(join_tx);
    // Every join has finished once all permits are back.
    let _all = permits.acquire_many(drive.in_flight as u32).await;
    let _ = done_tx.send(Some(clock.sim_now()));
    let skipped = ticker.await.unwrap_or(0);

    let mut joins = Vec::with_capacity(drive.scenario.arrivals.len());
    while let Some(j) = join_rx.recv().await {
        joins.push(j);
    }
    let mut ticks = Vec::new();
    while let Ok(t) = tick_rx.try_recv() {
        ticks.push(t);
    }
    let waiting = still_waiting(&store, &world).await;
    let seen = Seen {
        joins,
        ticks,
        waiting,
        skipped_ticks: skipped,
    };
    let mut run = assemble(label, kind, &drive, &clock, seen);
    notes.append(&mut run.notes);
    run.notes = notes;
    run
}

/// The players still in the world's queue.
async fn still_waiting(store: &MatchStore, world: &World) -> Result<Vec<String>, StoreError> {
    let key = store.keys().world(&world.name).queue;
    store
        .command::<Vec<String>>(redis::cmd("ZRANGE").arg(key).arg(0).arg(-1))
        .await
}

/// What a lane saw.
struct Seen {
    joins: Vec<Joined>,
    ticks: Vec<Ticked>,
    /// The players in the queue at the end.
    waiting: Result<Vec<String>, StoreError>,
    skipped_ticks: u64,
}

/// Turns what the lane saw into a [`Run`].
fn assemble(label: String, kind: Kind, drive: &Drive, clock: &SimClock, seen: Seen) -> Run {
    let Seen {
        joins,
        ticks,
        waiting,
        skipped_ticks,
    } = seen;
    let tick_count = ticks.len();
    let scenario = &drive.scenario;
    let n = scenario.arrivals.len();
    let mut notes = Vec::new();
    let mut fates = vec![Fate::Expired; n];
    let mut sent_ms: Vec<Option<f64>> = vec![None; n];
    let mut records: Vec<MatchRecord> = Vec::new();
    let mut refused: HashMap<String, (usize, String)> = HashMap::new();
    let mut failures = 0usize;
    let mut lags = Vec::with_capacity(joins.len());
    for j in joins {
        lags.push(j.lag.max(0.0));
        sent_ms[j.index] = Some(j.sent_fake_ms);
        let why = match j.result {
            Ok(JoinOutcome::Queued(_)) => None,
            Ok(JoinOutcome::Matched { formed, .. }) => {
                records.extend(formed);
                None
            }
            Ok(other) => Some(format!("{other:?}")),
            Err(e) => {
                failures += 1;
                Some(format!("error: {e}"))
            }
        };
        if let Some(why) = why {
            fates[j.index] = Fate::Refused;
            let kind = why.split([' ', '{', '(']).next().unwrap_or("").to_owned();
            let entry = refused.entry(kind).or_insert((0, why));
            entry.0 += 1;
        }
    }
    let mut expired_by_ticks = 0u64;
    let mut tick_errors: Vec<String> = Vec::new();
    let late: Vec<f64> = ticks.iter().map(|t| t.late.max(0.0)).collect();
    let took: Vec<f64> = ticks.iter().map(|t| t.took.max(0.0)).collect();
    for t in ticks {
        match t.result {
            Ok(report) => {
                for w in report.worlds {
                    expired_by_ticks += w.expired_tickets;
                    records.extend(w.formed);
                }
            }
            Err(e) => {
                failures += 1;
                tick_errors.push(e.to_string());
            }
        }
    }

    // Matches, each once, in time order.
    let mut seen = HashSet::new();
    records.retain(|r| seen.insert(r.match_id.as_str().to_owned()));
    records.sort_by_key(|r| r.matched_at);
    let mut matches = Vec::with_capacity(records.len());
    let mut doubly_matched = 0usize;
    let mut unknown_players = 0usize;
    let mut spread_mismatches = 0usize;
    let mut reported_spreads = 0usize;
    for record in &records {
        let players: Vec<usize> = record
            .participants
            .iter()
            .filter_map(|p| {
                let i = drive.index.get(p.as_str()).copied();
                if i.is_none() {
                    unknown_players += 1;
                }
                i
            })
            .collect();
        let index = matches.len();
        for &p in &players {
            if matches!(fates[p], Fate::Matched { .. }) {
                doubly_matched += 1;
            }
            let joined = sent_ms[p].unwrap_or_else(|| clock.fake_ms_at(scenario.arrivals[p].time));
            fates[p] = Fate::Matched {
                wait: ((record.matched_at as f64 - joined) / 1000.0).max(0.0),
                index,
            };
        }
        let ours = spread(scenario, &players);
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
            if !close(ours, theirs) || !ratings_agree {
                spread_mismatches += 1;
            }
        }
        matches.push(FormedMatch {
            time: clock.sim_of_fake_ms(record.matched_at as f64),
            players,
            spread: ours,
        });
    }

    let mut still = 0usize;
    match waiting {
        Ok(players) => {
            for p in players {
                if let Some(&i) = drive.index.get(p.as_str()) {
                    if matches!(fates[i], Fate::Expired) {
                        fates[i] = Fate::Waiting;
                        still += 1;
                    }
                }
            }
        }
        Err(e) => notes.push(format!(
            "could not read the queue at the end ({e}): players still waiting are counted as expired"
        )),
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
            "joins sent {:.3} s late on average against the trace (p95 {:.3} s, max {:.3} s, simulated); waits are measured from the moment each join was sent",
            d.mean, d.p95, d.max
        ));
    }
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
    if expired_by_ticks > expired as u64 {
        notes.push(format!(
            "INCONSISTENT: the matcher reported {expired_by_ticks} expired tickets, but only {expired} are neither matched nor waiting"
        ));
    }
    if still > 0 || expired > 0 {
        notes.push(format!(
            "{still} still waiting at the end, {expired} expired ({expired_by_ticks} of them swept by matcher ticks, the rest by joins)"
        ));
    }
    for (kind, (count, example)) in refused {
        notes.push(format!(
            "{count} joins refused or failed ({kind}), e.g. {example}"
        ));
    }
    if !tick_errors.is_empty() {
        notes.push(format!(
            "{} ticks failed, e.g. {}",
            tick_errors.len(),
            tick_errors[0]
        ));
    }
    if doubly_matched > 0 || unknown_players > 0 {
        notes.push(format!(
            "INCONSISTENT: {doubly_matched} players in two matches, {unknown_players} participants not in the trace"
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
    Run {
        label,
        kind,
        fates,
        matches,
        notes,
        failures,
        lagging: (!lagging.is_empty()).then(|| lagging.join("; ")),
    }
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-6 * a.abs().max(b.abs()).max(1.0)
}

/// Waits until `store` answers, so the first join does not pay the connect.
pub async fn warm_up(store: &MatchStore) -> Result<(), String> {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        match store.ping().await {
            Ok(()) => return Ok(()),
            Err(e) if std::time::Instant::now() > deadline => {
                return Err(format!("redis-server does not answer: {e}"))
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
        }
    }
}
