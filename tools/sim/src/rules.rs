//! Rule sets to simulate: JSON documents exactly as `MM_RULES` takes them,
//! from files or directories, validated by the core itself
//! (`shared::Settings::from_lookup`). One world of each document is driven
//! (`--world`, else its first); the FIFO baseline is a one-world document
//! with the same team size.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;
use shared::{MatchMode, PartyRating, Settings, World};

use crate::outcome::Shape;

/// One rule set to drive through the real scripts.
#[derive(Debug, Clone)]
pub struct RuleSet {
    /// Short name for tables and charts (the file stem).
    pub label: String,
    /// Where it came from (a path, or "built-in").
    pub file: String,
    /// The document passed as `MM_RULES`.
    pub text: String,
    /// The world whose queue is driven.
    pub world: String,
    /// Adjustments the simulator made to the document, for the report.
    pub notes: Vec<String>,
}

/// Everything the core needs besides the rule set, as `Settings` variables.
#[derive(Debug, Clone)]
pub struct Environment {
    pub redis_url: String,
    /// Lifetime of tickets of worlds that do not set `ticketTtlSeconds`.
    pub ticket_ttl_secs: u64,
    pub instant_match: bool,
}

impl RuleSet {
    /// A FIFO baseline: one FIFO world of `shape` (parties up to the team
    /// size, the core's default), labelled `label`.
    pub fn fifo(label: &str, shape: Shape, ticket_ttl_secs: u64) -> Self {
        let Shape { teams, team_size } = shape;
        Self {
            label: label.into(),
            file: "built-in".into(),
            text: format!(
                r#"{{"worlds": [{{"name": "fifo", "teamSize": {team_size}, "teams": {teams}, "ticketTtlSeconds": {ticket_ttl_secs}}}]}}"#
            ),
            world: "fifo".into(),
            notes: Vec::new(),
        }
    }

    /// Reads one rule set document; `world` picks the world to drive (the
    /// first one if `None` or if the document has no world of that name).
    pub fn from_file(path: &Path, world: Option<&str>) -> Result<Self, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read rule set {}: {e}", path.display()))?;
        let label = path
            .file_stem()
            .map_or_else(|| "rules".into(), |s| s.to_string_lossy().into_owned());
        Self::from_text(&label, &shown(path), &text, world)
    }

    /// See [`RuleSet::from_file`].
    pub fn from_text(
        label: &str,
        file: &str,
        text: &str,
        world: Option<&str>,
    ) -> Result<Self, String> {
        let mut doc: Value =
            serde_json::from_str(text).map_err(|e| format!("rule set {file}: not JSON: {e}"))?;
        let mut notes = Vec::new();
        let worlds = doc
            .get_mut("worlds")
            .and_then(Value::as_array_mut)
            .ok_or_else(|| format!("rule set {file}: no \"worlds\" array"))?;
        let names: Vec<String> = worlds
            .iter()
            .filter_map(|w| w.get("name").and_then(Value::as_str).map(String::from))
            .collect();
        let chosen = match world {
            Some(w) if names.iter().any(|n| n == w) => w.to_owned(),
            _ => names
                .first()
                .cloned()
                .ok_or_else(|| format!("rule set {file}: no named world"))?,
        };
        for w in worlds.iter_mut() {
            // The simulator has no WebSocket connections: a world requiring
            // presence would refuse every join.
            if w.get("requirePresence").and_then(Value::as_bool) == Some(true) {
                if let Some(obj) = w.as_object_mut() {
                    obj.insert("requirePresence".into(), Value::Bool(false));
                }
                notes.push(format!(
                    "{}: requirePresence turned off (the simulator has no connections)",
                    w.get("name").and_then(Value::as_str).unwrap_or("?")
                ));
            }
        }
        Ok(Self {
            label: label.to_owned(),
            file: file.to_owned(),
            text: doc.to_string(),
            world: chosen,
            notes,
        })
    }

    /// The driven world's JSON object.
    fn driven_world<'a>(
        doc: &'a mut Value,
        world: &str,
    ) -> Option<&'a mut serde_json::Map<String, Value>> {
        doc.get_mut("worlds")?
            .as_array_mut()?
            .iter_mut()
            .find(|w| w.get("name").and_then(Value::as_str) == Some(world))?
            .as_object_mut()
    }

    /// Whether the driven world has a ready check.
    pub fn has_ready_check(&self) -> bool {
        serde_json::from_str::<Value>(&self.text)
            .ok()
            .as_mut()
            .and_then(|doc| Self::driven_world(doc, &self.world))
            .is_some_and(|w| w.contains_key("readyCheck"))
    }

    /// The same rule set with the driven world's ready check removed,
    /// labelled `label` (to show what the ready check costs).
    pub fn without_ready_check(&self, label: &str) -> Self {
        let mut out = self.clone();
        if let Ok(mut doc) = serde_json::from_str::<Value>(&self.text) {
            if let Some(w) = Self::driven_world(&mut doc, &self.world) {
                w.remove("readyCheck");
            }
            out.text = doc.to_string();
        }
        out.label = label.to_owned();
        out.notes.push(format!(
            "{}: readyCheck removed (the comparison run)",
            self.world
        ));
        out
    }

    /// Validates the document through the core and returns the settings for
    /// `namespace` and the driven world.
    pub fn settings(
        &self,
        env: &Environment,
        namespace: &str,
    ) -> Result<(Settings, World), String> {
        let vars: HashMap<&str, String> = HashMap::from([
            ("REDIS_URL", env.redis_url.clone()),
            ("MM_NAMESPACE", namespace.to_owned()),
            ("MM_RULES", self.text.clone()),
            ("MM_TICKET_TTL_SECS", env.ticket_ttl_secs.to_string()),
            ("MM_INSTANT_MATCH", env.instant_match.to_string()),
            // Never refuse a join for capacity: every arrival is simulated.
            ("MM_QUEUE_CAPACITY", "0".to_owned()),
            // A busy two-core machine must not turn slow replies into errors.
            ("REDIS_TIMEOUT_MS", "15000".to_owned()),
            // Simulated players register one connection and never send a
            // heartbeat: as if their clients did, the registration must not
            // lapse while they wait (after the default 150 s housekeeping
            // would remove a waiting player's ticket as disconnected).
            (
                "MM_PRESENCE_TIMEOUT_SECS",
                PRESENCE_TIMEOUT_SECS.to_string(),
            ),
        ]);
        let settings = Settings::from_lookup(|k| vars.get(k).cloned())
            .map_err(|e| format!("rule set {}: {e}", self.file))?;
        let world = settings
            .worlds
            .get(&self.world)
            .cloned()
            .ok_or_else(|| format!("rule set {}: no world {}", self.file, self.world))?;
        Ok((settings, world))
    }
}

/// How long a simulated player's connection stays registered without a
/// heartbeat: longer than any run.
pub const PRESENCE_TIMEOUT_SECS: u64 = 30 * 24 * 3600;

/// The relax time of a world in seconds: from it on a rated anchor takes the
/// nearest players whatever their rating. 0 for FIFO (no window at all).
pub fn relax_seconds(world: &World) -> f64 {
    match &world.mode {
        MatchMode::Fifo => 0.0,
        MatchMode::Rating(r) => r.relax_after.as_secs_f64(),
    }
}

/// How a world's matches are made up.
pub fn shape_of(world: &World) -> Shape {
    Shape {
        teams: world.teams,
        team_size: world.team_size,
    }
}

/// A short description of a world's matching rules for the report.
pub fn describe(world: &World) -> String {
    let ttl = humanize(world.ticket_ttl);
    let shape = if world.teams > 1 {
        format!("{} teams of {}", world.teams, world.team_size)
    } else {
        format!("team {}", world.team_size)
    };
    let parties = if world.max_party_size >= 2 {
        format!(
            ", parties up to {}{}",
            world.max_party_size,
            match (&world.mode, world.party_rating) {
                (MatchMode::Rating(_), PartyRating::Max) => " (rated by their best)",
                (MatchMode::Rating(_), PartyRating::Average) => " (rated by their average)",
                _ => "",
            }
        )
    } else {
        ", no parties".to_owned()
    };
    let ready = world.ready_check.map_or_else(String::new, |r| {
        format!(
            ", ready check: accept within {}, cool-down {}",
            humanize(r.accept_within),
            humanize(r.decline_cooldown)
        )
    });
    let ready = match &world.regions {
        Some(r) => format!(
            "{ready}; regions {}: latency cap {} ms + {}/s up to {} ms{}{}",
            r.names.join(", "),
            crate::oracle::trim_float(r.max_latency_ms),
            crate::oracle::trim_float(r.widen_per_second),
            crate::oracle::trim_float(r.latency_cap_ms),
            r.max_spread_ms.map_or_else(String::new, |s| format!(
                ", spread at most {} ms",
                crate::oracle::trim_float(s)
            )),
            r.default_region
                .as_ref()
                .map_or_else(String::new, |d| format!(", default region {d}")),
        ),
        None => ready,
    };
    let ready = if world.attributes.is_empty() && world.match_rules.is_empty() {
        ready
    } else {
        let top: Vec<&str> = world
            .match_rules
            .iter()
            .filter(|r| r.top)
            .map(|r| r.name.as_str())
            .collect();
        format!(
            "{ready}; attributes {}; rules {}",
            world.attributes.join(", "),
            if top.is_empty() {
                "none".to_owned()
            } else {
                top.join(", ")
            }
        )
    };
    match &world.mode {
        MatchMode::Fifo => format!("FIFO, {shape}{parties}, ticket TTL {ttl}{ready}"),
        MatchMode::Rating(r) => format!(
            "rating: window {} + {}/s up to {}, relax after {}{}{}; {shape}{parties}, ticket TTL {ttl}{ready}",
            r.base_window,
            r.widen_per_second,
            r.max_window,
            humanize(r.relax_after),
            r.balance.as_ref().filter(|_| world.teams > 1).map_or_else(String::new, |b| format!(
                "; team averages within {} + {}/s up to {}",
                b.base_window, b.widen_per_second, b.max_window
            )),
            r.backfill_balance.as_ref().map_or_else(String::new, |b| format!(
                "; after a backfill's fills within {} + {}/s up to {}, {}",
                b.window.base_window,
                b.window.widen_per_second,
                b.window.max_window,
                b.relax_after.map_or_else(
                    || "never lifted".to_string(),
                    |d| format!("lifted after {}", humanize(d))
                )
            )),
        ),
    }
}

fn humanize(d: Duration) -> String {
    format!("{} s", crate::oracle::trim_float(d.as_secs_f64()))
}

/// The rule set files of `paths`: a file as it is, a directory's `*.json`
/// files in name order.
pub fn expand(paths: &[PathBuf]) -> Result<Vec<PathBuf>, String> {
    let mut files = Vec::new();
    for path in paths {
        if path.is_dir() {
            let mut found: Vec<PathBuf> = std::fs::read_dir(path)
                .map_err(|e| format!("cannot list {}: {e}", path.display()))?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|x| x == "json") && p.is_file())
                .collect();
            found.sort();
            if found.is_empty() {
                return Err(format!("{} holds no *.json rule set", path.display()));
            }
            files.extend(found);
        } else if path.is_file() {
            files.push(path.clone());
        } else {
            return Err(format!("rule set {} does not exist", path.display()));
        }
    }
    Ok(files)
}

/// `path` relative to the working directory when it lies below it.
fn shown(path: &Path) -> String {
    std::env::current_dir()
        .ok()
        .and_then(|cwd| path.strip_prefix(cwd).ok().map(Path::to_path_buf))
        .unwrap_or_else(|| path.to_path_buf())
        .display()
        .to_string()
}

/// The directory whose rule sets a run without `--rules` uses.
pub fn default_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("rules")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env() -> Environment {
        Environment {
            redis_url: "redis://127.0.0.1:1".into(),
            ticket_ttl_secs: 900,
            instant_match: true,
        }
    }

    #[test]
    fn the_fifo_baseline_is_a_valid_rule_set() {
        let fifo = RuleSet::fifo("FIFO", Shape::solo_team(10), 900);
        let (settings, world) = fifo.settings(&env(), "simfifo").unwrap();
        assert_eq!(settings.namespace, "simfifo");
        assert_eq!((world.team_size, world.ticket_ttl.as_secs()), (10, 900));
        assert_eq!(relax_seconds(&world), 0.0);
        assert_eq!(settings.queue_capacity, 0);
        assert_eq!(settings.presence_timeout.as_secs(), PRESENCE_TIMEOUT_SECS);
    }

    #[test]
    fn a_rated_rule_set_gives_its_relax_time_and_picks_the_world() {
        let text = r#"{"worlds": [
            {"name": "casual", "teamSize": 10},
            {"name": "ranked", "teamSize": 10, "mode": "rating", "requirePresence": true,
             "rating": {"baseWindow": 50, "widenPerSecond": 10, "maxWindow": 400, "relaxAfterSeconds": 45}}
        ]}"#;
        let rs = RuleSet::from_text("r", "r.json", text, Some("ranked")).unwrap();
        assert_eq!(rs.world, "ranked");
        assert_eq!(rs.notes.len(), 1, "{:?}", rs.notes);
        let (_, world) = rs.settings(&env(), "sim0").unwrap();
        assert_eq!(relax_seconds(&world), 45.0);
        assert!(!world.require_presence);
        assert!(
            describe(&world).contains("relax after 45 s"),
            "{}",
            describe(&world)
        );
        // Without --world (or with an unknown one), the first world.
        let first = RuleSet::from_text("r", "r.json", text, Some("nope")).unwrap();
        assert_eq!(first.world, "casual");
    }

    #[test]
    fn invalid_rule_sets_name_the_file() {
        let err = RuleSet::from_text("x", "x.json", "{", None).unwrap_err();
        assert!(err.contains("x.json: not JSON"), "{err}");
        let err = RuleSet::from_text("x", "x.json", r#"{"worlds": []}"#, None).unwrap_err();
        assert!(err.contains("no named world"), "{err}");
        let bad = RuleSet::from_text(
            "x",
            "x.json",
            r#"{"worlds": [{"name": "a", "teamSize": 1}]}"#,
            None,
        )
        .unwrap();
        let err = bad.settings(&env(), "sim0").unwrap_err();
        assert!(err.contains("x.json") && err.contains("teamSize"), "{err}");
    }

    #[test]
    fn the_shipped_rule_sets_are_valid() {
        // The default set, and the team, ready-check and regions sets
        // below it.
        for (dir, teams, ready) in [
            (default_dir(), 1, false),
            (default_dir().join("teams"), 2, false),
            (default_dir().join("ready"), 1, true),
            (default_dir().join("regions"), 2, false),
            (default_dir().join("regions").join("sweep"), 2, false),
        ] {
            let files = expand(std::slice::from_ref(&dir)).unwrap();
            assert!(!files.is_empty(), "{}", dir.display());
            for f in files {
                let rs = RuleSet::from_file(&f, None).unwrap();
                let (_, world) = rs.settings(&env(), "sim0").unwrap();
                assert_eq!(world.seats(), 10, "{}", f.display());
                assert_eq!(world.teams, teams, "{}", f.display());
                assert_eq!(rs.has_ready_check(), ready, "{}", f.display());
                assert_eq!(world.ready_check.is_some(), ready, "{}", f.display());
                // Only the regions set has (and must have) a regions rule.
                assert_eq!(
                    world.regions.is_some(),
                    dir.ends_with("regions") || dir.ends_with("sweep"),
                    "{}",
                    f.display()
                );
                if teams > 1 {
                    // The party acceptance scenario's parties (up to 3) fit.
                    assert!(world.max_party_size >= 3, "{}", f.display());
                }
            }
        }
    }

    #[test]
    fn a_ready_check_can_be_removed_for_the_comparison_run() {
        let text = r#"{"worlds": [
            {"name": "other", "teamSize": 2, "readyCheck": {"acceptSeconds": 5, "declineCooldownSeconds": 0}},
            {"name": "duel", "teamSize": 2, "teams": 2, "maxPartySize": 2,
             "readyCheck": {"acceptSeconds": 10, "declineCooldownSeconds": 30}}
        ]}"#;
        let rs = RuleSet::from_text("r", "r.json", text, Some("duel")).unwrap();
        assert!(rs.has_ready_check());
        let (_, world) = rs.settings(&env(), "sim0").unwrap();
        assert_eq!(shape_of(&world).to_string(), "2x2");
        let d = describe(&world);
        assert!(
            d.contains("2 teams of 2, parties up to 2") && d.contains("accept within 10 s"),
            "{d}"
        );
        let plain = rs.without_ready_check("r plain");
        assert!(!plain.has_ready_check());
        assert_eq!(plain.label, "r plain");
        let (_, world) = plain.settings(&env(), "sim0").unwrap();
        assert!(world.ready_check.is_none());
        // Only the driven world lost it.
        let (settings, _) = plain.settings(&env(), "sim0").unwrap();
        assert!(settings.worlds.get("other").unwrap().ready_check.is_some());
    }
}
