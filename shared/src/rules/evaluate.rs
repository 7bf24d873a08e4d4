//! The rules of a world evaluated on a would-be match: the same semantics
//! as `check` in lua/_match_rules.lua, written independently of it.

use std::time::Duration;

use crate::config::{
    CompareOp, ListAggregate, MatchRule, NumberAggregate, RuleKind, RuleValue, World,
};
use crate::domain::{AttributeValue, RuleOutcome, TicketAttributes};

/// Every rule of a world on one would-be match.
#[derive(Debug, Clone, PartialEq)]
pub struct Evaluation {
    /// Every top-level rule (one no compound names) holds.
    pub holds: bool,
    /// One entry per rule of the world, by index (the world's
    /// `match_rules` order).
    pub outcomes: Vec<RuleEvaluation>,
}

/// One rule on one would-be match.
#[derive(Debug, Clone, PartialEq)]
pub struct RuleEvaluation {
    pub name: String,
    /// No compound names it: it must hold on its own.
    pub top: bool,
    /// The scripts evaluate it, so a match record lists it: a top-level
    /// rule, or an operand of a compound that is itself recorded and in
    /// force. (A rule that is not recorded is evaluated here all the same.)
    pub recorded: bool,
    /// Not relaxed away at the anchor's wait.
    pub in_force: bool,
    /// In force, for rules with a parameter: the number in force (a
    /// comparison's reference, a distance's max, an intersection's count)
    /// or a string comparison's token.
    pub value: Option<RuleValue>,
    /// In force, intersections: the values every ticket with a list shares
    /// (sorted; empty when no ticket has one).
    pub shared: Option<Vec<String>>,
    /// In force, `and` / `or`: the names of the operands that held, in the
    /// world's rule order.
    pub held: Option<Vec<String>>,
    /// Whether the rule holds (an off rule holds).
    pub holds: bool,
}

impl RuleEvaluation {
    /// As a match record states it ([`RuleOutcome`]).
    pub fn to_outcome(&self) -> RuleOutcome {
        RuleOutcome {
            name: self.name.clone(),
            in_force: self.in_force,
            value: self.value.as_ref().map(|v| match v {
                RuleValue::Number(n) => serde_json::Number::from_f64(*n)
                    .map_or(serde_json::Value::Null, serde_json::Value::Number),
                RuleValue::Token(t) => serde_json::Value::String(t.clone()),
            }),
            shared: self.shared.clone(),
            held: self.held.clone(),
        }
    }
}

impl Evaluation {
    /// The top-level rules that do not hold.
    pub fn failing(&self) -> impl Iterator<Item = &RuleEvaluation> {
        self.outcomes.iter().filter(|o| o.top && !o.holds)
    }

    /// The rules a match record lists, as it states them (document order).
    pub fn recorded(&self) -> Vec<RuleOutcome> {
        self.outcomes
            .iter()
            .filter(|o| o.recorded)
            .map(RuleEvaluation::to_outcome)
            .collect()
    }
}

/// Evaluates every rule of `world` on a would-be match. `tickets`: one
/// entry per ticket, its members' attributes in member order (a solo
/// ticket has one); `anchor`: the index of the ticket the match forms
/// around, which has waited `anchor_wait` (the wait every relaxation is
/// measured on).
///
/// - a rule that is off at the anchor's wait ([`MatchRule::in_force`])
///   holds;
/// - equality: every present value, over every player, is the same;
/// - comparison with a number: each ticket's members' values aggregated
///   by the rule's `party` (over the members that have one; a ticket
///   without any is ignored) satisfy `op value`; with a token: every
///   player's value does;
/// - allEqual / allDifferent: over every player's present value;
/// - distance: per ticket aggregated; the spread (max - min) is at most
///   the value, or (from the anchor) each ticket is within the value of
///   the anchor's (an anchor without a value: holds);
/// - intersection: per ticket, its members' lists (those with one) joined
///   by intersection or union; across the tickets that have a list,
///   intersected: it holds when they share at least the count in force
///   (and when no ticket has a list, with nothing shared);
/// - not: the negation of its operand; and / or: every operand is
///   evaluated (so each is recorded).
///
/// `holds` is whether every top-level rule holds. A compound that (in a
/// world not validated by the rule set) names itself through others does
/// not hold.
pub fn evaluate(
    world: &World,
    tickets: &[Vec<&TicketAttributes>],
    anchor: usize,
    anchor_wait: Duration,
) -> Evaluation {
    let rules = &world.match_rules;
    let mut run = Run {
        rules,
        tickets,
        anchor,
        wait: anchor_wait,
        done: vec![None; rules.len()],
        visiting: vec![false; rules.len()],
    };
    for i in 0..rules.len() {
        run.eval(i);
    }
    let mut outcomes: Vec<RuleEvaluation> = run
        .done
        .into_iter()
        .map(|o| o.expect("every rule evaluated"))
        .collect();
    for (i, rule) in rules.iter().enumerate() {
        if rule.top {
            mark_recorded(rules, &mut outcomes, i);
        }
    }
    let holds = outcomes.iter().all(|o| !o.top || o.holds);
    Evaluation { holds, outcomes }
}

/// Marks rule `i` recorded, and the operands of it when it is an
/// in-force compound (the scripts evaluate those only then).
fn mark_recorded(rules: &[MatchRule], outcomes: &mut [RuleEvaluation], i: usize) {
    if outcomes[i].recorded {
        return;
    }
    outcomes[i].recorded = true;
    if outcomes[i].in_force {
        for &j in rules[i].kind.operands() {
            if j < outcomes.len() {
                mark_recorded(rules, outcomes, j);
            }
        }
    }
}

struct Run<'a> {
    rules: &'a [MatchRule],
    tickets: &'a [Vec<&'a TicketAttributes>],
    anchor: usize,
    wait: Duration,
    done: Vec<Option<RuleEvaluation>>,
    visiting: Vec<bool>,
}

impl Run<'_> {
    /// Whether rule `i` holds (evaluated once).
    fn eval(&mut self, i: usize) -> bool {
        let Some(rule) = self.rules.get(i) else {
            return false;
        };
        if let Some(done) = &self.done[i] {
            return done.holds;
        }
        if self.visiting[i] {
            return false;
        }
        self.visiting[i] = true;
        let mut out = RuleEvaluation {
            name: rule.name.clone(),
            top: rule.top,
            recorded: false,
            in_force: false,
            value: None,
            shared: None,
            held: None,
            holds: true,
        };
        if let Some(number) = rule.in_force(self.wait) {
            out.in_force = true;
            out.value = match (&rule.kind, number) {
                (_, Some(n)) => Some(RuleValue::Number(n)),
                (
                    RuleKind::Compare {
                        value: RuleValue::Token(t),
                        ..
                    },
                    None,
                ) => Some(RuleValue::Token(t.clone())),
                _ => None,
            };
            out.holds = match &rule.kind {
                RuleKind::Equality { attribute } | RuleKind::AllEqual { attribute } => {
                    self.all_equal(attribute)
                }
                RuleKind::AllDifferent { attribute } => self.all_different(attribute),
                RuleKind::Compare {
                    attribute,
                    op,
                    value,
                    party,
                } => match (value, number) {
                    (RuleValue::Number(_), Some(v)) => self
                        .ticket_numbers(attribute, *party)
                        .into_iter()
                        .flatten()
                        .all(|x| compare_numbers(*op, x, v)),
                    (RuleValue::Token(t), _) => self
                        .player_values(attribute)
                        .all(|x| compare_token(*op, x, t)),
                    // A numeric comparison in force always has its number.
                    (RuleValue::Number(_), None) => true,
                },
                RuleKind::Distance {
                    attribute,
                    from_anchor,
                    party,
                    ..
                } => {
                    let v = number.unwrap_or(f64::INFINITY);
                    let xs = self.ticket_numbers(attribute, *party);
                    if *from_anchor {
                        match xs.get(self.anchor).copied().flatten() {
                            None => true,
                            Some(reference) => {
                                xs.iter().flatten().all(|x| (x - reference).abs() <= v)
                            }
                        }
                    } else {
                        let present = xs.iter().flatten().copied();
                        let lo = present.clone().fold(f64::INFINITY, f64::min);
                        let hi = present.fold(f64::NEG_INFINITY, f64::max);
                        // No ticket with a value: -inf - inf, holds.
                        hi - lo <= v
                    }
                }
                RuleKind::Intersection {
                    attribute, party, ..
                } => {
                    let v = number.unwrap_or(0.0);
                    let (any, shared) = self.shared(attribute, *party);
                    let holds = !any || shared.len() as f64 >= v;
                    out.shared = Some(shared);
                    holds
                }
                // Whether the quotas hold depends on the roles the match
                // gave, which the record states: recheck checks them.
                RuleKind::Quota { .. } => true,
                // Per match: the players' sum; per team, recheck checks it
                // on the record's teams.
                RuleKind::Total {
                    attribute,
                    per_team,
                    min,
                    max,
                } => {
                    let sum: f64 = self
                        .player_values(attribute)
                        .filter_map(|v| match v {
                            AttributeValue::Num(x) => Some(*x),
                            _ => None,
                        })
                        .sum();
                    *per_team || (min.is_none_or(|lo| sum >= lo) && max.is_none_or(|hi| sum <= hi))
                }
                RuleKind::Not(j) => !self.eval(*j),
                RuleKind::And(of) | RuleKind::Or(of) => {
                    let mut held: Vec<usize> = Vec::with_capacity(of.len());
                    for &j in of {
                        if self.eval(j) {
                            held.push(j);
                        }
                    }
                    let holds = match rule.kind {
                        RuleKind::And(_) => held.len() == of.len(),
                        _ => !held.is_empty(),
                    };
                    held.sort_unstable();
                    out.held = Some(
                        held.into_iter()
                            .filter_map(|j| self.rules.get(j))
                            .map(|r| r.name.clone())
                            .collect(),
                    );
                    holds
                }
            };
        }
        let holds = out.holds;
        self.visiting[i] = false;
        self.done[i] = Some(out);
        holds
    }

    /// Every player's value of `attribute` (those that have one).
    fn player_values<'s>(&'s self, attribute: &'s str) -> impl Iterator<Item = &'s AttributeValue> {
        self.tickets
            .iter()
            .flatten()
            .filter_map(move |m| m.get(attribute))
    }

    fn all_equal(&self, attribute: &str) -> bool {
        let mut values = self.player_values(attribute);
        match values.next() {
            None => true,
            Some(first) => values.all(|x| x == first),
        }
    }

    fn all_different(&self, attribute: &str) -> bool {
        let values: Vec<&AttributeValue> = self.player_values(attribute).collect();
        values
            .iter()
            .enumerate()
            .all(|(i, x)| values[..i].iter().all(|y| y != x))
    }

    /// Each ticket's number: its members' values of `attribute`
    /// aggregated by `party`; `None` when no member has one (or it is not
    /// a number).
    fn ticket_numbers(&self, attribute: &str, party: NumberAggregate) -> Vec<Option<f64>> {
        self.tickets
            .iter()
            .map(|members| {
                let xs: Vec<f64> = members
                    .iter()
                    .filter_map(|m| match m.get(attribute) {
                        Some(AttributeValue::Num(x)) => Some(*x),
                        _ => None,
                    })
                    .collect();
                if xs.is_empty() {
                    return None;
                }
                Some(match party {
                    NumberAggregate::Avg => xs.iter().sum::<f64>() / xs.len() as f64,
                    NumberAggregate::Min => xs.iter().copied().fold(f64::INFINITY, f64::min),
                    NumberAggregate::Max => xs.iter().copied().fold(f64::NEG_INFINITY, f64::max),
                })
            })
            .collect()
    }

    /// Whether any ticket has a list of `attribute`, and the values every
    /// such ticket's list (its members' joined by `party`) holds, sorted.
    fn shared(&self, attribute: &str, party: ListAggregate) -> (bool, Vec<String>) {
        let mut common: Option<Vec<&str>> = None;
        for members in self.tickets {
            let mut set: Option<Vec<&str>> = None;
            for m in members {
                let Some(AttributeValue::List(items)) = m.get(attribute) else {
                    continue;
                };
                let items: Vec<&str> = items.iter().map(String::as_str).collect();
                set = Some(match (set, party) {
                    (None, _) => items,
                    (Some(mut s), ListAggregate::Union) => {
                        s.extend(items);
                        s
                    }
                    (Some(s), ListAggregate::Intersection) => {
                        s.into_iter().filter(|x| items.contains(x)).collect()
                    }
                });
            }
            if let Some(set) = set {
                common = Some(match common {
                    None => set,
                    Some(c) => c.into_iter().filter(|x| set.contains(x)).collect(),
                });
            }
        }
        let any = common.is_some();
        let mut shared: Vec<String> = common
            .unwrap_or_default()
            .into_iter()
            .map(str::to_owned)
            .collect();
        shared.sort_unstable();
        shared.dedup();
        (any, shared)
    }
}

fn compare_numbers(op: CompareOp, x: f64, v: f64) -> bool {
    match op {
        CompareOp::Ge => x >= v,
        CompareOp::Le => x <= v,
        CompareOp::Gt => x > v,
        CompareOp::Lt => x < v,
        CompareOp::Eq => x == v,
        CompareOp::Ne => x != v,
    }
}

/// A player's value against a string comparison's token (only `=` and
/// `!=` are valid; the others compare as the scripts' Lua strings do).
fn compare_token(op: CompareOp, x: &AttributeValue, t: &str) -> bool {
    let AttributeValue::Str(x) = x else {
        // Not a string: not comparable with a token, so it cannot hold.
        return false;
    };
    let x = x.as_str();
    match op {
        CompareOp::Ge => x >= t,
        CompareOp::Le => x <= t,
        CompareOp::Gt => x > t,
        CompareOp::Lt => x < t,
        CompareOp::Eq => x == t,
        CompareOp::Ne => x != t,
    }
}
