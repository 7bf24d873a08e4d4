//! An arrival's calls into the core: a solo join, or a party's create and
//! its members' joins.

use serde_json::Value;
use shared::config::{AttributeCatalog, AttributeDecl, AttributeSource, AttributeType};
use shared::store::JoinInput;
use shared::{
    use_cases, ConnectionId, JoinOutcome, Latencies, MatchRecord, MatchStore, PartyCreateOutcome,
    PartyJoinOutcome, PlayerId, ProposalView, Rating, StoreError, TicketAttributes, World,
};

use crate::scenario::{Scenario, ITEM_SEPARATOR};

/// How an arrival entered the world.
#[derive(Debug)]
pub(super) enum Entered {
    /// Its ticket waits in the queue.
    Queued,
    /// It completed one or more matches at once.
    Matched(Vec<MatchRecord>),
    /// It completed a match that is a proposal (a ready check).
    Proposed(ProposalView),
    /// The core refused it (why).
    Refused(String),
}

/// Registers one WebSocket connection per member of group `group` (the
/// `$connect` handler's call), so that the matcher's pushes reach someone:
/// a notification for a player without a connection stays in the outbox and
/// is retried until the match record expires, and every tick would claim
/// the whole backlog again. The pusher delivers nothing either way.
pub(super) async fn connect(
    store: &MatchStore,
    scenario: &Scenario,
    group: usize,
) -> Result<(), StoreError> {
    for &m in &scenario.groups[group].members {
        let (player, _) = player_of(scenario, m)?;
        let conn = ConnectionId::parse(&format!("sim-{}", player.as_str()))
            .map_err(|e| StoreError::Rejected(format!("connection of {player:?}: {e}")))?;
        store.register_connection(&conn, &player).await?;
    }
    Ok(())
}

pub(super) fn player_of(scenario: &Scenario, i: usize) -> Result<(PlayerId, Rating), StoreError> {
    let a = &scenario.arrivals[i];
    let player = PlayerId::parse(&a.player)
        .map_err(|e| StoreError::Rejected(format!("player {:?}: {e}", a.player)))?;
    let rating = Rating::new(a.rating)
        .map_err(|e| StoreError::Rejected(format!("rating {}: {e}", a.rating)))?;
    Ok((player, rating))
}

/// What player `i` sends as `latencies` when joining `world`: in a world
/// with regions, its measured latency to each region the world names (as
/// the client would send them, validated by the core's own parser);
/// otherwise nothing.
pub(super) fn latencies_of(
    scenario: &Scenario,
    i: usize,
    world: &World,
) -> Result<Option<Latencies>, StoreError> {
    let (Some(rules), Some(geo)) = (&world.regions, &scenario.geo) else {
        return Ok(None);
    };
    let mut measured = serde_json::Map::new();
    for name in &rules.names {
        if let Some(ms) = geo.index(name).and_then(|r| geo.latency[i][r]) {
            measured.insert(name.clone(), ms.into());
        }
    }
    if measured.is_empty() {
        // Nothing measured in this world's regions: the join goes without
        // (the core refuses it unless the world has a default region).
        return Ok(None);
    }
    Latencies::from_value(&serde_json::Value::Object(measured), &rules.names)
        .map(Some)
        .map_err(|e| {
            StoreError::Rejected(format!(
                "latencies of {:?}: {e}",
                scenario.arrivals[i].player
            ))
        })
}

/// A raw trace value as the JSON a client sends for `decl`: a string as
/// it is, a number parsed, a list split at `|` (cut to its first item with
/// `first_only`), a map split at `|` into `key:number` entries. What does
/// not read as its type is sent as a string, for the core to refuse.
pub fn typed_value(decl: &AttributeDecl, raw: &str, first_only: bool) -> Value {
    let items = || raw.split(ITEM_SEPARATOR).map(str::trim);
    match decl.kind {
        AttributeType::String => Value::String(raw.to_owned()),
        AttributeType::Number => raw
            .trim()
            .parse::<f64>()
            .ok()
            .and_then(serde_json::Number::from_f64)
            .map_or_else(|| Value::String(raw.to_owned()), Value::Number),
        AttributeType::StringList => Value::Array(
            items()
                .take(if first_only { 1 } else { usize::MAX })
                .map(|i| Value::String(i.to_owned()))
                .collect(),
        ),
        AttributeType::NumberMap => {
            let entries: Option<serde_json::Map<String, Value>> = items()
                .map(|e| {
                    let (k, v) = e.rsplit_once(':')?;
                    let v = serde_json::Number::from_f64(v.trim().parse().ok()?)?;
                    Some((k.trim().to_owned(), Value::Number(v)))
                })
                .collect();
            entries.map_or_else(|| Value::String(raw.to_owned()), Value::Object)
        }
    }
}

/// Player `i`'s attributes for `world` as the core validates them (what
/// `catalog.client_attributes` makes of the join body a client would send:
/// the trace's values of the world's client attributes, typed by their
/// declarations, defaults filled in). `first_only` names a list attribute
/// the player lists only the first item of. `None`: the world takes no
/// attributes. `Err`: the core refuses the body (400 INVALID_ATTRIBUTES).
pub fn ticket_attributes(
    catalog: &AttributeCatalog,
    scenario: &Scenario,
    i: usize,
    world: &World,
    first_only: Option<&str>,
) -> Option<Result<TicketAttributes, String>> {
    if world.attributes.is_empty() {
        return None;
    }
    let mut body = serde_json::Map::new();
    if let Some(attrs) = &scenario.attrs {
        for name in &world.attributes {
            let Some(decl) = catalog.get(name) else {
                continue;
            };
            if decl.source == AttributeSource::Trusted {
                continue;
            }
            if let Some(raw) = attrs.raw(i, name) {
                let value = typed_value(decl, raw, first_only == Some(name.as_str()));
                body.insert(name.clone(), value);
            }
        }
    }
    let body = (!body.is_empty()).then_some(Value::Object(body));
    Some(
        catalog
            .client_attributes(world, body.as_ref())
            .map_err(|e| format!("{}: {}", e.attribute, e.reason)),
    )
}

/// Player `i`'s `attributes` argument for joining `world` (see
/// [`ticket_attributes`]), encoded as the scripts take it.
fn attributes_arg(
    store: &MatchStore,
    scenario: &Scenario,
    i: usize,
    world: &World,
    first_only: Option<&str>,
) -> Result<Option<String>, String> {
    let catalog = &store.settings().attributes;
    ticket_attributes(catalog, scenario, i, world, first_only)
        .transpose()
        .map(|a| a.map(|a| a.encode(catalog)))
        .map_err(|e| {
            format!(
                "INVALID_ATTRIBUTES of {:?}: {e}",
                scenario.arrivals[i].player
            )
        })
}

/// Enters group `group` of the trace into `world`: a solo player joins; a
/// party's leader creates it and every invited member joins it, the last
/// join queueing (or matching) the party as one ticket. Every player's
/// rating arrives as the verified claim would (a fresh namespace has no
/// ratings-store entry to take precedence over it), and in a world with
/// regions every player's latencies as its client measured them, and in a
/// world with attributes every player's attributes (`first_only`: a list
/// attribute cut to its first item). These are the calls that change with
/// the core's join and party signatures. Returns the party id (once
/// created) and how the arrival entered.
pub(super) async fn enter(
    store: &MatchStore,
    world: &World,
    scenario: &Scenario,
    group: usize,
    first_only: Option<&str>,
) -> (Option<String>, Result<Entered, StoreError>) {
    let members = &scenario.groups[group].members;
    let mut attributes = Vec::with_capacity(members.len());
    for &m in members {
        match attributes_arg(store, scenario, m, world, first_only) {
            Ok(a) => attributes.push(a),
            Err(why) => return (None, Ok(Entered::Refused(why))),
        }
    }
    if members.len() == 1 {
        let result = async {
            let (player, rating) = player_of(scenario, members[0])?;
            let latencies = latencies_of(scenario, members[0], world)?;
            let input = JoinInput {
                claimed: Some(rating),
                latencies: latencies.as_ref(),
                attributes: attributes[0].as_deref(),
                ..Default::default()
            };
            let reply = store.join_reply(world, &player, &input, false).await?;
            Ok(match reply.outcome {
                JoinOutcome::Queued(_) => Entered::Queued,
                JoinOutcome::Matched { formed, .. } => Entered::Matched(formed),
                JoinOutcome::Proposed(view) => Entered::Proposed(view),
                other => Entered::Refused(format!("{other:?}")),
            })
        }
        .await;
        return (None, result);
    }
    let mut party_id = None;
    let result = async {
        let players = members
            .iter()
            .map(|&m| Ok((player_of(scenario, m)?, latencies_of(scenario, m, world)?)))
            .collect::<Result<Vec<_>, StoreError>>()?;
        let ((leader, leader_rating), leader_latencies) = &players[0];
        let invited: Vec<PlayerId> = players[1..].iter().map(|((p, _), _)| p.clone()).collect();
        let party = match use_cases::create_party(
            store,
            world,
            leader,
            &invited,
            &JoinInput {
                claimed: Some(*leader_rating),
                latencies: leader_latencies.as_ref(),
                attributes: attributes[0].as_deref(),
                ..Default::default()
            },
        )
        .await?
        {
            Ok(PartyCreateOutcome::Created(view)) => view.party_id,
            Ok(other) => return Ok(Entered::Refused(format!("CreateParty {other:?}"))),
            Err(rejection) => return Ok(Entered::Refused(format!("CreateParty {rejection}"))),
        };
        party_id = Some(party.to_string());
        let last = players.len() - 1;
        for (i, ((player, rating), latencies)) in players.iter().enumerate().skip(1) {
            let input = JoinInput {
                claimed: Some(*rating),
                latencies: latencies.as_ref(),
                attributes: attributes[i].as_deref(),
                ..Default::default()
            };
            let outcome = store
                .join_party_claiming(world, &party, player, &input, false)
                .await?;
            return Ok(match outcome {
                PartyJoinOutcome::Joined(_) if i < last => continue,
                PartyJoinOutcome::Queued(_) if i == last => Entered::Queued,
                PartyJoinOutcome::Matched { formed, .. } if i == last => Entered::Matched(formed),
                PartyJoinOutcome::Proposed(view) if i == last => Entered::Proposed(view),
                other => Entered::Refused(format!("JoinParty (member {}) {other:?}", i + 1)),
            });
        }
        Ok(Entered::Refused("a party without invited members".into()))
    }
    .await;
    (party_id, result)
}
