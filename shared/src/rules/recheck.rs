//! A match record re-checked against its world's rules: the tickets rebuilt
//! from the record, every rule evaluated again at the anchor's wait.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::time::Duration;

use serde_json::Value;

use super::evaluate::{evaluate, Evaluation, RuleEvaluation};
use crate::config::{AttributeCatalog, AttributeType, RuleValue, World};
use crate::domain::{AttributeValue, MatchRecord, RuleOutcome, TicketAttributes};

/// How far a recorded number may be from the one computed here.
const EPSILON: f64 = 1e-9;

/// Re-checks a match record of `world` (whose attributes `catalog`
/// declares): every top-level rule must hold for the players as the record
/// shows them, at the anchor's wait it records, and the record's `rules`
/// must state what was in force and what held exactly as computed here.
///
/// The tickets are rebuilt from the record: each party in `parties` is one
/// ticket (its members in the listed order), every other participant a
/// solo ticket; each player's values are `attributes`' (decoded by the
/// catalog's declared type); the anchor ticket is the one holding
/// `anchor`; the wait is `anchorWaitMs`.
///
/// Fails, with a message naming the match, the rule and the players, when
/// a top-level rule does not hold, when the record's `rules` disagree
/// (in force, the value in force within 1e-9, the shared values, the
/// operands that held, or which rules are listed), when a world with rules
/// has a record without `anchor` / `anchorWaitMs` / `rules`, or when the
/// record's attributes cannot be read (an undeclared attribute, a value of
/// the wrong type, a player who is not a participant). A world without
/// rules only has its attributes read.
pub fn recheck(
    world: &World,
    catalog: &AttributeCatalog,
    record: &MatchRecord,
) -> Result<(), String> {
    let id = record.match_id.as_str();
    let fail = |reason: String| Err(format!("match {id} (world {}): {reason}", world.name));
    let players = match player_attributes(world, catalog, record) {
        Ok(players) => players,
        Err(reason) => return fail(reason),
    };
    if world.match_rules.is_empty() {
        return match record.rules.as_deref() {
            Some(rules) if !rules.is_empty() => fail(format!(
                "the world has no rules, yet the record lists {}",
                names(rules.iter().map(|r| r.name.as_str()))
            )),
            _ => Ok(()),
        };
    }
    let (Some(anchor), Some(wait_ms)) = (&record.anchor, record.anchor_wait_ms) else {
        return fail("the world has rules, yet the record has no anchor or anchorWaitMs".into());
    };
    let Some(recorded) = record.rules.as_deref() else {
        return fail("the world has rules, yet the record has no rules".into());
    };
    let tickets = match tickets_of(record) {
        Ok(tickets) => tickets,
        Err(reason) => return fail(reason),
    };
    let Some(anchor_ticket) = tickets.iter().position(|t| t.contains(&anchor.as_str())) else {
        return fail(format!(
            "the anchor {:?} is not a participant",
            anchor.as_str()
        ));
    };
    let none = TicketAttributes::new();
    let attrs: Vec<Vec<&TicketAttributes>> = tickets
        .iter()
        .map(|t| t.iter().map(|p| players.get(*p).unwrap_or(&none)).collect())
        .collect();
    let wait = Duration::from_millis(wait_ms);
    let evaluation = evaluate(world, &attrs, anchor_ticket, wait);
    let context = || {
        format!(
            "at the anchor {:?}'s wait of {wait_ms} ms; tickets: {}",
            anchor.as_str(),
            show_tickets(world, &tickets, &players)
        )
    };
    if let Some(rule) = evaluation.failing().next() {
        return fail(format!(
            "rule {:?} ({}) does not hold {}",
            rule.name,
            describe(world, &evaluation, rule),
            context()
        ));
    }
    if let Err(reason) = compare(&evaluation, recorded) {
        return fail(format!("{reason} {}", context()));
    }
    for rule in &world.match_rules {
        if let Err(reason) = super::roles::check_roles(rule, record, &players) {
            return fail(format!("rule {:?}: {reason}", rule.name));
        }
    }
    Ok(())
}

/// Each player's attributes as the record shows them, decoded by type.
fn player_attributes<'r>(
    world: &World,
    catalog: &AttributeCatalog,
    record: &'r MatchRecord,
) -> Result<BTreeMap<&'r str, TicketAttributes>, String> {
    let mut out = BTreeMap::new();
    let Some(attributes) = record.attributes.as_deref() else {
        return Ok(out);
    };
    for (player, values) in attributes {
        if !record.participants.iter().any(|p| p.as_str() == player) {
            return Err(format!(
                "attributes: {player:?} is not a participant of the match"
            ));
        }
        let mut attrs = TicketAttributes::new();
        for (name, value) in values {
            let decl = world
                .attributes
                .iter()
                .any(|a| a == name)
                .then(|| catalog.get(name))
                .flatten()
                .ok_or_else(|| {
                    format!(
                        "attributes: player {player:?}'s {name:?} is not an attribute of the world"
                    )
                })?;
            let value = decode(decl.kind, value).ok_or_else(|| {
                format!(
                    "attributes: player {player:?}'s {name:?} is not a {} value: {value}",
                    decl.kind.as_str()
                )
            })?;
            attrs.insert(name.clone(), value);
        }
        out.insert(player.as_str(), attrs);
    }
    Ok(out)
}

/// A record's JSON value of an attribute of type `kind`.
fn decode(kind: AttributeType, value: &Value) -> Option<AttributeValue> {
    Some(match kind {
        AttributeType::String => AttributeValue::Str(value.as_str()?.to_owned()),
        AttributeType::Number => AttributeValue::Num(value.as_f64()?),
        AttributeType::StringList => {
            let mut items = value
                .as_array()?
                .iter()
                .map(|v| v.as_str().map(str::to_owned))
                .collect::<Option<Vec<_>>>()?;
            items.sort_unstable();
            AttributeValue::List(items)
        }
        AttributeType::NumberMap => AttributeValue::Map(
            value
                .as_object()?
                .iter()
                .map(|(k, v)| v.as_f64().map(|v| (k.clone(), v)))
                .collect::<Option<_>>()?,
        ),
    })
}

/// The record's tickets, each its players: every party one ticket, every
/// other participant alone; in the order their first player appears among
/// the participants.
fn tickets_of(record: &MatchRecord) -> Result<Vec<Vec<&str>>, String> {
    let parties: Vec<Vec<&str>> = record
        .parties
        .iter()
        .flatten()
        .map(|p| p.iter().map(|m| m.as_str()).collect())
        .collect();
    for (i, party) in parties.iter().enumerate() {
        for member in party {
            if !record.participants.iter().any(|p| p.as_str() == *member) {
                return Err(format!(
                    "parties: {member:?} is in a party but not a participant"
                ));
            }
            if parties[..i].iter().any(|q| q.contains(member)) {
                return Err(format!("parties: {member:?} is in two parties"));
            }
        }
    }
    let mut tickets: Vec<Vec<&str>> = Vec::new();
    let mut seen: Vec<usize> = Vec::new();
    for player in &record.participants {
        let player = player.as_str();
        match parties.iter().position(|p| p.contains(&player)) {
            None => tickets.push(vec![player]),
            Some(i) if !seen.contains(&i) => {
                seen.push(i);
                tickets.push(parties[i].clone());
            }
            Some(_) => {}
        }
    }
    Ok(tickets)
}

/// What the record's `rules` should be (the evaluated rules, document
/// order) against what it is: the first difference.
fn compare(evaluation: &Evaluation, recorded: &[RuleOutcome]) -> Result<(), String> {
    let expected: Vec<&RuleEvaluation> =
        evaluation.outcomes.iter().filter(|o| o.recorded).collect();
    if expected.len() != recorded.len()
        || expected.iter().zip(recorded).any(|(e, r)| e.name != r.name)
    {
        return Err(format!(
            "the record's rules list {}, but the rules evaluated at formation are {}",
            names(recorded.iter().map(|r| r.name.as_str())),
            names(expected.iter().map(|e| e.name.as_str())),
        ));
    }
    for (e, r) in expected.into_iter().zip(recorded) {
        let at = |what: String| Err(format!("the record's rule {:?}: {what}", e.name));
        if e.in_force != r.in_force {
            return at(format!(
                "inForce is {}, but the rule is {} at the anchor's wait",
                r.in_force,
                if e.in_force { "in force" } else { "off" }
            ));
        }
        let value_agrees = match (&e.value, &r.value) {
            (None, None) => true,
            (Some(RuleValue::Number(x)), Some(Value::Number(y))) => y
                .as_f64()
                .is_some_and(|y| (x - y).abs() <= EPSILON * x.abs().max(1.0)),
            (Some(RuleValue::Token(t)), Some(Value::String(s))) => t == s,
            _ => false,
        };
        if !value_agrees {
            return at(format!(
                "value is {}, but the value in force is {}",
                r.value
                    .as_ref()
                    .map_or_else(|| "absent".to_owned(), Value::to_string),
                e.value
                    .as_ref()
                    .map_or_else(|| "none".to_owned(), show_value)
            ));
        }
        if e.shared != r.shared {
            return at(format!(
                "shared is {:?}, but the tickets share {:?}",
                r.shared, e.shared
            ));
        }
        // The operands that held, in whichever order the record lists them.
        let sorted = |v: &Option<Vec<String>>| {
            v.clone().map(|mut v| {
                v.sort_unstable();
                v
            })
        };
        if sorted(&e.held) != sorted(&r.held) {
            return at(format!(
                "held is {:?}, but the operands that held are {:?}",
                r.held, e.held
            ));
        }
    }
    Ok(())
}

fn show_value(v: &RuleValue) -> String {
    match v {
        RuleValue::Number(n) => n.to_string(),
        RuleValue::Token(t) => format!("{t:?}"),
    }
}

fn names<'a>(names: impl Iterator<Item = &'a str>) -> String {
    let names: Vec<String> = names.map(|n| format!("{n:?}")).collect();
    if names.is_empty() {
        "none".into()
    } else {
        format!("[{}]", names.join(", "))
    }
}

/// A failing rule in words: its kind, attribute, value in force and what
/// its operands came to.
fn describe(world: &World, evaluation: &Evaluation, rule: &RuleEvaluation) -> String {
    let Some(config) = world.match_rules.iter().find(|r| r.name == rule.name) else {
        return String::new();
    };
    let mut s = config.kind.as_str().to_owned();
    if let Some(attribute) = config.kind.attribute() {
        let _ = write!(s, " on {attribute}");
    }
    if let Some(v) = &rule.value {
        let _ = write!(s, ", value in force {}", show_value(v));
    }
    if let Some(shared) = &rule.shared {
        let _ = write!(s, ", shared {shared:?}");
    }
    let operands: Vec<String> = config
        .kind
        .operands()
        .iter()
        .filter_map(|&j| evaluation.outcomes.get(j))
        .map(|o| {
            let state = match (o.in_force, o.holds) {
                (false, _) => "off",
                (true, true) => "holds",
                (true, false) => "fails",
            };
            format!("{:?} {state}", o.name)
        })
        .collect();
    if !operands.is_empty() {
        let _ = write!(s, ", operands: {}", operands.join(", "));
    }
    s
}

/// The tickets with each player's values of the world's rules'
/// attributes: `[a: mode=["ctf"] level=3, b: -] [c: ...]`.
fn show_tickets(
    world: &World,
    tickets: &[Vec<&str>],
    players: &BTreeMap<&str, TicketAttributes>,
) -> String {
    let read: Vec<&str> = world
        .attributes
        .iter()
        .map(String::as_str)
        .filter(|a| {
            world
                .match_rules
                .iter()
                .any(|r| r.kind.attribute() == Some(a))
        })
        .collect();
    let mut out = String::new();
    for (i, ticket) in tickets.iter().enumerate() {
        if i > 0 {
            out.push(' ');
        }
        out.push('[');
        for (j, player) in ticket.iter().enumerate() {
            if j > 0 {
                out.push_str(", ");
            }
            let _ = write!(out, "{player:?}:");
            let mut any = false;
            if let Some(attrs) = players.get(player) {
                for name in &read {
                    if let Some(v) = attrs.get(name) {
                        let _ = write!(out, " {name}={}", v.to_json());
                        any = true;
                    }
                }
            }
            if !any {
                out.push_str(" -");
            }
        }
        out.push(']');
    }
    out
}
