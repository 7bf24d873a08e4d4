//! Unit tests of the rule set's attributes and match rules: good documents
//! and relaxation (refusals: attribute_tests.rs, rule_refusal_tests.rs).

use super::*;
use crate::config::{
    AttributeSource, AttributeType, CompareOp, ListAggregate, MatchRule, Missing, NumberAggregate,
    Relax, RuleKind, RuleValue,
};
use crate::domain::AttributeValue;

const TTL: Duration = Duration::from_secs(600);

/// Every attribute type, every rule type, parties, relaxations.
const GOOD: &str = r#"{
  "attributes": {
    "mode": {"type": "stringList", "values": ["ctf", "dm", "koth"], "maxItems": 3},
    "map": {"type": "string", "missing": "refuse", "maxLength": 16},
    "build": {"type": "string"},
    "skill": {"type": "number", "min": 0, "max": 1, "default": 0.5},
    "level": {"type": "number", "min": 0, "max": 100},
    "character": {"type": "string", "values": ["ana", "bob", "cat"]},
    "roles": {"type": "numberMap", "keys": ["tank", "dps"], "min": 0, "max": 1, "maxItems": 2},
    "league": {"type": "number", "source": "trusted", "default": 1},
    "unused": {"type": "stringList"}
  },
  "attributeStore": {"writerScope": "mm/attributes.write"},
  "worlds": [
    {"name": "arena", "teamSize": 2, "attributes": ["roles"], "rules": [
      {"name": "sameBuild", "type": "equality", "attribute": "build"},
      {"name": "modes", "type": "intersection", "attribute": "mode", "minCount": 2,
       "party": "union", "relax": {"perSecond": 0.25, "limit": 1}, "optionalAfterSeconds": 30},
      {"name": "skill", "type": "distance", "attribute": "skill", "max": 0.25,
       "relax": {"perSecond": 0.125, "limit": 1}},
      {"name": "adults", "type": "comparison", "attribute": "level", "op": ">=", "value": 10,
       "party": "min", "relax": {"steps": [{"afterSeconds": 10, "value": 5},
                                           {"afterSeconds": 20, "value": null}]}},
      {"name": "notDust", "type": "comparison", "attribute": "map", "op": "!=", "value": "dust"},
      {"name": "sameMap", "type": "comparison", "attribute": "map", "op": "allEqual"},
      {"name": "chars", "type": "comparison", "attribute": "character", "op": "allDifferent"},
      {"name": "league", "type": "distance", "attribute": "league", "max": 2, "from": "anchor",
       "party": "max"},
      {"name": "both", "type": "compound", "op": "and", "rules": ["sameMap", "league"]},
      {"name": "either", "type": "compound", "op": "or", "rules": ["both", "skill"]},
      {"name": "notChars", "type": "compound", "op": "not", "rules": ["chars"]}
    ]},
    {"name": "plain", "teamSize": 2}
  ]
}"#;

pub(super) fn rules_of(doc: &str) -> (WorldCatalog, Access) {
    let (worlds, _, access) = parse("MM_RULES", doc, TTL).unwrap();
    (worlds, access)
}

#[test]
fn attributes_are_declared_in_document_order() {
    let (_, access) = rules_of(GOOD);
    let catalog = &access.attributes;
    let names: Vec<&str> = catalog.iter().map(|d| d.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "mode",
            "map",
            "build",
            "skill",
            "level",
            "character",
            "roles",
            "league",
            "unused"
        ]
    );
    assert_eq!(
        access.attribute_writer_scope.as_deref(),
        Some("mm/attributes.write")
    );
    assert!(catalog.has_trusted());
    let mode = catalog.get("mode").unwrap();
    assert_eq!(
        (mode.kind, mode.max_items, mode.max_length),
        (AttributeType::StringList, 3, 32)
    );
    assert_eq!(mode.values.as_deref().unwrap(), ["ctf", "dm", "koth"]);
    let map = catalog.get("map").unwrap();
    assert_eq!(
        (map.missing, map.max_length, map.default.as_ref()),
        (Missing::Refuse, 16, None)
    );
    let skill = catalog.get("skill").unwrap();
    assert_eq!((skill.min, skill.max), (0.0, 1.0));
    assert_eq!(skill.default, Some(AttributeValue::Num(0.5)));
    let build = catalog.get("build").unwrap();
    assert_eq!(
        (build.min, build.max, build.missing),
        (-1e9, 1e9, Missing::Any)
    );
    let roles = catalog.get("roles").unwrap();
    assert_eq!(roles.keys.as_deref().unwrap(), ["tank", "dps"]);
    let league = catalog.get("league").unwrap();
    assert_eq!(league.source, AttributeSource::Trusted);
    assert_eq!(catalog.get("nope"), None);
}

#[test]
fn a_world_reads_every_rule_type() {
    let (worlds, _) = rules_of(GOOD);
    let arena = worlds.get("arena").unwrap();
    assert_eq!(
        arena.attributes,
        [
            "mode",
            "map",
            "build",
            "skill",
            "level",
            "character",
            "roles",
            "league"
        ],
        "the rules' and the listed ones, in declaration order"
    );
    let r = &arena.match_rules;
    let names: Vec<&str> = r.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "sameBuild",
            "modes",
            "skill",
            "adults",
            "notDust",
            "sameMap",
            "chars",
            "league",
            "both",
            "either",
            "notChars"
        ]
    );
    let s = |a: &str| a.to_owned();
    assert_eq!(
        r[0].kind,
        RuleKind::Equality {
            attribute: s("build")
        }
    );
    assert_eq!(
        r[1].kind,
        RuleKind::Intersection {
            attribute: s("mode"),
            min_count: 2,
            party: ListAggregate::Union
        }
    );
    assert_eq!(r[1].optional_after, Some(Duration::from_secs(30)));
    assert_eq!(
        r[1].relax,
        Some(Relax::Linear {
            per_second: 0.25,
            limit: 1.0
        })
    );
    assert_eq!(
        r[2].kind,
        RuleKind::Distance {
            attribute: s("skill"),
            max: 0.25,
            from_anchor: false,
            party: NumberAggregate::Avg
        }
    );
    assert_eq!(
        r[3].kind,
        RuleKind::Compare {
            attribute: s("level"),
            op: CompareOp::Ge,
            value: RuleValue::Number(10.0),
            party: NumberAggregate::Min
        }
    );
    assert_eq!(
        r[3].relax,
        Some(Relax::Steps(vec![
            (Duration::from_secs(10), Some(5.0)),
            (Duration::from_secs(20), None)
        ]))
    );
    assert_eq!(
        r[4].kind,
        RuleKind::Compare {
            attribute: s("map"),
            op: CompareOp::Ne,
            value: RuleValue::Token(s("dust")),
            party: NumberAggregate::Avg
        }
    );
    assert_eq!(
        r[5].kind,
        RuleKind::AllEqual {
            attribute: s("map")
        }
    );
    assert_eq!(
        r[6].kind,
        RuleKind::AllDifferent {
            attribute: s("character")
        }
    );
    assert_eq!(
        r[7].kind,
        RuleKind::Distance {
            attribute: s("league"),
            max: 2.0,
            from_anchor: true,
            party: NumberAggregate::Max
        }
    );
    assert_eq!(r[8].kind, RuleKind::And(vec![5, 7]));
    assert_eq!(r[9].kind, RuleKind::Or(vec![8, 2]));
    assert_eq!(r[10].kind, RuleKind::Not(6));
    let top: Vec<&str> = r
        .iter()
        .filter(|r| r.top)
        .map(|r| r.name.as_str())
        .collect();
    assert_eq!(
        top,
        [
            "sameBuild",
            "modes",
            "adults",
            "notDust",
            "either",
            "notChars"
        ]
    );
    let plain = worlds.get("plain").unwrap();
    assert!(plain.attributes.is_empty() && plain.match_rules.is_empty());
}

#[test]
fn rules_relax_with_the_anchors_wait() {
    let (worlds, _) = rules_of(GOOD);
    let r = &worlds.get("arena").unwrap().match_rules;
    let at = |rule: &MatchRule, ms: u64| rule.in_force(Duration::from_millis(ms));
    // Equality: on without a number, never relaxed.
    assert_eq!(at(&r[0], 0), Some(None));
    assert_eq!(at(&r[0], 1_000_000), Some(None));
    // Intersection 2 toward 1 at 0.25/s, rounded toward its base (a count
    // moving down takes its step once the line reaches 1, after 4 s); off
    // from 30 s.
    assert_eq!(at(&r[1], 0), Some(Some(2.0)));
    assert_eq!(at(&r[1], 1), Some(Some(2.0)), "1.999 75 rounds up");
    assert_eq!(at(&r[1], 3_999), Some(Some(2.0)), "1.000 25 rounds up");
    assert_eq!(at(&r[1], 4_000), Some(Some(1.0)));
    assert_eq!(at(&r[1], 10_000), Some(Some(1.0)), "never past the limit");
    assert_eq!(at(&r[1], 29_999), Some(Some(1.0)));
    assert_eq!(at(&r[1], 30_000), None, "optional from 30 s");
    // Distance 0.25 toward 1 at 0.125/s.
    assert_eq!(at(&r[2], 2_000), Some(Some(0.5)));
    assert_eq!(at(&r[2], 60_000), Some(Some(1.0)));
    // Comparison steps: 10, 5 from 10 s, off from 20 s.
    assert_eq!(at(&r[3], 9_999), Some(Some(10.0)));
    assert_eq!(at(&r[3], 10_000), Some(Some(5.0)));
    assert_eq!(at(&r[3], 20_000), None);
    // A string comparison and a compound: no number.
    assert_eq!(at(&r[4], 0), Some(None));
    assert_eq!(at(&r[9], 0), Some(None));
}

#[test]
fn a_linear_relaxation_may_tighten_and_seconds_round_up_to_ms() {
    let (worlds, _) = rules_of(
        r#"{"attributes": {"level": {"type": "number"}},
            "worlds": [{"name": "arena", "teamSize": 2, "rules": [
              {"name": "lvl", "type": "comparison", "attribute": "level", "op": "<=",
               "value": 10, "relax": {"perSecond": 2, "limit": 4}, "optionalAfterSeconds": 0.0001}
            ]}]}"#,
    );
    let rule = &worlds.get("arena").unwrap().match_rules[0];
    assert_eq!(rule.optional_after, Some(Duration::from_millis(1)));
    let mut no_optional = rule.clone();
    no_optional.optional_after = None;
    assert_eq!(
        no_optional.in_force(Duration::from_secs(2)),
        Some(Some(6.0))
    );
    assert_eq!(
        no_optional.in_force(Duration::from_secs(9)),
        Some(Some(4.0))
    );
}

#[test]
fn a_rule_set_without_attributes_declares_none() {
    let (worlds, access) = rules_of(r#"{"worlds": [{"name": "duel", "teamSize": 2}]}"#);
    assert!(access.attributes.is_empty() && !access.attributes.has_trusted());
    assert_eq!(access.attribute_writer_scope, None);
    assert!(worlds.get("duel").unwrap().attributes.is_empty());
}

/// A document with `attrs` declared and one world `arena` with `world`'s
/// extra fields.
pub(super) fn doc(attrs: &str, world: &str) -> String {
    format!(
        r#"{{"attributes": {{{attrs}}}, "worlds": [{{"name": "arena", "teamSize": 2{world}}}]}}"#
    )
}

pub(super) fn refused(doc: &str, says: &str) {
    let err = parse("MM_RULES", doc, TTL).unwrap_err();
    assert_eq!(err.var, "MM_RULES");
    assert!(
        err.reason.contains(says),
        "{doc}\n  says: {err}\n  expected: {says}"
    );
}
