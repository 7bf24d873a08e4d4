//! The Redis key layout, declared once ([`key_layout!`] below): the
//! namespace block and the per-world block, each in one fixed order. Every
//! store module builds its scripts' KEYS from it (through the operations'
//! declarations in [`crate::scripts`]), the scripts reach their keys by
//! these names (`k.players`, `k.queue`, never `KEYS[n]`), the tests get
//! their keys from it and the key table of docs/architecture.md is checked against it.
//!
//! Every key of a namespace starts with `mm:{<namespace>}:`: the braces are a
//! Redis Cluster hash tag, so all keys of one namespace live in one hash slot
//! and every script can touch all of them atomically, on a single node, on
//! Redis Cluster and on ElastiCache Serverless alike. Different namespaces
//! (regions, games, tenants) hash to different slots and spread over shards.
//! Keys are built only from the validated namespace and world names; player
//! and connection ids are hash fields or set members, never part of a key.
//! A ticket is a player id (a solo ticket) or `\x01<party id>` (a party's).

use crate::config::WorldCatalog;
use crate::domain::WorldName;

/// Declares the namespace block and the world block. Each entry: the name
/// scripts and Rust use, the key's suffix after the namespace prefix (a
/// world key's is followed by `:<world>`), its Redis type and what it holds.
macro_rules! key_layout {
    (
        namespace { $($nk:ident ($nvariant:ident) = $nsuffix:literal, $ntype:literal, $ndoc:literal;)* }
        world { $($wk:ident ($wvariant:ident) = $wsuffix:literal, $wtype:literal, $wdoc:literal;)* }
    ) => {
        /// A key of the namespace block, in the block's order.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum NamespaceKey {
            $($nvariant,)*
        }

        impl NamespaceKey {
            /// Every namespace key, in the block's order.
            pub const ALL: &'static [NamespaceKey] = &[$(NamespaceKey::$nvariant,)*];

            /// The name scripts reach the key by (`k.<name>`).
            pub const fn name(self) -> &'static str {
                match self { $(NamespaceKey::$nvariant => stringify!($nk),)* }
            }

            /// The key's suffix after the namespace prefix.
            pub const fn suffix(self) -> &'static str {
                match self { $(NamespaceKey::$nvariant => $nsuffix,)* }
            }

            pub const fn redis_type(self) -> &'static str {
                match self { $(NamespaceKey::$nvariant => $ntype,)* }
            }

            pub const fn contents(self) -> &'static str {
                match self { $(NamespaceKey::$nvariant => $ndoc,)* }
            }
        }

        /// A key of the world block, in the block's order.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum WorldKey {
            $($wvariant,)*
        }

        impl WorldKey {
            /// Every world key, in the block's order.
            pub const ALL: &'static [WorldKey] = &[$(WorldKey::$wvariant,)*];

            /// The name scripts reach the key by (`k.<name>`).
            pub const fn name(self) -> &'static str {
                match self { $(WorldKey::$wvariant => stringify!($wk),)* }
            }

            /// The key's suffix after the namespace prefix, before `:<world>`.
            pub const fn suffix(self) -> &'static str {
                match self { $(WorldKey::$wvariant => $wsuffix,)* }
            }

            pub const fn redis_type(self) -> &'static str {
                match self { $(WorldKey::$wvariant => $wtype,)* }
            }

            pub const fn contents(self) -> &'static str {
                match self { $(WorldKey::$wvariant => $wdoc,)* }
            }
        }

        /// The keys of one world, by name.
        #[derive(Debug, Clone, PartialEq, Eq)]
        pub struct WorldKeys {
            $(pub $wk: String,)*
        }

        impl WorldKeys {
            /// The world block, in its order.
            pub fn block(self) -> Vec<String> {
                vec![$(self.$wk,)*]
            }
        }

        impl KeyLayout {
            /// The keys of `world`.
            pub fn world(&self, world: &WorldName) -> WorldKeys {
                WorldKeys {
                    $($wk: self.world_key(world, WorldKey::$wvariant),)*
                }
            }

            $(
                #[doc = $ndoc]
                pub fn $nk(&self) -> String {
                    self.namespace_key(NamespaceKey::$nvariant)
                }
            )*
        }
    };
}

key_layout! {
    namespace {
        players (Players) = "players", "HASH",
            "player -> state: a waiting ticket `<world> <seq> <joined_ms> <deadline_ms>` (`<world>,<world>...` for one waiting in several worlds of a queueGroup), the latest match id (no space), `P <party id>`, `R <match id>` (in a ready check) or `C <until_ms>` (cooling down); a party's ticket id -> its waiting ticket";
        ticket_seq (TicketSeq) = "ticket-seq", "STRING", "counter giving every ticket its FIFO order";
        match_seq (MatchSeq) = "match-seq", "STRING", "counter for match ids";
        matches (Matches) = "matches", "HASH", "match id -> match record JSON";
        match_expiry (MatchExpiry) = "match-expiry", "ZSET", "match id -> when the record expires (ms)";
        match_lifecycle (MatchLifecycle) = "match-lifecycle", "HASH",
            "match id -> `<state> <since_ms>\\n<assignment JSON>\\n<result JSON>\\n<rating changes JSON>\\n<additions JSON>` once assigned, backfilled or finished (see lua/_lifecycle.lua)";
        outbox (Outbox) = "outbox", "ZSET",
            "notification id -> due (ms): `M|<match>` per match, `C|<match>|<conn>` a replay to one connection, `A|<match>`/`R|<match>` its assignment/result, `B|<match>|<fill>` players a backfill added, `V|<match>|<ms>` a backfill lapsed (its event only), `X|`/`G|<world>|<player>` a removed ticket, `N|<note>` any other message";
        outbox_meta (OutboxMeta) = "outbox-meta", "HASH",
            "notification id -> `<attempts>:<first_attempt_ms>:<in_flight>:<pending targets>` (from the first claim on)";
        notes (Notes) = "notes", "HASH", "note id -> `<message JSON>\\n<player>\\n...` (announced by `N|<id>`)";
        counters (Counters) = "counters", "HASH", "party and note ids";
        parties (Parties) = "parties", "HASH", "party id -> party JSON (members, state, the proposal it is in)";
        party_expiry (PartyExpiry) = "party-expiry", "ZSET", "assembling party id -> assembly deadline (ms)";
        proposals (Proposals) = "proposals", "HASH", "match id -> proposal JSON (ready checks)";
        proposal_expiry (ProposalExpiry) = "proposal-expiry", "ZSET", "match id -> accept-by (ms)";
        player_ratings (PlayerRatings) = "player-ratings", "HASH",
            "the trusted ratings store: `<world>|<player>` or `*|<player>` -> rating";
        player_attributes (PlayerAttributes) = "player-attributes", "HASH",
            "the trusted attribute store: player -> `name=value;...` (trusted attributes only; see docs/rules.md)";
        conns (Conns) = "conns", "HASH", "WebSocket connection id -> `<registered_ms> <player>`";
        conn_expiry (ConnExpiry) = "conn-expiry", "ZSET", "connection id -> when its registration lapses without a heartbeat (ms)";
        player_conns (PlayerConns) = "player-conns", "HASH", "player -> space-separated connection ids, oldest first";
        presence (Presence) = "presence", "ZSET", "player -> present until (ms): the latest expiry among their connections";
        matcher_lease (MatcherLease) = "matcher-lease", "STRING", "token of the active matcher loop (PX expiry)";
        matcher_asleep (MatcherAsleep) = "matcher-asleep", "STRING",
            "set while the matcher sleeps (nothing to do); the first script that makes work deletes it and has its caller wake the matcher";
        backfills (Backfills) = "backfills", "HASH",
            "match id -> its open backfill JSON (seats per team, keep-alive deadline; see lua/_backfill.lua)";
        backfill_expiry (BackfillExpiry) = "backfill-expiry", "ZSET", "`<world>|<match>` -> when the backfill lapses unless renewed (ms)";
        avoid (Avoid) = "avoid", "HASH",
            "namespaces with block lists: player -> their avoid list, player ids `\\n`-joined (PUT /v1/avoid/{playerId})";
        block_pairs (BlockPairs) = "block-pairs", "HASH",
            "namespaces with block lists: `<lo>\\n<hi>` (two player ids in byte order) -> 1 lo avoids hi, 2 hi avoids lo, 3 both (see lua/_blocks.lua)";
        block_counts (BlockCounts) = "block-counts", "HASH",
            "namespaces with block lists: player -> the block pairs they are in (no field at 0)";
        audit (Audit) = "audit", "LIST",
            "the operators' actions, newest first, JSON each (capped: see lua/audit_append.lua)";
    }
    world {
        queue (Queue) = "queue", "ZSET", "ticket -> ticket sequence (FIFO order; rank + 1 = position)";
        deadlines (Deadlines) = "deadlines", "ZSET",
            "ticket -> deadline (ms); entries of tickets that left stay until due, when the sweep drops them";
        data (Data) = "data", "HASH", "ticket -> ticket data JSON (tickets with data only)";
        stats (Stats) = "stats", "HASH",
            "`start`, `cur`, `prev`, `first`: players matched in a two-bucket sliding window (wait estimates in O(1)); `parties`: party tickets waiting; `backfills`: open backfills";
        ratings (Ratings) = "ratings", "ZSET", "rated worlds: `<seq, 12 digits>:<ticket>` -> rating";
        due (Due) = "due", "ZSET", "rated worlds and worlds with regions or attributes: ticket -> next try as an anchor (ms)";
        latencies (Latencies) = "latencies", "HASH",
            "worlds with regions: ticket -> `<region>=<ms>,...`, the regions within the latency cap";
        region_queue (RegionQueue) = "region-queue", "ZSET",
            "worlds with regions: `<region>|<ticket>` -> band(region) + seq (each region's tickets, oldest first)";
        region_ratings (RegionRatings) = "region-ratings", "ZSET",
            "rated worlds with regions: `<region>|<seq, 12 digits>:<ticket>` -> band(region) + rating (each region's tickets by rating)";
        backfill_queue (BackfillQueue) = "backfill-queue", "ZSET", "match id -> created (ms): the world's open backfills, oldest first";
        backfill_ratings (BackfillRatings) = "backfill-ratings", "ZSET", "rated worlds: match id -> the backfill's reference rating";
        attrs (Attrs) = "attrs", "HASH",
            "worlds with attributes: ticket -> its players' attributes, `name=value;...` each, a party's members `|`-joined";
        attr_queue (AttrQueue) = "attr-queue", "ZSET",
            "worlds with an equality rule: ticket -> band(its value of the first one; 0: none) x 2^40 + seq (the tickets of each value, oldest first)";
        attr_values (AttrValues) = "attr-values", "ZSET",
            "FIFO worlds with an intersection rule: `<value>|<ticket>` -> band(value) x 2^40 + seq, one per value of the first one's list (`|<ticket>` in band 0: no list)";
        attr_numbers (AttrNumbers) = "attr-numbers", "ZSET",
            "FIFO worlds with a distance rule: `<seq, 12 digits>:<ticket>` -> its number of the first one (`+inf`: none)";
    }
}

/// What a world can have, as far as keys go: a call passes a key only when
/// the features of its worlds (and of the namespace) can reach it
/// ([`NamespaceKey::needs`], [`WorldKey::needs`]), so a FIFO world without
/// regions, ready checks or presence sends none of their keys. Scripts get
/// the set as letters (`Features::letters`), the first argument of every
/// call, and build their key accessors from it (scripts/declaration.rs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Features(u8);

impl Features {
    pub const NONE: Features = Features(0);
    /// A world of the namespace allows parties (a player's state may be a
    /// party of any world).
    pub const PARTIES: Features = Features(1);
    /// A world of the namespace has a ready check (a player's state may be
    /// a proposal of any world).
    pub const READY_CHECKS: Features = Features(1 << 1);
    pub const RATED: Features = Features(1 << 2);
    pub const REGIONS: Features = Features(1 << 3);
    pub const PRESENCE: Features = Features(1 << 4);
    /// A world with player attributes (and match rules).
    pub const ATTRIBUTES: Features = Features(1 << 5);
    /// The namespace keeps block lists (rule set `blockLists`): every
    /// match and backfill of every world is checked against them.
    pub const BLOCKS: Features = Features(1 << 6);
    pub const ALL: Features = Features((1 << 7) - 1);
    /// The letter of each feature, in bit order.
    const LETTERS: [char; 7] = ['p', 'c', 'r', 'g', 's', 'a', 'b'];

    pub const fn union(self, other: Features) -> Features {
        Features(self.0 | other.0)
    }

    /// Whether a key that needs `needs` is reached (`NONE`: always).
    pub const fn reach(self, needs: Features) -> bool {
        needs.0 == 0 || self.0 & needs.0 != 0
    }

    /// The Lua pattern every `letters()` matches: each letter at most once,
    /// in bit order.
    pub fn letters_pattern() -> String {
        let each: String = Self::LETTERS.iter().map(|c| format!("{c}?")).collect();
        format!("^{each}$")
    }

    /// The set as the scripts take it: one letter per feature.
    pub fn letters(self) -> String {
        Self::LETTERS
            .iter()
            .enumerate()
            .filter(|(i, _)| self.0 & (1 << i) != 0)
            .map(|(_, c)| *c)
            .collect()
    }
}

impl NamespaceKey {
    /// The features that make a call reach this key (any of them; `NONE`:
    /// every call of an operation that declares it).
    pub const fn needs(self) -> Features {
        match self {
            NamespaceKey::Parties | NamespaceKey::PartyExpiry => Features::PARTIES,
            NamespaceKey::Proposals | NamespaceKey::ProposalExpiry => Features::READY_CHECKS,
            NamespaceKey::PlayerRatings => Features::RATED,
            NamespaceKey::PlayerAttributes => Features::ATTRIBUTES,
            NamespaceKey::Presence => Features::PRESENCE,
            NamespaceKey::Avoid | NamespaceKey::BlockPairs | NamespaceKey::BlockCounts => {
                Features::BLOCKS
            }
            // Backfill keys are reached in every world: a running match of
            // any world may ask for players (the store does not require
            // game servers for it, only the HTTP route does).
            _ => Features::NONE,
        }
    }
}

impl WorldKey {
    /// As [`NamespaceKey::needs`].
    pub const fn needs(self) -> Features {
        match self {
            WorldKey::Ratings => Features::RATED,
            WorldKey::Due => Features::RATED
                .union(Features::REGIONS)
                .union(Features::ATTRIBUTES),
            WorldKey::Attrs
            | WorldKey::AttrQueue
            | WorldKey::AttrValues
            | WorldKey::AttrNumbers => Features::ATTRIBUTES,
            WorldKey::Latencies | WorldKey::RegionQueue | WorldKey::RegionRatings => {
                Features::REGIONS
            }
            WorldKey::BackfillRatings => Features::RATED,
            _ => Features::NONE,
        }
    }
}

/// A value of the `players` hash, as `lua/_players.lua` writes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PlayerState<'a> {
    /// A waiting ticket (of a player, or a party's ticket id).
    Waiting {
        world: &'a str,
        seq: u64,
        joined_ms: u64,
        deadline_ms: u64,
    },
    /// The player's latest match.
    Matched(&'a str),
    /// A member of this party.
    Party(&'a str),
    /// A solo player in the proposal of this match id.
    Proposal(&'a str),
    /// Cooling down until this time (ms).
    CoolingDown(u64),
}

impl<'a> PlayerState<'a> {
    /// The state a `players` value holds, `None` when it is malformed.
    pub fn parse(value: &'a str) -> Option<Self> {
        if let Some(rest) = value.strip_prefix("P ") {
            return Some(PlayerState::Party(rest));
        }
        if let Some(rest) = value.strip_prefix("R ") {
            return Some(PlayerState::Proposal(rest));
        }
        if let Some(rest) = value.strip_prefix("C ") {
            return rest.parse().ok().map(PlayerState::CoolingDown);
        }
        if !value.contains(' ') {
            return Some(PlayerState::Matched(value));
        }
        let mut parts = value.split(' ');
        let (world, seq, joined, deadline) =
            (parts.next()?, parts.next()?, parts.next()?, parts.next()?);
        if parts.next().is_some() {
            return None;
        }
        Some(PlayerState::Waiting {
            world,
            seq: seq.parse().ok()?,
            joined_ms: joined.parse().ok()?,
            deadline_ms: deadline.parse().ok()?,
        })
    }
}

/// Key names of one namespace.
#[derive(Debug, Clone)]
pub struct KeyLayout {
    prefix: String,
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

    pub fn namespace_key(&self, key: NamespaceKey) -> String {
        format!("{}{}", self.prefix, key.suffix())
    }

    pub fn world_key(&self, world: &WorldName, key: WorldKey) -> String {
        format!("{}{}:{world}", self.prefix, key.suffix())
    }

    /// Every key the namespace can hold for `worlds` (for tests and tooling).
    pub fn all(&self, worlds: &WorldCatalog) -> Vec<String> {
        let mut keys: Vec<String> = NamespaceKey::ALL
            .iter()
            .map(|k| self.namespace_key(*k))
            .collect();
        for w in worlds.iter() {
            keys.extend(self.world(&w.name).block());
        }
        keys
    }

    /// The layout as a Markdown table (docs/architecture.md's key table is checked
    /// against it).
    pub fn markdown_table() -> String {
        let mut out = String::from("| key (after `mm:{ns}:`) | type | contents |\n|---|---|---|\n");
        for k in NamespaceKey::ALL {
            out.push_str(&format!(
                "| `{}` | {} | {} |\n",
                k.suffix(),
                k.redis_type(),
                k.contents()
            ));
        }
        for k in WorldKey::ALL {
            out.push_str(&format!(
                "| `{}:<world>` | {} | {} |\n",
                k.suffix(),
                k.redis_type(),
                k.contents()
            ));
        }
        out
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
        assert_eq!(
            keys.len(),
            NamespaceKey::ALL.len() + WorldKey::ALL.len() * 2
        );
        for k in &keys {
            assert!(k.starts_with("mm:{eu-1}:"), "{k}");
            // The first '{'...'}' decides the slot; nothing else may come first.
            assert_eq!(k.find('{'), Some(3), "{k}");
        }
        let unique: std::collections::HashSet<_> = keys.iter().collect();
        assert_eq!(unique.len(), keys.len());
    }

    #[test]
    fn names_are_lua_identifiers_and_unique_across_both_blocks() {
        let mut names: Vec<&str> = NamespaceKey::ALL.iter().map(|k| k.name()).collect();
        names.extend(WorldKey::ALL.iter().map(|k| k.name()));
        let unique: std::collections::HashSet<_> = names.iter().collect();
        assert_eq!(unique.len(), names.len(), "{names:?}");
        for n in names {
            assert!(n.chars().all(|c| c.is_ascii_lowercase() || c == '_'), "{n}");
        }
    }

    #[test]
    fn player_states_read_what_the_scripts_write() {
        assert_eq!(
            PlayerState::parse("world1 7 1000 61000"),
            Some(PlayerState::Waiting {
                world: "world1",
                seq: 7,
                joined_ms: 1000,
                deadline_ms: 61000
            })
        );
        assert_eq!(
            PlayerState::parse("18f3a-4"),
            Some(PlayerState::Matched("18f3a-4"))
        );
        assert_eq!(
            PlayerState::parse("P arena.1-a"),
            Some(PlayerState::Party("arena.1-a"))
        );
        assert_eq!(
            PlayerState::parse("R 18f3a-4"),
            Some(PlayerState::Proposal("18f3a-4"))
        );
        assert_eq!(
            PlayerState::parse("C 5000"),
            Some(PlayerState::CoolingDown(5000))
        );
        assert_eq!(PlayerState::parse("world1 7 1000"), None);
    }

    #[test]
    fn a_ticket_waiting_in_several_worlds_names_them_all() {
        assert_eq!(
            PlayerState::parse("casual,ranked 7 1000 61000"),
            Some(PlayerState::Waiting {
                world: "casual,ranked",
                seq: 7,
                joined_ms: 1000,
                deadline_ms: 61000
            })
        );
    }

    #[test]
    fn the_architecture_doc_key_table_is_the_declared_layout() {
        let doc = include_str!("../../docs/architecture.md");
        let table = KeyLayout::markdown_table();
        assert!(
            doc.contains(&table),
            "docs/architecture.md's key table differs from shared/src/keys.rs; it must read:\n{table}"
        );
    }
}
