//! What each operation takes ([`Declaration`]) and the Lua generated from
//! it: the accessors built once per function and the prelude run on every
//! call.

use crate::keys::{NamespaceKey, WorldKey};

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
    pub(super) fn accessors(&self) -> String {
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
