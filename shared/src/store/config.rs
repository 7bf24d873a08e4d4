//! A world's configuration as the scripts take it (`lua/_config.lua`): one
//! JSON argument with named fields instead of ~20 positional ones, built
//! once per world when the store is built and decoded once per loaded
//! function library.

use std::borrow::Cow;
use std::collections::HashMap;
use std::time::Duration;

use serde::Serialize;

use super::millis;
use super::outbox_claim::{CLAIM_LEASE, YOUNG_CONNECTION};
use crate::config::{BalanceRules, Settings, World};
use crate::domain::WorldName;

mod match_rules;

use match_rules::{ScriptAttribute, ScriptRule};

/// Every configured world's configuration string, by name.
pub(super) struct WorldConfigs(HashMap<WorldName, String>);

impl WorldConfigs {
    pub(super) fn new(settings: &Settings) -> Self {
        Self(
            settings
                .worlds
                .iter()
                .map(|w| (w.name.clone(), encode(settings, w)))
                .collect(),
        )
    }

    /// `world`'s configuration, `None` when no world of its name is
    /// configured: built at start for the configured worlds (the configured
    /// world itself is recognised by address, without comparing); a world
    /// given from elsewhere that differs from the configured one of its
    /// name is encoded on the spot.
    pub(super) fn get<'a>(&'a self, settings: &Settings, world: &World) -> Option<Cow<'a, str>> {
        let configured = settings.worlds.get(&world.name)?;
        let encoded = self.0.get(&world.name)?;
        if std::ptr::eq(configured, world) || configured == world {
            Some(Cow::Borrowed(encoded))
        } else {
            Some(Cow::Owned(encode(settings, world)))
        }
    }
}

/// The fields `_config.lua` reads (all times in ms).
#[derive(Serialize)]
struct ScriptConfig<'a> {
    seats: u32,
    teams: u32,
    ticket_ttl: u64,
    match_ttl: u64,
    instant: bool,
    capacity: u64,
    window: u64,
    presence: bool,
    /// Game servers are configured (`servers.scope`): a formed match holds
    /// its players, as an assigned one does, until its result or its
    /// record's end (one unfinished match per player).
    formed_holds: bool,
    max_party: u32,
    party_ttl: u64,
    ratings: Ratings,
    party_rating: &'a str,
    /// How a call that formed matches claims their outbox entries for
    /// delivery right away (`crate::delivery`'s lease and young connections).
    claim: Claim,
    #[serde(skip_serializing_if = "Option::is_none")]
    rating: Option<Rated>,
    #[serde(skip_serializing_if = "Option::is_none")]
    ready_check: Option<ReadyCheck>,
    #[serde(skip_serializing_if = "Option::is_none")]
    regions: Option<Regions<'a>>,
    /// The world's player attributes, in declaration order (absent: none).
    #[serde(skip_serializing_if = "Option::is_none")]
    attributes: Option<Vec<ScriptAttribute<'a>>>,
    /// The world's match rules, in document order (absent: none).
    #[serde(skip_serializing_if = "Option::is_none")]
    match_rules: Option<Vec<ScriptRule<'a>>>,
    /// Worlds with attributes (matched around anchors): how long a failed
    /// anchor waits before it is tried again.
    #[serde(skip_serializing_if = "Option::is_none")]
    retry_ms: Option<u64>,
    /// Worlds with match rules and a `candidateWindow` of their own.
    #[serde(skip_serializing_if = "Option::is_none")]
    candidate_window: Option<u32>,
    /// Worlds of a `queueGroup`: the group's worlds (this one among them),
    /// whose keys every call of the world carries (a ticket leaves all).
    #[serde(skip_serializing_if = "Option::is_none")]
    group: Option<Vec<&'a str>>,
}

#[derive(Serialize)]
struct Regions<'a> {
    names: &'a [String],
    max_latency: f64,
    widen_per_second: f64,
    latency_cap: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_spread: Option<f64>,
    retry_ms: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    default_region: Option<&'a str>,
}

#[derive(Serialize)]
struct Claim {
    lease_ms: u64,
    young_ms: u64,
}

#[derive(Serialize)]
struct Ratings {
    min: f64,
    max: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    default: Option<f64>,
}

#[derive(Serialize)]
struct Rated {
    base: f64,
    per_sec: f64,
    max: f64,
    relax_ms: u64,
    retry_ms: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    balance: Option<Window>,
    #[serde(skip_serializing_if = "Option::is_none")]
    backfill_balance: Option<Window>,
}

#[derive(Serialize)]
struct Window {
    base: f64,
    per_sec: f64,
    max: f64,
    /// backfill_balance only: when it is lifted (absent: never).
    #[serde(skip_serializing_if = "Option::is_none")]
    relax_ms: Option<u64>,
}

impl Window {
    fn of(b: &BalanceRules, relax_after: Option<Duration>) -> Self {
        Window {
            base: b.base_window,
            per_sec: b.widen_per_second,
            max: b.max_window,
            relax_ms: relax_after.map(|r| millis(r).max(1)),
        }
    }
}

#[derive(Serialize)]
struct ReadyCheck {
    accept_ms: u64,
    cooldown_ms: u64,
}

fn encode(settings: &Settings, world: &World) -> String {
    let ratings = &settings.ratings;
    let config = ScriptConfig {
        seats: world.seats(),
        teams: world.teams,
        ticket_ttl: millis(world.ticket_ttl),
        match_ttl: millis(settings.match_ttl),
        instant: settings.instant_match,
        capacity: settings.queue_capacity,
        window: millis(settings.wait_window),
        presence: world.require_presence,
        formed_holds: settings.server_scope.is_some(),
        max_party: world.max_party_size,
        party_ttl: millis(settings.party_ttl).max(1),
        ratings: Ratings {
            min: ratings.min,
            max: ratings.max,
            default: ratings.default,
        },
        party_rating: world.party_rating.as_str(),
        claim: Claim {
            lease_ms: millis(CLAIM_LEASE).max(1),
            young_ms: millis(YOUNG_CONNECTION),
        },
        rating: world.rating().map(|r| Rated {
            base: r.base_window,
            per_sec: r.widen_per_second,
            max: r.max_window,
            relax_ms: millis(r.relax_after),
            retry_ms: millis(r.retry).max(1),
            balance: r.balance.as_ref().map(|b| Window::of(b, None)),
            backfill_balance: r
                .backfill_balance
                .as_ref()
                .map(|b| Window::of(&b.window, b.relax_after)),
        }),
        ready_check: world.ready_check.map(|r| ReadyCheck {
            accept_ms: millis(r.accept_within).max(1),
            cooldown_ms: millis(r.decline_cooldown),
        }),
        regions: world.regions.as_ref().map(|r| Regions {
            names: &r.names,
            max_latency: r.max_latency_ms,
            widen_per_second: r.widen_per_second,
            latency_cap: r.latency_cap_ms,
            max_spread: r.max_spread_ms,
            retry_ms: millis(crate::config::rules::ANCHOR_RETRY),
            default_region: r.default_region.as_deref(),
        }),
        attributes: match_rules::attributes(&settings.attributes, world),
        match_rules: match_rules::rules(&settings.attributes, world),
        retry_ms: (!world.attributes.is_empty())
            .then(|| millis(crate::config::rules::ANCHOR_RETRY).max(1)),
        candidate_window: (world.candidate_window != crate::config::DEFAULT_CANDIDATE_WINDOW)
            .then_some(world.candidate_window),
        group: world.queue_group.as_ref().map(|_| {
            settings
                .worlds
                .group(world)
                .iter()
                .map(|w| w.name.as_str())
                .collect()
        }),
    };
    // Serializing plain numbers, strings and booleans cannot fail.
    serde_json::to_string(&config).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{MatchMode, RatingRules};

    fn settings(worlds: &str) -> Settings {
        Settings::from_lookup(|var| match var {
            "MM_WORLDS" => Some(worlds.to_string()),
            _ => None,
        })
        .unwrap()
    }

    #[test]
    fn a_fifo_world_has_named_fields_and_no_rated_section() {
        let s = settings("world1:3");
        let w = s.worlds.get("world1").unwrap();
        let configs = WorldConfigs::new(&s);
        let encoded = configs.get(&s, w).unwrap();
        let v: serde_json::Value = serde_json::from_str(&encoded).unwrap();
        assert_eq!(v["seats"], 3);
        assert_eq!(v["teams"], 1);
        assert_eq!(v["instant"], true);
        assert_eq!(v["party_rating"], "average");
        assert!(v.get("rating").is_none(), "{encoded}");
        assert!(v.get("ready_check").is_none(), "{encoded}");
    }

    #[test]
    fn a_world_that_is_not_the_configured_one_is_encoded_on_the_spot() {
        let s = settings("world1:3");
        let configs = WorldConfigs::new(&s);
        let mut w = s.worlds.get("world1").unwrap().clone();
        w.mode = MatchMode::Rating(RatingRules {
            base_window: 50.0,
            widen_per_second: 2.5,
            max_window: 400.0,
            relax_after: Duration::from_secs(60),
            retry: Duration::from_secs(1),
            anchors_per_call: 50,
            balance: None,
            backfill_balance: None,
            updates: None,
        });
        let encoded = configs.get(&s, &w).unwrap();
        let v: serde_json::Value = serde_json::from_str(&encoded).unwrap();
        assert_eq!(
            v["rating"],
            serde_json::json!({"base": 50.0, "per_sec": 2.5, "max": 400.0, "relax_ms": 60000, "retry_ms": 1000})
        );
        let balance = crate::config::BalanceRules {
            base_window: 2.0,
            widen_per_second: 0.5,
            max_window: 10.0,
        };
        let MatchMode::Rating(rules) = &mut w.mode else {
            unreachable!("set above")
        };
        rules.balance = Some(balance.clone());
        rules.backfill_balance = Some(crate::config::BackfillBalance {
            window: balance,
            relax_after: Some(Duration::from_secs(90)),
        });
        let v: serde_json::Value = serde_json::from_str(&configs.get(&s, &w).unwrap()).unwrap();
        let window = serde_json::json!({"base": 2.0, "per_sec": 0.5, "max": 10.0});
        assert_eq!(
            v["rating"]["balance"], window,
            "inherits the rating relaxation"
        );
        let mut own = window;
        own["relax_ms"] = 90_000.into();
        assert_eq!(v["rating"]["backfill_balance"], own);
    }
}
