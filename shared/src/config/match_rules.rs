//! A world's match rules (its `rules` in the rule set, see docs/rules.md):
//! conditions on the players' attributes every match must meet, each one
//! relaxing with the anchor's own wait.

use std::time::Duration;

/// Most rules one world has.
pub const MAX_RULES: usize = 20;
/// Most steps of one `relax.steps`.
pub const MAX_STEPS: usize = 8;
/// Most operands of an `and` or `or` compound.
pub const MAX_OPERANDS: usize = 8;
/// Most roles one quota rule bounds.
pub const MAX_QUOTAS: usize = 16;

/// One rule of a world.
#[derive(Debug, Clone, PartialEq)]
pub struct MatchRule {
    /// Unique in the world.
    pub name: String,
    pub kind: RuleKind,
    /// From this wait of the anchor on, the rule is off (holds).
    pub optional_after: Option<Duration>,
    /// How the rule's number moves with the anchor's wait (only rules with
    /// one: a comparison with a numeric value, distance, intersection).
    pub relax: Option<Relax>,
    /// No compound names it: it must hold on its own. An operand is
    /// checked only as part of its compound(s).
    pub top: bool,
}

/// What a rule compares.
#[derive(Debug, Clone, PartialEq)]
pub enum RuleKind {
    /// Every ticket's value of a string attribute is the same (tickets
    /// without one are ignored).
    Equality { attribute: String },
    /// Every ticket's value (numbers: its party's aggregate; strings: every
    /// player's) `op` the reference `value`. `party` applies to numbers
    /// only (`Avg` for a token).
    Compare {
        attribute: String,
        op: CompareOp,
        value: RuleValue,
        party: NumberAggregate,
    },
    /// Per player: every present value of a number or string attribute
    /// is the same.
    AllEqual { attribute: String },
    /// Per player: the present values are pairwise different.
    AllDifferent { attribute: String },
    /// A number attribute's (party-aggregated) values lie within `max` of
    /// each other (`from_anchor`: each within `max` of the anchor's).
    Distance {
        attribute: String,
        max: f64,
        from_anchor: bool,
        party: NumberAggregate,
    },
    /// A stringList attribute's (party-aggregated) lists share at least
    /// `min_count` values.
    Intersection {
        attribute: String,
        min_count: u32,
        party: ListAggregate,
    },
    /// Each player takes exactly one role: a value of a string or
    /// stringList attribute they have (any role without one); per team
    /// (`per_team`) or per match, each listed role's players number
    /// `min..=max`. Values not listed are unbounded.
    Quota {
        attribute: String,
        per_team: bool,
        quotas: Vec<RoleQuota>,
    },
    /// The sum of a number attribute over the players of each team
    /// (`per_team`) or of the match lies within `min..=max` (a bound
    /// `None`: open); a player without a value counts 0.
    Total {
        attribute: String,
        per_team: bool,
        min: Option<f64>,
        max: Option<f64>,
    },
    /// Every operand holds (indices into the world's `match_rules`).
    And(Vec<usize>),
    /// At least one operand holds.
    Or(Vec<usize>),
    /// The operand does not hold.
    Not(usize),
}

/// How many players of a team (or match) take one role.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RoleQuota {
    pub value: String,
    pub min: u32,
    pub max: u32,
}

/// A comparison's reference.
#[derive(Debug, Clone, PartialEq)]
pub enum RuleValue {
    /// For a number attribute.
    Number(f64),
    /// For a string attribute, with `=` or `!=`.
    Token(String),
}

/// A comparison's operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CompareOp {
    Ge,
    Le,
    Gt,
    Lt,
    Eq,
    Ne,
}

impl CompareOp {
    /// As the rule set (and the scripts' configuration) spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            CompareOp::Ge => ">=",
            CompareOp::Le => "<=",
            CompareOp::Gt => ">",
            CompareOp::Lt => "<",
            CompareOp::Eq => "=",
            CompareOp::Ne => "!=",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        [Self::Ge, Self::Le, Self::Gt, Self::Lt, Self::Eq, Self::Ne]
            .into_iter()
            .find(|op| op.as_str() == s)
    }
}

/// How a party's members' numbers make the party's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum NumberAggregate {
    #[default]
    Avg,
    Min,
    Max,
}

/// How a party's members' lists make the party's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ListAggregate {
    /// The values every member lists.
    #[default]
    Intersection,
    /// The values any member lists.
    Union,
}

impl NumberAggregate {
    pub fn as_str(self) -> &'static str {
        match self {
            NumberAggregate::Avg => "avg",
            NumberAggregate::Min => "min",
            NumberAggregate::Max => "max",
        }
    }
}

impl ListAggregate {
    pub fn as_str(self) -> &'static str {
        match self {
            ListAggregate::Intersection => "intersection",
            ListAggregate::Union => "union",
        }
    }
}

/// How a rule's number moves with the anchor's wait.
#[derive(Debug, Clone, PartialEq)]
pub enum Relax {
    /// From the base toward `limit` at `per_second` (> 0), never past it.
    Linear { per_second: f64, limit: f64 },
    /// From each step's wait on (strictly increasing, > 0, whole ms) its
    /// number; `None`: the rule is off from then on (always the last step).
    Steps(Vec<(Duration, Option<f64>)>),
}

impl RuleKind {
    /// The attribute it reads (compounds read none).
    pub fn attribute(&self) -> Option<&str> {
        match self {
            RuleKind::Equality { attribute }
            | RuleKind::Compare { attribute, .. }
            | RuleKind::AllEqual { attribute }
            | RuleKind::AllDifferent { attribute }
            | RuleKind::Distance { attribute, .. }
            | RuleKind::Intersection { attribute, .. }
            | RuleKind::Quota { attribute, .. }
            | RuleKind::Total { attribute, .. } => Some(attribute),
            RuleKind::And(_) | RuleKind::Or(_) | RuleKind::Not(_) => None,
        }
    }

    /// A compound's operands (indices into the world's rules); none for
    /// other rules.
    pub fn operands(&self) -> &[usize] {
        match self {
            RuleKind::And(of) | RuleKind::Or(of) => of,
            RuleKind::Not(of) => std::slice::from_ref(of),
            _ => &[],
        }
    }

    /// The number the rule starts from, for the rules that have one: a
    /// comparison's numeric value, a distance's `max`, an intersection's
    /// `min_count`.
    pub fn number(&self) -> Option<f64> {
        match self {
            RuleKind::Compare {
                value: RuleValue::Number(v),
                ..
            } => Some(*v),
            RuleKind::Distance { max, .. } => Some(*max),
            RuleKind::Intersection { min_count, .. } => Some(f64::from(*min_count)),
            _ => None,
        }
    }

    /// As the scripts' configuration names it.
    pub fn as_str(&self) -> &'static str {
        match self {
            RuleKind::Equality { .. } => "equality",
            RuleKind::Compare { .. } => "compare",
            RuleKind::AllEqual { .. } => "all_equal",
            RuleKind::AllDifferent { .. } => "all_different",
            RuleKind::Distance { .. } => "distance",
            RuleKind::Intersection { .. } => "intersection",
            RuleKind::Quota { .. } => "quota",
            RuleKind::Total { .. } => "total",
            RuleKind::And(_) => "and",
            RuleKind::Or(_) => "or",
            RuleKind::Not(_) => "not",
        }
    }
}

impl MatchRule {
    /// The rule at an anchor's wait `wait`:
    /// - `None`: off (it holds whatever the tickets): from
    ///   `optional_after` on (`wait >= optional_after`), or from a step
    ///   whose value is null on;
    /// - `Some(None)`: on, and the rule has no number (equality, allEqual,
    ///   allDifferent, a string comparison, a compound);
    /// - `Some(Some(v))`: on with the number `v` in force: the base
    ///   ([`RuleKind::number`]) unless relaxed; with `Relax::Linear` the
    ///   base moved toward `limit` by `per_second * wait` and never past
    ///   it (either direction); with `Relax::Steps` the value of the last
    ///   step whose wait is `<= wait` (the base before the first). An
    ///   intersection's count is rounded toward its base (a count relaxing
    ///   from 2 toward 1 is 1 only once the line has reached 1).
    pub fn in_force(&self, wait: Duration) -> Option<Option<f64>> {
        if self.optional_after.is_some_and(|after| wait >= after) {
            return None;
        }
        let Some(base) = self.kind.number() else {
            return Some(None);
        };
        let value = match &self.relax {
            None => base,
            Some(Relax::Linear { per_second, limit }) => {
                let moved = per_second * wait.as_secs_f64();
                if *limit >= base {
                    (base + moved).min(*limit)
                } else {
                    (base - moved).max(*limit)
                }
            }
            Some(Relax::Steps(steps)) => match steps.iter().rev().find(|(at, _)| *at <= wait) {
                None => base,
                Some((_, None)) => return None,
                Some((_, Some(v))) => *v,
            },
        };
        Some(Some(match self.kind {
            RuleKind::Intersection { .. } if value < base => value.ceil(),
            RuleKind::Intersection { .. } => value.floor(),
            _ => value,
        }))
    }
}
