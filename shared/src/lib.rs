//! Matchmaking core shared by every Lambda function: configuration, domain
//! types, the Redis key layout, the embedded Lua scripts and the store that
//! runs them. Every state change is one atomic script, so joins, leaves and
//! any number of concurrent matchers can never race.

pub mod auth;
pub mod bootstrap;
pub mod config;
pub mod delivery;
pub mod domain;
pub mod error;
pub mod http;
pub mod keys;
pub mod metrics;
pub mod push;
pub mod scripts;
pub mod store;
pub mod telemetry;

pub use config::{Settings, World, WorldCatalog};
pub use delivery::{DeliveryReport, PushError, Pusher};
pub use domain::{
    ConnectionId, JoinOutcome, LeaveOutcome, MatchRecord, Notification, OutboxEntry, PlayerId,
    PlayerStatus, QueuePosition, QueueStatus, ServerMessage, TicketData, WorldName,
};
pub use error::{ConfigError, StoreError, ValidationError};
pub use keys::KeyLayout;
pub use store::{MatchBatch, MatchStore, Settlement};
