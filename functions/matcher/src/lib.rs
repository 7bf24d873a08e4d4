//! The matcher function. EventBridge schedules fire at most once a minute,
//! so each invocation runs the core's matcher loop ([`shared::matcher`]),
//! ticking every second until shortly before its deadline, and prints one
//! CloudWatch EMF line per world per tick.
//!
//! The deadline is the invocation's (`Lambda-Runtime-Deadline-Ms`) when it
//! is plausible: in the future and at most [`MAX_INVOCATION`] away, which
//! Lambda's always is. Emulators send other values (`cargo lambda watch`
//! sends `600000`, ten minutes after 1970), which would otherwise read as
//! "no time left" and return at once with 0 ticks. For those the invocation
//! runs the fallback, **one tick** (cut off after [`FALLBACK_TICK_LIMIT`]):
//! such a deadline never comes from Lambda, so the invoke is a developer's
//! local run, who wants to see a tick's result now, not a minute later; the
//! continuous loop is the deployed schedule's job (and the local stack's),
//! and a short run holds the matcher lease only briefly. The result says
//! which way it went (`"stop"`, see [`StopReason`]).

use std::io::Write;
use std::time::Duration;

use aws_lambda_events::event::eventbridge::EventBridgeEvent;
use lambda_common::metrics::{emf_line, WorldTickMetrics};
use lambda_runtime::LambdaEvent;
use shared::matcher::{run_until, MatcherLoop, Round, RunSummary, TickReport, TICK_PERIOD};
use shared::{EventSink, MatchStore, Pusher};
use tokio::time::Instant;

/// Time left unused before the invocation's deadline, for releasing the
/// lease and returning.
pub const DEADLINE_MARGIN: Duration = Duration::from_secs(2);

/// The longest a Lambda invocation can run (the maximum function timeout):
/// a deadline further away than this is not Lambda's.
pub const MAX_INVOCATION: Duration = Duration::from_secs(15 * 60);

/// The fallback run's one tick is cut off after this long (the template's
/// default function timeout; a tick takes milliseconds to a few seconds).
pub const FALLBACK_TICK_LIMIT: Duration = Duration::from_secs(10);

/// Why an invocation's loop stopped (`"stop"` in its result).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopReason {
    /// The invocation's deadline, less [`DEADLINE_MARGIN`], came: the
    /// normal end on AWS (with 0 ticks if less than a tick period was left).
    Deadline,
    /// The invocation's deadline was not plausible (`"fallbackReason"` says
    /// why), so the invocation ran the fallback: one tick.
    FallbackDeadline,
    /// Nothing was left to do: the matcher went to sleep and the invocation
    /// ended early (`MM_MATCHER_SLEEP`; the first operation that makes work
    /// wakes it, the schedule at the latest).
    Asleep,
}

impl StopReason {
    /// The value of `"stop"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Deadline => "deadline",
            Self::FallbackDeadline => "fallback-deadline",
            Self::Asleep => "asleep",
        }
    }
}

/// How long an invocation's loop runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LoopPlan {
    /// Until this many milliseconds from now (the invocation's deadline less
    /// the margin; zero when it is that close already).
    UntilDeadline(Duration),
    /// One tick; the reason the deadline was not used.
    Fallback(&'static str),
}

/// The deadline is in the past (or now): `cargo lambda watch` sends 600000.
pub const DEADLINE_IN_THE_PAST: &str = "the invocation deadline is not in the future";
/// The deadline is further away than any Lambda invocation can run.
pub const DEADLINE_TOO_FAR: &str = "the invocation deadline is more than 15 minutes away";

/// Decides how long to run for an invocation deadline of
/// `invocation_deadline_ms` (Unix milliseconds) at `now_ms`.
pub fn plan_loop(invocation_deadline_ms: u64, now_ms: u64, margin: Duration) -> LoopPlan {
    if invocation_deadline_ms <= now_ms {
        return LoopPlan::Fallback(DEADLINE_IN_THE_PAST);
    }
    let remaining = Duration::from_millis(invocation_deadline_ms - now_ms);
    if remaining > MAX_INVOCATION {
        return LoopPlan::Fallback(DEADLINE_TOO_FAR);
    }
    LoopPlan::UntilDeadline(remaining.saturating_sub(margin))
}

/// What an invocation did: the loop's totals and why it stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MatcherResult {
    pub summary: RunSummary,
    pub stop: StopReason,
    /// The deadline the invocation came with (Unix milliseconds).
    pub invocation_deadline_ms: u64,
    /// With [`StopReason::FallbackDeadline`]: why the deadline was not used.
    pub fallback_reason: Option<&'static str>,
}

impl MatcherResult {
    /// The invocation's JSON result: the totals (`"ticks"`,
    /// `"matchesFormed"`, ...), `"stop"`, `"invocationDeadlineMs"` and, for
    /// a fallback run, `"fallbackReason"`.
    pub fn to_json(&self) -> serde_json::Value {
        let mut json = serde_json::to_value(self.summary).unwrap_or_default();
        if let Some(object) = json.as_object_mut() {
            object.insert("stop".into(), self.stop.as_str().into());
            object.insert(
                "invocationDeadlineMs".into(),
                self.invocation_deadline_ms.into(),
            );
            if let Some(reason) = self.fallback_reason {
                object.insert("fallbackReason".into(), reason.into());
            }
        }
        json
    }
}

/// Writes one EMF line per world to stdout, where Lambda's log capture
/// turns them into CloudWatch metrics ([`write_metrics`]), when EMF lines
/// are on ([`lambda_common::metrics::stdout_enabled`]). Best effort: a
/// closed stdout must not take the matcher down.
pub fn print_metrics(report: &TickReport) {
    if !lambda_common::metrics::stdout_enabled() {
        return;
    }
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
    let mut out = std::io::stdout().lock();
    let _ = write_metrics(&mut out, report, now_ms).and_then(|()| out.flush());
}

/// Writes one EMF line per world of `report`, stamped `now_ms`; nothing for
/// an idle tick (nothing waited, formed, removed or delivered: an idle
/// deployment then pays for no custom-metric hours, and a missing data point
/// reads as nothing waiting).
pub fn write_metrics(
    out: &mut impl Write,
    report: &TickReport,
    now_ms: u64,
) -> std::io::Result<()> {
    if report.is_idle() {
        return Ok(());
    }
    for world in &report.worlds {
        writeln!(out, "{}", emf_line(&WorldTickMetrics::from(world), now_ms))?;
    }
    Ok(())
}

fn unix_now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// When the loop must stop: `margin` before the invocation's deadline
/// (Unix milliseconds), as an `Instant`. Takes the deadline as it is; see
/// [`plan_loop`] for which deadlines are used.
pub fn loop_deadline(invocation_deadline_ms: u64, margin: Duration) -> Instant {
    let remaining = Duration::from_millis(invocation_deadline_ms.saturating_sub(unix_now_ms()));
    Instant::now() + remaining.saturating_sub(margin)
}

/// The fallback run: one round (take the lease, tick if held), cut off
/// after `limit`, then release the lease.
pub async fn run_one_tick<P: Pusher, E: EventSink>(
    store: &MatchStore,
    pusher: &P,
    events: &E,
    limit: Duration,
    mut on_tick: impl FnMut(&TickReport),
) -> RunSummary {
    let mut matcher = MatcherLoop::new(store, pusher).with_events(events);
    let cut_off = match tokio::time::timeout(limit, matcher.round()).await {
        Ok(Round::Ticked(report) | Round::Slept(report)) => {
            on_tick(&report);
            false
        }
        Ok(Round::NotLeader | Round::Failed(_)) => false,
        Err(_) => {
            tracing::warn!(?limit, "tick cut off");
            true
        }
    };
    let mut summary = matcher.finish().await;
    if cut_off {
        summary.ticks_failed += 1;
    }
    summary
}

/// The scheduled invocation: loop until shortly before a plausible
/// deadline, or run one tick (see the crate docs); returns
/// [`MatcherResult::to_json`].
#[tracing::instrument(skip_all, fields(request_id = %event.context.request_id, source = %event.payload.source))]
pub async fn handle_schedule<P: Pusher, E: EventSink>(
    store: &MatchStore,
    pusher: &P,
    events: &E,
    event: LambdaEvent<EventBridgeEvent<serde_json::Value>>,
) -> Result<serde_json::Value, lambda_runtime::Error> {
    let result = run_invocation(store, pusher, events, event.context.deadline).await;
    tracing::info!(?result, "matcher invocation done");
    Ok(result.to_json())
}

/// One invocation with deadline `invocation_deadline_ms` (Unix
/// milliseconds), as [`handle_schedule`] runs it.
pub async fn run_invocation<P: Pusher, E: EventSink>(
    store: &MatchStore,
    pusher: &P,
    events: &E,
    invocation_deadline_ms: u64,
) -> MatcherResult {
    match plan_loop(invocation_deadline_ms, unix_now_ms(), DEADLINE_MARGIN) {
        LoopPlan::UntilDeadline(run_for) => {
            let summary = run_until(
                MatcherLoop::new(store, pusher).with_events(events),
                Instant::now() + run_for,
                TICK_PERIOD,
                print_metrics,
            )
            .await;
            MatcherResult {
                stop: if summary.slept {
                    StopReason::Asleep
                } else {
                    StopReason::Deadline
                },
                summary,
                invocation_deadline_ms,
                fallback_reason: None,
            }
        }
        LoopPlan::Fallback(reason) => {
            tracing::warn!(
                invocation_deadline_ms,
                reason,
                "implausible invocation deadline (not Lambda's): running one tick"
            );
            MatcherResult {
                summary: run_one_tick(store, pusher, events, FALLBACK_TICK_LIMIT, print_metrics)
                    .await,
                stop: StopReason::FallbackDeadline,
                invocation_deadline_ms,
                fallback_reason: Some(reason),
            }
        }
    }
}
