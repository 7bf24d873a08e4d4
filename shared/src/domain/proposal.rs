//! Ready checks: a formed match is a proposal until every player accepts.

use serde::{Deserialize, Serialize};

use super::ids::{MatchId, PlayerId, WorldName};

/// A pending match proposal as its players see it (my-status). Made by the
/// scripts (`_proposals.lua` proposal_view).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProposalView {
    pub match_id: MatchId,
    pub world_type: WorldName,
    /// Unix ms: answers after this are too late.
    pub accept_by: u64,
    pub participants: Vec<PlayerId>,
    /// Who has accepted so far.
    #[serde(default)]
    pub accepted: Vec<PlayerId>,
}

/// Why a proposal was cancelled (MATCH_CANCELLED).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ProposalCancelReason {
    /// A player declined.
    Declined,
    /// A player left the queue.
    Left,
    /// Not everyone accepted in time.
    Timeout,
    /// The running match's backfill this proposal was for ended (lapsed,
    /// cancelled, replaced, or the match finished).
    BackfillEnded,
    /// An operator cancelled it (the admin route); everyone is requeued.
    Operator,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proposal_views_read_what_the_scripts_write() {
        let view: ProposalView = serde_json::from_str(
            r#"{"matchId":"1a-2","worldType":"duel","acceptBy":1732999999999,"participants":["a","b"]}"#,
        )
        .unwrap();
        assert!(view.accepted.is_empty());
        assert_eq!(view.participants.len(), 2);
    }
}
