//! Unit tests of the rule set's attribute declarations that are refused.

use super::match_rules_tests::{doc, refused};

#[test]
fn bad_declarations_name_the_attribute_and_the_field() {
    let many: Vec<String> = (0..33)
        .map(|i| format!(r#""a{i}": {{"type": "number"}}"#))
        .collect();
    refused(
        &doc(&many.join(","), ""),
        "attributes: at most 32 attributes, got 33",
    );
    for (attrs, says) in [
        (
            r#""Mode": {"type": "string"}"#,
            r#"attributes: "Mode" is not a name"#,
        ),
        (
            r#""a-b": {"type": "string"}"#,
            r#"attributes: "a-b" is not a name"#,
        ),
        (
            r#""a": {"type": "string"}, "a": {"type": "number"}"#,
            r#""a" is declared twice"#,
        ),
        (r#""a": {}"#, "attributes.a.type: required"),
        (
            r#""a": {"type": "bool"}"#,
            "attributes.a.type: must be one of string, number",
        ),
        (
            r#""a": {"type": "string", "colour": 1}"#,
            "attributes.a: unknown field `colour`",
        ),
        (
            r#""a": {"type": "number", "values": ["x"]}"#,
            "attributes.a.values: not for a number attribute",
        ),
        (
            r#""a": {"type": "number", "maxLength": 3}"#,
            "attributes.a.maxLength: not for a number",
        ),
        (
            r#""a": {"type": "string", "maxItems": 3}"#,
            "attributes.a.maxItems: not for a string",
        ),
        (
            r#""a": {"type": "string", "min": 3}"#,
            "attributes.a.min: not for a string",
        ),
        (
            r#""a": {"type": "stringList", "max": 3}"#,
            "attributes.a.max: not for a stringList",
        ),
        (
            r#""a": {"type": "stringList", "keys": ["x"]}"#,
            "attributes.a.keys: not for a stringList",
        ),
        (
            r#""a": {"type": "string", "maxLength": 0}"#,
            "attributes.a.maxLength: must be a whole number from 1 to 64, got 0",
        ),
        (
            r#""a": {"type": "string", "maxLength": 65}"#,
            "attributes.a.maxLength: must be a whole number from 1 to 64",
        ),
        (
            r#""a": {"type": "stringList", "maxItems": 33}"#,
            "attributes.a.maxItems: must be a whole number from 1 to 32",
        ),
        (
            r#""a": {"type": "numberMap", "maxItems": 1.5}"#,
            "attributes.a.maxItems: must be a whole number",
        ),
        (
            r#""a": {"type": "number", "min": 5, "max": 4}"#,
            "attributes.a.min: must be <= max (4), got 5",
        ),
        (
            r#""a": {"type": "number", "min": 2e9}"#,
            "attributes.a.min: must be <= max",
        ),
        (
            r#""a": {"type": "number", "max": "3"}"#,
            r#"attributes.a.max: must be a number, got "3""#,
        ),
        (
            r#""a": {"type": "string", "values": []}"#,
            "attributes.a.values: must be a list of 1 to 64 tokens",
        ),
        (
            r#""a": {"type": "string", "values": "x"}"#,
            "attributes.a.values: must be a list",
        ),
        (
            r#""a": {"type": "string", "values": ["x", "x"]}"#,
            r#"attributes.a.values: "x" is listed twice"#,
        ),
        (
            r#""a": {"type": "string", "values": ["a b"]}"#,
            r#"attributes.a.values: "a b" is not a token"#,
        ),
        (
            r#""a": {"type": "string", "values": [3]}"#,
            "attributes.a.values: must be a string, got 3",
        ),
        (
            r#""a": {"type": "string", "maxLength": 2, "values": ["abc"]}"#,
            r#"attributes.a.values: "abc" is not a token of 1 to 2"#,
        ),
        (
            r#""a": {"type": "numberMap", "keys": ["k", "k"]}"#,
            r#"attributes.a.keys: "k" is listed twice"#,
        ),
        (
            r#""a": {"type": "string", "source": "server"}"#,
            "attributes.a.source: must be one of client, trusted",
        ),
        (
            r#""a": {"type": "string", "missing": "default"}"#,
            "attributes.a.missing: must be one of any, refuse",
        ),
        (
            r#""a": {"type": "string", "missing": "any", "default": "x"}"#,
            "attributes.a.missing: not with default",
        ),
        (
            r#""a": {"type": "string", "default": 3}"#,
            "attributes.a.default: must be a string, got 3",
        ),
        (
            r#""a": {"type": "string", "values": ["x"], "default": "y"}"#,
            r#"attributes.a.default: must be one of x, got "y""#,
        ),
        (
            r#""a": {"type": "number", "min": 0, "max": 1, "default": 2}"#,
            "attributes.a.default: must be a number from 0 to 1, got 2",
        ),
        (
            r#""a": {"type": "stringList", "default": ["x", "x"]}"#,
            r#"attributes.a.default: lists "x" twice"#,
        ),
        (
            r#""a": {"type": "stringList", "maxItems": 1, "default": ["x", "y"]}"#,
            "attributes.a.default: must have 1 to 1 items, got 2",
        ),
        (
            r#""a": {"type": "numberMap", "keys": ["k"], "default": {"j": 1}}"#,
            r#"attributes.a.default: key must be one of k, got "j""#,
        ),
    ] {
        refused(&doc(attrs, ""), says);
    }
    for (store, says) in [
        (
            r#"{"writerScope": " "}"#,
            "attributeStore.writerScope: must not be empty",
        ),
        (r#"{"scope": "x"}"#, "unknown field `scope`"),
    ] {
        refused(
            &format!(
                r#"{{"attributeStore": {store}, "worlds": [{{"name": "w", "teamSize": 2}}]}}"#
            ),
            says,
        );
    }
    refused(
        r#"{"attributes": [], "worlds": []}"#,
        "an object of attribute name -> declaration",
    );
}
