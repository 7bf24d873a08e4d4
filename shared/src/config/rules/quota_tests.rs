//! Unit tests of quota rules (role queues): what a world may declare.

use super::match_rules_tests::{doc, refused, rules_of};
use crate::config::{RoleQuota, RuleKind};

const ATTRS: &str = r#""role": {"type": "stringList", "values": ["tank", "healer", "damage"], "maxItems": 3},
    "main": {"type": "string"}, "level": {"type": "number"}"#;

fn with_rules(rules: &str) -> String {
    doc(ATTRS, &format!(r#", "teams": 2, "rules": [{rules}]"#))
}

#[test]
fn a_quota_rule_reads_its_roles_per_team_by_default() {
    let (worlds, _) = rules_of(&with_rules(
        r#"{"name": "roles", "type": "quota", "attribute": "role",
                "quotas": [{"value": "tank", "min": 1, "max": 1}, {"value": "damage", "max": 1}]}"#,
    ));
    let world = worlds.get("arena").expect("a world");
    assert_eq!(
        world.match_rules[0].kind,
        RuleKind::Quota {
            attribute: "role".into(),
            per_team: true,
            quotas: vec![
                RoleQuota {
                    value: "tank".into(),
                    min: 1,
                    max: 1
                },
                RoleQuota {
                    value: "damage".into(),
                    min: 0,
                    max: 1
                },
            ],
        }
    );
    assert_eq!(world.attributes, ["role"]);
    let (per_match, _) = rules_of(&with_rules(
        r#"{"name": "roles", "type": "quota", "attribute": "main", "per": "match",
                "quotas": [{"value": "tank", "min": 2, "max": 4}]}"#,
    ));
    let world = per_match.get("arena").expect("a world");
    assert!(matches!(
        &world.match_rules[0].kind,
        RuleKind::Quota { per_team: false, quotas, .. } if quotas[0].min == 2 && quotas[0].max == 4
    ));
}

#[test]
fn a_total_rule_bounds_a_sum_per_team_by_default() {
    let (worlds, _) = rules_of(&with_rules(
        r#"{"name": "t", "type": "total", "attribute": "level", "min": 2},
           {"name": "m", "type": "total", "attribute": "level", "per": "match", "max": 9.5}"#,
    ));
    let world = worlds.get("arena").expect("a world");
    assert_eq!(
        world.match_rules[0].kind,
        RuleKind::Total {
            attribute: "level".into(),
            per_team: true,
            min: Some(2.0),
            max: None
        }
    );
    assert_eq!(
        world.match_rules[1].kind,
        RuleKind::Total {
            attribute: "level".into(),
            per_team: false,
            min: None,
            max: Some(9.5)
        }
    );
}

#[test]
fn bad_quota_rules_are_refused_naming_the_field() {
    let tank = r#"{"value": "tank", "min": 1, "max": 1}"#;
    for (rules, says) in [
        (
            r#"{"name": "q", "type": "quota", "attribute": "level", "quotas": [{"value": "x"}]}"#.to_owned(),
            r#"rules[0] ("q"): attribute: "level" is a number attribute; quota rules need a string or stringList attribute"#,
        ),
        (
            r#"{"name": "q", "type": "quota", "attribute": "role"}"#.to_owned(),
            "quotas: required: a list of 1 to 16",
        ),
        (
            r#"{"name": "q", "type": "quota", "attribute": "role", "quotas": []}"#.to_owned(),
            "quotas: required: a list of 1 to 16",
        ),
        (
            r#"{"name": "q", "type": "quota", "attribute": "role", "quotas": [{"value": "mage"}]}"#.to_owned(),
            r#"quotas[0].value: must be one of tank, healer, damage, got "mage""#,
        ),
        (
            format!(r#"{{"name": "q", "type": "quota", "attribute": "role", "quotas": [{tank}, {tank}]}}"#),
            r#"quotas[1].value: "tank" has a quota already"#,
        ),
        (
            r#"{"name": "q", "type": "quota", "attribute": "role", "quotas": [{"value": "tank", "min": 2, "max": 1}]}"#.to_owned(),
            "quotas[0].max: must be a whole number from 2 to 1000, got 1",
        ),
        (
            r#"{"name": "q", "type": "quota", "attribute": "role", "quotas": [{"value": "tank", "count": 1}]}"#.to_owned(),
            "quotas[0].unknown field `count`",
        ),
        (
            r#"{"name": "q", "type": "quota", "attribute": "role", "per": "game", "quotas": [{"value": "tank"}]}"#.to_owned(),
            "per: must be one of team, match",
        ),
        (
            r#"{"name": "q", "type": "quota", "attribute": "role", "quotas": [{"value": "tank"}], "optionalAfterSeconds": 30}"#.to_owned(),
            "a quota rule always holds (it does not relax)",
        ),
        (
            r#"{"name": "q", "type": "quota", "attribute": "role", "quotas": [{"value": "tank", "min": 2}, {"value": "healer", "min": 1}]}"#.to_owned(),
            "quotas: the minimums add up to 3, more than teamSize (2)",
        ),
        (
            r#"{"name": "q", "type": "quota", "attribute": "role", "per": "match", "quotas": [{"value": "tank", "min": 5}]}"#.to_owned(),
            "quotas: the minimums add up to 5, more than the seats (4)",
        ),
        (
            format!(r#"{{"name": "q", "type": "quota", "attribute": "role", "quotas": [{tank}]}}, {{"name": "p", "type": "quota", "attribute": "main", "quotas": [{tank}]}}"#),
            r#"rules[1] ("p"): type: a world has at most one quota rule"#,
        ),
        (
            format!(r#"{{"name": "q", "type": "quota", "attribute": "role", "quotas": [{tank}]}}, {{"name": "n", "type": "compound", "op": "not", "rules": ["q"]}}"#),
            r#"rules[1] ("n"): rules: "q" is a quota rule, which a compound may not name"#,
        ),
        (
            r#"{"name": "q", "type": "equality", "attribute": "main", "quotas": []}"#.to_owned(),
            "quotas: not a field of equality rules",
        ),
        (
            r#"{"name": "t", "type": "total", "attribute": "main", "max": 1}"#.to_owned(),
            r#"attribute: "main" is a string attribute; total rules need a number attribute"#,
        ),
        (
            r#"{"name": "t", "type": "total", "attribute": "level"}"#.to_owned(),
            "min, max: at least one is required",
        ),
        (
            r#"{"name": "t", "type": "total", "attribute": "level", "min": 3, "max": 2}"#.to_owned(),
            "max: must be >= min (3), got 2",
        ),
        (
            r#"{"name": "t", "type": "total", "attribute": "level", "max": 2, "relax": {"perSecond": 1, "limit": 3}}"#.to_owned(),
            "a total rule always holds (it does not relax)",
        ),
        (
            format!(r#"{{"name": "q", "type": "quota", "attribute": "role", "quotas": [{tank}]}}, {{"name": "t", "type": "total", "attribute": "level", "max": 2}}"#),
            r#"rules[1] ("t"): per: a world has at most one quota or total rule per team"#,
        ),
        (
            r#"{"name": "t", "type": "total", "attribute": "level", "max": 2}, {"name": "n", "type": "compound", "op": "not", "rules": ["t"]}"#.to_owned(),
            r#"rules[1] ("n"): rules: "t" is a total rule, which a compound may not name"#,
        ),
    ] {
        refused(&with_rules(&rules), says);
    }
}
