//! Unit tests of `evaluate`: every rule kind on hand-built worlds (rule
//! sets parsed as a deployment's are), parties, missing values,
//! relaxation at the anchor's wait and compounds.

use std::time::Duration;

use serde_json::{json, Value};

use super::{evaluate, Evaluation, RuleEvaluation};
use crate::config::{rules, AttributeCatalog, RuleValue, World};
use crate::domain::TicketAttributes;

/// A rule set with one world `w` (teams of 4) whose rules are `rules`, over
/// a fixed set of attributes.
pub(super) fn world(rules: Value) -> (World, AttributeCatalog) {
    let doc = json!({
        "attributes": {
            "mode": {"type": "stringList", "maxItems": 4},
            "platform": {"type": "string"},
            "build": {"type": "number"},
            "level": {"type": "number"},
            "character": {"type": "string"},
            "region": {"type": "string"}
        },
        "worlds": [{"name": "w", "teamSize": 4, "rules": rules}]
    });
    let (worlds, _, access) = rules::parse("MM_RULES", &doc.to_string(), Duration::from_secs(600))
        .unwrap_or_else(|e| panic!("the test rule set: {e}"));
    (worlds.get("w").expect("world w").clone(), access.attributes)
}

/// One player's attributes from `{name: value}` (validated by the catalog).
pub(super) fn player(catalog: &AttributeCatalog, values: &Value) -> TicketAttributes {
    values
        .as_object()
        .expect("an object")
        .iter()
        .map(|(name, v)| {
            let decl = catalog.get(name).expect("declared");
            (name.clone(), decl.value_from_json(v).expect("valid"))
        })
        .collect()
}

/// `tickets`: one JSON array per ticket, of its members' `{name: value}`.
fn eval(
    (world, catalog): &(World, AttributeCatalog),
    tickets: &[Value],
    anchor: usize,
    wait_ms: u64,
) -> Evaluation {
    let owned: Vec<Vec<TicketAttributes>> = tickets
        .iter()
        .map(|t| {
            t.as_array()
                .expect("a ticket: an array of players")
                .iter()
                .map(|p| player(catalog, p))
                .collect()
        })
        .collect();
    let refs: Vec<Vec<&TicketAttributes>> = owned.iter().map(|t| t.iter().collect()).collect();
    evaluate(world, &refs, anchor, Duration::from_millis(wait_ms))
}

fn rule<'e>(e: &'e Evaluation, name: &str) -> &'e RuleEvaluation {
    e.outcomes
        .iter()
        .find(|o| o.name == name)
        .unwrap_or_else(|| panic!("no rule {name}"))
}

fn holds(w: &(World, AttributeCatalog), tickets: &[Value]) -> bool {
    eval(w, tickets, 0, 0).holds
}

#[test]
fn equality_needs_every_present_value_equal() {
    let w = world(json!([{"name": "samePlatform", "type": "equality", "attribute": "platform"}]));
    let pc = json!({"platform": "pc"});
    let ps = json!({"platform": "ps"});
    let none = json!({});
    assert!(holds(&w, &[json!([pc]), json!([pc])]));
    assert!(!holds(&w, &[json!([pc]), json!([ps])]));
    assert!(
        holds(&w, &[json!([pc]), json!([none]), json!([pc])]),
        "a missing value fits"
    );
    assert!(
        holds(&w, &[json!([none]), json!([none])]),
        "no value at all holds"
    );
    assert!(
        !holds(&w, &[json!([pc, ps]), json!([pc])]),
        "party members count one by one"
    );
    let e = eval(&w, &[json!([pc])], 0, 0);
    let o = rule(&e, "samePlatform");
    assert!(o.in_force && o.holds && o.top && o.recorded);
    assert_eq!(
        (o.value.as_ref(), o.shared.as_ref(), o.held.as_ref()),
        (None, None, None)
    );
}

#[test]
fn number_comparisons_aggregate_each_party() {
    let rules = |party: &str| {
        world(
            json!([{"name": "newBuild", "type": "comparison", "attribute": "build",
                       "op": ">=", "value": 14, "party": party}]),
        )
    };
    let party = json!([{"build": 10}, {"build": 20}, {}]);
    let solo = json!([{"build": 14}]);
    assert!(
        holds(&rules("avg"), &[party.clone(), solo.clone()]),
        "avg 15"
    );
    assert!(
        !holds(&rules("min"), &[party.clone(), solo.clone()]),
        "min 10"
    );
    assert!(
        holds(&rules("max"), &[party.clone(), solo.clone()]),
        "max 20"
    );
    assert!(
        !holds(&rules("avg"), &[json!([{"build": 13.5}]), solo.clone()]),
        "a solo ticket below"
    );
    assert!(
        holds(&rules("avg"), &[json!([{}, {}]), solo.clone()]),
        "a ticket without any value is ignored"
    );
    let e = eval(&rules("avg"), &[solo], 0, 0);
    assert_eq!(rule(&e, "newBuild").value, Some(RuleValue::Number(14.0)));

    for (op, value, expect) in [
        ("<=", 5, true),
        ("<", 5, false),
        (">", 4, true),
        (">", 5, false),
        ("=", 5, true),
        ("!=", 5, false),
        ("!=", 4, true),
    ] {
        let w = world(
            json!([{"name": "c", "type": "comparison", "attribute": "level",
                               "op": op, "value": value}]),
        );
        assert_eq!(
            holds(&w, &[json!([{"level": 5}])]),
            expect,
            "5 {op} {value}"
        );
    }
}

#[test]
fn string_comparisons_hold_for_every_player() {
    let w = world(
        json!([{"name": "notEu", "type": "comparison", "attribute": "region",
                           "op": "!=", "value": "eu"}]),
    );
    assert!(holds(
        &w,
        &[json!([{"region": "us"}, {}]), json!([{"region": "asia"}])]
    ));
    assert!(!holds(&w, &[json!([{"region": "us"}, {"region": "eu"}])]));
    let e = eval(&w, &[json!([{}])], 0, 0);
    assert_eq!(
        rule(&e, "notEu").value,
        Some(RuleValue::Token("eu".into())),
        "the token is the value in force"
    );
    let w = world(
        json!([{"name": "onlyEu", "type": "comparison", "attribute": "region",
                           "op": "=", "value": "eu"}]),
    );
    assert!(holds(&w, &[json!([{"region": "eu"}]), json!([{}])]));
    assert!(!holds(
        &w,
        &[json!([{"region": "eu"}]), json!([{"region": "us"}])]
    ));
}

#[test]
fn all_equal_and_all_different_are_per_player() {
    let w = world(json!([
        {"name": "chars", "type": "comparison", "attribute": "character", "op": "allDifferent"},
    ]));
    assert!(holds(
        &w,
        &[
            json!([{"character": "ana"}, {}]),
            json!([{"character": "bob"}, {}])
        ]
    ));
    assert!(
        !holds(&w, &[json!([{"character": "ana"}, {"character": "ana"}])]),
        "two members of one party"
    );
    assert!(!holds(
        &w,
        &[json!([{"character": "ana"}]), json!([{"character": "ana"}])]
    ));
    let w = world(json!([
        {"name": "lvl", "type": "comparison", "attribute": "level", "op": "allEqual"},
    ]));
    assert!(holds(
        &w,
        &[json!([{"level": 3}, {}]), json!([{"level": 3.0}])]
    ));
    assert!(
        !holds(
            &w,
            &[json!([{"level": 3}, {"level": 5}]), json!([{"level": 4}])]
        ),
        "not aggregated: the party's average would be 4"
    );
}

#[test]
fn distance_spread_and_from_the_anchor() {
    let spread = world(
        json!([{"name": "lvl", "type": "distance", "attribute": "level",
                               "max": 10}]),
    );
    assert!(holds(
        &spread,
        &[json!([{"level": 10}]), json!([{"level": 20}]), json!([{}])]
    ));
    assert!(!holds(
        &spread,
        &[json!([{"level": 10}]), json!([{"level": 20.5}])]
    ));
    assert!(
        holds(
            &spread,
            &[json!([{"level": 0}, {"level": 30}]), json!([{"level": 25}])]
        ),
        "the party counts as its average, 15"
    );
    assert!(
        holds(&spread, &[json!([{}]), json!([{}])]),
        "no values: holds"
    );
    let max = world(
        json!([{"name": "lvl", "type": "distance", "attribute": "level",
                            "max": 10, "party": "max"}]),
    );
    assert!(!holds(
        &max,
        &[json!([{"level": 0}, {"level": 30}]), json!([{"level": 19}])]
    ));

    let anchored = world(
        json!([{"name": "lvl", "type": "distance", "attribute": "level",
                                 "max": 10, "from": "anchor"}]),
    );
    let tickets = [
        json!([{"level": 0}]),
        json!([{"level": 10}]),
        json!([{"level": 20}]),
    ];
    assert!(
        !eval(&anchored, &tickets, 0, 0).holds,
        "20 is 20 from the anchor's 0"
    );
    assert!(
        eval(&anchored, &tickets, 1, 0).holds,
        "each within 10 of the anchor's 10 (a spread of 20)"
    );
    assert!(
        eval(
            &anchored,
            &[json!([{}]), json!([{"level": 0}]), json!([{"level": 99}])],
            0,
            0
        )
        .holds,
        "an anchor without a value: holds"
    );
}

#[test]
fn intersections_share_values_and_record_them() {
    let w = world(
        json!([{"name": "maps", "type": "intersection", "attribute": "mode",
                          "minCount": 2}]),
    );
    let e = eval(
        &w,
        &[
            json!([{"mode": ["dm", "ctf", "koth"]}]),
            json!([{"mode": ["koth", "ctf"]}]),
            json!([{}]),
        ],
        0,
        0,
    );
    let o = rule(&e, "maps");
    assert!(o.holds);
    assert_eq!(o.shared, Some(vec!["ctf".to_owned(), "koth".to_owned()]));
    assert_eq!(o.value, Some(RuleValue::Number(2.0)));
    let e = eval(
        &w,
        &[json!([{"mode": ["dm", "ctf"]}]), json!([{"mode": ["ctf"]}])],
        0,
        0,
    );
    assert!(!e.holds);
    assert_eq!(rule(&e, "maps").shared, Some(vec!["ctf".to_owned()]));
    let e = eval(&w, &[json!([{}]), json!([{}])], 0, 0);
    assert!(e.holds, "no ticket with a list: holds");
    assert_eq!(rule(&e, "maps").shared, Some(vec![]));

    let party = json!([{"mode": ["ctf", "dm"]}, {"mode": ["dm", "koth"]}, {}]);
    let solo = json!([{"mode": ["ctf", "dm", "koth"]}]);
    let e = eval(&w, &[party.clone(), solo.clone()], 0, 0);
    assert!(!e.holds, "the party's intersection is dm alone");
    assert_eq!(rule(&e, "maps").shared, Some(vec!["dm".to_owned()]));
    let union = world(
        json!([{"name": "maps", "type": "intersection", "attribute": "mode",
                              "minCount": 2, "party": "union"}]),
    );
    let e = eval(&union, &[party, solo], 0, 0);
    assert!(e.holds);
    assert_eq!(
        rule(&e, "maps").shared,
        Some(vec!["ctf".to_owned(), "dm".to_owned(), "koth".to_owned()])
    );
    let e = eval(
        &union,
        &[
            json!([{"mode": ["ctf"]}, {"mode": ["dm"]}]),
            json!([{"mode": ["koth"]}]),
        ],
        0,
        0,
    );
    assert!(!e.holds);
    assert_eq!(rule(&e, "maps").shared, Some(vec![]));
}

#[test]
fn relaxation_follows_the_anchor_wait() {
    let w = world(json!([
        {"name": "lvl", "type": "distance", "attribute": "level", "max": 5,
         "relax": {"perSecond": 1, "limit": 20}},
        {"name": "maps", "type": "intersection", "attribute": "mode", "minCount": 3,
         "relax": {"perSecond": 0.4, "limit": 1}},
        {"name": "newBuild", "type": "comparison", "attribute": "build", "op": ">=", "value": 14,
         "relax": {"steps": [{"afterSeconds": 10, "value": 12}, {"afterSeconds": 20, "value": null}]}},
        {"name": "sameRegion", "type": "equality", "attribute": "region",
         "optionalAfterSeconds": 30}
    ]));
    let tickets = [
        json!([{"level": 0, "mode": ["ctf", "dm"], "build": 11, "region": "eu"}]),
        json!([{"level": 12, "mode": ["ctf", "dm", "koth"], "build": 13, "region": "us"}]),
    ];
    let at = |secs: f64, anchor: usize| eval(&w, &tickets, anchor, (secs * 1000.0) as u64);

    let e = at(0.0, 0);
    assert!(!e.holds);
    assert_eq!(rule(&e, "lvl").value, Some(RuleValue::Number(5.0)));
    assert!(!rule(&e, "lvl").holds && !rule(&e, "maps").holds);
    assert!(!rule(&e, "newBuild").holds && !rule(&e, "sameRegion").holds);

    let e = at(7.0, 1);
    assert_eq!(rule(&e, "lvl").value, Some(RuleValue::Number(12.0)));
    assert!(rule(&e, "lvl").holds, "the spread 12 within 5 + 7");
    assert_eq!(
        rule(&e, "maps").value,
        Some(RuleValue::Number(1.0)),
        "3 - 0.4 * 7 = 0.2, never past the limit 1"
    );
    let e = at(2.5, 0);
    assert_eq!(
        rule(&e, "maps").value,
        Some(RuleValue::Number(2.0)),
        "3 - 0.4 * 2.5 = 2"
    );
    assert!(rule(&e, "maps").holds, "ctf and dm shared");
    // Between whole counts, the count in force is the configuration's
    // (`MatchRule::in_force` rounds it), whichever way it rounds.
    for secs in [0.001, 2.4, 2.6, 4.9] {
        let e = at(secs, 0);
        let wait = Duration::from_millis((secs * 1000.0) as u64);
        let Some(Some(count)) = w.0.match_rules[1].in_force(wait) else {
            panic!("maps is in force at {secs} s");
        };
        assert_eq!(count, count.trunc(), "a whole count at {secs} s");
        assert!((1.0..=3.0).contains(&count), "{count} at {secs} s");
        let o = rule(&e, "maps");
        assert_eq!(o.value, Some(RuleValue::Number(count)), "at {secs} s");
        assert_eq!(
            o.holds,
            count <= 2.0,
            "two shared, {count} needed at {secs} s"
        );
    }

    let e = at(10.0, 0);
    assert_eq!(rule(&e, "newBuild").value, Some(RuleValue::Number(12.0)));
    assert!(!rule(&e, "newBuild").holds, "11 < 12");
    let e = at(20.0, 0);
    let o = rule(&e, "newBuild");
    assert!(
        !o.in_force && o.holds && o.value.is_none(),
        "a null step: off"
    );
    assert!(!e.holds, "the regions still differ");
    let e = at(30.0, 0);
    let o = rule(&e, "sameRegion");
    assert!(!o.in_force && o.holds && o.recorded);
    assert!(e.holds, "everything relaxed");
    assert!(!at(29.999, 0).holds);
}

#[test]
fn compounds_decide_for_their_operands() {
    let w = world(json!([
        {"name": "samePlatform", "type": "equality", "attribute": "platform"},
        {"name": "close", "type": "distance", "attribute": "level", "max": 5},
        {"name": "either", "type": "compound", "op": "or", "rules": ["close", "samePlatform"]},
        {"name": "eu", "type": "comparison", "attribute": "region", "op": "=", "value": "eu"},
        {"name": "notEu", "type": "compound", "op": "not", "rules": ["eu"]},
        {"name": "both", "type": "compound", "op": "and", "rules": ["either", "notEu"],
         "optionalAfterSeconds": 60}
    ]));
    let tickets = [
        json!([{"platform": "pc", "level": 1, "region": "us"}]),
        json!([{"platform": "ps", "level": 3}]),
    ];
    let e = eval(&w, &tickets, 0, 0);
    assert!(e.holds, "the platforms differ, but close holds");
    let tops: Vec<&str> = e
        .outcomes
        .iter()
        .filter(|o| o.top)
        .map(|o| o.name.as_str())
        .collect();
    assert_eq!(tops, ["both"]);
    assert!(!rule(&e, "samePlatform").holds, "an operand need not hold");
    assert_eq!(rule(&e, "either").held, Some(vec!["close".to_owned()]));
    assert_eq!(
        rule(&e, "both").held,
        Some(vec!["either".to_owned(), "notEu".to_owned()])
    );
    assert!(rule(&e, "notEu").held.is_none());
    assert!(e.outcomes.iter().all(|o| o.recorded));
    let recorded = e.recorded();
    assert_eq!(recorded.len(), 6);
    assert_eq!(recorded[2].held, Some(vec!["close".to_owned()]));

    let far = [
        json!([{"platform": "pc", "level": 1}]),
        json!([{"platform": "ps", "level": 30}]),
    ];
    let e = eval(&w, &far, 0, 0);
    assert!(!e.holds);
    assert_eq!(rule(&e, "either").held, Some(vec![]));
    assert_eq!(
        e.failing().map(|o| o.name.as_str()).collect::<Vec<_>>(),
        ["both"]
    );
    let in_eu = [json!([{"region": "eu"}])];
    assert!(
        !eval(&w, &in_eu, 0, 0).holds,
        "not: eu holds, so notEu fails"
    );

    // Off at 60 s: it holds, and its operands are not evaluated (so not
    // recorded) any more.
    let e = eval(&w, &far, 0, 60_000);
    assert!(e.holds);
    let recorded: Vec<&str> = e
        .outcomes
        .iter()
        .filter(|o| o.recorded)
        .map(|o| o.name.as_str())
        .collect();
    assert_eq!(recorded, ["both"]);
    assert_eq!(rule(&e, "both").held, None);
}

#[test]
fn an_operand_of_an_off_compound_named_by_another_is_recorded() {
    let w = world(json!([
        {"name": "samePlatform", "type": "equality", "attribute": "platform"},
        {"name": "close", "type": "distance", "attribute": "level", "max": 5},
        {"name": "soon", "type": "compound", "op": "and", "rules": ["samePlatform", "close"],
         "optionalAfterSeconds": 10},
        {"name": "always", "type": "compound", "op": "not", "rules": ["close"]}
    ]));
    let e = eval(
        &w,
        &[json!([{"level": 1}]), json!([{"level": 9}])],
        0,
        10_000,
    );
    let recorded: Vec<&str> = e
        .outcomes
        .iter()
        .filter(|o| o.recorded)
        .map(|o| o.name.as_str())
        .collect();
    assert_eq!(recorded, ["close", "soon", "always"]);
    assert!(e.holds, "close fails, so not close holds; soon is off");
}
