//! Ticket data: the opaque JSON a player may attach to a ticket.

use crate::error::ValidationError;

/// Largest ticket data accepted, in bytes of compact JSON.
pub const MAX_TICKET_DATA_BYTES: usize = 4096;
/// Deepest nesting of ticket data accepted (the object itself is level 1).
/// The data is embedded in match records and pushes, which JSON parsers
/// (serde_json: 128 levels) must still read with the record around it.
pub const MAX_TICKET_DATA_DEPTH: usize = 16;

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

#[cfg(test)]
mod tests {
    use super::*;

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
}
