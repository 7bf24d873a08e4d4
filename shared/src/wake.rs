//! The sleeping matcher and what wakes it (`MM_MATCHER_SLEEP`).
//!
//! A matcher invocation whose tick finds nothing to do (no waiting ticket,
//! no assembling party, no open proposal or backfill, nothing to deliver)
//! calls [`MatchStore::matcher_sleep`](crate::MatchStore::matcher_sleep):
//! one script checks all of that and, when it holds, marks the matcher
//! asleep (the `matcher-asleep` key) and gives up the lease; the invocation
//! then ends instead of ticking for the rest of its minute. The first
//! script that makes work for the matcher (a ticket, a party, a proposal, a
//! backfill, an outbox entry) deletes the mark in the same atomic step and
//! says so in its reply, so exactly one caller wakes the matcher, through
//! the store's [`Waker`] ([`MatchStore::set_waker`](crate::MatchStore::set_waker);
//! EventBridge in AWS, which invokes the matcher; the local stack's bus
//! stand-in does the same). The once-a-minute schedule stays the safety
//! net: a wake-up that fails, or a process without a waker, is caught by
//! the next scheduled invocation, which runs at least one tick (housekeeping
//! included) before it sleeps again. While anything waits the matcher does
//! not sleep, so time-based work (windows widening, expiries, keep-alives)
//! stays on time.

use std::future::Future;
use std::pin::Pin;

/// Why a wake-up could not be sent (the schedule wakes the matcher within a
/// minute).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("waking the matcher failed: {0}")]
pub struct WakeError(pub String);

/// Wakes the sleeping matcher (starts an invocation of it). Object-safe: the
/// store holds one for the whole process.
pub trait Waker: Send + Sync {
    fn wake(&self) -> Pin<Box<dyn Future<Output = Result<(), WakeError>> + Send + '_>>;
}
