use std::collections::BTreeSet;

use super::*;
use crate::domain::WorldName;
use crate::keys::{Features, KeyLayout, WorldKey};

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
    assert_eq!(keys.last().unwrap(), &layout.world(&w).attr_numbers);
    assert_eq!(inv.argv(), ["pcrgsab", "0", "{}", "world1"]);
    // A FIFO world's call without the features its keys need.
    let mut fifo = SCRIPTS
        .form_matches
        .invocation_with(&layout, &[&w], Features::PARTIES);
    fifo.arg(0).arg("{}");
    let keys = fifo.keys();
    let block = layout.world(&w);
    assert!(keys.contains(&layout.parties()) && keys.contains(&block.queue));
    for absent in [
        layout.proposals(),
        layout.presence(),
        block.ratings,
        block.due,
        block.region_queue,
        block.backfill_ratings,
        block.attrs,
        block.attr_queue,
        block.attr_values,
        block.attr_numbers,
    ] {
        assert!(!keys.contains(&absent), "{absent}");
    }
    assert_eq!(fifo.argv(), ["p", "0", "{}", "world1"]);
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

/// Lua text without its comments and string literals (enough for the
/// checks below: no script nests long brackets).
fn code_only(src: &str) -> String {
    let mut out = String::new();
    let mut chars = src.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '-' if chars.peek() == Some(&'-') => {
                for c in chars.by_ref() {
                    if c == '\n' {
                        out.push('\n');
                        break;
                    }
                }
            }
            '\'' | '"' => {
                while let Some(d) = chars.next() {
                    if d == '\\' {
                        chars.next();
                    } else if d == c {
                        break;
                    }
                }
                out.push_str("''");
            }
            _ => out.push(c),
        }
    }
    out
}

/// The module a library file defines (`_backfill_store.lua` ->
/// `BackfillStore`); `None` for `_lib.lua`.
fn module_of(file: &str) -> Option<String> {
    let stem = file.strip_prefix('_')?.strip_suffix(".lua")?;
    (stem != "lib").then(|| {
        stem.split('_')
            .map(|w| {
                let mut c = w.chars();
                c.next()
                    .map(|f| f.to_ascii_uppercase().to_string() + c.as_str())
                    .unwrap_or_default()
            })
            .collect()
    })
}

/// Each module says by name (`-- @include`) exactly the modules it uses,
/// and the load order follows from that.
#[test]
fn every_module_includes_exactly_the_modules_it_uses() {
    let modules: Vec<(String, &str)> = LIBRARY_FILES
        .iter()
        .filter_map(|(f, _)| module_of(f).map(|m| (m, *f)))
        .collect();
    for (file, src) in LIBRARY_FILES {
        let Some(own) = module_of(file) else {
            assert!(includes(src).is_empty(), "_lib.lua includes nothing");
            continue;
        };
        assert!(
            src.contains(&format!("\nlocal {own} = {{}}\ndo\n")),
            "{file} defines the module {own} around a do block"
        );
        let code = code_only(src);
        let mut used: Vec<String> = modules
            .iter()
            .filter(|(m, _)| *m != own && code.contains(&format!("{m}.")))
            .map(|(_, f)| f.trim_end_matches(".lua").to_owned())
            .collect();
        used.insert(0, "_lib".to_owned());
        used.sort();
        let mut said: Vec<String> = includes(src).iter().map(|s| s.to_string()).collect();
        said.sort();
        assert_eq!(said, used, "{file}: -- @include vs the modules it uses");
    }
    let order: Vec<&str> = library_order().unwrap().iter().map(|(f, _)| *f).collect();
    assert_eq!(order.len(), LIBRARY_FILES.len());
    assert_eq!(order[0], "_lib.lua");
    for (i, (file, src)) in library_order().unwrap().iter().enumerate() {
        for inc in includes(src) {
            let at = order
                .iter()
                .position(|f| f.trim_end_matches(".lua") == inc)
                .unwrap();
            assert!(at < i, "{file} loads before {inc}");
        }
    }
}

/// A circle of includes is refused, naming it.
#[test]
fn an_include_circle_is_found() {
    fn order_of(files: &[(&'static str, &'static str)]) -> Result<(), String> {
        // The same walk as library_order, over the given files.
        fn visit(
            files: &[(&'static str, &'static str)],
            file: &'static str,
            path: &mut Vec<&'static str>,
            done: &mut Vec<&'static str>,
        ) -> Result<(), String> {
            if done.contains(&file) {
                return Ok(());
            }
            if path.contains(&file) {
                return Err(format!("circle at {file}"));
            }
            path.push(file);
            let src = files.iter().find(|(f, _)| *f == file).unwrap().1;
            for inc in includes(src) {
                let f = files
                    .iter()
                    .find(|(f, _)| f.trim_end_matches(".lua") == inc)
                    .unwrap()
                    .0;
                visit(files, f, path, done)?;
            }
            path.pop();
            done.push(file);
            Ok(())
        }
        let mut done = Vec::new();
        for (f, _) in files {
            visit(files, f, &mut Vec::new(), &mut done)?;
        }
        Ok(())
    }
    let circle = [
        ("_a.lua", "-- @include _b\n"),
        ("_b.lua", "-- @include _a\n"),
    ];
    assert!(order_of(&circle).unwrap_err().contains("circle"));
    assert!(order_of(&[("_a.lua", "-- @include _b\n"), ("_b.lua", "")]).is_ok());
}

/// Lua 5.1 allows 200 locals active at once in one function, and the
/// library is one chunk: the basics of `_lib.lua` and one table per module
/// are its top-level locals; a module's own locals live in its `do` block
/// and are released at its `end`. The bound: what is active at most, the
/// top level plus the largest module block plus an operation's accessors.
#[test]
fn the_library_chunk_keeps_few_locals() {
    fn locals(src: &str) -> usize {
        code_only(src)
            .lines()
            .filter_map(|l| l.strip_prefix("local "))
            .map(|rest| {
                if rest.starts_with("function ") {
                    1
                } else {
                    let names = rest.split('=').next().unwrap_or("");
                    names.split(',').count()
                }
            })
            .sum()
    }
    let mut top = 0;
    let mut largest_block = (0, "");
    for (file, src) in LIBRARY_FILES {
        let n = locals(src);
        if module_of(file).is_some() {
            // `local <Module> = {}` is the top-level one.
            top += 1;
            if n - 1 > largest_block.0 {
                largest_block = (n - 1, file);
            }
        } else {
            top += n;
        }
    }
    let accessors = DECLARATIONS
        .iter()
        .map(|d| locals(&d.accessors()) + 3)
        .max()
        .unwrap_or(0);
    let at_once = top + largest_block.0 + accessors;
    println!(
        "lua library: {top} top-level locals; at most {at_once} active at once \
         (largest module block {} in {}, operation accessors {accessors})",
        largest_block.0, largest_block.1
    );
    assert!(top <= 60, "{top} top-level locals");
    assert!(at_once <= 100, "{at_once} locals active at once");
}
