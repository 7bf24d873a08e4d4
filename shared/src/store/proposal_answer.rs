//! `lua/proposal_answer.lua`: a participant accepts or declines a match
//! proposal (a ready check).

use serde::Deserialize;

use super::reply::Reply;
use super::MatchStore;
use crate::domain::{AnswerOutcome, MatchId, MatchRecord, NotificationId, PlayerId, WorldName};
use crate::error::StoreError;
use crate::scripts::SCRIPTS;

const SCRIPT: &str = "proposal_answer.lua";

/// The one field of a stored proposal needed to pick the world's keys.
#[derive(Deserialize)]
struct StoredProposal {
    world: String,
}

impl MatchStore {
    /// `player` accepts (`accept`) or declines proposal `id`.
    pub async fn answer_proposal(
        &self,
        id: &MatchId,
        player: &PlayerId,
        accept: bool,
    ) -> Result<AnswerOutcome, StoreError> {
        let k = self.keys();
        // The proposal's world decides which keys the script takes; it never
        // changes, and the script checks it again.
        let stored: Option<String> = self
            .command(redis::cmd("HGET").arg(k.proposals()).arg(id.as_str()))
            .await?;
        let Some(world) = stored
            .and_then(|json| serde_json::from_str::<StoredProposal>(&json).ok())
            .and_then(|p| WorldName::parse(&p.world).ok())
        else {
            return Ok(AnswerOutcome::NotFound);
        };
        // A world no longer configured has no rules to finish the match by;
        // housekeeping cancels its proposals.
        let Some(configured) = self.settings().worlds.get(&world) else {
            return Ok(AnswerOutcome::NotFound);
        };
        let config = self.world_config(configured)?;
        let mut inv = SCRIPTS
            .proposal_answer
            .invocation(k, &self.group_names(&world));
        inv.arg(player.as_str())
            .arg(id.as_str())
            .arg(if accept { "1" } else { "0" })
            .arg(config.as_ref());
        let mut reply = Reply::new(SCRIPT, self.invoke(&inv, false).await?)?;
        let outcome = match reply.text("status")?.as_str() {
            "ACCEPTED" => AnswerOutcome::Accepted {
                accepted: reply.uint("accepted")?,
                total: reply.uint("total")?,
            },
            "ALREADY" => AnswerOutcome::AlreadyAccepted {
                accepted: reply.uint("accepted")?,
                total: reply.uint("total")?,
            },
            "MATCHED" => AnswerOutcome::Matched {
                record: Box::new(reply.json::<MatchRecord>("match record")?),
                notification: reply.parsed("notification id", NotificationId::parse)?,
            },
            "BACKFILLED" => AnswerOutcome::Backfilled {
                joined: Box::new(reply.match_with_lifecycle()?),
                notification: reply.parsed("notification id", NotificationId::parse)?,
            },
            status @ ("CANCELLED" | "EXPIRED") => {
                let requeued = reply.uint("requeued")?;
                if status == "CANCELLED" {
                    AnswerOutcome::Cancelled {
                        world_type: world,
                        requeued,
                    }
                } else {
                    AnswerOutcome::Expired {
                        world_type: world,
                        requeued,
                    }
                }
            }
            "NOT_FOUND" => AnswerOutcome::NotFound,
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
