//! What each queue operation came to: the typed outcomes, in one place
//! above the entities they carry (no entity module imports an outcome), and
//! the refusals every admission shares ([`Rejection`], decoded once by the
//! store and mapped once to an HTTP error).

use super::ids::{MatchId, PartyId, PlayerId, Rating, WorldName};
use super::lifecycle::{Backfill, MatchLifecycle, MatchWithLifecycle, SeatAssignment};
use super::matching::{MatchRecord, QueuePosition};
use super::notification::{NotificationId, OutboxEntry};
use super::party::PartyView;
use super::proposal::ProposalView;

/// Declares [`Rejection`] with the status each refusal has in a script's
/// reply (`lua/_admission.lua`), which is also the API error code it is
/// answered with (a test holds the script and the error codes to it).
macro_rules! rejections {
    ($( $(#[$doc:meta])* $variant:ident $({ $($field:ident: $ty:ty),* $(,)? })? $(($inner:ty))? = $status:literal, )+) => {
        /// Why a player may not take a new place (a ticket, a party seat):
        /// the refusals of the one admission that join, party creation and
        /// party join share. Nothing was written.
        #[derive(Debug, Clone, PartialEq)]
        pub enum Rejection {
            $( $(#[$doc])* $variant $({ $($field: $ty),* })? $(($inner))?, )+
        }

        impl Rejection {
            /// Every refusal's status, as the scripts answer it.
            pub const STATUSES: &'static [&'static str] = &[$( $status, )+];

            /// The status the scripts answer this refusal with (also its
            /// API error code).
            pub fn status(&self) -> &'static str {
                match self {
                    $( rejections!(@pattern $variant $({ $($field),* })? $(($inner))?) => $status, )+
                }
            }
        }
    };
    (@pattern $variant:ident { $($field:ident),* }) => { Rejection::$variant { .. } };
    (@pattern $variant:ident ($inner:ty)) => { Rejection::$variant(..) };
}

rejections! {
    /// The player already waits (in this or another world).
    AlreadyQueued(QueuePosition) = "ALREADY_QUEUED",
    /// The player (or their party) is in a ready check awaiting answers.
    ProposalPending(ProposalView) = "PROPOSAL_PENDING",
    /// The player belongs to a party (of `world_type`), which queues for them.
    InParty { party_id: PartyId, world_type: WorldName } = "IN_PARTY",
    /// The player declined or missed a ready check and may not join for
    /// `retry_after_ms` more.
    CoolingDown { retry_after_ms: u64 } = "COOLING_DOWN",
    /// The player's match is unfinished: assigned a server (or, where game
    /// servers are configured, formed) and no result in yet.
    InMatch { match_id: MatchId, assignment: Option<SeatAssignment> } = "IN_MATCH",
    /// The world's queue is at its configured capacity.
    QueueFull { world_type: WorldName, queue_size: u64 } = "QUEUE_FULL",
    /// The world requires presence and the player has no live WebSocket
    /// connection.
    NotConnected { world_type: WorldName } = "NOT_CONNECTED",
    /// A world with regions, no latencies given and no default region.
    LatencyRequired { world_type: WorldName } = "LATENCY_REQUIRED",
    /// A rated world, and no source has a rating for the player (no store
    /// entry, no claim, no default).
    RatingRequired { world_type: WorldName } = "RATING_REQUIRED",
    /// The player's rating is outside the configured range.
    InvalidRating { world_type: WorldName, rating: Rating } = "INVALID_RATING",
    /// An attribute the world needs (`missing: refuse`) has no value from
    /// its source (the body, or the trusted attribute store).
    AttributesRequired { world_type: WorldName, attribute: String } = "ATTRIBUTES_REQUIRED",
}

/// The reply to a join.
#[derive(Debug, Clone, PartialEq)]
pub enum JoinOutcome {
    Queued(QueuePosition),
    /// The join completed a group at once (instant match). `formed` holds all
    /// matches the call formed (normally just `record`).
    Matched {
        record: MatchRecord,
        formed: Vec<MatchRecord>,
        /// The matches' outbox entries, claimed by the join itself for
        /// delivery right away (what is not delivered stays in the outbox).
        claimed: Vec<OutboxEntry>,
    },
    /// The join formed a match that is a proposal awaiting everyone's
    /// answer (a ready check).
    Proposed(ProposalView),
    /// The player took a seat a running match's backfill had open: they
    /// play in that match (its server is assigned). `claimed`: the
    /// announcement's outbox entry, claimed for delivery right away.
    Backfilled {
        joined: Box<MatchWithLifecycle>,
        claimed: Vec<OutboxEntry>,
    },
    /// Refused by admission; nothing changed.
    Rejected(Rejection),
}

/// The reply to a leave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LeaveOutcome {
    Left {
        previous_position: u64,
        remaining_queue_size: u64,
    },
    /// The player has no ticket in that world. `queued_in` names the world the
    /// player waits in instead, if any.
    NotQueued { queued_in: Option<WorldName> },
}

/// A player's state as seen by `my-status`.
#[derive(Debug, Clone, PartialEq)]
pub enum PlayerStatus {
    Idle,
    /// Waiting, alone or with a party (`QueuePosition::party`).
    Queued(QueuePosition),
    /// In a party that is still assembling.
    Party(PartyView),
    /// In a match proposal awaiting answers (a ready check).
    Proposed(ProposalView),
    /// The player's latest match (while its record lives) and what
    /// happened to it since.
    Matched(Box<MatchWithLifecycle>),
}

/// The reply to creating a party.
#[derive(Debug, Clone, PartialEq)]
pub enum PartyCreateOutcome {
    Created(PartyView),
    /// An invited player waits in a queue, belongs to a party, is in a
    /// ready check, cools down or plays; nothing changed.
    MemberBusy {
        player: PlayerId,
    },
    /// The leader's admission refused; nothing changed.
    Rejected(Rejection),
}

/// The reply to joining a party.
#[derive(Debug, Clone, PartialEq)]
pub enum PartyJoinOutcome {
    /// Joined; others have still to join.
    Joined(PartyView),
    /// The player had already joined; nothing changed.
    AlreadyJoined(PartyView),
    /// The player was the last: the party waits in the queue as one ticket
    /// (the position carries the party).
    Queued(QueuePosition),
    /// The player was the last and the party's match is a proposal (a
    /// ready check) awaiting everyone's answer.
    Proposed(ProposalView),
    /// The player was the last and the party was matched at once.
    Matched {
        party: PartyView,
        record: Box<MatchRecord>,
        formed: Vec<MatchRecord>,
        /// The matches' outbox entries, claimed for delivery right away.
        claimed: Vec<OutboxEntry>,
    },
    /// No such party, or the player is not invited to it.
    NotFound,
    /// The party queues in other worlds of its queueGroup than the call
    /// described (`JoinInput::also`): these, in the party's order. Nothing
    /// changed; join again describing them (a party's worlds never change).
    OtherWorlds(Vec<WorldName>),
    /// The player's value of `attribute` differs from a member's, and a
    /// rule of the world needs it equal across the match; nothing changed.
    AttributesConflict {
        world_type: WorldName,
        attribute: String,
    },
    /// The player's admission refused; nothing changed.
    Rejected(Rejection),
}

/// The reply to cancelling a party.
#[derive(Debug, Clone, PartialEq)]
pub enum PartyCancelOutcome {
    /// Cancelled; the party as it was.
    Cancelled(PartyView),
    /// No such party, or the player is not a member of it.
    NotFound,
}

/// The reply to an answer to a proposal.
#[derive(Debug, Clone, PartialEq)]
pub enum AnswerOutcome {
    /// Accepted; others have still to answer.
    Accepted { accepted: u64, total: u64 },
    /// The player had accepted already; nothing changed.
    AlreadyAccepted { accepted: u64, total: u64 },
    /// The last accept: the match is final; `notification` announces it.
    Matched {
        record: Box<MatchRecord>,
        notification: NotificationId,
    },
    /// The last accept of a backfill proposal: its players joined the
    /// running match; `notification` announces it to them.
    Backfilled {
        joined: Box<MatchWithLifecycle>,
        notification: NotificationId,
    },
    /// Declined: the proposal is cancelled; `requeued` tickets went back to
    /// the queue of `world_type`.
    Cancelled {
        world_type: WorldName,
        requeued: u64,
    },
    /// Too late: the proposal was cancelled as timed out.
    Expired {
        world_type: WorldName,
        requeued: u64,
    },
    /// No such proposal, or the player is not in it.
    NotFound,
}

/// What storing an assignment came to.
#[derive(Debug, Clone, PartialEq)]
pub enum AssignOutcome {
    /// Stored; every participant will hear MATCH_ASSIGNED.
    Assigned(MatchWithLifecycle),
    /// This very assignment was stored already; nothing changed.
    Unchanged(MatchWithLifecycle),
    /// Another assignment is stored; nothing changed.
    Conflict(MatchLifecycle),
    /// The match has its result already; nothing changed.
    Finished(MatchLifecycle),
    /// The assignment names a player who is not in the match.
    NotParticipant(PlayerId),
    /// No such match, or its record expired.
    NotFound,
}

/// What storing a result came to.
#[derive(Debug, Clone, PartialEq)]
pub enum ResultOutcome {
    /// Stored, ratings updated, players to be told; the match is finished.
    Finished(MatchWithLifecycle),
    /// This very result was stored already; nothing changed.
    Unchanged(MatchWithLifecycle),
    /// Another result is stored; nothing changed.
    Conflict(MatchLifecycle),
    /// A rating or the record changed since they were read: compute again.
    Retry,
    NotFound,
}

/// What a backfill request came to.
#[derive(Debug, Clone, PartialEq)]
pub enum BackfillOutcome {
    /// Open (`replaced`: the match's previous backfill is gone).
    Open {
        backfill: Backfill,
        replaced: bool,
    },
    /// Renewed, or cancelled (as it was).
    Renewed(Backfill),
    Cancelled(Backfill),
    /// No such match (or its record expired): a request or a cancellation.
    MatchNotFound,
    /// The match has no open backfill (cancelled, filled, lapsed, never
    /// requested; a renewal also answers this for an unknown match).
    NotFound,
    /// The match has no server yet: a backfill belongs to a running match.
    NotAssigned,
    /// The match has its result.
    Finished,
    /// The teams do not fit the match or its world.
    Invalid(String),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_admission_script_answers_exactly_the_declared_refusals() {
        let lua = include_str!("../../../lua/_admission.lua");
        let code: String = lua
            .lines()
            .filter(|l| !l.trim_start().starts_with("--"))
            .collect::<Vec<_>>()
            .join("\n");
        let mut answered: Vec<&str> = code
            .split("return { '")
            .skip(1)
            .filter_map(|rest| rest.split('\'').next())
            .filter(|s| *s != "STALE")
            .collect();
        answered.sort_unstable();
        answered.dedup();
        let mut declared = Rejection::STATUSES.to_vec();
        declared.sort_unstable();
        assert_eq!(
            answered, declared,
            "lua/_admission.lua's refusals and Rejection differ"
        );
    }
}
