//! Drives one rule set (one namespace) through the real core: each arrival
//! — a solo player's join, or a party's create and its members' joins —
//! when its simulated time comes (a bounded number in flight), the real
//! matcher (`shared::matcher::tick`) every simulated second, and, in a
//! world with a ready check, every participant's answer to every proposal,
//! until the end of the drain period. Then reads who is still waiting and
//! turns the match records into a [`Run`].

mod answer;
mod assemble;
mod enter;
mod place;

use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use shared::matcher::{tick, TickReport};
use shared::{ConnectionId, MatchStore, ProposalView, PushError, Pusher, StoreError, World};
use tokio::sync::{mpsc, watch, Semaphore};

use answer::{answer_proposals, AnswerLog};
pub use answer::{Answering, Refusal, POLL_SECONDS};
use enter::{connect, enter, Entered};
pub use enter::{ticket_attributes, typed_value};

use crate::clock::SimClock;
use crate::outcome::{Kind, Run, Shape, Variant};
use crate::scenario::Scenario;

/// Beyond this p95 lag of joins (or answers) behind their time (simulated
/// seconds, one tick) a run is flagged as not keeping up.
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
    pub shape: Shape,
    /// The joins' (and answers') connection.
    pub store: MatchStore,
    /// The matcher's own connection, as a separate matcher process has: its
    /// ticks never queue behind the joins in flight.
    pub matcher: MatchStore,
    pub world: World,
    /// The lane's redis-server clock (each server has its own fake epoch).
    pub clock: SimClock,
    /// Lines for the report about the rule set itself.
    pub notes: Vec<String>,
    /// How proposals are answered (a world with a ready check).
    pub answering: Option<Answering>,
    /// Where arrivals join (the regions scenario: maybe a world per region).
    pub route: Route,
}

/// Where a lane's arrivals join, and where its matches play.
#[derive(Debug, Clone, Default)]
pub enum Route {
    /// Every arrival joins the lane's world; no latencies.
    #[default]
    One,
    /// The regions scenario.
    Regional(Arc<Regional>),
    /// The attributes scenario: every arrival joins the lane's world;
    /// `first_only` names a list attribute every player sends only the
    /// first item of (their first choice: one queue per value).
    Attributes { first_only: Option<String> },
}

/// How the regions scenario plays a lane (see [`Variant`]).
#[derive(Debug, Clone)]
pub struct Regional {
    pub variant: Variant,
    /// The trace's index of each region the world plays in: the `regions`
    /// rule's names, in order.
    pub regions: Vec<usize>,
    /// Best region only: the world of each of `regions`.
    pub worlds: Vec<World>,
    /// The `regions` rule's `maxLatencyCapMs`.
    pub cap: f64,
}

impl Route {
    /// The world group `group` joins: in the best-region-only variant the
    /// world of the region where its worst member's latency is lowest.
    fn world_for<'a>(&'a self, lane: &'a World, scenario: &Scenario, group: usize) -> &'a World {
        match self {
            Route::Regional(r) if r.variant == Variant::BestRegionOnly => {
                let best = scenario
                    .geo
                    .as_ref()
                    .and_then(|geo| geo.best_region(&scenario.groups[group].members, &r.regions));
                best.and_then(|(region, _)| r.regions.iter().position(|&x| x == region))
                    .and_then(|i| r.worlds.get(i))
                    .unwrap_or(lane)
            }
            _ => lane,
        }
    }

    /// Every world arrivals may join.
    fn worlds<'a>(&'a self, lane: &'a World) -> Vec<&'a World> {
        match self {
            Route::Regional(r) if !r.worlds.is_empty() => r.worlds.iter().collect(),
            _ => vec![lane],
        }
    }
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
    /// Joins (arrivals: a solo join or a whole party) in flight at once.
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

/// One arrival as it happened.
struct Joined {
    group: usize,
    /// Fake Unix ms when its first call was sent.
    sent_fake_ms: f64,
    /// How late it was sent against the trace, in simulated seconds.
    lag: f64,
    /// The party's id, once created.
    party: Option<String>,
    result: Result<Entered, StoreError>,
}

/// One tick as it happened.
struct Ticked {
    /// How late it started against its simulated second.
    late: f64,
    /// How long it took, in simulated seconds.
    took: f64,
    result: Result<TickReport, StoreError>,
}

/// Resolves once `stop` is set (or its sender is gone).
async fn stopped(mut stop: watch::Receiver<bool>) {
    while !*stop.borrow_and_update() {
        if stop.changed().await.is_err() {
            return;
        }
    }
}

/// Drives `lane` through the whole trace and returns its run.
pub async fn drive(lane: Lane, drive: Drive) -> Run {
    let Lane {
        label,
        kind,
        shape,
        store,
        matcher,
        world,
        clock,
        mut notes,
        answering,
        route,
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

    // The answerer, in a world with a ready check.
    let (stop_tx, stop_rx) = watch::channel(false);
    let (proposal_tx, proposal_rx) = mpsc::unbounded_channel::<ProposalView>();
    let answerer = world.ready_check.map(|_| {
        tokio::spawn(answer_proposals(
            store.clone(),
            world.clone(),
            clock,
            drive.clone(),
            answering.unwrap_or_default(),
            proposal_rx,
            stop_rx,
        ))
    });

    let first_only = match &route {
        Route::Attributes { first_only } => first_only.clone(),
        _ => None,
    };
    let (join_tx, mut join_rx) = mpsc::unbounded_channel::<Joined>();
    let permits = Arc::new(Semaphore::new(drive.in_flight));
    for (group, arrival) in drive.scenario.groups.iter().enumerate() {
        let due = clock.real_at(arrival.time);
        if due > std::time::Instant::now() {
            tokio::time::sleep_until(due.into()).await;
        }
        let Ok(permit) = permits.clone().acquire_owned().await else {
            break;
        };
        let store = store.clone();
        let world = route.world_for(&world, &drive.scenario, group).clone();
        let scenario = drive.scenario.clone();
        let tx = join_tx.clone();
        let proposals = proposal_tx.clone();
        let first_only = first_only.clone();
        tokio::spawn(async move {
            // Connected first, as a client is before it joins; the wait
            // starts with the join.
            let connected = connect(&store, &scenario, group).await;
            let now = clock.sim_now();
            let (party, result) = match connected {
                Ok(()) => enter(&store, &world, &scenario, group, first_only.as_deref()).await,
                Err(e) => (None, Err(e)),
            };
            if let Ok(Entered::Proposed(view)) = &result {
                let _ = proposals.send(view.clone());
            }
            let _ = tx.send(Joined {
                group,
                sent_fake_ms: clock.fake_ms_at(now),
                lag: now - scenario.groups[group].time,
                party,
                result,
            });
            drop(permit);
        });
    }
    drop(join_tx);
    drop(proposal_tx);
    // Every join has finished once all permits are back.
    let _all = permits.acquire_many(drive.in_flight as u32).await;
    let _ = done_tx.send(Some(clock.sim_now()));
    let skipped = ticker.await.unwrap_or(0);
    let _ = stop_tx.send(true);
    let answers = match answerer {
        Some(handle) => Some(handle.await.unwrap_or_default()),
        None => None,
    };

    let mut joins = Vec::with_capacity(drive.scenario.groups.len());
    while let Some(j) = join_rx.recv().await {
        joins.push(j);
    }
    let mut ticks = Vec::new();
    while let Ok(t) = tick_rx.try_recv() {
        ticks.push(t);
    }
    let end = end_state(&store, &route.worlds(&world)).await;
    let seen = Seen {
        joins,
        ticks,
        answers,
        end,
        skipped_ticks: skipped,
    };
    let mut run = assemble::assemble(
        label,
        kind,
        shape,
        &drive,
        &clock,
        seen,
        &route,
        store.settings(),
    );
    if let (Some(stats), Some(a)) = (run.ready.as_mut(), answering) {
        stats.accept_probability = a.accept_probability;
        stats.refusal = a.refusal.describe().to_owned();
    }
    notes.append(&mut run.notes);
    notes.extend(unaccounted(&store, &drive, &world, &run).await);
    run.notes = notes;
    run
}

/// What the core says of a few players who are neither matched (in a
/// record the lane saw) nor waiting, in a world whose tickets cannot have
/// expired yet: they should not exist, and the core's own status tells
/// whether a record was missed or a ticket lost.
async fn unaccounted(store: &MatchStore, drive: &Drive, world: &World, run: &Run) -> Vec<String> {
    let lifetime = world.ticket_ttl.as_secs_f64();
    let lost: Vec<usize> = run
        .fates
        .iter()
        .enumerate()
        .filter(|(p, f)| {
            matches!(f, crate::outcome::Fate::Expired)
                && drive.end - drive.scenario.arrivals[*p].time < lifetime
        })
        .map(|(p, _)| p)
        .collect();
    if lost.is_empty() {
        return Vec::new();
    }
    let mut shown = Vec::new();
    for &p in lost.iter().take(3) {
        let id = &drive.scenario.arrivals[p].player;
        let status = match shared::PlayerId::parse(id) {
            Ok(player) => match store.player_status(&player).await {
                Ok(s) => format!("{s:?}"),
                Err(e) => format!("status unreadable: {e}"),
            },
            Err(e) => e.to_string(),
        };
        let status: String = status.chars().take(600).collect();
        shown.push(format!(
            "{id} (joined at {:.1} s): {status}",
            drive.scenario.arrivals[p].time
        ));
    }
    vec![format!(
        "UNACCOUNTED: {} players are neither matched nor waiting, yet joined less than the ticket lifetime ({} s) before the end; the core's status of {}",
        lost.len(),
        crate::oracle::trim_float(lifetime),
        shown.join("; ")
    )]
}

/// Who is still there at the end.
struct EndState {
    /// Ticket ids in the world's queue (a party's: `\x01<party id>`).
    queue: Vec<String>,
    /// Players in a proposal still open.
    in_proposals: Vec<String>,
    /// Proposals still open.
    open_proposals: HashSet<String>,
}

async fn end_state(store: &MatchStore, worlds: &[&World]) -> Result<EndState, StoreError> {
    let k = store.keys();
    let mut queue = Vec::new();
    for world in worlds {
        queue.extend(
            store
                .command::<Vec<String>>(
                    redis::cmd("ZRANGE")
                        .arg(k.world(&world.name).queue)
                        .arg(0)
                        .arg(-1),
                )
                .await?,
        );
    }
    Ok(EndState {
        queue,
        in_proposals: store
            .command::<Vec<String>>(redis::cmd("HVALS").arg(k.proposals()))
            .await?
            .iter()
            .filter_map(|json| serde_json::from_str::<serde_json::Value>(json).ok())
            .flat_map(|p| {
                p["players"]
                    .as_array()
                    .map(|ps| {
                        ps.iter()
                            .filter_map(|x| x.as_str().map(str::to_owned))
                            .collect()
                    })
                    .unwrap_or_else(Vec::new)
            })
            .collect(),
        open_proposals: store
            .command::<Vec<String>>(redis::cmd("HKEYS").arg(k.proposals()))
            .await?
            .into_iter()
            .collect(),
    })
}

/// What a lane saw.
struct Seen {
    joins: Vec<Joined>,
    ticks: Vec<Ticked>,
    answers: Option<AnswerLog>,
    end: Result<EndState, StoreError>,
    skipped_ticks: u64,
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
