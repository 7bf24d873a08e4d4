//! The events a durable match sends the studio's allocator.

use super::*;

/// The event a durable match sends the studio's allocator (EventBridge
/// detail-type [`MatchEvent::DETAIL_TYPE`]): who plays, in which teams,
/// with their ticket data, ratings and latencies, and where.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct MatchEvent {
    /// Which event: its EventBridge `DetailType` (not in the detail).
    #[serde(skip)]
    pub kind: MatchEventKind,
    pub match_id: crate::domain::ids::MatchId,
    pub world_type: crate::domain::ids::WorldName,
    /// Redis server time the match formed (Unix ms).
    pub matched_at: u64,
    /// The teams (one for a world without teams), each player once.
    pub teams: Vec<Vec<EventPlayer>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub region: Option<String>,
    /// The parties among the players (each within one team).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parties: Option<Vec<Vec<PlayerId>>>,
    /// BackfillFilled: which fill, and the players it seated, each with
    /// their 1-based team.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fill: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub added: Option<Vec<AddedPlayer>>,
    /// Worlds with match rules: each rule as it stood when the match
    /// formed, the anchor and its wait (as in the record).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rules: Option<Vec<crate::domain::matching::RuleOutcome>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub anchor: Option<PlayerId>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub anchor_wait_ms: Option<u64>,
}

/// The kinds of match events (EventBridge `DetailType`s).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MatchEventKind {
    /// A match is durable (formed, or accepted in a ready-check world).
    #[default]
    Formed,
    /// A backfill seated players in a running match (`teams` has them).
    BackfillFilled,
    /// A backfill lapsed: its server stopped renewing it.
    BackfillExpired,
}

impl MatchEventKind {
    pub const fn detail_type(self) -> &'static str {
        match self {
            MatchEventKind::Formed => "MatchFormed",
            MatchEventKind::BackfillFilled => "BackfillFilled",
            MatchEventKind::BackfillExpired => "BackfillExpired",
        }
    }
}

/// A player a backfill seated, in a [`MatchEvent`].
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AddedPlayer {
    pub player_id: PlayerId,
    /// 1-based.
    pub team: usize,
}

/// One player of a [`MatchEvent`].
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct EventPlayer {
    pub player_id: PlayerId,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rating: Option<crate::domain::ids::Rating>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data: Option<serde_json::Value>,
    /// Worlds with regions: the player's latency to the match's region (ms).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub latency_ms: Option<u32>,
    /// Worlds with attributes: the player's attribute values.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub attributes: Option<serde_json::Map<String, serde_json::Value>>,
}

impl MatchEvent {
    /// EventBridge's `DetailType` of the event of a formed match.
    pub const DETAIL_TYPE: &'static str = MatchEventKind::Formed.detail_type();

    /// This event's EventBridge `DetailType`.
    pub fn detail_type(&self) -> &'static str {
        self.kind.detail_type()
    }

    /// A backfill's event for a match (`record` with its additions): the
    /// players fill `fill` seated, or (`None`) the backfill lapsed.
    pub fn of_backfill(
        record: &MatchRecord,
        lifecycle: &MatchLifecycle,
        fill: Option<u32>,
    ) -> Self {
        let mut event = Self::of(record);
        match fill {
            Some(n) => {
                event.kind = MatchEventKind::BackfillFilled;
                event.fill = Some(n);
                event.added = Some(
                    lifecycle
                        .additions
                        .iter()
                        .filter(|a| a.fill == n)
                        .flat_map(|a| {
                            a.players.iter().map(|p| AddedPlayer {
                                player_id: p.clone(),
                                team: a.team,
                            })
                        })
                        .collect(),
                );
            }
            None => event.kind = MatchEventKind::BackfillExpired,
        }
        event
    }

    pub fn of(record: &MatchRecord) -> Self {
        let player = |p: &PlayerId| EventPlayer {
            player_id: p.clone(),
            rating: record
                .ratings
                .as_ref()
                .and_then(|r| r.get(p.as_str()))
                .copied(),
            data: record
                .player_data
                .as_ref()
                .and_then(|d| d.get(p.as_str()))
                .cloned(),
            latency_ms: record
                .latencies
                .as_ref()
                .and_then(|l| l.get(p.as_str()))
                .copied(),
            attributes: record
                .attributes
                .as_ref()
                .and_then(|a| a.get(p.as_str()))
                .cloned(),
        };
        let teams = match &record.teams {
            Some(teams) => teams
                .iter()
                .map(|t| t.iter().map(player).collect())
                .collect(),
            None => vec![record.participants.iter().map(player).collect()],
        };
        Self {
            kind: MatchEventKind::Formed,
            match_id: record.match_id.clone(),
            world_type: record.world_type.clone(),
            matched_at: record.matched_at,
            teams,
            region: record.region.clone(),
            parties: record.parties.clone(),
            fill: None,
            added: None,
            rules: record.rules.as_deref().cloned(),
            anchor: record.anchor.clone(),
            anchor_wait_ms: record.anchor_wait_ms,
        }
    }

    pub fn to_json(&self) -> String {
        // Plain structs of strings, numbers and JSON values always serialize.
        serde_json::to_string(self).unwrap_or_default()
    }
}
