//! A quota rule checked against the roles a match record gives: each
//! player took a role they offered, and every team (or the match) holds
//! each listed role within its bounds.

use std::collections::BTreeMap;

use crate::config::{MatchRule, RuleKind};
use crate::domain::{AttributeValue, MatchRecord, TicketAttributes};

/// `Ok` for a rule that is not a quota; for a quota rule, whether the
/// record's `roles` (and `teams`, per team) meet it. `players`: each
/// player's attributes as the record shows them.
pub(super) fn check_roles(
    rule: &MatchRule,
    record: &MatchRecord,
    players: &BTreeMap<&str, TicketAttributes>,
) -> Result<(), String> {
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
    let everyone = [record.participants.clone()];
    let groups: &[Vec<_>] = match (per_team, &record.teams) {
        (true, Some(teams)) => teams,
        _ => &everyone,
    };
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
