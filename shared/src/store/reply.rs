//! A cursor over a script's flat reply. Every operation module reads its
//! script's reply front to back through it and calls [`Reply::finish`], so a
//! value missing from the reply, or one left over, is an error naming the
//! script, never a silently wrong field.

use serde::de::DeserializeOwned;

use redis::Value;

use crate::domain::{
    MatchLifecycle, MatchRecord, MatchWithLifecycle, NotificationId, NotificationKind, OutboxEntry,
    PlayerId, ServerMessage, Target,
};
use crate::error::StoreError;

/// The values of one script reply, consumed in order.
pub(crate) struct Reply {
    script: &'static str,
    values: std::vec::IntoIter<Value>,
    /// Index of the next value, for messages.
    next: usize,
}

/// The matches a join formed, read from the tail of its reply.
pub(crate) struct FormedMatches {
    /// The one that holds the joining player.
    pub record: MatchRecord,
    /// Every match formed (the player's among them).
    pub formed: Vec<MatchRecord>,
    /// Their outbox entries, claimed by the same call for delivery now.
    pub claimed: Vec<OutboxEntry>,
}

impl Reply {
    /// A reply that must be an array (the scripts' flat replies).
    pub fn new(script: &'static str, value: Value) -> Result<Self, StoreError> {
        match value {
            Value::Array(items) | Value::Set(items) => Ok(Self {
                script,
                values: items.into_iter(),
                next: 0,
            }),
            other => Err(StoreError::UnexpectedReply(format!(
                "{script}: expected an array, got {other:?}"
            ))),
        }
    }

    /// A reply that must be one integer (scripts that answer 0/1 or a count).
    pub fn integer(script: &'static str, value: Value) -> Result<i64, StoreError> {
        match value {
            Value::Int(n) => Ok(n),
            other => Err(StoreError::UnexpectedReply(format!(
                "{script}: expected an integer, got {other:?}"
            ))),
        }
    }

    fn error(&self, what: &str, detail: impl std::fmt::Display) -> StoreError {
        StoreError::UnexpectedReply(format!(
            "{}: value {} ({what}): {detail}",
            self.script,
            self.next.saturating_sub(1)
        ))
    }

    fn take(&mut self, what: &str) -> Result<Value, StoreError> {
        self.next += 1;
        self.values
            .next()
            .ok_or_else(|| self.error(what, "missing from the reply"))
    }

    /// How many values are left.
    pub fn remaining(&self) -> usize {
        self.values.len()
    }

    /// The next value as bytes.
    pub fn bytes(&mut self, what: &str) -> Result<Vec<u8>, StoreError> {
        match self.take(what)? {
            Value::BulkString(b) => Ok(b),
            Value::SimpleString(s) => Ok(s.into_bytes()),
            other => Err(self.error(what, format!("expected a string, got {other:?}"))),
        }
    }

    /// The next value as UTF-8 text.
    pub fn text(&mut self, what: &str) -> Result<String, StoreError> {
        let bytes = self.bytes(what)?;
        String::from_utf8(bytes).map_err(|_| self.error(what, "not UTF-8"))
    }

    /// The next value as text, `None` when it is empty (the scripts' "none").
    pub fn optional_text(&mut self, what: &str) -> Result<Option<String>, StoreError> {
        let text = self.text(what)?;
        Ok((!text.is_empty()).then_some(text))
    }

    /// The next value as a non-negative integer.
    pub fn uint(&mut self, what: &str) -> Result<u64, StoreError> {
        match self.take(what)? {
            Value::Int(n) => u64::try_from(n).map_err(|_| self.error(what, "negative")),
            other => Err(self.error(what, format!("expected an integer, got {other:?}"))),
        }
    }

    /// The next value parsed by `parse` (an id type's `parse`).
    pub fn parsed<T, E: std::fmt::Display>(
        &mut self,
        what: &str,
        parse: impl FnOnce(&str) -> Result<T, E>,
    ) -> Result<T, StoreError> {
        let text = self.text(what)?;
        parse(&text).map_err(|e| self.error(what, e))
    }

    /// The next value decoded from JSON.
    pub fn json<T: DeserializeOwned>(&mut self, what: &str) -> Result<T, StoreError> {
        let bytes = self.bytes(what)?;
        serde_json::from_slice(&bytes).map_err(|e| self.error(what, e))
    }

    /// The next value as JSON, or `None` when it is "" (nothing).
    pub fn optional_json<T: DeserializeOwned>(
        &mut self,
        what: &str,
    ) -> Result<Option<T>, StoreError> {
        let bytes = self.bytes(what)?;
        if bytes.is_empty() {
            return Ok(None);
        }
        serde_json::from_slice(&bytes)
            .map(Some)
            .map_err(|e| self.error(what, e))
    }

    /// The next two values as a world's wait statistics (players matched
    /// in the window, the span they were matched over).
    pub fn wait_stats(&mut self) -> Result<crate::domain::WaitStats, StoreError> {
        Ok(crate::domain::WaitStats {
            players_matched: self.uint("window players")?,
            span_ms: self.uint("window span")?,
        })
    }

    /// The next value as a rating, `None` when empty.
    pub fn optional_rating(
        &mut self,
        what: &str,
    ) -> Result<Option<crate::domain::Rating>, StoreError> {
        let text = self.text(what)?;
        if text.is_empty() {
            return Ok(None);
        }
        crate::domain::Rating::parse(&text)
            .map(Some)
            .map_err(|e| self.error(what, e))
    }

    /// The next value as space-separated connection ids.
    pub fn connection_list(
        &mut self,
        what: &str,
    ) -> Result<Vec<crate::domain::ConnectionId>, StoreError> {
        let text = self.text(what)?;
        text.split_whitespace()
            .map(crate::domain::ConnectionId::parse)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| self.error(what, e))
    }

    /// World names, comma-separated ("" for none).
    pub fn world_list(&mut self, what: &str) -> Result<Vec<crate::domain::WorldName>, StoreError> {
        let text = self.text(what)?;
        text.split(',')
            .filter(|w| !w.is_empty())
            .map(crate::domain::WorldName::parse)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| self.error(what, e))
    }

    /// Ends the reply: every value must have been read.
    pub fn finish(self) -> Result<(), StoreError> {
        let left = self.values.len();
        if left > 0 {
            return Err(StoreError::UnexpectedReply(format!(
                "{}: {left} unexpected value(s) after value {}",
                self.script,
                self.next.saturating_sub(1)
            )));
        }
        Ok(())
    }

    /// Reads the rest of a MATCHED reply, `{ count, record JSON x count,
    /// claimed outbox entry... }` (join.lua and party_join.lua; entries as
    /// `_outbox.lua` claim_entries writes them), and finds the match that
    /// holds `player`.
    pub fn formed_matches(&mut self, player: &PlayerId) -> Result<FormedMatches, StoreError> {
        let count = self.uint("match count")?;
        let formed = (0..count)
            .map(|_| self.json::<MatchRecord>("match record"))
            .collect::<Result<Vec<_>, _>>()?;
        let mut claimed = Vec::new();
        while self.remaining() > 0 {
            claimed.push(self.outbox_entry()?);
        }
        let record = formed
            .iter()
            .find(|m| m.includes(player))
            .cloned()
            .ok_or_else(|| {
                StoreError::UnexpectedReply(format!(
                    "{}: MATCHED without the player's match",
                    self.script
                ))
            })?;
        Ok(FormedMatches {
            record,
            formed,
            claimed,
        })
    }

    /// A match record and its lifecycle (two values).
    pub fn match_with_lifecycle(&mut self) -> Result<MatchWithLifecycle, StoreError> {
        let record = self.json("match record")?;
        let raw = self.text("lifecycle")?;
        let lifecycle = MatchLifecycle::parse(&raw).map_err(|e| self.error("lifecycle", e))?;
        Ok(MatchWithLifecycle {
            record: lifecycle.merged(record),
            lifecycle,
        })
    }

    /// One claimed outbox entry (`_outbox.lua` claim_entries): id,
    /// attempts, age, payload, lifecycle, event flag, then its targets.
    pub fn outbox_entry(&mut self) -> Result<OutboxEntry, StoreError> {
        let id = self.parsed("notification id", NotificationId::parse)?;
        let attempts = u32::try_from(self.uint("attempts")?).unwrap_or(u32::MAX);
        let age_ms = self.uint("age")?;
        let payload = self.bytes("payload")?;
        // Empty when the entry carries no payload, or its record or note is
        // gone.
        let (mut record, mut note) = (None, None);
        if !payload.is_empty() {
            if matches!(id.kind(), NotificationKind::Note { .. }) {
                let json = std::str::from_utf8(&payload).map_err(|e| self.error("note", e))?;
                note = Some(ServerMessage::from_note(json).map_err(|e| self.error("note", e))?);
            } else {
                record = Some(
                    serde_json::from_slice::<MatchRecord>(&payload)
                        .map_err(|e| self.error("match record", e))?,
                );
            }
        }
        let lifecycle = match self.text("lifecycle")?.as_str() {
            "" => None,
            raw => Some(MatchLifecycle::parse(raw).map_err(|e| self.error("lifecycle", e))?),
        };
        let event_pending = self.uint("event")? == 1;
        // Records are shown with the players backfills added.
        if let (Some(r), Some(l)) = (record.take(), &lifecycle) {
            record = Some(l.merged(r));
        }
        let count = self.uint("target count")?;
        let mut targets = Vec::with_capacity(usize::try_from(count).unwrap_or(0));
        for _ in 0..count {
            targets.push(Target {
                index: u32::try_from(self.uint("target index")?).unwrap_or(u32::MAX),
                player: self.parsed("target player", PlayerId::parse)?,
                connections: self.connection_list("connections")?,
                young: self.connection_list("young connections")?,
            });
        }
        Ok(OutboxEntry {
            id,
            attempts,
            age_ms,
            record,
            lifecycle,
            event_pending,
            note,
            targets,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reply(values: Vec<Value>) -> Reply {
        Reply::new("test.lua", Value::Array(values)).unwrap()
    }

    #[test]
    fn values_are_read_in_order_and_typed() {
        let mut r = reply(vec![
            Value::BulkString(b"QUEUED".to_vec()),
            Value::Int(3),
            Value::BulkString(Vec::new()),
        ]);
        assert_eq!(r.text("status").unwrap(), "QUEUED");
        assert_eq!(r.uint("position").unwrap(), 3);
        assert_eq!(r.optional_text("world").unwrap(), None);
        r.finish().unwrap();
    }

    #[test]
    fn missing_wrong_and_leftover_values_are_errors_not_panics() {
        assert!(Reply::new("x.lua", Value::Nil).is_err());
        assert!(Reply::integer("x.lua", Value::Nil).is_err());
        let mut r = reply(vec![Value::Int(-1), Value::Nil]);
        assert!(r.uint("n").is_err());
        assert!(r.text("s").is_err());
        let err = r.text("gone").unwrap_err().to_string();
        assert!(err.contains("test.lua") && err.contains("missing"), "{err}");

        let mut r = reply(vec![Value::Int(1), Value::Int(2)]);
        r.uint("one").unwrap();
        let err = r.finish().unwrap_err().to_string();
        assert!(err.contains("1 unexpected value"), "{err}");

        let mut r = reply(vec![Value::BulkString(b"{".to_vec())]);
        assert!(r.json::<serde_json::Value>("record").is_err());
    }
}
