//! The matchmaking core every function uses: configuration, domain types,
//! the Redis key layout, the embedded Lua scripts, the store that runs them,
//! outbox delivery through the [`Pusher`] port, the matcher loop and the use
//! cases the adapters call. It knows no AWS or HTTP type: the Lambda
//! adapters live in `functions/lambda-common`.
//!
//! Every state change is one atomic script, so joins, leaves and any number
//! of concurrent matchers can never race.

pub mod config;
pub mod delivery;
pub mod domain;
pub mod error;
pub mod keys;
pub mod matcher;
pub mod rules;
pub mod scripts;
pub mod store;
pub mod use_cases;
pub mod wake;

pub use config::{
    AdminScopes, AttributeCatalog, AttributeDecl, AttributeSource, AttributeType, BackfillBalance,
    BalanceRules, CompareOp, ListAggregate, MatchMode, MatchRule, Missing, NumberAggregate,
    PartyRating, RatingRules, RatingSettings, ReadyCheck, RegionRules, Relax, RuleKind, RuleValue,
    Settings, World, WorldCatalog, MAX_QUEUE_GROUP_WORLDS,
};
pub use delivery::{DeliveryReport, EventError, EventSink, NoEvents, PushError, Pusher};
pub use domain::{
    AnswerOutcome, Assignment, AttributeError, AttributeValue, ConnectionId, JoinOutcome,
    Latencies, LeaveOutcome, MatchEvent, MatchId, MatchLifecycle, MatchRecord, MatchReport,
    MatchState, MatchView, MatchWithLifecycle, NotificationId, NotificationKind, OutboxEntry,
    PartyCancelOutcome, PartyCancelReason, PartyCreateOutcome, PartyId, PartyJoinOutcome,
    PartyMember, PartyState, PartyView, PlayerId, PlayerStatus, ProposalCancelReason, ProposalView,
    QueuePosition, QueueStatus, Rating, RatingChange, RatingSystem, RatingUpdates, Rejection,
    RuleOutcome, SeatAssignment, ServerMessage, StoredRating, Target, TicketAttributes, TicketData,
    TicketId, WorldName,
};

pub use error::{ConfigError, StoreError, ValidationError};
pub use keys::{KeyLayout, PlayerState};
pub use store::{MatchBatch, MatchStore, Settlement};
pub use wake::{WakeError, Waker};
