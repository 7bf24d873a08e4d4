//! Configuration from environment variables, validated once at cold start.
//! Worlds are configuration, not code: a JSON rule set (`MM_RULES` or
//! `MM_RULES_FILE`, see [`rules`]), or the FIFO shorthand
//! `MM_WORLDS="world1:3,world2:5:300"` (name:team_size[:ticket_ttl_secs]).

pub mod rules;

use std::collections::BTreeMap;
use std::time::Duration;

use crate::domain::{check_name, WorldName};
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
}

/// A rated team world's balance window: `min(base + per_second * wait, max)`.
#[derive(Debug, Clone, PartialEq)]
pub struct BalanceRules {
    pub base_window: f64,
    pub widen_per_second: f64,
    pub max_window: f64,
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
        Some((self.base_window + self.widen_per_second * wait.as_secs_f64()).min(self.max_window))
    }
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

    pub fn len(&self) -> usize {
        self.worlds.len()
    }

    pub fn is_empty(&self) -> bool {
        self.worlds.is_empty()
    }
}

/// How to reach Redis.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RedisSettings {
    /// `redis://` or `rediss://` (TLS) URLs; several only in cluster mode.
    pub urls: Vec<String>,
    pub cluster: bool,
    /// Upper bound for one command, including reconnecting.
    pub command_timeout: Duration,
    pub connect_timeout: Duration,
    /// After this long without traffic, a PING checks the connection before
    /// a write (see `MatchStore`).
    pub idle_check_after: Duration,
    /// PEM file of the CA(s) to trust for `rediss://` instead of the public
    /// web roots (a self-hosted Redis with its own CA). ElastiCache needs none.
    pub ca_cert: Option<std::path::PathBuf>,
}

/// Everything the core needs to know.
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    /// Key namespace; all keys of one namespace share one hash slot.
    pub namespace: String,
    pub worlds: WorldCatalog,
    /// Where ratings come from (rated worlds).
    pub ratings: RatingSettings,
    /// Form the match inside the join that completes a group.
    pub instant_match: bool,
    /// How long match records (and players' pointers to them) are kept.
    pub match_ttl: Duration,
    /// How long a WebSocket connection stays registered (and its player
    /// present) after its last heartbeat: missed heartbeats, not a fixed
    /// lifetime, end a registration whose `$disconnect` never came.
    pub presence_timeout: Duration,
    /// The heartbeat interval clients are told to keep (well below the
    /// presence timeout and API Gateway's 10-minute idle timeout).
    pub heartbeat_interval: Duration,
    /// How long a party may take to assemble (every invited player joined)
    /// before it is cancelled.
    pub party_ttl: Duration,
    pub max_connections_per_player: u32,
    /// Remove a player's ticket when their last connection goes away.
    pub remove_ticket_on_disconnect: bool,
    /// Most tickets one world's queue may hold (0 = unbounded).
    pub queue_capacity: u64,
    /// Window of recent matches the wait estimate is derived from.
    pub wait_window: Duration,
    pub redis: RedisSettings,
}

/// Default client heartbeat interval.
pub const DEFAULT_HEARTBEAT: Duration = Duration::from_secs(60);
/// Default presence timeout: two missed heartbeats and a half.
pub const DEFAULT_PRESENCE_TIMEOUT: Duration = Duration::from_secs(150);

impl Settings {
    /// Reads settings from the process environment.
    pub fn from_env() -> Result<Self, ConfigError> {
        Self::from_lookup(|k| std::env::var(k).ok())
    }

    /// Reads settings through `lookup` (tests pass a map).
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        let get = |k: &str| {
            lookup(k)
                .map(|v| v.trim().to_owned())
                .filter(|v| !v.is_empty())
        };
        let secs = |var: &'static str, default: u64, min: u64| -> Result<Duration, ConfigError> {
            match get(var) {
                None => Ok(Duration::from_secs(default)),
                Some(v) => v
                    .parse::<u64>()
                    .ok()
                    .filter(|n| *n >= min)
                    .map(Duration::from_secs)
                    .ok_or_else(|| ConfigError {
                        var,
                        reason: format!("expected seconds >= {min}, got {v:?}"),
                    }),
            }
        };
        let millis = |var: &'static str, default: u64| -> Result<Duration, ConfigError> {
            match get(var) {
                None => Ok(Duration::from_millis(default)),
                Some(v) => v
                    .parse::<u64>()
                    .ok()
                    .filter(|n| *n > 0)
                    .map(Duration::from_millis)
                    .ok_or_else(|| ConfigError {
                        var,
                        reason: format!("expected milliseconds > 0, got {v:?}"),
                    }),
            }
        };
        let flag = |var: &'static str, default: bool| -> Result<bool, ConfigError> {
            match get(var).as_deref().map(str::to_ascii_lowercase).as_deref() {
                None => Ok(default),
                Some("1" | "true" | "yes" | "on") => Ok(true),
                Some("0" | "false" | "no" | "off") => Ok(false),
                Some(v) => Err(ConfigError {
                    var,
                    reason: format!("expected true or false, got {v:?}"),
                }),
            }
        };
        let number = |var: &'static str, default: u64| -> Result<u64, ConfigError> {
            match get(var) {
                None => Ok(default),
                Some(v) => v.parse::<u64>().map_err(|_| ConfigError {
                    var,
                    reason: format!("expected a whole number, got {v:?}"),
                }),
            }
        };

        let namespace = get("MM_NAMESPACE").unwrap_or_else(|| "mm".into());
        check_name("namespace", &namespace).map_err(|e| ConfigError {
            var: "MM_NAMESPACE",
            reason: e.to_string(),
        })?;
        let ticket_ttl = secs("MM_TICKET_TTL_SECS", 600, 1)?;
        let (worlds, ratings) = match (get("MM_RULES"), get("MM_RULES_FILE"), get("MM_WORLDS")) {
            (Some(_), Some(_), _) | (Some(_), _, Some(_)) | (_, Some(_), Some(_)) => {
                return Err(ConfigError {
                    var: "MM_RULES",
                    reason: "set only one of MM_RULES, MM_RULES_FILE and MM_WORLDS".into(),
                })
            }
            (Some(text), None, None) => rules::parse("MM_RULES", &text, ticket_ttl)?,
            (None, Some(path), None) => {
                let text = std::fs::read_to_string(&path).map_err(|e| ConfigError {
                    var: "MM_RULES_FILE",
                    reason: format!("cannot read {path}: {e}"),
                })?;
                rules::parse("MM_RULES_FILE", &text, ticket_ttl)?
            }
            (None, None, worlds) => (
                WorldCatalog::parse(
                    &worlds.unwrap_or_else(|| "world1:3,world2:3,world3:3".into()),
                    ticket_ttl,
                )?,
                RatingSettings::default(),
            ),
        };
        let heartbeat_interval = secs("MM_HEARTBEAT_SECS", DEFAULT_HEARTBEAT.as_secs(), 1)?;
        let presence_timeout = secs(
            "MM_PRESENCE_TIMEOUT_SECS",
            DEFAULT_PRESENCE_TIMEOUT.as_secs(),
            1,
        )?;
        if presence_timeout <= heartbeat_interval {
            return Err(ConfigError {
                var: "MM_PRESENCE_TIMEOUT_SECS",
                reason: format!(
                    "must be longer than MM_HEARTBEAT_SECS ({}s), or every registration lapses between heartbeats",
                    heartbeat_interval.as_secs()
                ),
            });
        }
        let max_connections_per_player = number("MM_MAX_CONNECTIONS_PER_PLAYER", 8)?;
        if !(1..=64).contains(&max_connections_per_player) {
            return Err(ConfigError {
                var: "MM_MAX_CONNECTIONS_PER_PLAYER",
                reason: "expected 1..=64".into(),
            });
        }

        let url_spec = get("REDIS_URL").unwrap_or_else(|| "redis://127.0.0.1:6379".into());
        let urls: Vec<String> = url_spec
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(String::from)
            .collect();
        if let Some(bad) = urls
            .iter()
            .find(|u| !(u.starts_with("redis://") || u.starts_with("rediss://")))
        {
            return Err(ConfigError {
                var: "REDIS_URL",
                reason: format!("expected redis:// or rediss:// URLs, got {bad:?}"),
            });
        }
        let cluster = flag("REDIS_CLUSTER", urls.len() > 1)?;
        if urls.len() > 1 && !cluster {
            return Err(ConfigError {
                var: "REDIS_URL",
                reason: "several URLs are only allowed with REDIS_CLUSTER=true".into(),
            });
        }

        Ok(Self {
            namespace,
            worlds,
            ratings,
            instant_match: flag("MM_INSTANT_MATCH", true)?,
            match_ttl: secs("MM_MATCH_TTL_SECS", 600, 1)?,
            presence_timeout,
            heartbeat_interval,
            party_ttl: secs("MM_PARTY_TTL_SECS", 120, 1)?,
            max_connections_per_player: max_connections_per_player as u32,
            remove_ticket_on_disconnect: flag("MM_REMOVE_TICKET_ON_DISCONNECT", true)?,
            queue_capacity: number("MM_QUEUE_CAPACITY", 1_000_000)?,
            wait_window: secs("MM_WAIT_WINDOW_SECS", 300, 1)?,
            redis: RedisSettings {
                urls,
                cluster,
                command_timeout: millis("REDIS_TIMEOUT_MS", 2000)?,
                connect_timeout: millis("REDIS_CONNECT_TIMEOUT_MS", 1000)?,
                idle_check_after: millis("REDIS_IDLE_CHECK_MS", 15_000)?,
                ca_cert: get("REDIS_CA_CERT").map(std::path::PathBuf::from),
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    fn settings(vars: &[(&str, &str)]) -> Result<Settings, ConfigError> {
        let map: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Settings::from_lookup(|k| map.get(k).cloned())
    }

    #[test]
    fn defaults_match_the_seed() {
        let s = settings(&[]).unwrap();
        assert_eq!(s.namespace, "mm");
        let names: Vec<_> = s
            .worlds
            .iter()
            .map(|w| w.name.as_str().to_owned())
            .collect();
        assert_eq!(names, ["world1", "world2", "world3"]);
        assert!(s.worlds.iter().all(|w| w.team_size == 3));
        assert!(s.instant_match);
        assert_eq!(s.match_ttl, Duration::from_secs(600));
        assert_eq!(s.presence_timeout, Duration::from_secs(150));
        assert_eq!(s.heartbeat_interval, Duration::from_secs(60));
        assert!(!s.redis.cluster);
    }

    #[test]
    fn worlds_parse_with_team_size_and_ttl() {
        let s = settings(&[("MM_WORLDS", "duel:2:30, squad:4")]).unwrap();
        let duel = s.worlds.get("duel").unwrap();
        assert_eq!(
            (duel.team_size, duel.ticket_ttl),
            (2, Duration::from_secs(30))
        );
        assert_eq!(
            s.worlds.get("squad").unwrap().ticket_ttl,
            Duration::from_secs(600)
        );
        assert!(s.worlds.get("nope").is_none());
    }

    #[test]
    fn bad_configuration_is_refused_with_the_variable_named() {
        for (var, value) in [
            ("MM_WORLDS", "World1:3"),
            ("MM_WORLDS", "w:1"),
            ("MM_WORLDS", "w:3:0"),
            ("MM_WORLDS", "w:3,w:3"),
            ("MM_WORLDS", "w:3:5:9"),
            ("MM_WORLDS", " , "),
            ("MM_NAMESPACE", "a{b}"),
            ("MM_INSTANT_MATCH", "maybe"),
            ("REDIS_URL", "http://x"),
            ("REDIS_URL", "redis://a,redis://b"),
            ("MM_MAX_CONNECTIONS_PER_PLAYER", "0"),
            ("MM_WORLDS", "w:101"),
            ("MM_PRESENCE_TIMEOUT_SECS", "60"),
            ("MM_RULES", "{}"),
            ("MM_RULES_FILE", "/nonexistent/rules.json"),
        ] {
            let mut vars = vec![(var, value)];
            if var == "REDIS_URL" && value.contains(',') {
                vars.push(("REDIS_CLUSTER", "false"));
            }
            let err = settings(&vars).expect_err(value);
            assert_eq!(err.var, var, "{value}");
        }
    }

    #[test]
    fn several_urls_mean_cluster_mode() {
        let s = settings(&[("REDIS_URL", "redis://a:1,redis://b:2")]).unwrap();
        assert!(s.redis.cluster);
        assert_eq!(s.redis.urls.len(), 2);
    }
}
