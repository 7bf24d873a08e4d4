//! The messages pushed over the WebSocket, and the notes the scripts store
//! for them.

use super::*;

/// The messages a note may hold, as the scripts write them (`_tickets.lua`):
/// read strictly, so a malformed note is an error, not a garbled push.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(tag = "type", rename_all = "SCREAMING_SNAKE_CASE", deny_unknown_fields)]
enum NoteMessage {
    #[serde(rename_all = "camelCase")]
    TicketExpired {
        world_type: WorldName,
    },
    #[serde(rename_all = "camelCase")]
    TicketRemoved {
        world_type: WorldName,
        reason: RemovalReason,
    },
    PartyUpdate {
        party: PartyView,
    },
    #[serde(rename_all = "camelCase")]
    PartyCancelled {
        party_id: PartyId,
        world_type: WorldName,
        reason: PartyCancelReason,
        #[serde(default)]
        by: Option<PlayerId>,
    },
    #[serde(rename_all = "camelCase")]
    MatchProposed {
        match_id: MatchId,
        world_type: WorldName,
        accept_by: u64,
        participants: Vec<PlayerId>,
        #[serde(default)]
        backfill_of: Option<MatchId>,
    },
    #[serde(rename_all = "camelCase")]
    MatchAcceptProgress {
        match_id: MatchId,
        world_type: WorldName,
        accepted: u64,
        total: u64,
    },
    #[serde(rename_all = "camelCase")]
    MatchCancelled {
        match_id: MatchId,
        world_type: WorldName,
        reason: ProposalCancelReason,
        requeued: bool,
    },
}

impl ServerMessage {
    /// Reads a note's message (JSON made by the scripts).
    pub fn from_note(json: &str) -> Result<Self, serde_json::Error> {
        Ok(match serde_json::from_str::<NoteMessage>(json)? {
            NoteMessage::TicketExpired { world_type } => {
                ServerMessage::TicketExpired { world_type }
            }
            NoteMessage::TicketRemoved { world_type, reason } => {
                ServerMessage::TicketRemoved { world_type, reason }
            }
            NoteMessage::PartyUpdate { party } => ServerMessage::PartyUpdate { party },
            NoteMessage::PartyCancelled {
                party_id,
                world_type,
                reason,
                by,
            } => ServerMessage::PartyCancelled {
                party_id,
                world_type,
                reason,
                by,
            },
            NoteMessage::MatchProposed {
                match_id,
                world_type,
                accept_by,
                participants,
                backfill_of,
            } => ServerMessage::MatchProposed {
                match_id,
                world_type,
                accept_by,
                participants,
                backfill_of,
            },
            NoteMessage::MatchAcceptProgress {
                match_id,
                world_type,
                accepted,
                total,
            } => ServerMessage::MatchAcceptProgress {
                match_id,
                world_type,
                accepted,
                total,
            },
            NoteMessage::MatchCancelled {
                match_id,
                world_type,
                reason,
                requeued,
            } => ServerMessage::MatchCancelled {
                match_id,
                world_type,
                reason,
                requeued,
            },
        })
    }
}

/// Largest WebSocket message API Gateway delivers (128 KB).
pub const MAX_MESSAGE_BYTES: usize = 128 * 1024;

/// Messages the server pushes over the WebSocket, as JSON with a `type`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ServerMessage {
    #[serde(rename_all = "camelCase")]
    Queued {
        world_type: WorldName,
        position: u64,
        queue_size: u64,
        estimated_wait_seconds: Option<u64>,
        /// A ticket waiting in several worlds of a queueGroup: the others.
        #[serde(skip_serializing_if = "Vec::is_empty")]
        also_queued_in: Vec<WorldName>,
    },
    #[serde(rename_all = "camelCase")]
    MatchFound {
        #[serde(flatten)]
        record: MatchRecord,
        /// Set when the participants' ticket data did not fit in one
        /// message: the full record is at `GET /v1/matching/matches/{id}`.
        #[serde(skip_serializing_if = "std::ops::Not::not")]
        player_data_omitted: bool,
        /// Set for players a backfill added to a running match.
        #[serde(skip_serializing_if = "std::ops::Not::not")]
        backfill: bool,
    },
    /// The studio's allocator assigned the match a server: where to
    /// connect, with this player's own token.
    #[serde(rename_all = "camelCase")]
    MatchAssigned {
        #[serde(flatten)]
        record: MatchRecord,
        assignment: SeatAssignment,
        #[serde(skip_serializing_if = "std::ops::Not::not")]
        player_data_omitted: bool,
    },
    /// The game server reported the result; `rating` is this player's
    /// rating change (rated worlds that update ratings).
    #[serde(rename_all = "camelCase")]
    MatchResult {
        match_id: MatchId,
        world_type: WorldName,
        result: MatchReport,
        #[serde(skip_serializing_if = "Option::is_none")]
        rating: Option<RatingChange>,
    },
    #[serde(rename_all = "camelCase")]
    TicketExpired { world_type: WorldName },
    #[serde(rename_all = "camelCase")]
    TicketRemoved {
        world_type: WorldName,
        reason: RemovalReason,
    },
    /// A party changed (invitation, a member joined, it entered the queue).
    PartyUpdate { party: PartyView },
    /// A party was cancelled; `by` is the member who caused it, if any.
    #[serde(rename_all = "camelCase")]
    PartyCancelled {
        party_id: PartyId,
        world_type: WorldName,
        reason: PartyCancelReason,
        #[serde(skip_serializing_if = "Option::is_none")]
        by: Option<PlayerId>,
    },
    /// A match was formed in a world with a ready check: accept (or
    /// decline) by `accept_by` with `POST /v1/matching/accept`.
    #[serde(rename_all = "camelCase")]
    MatchProposed {
        match_id: MatchId,
        world_type: WorldName,
        accept_by: u64,
        participants: Vec<PlayerId>,
        /// A backfill proposal: the running match these seats are in (only
        /// the new players are asked).
        #[serde(skip_serializing_if = "Option::is_none")]
        backfill_of: Option<MatchId>,
    },
    /// Someone accepted a proposal.
    #[serde(rename_all = "camelCase")]
    MatchAcceptProgress {
        match_id: MatchId,
        world_type: WorldName,
        accepted: u64,
        total: u64,
    },
    /// A proposal was cancelled; `requeued` tells this player whether their
    /// ticket went back to the queue (at its old place) or was removed.
    #[serde(rename_all = "camelCase")]
    MatchCancelled {
        match_id: MatchId,
        world_type: WorldName,
        reason: ProposalCancelReason,
        requeued: bool,
    },
    /// The answer to a client's heartbeat: whether the connection is (still)
    /// registered, and the timing the client should keep.
    #[serde(rename_all = "camelCase")]
    Pong {
        registered: bool,
        heartbeat_seconds: u64,
        presence_timeout_seconds: u64,
    },
}

/// A message that does not fit in one WebSocket message even without the
/// optional parts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("message of {bytes} bytes exceeds the {MAX_MESSAGE_BYTES}-byte WebSocket limit")]
pub struct MessageTooLarge {
    pub bytes: usize,
}

impl ServerMessage {
    pub fn match_found(record: MatchRecord) -> Self {
        ServerMessage::MatchFound {
            record,
            player_data_omitted: false,
            backfill: false,
        }
    }

    pub fn to_json(&self) -> String {
        // Serializing these plain structs cannot fail.
        serde_json::to_string(self).unwrap_or_else(|_| String::from("{}"))
    }

    /// The JSON to push, within API Gateway's message limit: a MATCH_FOUND
    /// whose ticket data does not fit goes without it (and says so).
    pub fn to_bounded_json(&self) -> Result<String, MessageTooLarge> {
        let json = self.to_json();
        if json.len() <= MAX_MESSAGE_BYTES {
            return Ok(json);
        }
        let slim = |record: &MatchRecord| MatchRecord {
            player_data: None,
            ..record.clone()
        };
        match self {
            ServerMessage::MatchFound {
                record, backfill, ..
            } if record.player_data.is_some() => {
                return ServerMessage::MatchFound {
                    record: slim(record),
                    player_data_omitted: true,
                    backfill: *backfill,
                }
                .to_bounded_json();
            }
            ServerMessage::MatchAssigned {
                record, assignment, ..
            } if record.player_data.is_some() => {
                return ServerMessage::MatchAssigned {
                    record: slim(record),
                    assignment: assignment.clone(),
                    player_data_omitted: true,
                }
                .to_bounded_json();
            }
            _ => {}
        }
        Err(MessageTooLarge { bytes: json.len() })
    }
}
