//! The matcher function. EventBridge schedules fire at most once a minute,
//! so each invocation runs the core's matcher loop ([`shared::matcher`]),
//! ticking every second until shortly before its deadline, and prints one
//! CloudWatch EMF line per world per tick.

use std::io::Write;
use std::time::Duration;

use aws_lambda_events::event::eventbridge::EventBridgeEvent;
use lambda_common::metrics::{emf_line, WorldTickMetrics};
use lambda_runtime::LambdaEvent;
use shared::matcher::{run_until, RunSummary, TickReport, TICK_PERIOD};
use shared::{MatchStore, Pusher};
use tokio::time::Instant;

/// Time left unused before the invocation's deadline, for releasing the
/// lease and returning.
pub const DEADLINE_MARGIN: Duration = Duration::from_secs(2);

/// Writes one EMF line per world to stdout, where Lambda's log capture
/// turns them into CloudWatch metrics. Best effort: a closed stdout must not
/// take the matcher down.
pub fn print_metrics(report: &TickReport) {
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
    let mut out = std::io::stdout().lock();
    let _ = write_metrics(&mut out, report, now_ms).and_then(|()| out.flush());
}

/// Writes one EMF line per world of `report`, stamped `now_ms`.
pub fn write_metrics(
    out: &mut impl Write,
    report: &TickReport,
    now_ms: u64,
) -> std::io::Result<()> {
    for world in &report.worlds {
        writeln!(out, "{}", emf_line(&WorldTickMetrics::from(world), now_ms))?;
    }
    Ok(())
}

/// When the loop must stop: `margin` before the invocation's deadline
/// (Unix milliseconds), as an `Instant`.
pub fn loop_deadline(invocation_deadline_ms: u64, margin: Duration) -> Instant {
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
    let remaining = Duration::from_millis(invocation_deadline_ms.saturating_sub(now_ms));
    Instant::now() + remaining.saturating_sub(margin)
}

/// The scheduled invocation: loop until shortly before the deadline and
/// return the totals.
#[tracing::instrument(skip_all, fields(request_id = %event.context.request_id, source = %event.payload.source))]
pub async fn handle_schedule<P: Pusher>(
    store: &MatchStore,
    pusher: &P,
    event: LambdaEvent<EventBridgeEvent<serde_json::Value>>,
) -> Result<RunSummary, lambda_runtime::Error> {
    let deadline = loop_deadline(event.context.deadline, DEADLINE_MARGIN);
    let summary = run_until(store, pusher, deadline, TICK_PERIOD, print_metrics).await;
    tracing::info!(?summary, "matcher invocation done");
    Ok(summary)
}
