//! Unit tests of attribute values in requests and their stored encoding.

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::json;

use super::*;
use crate::config::rules::parse;
use crate::config::WorldCatalog;

const DOC: &str = r#"{
  "attributes": {
    "mode": {"type": "stringList", "values": ["ctf", "dm", "koth"], "maxItems": 3},
    "map": {"type": "string", "missing": "refuse", "maxLength": 8},
    "skill": {"type": "number", "min": 0, "max": 1, "default": 0.5},
    "level": {"type": "number", "min": 0, "max": 100},
    "roles": {"type": "numberMap", "keys": ["tank", "dps"], "min": 0, "max": 1, "maxItems": 2},
    "league": {"type": "number", "source": "trusted", "default": 1},
    "region": {"type": "string"}
  },
  "worlds": [
    {"name": "arena", "teamSize": 2, "attributes": ["mode", "map", "skill", "level", "roles", "league"]},
    {"name": "other", "teamSize": 2, "attributes": ["region"]},
    {"name": "plain", "teamSize": 2}
  ]
}"#;

fn setup() -> (WorldCatalog, AttributeCatalog) {
    let (worlds, _, access) = parse("MM_RULES", DOC, Duration::from_secs(60)).unwrap();
    (worlds, access.attributes)
}

fn list(items: &[&str]) -> AttributeValue {
    AttributeValue::List(items.iter().map(|s| s.to_string()).collect())
}

#[test]
fn a_join_s_attributes_are_validated_and_defaults_filled_in() {
    let (worlds, catalog) = setup();
    let arena = worlds.get("arena").unwrap();
    let body = json!({"mode": ["dm", "ctf"], "map": "dust", "level": 12,
                      "roles": {"tank": 1, "dps": 0.5}});
    let got = catalog.client_attributes(arena, Some(&body)).unwrap();
    assert_eq!(got.get("mode"), Some(&list(&["ctf", "dm"])), "sorted");
    assert_eq!(got.get("map"), Some(&AttributeValue::Str("dust".into())));
    assert_eq!(
        got.get("skill"),
        Some(&AttributeValue::Num(0.5)),
        "the default"
    );
    assert_eq!(got.get("level"), Some(&AttributeValue::Num(12.0)));
    assert_eq!(
        got.get("league"),
        None,
        "trusted: the scripts read the store"
    );
    assert_eq!(
        got.encode(&catalog),
        "mode=ctf,dm;map=dust;skill=0.5;level=12;roles=dps:0.5,tank:1"
    );
    assert_eq!(
        TicketAttributes::decode(&catalog, &got.encode(&catalog)),
        Ok(got)
    );
    // A world without attributes takes none, but an empty object is fine.
    let plain = worlds.get("plain").unwrap();
    assert!(catalog.client_attributes(plain, None).unwrap().is_empty());
    assert!(catalog
        .client_attributes(plain, Some(&json!({})))
        .unwrap()
        .is_empty());
    let err = catalog
        .client_attributes(plain, Some(&json!({"map": "dust"})))
        .unwrap_err();
    assert_eq!(
        err,
        AttributeError::new("map", "is not an attribute of world plain")
    );
}

#[test]
fn a_join_s_bad_attributes_are_refused_naming_the_attribute() {
    let (worlds, catalog) = setup();
    let arena = worlds.get("arena").unwrap();
    let err = catalog.client_attributes(arena, None).unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid attribute \"map\": is required in world arena"
    );
    for (body, attribute, says) in [
        (
            json!([]),
            "",
            "must be an object of name -> value, got a list",
        ),
        (
            json!({"region": "eu"}),
            "region",
            "is not an attribute of world arena",
        ),
        (
            json!({"nope": 1}),
            "nope",
            "is not an attribute of world arena",
        ),
        (
            json!({"league": 3}),
            "league",
            "is set by the server (trusted)",
        ),
        (json!({"map": 3}), "map", "must be a string, got 3"),
        (
            json!({"map": "inferno_2"}),
            "map",
            "must be 1 to 8 characters of A-Z",
        ),
        (json!({"map": "a b"}), "map", "must be 1 to 8 characters"),
        (json!({"map": ""}), "map", "must be 1 to 8 characters"),
        (
            json!({"level": 101}),
            "level",
            "must be a number from 0 to 100, got 101",
        ),
        (
            json!({"level": -1}),
            "level",
            "must be a number from 0 to 100, got -1",
        ),
        (
            json!({"level": "5"}),
            "level",
            "must be a number from 0 to 100, got \"5\"",
        ),
        (json!({"level": null}), "level", "got null"),
        (
            json!({"mode": "ctf"}),
            "mode",
            "must be a list of 1 to 3 strings, got \"ctf\"",
        ),
        (json!({"mode": []}), "mode", "must have 1 to 3 items, got 0"),
        (
            json!({"mode": ["ctf", "dm", "koth", "ctf"]}),
            "mode",
            "must have 1 to 3 items, got 4",
        ),
        (
            json!({"mode": ["ctf", "dm", "ctf"]}),
            "mode",
            "lists \"ctf\" twice",
        ),
        (
            json!({"mode": ["tdm"]}),
            "mode",
            "item must be one of ctf, dm, koth, got \"tdm\"",
        ),
        (json!({"mode": [1]}), "mode", "items must be strings, got 1"),
        (
            json!({"roles": {"healer": 1}}),
            "roles",
            "key must be one of tank, dps, got \"healer\"",
        ),
        (
            json!({"roles": {"tank": 2}}),
            "roles",
            "tank: must be a number from 0 to 1, got 2",
        ),
        (
            json!({"roles": {"tank": "1"}}),
            "roles",
            "tank: must be a number",
        ),
        (
            json!({"roles": {}}),
            "roles",
            "must have 1 to 2 items, got 0",
        ),
        (
            json!({"roles": [1]}),
            "roles",
            "must be an object of 1 to 2 key -> number entries",
        ),
    ] {
        let mut body = body;
        if let Some(o) = body.as_object_mut() {
            o.entry("map").or_insert(json!("dust"));
        }
        let err = catalog.client_attributes(arena, Some(&body)).unwrap_err();
        assert_eq!(err.attribute, attribute, "{body}: {err}");
        assert!(
            err.reason.contains(says),
            "{body}: {err}\n  expected: {says}"
        );
        assert!(err.to_string().contains(attribute), "{err}");
    }
    let long = "x".repeat(100);
    let err = catalog
        .client_attributes(arena, Some(&json!({ long.as_str(): 1, "map": "dust" })))
        .unwrap_err();
    assert!(err.attribute.len() < 50, "a long name is cut: {err}");
}

#[test]
fn a_trusted_writer_gives_only_trusted_attributes() {
    let (_, catalog) = setup();
    let got = catalog.trusted_attributes(&json!({"league": 3})).unwrap();
    assert_eq!(got.encode(&catalog), "league=3");
    assert!(
        catalog.trusted_attributes(&json!({})).unwrap().is_empty(),
        "no default"
    );
    for (body, attribute, says) in [
        (json!("x"), "", "must be an object"),
        (
            json!({"mode": ["ctf"]}),
            "mode",
            "it is not stored (not trusted)",
        ),
        (json!({"nope": 1}), "nope", "is not a declared attribute"),
        (
            json!({"league": "x"}),
            "league",
            "must be a number from -1000000000 to 1000000000, got \"x\"",
        ),
    ] {
        let err = catalog.trusted_attributes(&body).unwrap_err();
        assert_eq!(err.attribute, attribute, "{body}: {err}");
        assert!(err.reason.contains(says), "{body}: {err}");
    }
}

#[test]
fn the_encoding_follows_the_declarations_and_reads_back() {
    let (_, catalog) = setup();
    let mut t = TicketAttributes::new();
    t.insert("region", AttributeValue::Str("eu-west".into()));
    t.insert("league", AttributeValue::Num(0.1 + 0.2));
    t.insert("level", AttributeValue::Num(1e21));
    t.insert("mode", list(&["koth", "ctf", "ctf"]));
    t.insert(
        "roles",
        AttributeValue::Map(BTreeMap::from([("z".into(), -0.0), ("a:b".into(), 2.5)])),
    );
    t.insert("undeclared", AttributeValue::Num(1.0));
    let encoded = t.encode(&catalog);
    assert_eq!(
        encoded,
        "mode=ctf,koth;level=1000000000000000000000;roles=a:b:2.5,z:0;\
         league=0.30000000000000004;region=eu-west",
        "declaration order, lists sorted and deduplicated, no exponent, undeclared left out"
    );
    let back = TicketAttributes::decode(&catalog, &encoded).unwrap();
    assert_eq!(back.get("mode"), Some(&list(&["ctf", "koth"])));
    assert_eq!(
        back.get("league"),
        Some(&AttributeValue::Num(0.1 + 0.2)),
        "exact"
    );
    assert_eq!(back.get("level"), Some(&AttributeValue::Num(1e21)));
    assert_eq!(
        back.get("roles"),
        Some(&AttributeValue::Map(BTreeMap::from([
            ("z".into(), 0.0),
            ("a:b".into(), 2.5)
        ]))),
        "a key split at its last ':'"
    );
    assert_eq!(back.len(), 5);
    assert!(TicketAttributes::decode(&catalog, "").unwrap().is_empty());
    assert_eq!(TicketAttributes::new().encode(&catalog), "");
    let party = TicketAttributes::decode_party(&catalog, "map=dust;level=3|level=4|").unwrap();
    assert_eq!(party.len(), 3);
    assert_eq!(party[1].get("level"), Some(&AttributeValue::Num(4.0)));
    assert!(party[2].is_empty());
    for (bad, attribute) in [
        ("map", ""),
        ("nope=1", "nope"),
        ("map=a;map=b", "map"),
        ("map=a b", "map"),
        ("level=abc", "level"),
        ("level=1e5", "level"),
        ("level=inf", "level"),
        ("level=", "level"),
        ("mode=ctf,,dm", "mode"),
        ("roles=tank", "roles"),
        ("roles=tank:x", "roles"),
    ] {
        let err = TicketAttributes::decode(&catalog, bad).unwrap_err();
        assert_eq!(err.attribute, attribute, "{bad}: {err}");
    }
}
