//! The rule set: one JSON document configuring every world (`MM_RULES`
//! inline, or `MM_RULES_FILE`), validated once at cold start. Unknown fields
//! are refused and every error names the world and the field. See
//! `docs/rules.md`.

use std::time::Duration;

use serde::Deserialize;
use serde_json::Value;

use super::{
    BackfillBalance, BalanceRules, MatchMode, PartyRating, RatingRules, RatingSettings, ReadyCheck,
    RegionRules, RuleKind, World, WorldCatalog, DEFAULT_CANDIDATE_WINDOW, MAX_CANDIDATE_WINDOW,
};
use crate::domain::{RatingSystem, RatingUpdates, WorldName};
use crate::error::ConfigError;

mod attributes;
mod block_lists;
mod fields;
mod match_rules;
mod ratings;
mod regions;
mod updates;

use attributes::{AttributeStoreSection, Declarations};
use block_lists::BlockListsSection;
use ratings::{BackfillBalanceSection, BalanceSection, RatingSection, RatingsSection};
use regions::RegionsSection;
pub use regions::MAX_REGIONS;
use updates::{default_updates, UpdatesSection};
pub use updates::{DEFAULT_ELO_K, DEFAULT_GLICKO2_TAU, DEFAULT_UNCERTAINTY};

/// Most players in one match. A `MATCH_FOUND` must fit in one API Gateway
/// WebSocket message (128 KB) for any player ids (up to 128 characters, up to
/// 4 bytes each): 100 players leave room for the record around them.
pub const MAX_PLAYERS_PER_MATCH: u32 = 100;

/// An anchor that found no match is tried again after this long (one tick).
pub const ANCHOR_RETRY: Duration = Duration::from_secs(1);
/// Anchors one matcher call tries in a rated world: bounds the call's time.
/// A script blocks every other client of the shard while it runs, so calls
/// stay short (~50 ms at a million waiting, see the benchmark's row 6b) and
/// the matcher makes several per tick while more anchors are due.
pub const ANCHORS_PER_CALL: u32 = 50;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Document {
    #[serde(default)]
    ratings: Option<Value>,
    #[serde(default)]
    servers: Option<ServersSection>,
    #[serde(default)]
    admin: Option<AdminSection>,
    #[serde(default)]
    attributes: Option<Declarations>,
    #[serde(default, rename = "attributeStore")]
    attribute_store: Option<AttributeStoreSection>,
    #[serde(default, rename = "blockLists")]
    block_lists: Option<BlockListsSection>,
    worlds: Vec<Value>,
}

/// Who may operate the service (the admin routes): one scope to read
/// queues, matches, players and the audit, one to act on them.
#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct AdminSection {
    read_scope: String,
    action_scope: String,
}

/// What a rule set yields besides its worlds and ratings: who speaks for
/// game servers, who may operate, the declared player attributes and who
/// may write the trusted ones.
#[derive(Debug)]
pub struct Access {
    pub server_scope: Option<String>,
    pub admin: super::AdminScopes,
    pub attributes: super::AttributeCatalog,
    pub attribute_writer_scope: Option<String>,
    pub block_lists: Option<super::BlockLists>,
}

/// Who speaks for game servers (assignments, results).
#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct ServersSection {
    scope: String,
}

/// A world's backfill rules, as written in the document.
#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct BackfillSection {
    #[serde(default)]
    balance: Option<BackfillBalanceSection>,
}

/// A world's ready check, as written in the document.
#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct ReadyCheckSection {
    accept_seconds: u64,
    #[serde(default)]
    decline_cooldown_seconds: u64,
}

/// Longest acceptance time (FlexMatch allows 1-600 s too).
pub const MAX_ACCEPT_SECONDS: u64 = 600;

#[derive(Deserialize, Default, Clone, Copy)]
#[serde(rename_all = "lowercase")]
enum PartyRatingSection {
    #[default]
    Average,
    Max,
}

/// One world as written in the document.
#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct WorldRules {
    name: String,
    team_size: u32,
    #[serde(default)]
    teams: Option<u32>,
    #[serde(default)]
    max_party_size: Option<u32>,
    #[serde(default)]
    party_rating: Option<PartyRatingSection>,
    #[serde(default)]
    balance: Option<BalanceSection>,
    #[serde(default)]
    backfill: Option<BackfillSection>,
    #[serde(default)]
    ready_check: Option<ReadyCheckSection>,
    #[serde(default)]
    ticket_ttl_seconds: Option<u64>,
    #[serde(default)]
    mode: Mode,
    #[serde(default)]
    require_presence: bool,
    #[serde(default)]
    rating: Option<RatingSection>,
    #[serde(default)]
    regions: Option<RegionsSection>,
    #[serde(default)]
    attributes: Option<Vec<String>>,
    #[serde(default)]
    rules: Option<Vec<Value>>,
    #[serde(default)]
    candidate_window: Option<u32>,
    #[serde(default)]
    queue_group: Option<String>,
}

#[derive(Deserialize, Default, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
enum Mode {
    #[default]
    Fifo,
    Rating,
}

fn finite_at_least(field: &str, value: f64, min: f64) -> Result<f64, String> {
    if value.is_finite() && value >= min {
        Ok(value)
    } else {
        Err(format!("{field}: must be a number >= {min}, got {value}"))
    }
}

/// Parses and validates a rule set. `source` names where it came from
/// (`MM_RULES` or `MM_RULES_FILE`) for the error.
pub fn parse(
    source: &'static str,
    text: &str,
    default_ttl: Duration,
) -> Result<(WorldCatalog, RatingSettings, Access), ConfigError> {
    let err = |reason: String| ConfigError {
        var: source,
        reason,
    };
    let doc: Document =
        serde_json::from_str(text).map_err(|e| err(format!("not a rule set: {e}")))?;
    let ratings = match doc.ratings {
        None => RatingSettings::default(),
        Some(value) => serde_json::from_value::<RatingsSection>(value)
            .map_err(|e| e.to_string())
            .and_then(RatingsSection::validate)
            .map_err(|e| err(format!("ratings: {e}")))?,
    };
    let attributes = attributes::catalog(doc.attributes).map_err(err)?;
    let attribute_writer_scope = doc
        .attribute_store
        .map(AttributeStoreSection::validate)
        .transpose()
        .map_err(err)?;
    let block_lists = doc
        .block_lists
        .map(BlockListsSection::validate)
        .transpose()
        .map_err(err)?;
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
        let teams = rules.teams.unwrap_or(1);
        if teams == 0 {
            return Err(at("teams: must be >= 1".into()));
        }
        let seats = u64::from(teams) * u64::from(rules.team_size);
        if rules.team_size == 0 || !(2..=u64::from(MAX_PLAYERS_PER_MATCH)).contains(&seats) {
            return Err(at(format!(
                "teamSize: teams x teamSize must be 2..={MAX_PLAYERS_PER_MATCH} players, got {teams} x {}",
                rules.team_size
            )));
        }
        let max_party_size = rules.max_party_size.unwrap_or(rules.team_size);
        if max_party_size > rules.team_size {
            return Err(at(format!(
                "maxPartySize: a party plays in one team, so at most teamSize ({}), got {max_party_size}",
                rules.team_size
            )));
        }
        let ticket_ttl = match rules.ticket_ttl_seconds {
            None => default_ttl,
            Some(0) => return Err(at("ticketTtlSeconds: must be > 0".into())),
            Some(secs) => Duration::from_secs(secs),
        };
        let mode = match (rules.mode, &rules.rating) {
            (Mode::Fifo, None) => MatchMode::Fifo,
            (Mode::Fifo, Some(_)) => {
                return Err(at("rating: only for \"mode\": \"rating\"".into()))
            }
            (Mode::Rating, None) => {
                return Err(at("rating: required for \"mode\": \"rating\"".into()))
            }
            (Mode::Rating, Some(section)) => {
                let mut rated = section.validate(&ratings).map_err(at)?;
                if teams > 1 {
                    // Unless told otherwise, the team averages may differ
                    // as much as the ratings in the anchor's window.
                    rated.balance = Some(match &rules.balance {
                        Some(b) => b.validate().map_err(at)?,
                        None => BalanceRules {
                            base_window: rated.base_window,
                            widen_per_second: rated.widen_per_second,
                            max_window: rated.max_window,
                        },
                    });
                    if let Some(b) = rules.backfill.as_ref().and_then(|b| b.balance.as_ref()) {
                        rated.backfill_balance = Some(b.validate().map_err(at)?);
                    }
                }
                MatchMode::Rating(rated)
            }
        };
        if rules.balance.is_some() && !(teams > 1 && matches!(mode, MatchMode::Rating(_))) {
            return Err(at("balance: only for rated worlds with teams > 1".into()));
        }
        if rules.backfill.as_ref().is_some_and(|b| b.balance.is_some())
            && !(teams > 1 && matches!(mode, MatchMode::Rating(_)))
        {
            return Err(at(
                "backfill.balance: only for rated worlds with teams > 1".into()
            ));
        }
        if rules.party_rating.is_some() && !matches!(mode, MatchMode::Rating(_)) {
            return Err(at("partyRating: only for \"mode\": \"rating\"".into()));
        }
        let party_rating = match rules.party_rating.unwrap_or_default() {
            PartyRatingSection::Average => PartyRating::Average,
            PartyRatingSection::Max => PartyRating::Max,
        };
        let ready_check = match &rules.ready_check {
            None => None,
            Some(r) if !(1..=MAX_ACCEPT_SECONDS).contains(&r.accept_seconds) => {
                return Err(at(format!(
                    "readyCheck.acceptSeconds: must be 1..={MAX_ACCEPT_SECONDS}, got {}",
                    r.accept_seconds
                )))
            }
            Some(r) if r.decline_cooldown_seconds > 86_400 => {
                return Err(at(format!(
                    "readyCheck.declineCooldownSeconds: at most a day (86400), got {}",
                    r.decline_cooldown_seconds
                )))
            }
            Some(r) => Some(ReadyCheck {
                accept_within: Duration::from_secs(r.accept_seconds),
                decline_cooldown: Duration::from_secs(r.decline_cooldown_seconds),
            }),
        };
        let regions = rules
            .regions
            .map(RegionsSection::validate)
            .transpose()
            .map_err(at)?;
        let (world_attributes, match_rules) =
            match_rules::world_rules(rules.attributes, rules.rules, &attributes).map_err(at)?;
        for rule in &match_rules {
            if let RuleKind::Quota {
                per_team, quotas, ..
            } = &rule.kind
            {
                let (bounded, what) = match per_team {
                    true => (u64::from(rules.team_size), "teamSize"),
                    false => (seats, "the seats"),
                };
                let least: u64 = quotas.iter().map(|q| u64::from(q.min)).sum();
                if least > bounded {
                    return Err(at(format!(
                        "rules ({:?}): quotas: the minimums add up to {least}, more than {what} ({bounded})",
                        rule.name
                    )));
                }
            }
        }
        let candidate_window = match rules.candidate_window {
            None => DEFAULT_CANDIDATE_WINDOW,
            Some(_) if match_rules.is_empty() => {
                return Err(at("candidateWindow: only for worlds with rules".into()))
            }
            Some(n) if u64::from(n) < 2 * seats || n > MAX_CANDIDATE_WINDOW => {
                return Err(at(format!(
                    "candidateWindow: must be 2 x the seats ({})..={MAX_CANDIDATE_WINDOW}, got {n}",
                    2 * seats
                )))
            }
            Some(n) => n,
        };
        let queue_group = match rules.queue_group {
            None => None,
            Some(g) => match crate::domain::WorldName::parse(&g) {
                Ok(_) => Some(g),
                Err(_) => {
                    return Err(at(format!(
                        "queueGroup: a name of 1-32 characters a-z, 0-9, '_' or '-', got {g:?}"
                    )))
                }
            },
        };
        worlds.push(World {
            name,
            team_size: rules.team_size,
            teams,
            max_party_size,
            party_rating,
            ticket_ttl,
            require_presence: rules.require_presence,
            mode,
            ready_check,
            regions,
            attributes: world_attributes,
            match_rules,
            candidate_window,
            queue_group,
        });
    }
    let catalog = WorldCatalog::new(worlds).map_err(|e| err(e.reason))?;
    let server_scope = match doc.servers {
        None => None,
        Some(s) if s.scope.trim().is_empty() => {
            return Err(err("servers.scope: must not be empty".into()))
        }
        Some(s) => Some(s.scope),
    };
    let admin = match doc.admin {
        None => super::AdminScopes::default(),
        Some(a) => {
            for (name, value) in [
                ("readScope", &a.read_scope),
                ("actionScope", &a.action_scope),
            ] {
                if value.trim().is_empty() {
                    return Err(err(format!("admin.{name}: must not be empty")));
                }
            }
            super::AdminScopes {
                read: Some(a.read_scope),
                action: Some(a.action_scope),
            }
        }
    };
    Ok((
        catalog,
        ratings,
        Access {
            server_scope,
            admin,
            attributes,
            attribute_writer_scope,
            block_lists,
        },
    ))
}

#[cfg(test)]
mod attribute_tests;
#[cfg(test)]
mod match_rules_tests;
#[cfg(test)]
mod quota_tests;
#[cfg(test)]
mod rule_refusal_tests;
#[cfg(test)]
mod tests;
