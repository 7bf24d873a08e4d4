//! What the operator sees and does (the admin routes): pages of a world's
//! waiting tickets and matches, the outcomes of the operator's actions and
//! their audit entries.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{MatchId, MatchWithLifecycle, PartyId, PlayerId, Rating, WorldName};

/// Most tickets one page reads (`lua/admin_tickets.lua` refuses more).
pub const MAX_TICKETS_PAGE: u32 = 200;
/// Most matches (and proposals) one page returns.
pub const MAX_MATCHES_PAGE: u32 = 100;
/// Entries the audit list keeps (the oldest go first).
pub const AUDIT_CAP: u32 = 1000;
/// Longest note an operator may attach to an action.
pub const MAX_NOTE_CHARS: usize = 200;

/// One waiting ticket as the operator sees it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WaitingTicket {
    /// The player, or a party ticket's members.
    pub players: Vec<PlayerId>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub party_id: Option<PartyId>,
    /// The ticket's place in the FIFO order (the next page starts after it).
    pub seq: u64,
    pub joined_at: u64,
    pub wait_ms: u64,
    pub deadline_at: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data: Option<serde_json::Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rating: Option<Rating>,
    /// Worlds with regions: the regions within the ticket's latency cap (ms).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub latencies: Option<BTreeMap<String, u64>>,
}

/// One page of a world's waiting tickets, oldest first.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TicketsPage {
    pub world_type: WorldName,
    /// Every ticket waiting in the world (not only this page's).
    pub waiting: u64,
    pub tickets: Vec<WaitingTicket>,
    /// The `after` of the next page; absent at the end of the queue.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_after: Option<u64>,
}

/// An open match proposal (a ready check) as the operator sees it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct OpenProposal {
    pub match_id: MatchId,
    pub created_at: u64,
    pub accept_by: u64,
    pub players: Vec<PlayerId>,
    pub accepted: Vec<PlayerId>,
}

/// A world's open proposals and one page of its live matches.
#[derive(Debug, Clone)]
pub struct MatchesPage {
    /// Redis time of the read (ages are counted from it).
    pub now_ms: u64,
    pub proposals: Vec<OpenProposal>,
    pub matches: Vec<MatchWithLifecycle>,
    /// The `offset` of the next page; `None` at the end.
    pub next_offset: Option<u64>,
}

/// What removing a player's ticket did.
#[derive(Debug, Clone, PartialEq)]
pub enum TicketRemoval {
    Removed {
        previous_position: u64,
        remaining_queue_size: u64,
        players_told: u64,
    },
    /// Nothing waited to be removed; the player's state (`idle`, `ticket`,
    /// `party`, `proposal`, `match`, `cooldown`) and its world, if any.
    NotQueued {
        state: String,
        world: Option<String>,
    },
}

/// What cancelling a proposal did.
#[derive(Debug, Clone, PartialEq)]
pub enum ProposalCancellation {
    Cancelled {
        world: String,
        requeued: u64,
    },
    /// No open proposal has that id (answered, timed out, cancelled, never).
    NotFound,
}

/// One operator action, as the audit list keeps it and the log line says it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AuditEntry {
    /// When the action was taken (Unix ms, the function's clock).
    pub at: u64,
    /// The operator: the token's `sub`.
    pub operator: String,
    /// `REMOVE_TICKET`, `CANCEL_PROPOSAL`, `FINISH_MATCH`, `VOID_MATCH`.
    pub action: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub world_type: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub player_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub match_id: Option<String>,
    /// False for a repeat that found nothing to do.
    pub changed: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}
