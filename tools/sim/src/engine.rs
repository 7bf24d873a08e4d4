//! Drives one rule set (one namespace) through the real core: each arrival
//! — a solo player's join, or a party's create and its members' joins —
//! when its simulated time comes (a bounded number in flight), the real
//! matcher (`shared::matcher::tick`) every simulated second, and, in a
//! world with a ready check, every participant's answer to every proposal,
//! until the end of the drain period. Then reads who is still waiting and
//! turns the match records into a [`Run`].

use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use shared::matcher::{tick, TickReport};
use shared::{
    use_cases, AnswerOutcome, ConnectionId, JoinOutcome, MatchId, MatchRecord, MatchStore,
    PartyCreateOutcome, PartyJoinOutcome, PlayerId, ProposalView, PushError, Pusher, Rating,
    StoreError, World,
};
use tokio::sync::{mpsc, watch, Semaphore};
use tokio::task::JoinSet;

use crate::clock::SimClock;
use crate::outcome::{Fate, FormedMatch, Kind, ReadyStats, Run, Shape};
use crate::scenario::Scenario;
use crate::stats::Dist;

/// Beyond this p95 lag of joins (or answers) behind their time (simulated
/// seconds, one tick) a run is flagged as not keeping up.
const MAX_LAG: f64 = 1.0;
/// Beyond this fraction of skipped ticks a run is flagged likewise.
const MAX_SKIPPED: f64 = 0.02;
/// How often (simulated seconds) the answerer looks for new proposals.
pub const POLL_SECONDS: f64 = 0.2;

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

/// What a simulated player does who does not accept a proposal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// Declines (after the answer delay): the proposal is cancelled at once.
    Decline,
    /// Never answers: the proposal times out after `acceptSeconds`.
    Silent,
}

impl Refusal {
    pub fn describe(self) -> &'static str {
        match self {
            Refusal::Decline => "declines",
            Refusal::Silent => "stays silent",
        }
    }
}

/// How the simulated players answer ready checks.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Answering {
    /// Each participant accepts with this probability.
    pub accept_probability: f64,
    /// What the others do.
    pub refusal: Refusal,
    /// Each answer is sent this many simulated seconds after the proposal
    /// was made, uniformly between the two.
    pub delay: (f64, f64),
    /// Seeds the decisions and delays.
    pub seed: u64,
}

impl Default for Answering {
    fn default() -> Self {
        Self {
            accept_probability: 1.0,
            refusal: Refusal::Decline,
            delay: (1.0, 5.0),
            seed: 7,
        }
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

/// How an arrival entered the world.
#[derive(Debug)]
enum Entered {
    /// Its ticket waits in the queue.
    Queued,
    /// It completed one or more matches at once.
    Matched(Vec<MatchRecord>),
    /// It completed a match that is a proposal (a ready check).
    Proposed(ProposalView),
    /// The core refused it (why).
    Refused(String),
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

fn player_of(scenario: &Scenario, i: usize) -> Result<(PlayerId, Rating), StoreError> {
    let a = &scenario.arrivals[i];
    let player = PlayerId::parse(&a.player)
        .map_err(|e| StoreError::Rejected(format!("player {:?}: {e}", a.player)))?;
    let rating = Rating::new(a.rating)
        .map_err(|e| StoreError::Rejected(format!("rating {}: {e}", a.rating)))?;
    Ok((player, rating))
}

/// Enters group `group` of the trace: a solo player joins; a party's
/// leader creates it and every invited member joins it, the last join
/// queueing (or matching) the party as one ticket. Every player's rating
/// arrives as the verified claim would; a fresh namespace has no
/// ratings-store entry to take precedence over it. These are the calls that
/// change with the core's join and party signatures. Returns the party id
/// (once created) and how the arrival entered.
async fn enter(
    store: &MatchStore,
    world: &World,
    scenario: &Scenario,
    group: usize,
) -> (Option<String>, Result<Entered, StoreError>) {
    let members = &scenario.groups[group].members;
    if members.len() == 1 {
        let result =
            match player_of(scenario, members[0]) {
                Ok((player, rating)) => store.join(world, &player, None, Some(rating)).await.map(
                    |outcome| match outcome {
                        JoinOutcome::Queued(_) => Entered::Queued,
                        JoinOutcome::Matched { formed, .. } => Entered::Matched(formed),
                        JoinOutcome::Proposed(view) => Entered::Proposed(view),
                        other => Entered::Refused(format!("{other:?}")),
                    },
                ),
                Err(e) => Err(e),
            };
        return (None, result);
    }
    let mut party_id = None;
    let result = async {
        let players = members
            .iter()
            .map(|&m| player_of(scenario, m))
            .collect::<Result<Vec<_>, _>>()?;
        let (leader, leader_rating) = &players[0];
        let invited: Vec<PlayerId> = players[1..].iter().map(|(p, _)| p.clone()).collect();
        let party = match use_cases::create_party(
            store,
            world,
            leader,
            &invited,
            None,
            Some(*leader_rating),
        )
        .await?
        {
            Ok(PartyCreateOutcome::Created(view)) => view.party_id,
            Ok(other) => return Ok(Entered::Refused(format!("CreateParty {other:?}"))),
            Err(rejection) => return Ok(Entered::Refused(format!("CreateParty {rejection}"))),
        };
        party_id = Some(party.to_string());
        let last = players.len() - 1;
        for (i, (player, rating)) in players.iter().enumerate().skip(1) {
            let outcome = store
                .join_party(world, &party, player, None, Some(*rating))
                .await?;
            return Ok(match outcome {
                PartyJoinOutcome::Joined(_) if i < last => continue,
                PartyJoinOutcome::Queued(_) if i == last => Entered::Queued,
                PartyJoinOutcome::Matched { formed, .. } if i == last => Entered::Matched(formed),
                PartyJoinOutcome::Proposed(view) if i == last => Entered::Proposed(view),
                other => Entered::Refused(format!("JoinParty (member {}) {other:?}", i + 1)),
            });
        }
        Ok(Entered::Refused("a party without invited members".into()))
    }
    .await;
    (party_id, result)
}

/// A proposal the answerer knows of.
#[derive(Debug, Clone)]
struct Proposal {
    id: String,
    /// Arrival indices of the participants.
    players: Vec<usize>,
    /// Simulated time it was made.
    created: f64,
    /// Learnt from a join's reply (else found by polling).
    from_join: bool,
}

/// One answer as it happened.
struct Answered {
    match_id: String,
    player: usize,
    accept: bool,
    /// When it was due and when it was sent (simulated seconds).
    due: f64,
    sent: f64,
    result: Result<AnswerOutcome, StoreError>,
}

/// What the answerer did.
#[derive(Default)]
struct AnswerLog {
    proposals: Vec<Proposal>,
    answers: Vec<Answered>,
    /// Participants of proposals that are not in the trace.
    unknown_players: usize,
    errors: Vec<String>,
}

/// The proposals (match id → stored JSON) that `seen` does not hold yet,
/// read from the proposals hash. The stored proposal carries `created`,
/// `acceptBy` (fake Unix ms) and `players` (see lua/_proposals.lua).
async fn new_proposals(
    store: &MatchStore,
    seen: &HashSet<String>,
) -> Result<Vec<serde_json::Value>, StoreError> {
    let key = store.keys().proposals();
    let ids: Vec<String> = store.command(redis::cmd("HKEYS").arg(&key)).await?;
    let new: Vec<String> = ids.into_iter().filter(|id| !seen.contains(id)).collect();
    if new.is_empty() {
        return Ok(Vec::new());
    }
    let values: Vec<Option<String>> = store
        .command(redis::cmd("HMGET").arg(&key).arg(&new))
        .await?;
    Ok(values
        .into_iter()
        .flatten()
        .filter_map(|json| serde_json::from_str(&json).ok())
        .collect())
}

/// Answers every proposal of the lane's world: each participant accepts
/// with the lane's probability after a random delay, or declines (or stays
/// silent). Proposals are learnt from the joins' replies (`from_joins`) and
/// by polling the proposals hash every [`POLL_SECONDS`] (the matcher's ticks
/// and the refills after a cancelled proposal make them too). Stops making
/// answers once `stop` is set, and returns when every answer sent has its
/// reply.
async fn answer_proposals(
    store: MatchStore,
    world: World,
    clock: SimClock,
    drive: Drive,
    answering: Answering,
    mut from_joins: mpsc::UnboundedReceiver<ProposalView>,
    stop: watch::Receiver<bool>,
) -> AnswerLog {
    let accept_ms = world
        .ready_check
        .map_or(0.0, |r| r.accept_within.as_secs_f64() * 1000.0);
    let mut rng = StdRng::seed_from_u64(answering.seed);
    let mut seen: HashSet<String> = HashSet::new();
    let mut log = AnswerLog::default();
    let mut tasks: JoinSet<Option<Answered>> = JoinSet::new();
    let permits = Arc::new(Semaphore::new(drive.in_flight));
    let mut poll = tokio::time::interval(Duration::from_secs_f64(POLL_SECONDS / clock.speed));
    poll.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    let to_player = |name: &str, log: &mut AnswerLog| -> Option<usize> {
        let i = drive.index.get(name).copied();
        if i.is_none() {
            log.unknown_players += 1;
        }
        i
    };
    loop {
        let found: Vec<Proposal> = tokio::select! {
            _ = stopped(stop.clone()) => break,
            Some(view) = from_joins.recv() => vec![Proposal {
                id: view.match_id.as_str().to_owned(),
                players: view
                    .participants
                    .iter()
                    .filter_map(|p| to_player(p.as_str(), &mut log))
                    .collect(),
                created: clock.sim_of_fake_ms(view.accept_by as f64 - accept_ms),
                from_join: true,
            }],
            _ = poll.tick() => match new_proposals(&store, &seen).await {
                Ok(stored) => stored
                    .iter()
                    .filter_map(|p| {
                        Some(Proposal {
                            id: p.get("id")?.as_str()?.to_owned(),
                            players: p
                                .get("players")?
                                .as_array()?
                                .iter()
                                .filter_map(|name| to_player(name.as_str()?, &mut log))
                                .collect(),
                            created: clock.sim_of_fake_ms(p.get("created")?.as_f64()?),
                            from_join: false,
                        })
                    })
                    .collect(),
                Err(e) => {
                    log.errors.push(format!("reading the proposals: {e}"));
                    Vec::new()
                }
            },
        };
        for proposal in found {
            if !seen.insert(proposal.id.clone()) {
                continue;
            }
            let Ok(match_id) = MatchId::parse(&proposal.id) else {
                log.errors
                    .push(format!("a proposal with the id {:?}", proposal.id));
                continue;
            };
            for &p in &proposal.players {
                let accept = rng.random::<f64>() < answering.accept_probability;
                let (lo, hi) = answering.delay;
                let due = proposal.created + lo + (hi - lo) * rng.random::<f64>();
                if !accept && answering.refusal == Refusal::Silent {
                    continue;
                }
                let Ok((player, _)) = player_of(&drive.scenario, p) else {
                    continue;
                };
                let (store, match_id, permits, stop) = (
                    store.clone(),
                    match_id.clone(),
                    permits.clone(),
                    stop.clone(),
                );
                tasks.spawn(async move {
                    tokio::select! {
                        _ = tokio::time::sleep_until(clock.real_at(due).into()) => {}
                        _ = stopped(stop) => return None,
                    }
                    let _permit = permits.acquire_owned().await.ok()?;
                    let sent = clock.sim_now();
                    let result =
                        use_cases::answer_proposal(&store, &NullPusher, &match_id, &player, accept)
                            .await;
                    Some(Answered {
                        match_id: match_id.as_str().to_owned(),
                        player: p,
                        accept,
                        due,
                        sent,
                        result,
                    })
                });
            }
            log.proposals.push(proposal);
        }
    }
    // Proposals the joins reported after the end are never answered: they
    // are still open at the end (their players are waiting).
    while let Some(res) = tasks.join_next().await {
        if let Ok(Some(answered)) = res {
            log.answers.push(answered);
        }
    }
    log
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
        let world = world.clone();
        let scenario = drive.scenario.clone();
        let tx = join_tx.clone();
        let proposals = proposal_tx.clone();
        tokio::spawn(async move {
            let now = clock.sim_now();
            let (party, result) = enter(&store, &world, &scenario, group).await;
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
    let end = end_state(&store, &world).await;
    let seen = Seen {
        joins,
        ticks,
        answers,
        end,
        skipped_ticks: skipped,
    };
    let mut run = assemble(label, kind, shape, &drive, &clock, seen);
    if let (Some(stats), Some(a)) = (run.ready.as_mut(), answering) {
        stats.accept_probability = a.accept_probability;
        stats.refusal = a.refusal.describe().to_owned();
    }
    notes.append(&mut run.notes);
    run.notes = notes;
    run
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

async fn end_state(store: &MatchStore, world: &World) -> Result<EndState, StoreError> {
    let k = store.keys();
    Ok(EndState {
        queue: store
            .command(
                redis::cmd("ZRANGE")
                    .arg(k.world(&world.name).queue)
                    .arg(0)
                    .arg(-1),
            )
            .await?,
        in_proposals: store
            .command(redis::cmd("HKEYS").arg(k.player_proposal()))
            .await?,
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

/// Turns what the lane saw into a [`Run`].
fn assemble(
    label: String,
    kind: Kind,
    shape: Shape,
    drive: &Drive,
    clock: &SimClock,
    seen: Seen,
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
        let formed = FormedMatch::new(scenario, clock.sim_of_fake_ms(at), players, teams);
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
        let mut stats = ReadyStats {
            proposals: log.proposals.len(),
            answers: log.answers.len(),
            ..ReadyStats::default()
        };
        let mut by_match: HashMap<&str, Vec<&Answered>> = HashMap::new();
        for a in &log.answers {
            by_match.entry(a.match_id.as_str()).or_default().push(a);
        }
        let mut removed_by_declines: HashSet<usize> = HashSet::new();
        let mut removed_by_timeouts: HashSet<usize> = HashSet::new();
        let mut late_answers = 0usize;
        for p in &log.proposals {
            let answers = by_match.get(p.id.as_str()).cloned().unwrap_or_default();
            for a in &answers {
                if let Ok(
                    AnswerOutcome::Cancelled { requeued, .. }
                    | AnswerOutcome::Expired { requeued, .. },
                ) = &a.result
                {
                    stats.requeued += requeued;
                }
            }
            let decline = answers
                .iter()
                .find(|a| !a.accept && matches!(a.result, Ok(AnswerOutcome::Cancelled { .. })));
            if answers
                .iter()
                .any(|a| matches!(a.result, Ok(AnswerOutcome::Matched { .. })))
            {
                stats.accepted += 1;
            } else if let Some(d) = decline {
                stats.declined += 1;
                removed_by_declines.extend(members_of(d.player));
            } else if open.contains(&p.id) {
                stats.pending += 1;
            } else {
                // Timed out: swept by a tick's housekeeping, or cancelled by
                // an answer that came too late. Whoever had not accepted is
                // removed, with their party.
                stats.timed_out += 1;
                if answers
                    .iter()
                    .any(|a| matches!(a.result, Ok(AnswerOutcome::Expired { .. })))
                {
                    late_answers += 1;
                }
                let accepted: HashSet<usize> = answers
                    .iter()
                    .filter(|a| {
                        a.accept
                            && matches!(
                                a.result,
                                Ok(AnswerOutcome::Accepted { .. }
                                    | AnswerOutcome::AlreadyAccepted { .. })
                            )
                    })
                    .map(|a| a.player)
                    .collect();
                for &player in &p.players {
                    if !accepted.contains(&player) {
                        removed_by_timeouts.extend(members_of(player));
                    }
                }
            }
        }
        let mut removed_but_there = 0usize;
        for &p in removed_by_declines.iter().chain(&removed_by_timeouts) {
            match fates[p] {
                Fate::Expired => fates[p] = Fate::Removed,
                Fate::Removed => {}
                _ => removed_but_there += 1,
            }
        }
        stats.removed_by_declines = removed_by_declines.len();
        stats.removed_by_timeouts = removed_by_timeouts.len();
        let from_joins = log.proposals.iter().filter(|p| p.from_join).count();
        notes.push(format!(
            "ready check: {} proposals ({from_joins} from join replies, {} found by polling every {POLL_SECONDS} s), {} answers sent; {} accepted by all, {} declined, {} timed out ({} swept by the ticks' housekeeping, {late_answers} by a late answer), {} still open; {} tickets requeued",
            stats.proposals,
            stats.proposals - from_joins,
            stats.answers,
            stats.accepted,
            stats.declined,
            stats.timed_out,
            swept_proposals,
            stats.pending,
            stats.requeued
        ));
        let seen_swept = (stats.timed_out - late_answers) as u64;
        if swept_proposals > seen_swept {
            // Made and swept between two polls: the answerer fell behind.
            missed_proposals = Some(format!(
                "the answerer missed {} proposals (the ticks' housekeeping timed out {swept_proposals}, it saw {seen_swept} time out without a late answer)",
                swept_proposals - seen_swept
            ));
        } else if swept_proposals < seen_swept {
            notes.push(format!(
                "INCONSISTENT: the ticks' housekeeping timed out {swept_proposals} proposals, the simulator saw {seen_swept} time out without a late answer"
            ));
        }
        if removed_but_there > 0 || log.unknown_players > 0 {
            notes.push(format!(
                "INCONSISTENT: {removed_but_there} players counted as removed by a ready check are matched or waiting; {} proposal participants not in the trace",
                log.unknown_players
            ));
        }
        if !log.errors.is_empty() {
            failures += log.errors.len();
            notes.push(format!(
                "{} errors reading proposals, e.g. {}",
                log.errors.len(),
                log.errors[0]
            ));
        }
        ready = Some(stats);
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
