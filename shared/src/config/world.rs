//! The worlds: what each one plays (team shape, lifetimes, matching mode,
//! rating and balance windows, ready check) and the catalog of them.

use std::collections::BTreeMap;
use std::time::Duration;

use super::{rules, MatchRule};
use crate::domain::WorldName;
use crate::error::ConfigError;

/// One configured world.
#[derive(Debug, Clone, PartialEq)]
pub struct World {
    pub name: WorldName,
    /// Players per team; with one team, players per match.
    pub team_size: u32,
    /// Teams per match (1: everyone plays together).
    pub teams: u32,
    /// Most players in one party (2..=team_size; below 2, no parties).
    pub max_party_size: u32,
    /// How a rated party's rating derives from its members'.
    pub party_rating: PartyRating,
    /// How long a ticket may wait before it expires.
    pub ticket_ttl: Duration,
    /// Only players with a live WebSocket connection may wait and be
    /// matched; a ticket whose player lost theirs is removed at match time.
    pub require_presence: bool,
    /// How the world forms matches.
    pub mode: MatchMode,
    /// A ready check: matches are proposals until every player accepts.
    pub ready_check: Option<ReadyCheck>,
    /// Regions: matches form only where every player's latency is within
    /// the anchor's cap.
    pub regions: Option<RegionRules>,
    /// The player attributes the world takes, in the catalog's declaration
    /// order: those its rules read and those its `attributes` lists.
    pub attributes: Vec<String>,
    /// Its match rules, in document order (compounds name others by index).
    pub match_rules: Vec<MatchRule>,
    /// Most candidates one attempt of a world with match rules reads
    /// (`candidateWindow`, docs/rules.md).
    pub candidate_window: u32,
    /// The worlds this one shares tickets with (`queueGroup`): a ticket may
    /// wait in several of them at once, and the first match takes it from
    /// all. `None`: the world shares tickets with none.
    pub queue_group: Option<String>,
}

/// Most worlds one `queueGroup` holds: a ticket waits in at most this many
/// worlds, and every script of a grouped world carries the group's keys.
pub const MAX_QUEUE_GROUP_WORLDS: usize = 4;

/// `candidateWindow` unless declared, and its bounds (the upper one bounds
/// a matcher call's work).
pub const DEFAULT_CANDIDATE_WINDOW: u32 = 256;
pub const MAX_CANDIDATE_WINDOW: u32 = 4096;

/// A world's regions (the rule set's `regions` section): a match forms only
/// in a region where every member's latency is within the cap of the
/// anchor's own wait, `min(max_latency + widen_per_second * wait,
/// latency_cap)`, and the best and worst member are at most `max_spread`
/// apart (when set).
#[derive(Debug, Clone, PartialEq)]
pub struct RegionRules {
    /// The regions, in the order of their bands (changing it needs an
    /// empty world: waiting tickets are filed by position).
    pub names: Vec<String>,
    pub max_latency_ms: f64,
    pub widen_per_second: f64,
    pub latency_cap_ms: f64,
    pub max_spread_ms: Option<f64>,
    /// Where a join without latencies plays (at `max_latency_ms`); `None`:
    /// such a join is refused (LATENCY_REQUIRED).
    pub default_region: Option<String>,
}

impl RegionRules {
    /// The latency cap of an anchor that has waited `wait`.
    pub fn cap_after(&self, wait: Duration) -> f64 {
        (self.max_latency_ms + self.widen_per_second * wait.as_secs_f64()).min(self.latency_cap_ms)
    }
}

/// A world's ready check: how long players have to accept a proposed match,
/// and how long who declines or does not answer must wait to join again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadyCheck {
    pub accept_within: Duration,
    pub decline_cooldown: Duration,
}

impl World {
    /// A FIFO world of one team of `team_size`, without parties' limits
    /// beyond the team (the `MM_WORLDS` shorthand).
    pub fn fifo(name: WorldName, team_size: u32, ticket_ttl: Duration) -> Self {
        Self {
            name,
            team_size,
            teams: 1,
            max_party_size: team_size,
            party_rating: PartyRating::Average,
            ticket_ttl,
            require_presence: false,
            mode: MatchMode::Fifo,
            ready_check: None,
            regions: None,
            attributes: Vec::new(),
            match_rules: Vec::new(),
            candidate_window: DEFAULT_CANDIDATE_WINDOW,
            queue_group: None,
        }
    }

    /// Players per match: teams x team size.
    pub fn seats(&self) -> u32 {
        self.teams * self.team_size
    }

    /// The rated world's rules, if it is rated.
    pub fn rating(&self) -> Option<&RatingRules> {
        match &self.mode {
            MatchMode::Rating(rules) => Some(rules),
            MatchMode::Fifo => None,
        }
    }
}

/// A rated party's rating: the average of its members' (default) or the
/// highest, so a strong player cannot be carried into easy matches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PartyRating {
    #[default]
    Average,
    Max,
}

impl PartyRating {
    /// As the scripts take it.
    pub fn as_str(self) -> &'static str {
        match self {
            PartyRating::Average => "average",
            PartyRating::Max => "max",
        }
    }
}

/// How a world forms matches.
#[derive(Debug, Clone, PartialEq)]
pub enum MatchMode {
    /// The oldest tickets play together, whatever their skill.
    Fifo,
    /// Around an anchor, oldest first, within a rating window that widens
    /// with the anchor's wait.
    Rating(RatingRules),
}

/// A rated world's window: `min(base + per_second * wait, max)` around the
/// anchor's rating, no limit at all from `relax_after` on.
#[derive(Debug, Clone, PartialEq)]
pub struct RatingRules {
    pub base_window: f64,
    pub widen_per_second: f64,
    pub max_window: f64,
    pub relax_after: Duration,
    /// An anchor that found no match is tried again after this long.
    pub retry: Duration,
    /// Anchors one matcher call tries (bounds the call's time).
    pub anchors_per_call: u32,
    /// With teams: how far the team averages may differ, widening with the
    /// anchor's wait like the window (and lifted at `relax_after` too).
    pub balance: Option<BalanceRules>,
    /// With teams: the balance a backfill's fills must keep, when the world
    /// sets one apart from its fresh matches' (`backfill.balance`); else a
    /// backfill keeps `balance`.
    pub backfill_balance: Option<BackfillBalance>,
    /// How reported results move the players' ratings; `None`: they do not
    /// (the studio maintains the ratings store itself).
    pub updates: Option<crate::domain::RatingUpdates>,
}

/// A rated team world's balance window: `min(base + per_second * wait, max)`.
#[derive(Debug, Clone, PartialEq)]
pub struct BalanceRules {
    pub base_window: f64,
    pub widen_per_second: f64,
    pub max_window: f64,
}

/// The balance window of a rated team world's backfills, counted from the
/// backfill's own wait: one newcomer cannot be packed like a fresh match's
/// ten players, so a studio may ask more of it than of fresh matches.
#[derive(Debug, Clone, PartialEq)]
pub struct BackfillBalance {
    pub window: BalanceRules,
    /// When the window is lifted; `None`: never (a seat stays open rather
    /// than be filled out of balance).
    pub relax_after: Option<Duration>,
}

impl RatingRules {
    /// How long after a try (or a join) a ticket is due as an anchor again:
    /// a fifth less than `retry`, so a matcher tick that comes a little
    /// early still finds it due (as the scripts compute it, `_rated.lua`
    /// next_due).
    pub fn next_due_after(&self) -> Duration {
        let ms = u64::try_from(self.retry.as_millis()).unwrap_or(u64::MAX);
        Duration::from_millis(ms - ms / 5)
    }

    /// The window of an anchor that has waited `wait`; `None` = no limit.
    pub fn window_after(&self, wait: Duration) -> Option<f64> {
        if wait >= self.relax_after {
            return None;
        }
        Some(widened(
            self.base_window,
            self.widen_per_second,
            self.max_window,
            wait,
        ))
    }

    /// How far the team averages of a match may differ after a fill of a
    /// backfill that has waited `wait` (as `_backfill.lua` backfill_team
    /// computes it); `None` = no limit (no balance, or lifted).
    pub fn backfill_balance_after(&self, wait: Duration) -> Option<f64> {
        let (window, relax_after) = match &self.backfill_balance {
            Some(b) => (&b.window, b.relax_after),
            None => (self.balance.as_ref()?, Some(self.relax_after)),
        };
        if relax_after.is_some_and(|r| wait >= r) {
            return None;
        }
        Some(window.after(wait))
    }
}

impl BalanceRules {
    /// The window after `wait`: `min(base + per_second * wait, max)`.
    pub fn after(&self, wait: Duration) -> f64 {
        widened(
            self.base_window,
            self.widen_per_second,
            self.max_window,
            wait,
        )
    }
}

/// A window that widens with `wait`: `min(base + per_second * wait, max)`
/// (the scripts' rated_window, lua/_rated.lua).
fn widened(base: f64, per_second: f64, max: f64, wait: Duration) -> f64 {
    (base + per_second * wait.as_secs_f64()).min(max)
}

/// Where players' ratings come from (the rule set's `ratings` section).
#[derive(Debug, Clone, PartialEq)]
pub struct RatingSettings {
    /// The verified JWT claim carrying a rating (e.g. `mmr`), if any.
    pub claim: Option<String>,
    /// The rating of a player no source knows; `None` refuses their join.
    pub default: Option<f64>,
    /// The accepted range of ratings.
    pub min: f64,
    pub max: f64,
    /// The scope (or claim) a caller's token must carry to write ratings;
    /// `None`: nobody may.
    pub writer_scope: Option<String>,
}

impl Default for RatingSettings {
    fn default() -> Self {
        Self {
            claim: None,
            default: None,
            min: 0.0,
            max: 1_000_000.0,
            writer_scope: None,
        }
    }
}

/// The configured worlds, in configuration order.
#[derive(Debug, Clone, PartialEq)]
pub struct WorldCatalog {
    worlds: Vec<World>,
}

impl WorldCatalog {
    pub fn new(worlds: Vec<World>) -> Result<Self, ConfigError> {
        if worlds.is_empty() {
            return Err(ConfigError {
                var: "MM_WORLDS",
                reason: "no worlds configured".into(),
            });
        }
        let mut seen = BTreeMap::new();
        for w in &worlds {
            if seen.insert(w.name.as_str(), ()).is_some() {
                return Err(ConfigError {
                    var: "MM_WORLDS",
                    reason: format!("world {} is listed twice", w.name),
                });
            }
        }
        let mut groups: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
        for w in &worlds {
            if let Some(g) = &w.queue_group {
                groups.entry(g).or_default().push(w.name.as_str());
            }
        }
        for (group, members) in groups {
            if members.len() < 2 || members.len() > MAX_QUEUE_GROUP_WORLDS {
                return Err(ConfigError {
                    var: "MM_WORLDS",
                    reason: format!(
                        "queueGroup {group:?}: a group holds 2..={MAX_QUEUE_GROUP_WORLDS} worlds, got {} ({})",
                        members.len(),
                        members.join(", ")
                    ),
                });
            }
        }
        Ok(Self { worlds })
    }

    /// Parses `name:team[:ticket_ttl_secs],...`.
    pub fn parse(spec: &str, default_ttl: Duration) -> Result<Self, ConfigError> {
        let err = |reason: String| ConfigError {
            var: "MM_WORLDS",
            reason,
        };
        let mut worlds = Vec::new();
        for item in spec.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let mut parts = item.split(':');
            let name = parts.next().unwrap_or_default();
            let name = WorldName::parse(name).map_err(|e| err(e.to_string()))?;
            let team_size = match parts.next() {
                Some(t) => t
                    .parse::<u32>()
                    .ok()
                    .filter(|n| (2..=rules::MAX_PLAYERS_PER_MATCH).contains(n))
                    .ok_or_else(|| {
                        err(format!(
                            "team size of {name} must be 2..={}, got {t:?}",
                            rules::MAX_PLAYERS_PER_MATCH
                        ))
                    })?,
                None => 3,
            };
            let ticket_ttl = match parts.next() {
                Some(t) => {
                    Duration::from_secs(t.parse::<u64>().ok().filter(|n| *n > 0).ok_or_else(
                        || err(format!("ticket lifetime of {name} must be > 0 seconds")),
                    )?)
                }
                None => default_ttl,
            };
            if parts.next().is_some() {
                return Err(err(format!("{item:?} has more than three fields")));
            }
            worlds.push(World::fifo(name, team_size, ticket_ttl));
        }
        Self::new(worlds)
    }

    pub fn get(&self, name: &str) -> Option<&World> {
        self.worlds.iter().find(|w| w.name.as_str() == name)
    }

    pub fn iter(&self) -> impl Iterator<Item = &World> {
        self.worlds.iter()
    }

    /// The worlds that share tickets with `world` (its `queueGroup`), in
    /// catalog order, `world` among them; `[world]` when it has no group.
    pub fn group<'a>(&'a self, world: &'a World) -> Vec<&'a World> {
        match &world.queue_group {
            None => vec![world],
            Some(g) => self
                .worlds
                .iter()
                .filter(|w| w.queue_group.as_ref() == Some(g))
                .collect(),
        }
    }

    pub fn len(&self) -> usize {
        self.worlds.len()
    }

    pub fn is_empty(&self) -> bool {
        self.worlds.is_empty()
    }
}
