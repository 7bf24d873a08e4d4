//! The local matcher: one task playing the scheduled Lambda, asleep
//! between schedules unless a join wakes it.

use super::*;

/// The matcher's task and what it takes to start another.
pub(crate) struct MatcherTask {
    pub(crate) running: Option<JoinHandle<()>>,
    pub(crate) store: MatchStore,
    pub(crate) pusher: ApiGatewayPusher,
    pub(crate) events: EventBridgeSink,
    pub(crate) period: Duration,
    /// Ticks completed, over every task this stack ran.
    pub(crate) ticks: Arc<AtomicU64>,
    /// Whether the matcher sleeps now (it went to sleep and was not woken).
    pub(crate) asleep: Arc<AtomicBool>,
    /// Where its wake-ups come from (the stand-in's wake rule).
    pub(crate) bus: Arc<EventBus>,
    /// The lease token of this stack's matcher, kept across restarts (one
    /// deployment: a restarted matcher need not wait for its own lease).
    pub(crate) lease_token: String,
}

impl MatcherTask {
    pub(crate) fn spawn(&mut self, shutdown: watch::Receiver<bool>) {
        self.running = Some(tokio::spawn(matcher_loop(
            MatcherRun {
                store: self.store.clone(),
                pusher: self.pusher.clone(),
                events: self.events.clone(),
                period: self.period,
                ticks: self.ticks.clone(),
                asleep: self.asleep.clone(),
                bus: self.bus.clone(),
                lease_token: self.lease_token.clone(),
            },
            shutdown,
        )));
    }
}

/// How often the deployed schedule starts a matcher invocation: the local
/// matcher, asleep, looks again this often even if nobody wakes it.
pub const SCHEDULE: Duration = Duration::from_secs(60);

/// What the matcher task runs with.
pub(crate) struct MatcherRun {
    pub(crate) store: MatchStore,
    pub(crate) pusher: ApiGatewayPusher,
    pub(crate) events: EventBridgeSink,
    pub(crate) period: Duration,
    pub(crate) ticks: Arc<AtomicU64>,
    pub(crate) asleep: Arc<AtomicBool>,
    pub(crate) bus: Arc<EventBus>,
    pub(crate) lease_token: String,
}

/// The matcher, ticking every `period` through the matcher function's own
/// loop (lease, tick, sleep), publishing match events through the deployed
/// matcher's sink. Asleep, it waits for a wake-up from the stand-in's wake
/// rule, or [`SCHEDULE`], as a sleeping deployment waits for an invocation.
pub(crate) async fn matcher_loop(run: MatcherRun, mut shutdown: watch::Receiver<bool>) {
    let mut matcher = shared::matcher::MatcherLoop::new(&run.store, &run.pusher)
        .with_events(&run.events)
        .with_lease_token(run.lease_token.clone());
    let mut interval = tokio::time::interval(run.period);
    interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = interval.tick() => {
                match matcher.round().await {
                    shared::matcher::Round::Ticked(_) => {
                        run.ticks.fetch_add(1, Ordering::Relaxed);
                    }
                    shared::matcher::Round::Slept(_) => {
                        run.ticks.fetch_add(1, Ordering::Relaxed);
                        run.asleep.store(true, Ordering::Relaxed);
                        tokio::select! {
                            _ = run.bus.matcher_woken() => {}
                            _ = tokio::time::sleep(SCHEDULE) => {}
                            _ = shutdown.changed() => return,
                        }
                        run.asleep.store(false, Ordering::Relaxed);
                        // A new invocation ticks at once.
                        interval.reset_immediately();
                    }
                    // Logged by the loop; the next tick carries on.
                    shared::matcher::Round::NotLeader | shared::matcher::Round::Failed(_) => {}
                }
            }
            _ = shutdown.changed() => return,
        }
    }
}
