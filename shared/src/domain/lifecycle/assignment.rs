//! The server a match is assigned: what the studio's allocator stores and
//! what each player may be told of it.

use super::*;

/// Longest connection string an assignment may name.
pub const MAX_CONNECTION_CHARS: usize = 512;
/// Most bytes of an assignment's `properties` (compact JSON).
pub const MAX_PROPERTIES_BYTES: usize = 4096;
/// Longest per-player token.
pub const MAX_TOKEN_CHARS: usize = 512;

/// What one player may be told about their server: the connection, the
/// shared properties and their own token (never anyone else's).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SeatAssignment {
    pub connection: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub properties: Option<serde_json::Map<String, serde_json::Value>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
}

/// A player's own part of an assignment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlayerAssignment {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
}

/// The server the studio's allocator assigned to a match, as stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Assignment {
    /// Where the players connect, e.g. `203.0.113.7:7777` (opaque to us).
    pub connection: String,
    /// Anything else the game client needs, the same for every player.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub properties: Option<serde_json::Map<String, serde_json::Value>>,
    /// Per-player parts (a join token each), by player id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub players: Option<BTreeMap<PlayerId, PlayerAssignment>>,
}

impl Assignment {
    /// Checks the limits (connection 1..=512 characters, properties at
    /// most 4 KiB as JSON, tokens 1..=512 characters; no control
    /// characters in either string). Who the players are is checked against
    /// the match by [`Assignment::check_players`].
    pub fn validate(&self) -> Result<(), ValidationError> {
        let bad = |what: String| Err(ValidationError::BadAssignment(what));
        let chars = self.connection.chars().count();
        if chars == 0 || chars > MAX_CONNECTION_CHARS {
            return bad(format!(
                "connection must be 1..={MAX_CONNECTION_CHARS} characters, got {chars}"
            ));
        }
        if self.connection.chars().any(char::is_control) {
            return bad("connection must not contain control characters".into());
        }
        if let Some(properties) = &self.properties {
            let bytes = serde_json::to_string(properties).map_or(usize::MAX, |s| s.len());
            if bytes > MAX_PROPERTIES_BYTES {
                return bad(format!(
                    "properties must be at most {MAX_PROPERTIES_BYTES} bytes as JSON, got {bytes}"
                ));
            }
        }
        for (player, part) in self.players.iter().flatten() {
            if let Some(token) = &part.token {
                let n = token.chars().count();
                if n == 0 || n > MAX_TOKEN_CHARS || token.chars().any(char::is_control) {
                    return bad(format!(
                        "players.{}.token must be 1..={MAX_TOKEN_CHARS} characters without control characters",
                        printable_excerpt(player.as_str())
                    ));
                }
            }
        }
        Ok(())
    }

    /// The first player named in `players` who is not in `record`.
    pub fn stranger<'a>(&'a self, record: &MatchRecord) -> Option<&'a PlayerId> {
        self.players
            .iter()
            .flatten()
            .map(|(p, _)| p)
            .find(|p| !record.includes(p))
    }

    /// What `player` is told: the shared part and their own token.
    pub fn seat_of(&self, player: &PlayerId) -> SeatAssignment {
        SeatAssignment {
            connection: self.connection.clone(),
            properties: self.properties.clone(),
            token: self
                .players
                .as_ref()
                .and_then(|ps| ps.get(player))
                .and_then(|part| part.token.clone()),
        }
    }

    /// The stored form: canonical JSON (object keys sorted; the same
    /// assignment is always the same text), so the script can tell an
    /// identical repeat from a different one.
    pub fn canonical_json(&self) -> String {
        canonical(self)
    }
}
