//! The Lua scripts, embedded at compile time. The operations run as the
//! functions of one Redis function library ([`FUNCTIONS`]: the library files
//! `lua/_*.lua`, in the order `_lib.lua` lists, then one function per
//! operation file), loaded on first use. Each operation also exists as a
//! self-contained script (library + operation) for servers without
//! functions (before Redis 7) and for tests that drive helpers directly.

use std::sync::{LazyLock, OnceLock};

use redis::{Cmd, Script, ScriptInvocation, ToRedisArgs};

macro_rules! library {
    () => {
        concat!(
            include_str!("../../lua/_lib.lua"),
            "\n",
            include_str!("../../lua/_tickets.lua"),
            "\n",
            include_str!("../../lua/_presence.lua"),
            "\n",
            include_str!("../../lua/_teams.lua"),
            "\n",
            include_str!("../../lua/_proposals.lua"),
            "\n",
            include_str!("../../lua/_matching.lua"),
            "\n",
            include_str!("../../lua/_rated.lua"),
            "\n",
            include_str!("../../lua/_config.lua"),
            "\n",
        )
    };
}

macro_rules! lua {
    ($file:expr) => {
        concat!(library!(), include_str!(concat!("../../lua/", $file)))
    };
}

/// The shared helpers every script starts with (tests drive single helpers,
/// such as the team packer, through a script of their own on top of this).
pub const LIBRARY: &str = library!();

/// One operation: a function of the [`FUNCTIONS`] library (the fast path)
/// and the same code as a standalone script (the EVALSHA fallback for a
/// server that refuses `FUNCTION LOAD`).
pub(crate) struct Operation {
    /// The function's name in the loaded library.
    pub function: String,
    /// Library + operation, hashed into a [`Script`] only when EVALSHA is
    /// used: hashing all 21 (~1.4 MB) would slow every cold start.
    source: &'static str,
    script: OnceLock<Script>,
}

impl Operation {
    fn new(file: &'static str, source: &'static str) -> Self {
        Self {
            function: function_name(file),
            source,
            script: OnceLock::new(),
        }
    }

    fn script(&self) -> &Script {
        self.script.get_or_init(|| Script::new(self.source))
    }

    /// Starts an invocation; add KEYS and ARGV in the order of the script's header.
    pub fn prepare_invoke(&self) -> Invocation<'_> {
        Invocation {
            operation: self,
            keys: Vec::new(),
            args: Vec::new(),
        }
    }
}

/// The KEYS and ARGV of one call, sent as `FCALL` or, as a fallback, `EVALSHA`.
pub(crate) struct Invocation<'a> {
    operation: &'a Operation,
    keys: Vec<Vec<u8>>,
    args: Vec<Vec<u8>>,
}

impl Invocation<'_> {
    pub fn key<T: ToRedisArgs>(&mut self, key: T) -> &mut Self {
        key.write_redis_args(&mut self.keys);
        self
    }

    pub fn arg<T: ToRedisArgs>(&mut self, arg: T) -> &mut Self {
        arg.write_redis_args(&mut self.args);
        self
    }

    /// `FCALL <function> <numkeys> KEYS... ARGV...`
    pub fn fcall(&self) -> Cmd {
        let mut cmd = redis::cmd("FCALL");
        cmd.arg(&self.operation.function)
            .arg(self.keys.len())
            .arg(&self.keys)
            .arg(&self.args);
        cmd
    }

    /// The same call as `EVALSHA` of the standalone script (reloaded on
    /// NOSCRIPT by the redis crate).
    pub fn script_invocation(&self) -> ScriptInvocation<'_> {
        let mut inv = self.operation.script().prepare_invoke();
        for key in &self.keys {
            inv.key(key.as_slice());
        }
        for arg in &self.args {
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
        OWN_SOURCES
            .iter()
            .any(|(f, _)| *f == file)
            .then(|| function_name(file))
    }
}

/// Operations that never write: registered `no-writes`, so they also run
/// when the server refuses writes (maxmemory reached).
const READ_ONLY: &[&str] = &["match_record.lua", "queue_status.lua"];

/// Placeholder for the library name while its hash is computed.
const NAME_SLOT: &str = "@LIBRARY@";

fn function_name(file: &str) -> String {
    format!("{}_{}", FUNCTIONS.name, file.trim_end_matches(".lua"))
}

pub static FUNCTIONS: LazyLock<FunctionLibrary> = LazyLock::new(|| {
    let mut code = format!("#!lua name={NAME_SLOT}\n{LIBRARY}\n");
    for (file, own) in OWN_SOURCES {
        let flags = if READ_ONLY.contains(file) {
            "{'no-writes'}"
        } else {
            "{}"
        };
        let function = format!("{NAME_SLOT}_{}", file.trim_end_matches(".lua"));
        // The script's body becomes the function's body: KEYS and ARGV are
        // its parameters, its top-level `return` the function's.
        code.push_str(&format!(
            "redis.register_function{{function_name='{function}', flags={flags}, \
             callback=function(KEYS, ARGV)\n{own}\nend}}\n"
        ));
    }
    let hash = Script::new(&code).get_hash().to_owned();
    let name = format!("mm_{}", &hash[..16]);
    FunctionLibrary {
        code: code.replace(NAME_SLOT, &name),
        name,
    }
});

/// Declares the operations once: `lua/<op>.lua` for each name, as a
/// standalone source ([`SOURCES`]), as its own body ([`OWN_SOURCES`], for the
/// function library) and as a field of [`SCRIPTS`].
macro_rules! operations {
    ($($op:ident),* $(,)?) => {
        /// Source of every operation script, by file name (for tests and tooling).
        pub const SOURCES: &[(&str, &str)] = &[
            $((concat!(stringify!($op), ".lua"), lua!(concat!(stringify!($op), ".lua")))),*
        ];

        /// Each operation's own code, without the library.
        const OWN_SOURCES: &[(&str, &str)] = &[
            $((
                concat!(stringify!($op), ".lua"),
                include_str!(concat!("../../lua/", stringify!($op), ".lua")),
            )),*
        ];

        pub(crate) struct Scripts {
            $(pub $op: Operation,)*
        }

        pub(crate) static SCRIPTS: LazyLock<Scripts> = LazyLock::new(|| Scripts {
            $($op: Operation::new(
                concat!(stringify!($op), ".lua"),
                lua!(concat!(stringify!($op), ".lua")),
            ),)*
        });
    };
}

operations!(
    join,
    leave,
    drop_stale_ticket,
    form_matches,
    queue_status,
    player_status,
    match_record,
    rating_set,
    sweep_tickets,
    housekeeping,
    outbox_claim,
    outbox_settle,
    conn_register,
    conn_unregister,
    conn_heartbeat,
    lease_acquire,
    lease_release,
    party_create,
    party_join,
    party_cancel,
    proposal_answer,
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_function_library_registers_every_operation_once() {
        let own: Vec<&str> = OWN_SOURCES.iter().map(|(f, _)| *f).collect();
        let all: Vec<&str> = SOURCES.iter().map(|(f, _)| *f).collect();
        assert_eq!(own, all, "OWN_SOURCES and SOURCES list the same files");
        assert!(FUNCTIONS
            .code
            .starts_with(&format!("#!lua name={}\n", FUNCTIONS.name)));
        assert!(!FUNCTIONS.code.contains(NAME_SLOT));
        for file in own {
            let name = FUNCTIONS.function(file).unwrap();
            let registration = format!("function_name='{name}',");
            assert_eq!(FUNCTIONS.code.matches(&registration).count(), 1, "{file}");
        }
        assert_eq!(FUNCTIONS.function("nope.lua"), None);
        for file in READ_ONLY {
            assert!(OWN_SOURCES.iter().any(|(f, _)| f == file), "{file}");
        }
    }

    #[test]
    fn every_script_documents_keys_argv_and_reply() {
        for (name, src) in SOURCES {
            let own = src.split_once(&format!("-- {name}:")).map(|(_, rest)| rest);
            let own = own.unwrap_or_else(|| panic!("{name} must start with a `-- {name}:` header"));
            for section in ["KEYS[1]", "ARGV", "Reply"] {
                assert!(
                    own.contains(section),
                    "{name} header must document {section}"
                );
            }
        }
    }

    #[test]
    fn no_script_sets_expire_on_a_whole_key() {
        // The seed put EXPIRE on the queue: one join reset everyone's lifetime.
        for (name, src) in SOURCES {
            for cmd in ["'EXPIRE'", "'PEXPIRE'", "'EXPIREAT'"] {
                assert!(!src.contains(cmd), "{name} uses {cmd}");
            }
        }
    }
}
