//! The simulated players' answers to ready checks: every proposal of the
//! lane's world, found from the joins' replies and by polling, answered
//! through the core's `answer_proposal` use case; and what became of them.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use shared::{use_cases, AnswerOutcome, MatchId, MatchStore, ProposalView, StoreError, World};
use tokio::sync::{mpsc, watch, Semaphore};
use tokio::task::JoinSet;

use super::enter::player_of;
use super::{stopped, Drive, NullPusher};
use crate::clock::SimClock;
use crate::outcome::{Fate, ReadyStats};
use crate::scenario::Scenario;

/// How often (simulated seconds) the answerer looks for new proposals.
pub const POLL_SECONDS: f64 = 0.2;

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

/// A proposal the answerer knows of.
#[derive(Debug, Clone)]
pub(super) struct Proposal {
    pub(super) id: String,
    /// Arrival indices of the participants.
    pub(super) players: Vec<usize>,
    /// Simulated time it was made.
    pub(super) created: f64,
    /// Learnt from a join's reply (else found by polling).
    pub(super) from_join: bool,
}

/// One answer as it happened.
pub(super) struct Answered {
    pub(super) match_id: String,
    pub(super) player: usize,
    pub(super) accept: bool,
    /// When it was due and when it was sent (simulated seconds).
    pub(super) due: f64,
    pub(super) sent: f64,
    pub(super) result: Result<AnswerOutcome, StoreError>,
}

/// What the answerer did.
#[derive(Default)]
pub(super) struct AnswerLog {
    pub(super) proposals: Vec<Proposal>,
    pub(super) answers: Vec<Answered>,
    /// Participants of proposals that are not in the trace.
    pub(super) unknown_players: usize,
    pub(super) errors: Vec<String>,
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
pub(super) async fn answer_proposals(
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

/// What became of each proposal the answerer saw, and whom a failed one
/// removed (their fates become [`Fate::Removed`]). Notes go to `notes`; the
/// answerer's errors count as failures. The second value is why the run did
/// not keep up, when the answerer missed proposals.
pub(super) fn ready_outcome(
    log: &AnswerLog,
    scenario: &Scenario,
    open: &HashSet<String>,
    swept_proposals: u64,
    fates: &mut [Fate],
    notes: &mut Vec<String>,
    failures: &mut usize,
) -> (ReadyStats, Option<String>) {
    let members_of = |p: usize| &scenario.groups[scenario.arrivals[p].group].members;
    let mut missed_proposals = None;
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
                AnswerOutcome::Cancelled { requeued, .. } | AnswerOutcome::Expired { requeued, .. },
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
        *failures += log.errors.len();
        notes.push(format!(
            "{} errors reading proposals, e.g. {}",
            log.errors.len(),
            log.errors[0]
        ));
    }
    (stats, missed_proposals)
}
