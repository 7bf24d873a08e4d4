//! Validated identifiers. Each is parsed once where it enters the system
//! (a request, a token, a script reply) and carried typed from then on.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::error::ValidationError;

/// Longest player id, in characters.
pub const MAX_PLAYER_ID_CHARS: usize = 128;
/// Longest world or namespace name, in characters.
pub const MAX_NAME_CHARS: usize = 32;
/// Longest WebSocket connection id, in characters.
pub const MAX_CONNECTION_ID_CHARS: usize = 128;
/// Longest match id, in characters (the scripts make `<hex ms>-<hex seq>`).
pub const MAX_MATCH_ID_CHARS: usize = 64;

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

/// Implements the string plumbing every id type shares: `as_str`,
/// `Display`, comparison with `&str`, and `Deserialize` through `parse`, so
/// an id read back from Redis is validated like one from a request.
macro_rules! string_id {
    ($name:ident) => {
        impl $name {
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl std::ops::Deref for $name {
            type Target = str;
            fn deref(&self) -> &str {
                &self.0
            }
        }

        impl std::borrow::Borrow<str> for $name {
            fn borrow(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl PartialEq<str> for $name {
            fn eq(&self, other: &str) -> bool {
                self.0 == other
            }
        }

        impl PartialEq<String> for $name {
            fn eq(&self, other: &String) -> bool {
                &self.0 == other
            }
        }

        impl PartialEq<&str> for $name {
            fn eq(&self, other: &&str) -> bool {
                self.0 == *other
            }
        }

        impl TryFrom<String> for $name {
            type Error = ValidationError;
            fn try_from(s: String) -> Result<Self, Self::Error> {
                Self::parse(&s)
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let s = String::deserialize(d)?;
                Self::parse(&s).map_err(serde::de::Error::custom)
            }
        }
    };
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
}
string_id!(WorldName);

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
}
string_id!(PlayerId);

/// An API Gateway WebSocket connection id (base64-like, e.g. `L0SM9cOFvHcCIhw=`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
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
}
string_id!(ConnectionId);

/// A match id, made by the scripts from Redis time and a counter
/// (`<hex ms>-<hex seq>`): `[0-9a-z-]`, at most 64 characters.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(transparent)]
pub struct MatchId(String);

impl MatchId {
    pub fn parse(s: &str) -> Result<Self, ValidationError> {
        let ok = !s.is_empty()
            && s.len() <= MAX_MATCH_ID_CHARS
            && s.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
        if !ok {
            return Err(ValidationError::BadMatchId(printable_excerpt(s)));
        }
        Ok(Self(s.to_owned()))
    }
}
string_id!(MatchId);

/// A party id, made by the scripts: `<world>.<hex ms>-<hex seq>`, so the
/// world (and with it the keys to touch) is known from the id alone.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(transparent)]
pub struct PartyId(String);

impl PartyId {
    pub fn parse(s: &str) -> Result<Self, ValidationError> {
        let bad = || ValidationError::BadPartyId(printable_excerpt(s));
        let (world, rest) = s.split_once('.').ok_or_else(bad)?;
        check_name("world", world).map_err(|_| bad())?;
        let ok = !rest.is_empty()
            && rest.len() <= MAX_MATCH_ID_CHARS
            && rest
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
        if !ok {
            return Err(bad());
        }
        Ok(Self(s.to_owned()))
    }

    /// The world the party plays in.
    pub fn world(&self) -> WorldName {
        // Checked by `parse`.
        let world = self.0.split_once('.').map_or("", |(w, _)| w);
        WorldName(world.to_owned())
    }
}
string_id!(PartyId);

/// A player's rating (skill), from a trusted source only: the ratings store,
/// a verified token claim, or the configured default. Finite.
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Rating(f64);

impl Rating {
    pub fn new(value: f64) -> Result<Self, ValidationError> {
        if value.is_finite() {
            Ok(Self(value))
        } else {
            Err(ValidationError::BadRating(value.to_string()))
        }
    }

    /// Parses a rating written as a number (a claim value, a reply).
    pub fn parse(s: &str) -> Result<Self, ValidationError> {
        s.trim()
            .parse::<f64>()
            .map_err(|_| ValidationError::BadRating(printable_excerpt(s)))
            .and_then(Self::new)
    }

    pub fn value(self) -> f64 {
        self.0
    }
}

impl fmt::Display for Rating {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
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
    fn match_ids_are_what_the_scripts_make() {
        assert!(MatchId::parse("18f3a2b4c5d-2a").is_ok());
        for bad in ["", "a|b", "A-1", "x y", &"1".repeat(65)] {
            assert!(MatchId::parse(bad).is_err(), "{bad:?} must be rejected");
        }
    }

    #[test]
    fn ratings_are_finite_numbers() {
        assert_eq!(Rating::parse(" 1500.5 ").unwrap().value(), 1500.5);
        for bad in ["", "x", "NaN", "inf", "1e400"] {
            assert!(Rating::parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn ids_read_back_from_json_are_validated() {
        let ok: PlayerId = serde_json::from_str(r#""alice""#).unwrap();
        assert_eq!(ok, "alice");
        assert!(serde_json::from_str::<PlayerId>(r#""a\nb""#).is_err());
        assert!(serde_json::from_str::<WorldName>(r#""World""#).is_err());
    }
}
