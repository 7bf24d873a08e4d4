//! Configuration from environment variables, validated once at cold start.
//! Worlds are configuration, not code: a JSON rule set (`MM_RULES` or
//! `MM_RULES_FILE`, see [`rules`]), or the FIFO shorthand
//! `MM_WORLDS="world1:3,world2:5:300"` (name:team_size[:ticket_ttl_secs]).

pub mod attributes;
pub mod doc_table;
pub mod match_rules;
pub mod rules;
mod world;

pub use attributes::{AttributeCatalog, AttributeDecl, AttributeSource, AttributeType, Missing};
pub use match_rules::{
    CompareOp, ListAggregate, MatchRule, NumberAggregate, Relax, RoleQuota, RuleKind, RuleValue,
};
pub use world::{
    BackfillBalance, BalanceRules, MatchMode, PartyRating, RatingRules, RatingSettings, ReadyCheck,
    RegionRules, World, WorldCatalog, DEFAULT_CANDIDATE_WINDOW, MAX_CANDIDATE_WINDOW,
    MAX_QUEUE_GROUP_WORLDS,
};

use std::time::Duration;

/// The scopes of the admin routes (rule set `admin.readScope`,
/// `admin.actionScope`): reading queues, matches, players and the audit,
/// and acting on them (removing tickets, cancelling proposals, finishing
/// and voiding matches). Separate, so a support tool may look without
/// being able to act.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AdminScopes {
    pub read: Option<String>,
    pub action: Option<String>,
}

use crate::domain::check_name;
use crate::error::ConfigError;

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
    /// Run operations as Redis functions (`FUNCTION LOAD` once, `FCALL`),
    /// falling back to EVALSHA when the server refuses them; off: EVALSHA
    /// only.
    pub functions: bool,
    /// Durability: how many replicas must have a write before anything it
    /// decided is answered or pushed (`MM_REPLICA_ACKS`, see
    /// [`ReplicaAcks`] and docs/hardening-faults.md#failover).
    pub replica_acks: ReplicaAcks,
    /// The longest one wait for replica acknowledgements may take
    /// (`MM_REPLICA_ACK_TIMEOUT_MS`); it is part of the call's
    /// `command_timeout`, never added to it.
    pub replica_ack_timeout: Duration,
}

/// `MM_REPLICA_ACKS`: whether a write that decides something a client is
/// told (a match formed, a ticket queued, a proposal accepted, an
/// assignment or result recorded, a backfill filled, a push claimed) waits
/// for replica acknowledgements (`WAIT`) before its answer or push.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReplicaAcks {
    /// `off` or `0`: never wait (asynchronous replication only).
    Off,
    /// `auto` (the default): one acknowledgement once the namespace's
    /// primary has been seen with a replica (`INFO replication`), none on a
    /// server that never had one (a standalone development server).
    Auto,
    /// A number: exactly this many acknowledgements, always.
    Require(u32),
}

impl ReplicaAcks {
    fn parse(value: Option<&str>) -> Result<Self, ConfigError> {
        let bad = |v: &str| ConfigError {
            var: "MM_REPLICA_ACKS",
            reason: format!("expected auto, off or a number of replicas 0..=5, got {v:?}"),
        };
        match value.map(str::to_ascii_lowercase).as_deref() {
            None | Some("auto") => Ok(Self::Auto),
            Some("off" | "0" | "false" | "no") => Ok(Self::Off),
            Some(v) => match v.parse::<u32>() {
                Ok(n @ 1..=5) => Ok(Self::Require(n)),
                _ => Err(bad(v)),
            },
        }
    }
}

/// Players' avoid lists (rule set `blockLists`, docs/rules.md "Block
/// lists"): written by the server scope, kept in every world.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlockLists {
    /// The most players one avoid list may hold.
    pub max_entries: usize,
}

impl BlockLists {
    /// `maxEntries` unless the rule set says otherwise (FlexMatch's recipe
    /// allows 100 ids in a list attribute).
    pub const DEFAULT_MAX_ENTRIES: usize = 100;
    /// The largest `maxEntries`: bounds a write's work (two pair updates
    /// per id) and a match's check (pairs of listed players only).
    pub const MAX_ENTRIES: usize = 1000;
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
    /// How long a match's record is kept from its assignment on: the
    /// longest a game may last (its players may not queue again meanwhile,
    /// unless its result comes first).
    pub game_ttl: Duration,
    /// The scope (or claim) a game server's or allocator's token carries
    /// (rule set `servers.scope`): assignments and results. `None`: nobody
    /// may post them.
    pub server_scope: Option<String>,
    /// The operator's scopes (rule set `admin`); none: nobody may use the
    /// admin routes.
    pub admin: AdminScopes,
    /// The declared player attributes (rule set `attributes`; empty with
    /// the `MM_WORLDS` shorthand).
    pub attributes: AttributeCatalog,
    /// The scope (or claim) a caller's token must carry to write players'
    /// trusted attributes (rule set `attributeStore.writerScope`); `None`:
    /// nobody may (trusted attributes take their defaults).
    pub attribute_writer_scope: Option<String>,
    /// Players' avoid lists (rule set `blockLists`); `None`: off, and no
    /// call carries their keys.
    pub block_lists: Option<BlockLists>,
    /// How long a backfill stays open without its server renewing it.
    pub backfill_keepalive: Duration,
    /// Send one match event per durable match to the studio's allocator
    /// (`MM_MATCH_EVENTS`; the matcher publishes them).
    pub match_events: bool,
    /// The matcher ends its invocation when nothing is to be done
    /// (`MM_MATCHER_SLEEP`): only where every function that makes work can
    /// wake it (docs/websocket-and-matcher.md, "The sleeping matcher").
    pub matcher_sleep: bool,
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
        let (worlds, ratings, access) =
            match (get("MM_RULES"), get("MM_RULES_FILE"), get("MM_WORLDS")) {
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
                    rules::Access {
                        server_scope: None,
                        admin: AdminScopes::default(),
                        attributes: AttributeCatalog::default(),
                        attribute_writer_scope: None,
                        block_lists: None,
                    },
                ),
            };
        let rules::Access {
            server_scope,
            admin,
            attributes,
            attribute_writer_scope,
            block_lists,
        } = access;
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
            game_ttl: secs("MM_GAME_TTL_SECS", 3600, 1)?,
            backfill_keepalive: secs("MM_BACKFILL_KEEPALIVE_SECS", 15, 1)?,
            server_scope,
            admin,
            attributes,
            attribute_writer_scope,
            block_lists,
            match_events: flag("MM_MATCH_EVENTS", false)?,
            matcher_sleep: flag("MM_MATCHER_SLEEP", false)?,
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
                functions: flag("REDIS_FUNCTIONS", true)?,
                replica_acks: ReplicaAcks::parse(get("MM_REPLICA_ACKS").as_deref())?,
                replica_ack_timeout: millis("MM_REPLICA_ACK_TIMEOUT_MS", 250)?,
            },
        })
    }
}

#[cfg(test)]
mod tests;
