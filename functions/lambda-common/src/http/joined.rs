//! The worlds one ticket joins: `worldType` and the other worlds of its
//! queueGroup a body lists in `alsoIn` (a join, a party's creation, a
//! member's party join), each with the attributes the client gives there.

use serde::Deserialize;
use serde_json::Value;
use shared::store::AlsoJoined;
use shared::{Latencies, MatchStore, World, WorldName, MAX_QUEUE_GROUP_WORLDS};

use super::attributes::attributes_for;
use super::errors::{ApiError, ErrorCode, ErrorDetails};
use super::request::{configured_world, invalid_field, latencies_for};

/// One more world a ticket waits in.
#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(super) struct AlsoInBody {
    pub world_type: String,
    /// The player's client attributes there; absent: the body's
    /// `attributes` when the world takes attributes, else none.
    #[serde(default)]
    pub attributes: Option<Value>,
}

/// What a body says of the worlds it joins, checked against each.
pub(super) struct JoinedWorlds<'a> {
    /// Checked against every joined world with regions.
    pub latencies: Option<Latencies>,
    /// The attributes in `worldType`, as the scripts take them.
    pub attributes: Option<String>,
    /// The other worlds, each with the attributes there.
    pub also: Vec<(&'a World, Option<String>)>,
}

impl JoinedWorlds<'_> {
    /// The other worlds as the store takes them.
    pub fn also_joined(&self) -> Vec<AlsoJoined<'_>> {
        self.also
            .iter()
            .map(|(world, attributes)| AlsoJoined {
                world,
                attributes: attributes.as_deref(),
            })
            .collect()
    }

    /// The first joined world that is rated (whose rating a token claim
    /// may give).
    pub fn rated<'w>(&'w self, world: &'w World) -> Option<&'w World> {
        std::iter::once(world)
            .chain(self.also.iter().map(|(w, _)| *w))
            .find(|w| w.rating().is_some())
    }
}

/// The worlds of `entries` (alsoIn) joined with `world`, with the body's
/// `latencies` and `attributes` checked against every joined world: 400
/// INVALID_REQUEST for more worlds than the schema allows, 404
/// UNKNOWN_WORLD for one not configured, 400 INVALID_WORLDS for one listed
/// twice (or `world` itself) or outside `world`'s queueGroup (what the
/// rule set decides), and the errors of bad latencies or attributes.
pub(super) fn joined_worlds<'a>(
    store: &'a MatchStore,
    world: &'a World,
    latencies: Option<&Value>,
    attributes: Option<&Value>,
    entries: &[AlsoInBody],
) -> Result<JoinedWorlds<'a>, ApiError> {
    let also_worlds = also_in(store, world, entries)?;
    let mut with_regions = std::iter::once(world)
        .chain(also_worlds.iter().map(|(w, _)| *w))
        .filter(|w| w.regions.is_some());
    let latencies = match with_regions.next() {
        // None has regions: the joined world's own answer.
        None => latencies_for(world, latencies)?,
        Some(first) => {
            let checked = latencies_for(first, latencies)?;
            for w in with_regions {
                latencies_for(w, latencies)?;
            }
            checked
        }
    };
    let first_attributes = match (attributes, also_worlds.is_empty()) {
        // Attributes for the worlds joined with one that takes none.
        (Some(_), false) if world.attributes.is_empty() => None,
        _ => attributes_for(store, world, attributes)?,
    };
    let mut also = Vec::with_capacity(also_worlds.len());
    for (w, entry) in also_worlds {
        let given = entry.attributes.as_ref().or(match w.attributes.is_empty() {
            true => None,
            false => attributes,
        });
        also.push((w, attributes_for(store, w, given)?));
    }
    Ok(JoinedWorlds {
        latencies,
        attributes: first_attributes,
        also,
    })
}

fn also_in<'a, 'b>(
    store: &'a MatchStore,
    world: &World,
    entries: &'b [AlsoInBody],
) -> Result<Vec<(&'a World, &'b AlsoInBody)>, ApiError> {
    if entries.len() >= MAX_QUEUE_GROUP_WORLDS {
        return Err(invalid_field(
            "alsoIn",
            format!(
                "a ticket waits in at most {MAX_QUEUE_GROUP_WORLDS} worlds: alsoIn lists {}",
                entries.len()
            ),
        ));
    }
    let mut out: Vec<(&World, &AlsoInBody)> = Vec::with_capacity(entries.len());
    for entry in entries {
        let other = configured_world(store, &entry.world_type)?;
        if other.name == world.name || out.iter().any(|(w, _)| w.name == other.name) {
            return Err(invalid_worlds(format!(
                "world {} is listed twice",
                other.name
            )));
        }
        if world.queue_group.is_none() || other.queue_group != world.queue_group {
            return Err(invalid_worlds(format!(
                "{} is not in the queueGroup of {}: only worlds of one group share a ticket",
                other.name, world.name
            )));
        }
        out.push((other, entry));
    }
    Ok(out)
}

/// 400 INVALID_WORLDS on `alsoIn`.
pub(super) fn invalid_worlds(msg: String) -> ApiError {
    ApiError::new(ErrorCode::InvalidWorlds, msg).with(ErrorDetails::Field { field: "alsoIn" })
}

/// A party member's `alsoIn` (`entries`) ordered as the party's other
/// worlds (`party_worlds`), one entry each: a world the party does not
/// queue in is 400 INVALID_WORLDS; a party world the member does not list
/// takes the member's `attributes` there.
pub(super) fn party_also_in(
    party_worlds: &[WorldName],
    entries: Vec<AlsoInBody>,
) -> Result<Vec<AlsoInBody>, ApiError> {
    let mut entries: Vec<Option<AlsoInBody>> = entries.into_iter().map(Some).collect();
    for e in entries.iter().flatten() {
        if !party_worlds.iter().any(|w| w.as_str() == e.world_type) {
            return Err(invalid_worlds(format!(
                "the party does not queue in {}",
                e.world_type
            )));
        }
    }
    Ok(party_worlds
        .iter()
        .map(|w| {
            entries
                .iter_mut()
                .find(|e| e.as_ref().is_some_and(|e| e.world_type == w.as_str()))
                .and_then(Option::take)
                .unwrap_or_else(|| AlsoInBody {
                    world_type: w.to_string(),
                    attributes: None,
                })
        })
        .collect())
}
