//! Domain types: validated identifiers, ticket data, match records, the
//! typed outcomes of every queue operation and the notifications. Nothing
//! here talks to Redis.

mod admin;
mod attributes;
mod ids;
pub mod integral;
mod latency;
mod lifecycle;
mod matching;
mod notification;
mod outcome;
mod party;
mod proposal;
mod rating;
mod ticket;

pub use admin::{
    AuditEntry, MatchesPage, OpenProposal, ProposalCancellation, TicketRemoval, TicketsPage,
    WaitingTicket, AUDIT_CAP, MAX_MATCHES_PAGE, MAX_NOTE_CHARS, MAX_TICKETS_PAGE,
};
pub use attributes::{
    format_number, is_token, AttributeError, AttributeValue, TicketAttributes,
    MAX_ATTRIBUTE_TOKEN_CHARS,
};
pub(crate) use ids::check_name;
pub use ids::{
    ConnectionId, MatchId, PartyId, PlayerId, Rating, WorldName, MAX_CONNECTION_ID_CHARS,
    MAX_MATCH_ID_CHARS, MAX_NAME_CHARS, MAX_PLAYER_ID_CHARS,
};
pub use latency::{Latencies, MAX_LATENCY_MS};
pub use lifecycle::{
    AddedPlayer, Addition, Assignment, Backfill, EventPlayer, LifecycleView, MatchEvent,
    MatchEventKind, MatchLifecycle, MatchReport, MatchState, MatchView, MatchWithLifecycle,
    Placing, PlayerAssignment, SeatAssignment, MAX_CONNECTION_CHARS, MAX_PROPERTIES_BYTES,
    MAX_TOKEN_CHARS,
};
pub use matching::{
    MatchRecord, PlayerAttributes, QueuePosition, QueueStatus, RatedTicket, RatingBucket,
    RatingDistribution, RuleOutcome, WaitStats,
};
pub use notification::{
    MessageTooLarge, NotificationId, NotificationKind, OutboxEntry, RemovalReason, ServerMessage,
    Target, MAX_MESSAGE_BYTES,
};
pub use outcome::{
    AnswerOutcome, AssignOutcome, BackfillOutcome, JoinOutcome, LeaveOutcome, PartyCancelOutcome,
    PartyCreateOutcome, PartyJoinOutcome, PlayerStatus, Rejection, ResultOutcome,
};
pub use party::{PartyCancelReason, PartyMember, PartyState, PartyView, TicketId};
pub use proposal::{ProposalCancelReason, ProposalView};
pub use rating::{RatingChange, RatingSystem, RatingUpdates, StoredRating};
pub use ticket::{TicketData, MAX_TICKET_DATA_BYTES, MAX_TICKET_DATA_DEPTH};
