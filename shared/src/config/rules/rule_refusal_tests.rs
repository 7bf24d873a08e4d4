//! Unit tests of the match rules that are refused.

use super::match_rules_tests::{doc, refused};

const ATTRS: &str = r#""level": {"type": "number"}, "map": {"type": "string", "values": ["dust", "nuke"]},
    "mode": {"type": "stringList", "maxItems": 3}, "roles": {"type": "numberMap"}"#;

/// A world `arena` with the given rules.
fn with_rules(rules: &str) -> String {
    doc(ATTRS, &format!(r#", "rules": [{rules}]"#))
}

#[test]
fn bad_rules_name_the_world_the_rule_and_the_field() {
    let twenty_one: Vec<String> = (0..21)
        .map(|i| format!(r#"{{"name": "r{i}", "type": "equality", "attribute": "map"}}"#))
        .collect();
    refused(
        &with_rules(&twenty_one.join(",")),
        r#"world "arena": rules: at most 20 rules, got 21"#,
    );
    let ok = r#"{"name": "a", "type": "equality", "attribute": "map"}, {"name": "b", "type": "equality", "attribute": "map"}"#;
    for (rules, says) in [
        (
            r#"{"name": "x", "type": "equality", "attribute": "map"}, {"name": "level", "type": "distance", "attribute": "level", "max": 3}, {"name": "level2", "type": "distance", "attribute": "level", "max": -1}"#,
            r#"world "arena": rules[2] ("level2"): max: must be a number >= 0, got -1"#,
        ),
        (
            r#"{"type": "equality", "attribute": "map"}"#,
            r#"world "arena": rules[0]: name: must be a string, got null"#,
        ),
        (
            r#"{"name": "1x", "type": "equality", "attribute": "map"}"#,
            r#"rules[0] ("1x"): name: must be [A-Za-z][A-Za-z0-9_-]{0,31}"#,
        ),
        (
            r#"{"name": "a", "type": "equality", "attribute": "map"}, {"name": "a", "type": "equality", "attribute": "map"}"#,
            r#"rules[1] ("a"): name: "a" is also the name of rules[0]"#,
        ),
        (r#"{"name": "r"}"#, r#"rules[0] ("r"): type: required"#),
        (
            r#"{"name": "r", "type": "block"}"#,
            r#"rules[0] ("r"): type: must be one of equality, comparison"#,
        ),
        (
            r#"{"name": "r", "type": "equality", "attribute": "map", "weight": 1}"#,
            r#"rules[0] ("r"): unknown field `weight`"#,
        ),
        (
            r#"{"name": "r", "type": "equality", "attribute": "map", "max": 1}"#,
            r#"rules[0] ("r"): max: not a field of equality rules"#,
        ),
        (
            r#"{"name": "r", "type": "equality", "attribute": "map", "party": "avg"}"#,
            r#"rules[0] ("r"): party: not a field of equality rules"#,
        ),
        (
            r#"{"name": "r", "type": "equality"}"#,
            r#"rules[0] ("r"): attribute: required"#,
        ),
        (
            r#"{"name": "r", "type": "equality", "attribute": "nope"}"#,
            r#"rules[0] ("r"): attribute: "nope" is not declared"#,
        ),
        (
            r#"{"name": "r", "type": "equality", "attribute": "level"}"#,
            r#"rules[0] ("r"): attribute: "level" is a number attribute; equality rules need a string attribute"#,
        ),
        (
            r#"{"name": "r", "type": "distance", "attribute": "map", "max": 1}"#,
            r#"attribute: "map" is a string attribute; distance rules need a number attribute"#,
        ),
        (
            r#"{"name": "r", "type": "intersection", "attribute": "level"}"#,
            "intersection rules need a stringList attribute",
        ),
        (
            r#"{"name": "r", "type": "comparison", "attribute": "mode", "op": "=", "value": "x"}"#,
            "comparison rules need a number or string attribute",
        ),
        (
            r#"{"name": "r", "type": "distance", "attribute": "level"}"#,
            r#"rules[0] ("r"): max: required"#,
        ),
        (
            r#"{"name": "r", "type": "distance", "attribute": "level", "max": 1, "from": "mean"}"#,
            r#"rules[0] ("r"): from: must be one of spread, anchor, got "mean""#,
        ),
        (
            r#"{"name": "r", "type": "distance", "attribute": "level", "max": 1, "party": "union"}"#,
            r#"rules[0] ("r"): party: must be one of avg, min, max"#,
        ),
        (
            r#"{"name": "r", "type": "comparison", "attribute": "level", "value": 1}"#,
            r#"rules[0] ("r"): op: required"#,
        ),
        (
            r#"{"name": "r", "type": "comparison", "attribute": "level", "op": "~", "value": 1}"#,
            r#"rules[0] ("r"): op: must be one of >=, <=, >, <, =, !=, allEqual, allDifferent"#,
        ),
        (
            r#"{"name": "r", "type": "comparison", "attribute": "level", "op": ">="}"#,
            r#"rules[0] ("r"): value: required with op >="#,
        ),
        (
            r#"{"name": "r", "type": "comparison", "attribute": "level", "op": ">=", "value": "3"}"#,
            r#"rules[0] ("r"): value: must be a number, got "3""#,
        ),
        (
            r#"{"name": "r", "type": "comparison", "attribute": "map", "op": ">", "value": "dust"}"#,
            r#"rules[0] ("r"): op: a string attribute compares only with = or !=, got >"#,
        ),
        (
            r#"{"name": "r", "type": "comparison", "attribute": "map", "op": "=", "value": 3}"#,
            r#"rules[0] ("r"): value: must be a string, got 3"#,
        ),
        (
            r#"{"name": "r", "type": "comparison", "attribute": "map", "op": "=", "value": "inferno"}"#,
            r#"rules[0] ("r"): value: must be one of dust, nuke, got "inferno""#,
        ),
        (
            r#"{"name": "r", "type": "comparison", "attribute": "map", "op": "=", "value": "dust", "party": "min"}"#,
            r#"rules[0] ("r"): party: only for number attributes"#,
        ),
        (
            r#"{"name": "r", "type": "comparison", "attribute": "map", "op": "allEqual", "value": "dust"}"#,
            r#"rules[0] ("r"): value: not with op allEqual"#,
        ),
        (
            r#"{"name": "r", "type": "comparison", "attribute": "level", "op": "allDifferent", "party": "max"}"#,
            r#"rules[0] ("r"): party: not with op allDifferent"#,
        ),
        (
            r#"{"name": "r", "type": "intersection", "attribute": "mode", "minCount": 0}"#,
            r#"rules[0] ("r"): minCount: must be a whole number from 1 to 3, got 0"#,
        ),
        (
            r#"{"name": "r", "type": "intersection", "attribute": "mode", "minCount": 4}"#,
            r#"rules[0] ("r"): minCount: must be a whole number from 1 to 3, got 4"#,
        ),
        (
            r#"{"name": "r", "type": "intersection", "attribute": "mode", "minCount": 1.5}"#,
            r#"rules[0] ("r"): minCount: must be a whole number"#,
        ),
        (
            r#"{"name": "r", "type": "intersection", "attribute": "mode", "party": "avg"}"#,
            r#"rules[0] ("r"): party: must be one of intersection, union"#,
        ),
        (
            &format!(r#"{ok}, {{"name": "r", "type": "compound", "rules": ["a", "b"]}}"#),
            r#"rules[2] ("r"): op: required"#,
        ),
        (
            &format!(
                r#"{ok}, {{"name": "r", "type": "compound", "op": "xor", "rules": ["a", "b"]}}"#
            ),
            r#"rules[2] ("r"): op: must be one of and, or, not"#,
        ),
        (
            &format!(r#"{ok}, {{"name": "r", "type": "compound", "op": "and"}}"#),
            r#"rules[2] ("r"): rules: required"#,
        ),
        (
            &format!(r#"{ok}, {{"name": "r", "type": "compound", "op": "and", "rules": "a"}}"#),
            r#"rules[2] ("r"): rules: must be a list of rule names"#,
        ),
        (
            &format!(
                r#"{ok}, {{"name": "r", "type": "compound", "op": "not", "rules": ["a", "b"]}}"#
            ),
            r#"rules[2] ("r"): rules: not names 1 to 1 rules, got 2"#,
        ),
        (
            &format!(r#"{ok}, {{"name": "r", "type": "compound", "op": "and", "rules": ["a"]}}"#),
            r#"rules[2] ("r"): rules: and names 2 to 8 rules, got 1"#,
        ),
        (
            &format!(
                r#"{ok}, {{"name": "r", "type": "compound", "op": "or", "rules": ["a","b","a","b","a","b","a","b","a"]}}"#
            ),
            "rules: or names 2 to 8 rules, got 9",
        ),
        (
            &format!(
                r#"{ok}, {{"name": "r", "type": "compound", "op": "or", "rules": ["a", "c"]}}"#
            ),
            r#"rules[2] ("r"): rules: no rule of this world is named "c""#,
        ),
        (
            &format!(
                r#"{ok}, {{"name": "r", "type": "compound", "op": "or", "rules": ["a", "r"]}}"#
            ),
            r#"rules[2] ("r"): rules: a compound cannot name itself"#,
        ),
        (
            &format!(
                r#"{ok}, {{"name": "r", "type": "compound", "op": "or", "rules": ["a", "a"]}}"#
            ),
            r#"rules[2] ("r"): rules: "a" is named twice"#,
        ),
        (
            &format!(r#"{ok}, {{"name": "r", "type": "compound", "op": "or", "rules": ["a", 1]}}"#),
            r#"rules[2] ("r"): rules: must be a string, got 1"#,
        ),
        (
            &format!(
                r#"{ok}, {{"name": "r", "type": "compound", "op": "and", "attribute": "map", "rules": ["a", "b"]}}"#
            ),
            r#"rules[2] ("r"): attribute: not a field of compound rules"#,
        ),
        (
            &format!(
                r#"{ok}, {{"name": "x", "type": "compound", "op": "or", "rules": ["a", "y"]}}, {{"name": "y", "type": "compound", "op": "not", "rules": ["z"]}}, {{"name": "z", "type": "compound", "op": "and", "rules": ["b", "x"]}}"#
            ),
            r#"rules[2] ("x"): rules: compound rules name each other in a cycle: x -> y -> z -> x"#,
        ),
        (
            r#"{"name": "r", "type": "equality", "attribute": "map", "relax": {"steps": [{"afterSeconds": 1, "value": null}]}}"#,
            r#"rules[0] ("r"): relax: only for rules with a number"#,
        ),
        (
            r#"{"name": "r", "type": "comparison", "attribute": "map", "op": "=", "value": "dust", "relax": {"perSecond": 1, "limit": 2}}"#,
            r#"rules[0] ("r"): relax: only for rules with a number"#,
        ),
        (
            &format!(
                r#"{ok}, {{"name": "r", "type": "compound", "op": "and", "rules": ["a", "b"], "relax": {{"perSecond": 1, "limit": 2}}}}"#
            ),
            r#"rules[2] ("r"): relax: only for rules with a number"#,
        ),
        (
            r#"{"name": "r", "type": "distance", "attribute": "level", "max": 5, "relax": {}}"#,
            r#"rules[0] ("r"): relax: give perSecond and limit, or steps"#,
        ),
        (
            r#"{"name": "r", "type": "distance", "attribute": "level", "max": 5, "relax": {"perSecond": 1, "limit": 9, "steps": []}}"#,
            r#"rules[0] ("r"): relax: either perSecond and limit, or steps, not both"#,
        ),
        (
            r#"{"name": "r", "type": "distance", "attribute": "level", "max": 5, "relax": {"perSecond": 1}}"#,
            r#"rules[0] ("r"): relax.limit: required with perSecond"#,
        ),
        (
            r#"{"name": "r", "type": "distance", "attribute": "level", "max": 5, "relax": {"limit": 9}}"#,
            r#"rules[0] ("r"): relax.perSecond: required with limit"#,
        ),
        (
            r#"{"name": "r", "type": "distance", "attribute": "level", "max": 5, "relax": {"perSecond": 0, "limit": 9}}"#,
            r#"rules[0] ("r"): relax.perSecond: must be a number > 0, got 0"#,
        ),
        (
            r#"{"name": "r", "type": "distance", "attribute": "level", "max": 5, "relax": {"perSecond": 1, "limit": 3}}"#,
            r#"rules[0] ("r"): relax.limit: must be a number >= max (5), got 3"#,
        ),
        (
            r#"{"name": "r", "type": "intersection", "attribute": "mode", "minCount": 2, "relax": {"perSecond": 1, "limit": 0.5}}"#,
            r#"rules[0] ("r"): relax.limit: must be a whole number from 0 to 3, got 0.5"#,
        ),
        (
            r#"{"name": "r", "type": "comparison", "attribute": "level", "op": "<", "value": 5, "relax": {"perSecond": 1, "limit": "x"}}"#,
            r#"rules[0] ("r"): relax.limit: must be a number, got "x""#,
        ),
        (
            r#"{"name": "r", "type": "distance", "attribute": "level", "max": 5, "relax": {"perSecond": 1, "max": 9}}"#,
            r#"rules[0] ("r"): relax: unknown field `max`"#,
        ),
        (
            r#"{"name": "r", "type": "distance", "attribute": "level", "max": 5, "relax": {"steps": []}}"#,
            r#"rules[0] ("r"): relax.steps: must be a list of 1 to 8 steps"#,
        ),
        (
            r#"{"name": "r", "type": "distance", "attribute": "level", "max": 5, "relax": {"steps": [{"afterSeconds": 1, "value": 1}, {"afterSeconds": 2, "value": 1}, {"afterSeconds": 3, "value": 1}, {"afterSeconds": 4, "value": 1}, {"afterSeconds": 5, "value": 1}, {"afterSeconds": 6, "value": 1}, {"afterSeconds": 7, "value": 1}, {"afterSeconds": 8, "value": 1}, {"afterSeconds": 9, "value": 1}]}}"#,
            "relax.steps: must be a list of 1 to 8 steps",
        ),
        (
            r#"{"name": "r", "type": "distance", "attribute": "level", "max": 5, "relax": {"steps": [{"afterSeconds": 0, "value": 6}]}}"#,
            r#"rules[0] ("r"): relax.steps[0].afterSeconds: must be a number of seconds > 0"#,
        ),
        (
            r#"{"name": "r", "type": "distance", "attribute": "level", "max": 5, "relax": {"steps": [{"value": 6}]}}"#,
            r#"rules[0] ("r"): relax.steps[0].afterSeconds: required"#,
        ),
        (
            r#"{"name": "r", "type": "distance", "attribute": "level", "max": 5, "relax": {"steps": [{"afterSeconds": 10, "value": 6}, {"afterSeconds": 10, "value": 7}]}}"#,
            r#"rules[0] ("r"): relax.steps[1].afterSeconds: must be greater than the step before's (10), got 10"#,
        ),
        (
            r#"{"name": "r", "type": "distance", "attribute": "level", "max": 5, "relax": {"steps": [{"afterSeconds": 10}]}}"#,
            r#"rules[0] ("r"): relax.steps[0].value: required: a number, or null"#,
        ),
        (
            r#"{"name": "r", "type": "distance", "attribute": "level", "max": 5, "relax": {"steps": [{"afterSeconds": 10, "value": -1}]}}"#,
            r#"rules[0] ("r"): relax.steps[0].value: must be a number >= 0, got -1"#,
        ),
        (
            r#"{"name": "r", "type": "intersection", "attribute": "mode", "relax": {"steps": [{"afterSeconds": 10, "value": 4}]}}"#,
            r#"rules[0] ("r"): relax.steps[0].value: must be a whole number from 0 to 3, got 4"#,
        ),
        (
            r#"{"name": "r", "type": "distance", "attribute": "level", "max": 5, "relax": {"steps": [{"afterSeconds": 10, "value": null}, {"afterSeconds": 20, "value": 9}]}}"#,
            r#"rules[0] ("r"): relax.steps[1]: after a null step"#,
        ),
        (
            r#"{"name": "r", "type": "distance", "attribute": "level", "max": 5, "relax": {"steps": [{"afterSeconds": 10, "value": 6, "merge": []}]}}"#,
            r#"rules[0] ("r"): relax.steps[0]: unknown field `merge`"#,
        ),
        (
            r#"{"name": "r", "type": "equality", "attribute": "map", "optionalAfterSeconds": 0}"#,
            r#"rules[0] ("r"): optionalAfterSeconds: must be a number of seconds > 0"#,
        ),
        (
            r#"{"name": "r", "type": "equality", "attribute": "map", "optionalAfterSeconds": "10"}"#,
            r#"rules[0] ("r"): optionalAfterSeconds: must be a number of seconds > 0"#,
        ),
    ] {
        refused(&with_rules(rules), says);
    }
    refused(
        &doc(ATTRS, r#", "attributes": ["nope"]"#),
        r#"world "arena": attributes: "nope" is not declared in the top-level attributes"#,
    );
    refused(
        &doc(ATTRS, r#", "attributes": ["map", "map"]"#),
        r#"world "arena": attributes: "map" is listed twice"#,
    );
    refused(
        r#"{"worlds": [{"name": "arena", "teamSize": 2, "rules": [{"name": "r", "type": "equality", "attribute": "map"}]}]}"#,
        r#"world "arena": rules[0] ("r"): attribute: "map" is not declared"#,
    );
}
