//! The rule set: one JSON document configuring every world (`MM_RULES`
//! inline, or `MM_RULES_FILE`), validated once at cold start. Unknown fields
//! are refused and every error names the world and the field. See
//! `docs/rules.md`.

use std::time::Duration;

use serde::Deserialize;
use serde_json::Value;

use super::{World, WorldCatalog};
use crate::domain::WorldName;
use crate::error::ConfigError;

/// Most players in one match. A `MATCH_FOUND` must fit in one API Gateway
/// WebSocket message (128 KB) for any player ids (up to 128 characters, up to
/// 4 bytes each): 100 players leave room for the record around them.
pub const MAX_PLAYERS_PER_MATCH: u32 = 100;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Document {
    worlds: Vec<Value>,
}

/// One world as written in the document.
#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct WorldRules {
    name: String,
    team_size: u32,
    #[serde(default)]
    ticket_ttl_seconds: Option<u64>,
    #[serde(default)]
    mode: Mode,
    #[serde(default)]
    require_presence: bool,
}

#[derive(Deserialize, Default, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
enum Mode {
    #[default]
    Fifo,
}

/// Parses and validates a rule set. `source` names where it came from
/// (`MM_RULES` or `MM_RULES_FILE`) for the error.
pub fn parse(
    source: &'static str,
    text: &str,
    default_ttl: Duration,
) -> Result<WorldCatalog, ConfigError> {
    let err = |reason: String| ConfigError {
        var: source,
        reason,
    };
    let doc: Document =
        serde_json::from_str(text).map_err(|e| err(format!("not a rule set: {e}")))?;
    let mut worlds = Vec::with_capacity(doc.worlds.len());
    for (i, value) in doc.worlds.into_iter().enumerate() {
        // Name the world in every message, even when the rest is wrong.
        let label = value
            .get("name")
            .and_then(Value::as_str)
            .map_or_else(|| format!("#{}", i + 1), |n| format!("{n:?}"));
        let at = |reason: String| err(format!("world {label}: {reason}"));
        let rules: WorldRules = serde_json::from_value(value).map_err(|e| at(e.to_string()))?;
        let name = WorldName::parse(&rules.name).map_err(|e| at(format!("name: {e}")))?;
        if !(2..=MAX_PLAYERS_PER_MATCH).contains(&rules.team_size) {
            return Err(at(format!(
                "teamSize: must be 2..={MAX_PLAYERS_PER_MATCH}, got {}",
                rules.team_size
            )));
        }
        let ticket_ttl = match rules.ticket_ttl_seconds {
            None => default_ttl,
            Some(0) => return Err(at("ticketTtlSeconds: must be > 0".into())),
            Some(secs) => Duration::from_secs(secs),
        };
        let Mode::Fifo = rules.mode;
        worlds.push(World {
            name,
            team_size: rules.team_size,
            ticket_ttl,
            require_presence: rules.require_presence,
        });
    }
    WorldCatalog::new(worlds).map_err(|e| err(e.reason))
}

#[cfg(test)]
mod tests {
    use super::*;

    const TTL: Duration = Duration::from_secs(600);

    #[test]
    fn a_rule_set_configures_each_world() {
        let catalog = parse(
            "MM_RULES",
            r#"{"worlds": [
                {"name": "duel", "teamSize": 2, "ticketTtlSeconds": 30, "requirePresence": true},
                {"name": "squad", "teamSize": 4, "mode": "fifo"}
            ]}"#,
            TTL,
        )
        .unwrap();
        let duel = catalog.get("duel").unwrap();
        assert_eq!(
            (duel.team_size, duel.ticket_ttl, duel.require_presence),
            (2, Duration::from_secs(30), true)
        );
        let squad = catalog.get("squad").unwrap();
        assert_eq!((squad.ticket_ttl, squad.require_presence), (TTL, false));
        let names: Vec<&str> = catalog.iter().map(|w| w.name.as_str()).collect();
        assert_eq!(names, ["duel", "squad"], "document order is kept");
    }

    #[test]
    fn bad_rule_sets_name_the_world_and_the_field() {
        for (doc, says) in [
            ("[]", "not a rule set"),
            (r#"{"worlds": [], "extra": 1}"#, "unknown field `extra`"),
            (r#"{"worlds": []}"#, "no worlds configured"),
            (
                r#"{"worlds": [{"name": "a", "teamSize": 2, "tema": 1}]}"#,
                "world \"a\": unknown field `tema`",
            ),
            (
                r#"{"worlds": [{"name": "a", "teamSize": 1}]}"#,
                "world \"a\": teamSize",
            ),
            (
                r#"{"worlds": [{"name": "a", "teamSize": 101}]}"#,
                "world \"a\": teamSize",
            ),
            (
                r#"{"worlds": [{"name": "a", "teamSize": 2, "ticketTtlSeconds": 0}]}"#,
                "world \"a\": ticketTtlSeconds",
            ),
            (
                r#"{"worlds": [{"name": "A", "teamSize": 2}]}"#,
                "world \"A\": name",
            ),
            (
                r#"{"worlds": [{"teamSize": 2}]}"#,
                "world #1: missing field `name`",
            ),
            (
                r#"{"worlds": [{"name": "a", "teamSize": 2, "mode": "elo"}]}"#,
                "world \"a\": unknown variant `elo`",
            ),
            (
                r#"{"worlds": [{"name": "a", "teamSize": 2}, {"name": "a", "teamSize": 3}]}"#,
                "listed twice",
            ),
        ] {
            let err = parse("MM_RULES", doc, TTL).expect_err(doc);
            assert_eq!(err.var, "MM_RULES");
            assert!(err.reason.contains(says), "{doc}: {err}");
        }
    }
}
