//! A world's attributes and match rules as the scripts take them
//! (`attributes` and `match_rules` of the configuration string): names and
//! kinds spelled for Lua, durations in ms, compounds naming their operands
//! by 1-based index, parties' aggregates filled in.

use serde::Serialize;
use serde_json::Value;

use super::millis;
use crate::config::{
    AttributeCatalog, AttributeSource, MatchRule, Missing, Relax, RuleKind, RuleValue, World,
};
use crate::domain::AttributeValue;

/// One attribute of the world.
#[derive(Serialize)]
pub(super) struct ScriptAttribute<'a> {
    name: &'a str,
    #[serde(rename = "type")]
    kind: &'static str,
    trusted: bool,
    /// The default, encoded as stored (`AttributeValue::encode`).
    #[serde(skip_serializing_if = "Option::is_none")]
    default: Option<String>,
    /// `missing: refuse`: a join without a value is refused.
    #[serde(skip_serializing_if = "is_false")]
    refuse: bool,
}

/// One rule of the world.
#[derive(Serialize)]
pub(super) struct ScriptRule<'a> {
    name: &'a str,
    kind: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    attr: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    op: Option<&'static str>,
    /// A comparison's reference, a distance's max, an intersection's
    /// minCount.
    #[serde(skip_serializing_if = "Option::is_none")]
    value: Option<Value>,
    #[serde(skip_serializing_if = "is_false")]
    from_anchor: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    party: Option<&'static str>,
    /// A compound's operands, 1-based indices into `match_rules`.
    #[serde(skip_serializing_if = "Option::is_none")]
    of: Option<Vec<usize>>,
    #[serde(skip_serializing_if = "is_false")]
    top: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    optional_ms: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    linear: Option<Linear>,
    /// `[after_ms, value or null]`.
    #[serde(skip_serializing_if = "Option::is_none")]
    steps: Option<Vec<(u64, Option<Value>)>>,
    /// A quota rule's bounds hold per team (else per match).
    #[serde(skip_serializing_if = "is_false")]
    per_team: bool,
    /// A quota rule's roles: `[value, min, max]`.
    #[serde(skip_serializing_if = "Option::is_none")]
    quotas: Option<Vec<(&'a str, u32, u32)>>,
    /// A total rule's bounds (absent: open).
    #[serde(skip_serializing_if = "Option::is_none")]
    min: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max: Option<Value>,
    /// A total rule: the least and most one player adds (the attribute's
    /// range, and 0 for a player without a value), `[least, most]`.
    #[serde(skip_serializing_if = "Option::is_none")]
    adds: Option<(Value, Value)>,
}

#[derive(Serialize)]
struct Linear {
    per_sec: f64,
    limit: Value,
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// A number as JSON: whole numbers as integers.
fn number(v: f64) -> Value {
    AttributeValue::Num(v).to_json()
}

/// The world's attributes, `None` when it has none.
pub(super) fn attributes<'a>(
    catalog: &'a AttributeCatalog,
    world: &'a World,
) -> Option<Vec<ScriptAttribute<'a>>> {
    let out: Vec<_> = world
        .attributes
        .iter()
        .filter_map(|name| catalog.get(name))
        .map(|d| ScriptAttribute {
            name: &d.name,
            kind: d.kind.as_str(),
            trusted: d.source == AttributeSource::Trusted,
            default: d.default.as_ref().map(AttributeValue::encode),
            refuse: d.missing == Missing::Refuse,
        })
        .collect();
    (!out.is_empty()).then_some(out)
}

/// The world's rules, `None` when it has none.
pub(super) fn rules<'a>(
    catalog: &AttributeCatalog,
    world: &'a World,
) -> Option<Vec<ScriptRule<'a>>> {
    let out: Vec<_> = world.match_rules.iter().map(|r| rule(catalog, r)).collect();
    (!out.is_empty()).then_some(out)
}

fn rule<'a>(catalog: &AttributeCatalog, r: &'a MatchRule) -> ScriptRule<'a> {
    let mut out = ScriptRule {
        name: &r.name,
        kind: r.kind.as_str(),
        attr: r.kind.attribute(),
        op: None,
        value: None,
        from_anchor: false,
        party: None,
        of: None,
        top: r.top,
        optional_ms: r.optional_after.map(|d| millis(d).max(1)),
        linear: None,
        steps: None,
        per_team: false,
        quotas: None,
        min: None,
        max: None,
        adds: None,
    };
    match &r.kind {
        RuleKind::Compare {
            op, value, party, ..
        } => {
            out.op = Some(op.as_str());
            match value {
                RuleValue::Number(v) => {
                    out.value = Some(number(*v));
                    out.party = Some(party.as_str());
                }
                RuleValue::Token(t) => out.value = Some(Value::String(t.clone())),
            }
        }
        RuleKind::Distance {
            max,
            from_anchor,
            party,
            ..
        } => {
            out.value = Some(number(*max));
            out.from_anchor = *from_anchor;
            out.party = Some(party.as_str());
        }
        RuleKind::Intersection {
            min_count, party, ..
        } => {
            out.value = Some(Value::from(*min_count));
            out.party = Some(party.as_str());
        }
        RuleKind::And(of) | RuleKind::Or(of) => out.of = Some(of.iter().map(|i| i + 1).collect()),
        RuleKind::Not(of) => out.of = Some(vec![of + 1]),
        RuleKind::Total {
            per_team, min, max, ..
        } => {
            out.per_team = *per_team;
            out.min = min.map(number);
            out.max = max.map(number);
            if let Some(d) = r.kind.attribute().and_then(|a| catalog.get(a)) {
                out.adds = Some((number(d.min.min(0.0)), number(d.max.max(0.0))));
            }
        }
        RuleKind::Quota {
            per_team, quotas, ..
        } => {
            out.per_team = *per_team;
            out.quotas = Some(
                quotas
                    .iter()
                    .map(|q| (q.value.as_str(), q.min, q.max))
                    .collect(),
            );
        }
        RuleKind::Equality { .. } | RuleKind::AllEqual { .. } | RuleKind::AllDifferent { .. } => {}
    }
    match &r.relax {
        None => {}
        Some(Relax::Linear { per_second, limit }) => {
            out.linear = Some(Linear {
                per_sec: *per_second,
                limit: number(*limit),
            });
        }
        Some(Relax::Steps(steps)) => {
            out.steps = Some(
                steps
                    .iter()
                    .map(|(after, v)| (millis(*after).max(1), v.map(number)))
                    .collect(),
            );
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::WorldConfigs;
    use crate::config::Settings;

    #[test]
    fn a_world_with_every_rule_kind_gives_the_scripts_its_attributes_and_rules() {
        let rules = r#"{
          "attributes": {
            "mode": {"type": "stringList", "values": ["ctf", "dm"], "default": ["dm", "ctf"]},
            "map": {"type": "string", "missing": "refuse"},
            "skill": {"type": "number", "default": 0.5},
            "level": {"type": "number"},
            "roles": {"type": "numberMap"},
            "league": {"type": "number", "source": "trusted", "default": 1},
            "unused": {"type": "string"}
          },
          "worlds": [
            {"name": "arena", "teamSize": 2, "attributes": ["roles"], "candidateWindow": 64, "rules": [
              {"name": "sameMap", "type": "equality", "attribute": "map"},
              {"name": "modes", "type": "intersection", "attribute": "mode", "minCount": 2,
               "relax": {"perSecond": 0.5, "limit": 1}, "optionalAfterSeconds": 30},
              {"name": "skill", "type": "distance", "attribute": "skill", "max": 0.2,
               "from": "anchor", "party": "max",
               "relax": {"steps": [{"afterSeconds": 5, "value": 0.3}, {"afterSeconds": 10.5, "value": null}]}},
              {"name": "adults", "type": "comparison", "attribute": "level", "op": ">=", "value": 18},
              {"name": "notDust", "type": "comparison", "attribute": "map", "op": "!=", "value": "dust"},
              {"name": "oneLeague", "type": "comparison", "attribute": "league", "op": "allEqual"},
              {"name": "twoMaps", "type": "comparison", "attribute": "map", "op": "allDifferent"},
              {"name": "both", "type": "compound", "op": "and", "rules": ["oneLeague", "skill"]},
              {"name": "either", "type": "compound", "op": "or", "rules": ["both", "twoMaps"]},
              {"name": "notAdults", "type": "compound", "op": "not", "rules": ["adults"]}
            ]},
            {"name": "plain", "teamSize": 2},
            {"name": "roles", "teamSize": 3, "teams": 2, "rules": [
              {"name": "queue", "type": "quota", "attribute": "mode", "quotas": [
                {"value": "ctf", "min": 1, "max": 2}, {"value": "dm"}]},
              {"name": "levels", "type": "total", "attribute": "level", "per": "match", "max": 40}
            ]}
          ]
        }"#;
        let s =
            Settings::from_lookup(|var| (var == "MM_RULES").then(|| rules.to_string())).unwrap();
        let configs = WorldConfigs::new(&s);
        let arena = s.worlds.get("arena").unwrap();
        let v: serde_json::Value = serde_json::from_str(&configs.get(&s, arena).unwrap()).unwrap();
        assert_eq!(v["candidate_window"], 64);
        assert_eq!(
            v["attributes"],
            json!([
                {"name": "mode", "type": "stringList", "trusted": false, "default": "ctf,dm"},
                {"name": "map", "type": "string", "trusted": false, "refuse": true},
                {"name": "skill", "type": "number", "trusted": false, "default": "0.5"},
                {"name": "level", "type": "number", "trusted": false},
                {"name": "roles", "type": "numberMap", "trusted": false},
                {"name": "league", "type": "number", "trusted": true, "default": "1"}
            ])
        );
        assert_eq!(
            v["match_rules"],
            json!([
                {"name": "sameMap", "kind": "equality", "attr": "map", "top": true},
                {"name": "modes", "kind": "intersection", "attr": "mode", "value": 2,
                 "party": "intersection", "top": true, "optional_ms": 30000,
                 "linear": {"per_sec": 0.5, "limit": 1}},
                {"name": "skill", "kind": "distance", "attr": "skill", "value": 0.2,
                 "from_anchor": true, "party": "max", "steps": [[5000, 0.3], [10500, null]]},
                {"name": "adults", "kind": "compare", "attr": "level", "op": ">=", "value": 18,
                 "party": "avg"},
                {"name": "notDust", "kind": "compare", "attr": "map", "op": "!=",
                 "value": "dust", "top": true},
                {"name": "oneLeague", "kind": "all_equal", "attr": "league"},
                {"name": "twoMaps", "kind": "all_different", "attr": "map"},
                {"name": "both", "kind": "and", "of": [6, 3]},
                {"name": "either", "kind": "or", "of": [8, 7], "top": true},
                {"name": "notAdults", "kind": "not", "of": [4], "top": true}
            ])
        );
        let roles = s.worlds.get("roles").unwrap();
        let v: serde_json::Value = serde_json::from_str(&configs.get(&s, roles).unwrap()).unwrap();
        // A total knows the least and most one player adds (the attribute's
        // declared range and 0 for a player without a value).
        assert_eq!(
            v["match_rules"],
            json!([
                {"name": "queue", "kind": "quota", "attr": "mode", "top": true, "per_team": true,
                 "quotas": [["ctf", 1, 2], ["dm", 0, 1000]]},
                {"name": "levels", "kind": "total", "attr": "level", "top": true, "max": 40,
                 "adds": [-1_000_000_000, 1_000_000_000]}
            ])
        );
        let plain = s.worlds.get("plain").unwrap();
        let v: serde_json::Value = serde_json::from_str(&configs.get(&s, plain).unwrap()).unwrap();
        assert!(
            v.get("attributes").is_none() && v.get("match_rules").is_none(),
            "{v}"
        );
    }
}
