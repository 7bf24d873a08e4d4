//! Which keys each operation can reach: its own file and every library
//! helper it uses, transitively. A key a helper reads that the operation
//! did not declare is a run-time error ("no key or argument named ... was
//! declared") waiting for the path that takes it; a declared key nothing
//! reaches is sent, and prepared by Redis, on every call for nothing.
//!
//! The analysis is static and over-approximates: a helper counts as used
//! wherever its name appears as a value (called, passed to `pcall` or
//! `table.sort`, put in a table), whether or not that path can run.
//! Keys count where they are read through a key table: `k.<key>`,
//! `<anything>.k.<key>`, `wk.<key>`, `world_keys(...).<key>` or
//! `world_of(...).<key>`; `CALL.asleep` (wake_matcher) is `matcher_asleep`.

use std::collections::{BTreeMap, BTreeSet};

use super::*;
use crate::keys::WorldKey;

/// Lua source with every comment and the contents of every string literal
/// blanked out (newlines kept), so names in them count for nothing.
fn code_only(src: &str) -> String {
    let b = src.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let blank = |out: &mut Vec<u8>, c: u8| out.push(if c == b'\n' { b'\n' } else { b' ' });
    // The level of a long bracket `[==[` starting at `i`, if one does.
    let long_open = |i: usize| -> Option<usize> {
        if b.get(i) != Some(&b'[') {
            return None;
        }
        let level = b[i + 1..].iter().take_while(|c| **c == b'=').count();
        (b.get(i + 1 + level) == Some(&b'[')).then_some(level)
    };
    let mut i = 0;
    while i < b.len() {
        let long = if b[i..].starts_with(b"--") {
            match long_open(i + 2) {
                Some(level) => Some((i + 2 + level + 2, level)),
                None => {
                    while i < b.len() && b[i] != b'\n' {
                        blank(&mut out, b[i]);
                        i += 1;
                    }
                    continue;
                }
            }
        } else {
            long_open(i).map(|level| (i + level + 2, level))
        };
        if let Some((body, level)) = long {
            let close = format!("]{}]", "=".repeat(level));
            let end = src[body..]
                .find(&close)
                .map_or(b.len(), |at| body + at + close.len());
            for &c in &b[i..end] {
                blank(&mut out, c);
            }
            i = end;
        } else if b[i] == b'\'' || b[i] == b'"' {
            let quote = b[i];
            out.push(quote);
            i += 1;
            while i < b.len() && b[i] != quote {
                let step = if b[i] == b'\\' { 2 } else { 1 };
                for &c in &b[i..(i + step).min(b.len())] {
                    blank(&mut out, c);
                }
                i += step;
            }
            if i < b.len() {
                out.push(quote);
                i += 1;
            }
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn is_ident(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

/// The names `code` uses as values: every identifier that is not a field
/// (`t.name`, `t:name`) or a table constructor's key (`{ name = ...`); a
/// module's helper (`Players.name`: a capitalised table, see
/// scripts/mod.rs LIBRARY_FILES) counts as its name.
fn names_used(code: &str) -> BTreeSet<&str> {
    let b = code.as_bytes();
    let mut used = BTreeSet::new();
    let mut i = 0;
    while i < b.len() {
        if !(b[i].is_ascii_alphabetic() || b[i] == b'_') || (i > 0 && is_ident(b[i - 1])) {
            i += 1;
            continue;
        }
        let start = i;
        while i < b.len() && is_ident(b[i]) {
            i += 1;
        }
        let before = code[..start].trim_end().as_bytes();
        let field = match before {
            [.., b'.', b'.'] => false,
            [rest @ .., b'.'] => {
                let table: Vec<u8> = rest
                    .iter()
                    .rev()
                    .take_while(|c| is_ident(**c))
                    .copied()
                    .collect();
                !table.last().is_some_and(u8::is_ascii_uppercase)
            }
            [.., b':'] => true,
            _ => false,
        };
        let after = code[i..].trim_start().as_bytes();
        let assigned = after.first() == Some(&b'=') && after.get(1) != Some(&b'=');
        let constructor_key = assigned && matches!(before.last(), Some(b'{' | b','));
        if !field && !constructor_key {
            used.insert(&code[start..i]);
        }
    }
    used
}

/// The key names `code` reads through a key table, and whether it reads
/// `CALL.asleep`.
fn keys_read(code: &str) -> (BTreeSet<String>, bool) {
    let names: Vec<&str> = NamespaceKey::ALL
        .iter()
        .map(|k| k.name())
        .chain(WorldKey::ALL.iter().map(|k| k.name()))
        .collect();
    let b = code.as_bytes();
    let mut read = BTreeSet::new();
    for (dot, _) in code.match_indices('.') {
        let name: &str = {
            let rest = &code[dot + 1..];
            let len = rest.bytes().take_while(|c| is_ident(*c)).count();
            &rest[..len]
        };
        if !names.contains(&name) {
            continue;
        }
        let receiver = code[..dot].trim_end();
        let key_table = if receiver.ends_with(')') {
            // `world_keys(i).queue`, `world_of(name).queue`.
            let mut depth = 0;
            let open = receiver.bytes().rposition(|c| {
                depth += match c {
                    b')' => 1,
                    b'(' => -1,
                    _ => 0,
                };
                depth == 0
            });
            open.is_some_and(|open| {
                let callee = receiver[..open].trim_end();
                let start = callee
                    .bytes()
                    .rposition(|c| !is_ident(c))
                    .map_or(0, |p| p + 1);
                matches!(&callee[start..], "world_keys" | "world_of")
            })
        } else {
            let start = receiver
                .bytes()
                .rposition(|c| !is_ident(c))
                .map_or(0, |p| p + 1);
            matches!(&receiver[start..], "k" | "wk")
        };
        if key_table && (dot + 1 + name.len() >= b.len() || !is_ident(b[dot + 1 + name.len()])) {
            read.insert(name.to_owned());
        }
    }
    let asleep = code.match_indices("CALL.asleep").any(|(at, _)| {
        (at == 0 || !is_ident(b[at - 1]))
            && b.get(at + "CALL.asleep".len())
                .is_none_or(|c| !is_ident(*c))
    });
    (read, asleep)
}

/// The library's top-level definitions: each `local ...` at column 0 up
/// to the next, by the names it defines (`local function f`, `local A, B
/// = ...`).
pub(super) struct Library {
    /// Name -> its definition's code (comments and strings blanked).
    defs: BTreeMap<String, String>,
}

impl Library {
    pub(super) fn parse(files: &[(&str, &str)]) -> Library {
        let mut defs: BTreeMap<String, String> = BTreeMap::new();
        for (file, src) in files {
            let code = code_only(src);
            let mut current: Option<(Vec<String>, String)> = None;
            let mut finish = |item: Option<(Vec<String>, String)>| {
                if let Some((names, body)) = item {
                    for name in names {
                        let again = defs.insert(name.clone(), body.clone());
                        assert!(again.is_none(), "{file}: {name} is defined twice");
                    }
                }
            };
            for line in code.lines() {
                if let Some(def) = line.strip_prefix("local ") {
                    finish(current.take());
                    let names: Vec<String> = match def.strip_prefix("function ") {
                        Some(f) => vec![f.split('(').next().unwrap_or("").trim().to_owned()],
                        None => def
                            .split('=')
                            .next()
                            .unwrap_or("")
                            .split(',')
                            .map(|n| n.trim().to_owned())
                            .collect(),
                    };
                    current = Some((names, String::new()));
                }
                if let Some((_, body)) = current.as_mut() {
                    body.push_str(line);
                    body.push('\n');
                } else {
                    assert!(
                        line.trim().is_empty(),
                        "{file}: code outside a top-level definition: `{line}`"
                    );
                }
            }
            finish(current);
        }
        Library { defs }
    }

    /// The library definitions `code` uses, transitively.
    pub(super) fn helpers_of<'a>(&'a self, code: &'a str) -> BTreeSet<&'a str> {
        let mut seen: BTreeSet<&'a str> = BTreeSet::new();
        let mut todo: Vec<&'a str> = vec![code];
        while let Some(body) = todo.pop() {
            for name in names_used(body) {
                if let Some((name, def)) = self.defs.get_key_value(name) {
                    if seen.insert(name.as_str()) {
                        todo.push(def.as_str());
                    }
                }
            }
        }
        seen
    }

    /// The keys an operation whose own file is `src` can reach: the
    /// namespace keys (with `matcher_asleep` when `CALL.asleep` is reached)
    /// and the world keys.
    pub(super) fn reach(&self, src: &str) -> Reach {
        let code = code_only(src);
        let mut bodies = vec![code.as_str()];
        bodies.extend(
            self.helpers_of(&code)
                .into_iter()
                .map(|h| self.defs[h].as_str()),
        );
        let mut reach = Reach::default();
        for body in bodies {
            let (read, asleep) = keys_read(body);
            for name in read {
                if WorldKey::ALL.iter().any(|w| w.name() == name) {
                    reach.world.insert(name);
                } else {
                    reach.namespace.insert(name);
                }
            }
            if asleep {
                reach
                    .namespace
                    .insert(NamespaceKey::MatcherAsleep.name().to_owned());
            }
        }
        reach
    }
}

#[derive(Debug, Default)]
pub(super) struct Reach {
    pub namespace: BTreeSet<String>,
    pub world: BTreeSet<String>,
}

/// What differs between what `src` reaches and a declaration's keys and
/// worlds, as one line per kind of difference (empty when they agree).
pub(super) fn differences(
    library: &Library,
    src: &str,
    keys: &[NamespaceKey],
    worlds: Worlds,
) -> Vec<String> {
    let reach = library.reach(src);
    let declared: BTreeSet<String> = keys.iter().map(|k| k.name().to_owned()).collect();
    let mut out = vec![];
    let missing: Vec<&String> = reach.namespace.difference(&declared).collect();
    if !missing.is_empty() {
        out.push(format!("reachable but not declared: {missing:?}"));
    }
    let unused: Vec<&String> = declared.difference(&reach.namespace).collect();
    if !unused.is_empty() {
        out.push(format!("declared but never reached: {unused:?}"));
    }
    match (worlds == Worlds::None, reach.world.is_empty()) {
        (true, false) => out.push(format!(
            "reaches world keys {:?} but declares `worlds: None`",
            reach.world
        )),
        (false, true) => out.push(format!(
            "declares `worlds: {worlds:?}` but reaches no world key"
        )),
        _ => {}
    }
    out
}

/// Every operation declares exactly the keys its own file and the library
/// helpers it uses (transitively) can reach, and world blocks exactly when
/// it reaches a world key.
#[test]
fn every_operation_declares_exactly_the_keys_it_can_reach() {
    let library = Library::parse(LIBRARY_FILES);
    let mut report = vec![];
    for d in DECLARATIONS {
        for line in differences(&library, own_source(d.file), d.keys, d.worlds) {
            report.push(format!("{}: {line}", d.file));
        }
    }
    assert!(
        report.is_empty(),
        "{} differences between declarations and reachable keys:\n{}",
        report.len(),
        report.join("\n")
    );
}

/// The analysis finds a key reached only through a helper (called, or
/// passed as a value), the sleeping-matcher key behind `CALL.asleep`,
/// world keys, and no key named in a comment, a string or a field of a
/// table that is not a key table.
#[test]
fn the_reach_analysis_follows_helpers_and_ignores_look_alikes() {
    let lib = "-- a.lua\n\
               local LIMIT = 3\n\
               local CALL = { asleep = nil }\n\
               local function wake() if CALL.asleep then return 1 end end\n\
               local function note(k, x)\n  redis.call('HSET', k.notes, x, 1)\n  wake()\nend\n\
               local function by_rank(a, b)\n  return a.players < b.players\nend\n\
               local function sorted(ctx, t)\n  table.sort(t, by_rank)\n  return ctx.k.counters\nend\n\
               local function unused(k) return k.conns, world_keys(1).due end\n";
    let library = Library::parse(&[("a.lua", lib)]);
    let op = "-- op.lua: k.presence in a comment, and note() too\n\
              local cfg = { presence = 1, unused = 2 }\n\
              local s = 'k.parties unused()'\n\
              pcall(note, k, cfg.presence)\n\
              local x = sorted({ k = k }, {}) .. LIMIT\n\
              return world_of('w').queue, wk.stats\n";
    let reach = library.reach(op);
    let names = |s: &BTreeSet<String>| s.iter().cloned().collect::<Vec<_>>();
    assert_eq!(
        names(&reach.namespace),
        ["counters", "matcher_asleep", "notes"]
    );
    assert_eq!(names(&reach.world), ["queue", "stats"]);
    assert_eq!(
        library
            .helpers_of(&code_only(op))
            .into_iter()
            .collect::<Vec<_>>(),
        ["CALL", "LIMIT", "by_rank", "note", "sorted", "wake"]
    );
}

/// Seeded faults: a real operation's declaration with one key taken out,
/// or one added that nothing reaches, or its worlds changed, is reported.
#[test]
fn the_reach_analysis_reports_a_seeded_declaration_fault() {
    let library = Library::parse(LIBRARY_FILES);
    let d = declaration("leave.lua").unwrap();
    let src = own_source(d.file);
    let without: Vec<NamespaceKey> = d
        .keys
        .iter()
        .copied()
        .filter(|k| *k != NamespaceKey::Notes)
        .collect();
    assert!(differences(&library, src, &without, d.worlds)
        .iter()
        .any(|l| l.starts_with("reachable but not declared") && l.contains("\"notes\"")));
    let mut with: Vec<NamespaceKey> = d.keys.to_vec();
    with.push(NamespaceKey::MatcherLease);
    assert!(differences(&library, src, &with, d.worlds)
        .contains(&r#"declared but never reached: ["matcher_lease"]"#.to_owned()));
    assert!(differences(&library, src, d.keys, Worlds::None)
        .iter()
        .any(|l| l.starts_with("reaches world keys") && l.contains("\"queue\"")));
    let none = declaration("lease_release.lua").unwrap();
    assert_eq!(
        differences(&library, own_source(none.file), none.keys, Worlds::Many),
        ["declares `worlds: Many` but reaches no world key"]
    );
}
