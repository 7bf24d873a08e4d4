//! The operator's actions (the admin routes): each calls one store
//! operation, then is audited: a structured log line (target `audit`) and an
//! entry in the bounded audit list, a repeat that changed nothing included.

use std::time::{SystemTime, UNIX_EPOCH};

use crate::config::World;
use crate::domain::{
    AuditEntry, MatchId, MatchReport, PlayerId, ProposalCancellation, TicketRemoval,
};
use crate::error::StoreError;
use crate::store::MatchStore;

use super::lifecycle::{report_result, ResultReport};

/// Who acts, and the note they gave (both go into the audit).
#[derive(Debug, Clone, Copy)]
pub struct Operator<'a> {
    pub id: &'a PlayerId,
    pub note: Option<&'a str>,
}

/// What an audit entry is about.
#[derive(Default)]
struct Target<'a> {
    world: Option<&'a str>,
    player: Option<&'a PlayerId>,
    match_id: Option<&'a MatchId>,
}

/// Logs the action and appends it to the audit list. The action is done
/// already; an append that fails fails the request, which the operator
/// repeats (every action is idempotent), so the list misses no action
/// that was answered as done.
async fn audit(
    store: &MatchStore,
    operator: Operator<'_>,
    action: &str,
    target: Target<'_>,
    changed: bool,
) -> Result<(), StoreError> {
    let at = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
    let entry = AuditEntry {
        at,
        operator: operator.id.to_string(),
        action: action.to_owned(),
        world_type: target.world.map(str::to_owned),
        player_id: target.player.map(|p| p.to_string()),
        match_id: target.match_id.map(|m| m.to_string()),
        changed,
        note: operator.note.map(str::to_owned),
    };
    tracing::info!(
        target: "audit",
        operator = %entry.operator,
        action,
        world = entry.world_type.as_deref().unwrap_or(""),
        player = entry.player_id.as_deref().unwrap_or(""),
        match_id = entry.match_id.as_deref().unwrap_or(""),
        changed,
        note = entry.note.as_deref().unwrap_or(""),
        "operator action"
    );
    let json = serde_json::to_string(&entry)
        .map_err(|e| StoreError::UnexpectedReply(format!("audit entry: {e}")))?;
    store.audit_append(&json).await
}

/// Removes `player`'s waiting ticket (or their queued party's) from `world`.
pub async fn remove_ticket(
    store: &MatchStore,
    operator: Operator<'_>,
    world: &World,
    player: &PlayerId,
) -> Result<TicketRemoval, StoreError> {
    let outcome = store.admin_remove_ticket(world, player).await?;
    let target = Target {
        world: Some(world.name.as_str()),
        player: Some(player),
        ..Target::default()
    };
    let changed = matches!(outcome, TicketRemoval::Removed { .. });
    audit(store, operator, "REMOVE_TICKET", target, changed).await?;
    Ok(outcome)
}

/// Cancels the open proposal `id`; everyone in it is requeued.
pub async fn cancel_proposal(
    store: &MatchStore,
    operator: Operator<'_>,
    id: &MatchId,
) -> Result<ProposalCancellation, StoreError> {
    let outcome = store.admin_cancel_proposal(id).await?;
    let world = match &outcome {
        ProposalCancellation::Cancelled { world, .. } => Some(world.as_str()),
        ProposalCancellation::NotFound => None,
    };
    let target = Target {
        world,
        match_id: Some(id),
        ..Target::default()
    };
    let changed = matches!(outcome, ProposalCancellation::Cancelled { .. });
    audit(store, operator, "CANCEL_PROPOSAL", target, changed).await?;
    Ok(outcome)
}

/// Finishes match `id` with `report` (a result, as a game server would
/// report it), or voids it (`report.cancelled`: no rating moves). Only an
/// answer that is a success (recorded, or recorded before) is audited: a
/// refusal changed nothing and is logged as one.
pub async fn end_match(
    store: &MatchStore,
    operator: Operator<'_>,
    id: &MatchId,
    report: &MatchReport,
) -> Result<ResultReport, StoreError> {
    let outcome = report_result(store, id, report).await?;
    let (world, changed) = match &outcome {
        ResultReport::Finished(m) => (m.record.world_type.clone(), true),
        ResultReport::Unchanged(m) => (m.record.world_type.clone(), false),
        _ => return Ok(outcome),
    };
    let target = Target {
        world: Some(world.as_str()),
        match_id: Some(id),
        ..Target::default()
    };
    let action = if report.cancelled {
        "VOID_MATCH"
    } else {
        "FINISH_MATCH"
    };
    audit(store, operator, action, target, changed).await?;
    Ok(outcome)
}
