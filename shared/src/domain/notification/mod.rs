//! Notifications: outbox entries and the messages pushed over the WebSocket.

use std::fmt;

use serde::{Deserialize, Serialize};

use super::ids::{printable_excerpt, ConnectionId, MatchId, PartyId, PlayerId, WorldName};
use super::lifecycle::{MatchLifecycle, MatchReport, MatchState, SeatAssignment};
use super::matching::MatchRecord;
use super::party::{PartyCancelReason, PartyView};
use super::proposal::ProposalCancelReason;
use super::rating::RatingChange;
use crate::error::ValidationError;

mod message;

pub use message::{MessageTooLarge, ServerMessage, MAX_MESSAGE_BYTES};

/// Why a ticket was removed before it was matched.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum RemovalReason {
    /// The world requires presence and the player had no live connection.
    NoConnection,
    /// An operator removed it (the admin route).
    Operator,
}

/// What an outbox entry asks to be told, and to whom.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum NotificationKind {
    /// MATCH_FOUND to every participant of the match.
    MatchFound {
        match_id: MatchId,
    },
    /// MATCH_ASSIGNED (the server to connect to) to every participant.
    MatchAssigned {
        match_id: MatchId,
    },
    /// MATCH_RESULT (how it ended, their new rating) to every participant.
    MatchResult {
        match_id: MatchId,
    },
    /// MATCH_FOUND (marked backfill) and MATCH_ASSIGNED to the players one
    /// fill of a backfill added to a running match.
    BackfillFilled {
        match_id: MatchId,
        fill: u32,
    },
    /// No one to tell: the match's backfill lapsed (its event for the
    /// studio's allocator only); `at` is when (ms).
    BackfillExpired {
        match_id: MatchId,
        at: u64,
    },
    /// MATCH_FOUND again (MATCH_ASSIGNED once a server is assigned), to one
    /// connection that opened after the match formed and may have missed
    /// the first push.
    MatchReplay {
        match_id: MatchId,
        connection: ConnectionId,
    },
    TicketExpired {
        world: WorldName,
        player: PlayerId,
    },
    TicketRemoved {
        world: WorldName,
        player: PlayerId,
        reason: RemovalReason,
    },
    /// A message stored with its recipients (a note): party updates and
    /// cancellations, a party ticket's expiry or removal.
    Note {
        note: u64,
    },
}

/// The id of an outbox entry. Only the scripts make these (see `_lib.lua`,
/// "Outbox entry ids"); Rust parses them and hands the original text back
/// to settle the entry, so the format lives in one language.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct NotificationId {
    raw: String,
    kind: NotificationKind,
}

impl NotificationId {
    /// Parses `M|<match>`, `A|<match>`, `R|<match>`, `B|<match>|<fill>`,
    /// `C|<match>|<connection>`, `X|<world>|<player>`, `G|<world>|<player>`
    /// or `N|<note>`. Match ids and world names never
    /// contain `|`, so the last part is everything after the second one.
    pub fn parse(raw: &str) -> Result<Self, ValidationError> {
        let bad = || ValidationError::BadNotificationId(printable_excerpt(raw));
        let (tag, rest) = raw.split_once('|').ok_or_else(bad)?;
        let kind = match tag {
            "M" => NotificationKind::MatchFound {
                match_id: MatchId::parse(rest)?,
            },
            "A" => NotificationKind::MatchAssigned {
                match_id: MatchId::parse(rest)?,
            },
            "R" => NotificationKind::MatchResult {
                match_id: MatchId::parse(rest)?,
            },
            "N" => NotificationKind::Note {
                note: rest
                    .parse()
                    .ok()
                    .filter(|_| rest.bytes().all(|b| b.is_ascii_digit()))
                    .ok_or_else(bad)?,
            },
            _ => {
                let (reference, last) = rest.split_once('|').ok_or_else(bad)?;
                match tag {
                    "B" => NotificationKind::BackfillFilled {
                        match_id: MatchId::parse(reference)?,
                        fill: last
                            .parse()
                            .ok()
                            .filter(|_| last.bytes().all(|b| b.is_ascii_digit()))
                            .ok_or_else(bad)?,
                    },
                    "V" => NotificationKind::BackfillExpired {
                        match_id: MatchId::parse(reference)?,
                        at: last
                            .parse()
                            .ok()
                            .filter(|_| last.bytes().all(|b| b.is_ascii_digit()))
                            .ok_or_else(bad)?,
                    },
                    "C" => NotificationKind::MatchReplay {
                        match_id: MatchId::parse(reference)?,
                        connection: ConnectionId::parse(last)?,
                    },
                    "X" => NotificationKind::TicketExpired {
                        world: WorldName::parse(reference)?,
                        player: PlayerId::parse(last)?,
                    },
                    "G" => NotificationKind::TicketRemoved {
                        world: WorldName::parse(reference)?,
                        player: PlayerId::parse(last)?,
                        reason: RemovalReason::NoConnection,
                    },
                    _ => return Err(bad()),
                }
            }
        };
        Ok(Self {
            raw: raw.to_owned(),
            kind,
        })
    }

    pub fn as_str(&self) -> &str {
        &self.raw
    }

    pub fn kind(&self) -> &NotificationKind {
        &self.kind
    }
}

impl fmt::Display for NotificationId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.raw)
    }
}

/// One player an outbox entry still has to tell, with their connections as
/// the claim found them.
#[derive(Debug, Clone, PartialEq)]
pub struct Target {
    /// 1-based position among the entry's targets (what settling names).
    pub index: u32,
    pub player: PlayerId,
    pub connections: Vec<ConnectionId>,
    /// The connections among them registered moments ago: a 410 from one of
    /// these may only mean API Gateway has not finished its `$connect` yet.
    pub young: Vec<ConnectionId>,
}

/// A claimed outbox entry: what to deliver, to whom, and how often delivery
/// was tried.
#[derive(Debug, Clone, PartialEq)]
pub struct OutboxEntry {
    /// The entry's id, to settle it with.
    pub id: NotificationId,
    /// Attempts so far, including the current one.
    pub attempts: u32,
    /// How long ago delivery was first attempted, by Redis's clock;
    /// undeliverable entries are dropped once this exceeds the match lifetime.
    pub age_ms: u64,
    /// The match record of a match's entry; `None` once it has expired
    /// (the entry is then dropped).
    pub record: Option<MatchRecord>,
    /// What happened to that match since it formed.
    pub lifecycle: Option<MatchLifecycle>,
    /// A MATCH_FOUND entry whose match event (for the studio's allocator)
    /// is still to be sent: target 0 when settling.
    pub event_pending: bool,
    /// The message of a note entry; `None` once the note is gone.
    pub note: Option<ServerMessage>,
    /// The players still to tell.
    pub targets: Vec<Target>,
}

impl OutboxEntry {
    /// The event for the studio's allocator this entry carries, when it
    /// has a record: MatchFormed (M|), BackfillFilled (B|) or
    /// BackfillExpired (V|).
    pub fn event(&self) -> Option<super::lifecycle::MatchEvent> {
        use super::lifecycle::MatchEvent;
        let record = self.record.as_ref()?;
        match &self.id.kind {
            NotificationKind::MatchFound { .. } => Some(MatchEvent::of(record)),
            NotificationKind::BackfillFilled { fill, .. } => Some(MatchEvent::of_backfill(
                record,
                self.lifecycle.as_ref()?,
                Some(*fill),
            )),
            NotificationKind::BackfillExpired { .. } => Some(MatchEvent::of_backfill(
                record,
                self.lifecycle.as_ref()?,
                None,
            )),
            _ => None,
        }
    }

    /// Whether the messages differ per target (a player's own token or
    /// rating): built per target then, else once.
    pub fn is_personal(&self) -> bool {
        match &self.id.kind {
            NotificationKind::MatchAssigned { .. }
            | NotificationKind::MatchResult { .. }
            | NotificationKind::BackfillFilled { .. } => true,
            NotificationKind::MatchReplay { .. } => self.is_assigned(),
            _ => false,
        }
    }

    fn is_assigned(&self) -> bool {
        self.lifecycle
            .as_ref()
            .is_some_and(|l| l.assignment.is_some())
            && self.lifecycle.as_ref().map(|l| l.state) == Some(MatchState::Assigned)
    }

    /// The messages to push to `target`, in order, or `None` when there is
    /// nothing left to say (the match record expired before anyone was
    /// told).
    pub fn messages_for(&self, target: &Target) -> Option<Vec<ServerMessage>> {
        let player = &target.player;
        match &self.id.kind {
            NotificationKind::MatchAssigned { .. } => Some(vec![self.assigned_message(player)?]),
            NotificationKind::MatchReplay { .. } if self.is_assigned() => {
                Some(vec![self.assigned_message(player)?])
            }
            NotificationKind::BackfillFilled { .. } => {
                let found = ServerMessage::MatchFound {
                    record: self.record.clone()?,
                    player_data_omitted: false,
                    backfill: true,
                };
                let mut out = vec![found];
                if self.is_assigned() {
                    out.extend(self.assigned_message(player));
                }
                Some(out)
            }
            NotificationKind::MatchResult { .. } => {
                let record = self.record.as_ref()?;
                let life = self.lifecycle.as_ref()?;
                Some(vec![ServerMessage::MatchResult {
                    match_id: record.match_id.clone(),
                    world_type: record.world_type.clone(),
                    result: life.report.clone()?,
                    rating: life
                        .rating_changes
                        .as_ref()
                        .and_then(|changes| changes.get(player))
                        .copied(),
                }])
            }
            _ => self.message().map(|m| vec![m]),
        }
    }

    fn assigned_message(&self, player: &PlayerId) -> Option<ServerMessage> {
        let record = self.record.clone()?;
        let assignment = self
            .lifecycle
            .as_ref()?
            .assignment
            .as_ref()?
            .seat_of(player);
        Some(ServerMessage::MatchAssigned {
            record,
            assignment,
            player_data_omitted: false,
        })
    }

    /// The message every target hears (entries that are not personal), or
    /// `None` when there is nothing left to say.
    pub fn message(&self) -> Option<ServerMessage> {
        match &self.id.kind {
            NotificationKind::MatchFound { .. } | NotificationKind::MatchReplay { .. } => {
                self.record.clone().map(ServerMessage::match_found)
            }
            NotificationKind::MatchAssigned { .. }
            | NotificationKind::MatchResult { .. }
            | NotificationKind::BackfillFilled { .. }
            | NotificationKind::BackfillExpired { .. } => None,
            NotificationKind::TicketExpired { world, .. } => Some(ServerMessage::TicketExpired {
                world_type: world.clone(),
            }),
            NotificationKind::TicketRemoved { world, reason, .. } => {
                Some(ServerMessage::TicketRemoved {
                    world_type: world.clone(),
                    reason: *reason,
                })
            }
            NotificationKind::Note { .. } => self.note.clone(),
        }
    }
}

#[cfg(test)]
mod tests;
