//! The Lua scripts, embedded at compile time. The operations run as the
//! functions of one Redis function library ([`FUNCTIONS`]: the library files
//! of [`LIBRARY_FILES`], in that order, then one function per operation
//! file), loaded on first use. Each operation also exists as a
//! self-contained script (library + operation) for servers without
//! functions (before Redis 7) and for tests that drive helpers directly.
//!
//! Each operation is declared once ([`operations!`] below): the namespace
//! keys it takes (names from [`crate::keys`]), whether world blocks follow,
//! its fixed arguments and an optional variadic tail. From the declaration
//! come the store's KEYS and ARGV ([`Operation::invocation`]) and the
//! accessors the script reads them through, generated in front of its body
//! ([`Declaration::prelude`]): `k.<key>`, `args.<name>`, `worlds`, `rest`,
//! `world_keys(i)` and `world_of(name)`. No script indexes KEYS or ARGV by
//! number; a test holds each script's header to its declaration.

mod declaration;
#[cfg(test)]
mod doc_table;
mod invocation;
#[cfg(test)]
mod reach;
#[cfg(test)]
mod tests;

use std::sync::LazyLock;

use redis::Script;

use crate::keys::NamespaceKey;

pub use declaration::{Declaration, Worlds};
pub use invocation::{Invocation, Operation};

/// The library files. `_lib.lua` holds the basics every file uses, as
/// plain locals; every other file is a module: one table (`Players` for
/// `_players.lua`) that others reach its helpers through (`Players.
/// player_state`), its own locals inside a `do` block, so the chunk's
/// locals stay few whatever a module adds (Lua 5.1 allows 200 in one
/// function, and the library is one). Each module names the modules it
/// uses in an `-- @include` line; [`library_order`] loads them after those.
pub const LIBRARY_FILES: &[(&str, &str)] = &[
    ("_lib.lua", include_str!("../../../lua/_lib.lua")),
    (
        "_admission.lua",
        include_str!("../../../lua/_admission.lua"),
    ),
    ("_backfill.lua", include_str!("../../../lua/_backfill.lua")),
    ("_blocks.lua", include_str!("../../../lua/_blocks.lua")),
    (
        "_backfill_store.lua",
        include_str!("../../../lua/_backfill_store.lua"),
    ),
    ("_config.lua", include_str!("../../../lua/_config.lua")),
    (
        "_departures.lua",
        include_str!("../../../lua/_departures.lua"),
    ),
    ("_fifo.lua", include_str!("../../../lua/_fifo.lua")),
    ("_joining.lua", include_str!("../../../lua/_joining.lua")),
    (
        "_lifecycle.lua",
        include_str!("../../../lua/_lifecycle.lua"),
    ),
    (
        "_match_rules.lua",
        include_str!("../../../lua/_match_rules.lua"),
    ),
    ("_matching.lua", include_str!("../../../lua/_matching.lua")),
    ("_outbox.lua", include_str!("../../../lua/_outbox.lua")),
    ("_parties.lua", include_str!("../../../lua/_parties.lua")),
    ("_players.lua", include_str!("../../../lua/_players.lua")),
    ("_presence.lua", include_str!("../../../lua/_presence.lua")),
    ("_roles.lua", include_str!("../../../lua/_roles.lua")),
    (
        "_rule_index.lua",
        include_str!("../../../lua/_rule_index.lua"),
    ),
    (
        "_proposals.lua",
        include_str!("../../../lua/_proposals.lua"),
    ),
    ("_rated.lua", include_str!("../../../lua/_rated.lua")),
    ("_regions.lua", include_str!("../../../lua/_regions.lua")),
    ("_teams.lua", include_str!("../../../lua/_teams.lua")),
    ("_tickets.lua", include_str!("../../../lua/_tickets.lua")),
];

/// The modules a library file names in its `-- @include` line (file
/// stems: `_players`); `_lib.lua` needs none.
pub fn includes(src: &str) -> Vec<&str> {
    src.lines()
        .filter_map(|l| l.strip_prefix("-- @include "))
        .flat_map(str::split_whitespace)
        .filter(|w| w.starts_with('_'))
        .collect()
}

/// The library files in load order: `_lib.lua`, then every module after
/// the modules it includes (a depth-first walk in `LIBRARY_FILES` order,
/// so the order is stable). `Err` names a module whose includes form a
/// circle or name a file that does not exist.
pub fn library_order() -> Result<Vec<(&'static str, &'static str)>, String> {
    fn visit(
        file: &'static str,
        path: &mut Vec<&'static str>,
        out: &mut Vec<(&'static str, &'static str)>,
    ) -> Result<(), String> {
        if out.iter().any(|(f, _)| *f == file) {
            return Ok(());
        }
        if path.contains(&file) {
            return Err(format!("@include circle: {} -> {file}", path.join(" -> ")));
        }
        let src = LIBRARY_FILES
            .iter()
            .find(|(f, _)| *f == file)
            .map(|(_, s)| *s)
            .ok_or_else(|| format!("@include of {file}, which is not a library file"))?;
        path.push(file);
        for stem in includes(src) {
            let named = LIBRARY_FILES
                .iter()
                .find(|(f, _)| f.strip_suffix(".lua") == Some(stem))
                .map(|(f, _)| *f)
                .ok_or_else(|| {
                    format!("{file}: @include of {stem}, which is not a library file")
                })?;
            visit(named, path, out)?;
        }
        path.pop();
        out.push((file, src));
        Ok(())
    }
    let mut out = Vec::new();
    for (file, _) in LIBRARY_FILES {
        visit(file, &mut Vec::new(), &mut out)?;
    }
    Ok(out)
}

/// The shared helpers every script starts with, in [`library_order`]
/// (tests drive single helpers, such as the team packer, through a script
/// of their own on top of this).
pub static LIBRARY: LazyLock<String> = LazyLock::new(|| {
    let mut out = String::new();
    // The order is checked by a test; a broken one cannot be deployed.
    for (_, src) in library_order().unwrap_or_else(|e| panic!("lua library: {e}")) {
        out.push_str(src);
        out.push('\n');
    }
    out
});

/// Every operation in one Redis function library (`FUNCTION LOAD`): the
/// library's helpers are defined once, when it loads, instead of on every
/// call as a self-contained EVALSHA must (defining ~75 helper closures costs
/// ~10 µs per call, more than a whole FIFO join's own work). The name
/// carries a hash of the code, so two versions deployed side by side never
/// replace each other's functions.
pub struct FunctionLibrary {
    pub name: String,
    /// The `FUNCTION LOAD` payload.
    pub code: String,
}

impl FunctionLibrary {
    /// The name of the function that runs `lua/<file>` (e.g. `join.lua`).
    pub fn function(&self, file: &str) -> Option<String> {
        DECLARATIONS
            .iter()
            .any(|d| d.file == file)
            .then(|| function_name(file))
    }
}

/// Operations that never write: registered `no-writes`, so they also run
/// when the server refuses writes (maxmemory reached).
const READ_ONLY: &[&str] = &[
    "match_record.lua",
    "queue_status.lua",
    "player_status.lua",
    "admin_tickets.lua",
    "admin_matches.lua",
];

/// Placeholder for the library name while its hash is computed.
const NAME_SLOT: &str = "@LIBRARY@";

fn function_name(file: &str) -> String {
    format!("{}_{}", FUNCTIONS.name, file.trim_end_matches(".lua"))
}

/// An operation as a chunk of Lua that defines `entry(KEYS, ARGV)`, the
/// function the server calls: the declaration's accessors, then `run`
/// (the prelude and the operation's file). What can be is defined once,
/// when the chunk loads: a closure made on every call is garbage the Lua
/// collector must then reclaim, which every call pays for. An operation
/// that may wake the sleeping matcher (it declares `matcher_asleep`) has
/// `entry` add one more value to its table reply, 1 when the caller must
/// wake the matcher (see `_lib.lua` wake_matcher); the store takes it off
/// before the reply is read.
fn operation_chunk(d: &Declaration) -> String {
    let entry = if d.wakes() {
        "local function entry(KEYS, ARGV)\n  local reply = run(KEYS, ARGV)\n  \
         if type(reply) == 'table' and reply.err == nil then \
         reply[#reply + 1] = CALL.wake and 1 or 0 end\n  return reply\nend\n"
    } else {
        "local entry = run\n"
    };
    format!(
        "{}local ARGS, REST = nil, {{}}\nlocal function run(KEYS, ARGV)\n{}{}\nend\n{entry}",
        d.accessors(),
        d.prelude(),
        own_source(d.file)
    )
}

/// Library + operation, as one self-contained script.
fn standalone_source(d: &Declaration) -> String {
    format!(
        "{}{}return entry(KEYS, ARGV)\n",
        *LIBRARY,
        operation_chunk(d)
    )
}

pub static FUNCTIONS: LazyLock<FunctionLibrary> = LazyLock::new(|| {
    let mut code = format!("#!lua name={NAME_SLOT}\n{}\n", *LIBRARY);
    for d in DECLARATIONS {
        let flags = if READ_ONLY.contains(&d.file) {
            "{'no-writes'}"
        } else {
            "{}"
        };
        let function = format!("{NAME_SLOT}_{}", d.file.trim_end_matches(".lua"));
        // The script's body becomes `run`'s: KEYS and ARGV are its
        // parameters, its top-level `return` the function's.
        code.push_str(&format!(
            "do\n{}redis.register_function{{function_name='{function}', flags={flags}, \
             callback=entry}}\nend\n",
            operation_chunk(d)
        ));
    }
    let hash = Script::new(&code).get_hash().to_owned();
    let name = format!("mm_{}", &hash[..16]);
    FunctionLibrary {
        code: code.replace(NAME_SLOT, &name),
        name,
    }
});

/// Source of every operation as a standalone script, by file name (for
/// tests and tooling).
pub static SOURCES: LazyLock<Vec<(&'static str, String)>> = LazyLock::new(|| {
    DECLARATIONS
        .iter()
        .map(|d| (d.file, standalone_source(d)))
        .collect()
});

/// The declaration of `lua/<file>`.
pub fn declaration(file: &str) -> Option<&'static Declaration> {
    DECLARATIONS.iter().find(|d| d.file == file)
}

/// Declares the operations once: for each, `lua/<op>.lua` with its keys,
/// worlds, arguments and optional tail; becomes [`DECLARATIONS`], the
/// operations' own sources and the fields of [`SCRIPTS`].
macro_rules! operations {
    ($($op:ident {
        keys: [$($key:ident),* $(,)?],
        worlds: $worlds:ident,
        args: [$($arg:ident),* $(,)?]
        $(, rest: $rest:ident)? $(,)?
    })*) => {
        /// Every operation's declaration.
        pub static DECLARATIONS: &[Declaration] = &[
            $(Declaration {
                file: concat!(stringify!($op), ".lua"),
                keys: &[$(NamespaceKey::$key),*],
                worlds: Worlds::$worlds,
                args: &[$(stringify!($arg)),*],
                rest: operations!(@rest $($rest)?),
            },)*
        ];

        /// Each operation's own file, without the library.
        fn own_source(file: &str) -> &'static str {
            match file {
                $(concat!(stringify!($op), ".lua") => include_str!(concat!("../../../lua/", stringify!($op), ".lua")),)*
                _ => "",
            }
        }

        pub struct Scripts {
            $(pub $op: Operation,)*
        }

        pub static SCRIPTS: LazyLock<Scripts> = LazyLock::new(|| {
            let mut declared = DECLARATIONS.iter();
            Scripts {
                $($op: Operation::new(declared.next().expect(stringify!($op))),)*
            }
        });
    };
    (@rest) => { None };
    (@rest $rest:ident) => { Some(stringify!($rest)) };
}

operations! {
    join {
        keys: [Players, TicketSeq, MatchSeq, Matches, MatchExpiry, MatchLifecycle, Outbox,
               OutboxMeta, Notes, Counters, Parties, PartyExpiry, Proposals, ProposalExpiry,
               PlayerRatings, PlayerAttributes, Conns, PlayerConns, Presence, MatcherAsleep,
               Backfills, BackfillExpiry, BlockPairs, BlockCounts],
        worlds: First,
        args: [player, data, claimed, latencies, attributes, config, claim],
        rest: also,
    }
    leave {
        keys: [Players, Outbox, Notes, Counters, Parties, PartyExpiry, Proposals, ProposalExpiry,
               MatcherAsleep, Backfills, BackfillExpiry],
        worlds: First,
        args: [player],
    }
    drop_stale_ticket {
        keys: [Players, Outbox, Notes, Counters, Parties, PartyExpiry, MatcherAsleep],
        worlds: First,
        args: [player],
    }
    form_matches {
        keys: [Players, MatchSeq, Matches, MatchExpiry, MatchLifecycle, Outbox, Notes, Counters,
               Parties, PartyExpiry, Proposals, ProposalExpiry, Presence, MatcherAsleep, Backfills,
               BackfillExpiry, BlockPairs, BlockCounts],
        worlds: First,
        args: [limit, config],
    }
    queue_status {
        keys: [Players],
        worlds: One,
        args: [window, buckets, regions],
    }
    player_status {
        keys: [Players, Matches, MatchExpiry, MatchLifecycle, Parties, Proposals],
        worlds: Many,
        args: [player, window],
    }
    match_record {
        keys: [Matches, MatchExpiry, MatchLifecycle, Backfills],
        worlds: None,
        args: [match_id],
    }
    match_assign {
        keys: [Matches, MatchExpiry, MatchLifecycle, Outbox, MatcherAsleep],
        worlds: None,
        args: [match_id, assignment, game_ttl],
    }
    match_result {
        keys: [Players, Matches, MatchExpiry, MatchLifecycle, Outbox, Notes, Counters, Parties,
               PartyExpiry, Proposals, ProposalExpiry, PlayerRatings, MatcherAsleep, Backfills,
               BackfillExpiry],
        worlds: Many,
        args: [match_id, result, changes, record_sha, ratings],
    }
    backfill_request {
        keys: [Players, Matches, MatchExpiry, MatchLifecycle, Outbox, Notes, Counters, Parties,
               PartyExpiry, Proposals, ProposalExpiry, MatcherAsleep, Backfills, BackfillExpiry],
        worlds: First,
        args: [match_id, teams, keepalive, config, seen],
    }
    backfill_keepalive {
        keys: [Backfills, BackfillExpiry],
        worlds: None,
        args: [match_id, keepalive],
    }
    backfill_cancel {
        keys: [Players, Outbox, Notes, Counters, Parties, PartyExpiry, Proposals, ProposalExpiry,
               MatcherAsleep, Backfills, BackfillExpiry],
        worlds: First,
        args: [match_id],
    }
    rating_set {
        keys: [PlayerRatings],
        worlds: None,
        args: [for_world, player, rating, min, max],
    }
    attributes_set {
        keys: [PlayerAttributes],
        worlds: None,
        args: [player, attributes],
    }
    avoid_set {
        keys: [Avoid, BlockPairs, BlockCounts],
        worlds: None,
        args: [player, players, max],
    }
    sweep_tickets {
        keys: [Players, Outbox, Notes, Counters, Parties, PartyExpiry, MatcherAsleep],
        worlds: First,
        args: [limit],
    }
    housekeeping {
        keys: [Players, Matches, MatchExpiry, MatchLifecycle, Outbox, Notes, Counters, Parties,
               PartyExpiry, Proposals, ProposalExpiry, Conns, ConnExpiry, PlayerConns, Presence,
               MatcherAsleep, Backfills, BackfillExpiry],
        worlds: Many,
        args: [limit, remove_ticket],
    }
    outbox_claim {
        keys: [Matches, MatchLifecycle, Outbox, OutboxMeta, Notes, Conns, PlayerConns],
        worlds: None,
        args: [lease, limit, young],
        rest: only,
    }
    outbox_settle {
        keys: [Outbox, OutboxMeta, Notes],
        worlds: None,
        args: [],
        rest: settlements,
    }
    conn_register {
        keys: [Players, Matches, MatchExpiry, MatchLifecycle, Outbox, OutboxMeta, Conns,
               ConnExpiry, PlayerConns, Presence, MatcherAsleep],
        worlds: None,
        args: [conn, player, ttl, cap, replay],
    }
    conn_unregister {
        keys: [Players, Outbox, Notes, Counters, Parties, PartyExpiry, Proposals, ProposalExpiry,
               Conns, ConnExpiry, PlayerConns, Presence, MatcherAsleep, Backfills, BackfillExpiry],
        worlds: Many,
        args: [conn, remove_ticket],
    }
    conn_heartbeat {
        keys: [Conns, ConnExpiry, Presence],
        worlds: None,
        args: [conn, ttl],
    }
    lease_acquire {
        keys: [MatcherLease, MatcherAsleep],
        worlds: None,
        args: [token, ttl],
    }
    matcher_sleep {
        keys: [Outbox, OutboxMeta, PartyExpiry, ProposalExpiry, MatcherLease, MatcherAsleep,
               BackfillExpiry],
        worlds: Many,
        args: [token, patience],
    }
    lease_release {
        keys: [MatcherLease],
        worlds: None,
        args: [token],
    }
    party_create {
        keys: [Players, Matches, MatchExpiry, MatchLifecycle, Outbox, Notes, Counters, Parties,
               PartyExpiry, Proposals, PlayerRatings, PlayerAttributes, Presence, MatcherAsleep],
        worlds: First,
        args: [leader, data, claimed, latencies, attributes, config, also],
        rest: invited,
    }
    party_join {
        keys: [Players, TicketSeq, MatchSeq, Matches, MatchExpiry, MatchLifecycle, Outbox,
               OutboxMeta, Notes, Counters, Parties, PartyExpiry, Proposals, ProposalExpiry,
               PlayerRatings, PlayerAttributes, Conns, PlayerConns, Presence, MatcherAsleep, BlockPairs, BlockCounts],
        worlds: First,
        args: [player, party, data, claimed, latencies, attributes, config, claim],
        rest: also,
    }
    party_cancel {
        keys: [Players, Outbox, Notes, Counters, Parties, PartyExpiry, Proposals, ProposalExpiry,
               MatcherAsleep, Backfills, BackfillExpiry],
        worlds: First,
        args: [player, party],
    }
    proposal_answer {
        keys: [Players, Matches, MatchExpiry, MatchLifecycle, Outbox, Notes, Counters, Parties,
               PartyExpiry, Proposals, ProposalExpiry, MatcherAsleep, Backfills, BackfillExpiry],
        worlds: First,
        args: [player, match_id, answer, config],
    }
    admin_tickets {
        keys: [Players, Parties],
        worlds: One,
        args: [after, limit],
    }
    admin_matches {
        keys: [Matches, MatchExpiry, MatchLifecycle, Proposals, ProposalExpiry],
        worlds: None,
        args: [world, offset, scan, limit],
    }
    admin_remove_ticket {
        keys: [Players, Outbox, Notes, Counters, Parties, PartyExpiry, MatcherAsleep],
        worlds: First,
        args: [player],
    }
    admin_cancel_proposal {
        keys: [Players, Outbox, Notes, Counters, Parties, PartyExpiry, Proposals, ProposalExpiry,
               MatcherAsleep, Backfills, BackfillExpiry],
        worlds: Many,
        args: [match_id],
    }
    audit_append {
        keys: [Audit],
        worlds: None,
        args: [entry, cap],
    }
}
