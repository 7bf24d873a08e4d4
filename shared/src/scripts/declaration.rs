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
    /// argument by name, validated counts, the world blocks. The first
    /// argument is the call's features (`Features::letters`): the keys
    /// present are the declared ones those features reach, in declared
    /// order (`shape`, built once per feature set by [`Declaration::accessors`]).
    pub fn prelude(&self) -> String {
        let fixed = self.args.len() + 1;
        let mut out = String::new();
        let worlds = self.worlds != Worlds::None;
        out.push_str(
            "local shape = SHAPES[ARGV[1]] or shape_of(ARGV[1])\n\
             if not shape then return fail('the first argument must be the call\\'s features') end\n",
        );
        out.push_str(&format!(
            "CALL.wake, CALL.asleep = false, shape.asleep and KEYS[shape.asleep]\n\
             local NS_KEYS, WORLD_KEYS, FIXED_ARGS = shape.ns_n, shape.world_n, {fixed}\n"
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
                 local worlds = WORLDS\n\
                 for i = 1, world_count do\n  worlds[i] = ARGV[FIXED_ARGS + i]\n  \
                 if worlds[i] == '' then return fail('world name is empty') end\nend\n\
                 for i = world_count + 1, #worlds do worlds[i] = nil end\n",
            );
        } else {
            out.push_str(
                "if #KEYS ~= NS_KEYS then return fail('KEYS must be the declared keys') end\n\
                 local world_count = 0\n",
            );
        }
        if self.rest.is_some() {
            // Refilled on every call, as WORLDS is: a join makes no table
            // for its (usually empty) rest.
            out.push_str(
                "local rest, rest_n = REST, 0\n\
                 for i = FIXED_ARGS + world_count + 1, #ARGV do\n  rest_n = rest_n + 1\n  rest[rest_n] = ARGV[i]\nend\n\
                 for i = rest_n + 1, #rest do rest[i] = nil end\n",
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
            let values: Vec<String> = (2..=self.args.len() + 1)
                .map(|i| format!("ARGV[{i}]"))
                .collect();
            out.push_str(&format!(
                "if not ARGS then ARGS = strict({{ {} }}) end\n{} = {}\nlocal args = ARGS\n",
                empty.join(", "),
                names.join(", "),
                values.join(", ")
            ));
        }
        // The accessors (`Declaration::accessors`, defined once around the
        // function) read this call's keys.
        out.push_str("CUR_SHAPE, CUR_KEYS = shape, KEYS\n");
        if worlds {
            out.push_str("CUR_WORLDS, CUR_WORLD_COUNT = worlds, world_count\n");
        }
        match self.worlds {
            Worlds::One | Worlds::First => out.push_str("local k = world_keys(1)\n"),
            Worlds::None | Worlds::Many => out.push_str("local k = namespace_keys()\n"),
        }
        out
    }

    /// What an operation's function is built around, once per function
    /// rather than on every call (a table made per call is garbage the
    /// collector must reclaim, which every call pays for: `WORLDS`, the
    /// call's world names, is refilled): `shape_of(features)`, the keys a feature
    /// set brings (cached in `SHAPES`), `namespace_keys()` and, for
    /// operations with world blocks, `world_keys(i)` and `world_of(name)`,
    /// reading the running call's keys (`CUR_*`, set by the prelude). A key
    /// table is built once per feature set, namespace and world and kept
    /// (at most `KEY_CACHE_MAX` tables): the store derives every key from
    /// the namespace and the world, so a block's first key and the
    /// namespace's first key name all of them. Building one costs ~1.4 us.
    pub(super) fn accessors(&self) -> String {
        let entries = |items: Vec<(&str, crate::keys::Features)>| -> String {
            items
                .iter()
                .map(|(name, needs)| format!("{{ '{name}', '{}' }}", needs.letters()))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let ns = entries(self.keys.iter().map(|k| (k.name(), k.needs())).collect());
        let world = if self.worlds == Worlds::None {
            String::new()
        } else {
            entries(
                WorldKey::ALL
                    .iter()
                    .map(|k| (k.name(), k.needs()))
                    .collect(),
            )
        };
        let pattern = crate::keys::Features::letters_pattern();
        let mut out = format!(
            "local NS_NEEDS, WORLD_NEEDS = {{ {ns} }}, {{ {world} }}\n\
             local SHAPES = {{}}\n\
             local KEY_CACHE_N, KEY_CACHE_MAX = 0, 256\n\
             local CUR_SHAPE, CUR_KEYS, CUR_WORLDS, CUR_WORLD_COUNT\n\
             local WORLDS = {{}}\n\
             local function shape_of(features)\n  \
             if type(features) ~= 'string' or not string.find(features, '{pattern}') then return nil end\n  \
             local function pick(needs)\n    local names = {{}}\n    \
             for _, e in ipairs(needs) do\n      \
             if e[2] == '' or string.find(features, '[' .. e[2] .. ']') then names[#names + 1] = e[1] end\n    \
             end\n    return names\n  end\n  \
             local shape = {{ ns = pick(NS_NEEDS), world = pick(WORLD_NEEDS), cache = {{}} }}\n  \
             shape.ns_n, shape.world_n = #shape.ns, #shape.world\n  \
             for i, name in ipairs(shape.ns) do if name == 'matcher_asleep' then shape.asleep = i end end\n  \
             SHAPES[features] = shape\n  return shape\nend\n\
             local function cached_keys(first, b)\n  \
             local KEYS, cache = CUR_KEYS, CUR_SHAPE.cache\n  \
             local by_ns = cache[KEYS[1] or '']\n  \
             local hit = by_ns and by_ns[first]\n  \
             if hit then return hit end\n  \
             if KEY_CACHE_N >= KEY_CACHE_MAX then\n    \
             for _, s in pairs(SHAPES) do s.cache = {{}} end\n    \
             KEY_CACHE_N, cache, by_ns = 0, CUR_SHAPE.cache, nil\n  end\n  \
             if not by_ns then\n    by_ns = {{}}\n    cache[KEYS[1] or ''] = by_ns\n  end\n  \
             local t = {{}}\n  \
             for i, name in ipairs(CUR_SHAPE.ns) do t[name] = KEYS[i] end\n  \
             if b then for i, name in ipairs(CUR_SHAPE.world) do t[name] = KEYS[b + i] end end\n  \
             t = strict(t)\n  \
             by_ns[first], KEY_CACHE_N = t, KEY_CACHE_N + 1\n  return t\nend\n\
             local function namespace_keys()\n  return cached_keys('', nil)\nend\n"
        );
        if self.worlds != Worlds::None {
            out.push_str(
                "local function world_keys(i)\n  \
                 local b = CUR_SHAPE.ns_n + (i - 1) * CUR_SHAPE.world_n\n  \
                 return cached_keys(CUR_KEYS[b + 1], b)\nend\n\
                 local function world_of(name)\n  for i = 1, CUR_WORLD_COUNT do\n    \
                 if CUR_WORLDS[i] == name then return world_keys(i) end\n  end\n  return nil\nend\n",
            );
        }
        out
    }
}
