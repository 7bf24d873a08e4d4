//! One operation's call: its function name, its standalone script and the
//! KEYS and ARGV of one invocation.

use std::sync::OnceLock;

use redis::{Cmd, Script, ScriptInvocation, ToRedisArgs};

use super::{function_name, standalone_source, Declaration};
use crate::domain::WorldName;
use crate::keys::{Features, KeyLayout, WorldKey};

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
    pub(super) fn new(declaration: &'static Declaration) -> Self {
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
        self.invocation_with(layout, worlds, Features::ALL)
    }

    /// [`Operation::invocation`] passing only the declared keys that
    /// `features` reach (the features of the call's worlds and namespace:
    /// `MatchStore::features`).
    pub fn invocation_with(
        &self,
        layout: &KeyLayout,
        worlds: &[&WorldName],
        features: Features,
    ) -> Invocation<'_> {
        let mut keys = Vec::new();
        for key in self.declaration.keys {
            if features.reach(key.needs()) {
                layout.namespace_key(*key).write_redis_args(&mut keys);
            }
        }
        for world in worlds {
            for key in WorldKey::ALL {
                if features.reach(key.needs()) {
                    layout.world_key(world, *key).write_redis_args(&mut keys);
                }
            }
        }
        Invocation {
            operation: self,
            keys,
            features: features.letters().into_bytes(),
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
    /// The first argument: the call's features as letters.
    features: Vec<u8>,
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
        std::iter::once(&self.features)
            .chain(&self.args)
            .chain(&self.world_names)
            .chain(&self.rest)
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
