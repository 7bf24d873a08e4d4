//! The lanes of the attributes scenario: each rule set's world as written,
//! with every player listing only their first choice (a world with an
//! intersection rule), without its rules and with the widest candidate
//! window, each on its own server.

use serde_json::Value;
use shared::config::MAX_CANDIDATE_WINDOW;

use super::intersection_rule;
use crate::engine::Route;
use crate::lanes::Spec;
use crate::outcome::{AttrVariant, Shape};
use crate::rules::{self, Environment, RuleSet};
use crate::Config;

/// `rs` rewritten for `variant`: the driven world alone (other worlds of
/// the document are left out), as it is (as written, first choice only:
/// the players change, not the world) or without its `rules` (and so
/// without the attributes only they read).
pub fn variant_rule_set(rs: &RuleSet, variant: AttrVariant) -> Result<RuleSet, String> {
    let mut doc: Value = serde_json::from_str(&rs.text)
        .map_err(|e| format!("rule set {}: not JSON: {e}", rs.file))?;
    let worlds = doc
        .get("worlds")
        .and_then(Value::as_array)
        .ok_or_else(|| format!("rule set {}: no \"worlds\" array", rs.file))?;
    let others = worlds.len() - 1;
    let mut driven = worlds
        .iter()
        .find(|w| w.get("name").and_then(Value::as_str) == Some(rs.world.as_str()))
        .cloned()
        .ok_or_else(|| format!("rule set {}: no world {}", rs.file, rs.world))?;
    let mut notes = rs.notes.clone();
    if others > 0 {
        notes.push(format!(
            "the document's {others} other world(s) left out: the attributes scenario drives {} alone",
            rs.world
        ));
    }
    match variant {
        AttrVariant::AsWritten => {}
        AttrVariant::FirstChoiceOnly => notes.push(format!(
            "{}: every player lists only their first choice (one queue per value)",
            rs.world
        )),
        AttrVariant::WithoutRules => {
            if let Some(obj) = driven.as_object_mut() {
                obj.remove("rules");
            }
            notes.push(format!("{}: rules removed", rs.world));
        }
        AttrVariant::WideWindow => {
            driven["candidateWindow"] = Value::from(MAX_CANDIDATE_WINDOW);
            notes.push(format!(
                "{}: candidateWindow {MAX_CANDIDATE_WINDOW} (an attempt reads up to that many candidates)",
                rs.world
            ));
        }
    }
    doc["worlds"] = Value::Array(vec![driven]);
    Ok(RuleSet {
        label: format!("{} {}", rs.label, variant.name()),
        file: rs.file.clone(),
        text: doc.to_string(),
        world: rs.world.clone(),
        notes,
    })
}

/// The attributes scenario's lanes: every rule set two or three ways.
/// Returns them and the first rule set's shape (there is no oracle).
pub(crate) fn lanes_of(config: &Config) -> Result<(Vec<Spec>, Shape), String> {
    if config.rule_sets.is_empty() {
        return Err("the attributes scenario needs a rule set whose world has match rules".into());
    }
    if !config.accept_probabilities.is_empty() {
        return Err("--accept-probability does not combine with --attributes".into());
    }
    if config.scenario.attrs.is_none() {
        return Err(
            "the attributes scenario needs attributes: generate the trace (--attributes) or give a CSV trace with attr:<name> columns"
                .into(),
        );
    }
    let probe = Environment {
        redis_url: "redis://127.0.0.1:1".into(),
        ticket_ttl_secs: config.ticket_ttl_secs,
        instant_match: config.instant_match,
    };
    let largest = config.scenario.largest_party();
    let mut specs = Vec::new();
    let mut first_shape = None;
    for (i, rs) in config.rule_sets.iter().enumerate() {
        let (_, world) = rs.settings(&probe, "probe")?;
        if world.match_rules.is_empty() {
            return Err(format!(
                "rule set {} world {} has no match rules: --attributes plays a world with rules against the same world without them (try --rules tools/sim/rules/attributes)",
                rs.file, world.name
            ));
        }
        if world.ready_check.is_some() || world.regions.is_some() {
            return Err(format!(
                "rule set {} world {} has a ready check or regions: the attributes scenario plays neither",
                rs.file, world.name
            ));
        }
        if largest > 1 && world.max_party_size < largest {
            return Err(format!(
                "rule set {} world {} takes parties of at most {} (maxPartySize; below 2: none), but the trace has parties of {largest}",
                rs.file, world.name, world.max_party_size
            ));
        }
        let shape = rules::shape_of(&world);
        first_shape.get_or_insert(shape);
        let list = intersection_rule(&world.match_rules).map(|(_, a)| a.to_owned());
        for (variant, tag) in [
            (AttrVariant::AsWritten, "a"),
            (AttrVariant::FirstChoiceOnly, "f"),
            (AttrVariant::WithoutRules, "n"),
            (AttrVariant::WideWindow, "w"),
        ] {
            if variant == AttrVariant::FirstChoiceOnly && list.is_none() {
                continue;
            }
            let derived = variant_rule_set(rs, variant)?;
            derived.settings(&probe, "probe")?;
            specs.push(Spec {
                rs: derived,
                namespace: format!("sim{i}{tag}"),
                fifo: false,
                answering: None,
                shape,
                variant: None,
                route: Route::Attributes {
                    first_only: (variant == AttrVariant::FirstChoiceOnly)
                        .then(|| list.clone())
                        .flatten(),
                },
                attr: Some((variant, world.match_rules.clone())),
            });
        }
    }
    Ok((
        specs,
        first_shape.unwrap_or(Shape::solo_team(config.team_size)),
    ))
}
