//! The several-queues study (`--several-queues`): a Poisson trace of new
//! players, each queuing in 1, 2 or 3 worlds of one `queueGroup`
//! ([`arrivals`]), arrives through the real core, each rule set played
//! three times on the same trace, each on its own time-compressed
//! redis-server:
//!
//! - **several queues**: each player's one ticket joins all its worlds in
//!   one call (`JoinInput::also`); the first match in any of them takes
//!   it from all;
//! - **one queue each**: the same players, each in its first world only
//!   (every world gets the same share of the arrivals: the same per-world
//!   arrival rate of players, all single-queue);
//! - **single-queue players only**: the same trace without the players
//!   who queue in more than one world.
//!
//! The real matcher ticks every simulated second (it visits every world).
//! The report ([`report`]) compares the waits by number of queues, and the
//! single-queue players' waits across the lanes; every match record is
//! re-checked offline ([`analysis`]): nobody matched twice, every player of
//! a match queued in its world, no ticket lost or left behind in a world.
//! See docs/sim/queues/analysis.md.

pub mod analysis;
pub mod arrivals;
mod drive;
pub mod plot;
pub mod report;
#[cfg(test)]
mod tests;
pub mod waits;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use serde_json::Value;
use shared::MatchRecord;

use crate::outcome::Fate;
use crate::play;
use crate::rules::{Environment, RuleSet};
pub use arrivals::{Arrival, Trace};

/// The study's arrival rate and trace length unless `--rate`, `--minutes`.
pub const RATE: f64 = 2.0;
pub const MINUTES: f64 = 10.0;
/// The players queue in 1–3 of 3 worlds: a third each.
pub const MIX: [f64; 3] = [1.0 / 3.0, 1.0 / 3.0, 1.0 / 3.0];

/// Everything the study needs.
#[derive(Debug, Clone)]
pub struct Config {
    pub rule_sets: Vec<RuleSet>,
    pub rate: f64,
    pub seconds: f64,
    /// Shares of players queuing in 1, 2, … worlds.
    pub mix: Vec<f64>,
    /// Each world's popularity (weights, in the group's order); empty:
    /// every world alike.
    pub popularity: Vec<f64>,
    pub seed: u64,
    pub drain: f64,
    pub speed: f64,
    pub in_flight: usize,
    pub redis_server: String,
    pub work_dir: PathBuf,
}

/// The three ways a rule set is played.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Variant {
    /// Every player's ticket in all its worlds.
    Several,
    /// Every player in its first world only.
    OneEach,
    /// Only the players who queue in one world.
    SinglesOnly,
}

impl Variant {
    pub const ALL: [Variant; 3] = [Variant::Several, Variant::OneEach, Variant::SinglesOnly];

    pub fn describe(self) -> &'static str {
        match self {
            Variant::Several => "several queues",
            Variant::OneEach => "one queue each",
            Variant::SinglesOnly => "single-queue players only",
        }
    }

    fn tag(self) -> &'static str {
        match self {
            Variant::Several => "s",
            Variant::OneEach => "o",
            Variant::SinglesOnly => "x",
        }
    }

    /// Whether the lane joins `a`, and the worlds (indices) it joins it in.
    pub fn joins(self, a: &Arrival) -> Option<&[usize]> {
        match self {
            Variant::Several => Some(&a.worlds),
            Variant::OneEach => Some(&a.worlds[..1]),
            Variant::SinglesOnly => (a.queues() == 1).then_some(&a.worlds[..1]),
        }
    }
}

/// The names of the driven world's queueGroup (the driven world among
/// them), validated by the core; an error when it has no group.
pub fn group_of(rs: &RuleSet) -> Result<Vec<String>, String> {
    let env = Environment {
        redis_url: "redis://127.0.0.1:1".into(),
        ticket_ttl_secs: 900,
        instant_match: true,
    };
    let (settings, world) = rs.settings(&env, "q0")?;
    if world.queue_group.is_none() {
        return Err(format!(
            "--several-queues: world {} of rule set {} has no queueGroup",
            rs.world, rs.file
        ));
    }
    Ok(settings
        .worlds
        .group(&world)
        .iter()
        .map(|w| w.name.as_str().to_owned())
        .collect())
}

/// `rs` as the study plays it: without `servers` (nobody assigns or plays
/// the matches) and refused when a world of the group has a ready check
/// (nobody answers proposals).
pub fn study_rule_set(rs: &RuleSet, group: &[String]) -> Result<RuleSet, String> {
    let mut doc: Value = serde_json::from_str(&rs.text)
        .map_err(|e| format!("rule set {}: not JSON: {e}", rs.file))?;
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
    let ready = obj
        .get("worlds")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|w| w.get("readyCheck").is_some())
        .filter_map(|w| w.get("name").and_then(Value::as_str))
        .find(|n| group.iter().any(|g| g == n));
    if let Some(w) = ready {
        return Err(format!(
            "--several-queues: rule set {} world {w} has a readyCheck; the study answers no proposals",
            rs.file
        ));
    }
    out.text = doc.to_string();
    Ok(out)
}

/// What one lane did.
#[derive(Debug, Clone)]
pub struct LaneResult {
    pub label: String,
    /// The rule set's label and file (the same for every variant).
    pub rule_set: String,
    pub file: String,
    pub variant: Variant,
    /// The group's worlds, in the trace's index order.
    pub worlds: Vec<String>,
    /// The worlds, described.
    pub description: String,
    /// Players per match.
    pub seats: usize,
    /// Per arrival: `None` when the lane does not join it.
    pub fates: Vec<Option<Fate>>,
    /// Per arrival: when its join was sent (simulated s; NaN: not sent).
    pub sent: Vec<f64>,
    /// Every match formed, once, by `matched_at`.
    pub records: Vec<MatchRecord>,
    /// Each record's `matched_at` in simulated s.
    pub matched_at: Vec<f64>,
    /// Per world (index), the tickets waiting in it at the end.
    pub waiting: Vec<Vec<String>>,
    /// When the queues were read at the end (simulated s).
    pub end: f64,
    /// The shortest ticket lifetime of the group's worlds (s).
    pub ttl: f64,
    /// Refused joins by the core's status.
    pub refused: BTreeMap<String, usize>,
    /// QUEUED replies whose `alsoQueuedIn` did not name the other worlds
    /// joined.
    pub also_mismatch: usize,
    pub failures: u64,
    pub first_error: Option<String>,
    /// Why the lane did not keep up with the clock, if it did not.
    pub lagging: Option<String>,
    pub notes: Vec<String>,
}

/// What the study produced.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub trace: Arc<Trace>,
    /// Per rule set: several queues, one queue each, singles only.
    pub lanes: Vec<LaneResult>,
    pub measured_speed: f64,
    pub clock_error: Option<f64>,
}

/// Plays every rule set three ways on one trace.
pub async fn simulate(config: &Config) -> Result<Outcome, String> {
    if config.rule_sets.is_empty() {
        return Err("--several-queues: no rule set".into());
    }
    let mut groups = Vec::new();
    for rs in &config.rule_sets {
        groups.push(group_of(rs)?);
    }
    let size = groups[0].len();
    if let Some((rs, g)) = config
        .rule_sets
        .iter()
        .zip(&groups)
        .find(|(_, g)| g.len() != size)
    {
        return Err(format!(
            "--several-queues: one trace for every rule set, but {} groups {} worlds and {} {size}",
            rs.file,
            g.len(),
            config.rule_sets[0].file
        ));
    }
    let popularity = if config.popularity.is_empty() {
        vec![1.0; size]
    } else if config.popularity.len() == size {
        config.popularity.clone()
    } else {
        return Err(format!(
            "--world-weights: {} weights for a group of {size} worlds",
            config.popularity.len()
        ));
    };
    let trace = Arc::new(Trace::generate(
        config.rate,
        config.seconds,
        &config.mix,
        &popularity,
        config.seed,
    )?);
    let mut specs = Vec::new();
    let mut meta = Vec::new();
    for (i, (rs, group)) in config.rule_sets.iter().zip(&groups).enumerate() {
        let study = study_rule_set(rs, group)?;
        for v in Variant::ALL {
            let mut lane = study.clone();
            lane.label = format!("{} {}", rs.label, v.describe());
            specs.push((lane.label.clone(), lane, format!("mq{i}{}", v.tag())));
            meta.push(drive::Meta {
                rule_set: rs.label.clone(),
                file: rs.file.clone(),
                variant: v,
                group: group.clone(),
                notes: study.notes.clone(),
            });
        }
    }
    let (mut lanes, mut servers) =
        play::start(&specs, config.speed, &config.redis_server, &config.work_dir).await?;
    for lane in &lanes {
        drive::prepare(lane, &trace, config.in_flight).await?;
    }
    // Simulated time 0 comes after the connections are in.
    for (lane, clock) in lanes.iter_mut().zip(servers.anchor().await?) {
        lane.clock = clock;
    }
    let handles: Vec<_> = lanes
        .into_iter()
        .zip(meta)
        .map(|(lane, m)| tokio::spawn(drive::drive(lane, m, trace.clone(), config.clone())))
        .collect();
    let (results, measured_speed, clock_error) = servers.collect(handles, |r| &mut r.notes).await?;
    Ok(Outcome {
        trace,
        lanes: results,
        measured_speed,
        clock_error,
    })
}
