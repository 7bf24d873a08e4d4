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

use std::sync::{LazyLock, OnceLock};

use redis::{Cmd, Script, ScriptInvocation, ToRedisArgs};

use crate::domain::WorldName;
use crate::keys::{KeyLayout, NamespaceKey, WorldKey};

/// The library files, in load order (each may use what the earlier ones
/// define; none forward-declares another's functions).
pub const LIBRARY_FILES: &[(&str, &str)] = &[
    ("_lib.lua", include_str!("../../lua/_lib.lua")),
    ("_config.lua", include_str!("../../lua/_config.lua")),
    ("_players.lua", include_str!("../../lua/_players.lua")),
    ("_regions.lua", include_str!("../../lua/_regions.lua")),
    ("_lifecycle.lua", include_str!("../../lua/_lifecycle.lua")),
    ("_parties.lua", include_str!("../../lua/_parties.lua")),
    ("_tickets.lua", include_str!("../../lua/_tickets.lua")),
    (
        "_backfill_store.lua",
        include_str!("../../lua/_backfill_store.lua"),
    ),
    ("_proposals.lua", include_str!("../../lua/_proposals.lua")),
    ("_departures.lua", include_str!("../../lua/_departures.lua")),
    ("_presence.lua", include_str!("../../lua/_presence.lua")),
    ("_outbox.lua", include_str!("../../lua/_outbox.lua")),
    ("_teams.lua", include_str!("../../lua/_teams.lua")),
    ("_matching.lua", include_str!("../../lua/_matching.lua")),
    ("_rated.lua", include_str!("../../lua/_rated.lua")),
    ("_backfill.lua", include_str!("../../lua/_backfill.lua")),
];

/// The shared helpers every script starts with (tests drive single helpers,
/// such as the team packer, through a script of their own on top of this).
pub static LIBRARY: LazyLock<String> = LazyLock::new(|| {
    let mut out = String::new();
    for (_, src) in LIBRARY_FILES {
        out.push_str(src);
        out.push('\n');
    }
    out
});

/// Where an operation's world keys come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Worlds {
    /// No world keys.
    None,
    /// Exactly one world block; `k` holds the namespace's keys and the world's.
    One,
    /// Any number of world blocks (a world name each); `k` holds the
    /// namespace's keys only, `world_keys(i)` / `world_of(name)` a world's.
    Many,
    /// As `Many`, with at least one world; `k` holds the first world's keys too.
    First,
}

/// What an operation takes: its KEYS and ARGV, by name.
#[derive(Debug)]
pub struct Declaration {
    pub file: &'static str,
    /// Namespace keys, in the namespace block's order.
    pub keys: &'static [NamespaceKey],
    pub worlds: Worlds,
    /// Fixed arguments, in order; the world names follow them.
    pub args: &'static [&'static str],
    /// A variadic tail after the world names, if any.
    pub rest: Option<&'static str>,
}

impl Declaration {
    /// Whether the operation may wake the sleeping matcher: its table
    /// replies end with the wake flag.
    pub fn wakes(&self) -> bool {
        self.keys.contains(&NamespaceKey::MatcherAsleep)
    }

    /// The accessors put in front of the script's body: every key and
    /// argument by name, validated counts, the world blocks.
    pub fn prelude(&self) -> String {
        let ns = self.keys.len();
        let width = WorldKey::ALL.len();
        let fixed = self.args.len();
        let ns_fields: Vec<String> = self
            .keys
            .iter()
            .enumerate()
            .map(|(i, key)| format!("{} = KEYS[{}]", key.name(), i + 1))
            .collect();
        let mut out = String::new();
        let worlds = self.worlds != Worlds::None;
        let asleep = self
            .keys
            .iter()
            .position(|k| *k == NamespaceKey::MatcherAsleep)
            .map_or_else(|| "nil".to_owned(), |i| format!("KEYS[{}]", i + 1));
        out.push_str(&format!("CALL.wake, CALL.asleep = false, {asleep}\n"));
        out.push_str(&format!(
            "local NS_KEYS, WORLD_KEYS, FIXED_ARGS = {ns}, {width}, {fixed}\n"
        ));
        if worlds {
            out.push_str(
                "if #KEYS < NS_KEYS or (#KEYS - NS_KEYS) % WORLD_KEYS ~= 0 then \
                 return fail('KEYS must be the declared namespace keys and whole world blocks') end\n\
                 local world_count = (#KEYS - NS_KEYS) / WORLD_KEYS\n",
            );
            match self.worlds {
                Worlds::One => out.push_str(
                    "if world_count ~= 1 then return fail('expected one world block') end\n",
                ),
                Worlds::First => out.push_str(
                    "if world_count < 1 then return fail('expected at least one world block') end\n",
                ),
                _ => {}
            }
            out.push_str(
                "if #ARGV < FIXED_ARGS + world_count then \
                 return fail('expected the declared arguments and a world name per world block') end\n\
                 local worlds = {}\n\
                 for i = 1, world_count do\n  worlds[i] = ARGV[FIXED_ARGS + i]\n  \
                 if worlds[i] == '' then return fail('world name is empty') end\nend\n",
            );
        } else {
            out.push_str(
                "if #KEYS ~= NS_KEYS then return fail('KEYS must be the declared keys') end\n\
                 local world_count = 0\n",
            );
        }
        if self.rest.is_some() {
            out.push_str(
                "local rest = {}\n\
                 for i = FIXED_ARGS + world_count + 1, #ARGV do rest[#rest + 1] = ARGV[i] end\n",
            );
        } else {
            out.push_str(
                "if #ARGV ~= FIXED_ARGS + world_count then \
                 return fail('expected exactly the declared arguments') end\n",
            );
        }
        if self.args.is_empty() {
            out.push_str("local args = strict({})\n");
        } else {
            // One table per function, refilled on every call (see
            // `operation_chunk`); made on the first call, as `setmetatable`
            // may not be called while the library loads.
            let empty: Vec<String> = self
                .args
                .iter()
                .map(|name| format!("{name} = ''"))
                .collect();
            let names: Vec<String> = self
                .args
                .iter()
                .map(|name| format!("ARGS.{name}"))
                .collect();
            let values: Vec<String> = (1..=self.args.len())
                .map(|i| format!("ARGV[{i}]"))
                .collect();
            out.push_str(&format!(
                "if not ARGS then ARGS = strict({{ {} }}) end\n{} = {}\nlocal args = ARGS\n",
                empty.join(", "),
                names.join(", "),
                values.join(", ")
            ));
        }
        if worlds {
            // The world accessors (`Declaration::accessors`, defined once
            // around the function) read this call's blocks.
            out.push_str("CUR_KEYS, CUR_WORLDS, CUR_WORLD_COUNT = KEYS, worlds, world_count\n");
        }
        match self.worlds {
            Worlds::One | Worlds::First => out.push_str("local k = world_keys(1)\n"),
            Worlds::None | Worlds::Many => out.push_str(&format!(
                "local k = strict({{ {} }})\n",
                ns_fields.join(", ")
            )),
        }
        out
    }
    /// What an operation's function is built around, once per function
    /// rather than on every call: for operations with world blocks,
    /// `world_keys(i)` and `world_of(name)`, reading the blocks of the
    /// running call (`CUR_*`, set by the prelude). A world block's key table
    /// is built once per namespace and world and kept (`KEY_CACHE`, at most
    /// `KEY_CACHE_MAX` tables): the store derives every key from the
    /// namespace and the world, so a block's first key and the namespace's
    /// first key name all of them. Building it costs ~1.4 us per call.
    fn accessors(&self) -> String {
        if self.worlds == Worlds::None {
            return String::new();
        }
        let ns = self.keys.len();
        let width = WorldKey::ALL.len();
        let mut fields: Vec<String> = self
            .keys
            .iter()
            .enumerate()
            .map(|(i, key)| format!("{} = KEYS[{}]", key.name(), i + 1))
            .collect();
        fields.extend(
            WorldKey::ALL
                .iter()
                .enumerate()
                .map(|(i, key)| format!("{} = KEYS[b + {}]", key.name(), i + 1)),
        );
        format!(
            "local KEY_CACHE, KEY_CACHE_N, KEY_CACHE_MAX = {{}}, 0, 256\n\
             local CUR_KEYS, CUR_WORLDS, CUR_WORLD_COUNT\n\
             local function world_keys(i)\n  local KEYS = CUR_KEYS\n  \
             local b = {ns} + (i - 1) * {width}\n  \
             local by_ns = KEY_CACHE[KEYS[1]]\n  \
             local hit = by_ns and by_ns[KEYS[b + 1]]\n  \
             if hit then return hit end\n  \
             if KEY_CACHE_N >= KEY_CACHE_MAX then KEY_CACHE, KEY_CACHE_N, by_ns = {{}}, 0, nil end\n  \
             if not by_ns then\n    by_ns = {{}}\n    KEY_CACHE[KEYS[1]] = by_ns\n  end\n  \
             local t = strict({{ {} }})\n  \
             by_ns[KEYS[b + 1]], KEY_CACHE_N = t, KEY_CACHE_N + 1\n  return t\nend\n\
             local function world_of(name)\n  for i = 1, CUR_WORLD_COUNT do\n    \
             if CUR_WORLDS[i] == name then return world_keys(i) end\n  end\n  return nil\nend\n",
            fields.join(", ")
        )
    }
}

/// One operation: a function of the [`FUNCTIONS`] library (the fast path)
/// and the same code as a standalone script (the EVALSHA fallback for a
/// server that refuses `FUNCTION LOAD`).
pub struct Operation {
    pub declaration: &'static Declaration,
    /// The function's name in the loaded library.
    pub function: String,
    /// Hashed into a [`Script`] only when EVALSHA is used: hashing all of
    /// them (~1.4 MB) would slow every cold start.
    script: OnceLock<Script>,
}

impl Operation {
    fn new(declaration: &'static Declaration) -> Self {
        Self {
            declaration,
            function: function_name(declaration.file),
            script: OnceLock::new(),
        }
    }

    fn script(&self) -> &Script {
        self.script
            .get_or_init(|| Script::new(&standalone_source(self.declaration)))
    }

    /// Starts a call with the declared namespace keys and a world block for
    /// each of `worlds` (their names follow the fixed arguments); add the
    /// fixed arguments in declared order with [`Invocation::arg`], then the
    /// tail with [`Invocation::rest`].
    pub fn invocation(&self, layout: &KeyLayout, worlds: &[&WorldName]) -> Invocation<'_> {
        let mut keys = Vec::new();
        for key in self.declaration.keys {
            layout.namespace_key(*key).write_redis_args(&mut keys);
        }
        for world in worlds {
            for key in WorldKey::ALL {
                layout.world_key(world, *key).write_redis_args(&mut keys);
            }
        }
        Invocation {
            operation: self,
            keys,
            args: Vec::new(),
            world_names: worlds
                .iter()
                .map(|w| w.as_str().as_bytes().to_vec())
                .collect(),
            rest: Vec::new(),
        }
    }
}

/// The KEYS and ARGV of one call, sent as `FCALL` or, as a fallback, `EVALSHA`.
pub struct Invocation<'a> {
    operation: &'a Operation,
    keys: Vec<Vec<u8>>,
    args: Vec<Vec<u8>>,
    world_names: Vec<Vec<u8>>,
    rest: Vec<Vec<u8>>,
}

impl Invocation<'_> {
    /// Whether the operation's table replies end with the wake flag.
    pub fn wakes(&self) -> bool {
        self.operation.declaration.wakes()
    }

    /// The next fixed argument (one value).
    pub fn arg<T: ToRedisArgs>(&mut self, arg: T) -> &mut Self {
        arg.write_redis_args(&mut self.args);
        self
    }

    /// Values of the variadic tail.
    pub fn rest<T: ToRedisArgs>(&mut self, values: T) -> &mut Self {
        values.write_redis_args(&mut self.rest);
        self
    }

    /// The KEYS, in order (for tests).
    pub fn keys(&self) -> Vec<String> {
        self.keys
            .iter()
            .map(|k| String::from_utf8_lossy(k).into_owned())
            .collect()
    }

    /// The ARGV, in order (for tests).
    pub fn argv(&self) -> Vec<String> {
        self.all_args()
            .map(|a| String::from_utf8_lossy(a).into_owned())
            .collect()
    }

    fn all_args(&self) -> impl Iterator<Item = &Vec<u8>> {
        debug_assert_eq!(
            self.args.len(),
            self.operation.declaration.args.len(),
            "{}: the fixed arguments are {:?}",
            self.operation.declaration.file,
            self.operation.declaration.args
        );
        self.args.iter().chain(&self.world_names).chain(&self.rest)
    }

    /// `FCALL <function> <numkeys> KEYS... ARGV...`
    pub fn fcall(&self) -> Cmd {
        let mut cmd = redis::cmd("FCALL");
        cmd.arg(&self.operation.function).arg(self.keys.len());
        for key in &self.keys {
            cmd.arg(key.as_slice());
        }
        for arg in self.all_args() {
            cmd.arg(arg.as_slice());
        }
        cmd
    }

    /// The operation's file (`join.lua`).
    pub fn file(&self) -> &'static str {
        self.operation.declaration.file
    }

    /// The same call as a plain `EVALSHA` command (for a pipeline; on
    /// NOSCRIPT load it with [`Invocation::script_invocation`]'s `load_async`).
    pub fn evalsha(&self) -> Cmd {
        let mut cmd = redis::cmd("EVALSHA");
        cmd.arg(self.operation.script().get_hash())
            .arg(self.keys.len());
        for key in &self.keys {
            cmd.arg(key.as_slice());
        }
        for arg in self.all_args() {
            cmd.arg(arg.as_slice());
        }
        cmd
    }

    /// The same call as `EVALSHA` of the standalone script (reloaded on
    /// NOSCRIPT by the redis crate).
    pub fn script_invocation(&self) -> ScriptInvocation<'_> {
        let mut inv = self.operation.script().prepare_invoke();
        for key in &self.keys {
            inv.key(key.as_slice());
        }
        for arg in self.all_args() {
            inv.arg(arg.as_slice());
        }
        inv
    }
}

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
const READ_ONLY: &[&str] = &["match_record.lua", "queue_status.lua", "player_status.lua"];

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
        "{}local ARGS\nlocal function run(KEYS, ARGV)\n{}{}\nend\n{entry}",
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
                $(concat!(stringify!($op), ".lua") => include_str!(concat!("../../lua/", stringify!($op), ".lua")),)*
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
               OutboxMeta, Notes, Counters, Parties, Proposals, ProposalExpiry, PlayerRatings,
               Conns, PlayerConns, Presence, MatcherAsleep, Backfills, BackfillExpiry],
        worlds: First,
        args: [player, data, claimed, latencies, config, claim],
    }
    leave {
        keys: [Players, Outbox, Notes, Counters, Parties, PartyExpiry, Proposals, ProposalExpiry,
               MatcherAsleep, Backfills, BackfillExpiry],
        worlds: One,
        args: [player],
    }
    drop_stale_ticket {
        keys: [Players],
        worlds: One,
        args: [player],
    }
    form_matches {
        keys: [Players, MatchSeq, Matches, MatchExpiry, MatchLifecycle, Outbox, Notes, Counters,
               Parties, Proposals, ProposalExpiry, Presence, Backfills, BackfillExpiry],
        worlds: One,
        args: [limit, config],
    }
    queue_status {
        keys: [Players],
        worlds: One,
        args: [window, buckets, regions],
    }
    player_status {
        keys: [Players, Matches, MatchExpiry, MatchLifecycle, Parties, Proposals, Backfills,
               BackfillExpiry],
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
        keys: [Matches, MatchExpiry, MatchLifecycle, Outbox, PlayerRatings, MatcherAsleep,
               Backfills, BackfillExpiry],
        worlds: None,
        args: [match_id, result, changes, record_sha, ratings],
    }
    backfill_request {
        keys: [Players, Matches, MatchExpiry, MatchLifecycle, Outbox, Notes, Counters, Parties,
               Proposals, ProposalExpiry, MatcherAsleep, Backfills, BackfillExpiry],
        worlds: One,
        args: [match_id, teams, keepalive, config, seen],
    }
    backfill_keepalive {
        keys: [Backfills, BackfillExpiry],
        worlds: None,
        args: [match_id, keepalive],
    }
    backfill_cancel {
        keys: [Players, Outbox, Notes, Counters, Parties, Proposals, ProposalExpiry,
               MatcherAsleep, Backfills, BackfillExpiry],
        worlds: One,
        args: [match_id],
    }
    rating_set {
        keys: [PlayerRatings],
        worlds: None,
        args: [for_world, player, rating, min, max],
    }
    sweep_tickets {
        keys: [Players, Outbox, Notes, Counters, Parties],
        worlds: One,
        args: [limit],
    }
    housekeeping {
        keys: [Players, Matches, MatchExpiry, MatchLifecycle, Outbox, Notes, Counters, Parties,
               PartyExpiry, Proposals, ProposalExpiry, Conns, ConnExpiry, PlayerConns, Presence,
               Backfills, BackfillExpiry],
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
               PartyExpiry, Proposals, PlayerRatings, Presence, MatcherAsleep, Backfills,
               BackfillExpiry],
        worlds: One,
        args: [leader, data, claimed, latencies, config],
        rest: invited,
    }
    party_join {
        keys: [Players, TicketSeq, MatchSeq, Matches, MatchExpiry, MatchLifecycle, Outbox,
               OutboxMeta, Notes, Counters, Parties, PartyExpiry, Proposals, ProposalExpiry,
               PlayerRatings, Conns, PlayerConns, Presence, MatcherAsleep, Backfills,
               BackfillExpiry],
        worlds: One,
        args: [player, party, data, claimed, latencies, config, claim],
    }
    party_cancel {
        keys: [Players, Outbox, Notes, Counters, Parties, PartyExpiry, Proposals, ProposalExpiry,
               MatcherAsleep, Backfills, BackfillExpiry],
        worlds: One,
        args: [player, party],
    }
    proposal_answer {
        keys: [Players, Matches, MatchExpiry, MatchLifecycle, Outbox, Notes, Counters, Parties,
               Proposals, ProposalExpiry, MatcherAsleep, Backfills, BackfillExpiry],
        worlds: One,
        args: [player, match_id, answer, config],
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;

    #[test]
    fn the_function_library_registers_every_operation_once() {
        assert!(FUNCTIONS
            .code
            .starts_with(&format!("#!lua name={}\n", FUNCTIONS.name)));
        assert!(!FUNCTIONS.code.contains(NAME_SLOT));
        for d in DECLARATIONS {
            let name = FUNCTIONS.function(d.file).unwrap();
            let registration = format!("function_name='{name}',");
            assert_eq!(
                FUNCTIONS.code.matches(&registration).count(),
                1,
                "{}",
                d.file
            );
            assert!(!own_source(d.file).is_empty(), "{}", d.file);
        }
        assert_eq!(FUNCTIONS.function("nope.lua"), None);
        for file in READ_ONLY {
            assert!(declaration(file).is_some(), "{file}");
        }
    }

    /// Every file in lua/: the operations are declared, the library files
    /// listed in LIBRARY_FILES, nothing else.
    #[test]
    fn every_lua_file_is_declared_once() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../lua");
        let mut on_disk: BTreeSet<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|f| f.ends_with(".lua"))
            .collect();
        for (file, _) in LIBRARY_FILES {
            assert!(on_disk.remove(*file), "{file} listed but not in lua/");
        }
        for d in DECLARATIONS {
            assert!(
                on_disk.remove(d.file),
                "{} declared but not in lua/",
                d.file
            );
        }
        assert!(on_disk.is_empty(), "undeclared lua files: {on_disk:?}");
    }

    /// The header of lua/<op>.lua, between its first line and the first
    /// line that is not a comment.
    fn header(file: &str) -> Vec<&'static str> {
        own_source(file)
            .lines()
            .take_while(|l| l.starts_with("--"))
            .collect()
    }

    /// A script's header lists its KEYS (`-- KEYS   a b c`, namespace keys
    /// in declared order), its world blocks (`-- WORLDS ...`), its fixed
    /// arguments one per line (`-- ARGV   name  what it is`), its tail
    /// (`-- REST   name  ...`) and its reply (`-- Reply`): exactly the
    /// declaration.
    #[test]
    fn every_script_header_matches_its_declaration() {
        for d in DECLARATIONS {
            let lines = header(d.file);
            assert!(
                lines
                    .first()
                    .is_some_and(|l| l.starts_with(&format!("-- {}:", d.file))),
                "{} must start with a `-- {}:` header",
                d.file,
                d.file
            );
            let tagged = |tag: &str| -> Vec<&str> {
                lines
                    .iter()
                    .filter_map(|l| l.strip_prefix(&format!("-- {tag} ")))
                    .collect()
            };
            let keys: Vec<&str> = tagged("KEYS")
                .iter()
                .flat_map(|l| l.split_whitespace())
                .collect();
            let declared: Vec<&str> = d.keys.iter().map(|k| k.name()).collect();
            assert_eq!(keys, declared, "{}: header KEYS vs declaration", d.file);
            assert!(
                d.keys.windows(2).all(|w| w[0] < w[1]),
                "{}: declare keys once each, in the namespace block's order",
                d.file
            );
            assert_eq!(
                !tagged("WORLDS").is_empty(),
                d.worlds != Worlds::None,
                "{}: header WORLDS vs declaration",
                d.file
            );
            let args: Vec<&str> = tagged("ARGV")
                .iter()
                .filter_map(|l| l.split_whitespace().next())
                .collect();
            assert_eq!(args, d.args, "{}: header ARGV vs declaration", d.file);
            let rest: Vec<&str> = tagged("REST")
                .iter()
                .filter_map(|l| l.split_whitespace().next())
                .collect();
            assert_eq!(rest.first().copied(), d.rest, "{}: header REST", d.file);
            assert!(
                lines.iter().any(|l| l.starts_with("-- Reply")),
                "{} header must document its Reply",
                d.file
            );
        }
    }

    /// Scripts reach KEYS and ARGV only through the generated accessors, and
    /// use only declared keys and arguments.
    #[test]
    fn scripts_use_only_their_declared_keys_and_arguments() {
        let key_names: BTreeSet<&str> = NamespaceKey::ALL
            .iter()
            .map(|k| k.name())
            .chain(WorldKey::ALL.iter().map(|k| k.name()))
            .collect();
        for (file, src) in LIBRARY_FILES {
            assert!(!src.contains("KEYS") && !src.contains("ARGV"), "{file}");
        }
        for d in DECLARATIONS {
            let src = own_source(d.file);
            for raw in ["KEYS[", "ARGV[", "#KEYS", "#ARGV", "(KEYS", "(ARGV"] {
                assert!(
                    !src.contains(raw),
                    "{} reads KEYS or ARGV directly ({raw})",
                    d.file
                );
            }
            let mut used_args = BTreeSet::new();
            for (i, _) in src.match_indices("args.") {
                let name: String = src[i + 5..]
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect();
                assert!(
                    d.args.contains(&name.as_str()),
                    "{}: args.{name} is not declared",
                    d.file
                );
                used_args.insert(name);
            }
            for a in d.args {
                assert!(
                    used_args.contains(*a),
                    "{}: declared argument {a} is not used",
                    d.file
                );
            }
            let declared: BTreeSet<&str> = d
                .keys
                .iter()
                .map(|k| k.name())
                .chain(
                    (d.worlds != Worlds::None)
                        .then_some(WorldKey::ALL.iter().map(|k| k.name()))
                        .into_iter()
                        .flatten(),
                )
                .collect();
            for (i, _) in src.match_indices("k.") {
                let before = src[..i].chars().last();
                if before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_') {
                    continue;
                }
                let name: String = src[i + 2..]
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect();
                if key_names.contains(name.as_str()) {
                    assert!(
                        declared.contains(name.as_str()),
                        "{}: k.{name} is not declared",
                        d.file
                    );
                }
            }
        }
    }

    #[test]
    fn no_library_file_forward_declares_a_function() {
        for (file, src) in LIBRARY_FILES {
            for line in src.lines() {
                let bare_local = line.starts_with("local ")
                    && !line.contains('=')
                    && !line.starts_with("local function");
                assert!(!bare_local, "{file}: forward declaration `{line}`");
                assert!(
                    !line.starts_with("function "),
                    "{file}: global function `{line}`"
                );
            }
        }
    }

    /// Helpers needing more than five values take a table (ctx, opts).
    #[test]
    fn no_lua_function_takes_more_than_five_parameters() {
        let own = DECLARATIONS.iter().map(|d| (d.file, own_source(d.file)));
        for (file, src) in LIBRARY_FILES.iter().copied().chain(own) {
            for line in src.lines() {
                let Some(at) = line.find("function") else {
                    continue;
                };
                let rest = &line[at..];
                let (Some(open), Some(close)) = (rest.find('('), rest.find(')')) else {
                    continue;
                };
                if close < open {
                    continue;
                }
                let params = rest[open + 1..close]
                    .split(',')
                    .filter(|p| !p.trim().is_empty())
                    .count();
                assert!(
                    params <= 5,
                    "{file}: `{}` takes {params} parameters",
                    line.trim()
                );
            }
        }
    }

    #[test]
    fn invocations_carry_the_declared_keys_in_order() {
        let layout = KeyLayout::new("t");
        let w = WorldName::parse("world1").unwrap();
        let mut inv = SCRIPTS.form_matches.invocation(&layout, &[&w]);
        inv.arg(0).arg("{}");
        let keys = inv.keys();
        assert_eq!(keys[0], layout.players());
        assert_eq!(
            keys.len(),
            SCRIPTS.form_matches.declaration.keys.len() + WorldKey::ALL.len()
        );
        assert_eq!(keys.last().unwrap(), &layout.world(&w).backfill_ratings);
        assert_eq!(inv.argv(), ["0", "{}", "world1"]);
    }

    #[test]
    fn no_script_sets_expire_on_a_whole_key() {
        // The seed put EXPIRE on the queue: one join reset everyone's lifetime.
        for (name, src) in SOURCES.iter() {
            for cmd in ["'EXPIRE'", "'PEXPIRE'", "'EXPIREAT'"] {
                assert!(!src.contains(cmd), "{name} uses {cmd}");
            }
        }
    }
}
