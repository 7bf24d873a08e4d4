//! The block-list study (`--blocks`): a fixed population whose players each
//! avoid a few others ([`population`]) arrives through the real core, each
//! rule set's world played twice on the same arrival trace, each on its own
//! time-compressed redis-server: **with lists** (the rule set with
//! `blockLists`, every avoid list written through
//! `MatchStore::set_avoid_list` before the first arrival) and **without
//! lists** (the same rule set without `blockLists`). Players join solo
//! (`MatchStore::join_reply`); the real matcher ticks every simulated
//! second. The report ([`report`]) compares the matches formed and the
//! waits, by how many others a player avoids and by how many avoid them,
//! and re-checks every match record of the lane with lists offline against
//! the lists ([`analysis`]). See docs/simulator.md.

pub mod analysis;
mod drive;
pub mod plot;
pub mod population;
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
pub use population::{Population, Trace};

/// The population.
pub const PLAYERS: usize = 5000;
/// The avoid-list sizes: a uniform 0–20 others.
pub const LIST_SIZES: (usize, usize) = (0, 20);
/// The study's arrival rate and trace length unless `--rate`, `--minutes`.
pub const RATE: f64 = 20.0;
pub const MINUTES: f64 = 10.0;
/// How long a player stays away after arriving unless `--away`.
pub const AWAY: (f64, f64) = (60.0, 240.0);

/// Everything the study needs.
#[derive(Debug, Clone)]
pub struct Config {
    pub rule_sets: Vec<RuleSet>,
    pub players: usize,
    /// Each player avoids a uniform `lists.0..=lists.1` others.
    pub lists: (usize, usize),
    pub rate: f64,
    pub seconds: f64,
    pub away: (f64, f64),
    pub mean: f64,
    pub sd: f64,
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
    /// With `blockLists`, every avoid list written before the first arrival.
    WithLists,
    /// Without `blockLists`: nobody's list matters.
    WithoutLists,
}

impl Variant {
    pub const ALL: [Variant; 2] = [Variant::WithLists, Variant::WithoutLists];

    pub fn describe(self) -> &'static str {
        match self {
            Variant::WithLists => "with lists",
            Variant::WithoutLists => "without lists",
        }
    }

    fn tag(self) -> &'static str {
        match self {
            Variant::WithLists => "w",
            Variant::WithoutLists => "n",
        }
    }
}

/// `rs` as `variant` plays it: with lists, a `blockLists` section whose
/// `maxEntries` holds `longest` (the document's own if it does); without,
/// none. Either way without `servers` (where game servers are configured a
/// formed match holds its players until a result comes, and nobody plays
/// the matches here: without, a matched player may come back at once), and
/// refused for a driven world with a ready check (nobody answers).
pub fn variant_rule_set(rs: &RuleSet, variant: Variant, longest: usize) -> Result<RuleSet, String> {
    let mut doc: Value = serde_json::from_str(&rs.text)
        .map_err(|e| format!("rule set {}: not JSON: {e}", rs.file))?;
    if rs.has_ready_check() {
        return Err(format!(
            "--blocks: rule set {} world {} has a readyCheck; the block-list study answers no proposals",
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
    let declared = obj
        .get("blockLists")
        .map(|b| b.get("maxEntries").and_then(Value::as_u64).unwrap_or(100));
    match variant {
        Variant::WithLists => match declared {
            Some(max) if max >= longest as u64 => {}
            _ => {
                let max = longest.max(1);
                obj.insert(
                    "blockLists".into(),
                    serde_json::json!({ "maxEntries": max }),
                );
                out.notes
                    .push(format!("blockLists.maxEntries set to {max}"));
            }
        },
        Variant::WithoutLists => {
            if declared.is_some() {
                obj.remove("blockLists");
                out.notes
                    .push("blockLists removed (the comparison run)".into());
            }
        }
    }
    out.text = doc.to_string();
    out.label = format!("{} {}", rs.label, variant.describe());
    Ok(out)
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
    /// Players per match.
    pub seats: usize,
    /// Per arrival of the trace.
    pub fates: Vec<Fate>,
    /// Every match formed, once, by `matched_at`.
    pub records: Vec<MatchRecord>,
    /// Refused joins by the core's status.
    pub refused: BTreeMap<String, usize>,
    /// Participants of records that matched no pending arrival.
    pub unaccounted: usize,
    /// Avoid lists written before the first arrival.
    pub lists_written: usize,
    pub failures: u64,
    pub first_error: Option<String>,
    /// Why the lane did not keep up with the clock, if it did not.
    pub lagging: Option<String>,
    pub notes: Vec<String>,
}

/// What the study produced.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub population: Arc<Population>,
    pub trace: Arc<Trace>,
    /// Per rule set, with lists then without.
    pub lanes: Vec<LaneResult>,
    pub measured_speed: f64,
    pub clock_error: Option<f64>,
}

/// Plays every rule set both ways on one population and one trace.
pub async fn simulate(config: &Config) -> Result<Outcome, String> {
    if config.rule_sets.is_empty() {
        return Err("--blocks: no rule set".into());
    }
    let population = Arc::new(Population::generate(
        config.players,
        config.lists,
        config.mean,
        config.sd,
        config.seed,
    )?);
    let trace = Arc::new(Trace::generate(
        &population,
        config.rate,
        config.seconds,
        config.away,
        config.seed,
    )?);
    let mut specs = Vec::new();
    let mut meta = Vec::new();
    for (i, rs) in config.rule_sets.iter().enumerate() {
        for v in Variant::ALL {
            let vrs = variant_rule_set(rs, v, config.lists.1)?;
            specs.push((vrs.label.clone(), vrs.clone(), format!("blk{i}{}", v.tag())));
            meta.push(drive::Meta {
                rule_set: rs.label.clone(),
                file: rs.file.clone(),
                variant: v,
                notes: vrs.notes,
            });
        }
    }
    let (mut lanes, mut servers) =
        play::start(&specs, config.speed, &config.redis_server, &config.work_dir).await?;
    let mut written = Vec::new();
    for (lane, m) in lanes.iter().zip(&meta) {
        written.push(drive::prepare(lane, m.variant, &population, config.in_flight).await?);
    }
    // Simulated time 0 comes after the lists and connections are in.
    for (lane, clock) in lanes.iter_mut().zip(servers.anchor().await?) {
        lane.clock = clock;
    }
    let handles: Vec<_> = lanes
        .into_iter()
        .zip(meta)
        .zip(written)
        .map(|((lane, m), w)| {
            tokio::spawn(drive::drive(
                lane,
                m,
                w,
                trace.clone(),
                population.clone(),
                config.clone(),
            ))
        })
        .collect();
    let (results, measured_speed, clock_error) = servers.collect(handles, |r| &mut r.notes).await?;
    Ok(Outcome {
        population,
        trace,
        lanes: results,
        measured_speed,
        clock_error,
    })
}
