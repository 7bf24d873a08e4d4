//! How a match ended, as its game server reports it.

use super::*;

/// How a match ended, as the game server reports it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct MatchReport {
    /// Matches with teams: each team's place, in the record's team order
    /// (1 = first; equal places are a draw).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::domain::integral::option_vec_u32"
    )]
    pub team_ranks: Option<Vec<u32>>,
    /// Matches without teams: every participant's place.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::domain::integral::option_map_u32"
    )]
    pub player_ranks: Option<BTreeMap<PlayerId, u32>>,
    /// The game did not take place (a crashed server, nobody came): the
    /// match finishes and no rating moves.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cancelled: bool,
}

/// The sides of a reported match, each with its players and place.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placing {
    pub sides: Vec<(Vec<PlayerId>, u32)>,
}

impl MatchReport {
    /// The sides and their places if this report fits `record` (teams
    /// ranked for a match with teams, every participant for one without;
    /// places 1..=sides), `None` for a cancelled game.
    pub fn placing(&self, record: &MatchRecord) -> Result<Option<Placing>, ValidationError> {
        let bad = |what: String| Err(ValidationError::BadResult(what));
        match (&self.team_ranks, &self.player_ranks, self.cancelled) {
            (None, None, true) => return Ok(None),
            (_, _, true) => return bad("a cancelled game has no ranks".into()),
            (Some(_), Some(_), _) => return bad("give teamRanks or playerRanks, not both".into()),
            (None, None, false) => {
                return bad("give teamRanks (teams) or playerRanks (no teams), or cancelled".into())
            }
            _ => {}
        }
        let sides: Vec<(Vec<PlayerId>, u32)> = match (&record.teams, &self.team_ranks) {
            (Some(teams), Some(ranks)) => {
                if ranks.len() != teams.len() {
                    return bad(format!(
                        "teamRanks: the match has {} teams, got {} ranks",
                        teams.len(),
                        ranks.len()
                    ));
                }
                teams.iter().cloned().zip(ranks.iter().copied()).collect()
            }
            (None, Some(_)) => {
                return bad("teamRanks: the match has no teams; use playerRanks".into())
            }
            (Some(_), None) => return bad("playerRanks: the match has teams; use teamRanks".into()),
            (None, None) => {
                let ranks = self
                    .player_ranks
                    .as_ref()
                    .map_or_else(BTreeMap::new, Clone::clone);
                if let Some(stranger) = ranks.keys().find(|p| !record.includes(p)) {
                    return bad(format!(
                        "playerRanks: {} is not in the match",
                        printable_excerpt(stranger.as_str())
                    ));
                }
                if let Some(missing) = record.participants.iter().find(|p| !ranks.contains_key(*p))
                {
                    return bad(format!(
                        "playerRanks: {} has no rank",
                        printable_excerpt(missing.as_str())
                    ));
                }
                record
                    .participants
                    .iter()
                    .map(|p| (vec![p.clone()], ranks[p]))
                    .collect()
            }
        };
        let most = u32::try_from(sides.len()).unwrap_or(u32::MAX);
        if let Some((_, rank)) = sides.iter().find(|(_, r)| !(1..=most).contains(r)) {
            return bad(format!("ranks must be 1..={most} (1 = first), got {rank}"));
        }
        Ok(Some(Placing { sides }))
    }

    pub fn canonical_json(&self) -> String {
        canonical(self)
    }
}
