//! The world configuration argument of the scripts that join and match
//! (`lua/_config.lua`): one string per world instead of ~20 arguments,
//! built once per store, parsed once per loaded function library.

use std::borrow::Cow;
use std::collections::HashMap;

use super::{flag, millis};
use crate::config::{Settings, World};
use crate::domain::WorldName;

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

    /// `world`'s configuration: built at start for the configured worlds;
    /// a world given from elsewhere (not the configured one of its name)
    /// is encoded on the spot.
    pub(super) fn get<'a>(&'a self, settings: &Settings, world: &World) -> Cow<'a, str> {
        match self.0.get(&world.name) {
            Some(s) if settings.worlds.get(&world.name) == Some(world) => Cow::Borrowed(s),
            _ => Cow::Owned(encode(settings, world)),
        }
    }
}

/// The fields in `_config.lua`'s order, space-separated, "-" for none.
fn encode(settings: &Settings, world: &World) -> String {
    let mut fields: Vec<String> = vec![
        world.seats().to_string(),
        world.teams.to_string(),
        millis(world.ticket_ttl).to_string(),
        millis(settings.match_ttl).to_string(),
        flag(settings.instant_match).to_string(),
        settings.queue_capacity.to_string(),
        millis(settings.wait_window).to_string(),
        flag(world.require_presence).to_string(),
    ];
    match world.rating() {
        None => {
            fields.push("fifo".into());
            fields.extend(std::iter::repeat_n("-".to_string(), 8));
        }
        Some(r) => {
            fields.push("rating".into());
            fields.push(r.base_window.to_string());
            fields.push(r.widen_per_second.to_string());
            fields.push(r.max_window.to_string());
            fields.push(millis(r.relax_after).to_string());
            fields.push(millis(r.retry).to_string());
            match &r.balance {
                None => fields.extend(std::iter::repeat_n("-".to_string(), 3)),
                Some(b) => {
                    fields.push(b.base_window.to_string());
                    fields.push(b.widen_per_second.to_string());
                    fields.push(b.max_window.to_string());
                }
            }
        }
    }
    match world.ready_check {
        None => fields.extend(["0".to_string(), "0".to_string()]),
        Some(r) => {
            fields.push(millis(r.accept_within).max(1).to_string());
            fields.push(millis(r.decline_cooldown).to_string());
        }
    }
    let ratings = &settings.ratings;
    fields.push(ratings.default.map_or("-".to_string(), |d| d.to_string()));
    fields.push(ratings.min.to_string());
    fields.push(ratings.max.to_string());
    fields.push(world.party_rating.as_str().to_string());
    fields.join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{MatchMode, RatingRules};
    use std::time::Duration;

    fn settings(worlds: &str) -> Settings {
        Settings::from_lookup(|var| match var {
            "MM_WORLDS" => Some(worlds.to_string()),
            _ => None,
        })
        .unwrap()
    }

    #[test]
    fn a_fifo_world_has_every_field_in_order() {
        let s = settings("world1:3");
        let w = s.worlds.get("world1").unwrap();
        let configs = WorldConfigs::new(&s);
        let encoded = configs.get(&s, w);
        let fields: Vec<&str> = encoded.split(' ').collect();
        assert_eq!(fields.len(), 23, "{encoded}");
        assert_eq!(fields[0], "3");
        assert_eq!(fields[1], "1");
        assert_eq!(fields[8], "fifo");
        assert!(fields[9..17].iter().all(|f| *f == "-"), "{encoded}");
        assert_eq!(&fields[17..19], ["0", "0"]);
        assert_eq!(fields[22], "average");
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
        });
        let encoded = configs.get(&s, &w);
        assert!(
            encoded.contains(" rating 50 2.5 400 60000 1000 - - - "),
            "{encoded}"
        );
    }
}
