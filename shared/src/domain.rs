//! Domain types: validated identifiers, match records and the typed outcomes
//! of every queue operation. Nothing here talks to Redis.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::error::ValidationError;

/// Largest ticket data accepted, in bytes of compact JSON.
pub const MAX_TICKET_DATA_BYTES: usize = 4096;
/// Deepest nesting of ticket data accepted (the object itself is level 1).
/// The data is embedded in match records and pushes, which JSON parsers
/// (serde_json: 128 levels) must still read with the record around it.
pub const MAX_TICKET_DATA_DEPTH: usize = 16;
/// Longest player id, in characters.
pub const MAX_PLAYER_ID_CHARS: usize = 128;
/// Longest world or namespace name, in characters.
pub const MAX_NAME_CHARS: usize = 32;
/// Longest WebSocket connection id, in characters.
pub const MAX_CONNECTION_ID_CHARS: usize = 128;

fn is_name_char(c: char) -> bool {
    c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-'
}

/// Checks the `[a-z0-9_-]{1,32}` shape shared by world names and namespaces.
pub(crate) fn check_name(kind: &'static str, s: &str) -> Result<(), ValidationError> {
    if s.is_empty() || s.len() > MAX_NAME_CHARS || !s.chars().all(is_name_char) {
        return Err(ValidationError::BadName {
            kind,
            value: printable_excerpt(s),
        });
    }
    Ok(())
}

/// A short, log- and message-safe rendering of untrusted input.
pub(crate) fn printable_excerpt(s: &str) -> String {
    let mut out: String = s.chars().take(40).flat_map(char::escape_debug).collect();
    if s.chars().count() > 40 {
        out.push('…');
    }
    out
}

/// A world (game mode / map) name: `[a-z0-9_-]{1,32}`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(transparent)]
pub struct WorldName(String);

impl WorldName {
    pub fn parse(s: &str) -> Result<Self, ValidationError> {
        check_name("world", s)?;
        Ok(Self(s.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for WorldName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A player id: 1–128 characters, none of them a control character. In the
/// deployed system it is the verified `sub` claim of the caller's JWT.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(transparent)]
pub struct PlayerId(String);

impl PlayerId {
    pub fn parse(s: &str) -> Result<Self, ValidationError> {
        let chars = s.chars().count();
        if chars == 0 || chars > MAX_PLAYER_ID_CHARS || s.chars().any(char::is_control) {
            return Err(ValidationError::BadPlayerId(printable_excerpt(s)));
        }
        Ok(Self(s.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for PlayerId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// An API Gateway WebSocket connection id (base64-like, e.g. `L0SM9cOFvHcCIhw=`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
#[serde(transparent)]
pub struct ConnectionId(String);

impl ConnectionId {
    pub fn parse(s: &str) -> Result<Self, ValidationError> {
        let ok = !s.is_empty()
            && s.len() <= MAX_CONNECTION_ID_CHARS
            && s.bytes().all(|b| {
                b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'=' | b'_' | b'-')
            });
        if !ok {
            return Err(ValidationError::BadConnectionId(printable_excerpt(s)));
        }
        Ok(Self(s.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for ConnectionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Optional data a player attaches to a ticket (e.g. skill, character): a JSON
/// object of at most 4 KiB, stored compact and handed to the match record.
#[derive(Debug, Clone, PartialEq)]
pub struct TicketData(String);

impl TicketData {
    pub fn from_value(value: &serde_json::Value) -> Result<Self, ValidationError> {
        if !value.is_object() {
            return Err(ValidationError::BadTicketData(
                "data must be a JSON object".into(),
            ));
        }
        if json_depth(value) > MAX_TICKET_DATA_DEPTH {
            return Err(ValidationError::BadTicketData(format!(
                "data is nested more than {MAX_TICKET_DATA_DEPTH} levels deep"
            )));
        }
        let compact = serde_json::to_string(value)
            .map_err(|e| ValidationError::BadTicketData(e.to_string()))?;
        if compact.len() > MAX_TICKET_DATA_BYTES {
            return Err(ValidationError::BadTicketData(format!(
                "data is {} bytes; at most {MAX_TICKET_DATA_BYTES} are allowed",
                compact.len()
            )));
        }
        Ok(Self(compact))
    }

    pub fn as_json(&self) -> &str {
        &self.0
    }
}

/// Nesting depth of a JSON value (a scalar is 0, `{}` and `[]` are 1),
/// without recursion, so hostile input cannot exhaust the stack.
fn json_depth(value: &serde_json::Value) -> usize {
    let mut deepest = 0;
    let mut pending = vec![(value, 1usize)];
    while let Some((v, depth)) = pending.pop() {
        let children: Box<dyn Iterator<Item = &serde_json::Value>> = match v {
            serde_json::Value::Array(items) => Box::new(items.iter()),
            serde_json::Value::Object(fields) => Box::new(fields.values()),
            _ => continue,
        };
        deepest = deepest.max(depth);
        pending.extend(children.map(|child| (child, depth + 1)));
    }
    deepest
}

/// A formed match, exactly as it is stored in Redis and sent to players.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MatchRecord {
    pub match_id: String,
    pub world_type: String,
    /// Players in queue order (oldest ticket first).
    pub participants: Vec<String>,
    /// Redis server time when the match was formed, in Unix milliseconds.
    pub matched_at: u64,
    /// Ticket data of the participants that attached some, by player id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub player_data: Option<serde_json::Map<String, serde_json::Value>>,
}

impl MatchRecord {
    pub fn includes(&self, player: &PlayerId) -> bool {
        self.participants.iter().any(|p| p == player.as_str())
    }
}

/// Where a ticket stands in its queue.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct QueuePosition {
    pub world_type: String,
    /// 1-based, counted from the front (the next to be matched is 1).
    pub position: u64,
    pub queue_size: u64,
    /// `None` while there is no recent match history to estimate from.
    pub estimated_wait_seconds: Option<u64>,
}

/// The reply to a join.
#[derive(Debug, Clone, PartialEq)]
pub enum JoinOutcome {
    Queued(QueuePosition),
    /// The join completed a group at once (instant match). `formed` holds all
    /// matches the call formed (normally just `record`), for pushing.
    Matched {
        record: MatchRecord,
        formed: Vec<MatchRecord>,
    },
    /// The player already waits (in this or another world); nothing changed.
    AlreadyQueued(QueuePosition),
    /// The world's queue is at its configured capacity; nothing changed.
    QueueFull {
        world_type: String,
        queue_size: u64,
    },
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
    NotQueued { queued_in: Option<String> },
}

/// A world's queue as seen by `queue-status`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct QueueStatus {
    pub world_type: String,
    pub waiting: u64,
    pub team_size: u32,
    /// Estimated wait of a player joining now; `None` without recent history.
    pub estimated_wait_seconds: Option<u64>,
    /// How long the ticket at the front has waited, in milliseconds.
    pub oldest_wait_ms: u64,
}

/// A player's state as seen by `my-status`.
#[derive(Debug, Clone, PartialEq)]
pub enum PlayerStatus {
    Idle,
    Queued(QueuePosition),
    Matched(MatchRecord),
}

/// Recent match throughput of a world, as the scripts report it: how many
/// players were matched within the statistics window, over what span.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct WaitStats {
    pub players_matched: u64,
    pub span_ms: u64,
}

/// Longest estimate ever reported; anything longer means "very long".
const MAX_ESTIMATE_SECS: u64 = 24 * 3600;

impl WaitStats {
    /// Estimated seconds until the ticket at `position` is matched: the players
    /// that must be matched up to and including its group, divided by the
    /// recent rate of matched players. Replaces the seed's constant
    /// `ceil(size/3)*30`, which ignored how fast the world actually matches.
    pub fn estimate(&self, position: u64, team_size: u32) -> Option<u64> {
        if self.players_matched == 0 || position == 0 {
            return None;
        }
        let team = u64::from(team_size.max(1));
        let needed = position.div_ceil(team) * team;
        // A span under a second would overstate the rate of a single burst.
        let span_ms = self.span_ms.max(1000);
        let secs = (needed as u128 * span_ms as u128).div_ceil(self.players_matched as u128 * 1000);
        Some(
            u64::try_from(secs)
                .unwrap_or(MAX_ESTIMATE_SECS)
                .min(MAX_ESTIMATE_SECS),
        )
    }
}

/// A notification waiting in the outbox.
#[derive(Debug, Clone, PartialEq)]
pub enum Notification {
    /// Tell `player` about `record`; `record` is `None` when the match record
    /// has expired before delivery (the entry is then dropped).
    MatchFound {
        match_id: String,
        player: String,
        record: Option<MatchRecord>,
    },
    TicketExpired {
        world: String,
        player: String,
    },
}

impl Notification {
    pub fn player(&self) -> &str {
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
    /// Opaque id to settle the entry with.
    pub id: String,
    pub notification: Notification,
    /// Attempts so far, including the current one.
    pub attempts: u32,
    /// When delivery was first attempted (Redis time, Unix ms); undeliverable
    /// entries are dropped once this is older than the match lifetime.
    pub first_attempt_ms: u64,
    /// The player's registered WebSocket connections right now.
    pub connections: Vec<String>,
}

/// Messages the server pushes over the WebSocket, as JSON with a `type`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ServerMessage {
    #[serde(rename_all = "camelCase")]
    Queued {
        world_type: String,
        position: u64,
        queue_size: u64,
        estimated_wait_seconds: Option<u64>,
    },
    MatchFound(MatchRecord),
    #[serde(rename_all = "camelCase")]
    TicketExpired {
        world_type: String,
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
    fn world_names_follow_the_documented_shape() {
        assert!(WorldName::parse("world1").is_ok());
        assert!(WorldName::parse("a_b-c").is_ok());
        assert!(WorldName::parse(&"a".repeat(32)).is_ok());
        for bad in [
            "",
            "World1",
            "w{1}",
            "w:1",
            "w*",
            "w 1",
            "w\n",
            &"a".repeat(33),
        ] {
            assert!(WorldName::parse(bad).is_err(), "{bad:?} must be rejected");
        }
    }

    #[test]
    fn player_ids_reject_control_characters_and_length() {
        assert!(PlayerId::parse("alice").is_ok());
        assert!(PlayerId::parse("{weird}:*|name 한").is_ok());
        assert!(PlayerId::parse(&"é".repeat(128)).is_ok());
        for bad in ["", "a\nb", "a\u{0}b", "\u{7f}", &"x".repeat(129)] {
            assert!(PlayerId::parse(bad).is_err(), "{bad:?} must be rejected");
        }
    }

    #[test]
    fn connection_ids_are_base64_like() {
        assert!(ConnectionId::parse("L0SM9cOFvHcCIhw=").is_ok());
        for bad in ["", "a b", "a|b", "a\nb", &"x".repeat(129)] {
            assert!(
                ConnectionId::parse(bad).is_err(),
                "{bad:?} must be rejected"
            );
        }
    }

    #[test]
    fn ticket_data_must_be_a_small_object() {
        let ok = serde_json::json!({"mmr": 1500, "class": "mage"});
        assert_eq!(
            TicketData::from_value(&ok).unwrap().as_json(),
            r#"{"class":"mage","mmr":1500}"#
        );
        assert!(TicketData::from_value(&serde_json::json!([1, 2])).is_err());
        let big = serde_json::json!({ "x": "y".repeat(MAX_TICKET_DATA_BYTES) });
        assert!(TicketData::from_value(&big).is_err());
        let nest = |levels: usize| {
            let mut v = serde_json::json!(1);
            for _ in 1..levels {
                v = serde_json::json!([v]);
            }
            serde_json::json!({ "x": v })
        };
        assert!(TicketData::from_value(&nest(MAX_TICKET_DATA_DEPTH)).is_ok());
        assert!(TicketData::from_value(&nest(MAX_TICKET_DATA_DEPTH + 1)).is_err());
    }

    #[test]
    fn wait_estimate_scales_with_position_and_rate() {
        let stats = WaitStats {
            players_matched: 30,
            span_ms: 60_000,
        }; // 0.5 player/s
        assert_eq!(stats.estimate(1, 3), Some(6)); // group of 3 at 0.5/s
        assert_eq!(stats.estimate(4, 3), Some(12));
        assert_eq!(WaitStats::default().estimate(1, 3), None);
        let burst = WaitStats {
            players_matched: 3,
            span_ms: 0,
        };
        assert_eq!(burst.estimate(3, 3), Some(1));
    }

    #[test]
    fn server_messages_have_a_type_tag() {
        let msg = ServerMessage::TicketExpired {
            world_type: "world1".into(),
        };
        assert_eq!(
            msg.to_json(),
            r#"{"type":"TICKET_EXPIRED","worldType":"world1"}"#
        );
        let found = ServerMessage::MatchFound(MatchRecord {
            match_id: "m1".into(),
            world_type: "world1".into(),
            participants: vec!["a".into()],
            matched_at: 5,
            player_data: None,
        });
        assert_eq!(
            found.to_json(),
            r#"{"type":"MATCH_FOUND","matchId":"m1","worldType":"world1","participants":["a"],"matchedAt":5}"#
        );
    }
}
