//! A `quota` rule (role queues): its roles and their bounds; a `total`
//! rule: a sum's bounds; and what a world may hold of them.

use super::super::fields::{integer, number, one_of};
use super::RuleSection;
use crate::config::attributes::{AttributeCatalog, AttributeType};
use crate::config::match_rules::{MatchRule, RoleQuota, RuleKind, MAX_QUOTAS};
use serde::Deserialize;
use serde_json::Value;

/// One entry of `quotas`, as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct QuotaSection {
    value: Option<Value>,
    min: Option<Value>,
    max: Option<Value>,
}

/// The most players a quota may bound (a match's seats never exceed it).
const MAX_BOUND: u32 = 1_000;

impl RuleSection {
    pub(super) fn quota(&self, catalog: &AttributeCatalog) -> Result<RuleKind, String> {
        let d = self.attribute(
            catalog,
            &[AttributeType::String, AttributeType::StringList],
            "quota",
        )?;
        let per_team = match &self.per {
            None => true,
            Some(v) => one_of("per", v, &["team", "match"])? == "team",
        };
        let list = match &self.quotas {
            Some(Value::Array(list)) if (1..=MAX_QUOTAS).contains(&list.len()) => list,
            _ => {
                return Err(format!(
                    "quotas: required: a list of 1 to {MAX_QUOTAS} {{\"value\", \"min\", \"max\"}}"
                ))
            }
        };
        let mut quotas: Vec<RoleQuota> = Vec::with_capacity(list.len());
        for (i, entry) in list.iter().enumerate() {
            let at = |e: String| format!("quotas[{i}].{e}");
            let q: QuotaSection =
                serde_json::from_value(entry.clone()).map_err(|e| at(e.to_string()))?;
            let value = q.value.ok_or_else(|| at("value: required".into()))?;
            // A role is a value the attribute accepts (one item of a list).
            let as_value = match d.kind {
                AttributeType::StringList => Value::Array(vec![value.clone()]),
                _ => value.clone(),
            };
            d.value_from_json(&as_value)
                .map_err(|e| at(format!("value: {}", e.trim_start_matches("item "))))?;
            let value = value.as_str().unwrap_or_default().to_owned();
            if quotas.iter().any(|o| o.value == value) {
                return Err(at(format!("value: {value:?} has a quota already")));
            }
            let min = match &q.min {
                None => 0,
                Some(v) => integer("min", v, 0, MAX_BOUND).map_err(at)?,
            };
            let max = match &q.max {
                None => MAX_BOUND,
                Some(v) => integer("max", v, min, MAX_BOUND).map_err(at)?,
            };
            quotas.push(RoleQuota { value, min, max });
        }
        Ok(RuleKind::Quota {
            attribute: d.name.clone(),
            per_team,
            quotas,
        })
    }
}

impl RuleSection {
    pub(super) fn total(&self, catalog: &AttributeCatalog) -> Result<RuleKind, String> {
        let d = self.attribute(catalog, &[AttributeType::Number], "total")?;
        let per_team = match &self.per {
            None => true,
            Some(v) => one_of("per", v, &["team", "match"])? == "team",
        };
        let min = self.min.as_ref().map(|v| number("min", v)).transpose()?;
        let max = self.max.as_ref().map(|v| number("max", v)).transpose()?;
        match (min, max) {
            (None, None) => return Err("min, max: at least one is required".into()),
            (Some(lo), Some(hi)) if lo > hi => {
                return Err(format!("max: must be >= min ({lo}), got {hi}"))
            }
            _ => {}
        }
        Ok(RuleKind::Total {
            attribute: d.name.clone(),
            per_team,
            min,
            max,
        })
    }
}

/// Whether the rule decides the teams (a quota or total per team).
fn splits_teams(kind: &RuleKind) -> bool {
    matches!(
        kind,
        RuleKind::Quota { per_team: true, .. } | RuleKind::Total { per_team: true, .. }
    )
}

/// A world holds at most one quota rule and at most one rule that decides
/// its teams (a quota or total per team), and a compound names neither
/// kind (every player takes one role; a match always meets them).
pub(super) fn check_world(rules: &[MatchRule], labels: &[String]) -> Result<(), String> {
    let quotas: Vec<usize> = (0..rules.len())
        .filter(|&i| matches!(rules[i].kind, RuleKind::Quota { .. }))
        .collect();
    if let [_, second, ..] = quotas[..] {
        return Err(format!(
            "{}: type: a world has at most one quota rule",
            labels[second]
        ));
    }
    let splitting: Vec<usize> = (0..rules.len())
        .filter(|&i| splits_teams(&rules[i].kind))
        .collect();
    if let [_, second, ..] = splitting[..] {
        return Err(format!(
            "{}: per: a world has at most one quota or total rule per team (it decides the teams)",
            labels[second]
        ));
    }
    let quotas: Vec<usize> = (0..rules.len())
        .filter(|&i| {
            matches!(
                rules[i].kind,
                RuleKind::Quota { .. } | RuleKind::Total { .. }
            )
        })
        .collect();
    for (i, r) in rules.iter().enumerate() {
        if let Some(j) = r.kind.operands().iter().find(|j| quotas.contains(j)) {
            return Err(format!(
                "{}: rules: {:?} is a {} rule, which a compound may not name",
                labels[i],
                rules[*j].name,
                rules[*j].kind.as_str()
            ));
        }
    }
    Ok(())
}
