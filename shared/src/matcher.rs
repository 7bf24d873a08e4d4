//! The matcher loop. A tick forms matches and sweeps expired tickets in
//! every world, runs housekeeping, delivers the outbox (MATCH_FOUND,
//! TICKET_EXPIRED) and reports what it did. A Redis lease keeps one loop
//! active at a time; the atomic scripts make even concurrent ticks safe
//! (never a double match), the lease only avoids wasted work. The Lambda
//! function drives [`run_until`] from its schedule; the local stack ticks
//! through the same code. With `MM_MATCHER_SLEEP` a loop whose tick found
//! nothing to do goes to sleep and ends (see [`crate::wake`]).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use serde::Serialize;
use tokio::time::Instant;

use crate::config::World;
use crate::delivery::{drain_outbox, DeliveryReport, EventSink, NoEvents, Pusher};
use crate::domain::{MatchRecord, WorldName};
use crate::error::StoreError;
use crate::store::{Housekeeping, MatchStore};

/// How often the loop ticks.
pub const TICK_PERIOD: Duration = Duration::from_secs(1);
/// Lease lifetime; renewed every tick, so it only lapses when a loop stalls
/// or dies.
pub const LEASE_TTL: Duration = Duration::from_secs(5);
/// Expired tickets removed per world per tick.
const SWEEP_LIMIT: u64 = 1000;
/// Expired records removed per tick.
const HOUSEKEEPING_LIMIT: u64 = 1000;
/// Outbox entries tried this often without success (players unreachable
/// for a while) no longer keep the matcher awake: the schedule retries them.
pub const SLEEP_PATIENCE: u32 = 3;
/// How long one tick keeps calling a rated world's matcher step while
/// anchors are due (each call is bounded; this bounds the tick).
const RATED_BUDGET: Duration = Duration::from_millis(500);

/// Which world the next tick starts with (see [`tick_with_events`]).
static TICK_ROTATION: AtomicUsize = AtomicUsize::new(0);

/// What one tick did in one world.
#[derive(Debug, Clone, PartialEq)]
pub struct WorldTick {
    pub world: WorldName,
    /// Matches formed by this tick, oldest tickets first.
    pub formed: Vec<MatchRecord>,
    /// Tickets removed past their deadline (TICKET_EXPIRED).
    pub expired_tickets: u64,
    /// Tickets removed because their player had no live connection in a
    /// world that requires presence (TICKET_REMOVED).
    pub removed_tickets: u64,
    /// Queue after the tick.
    pub queue_depth: u64,
    pub oldest_wait_ms: u64,
}

impl WorldTick {
    /// Rated worlds: the mean spread (highest minus lowest rating) of the
    /// matches this tick formed; `None` without rated matches.
    pub fn mean_spread(&self) -> Option<f64> {
        let spreads: Vec<f64> = self.formed.iter().filter_map(|m| m.spread).collect();
        (!spreads.is_empty()).then(|| spreads.iter().sum::<f64>() / spreads.len() as f64)
    }

    pub fn matches_formed(&self) -> u64 {
        self.formed.len() as u64
    }

    pub fn players_matched(&self) -> u64 {
        self.formed
            .iter()
            .map(|m| m.participants.len() as u64)
            .sum()
    }
}

/// What one tick did.
#[derive(Debug, Clone, PartialEq)]
pub struct TickReport {
    pub worlds: Vec<WorldTick>,
    pub housekeeping: Housekeeping,
    pub delivery: DeliveryReport,
}

impl TickReport {
    /// Nothing waited, nothing was formed, removed or delivered: the tick
    /// of a matcher that may sleep (the sleep script checks the rest), and
    /// one without metrics worth writing.
    pub fn is_idle(&self) -> bool {
        self.delivery == DeliveryReport::default()
            && self.worlds.iter().all(|w| {
                w.formed.is_empty()
                    && w.expired_tickets == 0
                    && w.removed_tickets == 0
                    && w.queue_depth == 0
            })
    }
}

/// One tick: match, sweep, housekeeping, deliver, measure. Safe to run
/// concurrently with other ticks (each step is one atomic script). A Redis
/// failure ends the tick; whatever it did so far is consistent and the next
/// tick carries on.
/// Match events are not published (see [`tick_with_events`]).
pub async fn tick<P: Pusher>(store: &MatchStore, pusher: &P) -> Result<TickReport, StoreError> {
    tick_with_events(store, pusher, &NoEvents).await
}

/// [`tick`], publishing match events through `events`.
#[tracing::instrument(level = "debug", skip_all)]
pub async fn tick_with_events<P: Pusher, E: EventSink>(
    store: &MatchStore,
    pusher: &P,
    events: &E,
) -> Result<TickReport, StoreError> {
    let all: Vec<&World> = store.settings().worlds.iter().collect();
    let mut ticks: Vec<Option<WorldTick>> = vec![None; all.len()];
    let started = Instant::now();
    // Each tick starts one world further on: a ticket waiting in several
    // worlds of a queueGroup goes to whichever completes a match first,
    // and no world of the group always sees the shared tickets first.
    let first = TICK_ROTATION.fetch_add(1, Ordering::Relaxed) % all.len().max(1);
    for i in (first..all.len()).chain(0..first) {
        let world = all[i];
        let mut batch = store.form_matches(world, 0).await?;
        // A rated world tries a bounded number of anchors per call: call
        // again while more are due, within the tick's budget.
        while batch.more_due && started.elapsed() < RATED_BUDGET {
            let next = store.form_matches(world, 0).await?;
            batch.matches.extend(next.matches);
            batch.expired += next.expired;
            batch.removed += next.removed;
            batch.queue_size = next.queue_size;
            batch.more_due = next.more_due;
        }
        let expired = store.sweep_expired_tickets(world, SWEEP_LIMIT).await?;
        ticks[i] = Some(WorldTick {
            world: world.name.clone(),
            formed: batch.matches,
            expired_tickets: batch.expired + expired.len() as u64,
            removed_tickets: batch.removed,
            queue_depth: batch.queue_size,
            oldest_wait_ms: 0,
        });
    }
    let mut worlds: Vec<WorldTick> = ticks.into_iter().flatten().collect();
    let housekeeping = store.housekeeping(HOUSEKEEPING_LIMIT).await?;
    let delivery = drain_outbox(store, pusher, events).await?;
    for (world, report) in store.settings().worlds.iter().zip(worlds.iter_mut()) {
        let status = store.queue_status(world).await?;
        report.queue_depth = status.waiting;
        report.oldest_wait_ms = status.oldest_wait_ms;
    }
    Ok(TickReport {
        worlds,
        housekeeping,
        delivery,
    })
}

/// Totals of one loop, returned as the invocation's result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RunSummary {
    /// Ticks run while holding the lease.
    pub ticks: u64,
    /// Rounds skipped because another matcher held the lease.
    pub ticks_without_lease: u64,
    /// Rounds that failed (Redis unavailable, or cut off by the deadline).
    pub ticks_failed: u64,
    pub matches_formed: u64,
    pub players_matched: u64,
    pub expired_tickets: u64,
    pub notifications_delivered: u64,
    pub notifications_retried: u64,
    pub notifications_dropped: u64,
    pub gone_connections: u64,
    pub matches_removed: u64,
    pub connections_removed: u64,
    /// The loop went to sleep: nothing was left to do (`MM_MATCHER_SLEEP`).
    pub slept: bool,
}

impl RunSummary {
    fn add(&mut self, report: &TickReport) {
        self.ticks += 1;
        for world in &report.worlds {
            self.matches_formed += world.matches_formed();
            self.players_matched += world.players_matched();
            self.expired_tickets += world.expired_tickets;
        }
        self.notifications_delivered += report.delivery.delivered;
        self.notifications_retried += report.delivery.retried;
        self.notifications_dropped += report.delivery.dropped;
        self.gone_connections += report.delivery.gone_connections;
        self.matches_removed += report.housekeeping.matches_removed;
        self.connections_removed += report.housekeeping.connections_removed;
    }
}

/// What one round of the loop came to.
#[derive(Debug)]
pub enum Round {
    Ticked(TickReport),
    /// The tick found nothing to do and the matcher went to sleep (it gave
    /// up the lease; the first operation that makes work wakes it).
    Slept(TickReport),
    /// Another matcher holds the lease; nothing was done.
    NotLeader,
    Failed(StoreError),
}

/// One matcher loop: its lease token and running totals. [`run_until`]
/// drives it on a schedule; a local stack can drive it by hand.
pub struct MatcherLoop<'a, P, E = NoEvents> {
    store: &'a MatchStore,
    pusher: &'a P,
    events: &'a E,
    lease_token: String,
    summary: RunSummary,
    /// Whether an idle tick puts the matcher to sleep (`MM_MATCHER_SLEEP`).
    sleeps: bool,
}

impl<'a, P: Pusher> MatcherLoop<'a, P> {
    /// A loop that publishes no match events (see [`MatcherLoop::with_events`]).
    pub fn new(store: &'a MatchStore, pusher: &'a P) -> Self {
        Self {
            store,
            pusher,
            events: &NoEvents,
            // Random per loop, so a stale loop can never renew a successor's lease.
            lease_token: format!(
                "{:016x}{:016x}",
                rand::random::<u64>(),
                rand::random::<u64>()
            ),
            summary: RunSummary::default(),
            sleeps: store.settings().matcher_sleep,
        }
    }
}

impl<'a, P: Pusher, E: EventSink> MatcherLoop<'a, P, E> {
    /// The same loop, publishing match events through `events`.
    pub fn with_events<F: EventSink>(self, events: &'a F) -> MatcherLoop<'a, P, F> {
        MatcherLoop {
            store: self.store,
            pusher: self.pusher,
            events,
            lease_token: self.lease_token,
            summary: self.summary,
            sleeps: self.sleeps,
        }
    }

    /// The same loop with lease token `token` (a process that restarts its
    /// loop, like the local stack, keeps its lease instead of waiting for
    /// it to lapse).
    pub fn with_lease_token(mut self, token: String) -> Self {
        self.lease_token = token;
        self
    }

    pub fn summary(&self) -> RunSummary {
        self.summary
    }

    /// The token this loop holds the lease with.
    pub fn lease_token(&self) -> &str {
        &self.lease_token
    }

    /// Takes or renews the lease, then ticks if it holds it; after an idle
    /// tick, goes to sleep if it may and nothing is left to do.
    pub async fn round(&mut self) -> Round {
        let outcome = match self.store.acquire_lease(&self.lease_token, LEASE_TTL).await {
            Ok(false) => Round::NotLeader,
            Ok(true) => match tick_with_events(self.store, self.pusher, self.events).await {
                Ok(report) if self.sleeps && report.is_idle() => self.sleep(report).await,
                Ok(report) => Round::Ticked(report),
                Err(e) => Round::Failed(e),
            },
            Err(e) => Round::Failed(e),
        };
        match &outcome {
            Round::Slept(report) => {
                self.summary.add(report);
                self.summary.slept = true;
                tracing::info!("nothing to do: the matcher sleeps until woken");
            }
            Round::Ticked(report) => {
                self.summary.add(report);
                let formed: usize = report.worlds.iter().map(|w| w.formed.len()).sum();
                let expired: u64 = report.worlds.iter().map(|w| w.expired_tickets).sum();
                let retried_only = DeliveryReport {
                    retried: report.delivery.retried,
                    ..DeliveryReport::default()
                };
                if formed > 0 || expired > 0 || report.delivery != retried_only {
                    tracing::info!(
                        matches = formed,
                        expired,
                        delivered = report.delivery.delivered,
                        retried = report.delivery.retried,
                        dropped = report.delivery.dropped,
                        gone = report.delivery.gone_connections,
                        events = report.delivery.events,
                        "tick"
                    );
                } else if report.delivery.retried > 0 {
                    // Only pushes waiting for a player to connect (or a
                    // backoff to pass): routine, and every second or two.
                    tracing::debug!(retried = report.delivery.retried, "tick");
                }
            }
            Round::NotLeader => {
                self.summary.ticks_without_lease += 1;
                tracing::debug!("another matcher holds the lease");
            }
            Round::Failed(e) => {
                self.summary.ticks_failed += 1;
                tracing::warn!(error = %e, "tick failed; retrying next tick");
            }
        }
        outcome
    }

    /// After an idle tick: asleep if the sleep script finds nothing to do
    /// either (a failure only keeps the loop awake).
    async fn sleep(&self, report: TickReport) -> Round {
        match self
            .store
            .matcher_sleep(&self.lease_token, SLEEP_PATIENCE)
            .await
        {
            Ok(true) => Round::Slept(report),
            Ok(false) => Round::Ticked(report),
            Err(e) => {
                tracing::warn!(error = %e, "could not put the matcher to sleep; ticking on");
                Round::Ticked(report)
            }
        }
    }

    /// Releases the lease (best effort) and returns the totals.
    pub async fn finish(self) -> RunSummary {
        if let Err(e) = self.store.release_lease(&self.lease_token).await {
            // It expires by itself within LEASE_TTL.
            tracing::warn!(error = %e, "could not release the matcher lease");
        }
        self.summary
    }
}

/// Ticks every `period` and returns before `deadline`: a round starts only
/// if a whole period fits before it, and a round still running at the
/// deadline is cut off (its claimed notifications become due again later).
/// Returns at once when the matcher went to sleep (`slept` in the summary).
/// `on_tick` sees every completed tick (the Lambda prints its metrics).
pub async fn run_until<P: Pusher, E: EventSink>(
    mut matcher: MatcherLoop<'_, P, E>,
    deadline: Instant,
    period: Duration,
    mut on_tick: impl FnMut(&TickReport),
) -> RunSummary {
    let mut next = Instant::now();
    while next + period <= deadline {
        tokio::time::sleep_until(next).await;
        match tokio::time::timeout_at(deadline, matcher.round()).await {
            Ok(Round::Ticked(report)) => on_tick(&report),
            Ok(Round::Slept(report)) => {
                on_tick(&report);
                break;
            }
            Ok(Round::NotLeader | Round::Failed(_)) => {}
            Err(_) => {
                matcher.summary.ticks_failed += 1;
                tracing::warn!("tick cut off by the deadline");
                break;
            }
        }
        // A tick that overran its period is followed at once, not twice.
        next = (next + period).max(Instant::now());
    }
    matcher.finish().await
}
