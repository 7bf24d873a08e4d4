//! The lanes of the regions scenario: each rule set's world three ways
//! (regions, best region only, latency ignored), each on its own server.

use std::sync::Arc;

use serde_json::Value;

use crate::engine::{Regional, Route};
use crate::lanes::Spec;
use crate::outcome::{Shape, Variant};
use crate::rules::{self, Environment, RuleSet};
use crate::Config;

/// The world of best region only for region `region` of world `world`.
pub fn region_world(world: &str, region: &str) -> String {
    format!("{world}-{region}")
}

/// `rs` rewritten for `variant`: the driven world alone (other worlds of
/// the document are left out), as it is (regions), without its `regions`
/// rule (latency ignored), or as one copy without the rule per region
/// named `<world>-<region>` (best region only).
pub fn variant_rule_set(rs: &RuleSet, variant: Variant) -> Result<RuleSet, String> {
    let mut doc: Value = serde_json::from_str(&rs.text)
        .map_err(|e| format!("rule set {}: not JSON: {e}", rs.file))?;
    let worlds = doc
        .get("worlds")
        .and_then(Value::as_array)
        .ok_or_else(|| format!("rule set {}: no \"worlds\" array", rs.file))?;
    let others = worlds.len() - 1;
    let mut driven = worlds
        .iter()
        .find(|w| w.get("name").and_then(Value::as_str) == Some(rs.world.as_str()))
        .cloned()
        .ok_or_else(|| format!("rule set {}: no world {}", rs.file, rs.world))?;
    let names: Vec<String> = driven
        .pointer("/regions/names")
        .and_then(Value::as_array)
        .map(|ns| {
            ns.iter()
                .filter_map(|n| n.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    let mut notes = rs.notes.clone();
    if others > 0 {
        notes.push(format!(
            "the document's {others} other world(s) left out: the regions scenario drives {} alone",
            rs.world
        ));
    }
    let (worlds, world) = match variant {
        Variant::Regions => (vec![driven], rs.world.clone()),
        Variant::LatencyIgnored | Variant::BestRegionOnly => {
            if let Some(obj) = driven.as_object_mut() {
                obj.remove("regions");
            }
            if variant == Variant::LatencyIgnored {
                notes.push(format!("{}: regions rule removed", rs.world));
                (vec![driven], rs.world.clone())
            } else {
                let copies = names
                    .iter()
                    .map(|r| {
                        let mut w = driven.clone();
                        w["name"] = Value::String(region_world(&rs.world, r));
                        w
                    })
                    .collect::<Vec<_>>();
                notes.push(format!(
                    "{}: regions rule removed, one world per region ({}); each arrival joins the world of its lowest-latency region (a party's: lowest worst member)",
                    rs.world,
                    names
                        .iter()
                        .map(|r| region_world(&rs.world, r))
                        .collect::<Vec<_>>()
                        .join(", ")
                ));
                let first = names
                    .first()
                    .map(|r| region_world(&rs.world, r))
                    .ok_or_else(|| format!("rule set {}: no region names", rs.file))?;
                (copies, first)
            }
        }
    };
    doc["worlds"] = Value::Array(worlds);
    Ok(RuleSet {
        label: format!("{} {}", rs.label, variant.name()),
        file: rs.file.clone(),
        text: doc.to_string(),
        world,
        notes,
    })
}

/// The regions scenario's lanes: every rule set three ways. Returns them
/// and the first rule set's shape (there is no oracle to give it to).
pub(crate) fn lanes_of(config: &Config) -> Result<(Vec<Spec>, Shape), String> {
    let geo = config.scenario.geo.as_ref().ok_or(
        "the regions scenario needs latencies: generate the trace (--regions) or give a CSV trace with latency:<region> columns",
    )?;
    if config.rule_sets.is_empty() {
        return Err("the regions scenario needs a rule set whose world has a regions rule".into());
    }
    if !config.accept_probabilities.is_empty() {
        return Err("--accept-probability does not combine with --regions".into());
    }
    let probe = Environment {
        redis_url: "redis://127.0.0.1:1".into(),
        ticket_ttl_secs: config.ticket_ttl_secs,
        instant_match: config.instant_match,
    };
    let largest = config.scenario.largest_party();
    let mut specs = Vec::new();
    let mut first_shape = None;
    for (i, rs) in config.rule_sets.iter().enumerate() {
        let (_, world) = rs.settings(&probe, "probe")?;
        let Some(region_rules) = world.regions.clone() else {
            return Err(format!(
                "rule set {} world {} has no regions rule: --regions plays a world with one against best region only and latency ignored (try --rules tools/sim/rules/regions)",
                rs.file, world.name
            ));
        };
        if world.ready_check.is_some() {
            return Err(format!(
                "rule set {} world {} has a ready check: the regions scenario does not answer proposals",
                rs.file, world.name
            ));
        }
        if largest > 1 && world.max_party_size < largest {
            return Err(format!(
                "rule set {} world {} takes parties of at most {} (maxPartySize; below 2: none), but the trace has parties of {largest}",
                rs.file, world.name, world.max_party_size
            ));
        }
        let regions = region_rules
            .names
            .iter()
            .map(|n| {
                geo.index(n).ok_or_else(|| {
                    format!(
                        "rule set {} world {}: region {n} is not one of the trace's ({})",
                        rs.file,
                        world.name,
                        geo.regions.join(", ")
                    )
                })
            })
            .collect::<Result<Vec<usize>, String>>()?;
        let shape = rules::shape_of(&world);
        first_shape.get_or_insert(shape);
        for (variant, tag) in Variant::ALL.into_iter().zip(["r", "b", "i"]) {
            let derived = variant_rule_set(rs, variant)?;
            let (settings, _) = derived.settings(&probe, "probe")?;
            let worlds = if variant == Variant::BestRegionOnly {
                region_rules
                    .names
                    .iter()
                    .map(|r| {
                        let name = region_world(&rs.world, r);
                        settings
                            .worlds
                            .get(&name)
                            .cloned()
                            .ok_or_else(|| format!("rule set {}: no world {name}", rs.file))
                    })
                    .collect::<Result<Vec<_>, String>>()?
            } else {
                Vec::new()
            };
            specs.push(Spec {
                rs: derived,
                namespace: format!("sim{i}{tag}"),
                fifo: false,
                answering: None,
                shape,
                variant: Some((variant, region_rules.latency_cap_ms)),
                route: Route::Regional(Arc::new(Regional {
                    variant,
                    regions: regions.clone(),
                    worlds,
                    cap: region_rules.latency_cap_ms,
                })),
                attr: None,
            });
        }
    }
    Ok((
        specs,
        first_shape.unwrap_or(Shape::solo_team(config.team_size)),
    ))
}
