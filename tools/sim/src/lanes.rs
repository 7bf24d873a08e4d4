//! The lanes of a run: which rule sets run (a ready-check rule set once per
//! acceptance probability and once without its ready check), checked by the
//! core and against the trace, and the FIFO baselines next to them.

use crate::engine::{Answering, Route};
use crate::outcome::{AttrVariant, Shape, Variant};
use crate::rules::{self, Environment, RuleSet};
use crate::{oracle, Config};

/// One lane to run.
pub(crate) struct Spec {
    pub(crate) rs: RuleSet,
    pub(crate) namespace: String,
    pub(crate) fifo: bool,
    pub(crate) answering: Option<Answering>,
    pub(crate) shape: Shape,
    /// The regions scenario: which way of playing the rule set, and the
    /// world's latency cap.
    pub(crate) variant: Option<(Variant, f64)>,
    pub(crate) route: Route,
    /// The attributes scenario: which way of playing the rule set, and the
    /// world's rules as written.
    pub(crate) attr: Option<(AttrVariant, Vec<shared::config::MatchRule>)>,
}

/// The lanes of `config`: each rule set (a ready-check rule set once per
/// acceptance probability and once without its ready check), validated by
/// the core and checked against the trace, then one FIFO baseline per match
/// shape. Returns them and the oracle's shape.
pub(crate) fn lanes_of(config: &Config) -> Result<(Vec<Spec>, Shape), String> {
    if config.regions {
        return crate::regional::lanes_of(config);
    }
    if config.attributes {
        return crate::attributes::lanes_of(config);
    }
    let probe = Environment {
        redis_url: "redis://127.0.0.1:1".into(),
        ticket_ttl_secs: config.ticket_ttl_secs,
        instant_match: config.instant_match,
    };
    let mut variants: Vec<(RuleSet, Option<Answering>)> = Vec::new();
    for rs in &config.rule_sets {
        if rs.has_ready_check() {
            let probabilities = if config.accept_probabilities.is_empty() {
                vec![1.0]
            } else {
                config.accept_probabilities.clone()
            };
            for p in probabilities {
                let mut variant = rs.clone();
                variant.label = format!("{} accept {}", rs.label, oracle::trim_float(p));
                variants.push((
                    variant,
                    Some(Answering {
                        accept_probability: p,
                        ..config.answering
                    }),
                ));
            }
            variants.push((
                rs.without_ready_check(&format!("{} without ready check", rs.label)),
                None,
            ));
        } else {
            variants.push((rs.clone(), None));
        }
    }
    if !config.accept_probabilities.is_empty()
        && !config.rule_sets.is_empty()
        && variants.iter().all(|(_, a)| a.is_none())
    {
        return Err(
            "--accept-probability applies to rule sets whose world has a readyCheck, and none has one \
             (try --rules tools/sim/rules/ready)"
                .into(),
        );
    }
    let largest = config.scenario.largest_party();
    let mut specs = Vec::new();
    let mut shapes: Vec<Shape> = Vec::new();
    for (i, (rs, answering)) in variants.into_iter().enumerate() {
        let (_, world) = rs.settings(&probe, "probe")?;
        let shape = rules::shape_of(&world);
        if shape.seats() != config.team_size {
            return Err(format!(
                "rule set {} world {} has {} players per match, but the FIFO baseline and the oracle use {}: \
                 simulate rule sets of one match size per run (--team-size)",
                rs.file,
                world.name,
                shape.seats(),
                config.team_size
            ));
        }
        if largest > 1 && world.max_party_size < largest {
            return Err(format!(
                "rule set {} world {} takes parties of at most {} (maxPartySize; below 2: none), but the trace has parties of {largest}",
                rs.file, world.name, world.max_party_size
            ));
        }
        if !shapes.contains(&shape) {
            shapes.push(shape);
        }
        specs.push(Spec {
            rs,
            namespace: format!("sim{i}"),
            fifo: false,
            answering,
            shape,
            variant: None,
            route: Route::One,
            attr: None,
        });
    }
    if shapes.is_empty() {
        shapes.push(Shape::solo_team(config.team_size));
    }
    for (i, shape) in shapes.iter().enumerate() {
        if largest > shape.team_size {
            return Err(format!(
                "the trace has parties of {largest}, larger than a team of {} (a party plays in one team)",
                shape.team_size
            ));
        }
        let label = if shapes.len() == 1 {
            "FIFO".to_owned()
        } else {
            format!("FIFO {shape}")
        };
        specs.push(Spec {
            rs: RuleSet::fifo(&label, *shape, config.ticket_ttl_secs),
            namespace: if i == 0 {
                "simfifo".into()
            } else {
                format!("simfifo{i}")
            },
            fifo: true,
            answering: None,
            shape: *shape,
            variant: None,
            route: Route::One,
            attr: None,
        });
    }
    // The most teams is the most constrained packing: a match it forms is
    // also valid with fewer teams of the same size.
    let oracle_shape = shapes
        .iter()
        .copied()
        .max_by_key(|s| s.teams)
        .unwrap_or(Shape::solo_team(config.team_size));
    Ok((specs, oracle_shape))
}
