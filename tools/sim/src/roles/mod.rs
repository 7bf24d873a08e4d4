//! The role-queue study (`--roles`): a Poisson trace of new players, each
//! offering one role or two ([`arrivals`]), arrives through the real core,
//! each rule set's world played twice on the same trace, each on its own
//! time-compressed redis-server: as a **role queue** (the rule set as
//! written, with its quota rule: every team one tank, one healer and three
//! damage players) and **role-agnostic** (the same world without the quota
//! rule; every player still sends the roles, which the world keeps as an
//! attribute, so it is matched around anchors the same way). Players join
//! solo (`MatchStore::join_reply`) with their roles as attributes; the
//! real matcher ticks every simulated second. The report ([`report`])
//! compares the waits by role offered and by number of roles offered, and
//! every match record is re-checked offline ([`analysis`]): by the rules
//! oracle (`shared::rules::recheck`, which checks the recorded roles
//! against the offers and the quotas) and against the trace. See
//! docs/sim/roles/analysis.md.

pub mod analysis;
pub mod arrivals;
mod drive;
pub mod plot;
pub mod report;
#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use serde_json::Value;
use shared::MatchRecord;

use crate::outcome::Fate;
use crate::play;
use crate::rules::RuleSet;
pub use analysis::Verdict;
pub use arrivals::{Group, Mix, Offer, Role, Trace};

/// The study's arrival rate and trace length unless `--rate`, `--minutes`
/// (those of the block-list study).
pub const RATE: f64 = 20.0;
pub const MINUTES: f64 = 10.0;

/// Everything the study needs.
#[derive(Debug, Clone)]
pub struct Config {
    pub rule_sets: Vec<RuleSet>,
    pub rate: f64,
    pub seconds: f64,
    pub mix: Mix,
    pub seed: u64,
    pub drain: f64,
    pub speed: f64,
    pub in_flight: usize,
    pub redis_server: String,
    pub work_dir: PathBuf,
}

/// The two ways a rule set is played.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Variant {
    /// As written: with its quota rule.
    RoleQueue,
    /// Without the quota rule; the roles are still sent and kept.
    Agnostic,
}

impl Variant {
    pub const ALL: [Variant; 2] = [Variant::RoleQueue, Variant::Agnostic];

    pub fn describe(self) -> &'static str {
        match self {
            Variant::RoleQueue => "role queue",
            Variant::Agnostic => "role-agnostic",
        }
    }

    fn tag(self) -> &'static str {
        match self {
            Variant::RoleQueue => "q",
            Variant::Agnostic => "a",
        }
    }
}

/// `rs` as `variant` plays it, and the attribute its quota rule reads (the
/// roles the players send). The driven world must have a quota rule; as a
/// role queue it is played as written, role-agnostic without its quota
/// rules, the attribute listed in the world's `attributes` instead (so the
/// players still send it, records still carry it, and the world is still
/// matched around anchors). Either way without `servers` (nobody plays
/// the matches), and refused with a ready check (nobody answers).
pub fn variant_rule_set(rs: &RuleSet, variant: Variant) -> Result<(RuleSet, String), String> {
    let mut doc: Value = serde_json::from_str(&rs.text)
        .map_err(|e| format!("rule set {}: not JSON: {e}", rs.file))?;
    if rs.has_ready_check() {
        return Err(format!(
            "--roles: rule set {} world {} has a readyCheck; the role-queue study answers no proposals",
            rs.file, rs.world
        ));
    }
    let obj = doc
        .as_object_mut()
        .ok_or_else(|| format!("rule set {}: not a JSON object", rs.file))?;
    let mut out = rs.clone();
    if obj.remove("servers").is_some() {
        out.notes.push(
            "servers removed: nobody assigns or finishes the matches, so a formed match must hold nobody"
                .into(),
        );
    }
    let world = obj
        .get_mut("worlds")
        .and_then(Value::as_array_mut)
        .and_then(|ws| {
            ws.iter_mut()
                .find(|w| w.get("name").and_then(Value::as_str) == Some(rs.world.as_str()))
        })
        .and_then(Value::as_object_mut)
        .ok_or_else(|| format!("rule set {}: no world {}", rs.file, rs.world))?;
    let is_quota = |r: &Value| r.get("type").and_then(Value::as_str) == Some("quota");
    let rules: Vec<Value> = world
        .get("rules")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let quota: Vec<&Value> = rules.iter().filter(|r| is_quota(r)).collect();
    let attribute = match quota.as_slice() {
        [one] => one
            .get("attribute")
            .and_then(Value::as_str)
            .ok_or_else(|| format!("rule set {}: a quota rule without an attribute", rs.file))?
            .to_owned(),
        [] => {
            return Err(format!(
                "--roles: rule set {} world {} has no quota rule",
                rs.file, rs.world
            ))
        }
        _ => {
            return Err(format!(
                "--roles: rule set {} world {} has {} quota rules; the study plays one",
                rs.file,
                rs.world,
                quota.len()
            ))
        }
    };
    if variant == Variant::Agnostic {
        let name = quota[0].get("name").cloned().unwrap_or(Value::Null);
        let kept: Vec<Value> = rules.iter().filter(|r| !is_quota(r)).cloned().collect();
        if kept.iter().any(|r| {
            r.get("rules")
                .and_then(Value::as_array)
                .is_some_and(|ops| ops.contains(&name))
        }) {
            return Err(format!(
                "--roles: rule set {} world {}: a compound names the quota rule {name}; it cannot be left out",
                rs.file, rs.world
            ));
        }
        if kept.is_empty() {
            world.remove("rules");
        } else {
            world.insert("rules".into(), Value::Array(kept));
        }
        let listed = world
            .entry("attributes")
            .or_insert_with(|| Value::Array(Vec::new()));
        let list = listed
            .as_array_mut()
            .ok_or_else(|| format!("rule set {}: world attributes not a list", rs.file))?;
        if !list.iter().any(|a| a.as_str() == Some(attribute.as_str())) {
            list.push(Value::String(attribute.clone()));
        }
        out.notes.push(format!(
            "quota rule {name} removed (the comparison run); {attribute:?} listed in the world's attributes, so every player still sends their roles and the world is still matched around anchors"
        ));
    }
    out.text = doc.to_string();
    out.label = format!("{} {}", rs.label, variant.describe());
    Ok((out, attribute))
}

/// A lane's quota rule, as the world declares it.
#[derive(Debug, Clone, PartialEq)]
pub struct Quotas {
    /// Per team (`true`) or per match.
    pub per_team: bool,
    /// (role, min, max).
    pub bounds: Vec<(String, u32, u32)>,
}

/// What one lane did.
#[derive(Debug, Clone)]
pub struct LaneResult {
    pub label: String,
    /// The rule set's label and file (the same for both variants).
    pub rule_set: String,
    pub file: String,
    pub variant: Variant,
    /// The driven world, described.
    pub description: String,
    /// Players per match, and teams.
    pub seats: usize,
    pub teams: usize,
    /// The ticket lifetime (s).
    pub ttl: f64,
    /// The roles attribute.
    pub attribute: String,
    /// The quota rule in force (`None` role-agnostic).
    pub quotas: Option<Quotas>,
    /// Per arrival of the trace.
    pub fates: Vec<Fate>,
    /// Per arrival: the role its record gives it (role queue, matched).
    pub played: Vec<Option<Role>>,
    /// Every match formed, once, by `matched_at`.
    pub records: Vec<MatchRecord>,
    /// Every record re-checked.
    pub verdict: Verdict,
    /// Refused joins by the core's status.
    pub refused: BTreeMap<String, usize>,
    /// Participants of records that matched no pending arrival.
    pub unaccounted: usize,
    pub failures: u64,
    pub first_error: Option<String>,
    /// Why the lane did not keep up with the clock, if it did not.
    pub lagging: Option<String>,
    /// When the lane stopped ticking (simulated s): who is left then waits.
    pub end: f64,
    pub notes: Vec<String>,
}

/// What the study produced.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub trace: Arc<Trace>,
    /// Per rule set, role queue then role-agnostic.
    pub lanes: Vec<LaneResult>,
    pub measured_speed: f64,
    pub clock_error: Option<f64>,
}

/// Plays every rule set both ways on one trace.
pub async fn simulate(config: &Config) -> Result<Outcome, String> {
    if config.rule_sets.is_empty() {
        return Err("--roles: no rule set".into());
    }
    let trace = Arc::new(Trace::generate(
        config.rate,
        config.seconds,
        &config.mix,
        config.seed,
    )?);
    let mut specs = Vec::new();
    let mut meta = Vec::new();
    for (i, rs) in config.rule_sets.iter().enumerate() {
        for v in Variant::ALL {
            let (vrs, attribute) = variant_rule_set(rs, v)?;
            specs.push((vrs.label.clone(), vrs.clone(), format!("rol{i}{}", v.tag())));
            meta.push(drive::Meta {
                rule_set: rs.label.clone(),
                file: rs.file.clone(),
                variant: v,
                attribute,
                notes: vrs.notes,
            });
        }
    }
    let (mut lanes, mut servers) =
        play::start(&specs, config.speed, &config.redis_server, &config.work_dir).await?;
    let mut encoded = Vec::new();
    for (lane, m) in lanes.iter().zip(&meta) {
        encoded.push(drive::prepare(lane, &m.attribute, &trace, config.in_flight).await?);
    }
    // Simulated time 0 comes after the connections are in.
    for (lane, clock) in lanes.iter_mut().zip(servers.anchor().await?) {
        lane.clock = clock;
    }
    let handles: Vec<_> = lanes
        .into_iter()
        .zip(meta)
        .zip(encoded)
        .map(|((lane, m), e)| {
            tokio::spawn(drive::drive(
                lane,
                m,
                Arc::new(e),
                trace.clone(),
                config.clone(),
            ))
        })
        .collect();
    let (results, measured_speed, clock_error) = servers.collect(handles, |r| &mut r.notes).await?;
    Ok(Outcome {
        trace,
        lanes: results,
        measured_speed,
        clock_error,
    })
}
