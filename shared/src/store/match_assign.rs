//! `lua/match_assign.lua`: store a match's server assignment, once, and
//! announce it.

use super::reply::Reply;
use super::{millis, MatchStore};
use crate::domain::{AssignOutcome, Assignment, MatchId, MatchLifecycle, PlayerId};
use crate::error::StoreError;
use crate::scripts::SCRIPTS;

const SCRIPT: &str = "match_assign.lua";

impl MatchStore {
    /// Stores `assignment` (validated by the caller) for match `id`.
    pub async fn assign_match(
        &self,
        id: &MatchId,
        assignment: &Assignment,
    ) -> Result<AssignOutcome, StoreError> {
        let mut inv = SCRIPTS.match_assign.invocation(self.keys(), &[]);
        inv.arg(id.as_str())
            .arg(assignment.canonical_json())
            .arg(millis(self.settings().game_ttl));
        // A repeat finds the same assignment and changes nothing: safe to retry.
        let mut reply = Reply::new(SCRIPT, self.invoke(&inv, true).await?)?;
        let lifecycle = |reply: &mut Reply| -> Result<MatchLifecycle, StoreError> {
            let raw = reply.text("lifecycle")?;
            MatchLifecycle::parse(&raw)
                .map_err(|e| StoreError::UnexpectedReply(format!("{SCRIPT}: {e}")))
        };
        let outcome = match reply.text("status")?.as_str() {
            "ASSIGNED" => AssignOutcome::Assigned(reply.match_with_lifecycle()?),
            "ALREADY" => AssignOutcome::Unchanged(reply.match_with_lifecycle()?),
            "CONFLICT" => AssignOutcome::Conflict(lifecycle(&mut reply)?),
            "FINISHED" => AssignOutcome::Finished(lifecycle(&mut reply)?),
            "NOT_PARTICIPANT" => {
                AssignOutcome::NotParticipant(reply.parsed("player", PlayerId::parse)?)
            }
            "NOT_FOUND" => AssignOutcome::NotFound,
            other => {
                return Err(StoreError::UnexpectedReply(format!(
                    "{SCRIPT}: status {other:?}"
                )))
            }
        };
        reply.finish()?;
        Ok(outcome)
    }
}
