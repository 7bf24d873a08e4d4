//! What happens to a match after it formed: the studio's allocator assigns a
//! server, the game server reports the result, ratings move. A match is
//! FORMED, then ASSIGNED, then FINISHED (a result may also come without an
//! assignment); see `lua/_lifecycle.lua` for how Redis keeps it.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use super::ids::{printable_excerpt, PlayerId};
use super::matching::MatchRecord;
use super::rating::RatingChange;
use crate::error::ValidationError;

mod assignment;
mod event;
mod report;

pub use assignment::{
    Assignment, PlayerAssignment, SeatAssignment, MAX_CONNECTION_CHARS, MAX_PROPERTIES_BYTES,
    MAX_TOKEN_CHARS,
};
pub use event::{AddedPlayer, EventPlayer, MatchEvent, MatchEventKind};
pub use report::{MatchReport, Placing};

/// Where a match stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum MatchState {
    /// Formed (or accepted, in a ready-check world); no server yet.
    Formed,
    /// A server is assigned: the game is on.
    Assigned,
    /// The result is in; the players are free again.
    Finished,
}

/// Compact JSON with every object's keys sorted. serde_json's map is a
/// BTreeMap unless its `preserve_order` feature is on (a test holds that),
/// so going through `Value` sorts the keys.
fn canonical<T: Serialize>(value: &T) -> String {
    serde_json::to_value(value)
        .map(|v| v.to_string())
        .unwrap_or_default()
}

/// Players a backfill added to a running match (one ticket: a player or a
/// party), as `lua/_backfill.lua` writes them.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Addition {
    pub players: Vec<PlayerId>,
    /// 1-based team.
    pub team: usize,
    /// Which fill of the match's backfills added them (1, 2, ...).
    pub fill: u32,
    /// The players who had left the match by then (the server did not list
    /// them in its backfill request): said by the first addition after a
    /// request.
    #[serde(default)]
    pub left: Vec<PlayerId>,
    /// Ticket data per player (`null`: none).
    pub data: Vec<serde_json::Value>,
    #[serde(default)]
    pub ratings: Option<Vec<f64>>,
    /// Latency per player in the match's region (worlds with regions).
    #[serde(default)]
    pub latencies: Option<Vec<u32>>,
    /// Attributes per player (worlds with attributes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attributes: Option<Vec<serde_json::Map<String, serde_json::Value>>>,
    /// The role per player (worlds with a quota rule; `None`: a player
    /// without a value who took a role no quota lists).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub roles: Option<Vec<Option<String>>>,
}

/// A match's lifecycle as the scripts report it (`lua/_lifecycle.lua`).
#[derive(Debug, Clone, PartialEq)]
pub struct MatchLifecycle {
    pub state: MatchState,
    /// When it entered that state (ms; 0 while FORMED).
    pub since_ms: u64,
    pub assignment: Option<Assignment>,
    pub report: Option<MatchReport>,
    /// The rating changes the result made, by player id.
    pub rating_changes: Option<BTreeMap<PlayerId, RatingChange>>,
    /// Players backfills added, in the order they came.
    pub additions: Vec<Addition>,
}

impl MatchLifecycle {
    pub const FORMED: MatchLifecycle = MatchLifecycle {
        state: MatchState::Formed,
        since_ms: 0,
        assignment: None,
        report: None,
        rating_changes: None,
        additions: Vec::new(),
    };

    /// Parses the script's five lines: `<state> <since>`, assignment,
    /// report, rating changes and additions (each JSON, "" while absent).
    pub fn parse(raw: &str) -> Result<Self, String> {
        if raw.is_empty() {
            return Ok(Self::FORMED);
        }
        let mut lines = raw.split('\n');
        let head = lines.next().unwrap_or_default();
        let (assignment, report, changes, additions) =
            match (lines.next(), lines.next(), lines.next(), lines.next()) {
                (Some(a), Some(r), Some(c), Some(x)) if lines.next().is_none() => (a, r, c, x),
                _ => return Err(format!("lifecycle of {} lines", raw.split('\n').count())),
            };
        let (state, since) = head
            .split_once(' ')
            .ok_or_else(|| format!("lifecycle head {head:?}"))?;
        let state = match state {
            "FORMED" => MatchState::Formed,
            "ASSIGNED" => MatchState::Assigned,
            "FINISHED" => MatchState::Finished,
            other => return Err(format!("lifecycle state {other:?}")),
        };
        fn optional<T: serde::de::DeserializeOwned>(
            what: &str,
            s: &str,
        ) -> Result<Option<T>, String> {
            if s.is_empty() {
                return Ok(None);
            }
            serde_json::from_str(s)
                .map(Some)
                .map_err(|e| format!("{what}: {e}"))
        }
        Ok(Self {
            state,
            since_ms: since
                .parse()
                .map_err(|_| format!("lifecycle since {since:?}"))?,
            assignment: optional("assignment", assignment)?,
            report: optional("result", report)?,
            rating_changes: optional("rating changes", changes)?,
            additions: optional("additions", additions)?.unwrap_or_default(),
        })
    }

    /// `record` with the players backfills added: participants, teams,
    /// ticket data, ratings, latencies and parties keep everyone the match
    /// has had; the spread and team difference are recomputed over the
    /// players it has now (those who left are out), the worst latency over
    /// everyone.
    pub fn merged(&self, mut record: MatchRecord) -> MatchRecord {
        if self.additions.is_empty() {
            return record;
        }
        let mut present: BTreeSet<&str> = record.participants.iter().map(|p| p.as_str()).collect();
        for a in &self.additions {
            for p in &a.left {
                present.remove(p.as_str());
            }
            present.extend(a.players.iter().map(|p| p.as_str()));
        }
        let present: BTreeSet<String> = present.into_iter().map(str::to_owned).collect();
        for a in &self.additions {
            record.participants.extend(a.players.iter().cloned());
            if let Some(team) = record
                .teams
                .as_mut()
                .and_then(|teams| teams.get_mut(a.team.saturating_sub(1)))
            {
                team.extend(a.players.iter().cloned());
            }
            for (j, p) in a.players.iter().enumerate() {
                if let Some(d) = a.data.get(j).filter(|d| !d.is_null()) {
                    record
                        .player_data
                        .get_or_insert_with(Default::default)
                        .insert(p.as_str().to_owned(), d.clone());
                }
                if let Some(r) = a.ratings.as_ref().and_then(|r| r.get(j)) {
                    if let Ok(r) = super::ids::Rating::new(*r) {
                        record
                            .ratings
                            .get_or_insert_with(Default::default)
                            .insert(p.as_str().to_owned(), r);
                    }
                }
                if let Some(role) = a
                    .roles
                    .as_ref()
                    .and_then(|r| r.get(j))
                    .and_then(Option::as_ref)
                {
                    record
                        .roles
                        .get_or_insert_with(Default::default)
                        .insert(p.as_str().to_owned(), role.clone());
                }
                if let Some(ms) = a.latencies.as_ref().and_then(|l| l.get(j)) {
                    record
                        .latencies
                        .get_or_insert_with(Default::default)
                        .insert(p.as_str().to_owned(), *ms);
                }
            }
            if a.players.len() > 1 {
                record
                    .parties
                    .get_or_insert_with(Vec::new)
                    .push(a.players.clone());
            }
        }
        if let Some(ratings) = &record.ratings {
            let values = ratings
                .iter()
                .filter(|(p, _)| present.contains(p.as_str()))
                .map(|(_, r)| r.value());
            let (lo, hi) = values.fold((f64::MAX, f64::MIN), |(lo, hi), v| (lo.min(v), hi.max(v)));
            record.spread = (lo <= hi).then_some(hi - lo);
            if let Some(teams) = &record.teams {
                let averages: Vec<f64> = teams
                    .iter()
                    .map(|t| {
                        t.iter()
                            .filter(|p| present.contains(p.as_str()))
                            .collect::<Vec<_>>()
                    })
                    .filter(|t| !t.is_empty())
                    .map(|t| {
                        t.iter()
                            .filter_map(|p| ratings.get(p.as_str()))
                            .map(|r| r.value())
                            .sum::<f64>()
                            / t.len() as f64
                    })
                    .collect();
                let (lo, hi) = averages
                    .iter()
                    .fold((f64::MAX, f64::MIN), |(lo, hi), v| (lo.min(*v), hi.max(*v)));
                record.team_difference = Some(hi - lo);
            }
        }
        if let Some(latencies) = &record.latencies {
            record.worst_latency = latencies.values().copied().max();
        }
        record
    }

    /// The fill that added `player`, if a backfill did.
    pub fn fill_of(&self, player: &PlayerId) -> Option<u32> {
        self.additions
            .iter()
            .find(|a| a.players.contains(player))
            .map(|a| a.fill)
    }

    /// What `player` sees of it.
    pub fn view_for(&self, player: &PlayerId) -> LifecycleView {
        LifecycleView {
            state: self.state,
            assignment: self.assignment.as_ref().map(|a| a.seat_of(player)),
            result: self.report.clone(),
            rating_changes: self.rating_changes.clone(),
        }
    }
}

/// A match's lifecycle as one participant sees it (their own token only),
/// flattened into the match in my-status and `GET .../matches/{id}`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LifecycleView {
    pub state: MatchState,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub assignment: Option<SeatAssignment>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result: Option<MatchReport>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rating_changes: Option<BTreeMap<PlayerId, RatingChange>>,
}

/// A match record with its lifecycle: what the store reads.
#[derive(Debug, Clone, PartialEq)]
pub struct MatchWithLifecycle {
    /// The record with the players backfills added (MatchLifecycle::merged).
    pub record: MatchRecord,
    pub lifecycle: MatchLifecycle,
}

/// A match record and its lifecycle as one participant sees them.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MatchView<'a> {
    #[serde(flatten)]
    pub record: &'a MatchRecord,
    #[serde(flatten)]
    pub lifecycle: LifecycleView,
}

/// Reads as its record: most callers want the match itself.
impl std::ops::Deref for MatchWithLifecycle {
    type Target = MatchRecord;

    fn deref(&self) -> &MatchRecord {
        &self.record
    }
}

impl MatchWithLifecycle {
    pub fn view_for(&self, player: &PlayerId) -> MatchView<'_> {
        MatchView {
            record: &self.record,
            lifecycle: self.lifecycle.view_for(player),
        }
    }
}

/// A running match's open backfill, as `lua/_backfill.lua` stores it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Backfill {
    #[serde(rename(serialize = "matchId"))]
    pub r#match: super::ids::MatchId,
    #[serde(rename(serialize = "worldType"))]
    pub world: super::ids::WorldName,
    /// When it was requested (Redis time, Unix ms): its wait counts from here.
    #[serde(rename(serialize = "createdAt"))]
    pub created: u64,
    /// When it lapses unless renewed (Unix ms).
    #[serde(rename(serialize = "expiresAt"))]
    pub expires: u64,
    /// Fills so far (over this match's backfills).
    pub fills: u32,
    /// Open seats per team.
    #[serde(rename(serialize = "openSeats"))]
    pub open: Vec<u32>,
    /// Players per team now.
    #[serde(rename(serialize = "players"))]
    pub counts: Vec<u32>,
    #[serde(default, skip_serializing)]
    pub sums: Option<Vec<f64>>,
    /// Rated worlds: the average rating of the match's players now, which
    /// new players' ratings are compared with.
    #[serde(
        default,
        rename(serialize = "referenceRating"),
        skip_serializing_if = "Option::is_none"
    )]
    pub r#ref: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub region: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(teams: Option<Vec<Vec<&str>>>, participants: &[&str]) -> MatchRecord {
        let mut json = serde_json::json!({
            "matchId": "1-a", "worldType": "w", "matchedAt": 1,
            "participants": participants,
        });
        if let Some(t) = teams {
            json["teams"] = serde_json::json!(t);
        }
        serde_json::from_value(json).unwrap()
    }

    #[test]
    fn canonical_json_sorts_keys_whatever_the_input_order() {
        let a: Assignment =
            serde_json::from_str(r#"{"properties":{"z":1,"a":{"y":2,"b":3}},"connection":"h:1"}"#)
                .unwrap();
        assert_eq!(
            a.canonical_json(),
            r#"{"connection":"h:1","properties":{"a":{"b":3,"y":2},"z":1}}"#
        );
    }

    #[test]
    fn a_player_sees_only_their_own_token() {
        let a: Assignment = serde_json::from_str(
            r#"{"connection":"h:1","players":{"a":{"token":"ta"},"b":{"token":"tb"}}}"#,
        )
        .unwrap();
        let seat = a.seat_of(&PlayerId::parse("a").unwrap());
        assert_eq!(seat.token.as_deref(), Some("ta"));
        let json = serde_json::to_string(&seat).unwrap();
        assert!(!json.contains("tb"), "{json}");
        assert_eq!(a.seat_of(&PlayerId::parse("c").unwrap()).token, None);
    }

    #[test]
    fn assignments_are_bounded() {
        let ok: Assignment = serde_json::from_str(r#"{"connection":"h:1"}"#).unwrap();
        assert!(ok.validate().is_ok());
        for bad in [
            r#"{"connection":""}"#.to_owned(),
            format!(r#"{{"connection":"{}"}}"#, "x".repeat(513)),
            r#"{"connection":"a\nb"}"#.to_owned(),
            format!(
                r#"{{"connection":"h","properties":{{"p":"{}"}}}}"#,
                "x".repeat(4096)
            ),
            r#"{"connection":"h","players":{"a":{"token":""}}}"#.to_owned(),
        ] {
            let a: Assignment = serde_json::from_str(&bad).unwrap();
            assert!(a.validate().is_err(), "{bad}");
        }
        assert!(serde_json::from_str::<Assignment>(r#"{"connection":"h","x":1}"#).is_err());
    }

    #[test]
    fn reports_must_cover_the_match_exactly() {
        let teams = record(
            Some(vec![vec!["a", "b"], vec!["c", "d"]]),
            &["a", "b", "c", "d"],
        );
        let ffa = record(None, &["a", "b", "c"]);
        let report = |json: &str| serde_json::from_str::<MatchReport>(json).unwrap();
        let placing = report(r#"{"teamRanks":[2,1]}"#)
            .placing(&teams)
            .unwrap()
            .unwrap();
        assert_eq!(placing.sides[1].1, 1);
        assert_eq!(placing.sides[0].0.len(), 2);
        assert!(
            report(r#"{"teamRanks":[1,1]}"#).placing(&teams).is_ok(),
            "a draw"
        );
        let ffa_ok = report(r#"{"playerRanks":{"a":1,"b":3,"c":2}}"#);
        assert_eq!(ffa_ok.placing(&ffa).unwrap().unwrap().sides.len(), 3);
        assert_eq!(
            report(r#"{"cancelled":true}"#).placing(&teams).unwrap(),
            None
        );
        for (bad, on) in [
            (r#"{"teamRanks":[1]}"#, &teams),
            (r#"{"teamRanks":[1,3]}"#, &teams),
            (r#"{"teamRanks":[0,1]}"#, &teams),
            (r#"{"playerRanks":{"a":1}}"#, &teams),
            (r#"{"teamRanks":[1,2]}"#, &ffa),
            (r#"{"playerRanks":{"a":1,"b":2}}"#, &ffa),
            (r#"{"playerRanks":{"a":1,"b":2,"c":3,"x":4}}"#, &ffa),
            (r#"{}"#, &ffa),
            (r#"{"cancelled":true,"teamRanks":[1,2]}"#, &teams),
        ] {
            assert!(report(bad).placing(on).is_err(), "{bad}");
        }
    }

    /// A place is an integer as JSON Schema counts integers: `2.0` is 2
    /// (what the API spec's `Rank` allows); fractions, negatives, values
    /// past u32, strings and null places are refused.
    #[test]
    fn places_are_integers_written_either_way() {
        let parse = |json: &str| serde_json::from_str::<MatchReport>(json);
        for (json, ranks) in [
            (r#"{"teamRanks":[2.0,1]}"#, vec![2, 1]),
            (r#"{"teamRanks":[1e0,2]}"#, vec![1, 2]),
            (r#"{"teamRanks":[4294967295,1]}"#, vec![u32::MAX, 1]),
        ] {
            assert_eq!(parse(json).unwrap().team_ranks, Some(ranks), "{json}");
        }
        let ffa = parse(r#"{"playerRanks":{"a":1.0,"b":2}}"#).unwrap();
        assert_eq!(
            ffa.player_ranks
                .unwrap()
                .values()
                .copied()
                .collect::<Vec<_>>(),
            [1, 2]
        );
        assert_eq!(parse(r#"{"teamRanks":null}"#).unwrap().team_ranks, None);
        for bad in [
            r#"{"teamRanks":[1.5,1]}"#,
            r#"{"teamRanks":[-1,1]}"#,
            r#"{"teamRanks":[-1.0,1]}"#,
            r#"{"teamRanks":[4294967296,1]}"#,
            r#"{"teamRanks":[4294967296.0,1]}"#,
            r#"{"teamRanks":["1",2]}"#,
            r#"{"teamRanks":[null,2]}"#,
            r#"{"playerRanks":{"a":0.5}}"#,
        ] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn additions_merge_into_the_record() {
        let mut base = record(Some(vec![vec!["a", "b"], vec!["c"]]), &["a", "b", "c"]);
        base.ratings = Some(
            [("a", 10.0), ("b", 20.0), ("c", 30.0)]
                .into_iter()
                .map(|(p, r)| (p.to_owned(), super::super::ids::Rating::new(r).unwrap()))
                .collect(),
        );
        let raw = "ASSIGNED 5\n{\"connection\":\"h\"}\n\n\n\
                   [{\"players\":[\"d\",\"e\"],\"team\":2,\"fill\":1,\"data\":[{\"x\":[]},null],\"ratings\":[40,50]}]";
        let life = MatchLifecycle::parse(raw).unwrap();
        let merged = life.merged(base);
        assert_eq!(merged.participants.len(), 5);
        assert_eq!(merged.teams.as_ref().unwrap()[1].len(), 3);
        assert_eq!(
            merged.player_data.as_ref().unwrap()["d"],
            serde_json::json!({"x": []})
        );
        assert!(!merged.player_data.as_ref().unwrap().contains_key("e"));
        assert_eq!(merged.spread, Some(40.0));
        assert_eq!(merged.team_difference, Some(25.0));
        assert_eq!(merged.parties.as_ref().unwrap().len(), 1);
        assert_eq!(life.fill_of(&PlayerId::parse("e").unwrap()), Some(1));
    }

    #[test]
    fn who_left_counts_in_neither_spread_nor_team_difference() {
        let mut base = record(
            Some(vec![vec!["a", "b"], vec!["c", "x"]]),
            &["a", "b", "c", "x"],
        );
        base.ratings = Some(
            [("a", 10.0), ("b", 20.0), ("c", 30.0), ("x", 500.0)]
                .into_iter()
                .map(|(p, r)| (p.to_owned(), super::super::ids::Rating::new(r).unwrap()))
                .collect(),
        );
        // x left; d took the seat, then the next request said nobody else left.
        let raw = "ASSIGNED 5\n{\"connection\":\"h\"}\n\n\n\
                   [{\"players\":[\"d\"],\"team\":2,\"fill\":1,\"left\":[\"x\"],\"data\":[null],\"ratings\":[40]}]";
        let merged = MatchLifecycle::parse(raw).unwrap().merged(base);
        assert_eq!(merged.participants.len(), 5, "the record keeps who left");
        assert_eq!(merged.spread, Some(30.0));
        // Team 1: a, b (15); team 2: c, d (35); x's 500 is out.
        assert_eq!(merged.team_difference, Some(20.0));
    }

    #[test]
    fn lifecycles_parse_from_the_scripts_lines() {
        assert_eq!(MatchLifecycle::parse("").unwrap(), MatchLifecycle::FORMED);
        let life = MatchLifecycle::parse("ASSIGNED 5\n{\"connection\":\"h:1\"}\n\n\n").unwrap();
        assert_eq!(life.state, MatchState::Assigned);
        assert_eq!(life.since_ms, 5);
        assert_eq!(life.assignment.unwrap().connection, "h:1");
        assert!(MatchLifecycle::parse("ASSIGNED 5\n\n\n").is_err());
        assert!(MatchLifecycle::parse("PLAYING 5\n\n\n\n").is_err());
    }
}
