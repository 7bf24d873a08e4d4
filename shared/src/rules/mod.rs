//! The match rules re-checked offline: the oracle the tests and the
//! simulator hold every match record to. [`evaluate`] applies a world's
//! rules to a would-be match (tickets of players' attributes, an anchor
//! and its wait) with the semantics docs/rules.md documents and
//! lua/_match_rules.lua implements (`check`), written again here
//! independently of the scripts; [`recheck`] rebuilds the tickets of a
//! match record and fails when a rule in force did not hold or the record
//! misstates what was in force.
//!
//! It reads the configuration (`crate::config`) and the domain types;
//! neither of those reads it.

mod evaluate;
mod recheck;
mod roles;

pub use evaluate::{evaluate, Evaluation, RuleEvaluation};
pub use recheck::recheck;

#[cfg(test)]
mod evaluate_tests;
#[cfg(test)]
mod recheck_tests;
