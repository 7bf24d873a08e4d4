//! Unit tests of `recheck`: records as the scripts write them pass; a record
//! that breaks a rule, or misstates what was in force, fails and says why.

use serde_json::{json, Value};

use super::evaluate_tests::world;
use super::recheck;
use crate::config::{AttributeCatalog, World};
use crate::domain::MatchRecord;

/// A world whose top-level rules are sameMode, lvl, chars and buildOk
/// (an `or` of newBuild and samePlatform).
fn rules_world() -> (World, AttributeCatalog) {
    world(json!([
        {"name": "sameMode", "type": "intersection", "attribute": "mode"},
        {"name": "samePlatform", "type": "equality", "attribute": "platform",
         "optionalAfterSeconds": 30},
        {"name": "lvl", "type": "distance", "attribute": "level", "max": 5,
         "relax": {"perSecond": 0.5, "limit": 20}},
        {"name": "chars", "type": "comparison", "attribute": "character", "op": "allDifferent"},
        {"name": "newBuild", "type": "comparison", "attribute": "build", "op": ">=", "value": 14},
        {"name": "buildOk", "type": "compound", "op": "or", "rules": ["newBuild", "samePlatform"]}
    ]))
}

/// A match of the party [a, b] (level 10 and 18: 14 on average) and c
/// (level 9), anchored on a after 4 s, recorded as the scripts record it.
fn good() -> Value {
    json!({
        "matchId": "1-a", "worldType": "w", "matchedAt": 1,
        "participants": ["a", "b", "c"],
        "parties": [["a", "b"]],
        "attributes": {
            "a": {"mode": ["ctf", "dm"], "platform": "pc", "level": 10, "character": "ana",
                  "build": 15},
            "b": {"mode": ["dm"], "level": 18, "character": "bob"},
            "c": {"mode": ["dm", "koth"], "platform": "pc", "level": 9, "character": "cat",
                  "build": 12}
        },
        "rules": [
            {"name": "sameMode", "inForce": true, "value": 1, "shared": ["dm"]},
            {"name": "samePlatform", "inForce": true},
            {"name": "lvl", "inForce": true, "value": 7},
            {"name": "chars", "inForce": true},
            {"name": "newBuild", "inForce": true, "value": 14},
            {"name": "buildOk", "inForce": true, "held": ["samePlatform"]}
        ],
        "anchor": "a", "anchorWaitMs": 4000
    })
}

/// Sets (or adds) the value at a JSON pointer (`/rules/3/value`).
fn set(json: &mut Value, pointer: &str, value: Value) {
    let mut at = json;
    for part in pointer.split('/').skip(1) {
        at = match part.parse::<usize>() {
            Ok(i) => &mut at[i],
            Err(_) => &mut at[part],
        };
    }
    *at = value;
}

fn check(json: Value) -> Result<(), String> {
    let (w, catalog) = rules_world();
    let record: MatchRecord = serde_json::from_value(json).expect("a record");
    recheck(&w, &catalog, &record)
}

fn failure(json: Value) -> String {
    match check(json) {
        Ok(()) => panic!("the oracle accepted a bad record"),
        Err(e) => e,
    }
}

#[test]
fn a_record_as_the_scripts_write_it_passes() {
    check(good()).unwrap();
}

#[test]
fn a_record_that_breaks_a_rule_fails_naming_the_rule_and_players() {
    let mut r = good();
    r["attributes"]["c"]["platform"] = json!("ps");
    let e = failure(r);
    assert!(e.contains("match 1-a (world w)"), "{e}");
    assert!(e.contains("rule \"buildOk\" (or"), "{e}");
    assert!(
        e.contains("\"newBuild\" fails, \"samePlatform\" fails"),
        "{e}"
    );
    for shown in [
        // (json! objects sort their keys: the catalog is alphabetical.)
        "[\"a\": build=15 character=\"ana\" level=10 mode=[\"ctf\",\"dm\"] platform=\"pc\", ",
        "\"b\": character=\"bob\" level=18 mode=[\"dm\"]]",
        "[\"c\": build=12 character=\"cat\" level=9 mode=[\"dm\",\"koth\"] platform=\"ps\"]",
        "at the anchor \"a\"'s wait of 4000 ms",
    ] {
        assert!(e.contains(shown), "{shown} in {e}");
    }

    let mut r = good();
    r["attributes"]["b"]["character"] = json!("ana");
    let e = failure(r);
    assert!(
        e.contains("rule \"chars\" (all_different on character)"),
        "{e}"
    );
}

#[test]
fn parties_are_one_ticket() {
    let mut r = good();
    r.as_object_mut().unwrap().remove("parties");
    let e = failure(r);
    assert!(
        e.contains("rule \"lvl\" (distance on level, value in force 7)"),
        "as three solo tickets the spread is 9: {e}"
    );
}

#[test]
fn relaxation_is_read_at_the_recorded_wait() {
    let mut r = good();
    r["attributes"]["c"]["platform"] = json!("ps");
    r["anchorWaitMs"] = json!(30_000);
    r["rules"] = json!([
        {"name": "sameMode", "inForce": true, "value": 1, "shared": ["dm"]},
        {"name": "samePlatform", "inForce": false},
        {"name": "lvl", "inForce": true, "value": 20},
        {"name": "chars", "inForce": true},
        {"name": "newBuild", "inForce": true, "value": 14},
        {"name": "buildOk", "inForce": true, "held": ["samePlatform"]}
    ]);
    check(r.clone()).unwrap();
    r["anchorWaitMs"] = json!(29_999);
    let e = failure(r);
    assert!(e.contains("rule \"buildOk\""), "{e}");
}

#[test]
fn a_record_that_misstates_its_rules_fails() {
    let cases: [(&str, Value, &str); 8] = [
        (
            "/rules/2/value",
            json!(7.5),
            "rule \"lvl\": value is 7.5, but the value in force is 7",
        ),
        (
            "/rules/0/shared",
            json!(["ctf", "dm"]),
            "rule \"sameMode\": shared is Some([\"ctf\", \"dm\"])",
        ),
        (
            "/rules/1/inForce",
            json!(false),
            "rule \"samePlatform\": inForce is false, but the rule is in force",
        ),
        (
            "/rules/5/held",
            json!(["newBuild", "samePlatform"]),
            "rule \"buildOk\": held is",
        ),
        (
            "/rules/4/value",
            json!("14"),
            "rule \"newBuild\": value is \"14\"",
        ),
        (
            "/rules/3/value",
            json!(1),
            "rule \"chars\": value is 1, but the value in force is none",
        ),
        (
            "/rules/1/name",
            json!("other"),
            "the record's rules list [\"sameMode\", \"other\"",
        ),
        (
            "/anchor",
            json!("nobody"),
            "the anchor \"nobody\" is not a participant",
        ),
    ];
    for (pointer, value, expected) in cases {
        let mut r = good();
        set(&mut r, pointer, value);
        let e = failure(r);
        assert!(e.contains(expected), "{pointer}: {expected} in {e}");
    }
    let mut r = good();
    r["rules"].as_array_mut().unwrap().pop();
    assert!(failure(r).contains("the record's rules list"));
    for field in ["anchor", "anchorWaitMs"] {
        let mut r = good();
        r.as_object_mut().unwrap().remove(field);
        assert!(failure(r).contains("no anchor or anchorWaitMs"), "{field}");
    }
    let mut r = good();
    r.as_object_mut().unwrap().remove("rules");
    assert!(failure(r).contains("the record has no rules"));
}

#[test]
fn a_value_within_1e_9_and_operands_in_any_order_agree() {
    let mut r = good();
    r["rules"][2]["value"] = json!(7.000_000_000_5);
    check(r).unwrap();
    let (w, catalog) = world(json!([
        {"name": "p", "type": "equality", "attribute": "platform"},
        {"name": "r", "type": "equality", "attribute": "region"},
        {"name": "both", "type": "compound", "op": "or", "rules": ["r", "p"]}
    ]));
    let record: MatchRecord = serde_json::from_value(json!({
        "matchId": "1-b", "worldType": "w", "matchedAt": 1, "participants": ["a", "b"],
        "attributes": {},
        "rules": [
            {"name": "p", "inForce": true}, {"name": "r", "inForce": true},
            {"name": "both", "inForce": true, "held": ["r", "p"]}
        ],
        "anchor": "b", "anchorWaitMs": 0
    }))
    .unwrap();
    recheck(&w, &catalog, &record).unwrap();
}

#[test]
fn unreadable_attributes_fail() {
    let cases = [
        (
            "/attributes/a/level",
            json!("ten"),
            "\"a\"'s \"level\" is not a number value",
        ),
        (
            "/attributes/b/mode",
            json!("dm"),
            "\"b\"'s \"mode\" is not a stringList value",
        ),
    ];
    for (pointer, value, expected) in cases {
        let mut r = good();
        set(&mut r, pointer, value);
        let e = failure(r);
        assert!(e.contains(expected), "{expected} in {e}");
    }
    let mut r = good();
    r["attributes"]["z"] = json!({"level": 1});
    assert!(failure(r).contains("\"z\" is not a participant"));
    let mut r = good();
    r["parties"] = json!([["a", "z"]]);
    assert!(failure(r).contains("\"z\" is in a party but not a participant"));
    // Declared in the rule set, but not an attribute of the world (no rule
    // reads it and the world does not list it).
    let mut r = good();
    r["attributes"]["a"]["region"] = json!("eu");
    assert!(failure(r).contains("\"region\" is not an attribute of the world"));
}

#[test]
fn a_world_without_rules_only_reads_the_attributes() {
    let (w, catalog) = world(json!([]));
    let plain: MatchRecord = serde_json::from_value(json!({
        "matchId": "1-c", "worldType": "w", "matchedAt": 1, "participants": ["a", "b"]
    }))
    .unwrap();
    recheck(&w, &catalog, &plain).unwrap();
    let mut listed = serde_json::to_value(&plain).unwrap();
    listed["rules"] = json!([{"name": "x", "inForce": true}]);
    let listed: MatchRecord = serde_json::from_value(listed).unwrap();
    assert!(recheck(&w, &catalog, &listed)
        .unwrap_err()
        .contains("the world has no rules"));
}
