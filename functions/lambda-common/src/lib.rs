//! The AWS adapters every Lambda function shares, kept out of the core
//! (`shared` knows no AWS or HTTP type): the HTTP API mapping, WebSocket
//! route answers, the `@connections` pusher (feature `push`), the
//! EventBridge match-event sink (feature `events`, the matcher's), JWT
//! verification for `$connect` (feature `auth`), bootstrap, logging and
//! CloudWatch EMF metrics. Functions that do not push or verify tokens do
//! not link the AWS SDK or the JWT stack.

#[cfg(feature = "auth")]
pub mod auth;
pub mod bootstrap;
#[cfg(feature = "events")]
pub mod events;
pub mod http;
pub mod metrics;
#[cfg(feature = "push")]
pub mod push;
pub mod telemetry;
pub mod websocket;
