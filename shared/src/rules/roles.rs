//! The rules a match record's teams and roles decide, checked against
//! them: a quota rule (each player took a role they offered, and every
//! team, or the match, holds each listed role within its bounds) and a
//! total rule per team (each team's sum within its bounds).

use std::collections::BTreeMap;

use crate::config::{MatchRule, RuleKind};
use crate::domain::{AttributeValue, MatchRecord, PlayerId, TicketAttributes};

/// `Ok` for a rule that is not a quota; for a quota rule, whether the
/// record's `roles` (and `teams`, per team) meet it. `players`: each
/// player's attributes as the record shows them.
pub(super) fn check_roles(
    rule: &MatchRule,
    record: &MatchRecord,
    players: &BTreeMap<&str, TicketAttributes>,
) -> Result<(), String> {
    if let RuleKind::Total {
        attribute,
        per_team: true,
        min,
        max,
    } = &rule.kind
    {
        return check_team_totals(record, players, attribute, (*min, *max));
    }
    let RuleKind::Quota {
        attribute,
        per_team,
        quotas,
    } = &rule.kind
    else {
        return Ok(());
    };
    let roles = record
        .roles
        .as_deref()
        .ok_or("the world has a quota rule, yet the record has no roles")?;
    for (player, role) in roles {
        if !record.participants.iter().any(|p| p.as_str() == player) {
            return Err(format!("roles: {player:?} is not a participant"));
        }
        let offered = match players.get(player.as_str()).and_then(|a| a.get(attribute)) {
            None => true,
            Some(AttributeValue::Str(s)) => s == role,
            Some(AttributeValue::List(list)) => list.contains(role),
            Some(other) => return Err(format!("{player:?}'s {attribute:?} is {other:?}")),
        };
        if !offered {
            return Err(format!(
                "{player:?} plays {role:?}, which they did not offer"
            ));
        }
    }
    // A player with a value takes a role; one without may take a role no
    // quota lists, which the record leaves out.
    for p in &record.participants {
        let has_value = players
            .get(p.as_str())
            .is_some_and(|a| a.get(attribute).is_some());
        if has_value && !roles.contains_key(p.as_str()) {
            return Err(format!("{:?} has no role", p.as_str()));
        }
    }
    let groups = bounded_groups(record, *per_team);
    for (t, group) in groups.iter().enumerate() {
        for q in quotas {
            let n = group
                .iter()
                .filter(|p| roles.get(p.as_str()) == Some(&q.value))
                .count() as u32;
            // Per team with one team, per match: the bounds as declared.
            let (min, max) = (q.min, q.max);
            if n < min || n > max {
                return Err(format!(
                    "{} has {n} players of {:?}, outside {min}..={max}",
                    if groups.len() > 1 {
                        format!("team {}", t + 1)
                    } else {
                        "the match".to_owned()
                    },
                    q.value
                ));
            }
        }
    }
    Ok(())
}

/// Each team's sum of `attribute` (0 for a player without a value) within
/// `bounds` (one team: the match's).
fn check_team_totals(
    record: &MatchRecord,
    players: &BTreeMap<&str, TicketAttributes>,
    attribute: &str,
    (min, max): (Option<f64>, Option<f64>),
) -> Result<(), String> {
    for (t, team) in bounded_groups(record, true).iter().enumerate() {
        let sum: f64 = team
            .iter()
            .filter_map(|p| match players.get(p.as_str())?.get(attribute)? {
                AttributeValue::Num(x) => Some(*x),
                _ => None,
            })
            .sum();
        if min.is_some_and(|lo| sum < lo) || max.is_some_and(|hi| sum > hi) {
            return Err(format!(
                "team {}'s {attribute:?} adds up to {sum}, outside {}..={}",
                t + 1,
                min.map_or("".into(), |v| v.to_string()),
                max.map_or("".into(), |v| v.to_string())
            ));
        }
    }
    Ok(())
}

/// The groups a rule bounds: per team, the record's teams (one team: its
/// participants); per match, the participants.
fn bounded_groups(record: &MatchRecord, per_team: bool) -> Vec<Vec<PlayerId>> {
    match (per_team, &record.teams) {
        (true, Some(teams)) => teams.clone(),
        _ => vec![record.participants.clone()],
    }
}
