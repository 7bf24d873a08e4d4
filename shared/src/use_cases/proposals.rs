//! Ready checks: answering a match proposal.

use crate::delivery::Pusher;
use crate::domain::{AnswerOutcome, MatchId, NotificationId, PlayerId};
use crate::error::StoreError;
use crate::store::MatchStore;

use super::push_notifications;

/// `player` accepts or declines proposal `id`. The last accept makes the
/// match final and MATCH_FOUND goes to every participant right away; a
/// decline (or a late answer) cancels the proposal, requeues everyone else
/// at their old place, and the world is matched again at once to refill the
/// missing seats.
#[tracing::instrument(level = "debug", skip(store, pusher))]
pub async fn answer_proposal<P: Pusher>(
    store: &MatchStore,
    pusher: &P,
    id: &MatchId,
    player: &PlayerId,
    accept: bool,
) -> Result<AnswerOutcome, StoreError> {
    let outcome = store.answer_proposal(id, player, accept).await?;
    match &outcome {
        AnswerOutcome::Matched { notification, .. }
        | AnswerOutcome::Backfilled { notification, .. } => {
            push_notifications(store, pusher, std::slice::from_ref(notification)).await;
        }
        AnswerOutcome::Cancelled { world_type, .. } | AnswerOutcome::Expired { world_type, .. } => {
            if let Some(world) = store.settings().worlds.get(world_type) {
                // Refill now rather than on the matcher's next tick. Matches
                // this forms are in the outbox either way; push them too.
                let batch = store.form_matches(world, 0).await?;
                let ids: Vec<NotificationId> = batch
                    .matches
                    .iter()
                    .filter_map(|m| NotificationId::parse(&format!("M|{}", m.match_id)).ok())
                    .collect();
                if !ids.is_empty() {
                    push_notifications(store, pusher, &ids).await;
                }
            }
        }
        AnswerOutcome::Accepted { .. }
        | AnswerOutcome::AlreadyAccepted { .. }
        | AnswerOutcome::NotFound => {}
    }
    Ok(outcome)
}
