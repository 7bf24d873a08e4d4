//! The Redis key layout. This module is the only place key names are built.
//!
//! Every key of a namespace starts with `mm:{<namespace>}:`: the braces are a
//! Redis Cluster hash tag, so all keys of one namespace live in one hash slot
//! and every script can touch all of them atomically, on a single node, on
//! Redis Cluster and on ElastiCache Serverless alike. Different namespaces
//! (regions, games, tenants) hash to different slots and spread over shards.
//! Keys are built only from the validated namespace and world names; player
//! and connection ids are hash fields or set members, never part of a key.
//! A ticket is a player id (a solo ticket) or `\x01<party id>` (a party's).
//!
//! | key                          | type   | contents                                   |
//! |------------------------------|--------|--------------------------------------------|
//! | `queue:<world>`              | ZSET   | ticket -> ticket sequence (FIFO order)     |
//! | `deadlines:<world>`          | ZSET   | ticket -> ticket deadline (ms)             |
//! | `rate:<world>`               | HASH   | match-rate statistics (wait estimates)     |
//! | `ratings:<world>`            | ZSET   | `<seq>:<ticket>` -> rating (rated worlds)  |
//! | `due:<world>`                | ZSET   | ticket -> next try as an anchor (ms)       |
//! | `player-ratings`             | HASH   | `<world>\|<player>`, `*\|<player>` -> rating (trusted store) |
//! | `tickets`                    | HASH   | ticket -> `<world> <seq> <joined> <deadline> <data>` |
//! | `parties`                    | HASH   | party id -> party JSON (members, state)    |
//! | `party-expiry`               | ZSET   | assembling party id -> assembly deadline (ms) |
//! | `player-party`               | HASH   | player -> party id (members who joined)    |
//! | `notes`                      | HASH   | note id -> message and recipients          |
//! | `counters`                   | HASH   | party and note ids; queued parties per world |
//! | `proposals`                  | HASH   | match id -> proposal JSON (ready checks)   |
//! | `proposal-expiry`            | ZSET   | match id -> accept-by (ms)                 |
//! | `player-proposal`            | HASH   | player -> match id of a pending proposal   |
//! | `cooldowns`                  | ZSET   | player -> may join again from (ms)         |
//! | `ticket-seq`, `match-seq`    | STRING | counters                                   |
//! | `matches`                    | HASH   | match id -> match record JSON              |
//! | `match-expiry`               | ZSET   | match id -> expiry (ms)                    |
//! | `player-match`               | HASH   | player -> latest match id                  |
//! | `outbox`                     | ZSET   | notification id -> due time (ms)           |
//! | `outbox-meta`                | HASH   | notification id -> `<attempts>:<first try>:<pending>` |
//! | `conns`                      | HASH   | connection id -> `<registered ms> <player>` |
//! | `conn-expiry`                | ZSET   | connection id -> registration lapses (ms)  |
//! | `player-conns`               | HASH   | player -> space-separated connection ids   |
//! | `presence`                   | ZSET   | player -> present until (ms)               |
//! | `matcher-lease`              | STRING | token of the active matcher loop (PX)      |

use crate::config::WorldCatalog;
use crate::domain::WorldName;

/// Key names of one namespace.
#[derive(Debug, Clone)]
pub struct KeyLayout {
    prefix: String,
}

/// The keys that belong to one world (`ratings` and `due` stay empty in
/// FIFO worlds).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorldKeys {
    pub queue: String,
    pub deadlines: String,
    pub rate: String,
    pub ratings: String,
    pub due: String,
}

impl WorldKeys {
    /// The world block, in the order every script that takes a whole world
    /// takes it: queue, deadlines, rate, ratings, due.
    pub fn block(self) -> [String; 5] {
        [
            self.queue,
            self.deadlines,
            self.rate,
            self.ratings,
            self.due,
        ]
    }

    /// The keys removing a ticket touches, in the order the scripts that
    /// only remove tickets take them: queue, deadlines, ratings, due.
    pub fn removal_block(self) -> [String; 4] {
        [self.queue, self.deadlines, self.ratings, self.due]
    }
}

impl KeyLayout {
    /// `namespace` must already be validated (`[a-z0-9_-]{1,32}`), which
    /// [`crate::config::Settings`] guarantees.
    pub fn new(namespace: &str) -> Self {
        Self {
            prefix: format!("mm:{{{namespace}}}:"),
        }
    }

    /// The common prefix, hash tag included (e.g. `mm:{mm}:`).
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// The hash tag all keys share (e.g. `{mm}`), for cluster slot checks.
    pub fn hash_tag(&self) -> &str {
        let start = self.prefix.find('{').unwrap_or(0);
        let end = self.prefix.find('}').map_or(self.prefix.len(), |i| i + 1);
        &self.prefix[start..end]
    }

    fn key(&self, name: &str) -> String {
        format!("{}{name}", self.prefix)
    }

    pub fn world(&self, world: &WorldName) -> WorldKeys {
        WorldKeys {
            queue: self.key(&format!("queue:{world}")),
            deadlines: self.key(&format!("deadlines:{world}")),
            rate: self.key(&format!("rate:{world}")),
            ratings: self.key(&format!("ratings:{world}")),
            due: self.key(&format!("due:{world}")),
        }
    }

    pub fn tickets(&self) -> String {
        self.key("tickets")
    }
    pub fn ticket_seq(&self) -> String {
        self.key("ticket-seq")
    }
    pub fn match_seq(&self) -> String {
        self.key("match-seq")
    }
    pub fn matches(&self) -> String {
        self.key("matches")
    }
    pub fn match_expiry(&self) -> String {
        self.key("match-expiry")
    }
    pub fn player_match(&self) -> String {
        self.key("player-match")
    }
    pub fn outbox(&self) -> String {
        self.key("outbox")
    }
    pub fn outbox_meta(&self) -> String {
        self.key("outbox-meta")
    }
    pub fn conns(&self) -> String {
        self.key("conns")
    }
    pub fn conn_expiry(&self) -> String {
        self.key("conn-expiry")
    }
    pub fn player_conns(&self) -> String {
        self.key("player-conns")
    }
    pub fn player_ratings(&self) -> String {
        self.key("player-ratings")
    }
    pub fn presence(&self) -> String {
        self.key("presence")
    }
    pub fn matcher_lease(&self) -> String {
        self.key("matcher-lease")
    }
    pub fn parties(&self) -> String {
        self.key("parties")
    }
    pub fn party_expiry(&self) -> String {
        self.key("party-expiry")
    }
    pub fn player_party(&self) -> String {
        self.key("player-party")
    }
    pub fn notes(&self) -> String {
        self.key("notes")
    }
    pub fn counters(&self) -> String {
        self.key("counters")
    }

    pub fn proposals(&self) -> String {
        self.key("proposals")
    }
    pub fn proposal_expiry(&self) -> String {
        self.key("proposal-expiry")
    }
    pub fn player_proposal(&self) -> String {
        self.key("player-proposal")
    }
    pub fn cooldowns(&self) -> String {
        self.key("cooldowns")
    }

    /// The proposal block, in the order every script that may touch a ready
    /// check takes it: proposals, proposal_expiry, player_proposal, cooldowns.
    pub fn proposal_block(&self) -> [String; 4] {
        [
            self.proposals(),
            self.proposal_expiry(),
            self.player_proposal(),
            self.cooldowns(),
        ]
    }

    /// The party block, in the order every script that may touch a party
    /// takes it: parties, party_expiry, player_party, notes, counters.
    pub fn party_block(&self) -> [String; 5] {
        [
            self.parties(),
            self.party_expiry(),
            self.player_party(),
            self.notes(),
            self.counters(),
        ]
    }

    /// Every key the namespace can hold for `worlds` (for tests and tooling).
    pub fn all(&self, worlds: &WorldCatalog) -> Vec<String> {
        let mut keys = vec![
            self.tickets(),
            self.ticket_seq(),
            self.match_seq(),
            self.matches(),
            self.match_expiry(),
            self.player_match(),
            self.outbox(),
            self.outbox_meta(),
            self.conns(),
            self.conn_expiry(),
            self.player_conns(),
            self.presence(),
            self.player_ratings(),
            self.matcher_lease(),
        ];
        keys.extend(self.party_block());
        keys.extend(self.proposal_block());
        for w in worlds.iter() {
            let k = self.world(&w.name);
            keys.extend([k.queue, k.deadlines, k.rate, k.ratings, k.due]);
        }
        keys
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn every_key_carries_the_namespace_hash_tag() {
        let layout = KeyLayout::new("eu-1");
        assert_eq!(layout.hash_tag(), "{eu-1}");
        let worlds = WorldCatalog::parse("world1:3,world2:2", Duration::from_secs(60)).unwrap();
        let keys = layout.all(&worlds);
        assert_eq!(keys.len(), 23 + 5 * 2);
        for k in &keys {
            assert!(k.starts_with("mm:{eu-1}:"), "{k}");
            // The first '{'...'}' decides the slot; nothing else may come first.
            assert_eq!(k.find('{'), Some(3), "{k}");
        }
        let unique: std::collections::HashSet<_> = keys.iter().collect();
        assert_eq!(unique.len(), keys.len());
    }
}
