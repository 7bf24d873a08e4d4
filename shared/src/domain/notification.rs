//! Notifications: outbox entries and the messages pushed over the WebSocket.

use std::fmt;

use serde::Serialize;

use super::ids::{printable_excerpt, ConnectionId, MatchId, PlayerId, WorldName};
use super::matching::MatchRecord;
use crate::error::ValidationError;

/// What an outbox entry asks to be told, and to whom.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum NotificationKind {
    MatchFound { match_id: MatchId, player: PlayerId },
    TicketExpired { world: WorldName, player: PlayerId },
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
    /// Parses `M|<match id>|<player>` or `X|<world>|<player>`. Match ids and
    /// world names never contain `|`, so the player is everything after the
    /// second one.
    pub fn parse(raw: &str) -> Result<Self, ValidationError> {
        let bad = || ValidationError::BadNotificationId(printable_excerpt(raw));
        let (tag, rest) = raw.split_once('|').ok_or_else(bad)?;
        let (reference, player) = rest.split_once('|').ok_or_else(bad)?;
        let player = PlayerId::parse(player)?;
        let kind = match tag {
            "M" => NotificationKind::MatchFound {
                match_id: MatchId::parse(reference)?,
                player,
            },
            "X" => NotificationKind::TicketExpired {
                world: WorldName::parse(reference)?,
                player,
            },
            _ => return Err(bad()),
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

    pub fn player(&self) -> &PlayerId {
        match &self.kind {
            NotificationKind::MatchFound { player, .. }
            | NotificationKind::TicketExpired { player, .. } => player,
        }
    }
}

impl fmt::Display for NotificationId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.raw)
    }
}

/// A notification waiting in the outbox.
#[derive(Debug, Clone, PartialEq)]
pub enum Notification {
    /// Tell `player` about `record`; `record` is `None` when the match record
    /// has expired before delivery (the entry is then dropped).
    MatchFound {
        match_id: MatchId,
        player: PlayerId,
        record: Option<MatchRecord>,
    },
    TicketExpired {
        world: WorldName,
        player: PlayerId,
    },
}

impl Notification {
    pub fn player(&self) -> &PlayerId {
        match self {
            Notification::MatchFound { player, .. }
            | Notification::TicketExpired { player, .. } => player,
        }
    }
}

/// A claimed outbox entry: what to deliver, to which connections, and how
/// often delivery was tried.
#[derive(Debug, Clone, PartialEq)]
pub struct OutboxEntry {
    /// The entry's id, to settle it with.
    pub id: NotificationId,
    pub notification: Notification,
    /// Attempts so far, including the current one.
    pub attempts: u32,
    /// How long ago delivery was first attempted, by Redis's clock;
    /// undeliverable entries are dropped once this exceeds the match lifetime.
    pub age_ms: u64,
    /// The player's registered WebSocket connections right now.
    pub connections: Vec<ConnectionId>,
}

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
    },
    MatchFound(MatchRecord),
    #[serde(rename_all = "camelCase")]
    TicketExpired {
        world_type: WorldName,
    },
}

impl ServerMessage {
    pub fn to_json(&self) -> String {
        // Serializing these plain structs cannot fail.
        serde_json::to_string(self).unwrap_or_else(|_| String::from("{}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notification_ids_parse_players_with_separators() {
        let id = NotificationId::parse("M|18f-2a|a|b").unwrap();
        assert_eq!(id.as_str(), "M|18f-2a|a|b");
        assert_eq!(
            id.kind(),
            &NotificationKind::MatchFound {
                match_id: MatchId::parse("18f-2a").unwrap(),
                player: PlayerId::parse("a|b").unwrap(),
            }
        );
        let expired = NotificationId::parse("X|world2|p:1").unwrap();
        assert_eq!(expired.player(), "p:1");
        for bad in ["Q|x|y", "M|no-player", "M|Bad Id|p", "X|World|p", "M|1-a|"] {
            assert!(NotificationId::parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn server_messages_have_a_type_tag() {
        let msg = ServerMessage::TicketExpired {
            world_type: WorldName::parse("world1").unwrap(),
        };
        assert_eq!(
            msg.to_json(),
            r#"{"type":"TICKET_EXPIRED","worldType":"world1"}"#
        );
        let found = ServerMessage::MatchFound(MatchRecord {
            match_id: MatchId::parse("m1").unwrap(),
            world_type: WorldName::parse("world1").unwrap(),
            participants: vec![PlayerId::parse("a").unwrap()],
            matched_at: 5,
            player_data: None,
        });
        assert_eq!(
            found.to_json(),
            r#"{"type":"MATCH_FOUND","matchId":"m1","worldType":"world1","participants":["a"],"matchedAt":5}"#
        );
    }
}
