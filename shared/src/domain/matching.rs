//! Match records and the typed outcomes of the queue operations.

use serde::{Deserialize, Serialize};

use super::ids::{MatchId, PlayerId, Rating, WorldName};
use super::party::PartyView;

/// A formed match, exactly as it is stored in Redis and sent to players.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MatchRecord {
    pub match_id: MatchId,
    pub world_type: WorldName,
    /// Players in queue order (oldest ticket first); with teams, team by
    /// team (each in queue order).
    pub participants: Vec<PlayerId>,
    /// Redis server time when the match was formed, in Unix milliseconds.
    pub matched_at: u64,
    /// Ticket data of the participants that attached some, by player id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub player_data: Option<serde_json::Map<String, serde_json::Value>>,
    /// Rated worlds: every participant's rating, by player id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ratings: Option<std::collections::BTreeMap<String, Rating>>,
    /// Rated worlds: the highest rating minus the lowest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spread: Option<f64>,
    /// Worlds with teams: who plays in which team (participants lists them
    /// team by team).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub teams: Option<Vec<Vec<PlayerId>>>,
    /// Rated worlds with teams: the highest team average minus the lowest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub team_difference: Option<f64>,
    /// The parties among the participants (each always in one team).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parties: Option<Vec<Vec<PlayerId>>>,
    /// Worlds with regions: the region the match plays in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub region: Option<String>,
    /// Worlds with regions: each participant's latency there (ms, as they
    /// measured it), by player id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latencies: Option<std::collections::BTreeMap<String, u32>>,
    /// Worlds with regions: the highest of those latencies.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worst_latency: Option<u32>,
    /// Worlds with attributes: each participant's attribute values (those
    /// with any), by player id, then by attribute name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attributes: Option<Box<PlayerAttributes>>,
    /// Worlds with match rules: each rule as it stood when the match formed
    /// (top-level rules and their operands, in the rule set's order).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rules: Option<Box<Vec<RuleOutcome>>>,
    /// Worlds with attributes: the first player of the ticket the match was
    /// formed around, whose wait decided the rules in force.
    /// Worlds with a quota rule: the role each player took, by player id
    /// (a player without a value who took a role no quota lists has none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub roles: Option<Box<std::collections::BTreeMap<String, String>>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub anchor: Option<PlayerId>,
    /// Worlds with attributes: how long the anchor had waited (ms).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub anchor_wait_ms: Option<u64>,
}

/// Attribute values by player id, then by attribute name.
pub type PlayerAttributes =
    std::collections::BTreeMap<String, serde_json::Map<String, serde_json::Value>>;

/// A match rule as it stood when a match formed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RuleOutcome {
    pub name: String,
    /// Whether the rule applied (false: relaxed away at the anchor's wait).
    pub in_force: bool,
    /// The rule's number in force (a distance, a count, a reference).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<serde_json::Value>,
    /// Intersection rules: the values every ticket shared (sorted).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shared: Option<Vec<String>>,
    /// `and` / `or` compounds: the operands that held.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub held: Option<Vec<String>>,
}

impl MatchRecord {
    pub fn includes(&self, player: &PlayerId) -> bool {
        self.participants.contains(player)
    }
}

/// Where a ticket stands in its queue.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct QueuePosition {
    pub world_type: WorldName,
    /// 1-based, counted from the front (the next to be matched is 1).
    pub position: u64,
    pub queue_size: u64,
    /// `None` while there is no recent match history to estimate from.
    pub estimated_wait_seconds: Option<u64>,
    /// Rated worlds: the ticket's rating and its current window.
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub rated: Option<RatedTicket>,
    /// The party the ticket belongs to, if it is a party's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub party: Option<PartyView>,
    /// The other worlds of its queueGroup the ticket waits in too (the
    /// first match in any of them takes it from all); empty for a ticket
    /// of one world.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub also_queued_in: Vec<WorldName>,
}

/// A waiting ticket of a rated world: its rating, and the window its
/// matches may come from right now.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RatedTicket {
    pub rating: Rating,
    /// How far from `rating` its match may be now; `None` once relaxed (no
    /// limit).
    pub rating_window: Option<f64>,
    /// Seconds until the limit is dropped (0 once relaxed).
    pub relaxes_in_seconds: u64,
}

/// A world's queue as seen by `queue-status`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct QueueStatus {
    pub world_type: WorldName,
    pub waiting: u64,
    pub team_size: u32,
    pub teams: u32,
    /// Estimated wait of a player joining now; `None` without recent history.
    pub estimated_wait_seconds: Option<u64>,
    /// How long the ticket at the front has waited, in milliseconds.
    pub oldest_wait_ms: u64,
    /// Rated worlds with waiting tickets: how their ratings are spread.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ratings: Option<RatingDistribution>,
    /// Worlds with regions: the waiting tickets that can play in each region
    /// (within the latency cap there), by region; a ticket counts in every
    /// region it can play in.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub regions: Option<std::collections::BTreeMap<String, u64>>,
    /// Running matches' backfills with open seats (they are served before
    /// new matches; not counted in `waiting`).
    pub open_backfills: u64,
}

/// The waiting tickets' ratings in equal-width buckets from the lowest to
/// the highest.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RatingDistribution {
    pub lowest: Rating,
    pub highest: Rating,
    pub buckets: Vec<RatingBucket>,
}

/// Tickets rated in `[from, to]` (`from` excluded but for the first bucket).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RatingBucket {
    pub from: f64,
    pub to: f64,
    pub count: u64,
}

/// Recent match throughput of a world, as the scripts report it: how many
/// players were matched within the statistics window, over what span.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct WaitStats {
    pub players_matched: u64,
    pub span_ms: u64,
}

/// Longest estimate ever reported; anything longer means "very long".
const MAX_ESTIMATE_SECS: u64 = 24 * 3600;

impl WaitStats {
    /// Estimated seconds until the ticket at `position` is matched: the players
    /// that must be matched up to and including its group, divided by the
    /// recent rate of matched players. Replaces the seed's constant
    /// `ceil(size/3)*30`, which ignored how fast the world actually matches.
    pub fn estimate(&self, position: u64, team_size: u32) -> Option<u64> {
        if self.players_matched == 0 || position == 0 {
            return None;
        }
        let team = u64::from(team_size.max(1));
        let needed = position.div_ceil(team) * team;
        // A span under a second would overstate the rate of a single burst.
        let span_ms = self.span_ms.max(1000);
        let secs = (needed as u128 * span_ms as u128).div_ceil(self.players_matched as u128 * 1000);
        Some(
            u64::try_from(secs)
                .unwrap_or(MAX_ESTIMATE_SECS)
                .min(MAX_ESTIMATE_SECS),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wait_estimate_scales_with_position_and_rate() {
        let stats = WaitStats {
            players_matched: 30,
            span_ms: 60_000,
        }; // 0.5 player/s
        assert_eq!(stats.estimate(1, 3), Some(6)); // group of 3 at 0.5/s
        assert_eq!(stats.estimate(4, 3), Some(12));
        assert_eq!(WaitStats::default().estimate(1, 3), None);
        let burst = WaitStats {
            players_matched: 3,
            span_ms: 0,
        };
        assert_eq!(burst.estimate(3, 3), Some(1));
    }

    #[test]
    fn match_records_refuse_invalid_ids() {
        let ok = r#"{"matchId":"1-a","worldType":"w","participants":["a"],"matchedAt":1,"ratings":{"a":1500.5},"spread":0}"#;
        assert!(serde_json::from_str::<MatchRecord>(ok).is_ok());
        let bad = r#"{"matchId":"1-a","worldType":"W","participants":["a"],"matchedAt":1}"#;
        assert!(serde_json::from_str::<MatchRecord>(bad).is_err());
    }
}
