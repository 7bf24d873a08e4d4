//! Import cycles between the modules of a crate: `module-cycles SRC_DIR...`
//! reads each crate's module tree from `SRC_DIR/lib.rs` (or `main.rs`)
//! with `syn`, draws an arrow from a module to every module whose items it
//! names (`use` items and paths in code that start with `crate`, `super` or
//! `self`), and prints every set of modules that reach each other (a
//! strongly connected component of two or more). Exit status 1 if there is
//! one, 2 on a read or parse error.
//!
//! What an arrow is:
//! - a path is `crate::...`, `super::...`, `self::...` or, from Rust 2018
//!   on, `child::...` relative to the module (`pub use child::Item`);
//! - it goes to the module the path names, the longest prefix of the path
//!   that is a module: `crate::store::MatchStore` is `store` (its `mod.rs`)
//!   even when `store` only re-exports it, as a reader of the `use` sees it;
//! - a module naming its own items or an ancestor's (`use super::*`,
//!   `super::millis`) draws none: a child module is part of its parent;
//!   a parent naming a child's item (`pub use child::Item`) does;
//! - `#[cfg(test)]` modules are not read (the library's graph only), nor are
//!   paths inside macro invocations (their tokens are not parsed).
//!
//! The fallback of scripts/check-module-cycles.sh: cargo-modules reads the
//! same graph through rust-analyzer but takes over ten minutes to build
//! (see that script).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use syn::visit::Visit;

/// A module: its path from the crate root and the file it is in.
struct Module {
    path: Vec<String>,
    file: PathBuf,
    /// Inline `mod x { }` of `file`, named after it.
    inline: Option<String>,
    /// Every path it names, absolute (from the crate root), with the name
    /// it was used by.
    uses: Vec<Vec<String>>,
}

impl Module {
    fn label(&self) -> String {
        match &self.inline {
            Some(name) => format!("{}::{name}", self.file.display()),
            None => self.file.display().to_string(),
        }
    }
}

fn is_cfg_test(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| {
        a.path().is_ident("cfg")
            && a.parse_args::<syn::Meta>()
                .is_ok_and(|m| m.path().is_ident("test"))
    })
}

/// The file of `mod name;` declared in `file`.
fn child_file(file: &Path, name: &str) -> Option<PathBuf> {
    let dir = file.parent()?;
    let stem = file.file_stem()?.to_str()?;
    let base = if matches!(stem, "lib" | "main" | "mod") {
        dir.to_path_buf()
    } else {
        dir.join(stem)
    };
    [
        base.join(format!("{name}.rs")),
        base.join(name).join("mod.rs"),
    ]
    .into_iter()
    .find(|p| p.is_file())
}

/// Resolves a path named in module `at` to an absolute path. A path that
/// does not start with `crate`, `super` or `self` is taken as relative to
/// `at` (`use child::Item`, `child::f()`); when its first name is no child
/// module of `at` (another crate, a local name) it resolves to `at` itself
/// and so draws no arrow.
fn absolute(at: &[String], segments: &[String]) -> Option<Vec<String>> {
    let mut out: Vec<String> = match segments.first()?.as_str() {
        "crate" => Vec::new(),
        _ => at.to_vec(),
    };
    let mut rest = segments;
    if rest[0] == "crate" {
        rest = &rest[1..];
    }
    while let Some(first) = rest.first() {
        match first.as_str() {
            "self" => {}
            "super" => {
                out.pop()?;
            }
            _ => break,
        }
        rest = &rest[1..];
    }
    out.extend(rest.iter().cloned());
    Some(out)
}

/// Every leaf of a `use` tree, as its list of segments.
fn flatten(tree: &syn::UseTree, prefix: &mut Vec<String>, out: &mut Vec<Vec<String>>) {
    match tree {
        syn::UseTree::Path(p) => {
            prefix.push(p.ident.to_string());
            flatten(&p.tree, prefix, out);
            prefix.pop();
        }
        syn::UseTree::Name(n) => {
            let mut full = prefix.clone();
            if n.ident != "self" {
                full.push(n.ident.to_string());
            }
            out.push(full);
        }
        syn::UseTree::Rename(r) => {
            let mut full = prefix.clone();
            full.push(r.ident.to_string());
            out.push(full);
        }
        syn::UseTree::Glob(_) => out.push(prefix.clone()),
        syn::UseTree::Group(g) => {
            for t in &g.items {
                flatten(t, prefix, out);
            }
        }
    }
}

/// Collects the paths of one module's items (not of its inline modules,
/// which are modules of their own).
struct Paths {
    at: Vec<String>,
    found: Vec<Vec<String>>,
}

impl<'ast> Visit<'ast> for Paths {
    fn visit_item_mod(&mut self, _: &'ast syn::ItemMod) {}

    fn visit_item_use(&mut self, item: &'ast syn::ItemUse) {
        let mut leaves = Vec::new();
        flatten(&item.tree, &mut Vec::new(), &mut leaves);
        for leaf in leaves {
            if let Some(abs) = absolute(&self.at, &leaf) {
                self.found.push(abs);
            }
        }
    }

    fn visit_path(&mut self, path: &'ast syn::Path) {
        let segments: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
        if let Some(abs) = absolute(&self.at, &segments) {
            self.found.push(abs);
        }
        syn::visit::visit_path(self, path);
    }
}

/// Reads the modules of `items` (module `path`, in `file`) and of every
/// module they declare.
fn read_items(
    items: &[syn::Item],
    path: Vec<String>,
    file: &Path,
    inline: Option<String>,
    modules: &mut Vec<Module>,
) -> Result<(), String> {
    let mut paths = Paths {
        at: path.clone(),
        found: Vec::new(),
    };
    for item in items {
        paths.visit_item(item);
    }
    modules.push(Module {
        path: path.clone(),
        file: file.to_path_buf(),
        inline: inline.clone(),
        uses: paths.found,
    });
    for item in items {
        let syn::Item::Mod(m) = item else { continue };
        if is_cfg_test(&m.attrs) {
            continue;
        }
        let name = m.ident.to_string();
        let mut child = path.clone();
        child.push(name.clone());
        match &m.content {
            Some((_, inner)) => {
                let label = match &inline {
                    Some(outer) => format!("{outer}::{name}"),
                    None => name,
                };
                read_items(inner, child, file, Some(label), modules)?;
            }
            None => {
                let child_path = child_file(file, &name)
                    .ok_or_else(|| format!("{}: no file for `mod {name};`", file.display()))?;
                read_file(&child_path, child, modules)?;
            }
        }
    }
    Ok(())
}

fn read_file(file: &Path, path: Vec<String>, modules: &mut Vec<Module>) -> Result<(), String> {
    let text = std::fs::read_to_string(file).map_err(|e| format!("{}: {e}", file.display()))?;
    let ast = syn::parse_file(&text).map_err(|e| format!("{}: {e}", file.display()))?;
    read_items(&ast.items, path, file, None, modules)
}

/// The arrows between modules (by index), each with the names used.
type Arrows = BTreeMap<(usize, usize), BTreeSet<String>>;

fn arrows(modules: &[Module]) -> Arrows {
    let index: BTreeMap<&[String], usize> = modules
        .iter()
        .enumerate()
        .map(|(i, m)| (m.path.as_slice(), i))
        .collect();
    let mut out = Arrows::new();
    for (from, m) in modules.iter().enumerate() {
        for used in &m.uses {
            // The longest prefix that is a module.
            let Some(len) = (0..=used.len())
                .rev()
                .find(|n| index.contains_key(&used[..*n]))
            else {
                continue;
            };
            let target = &used[..len];
            // Itself or an ancestor: part of the same tree, no arrow.
            if m.path.starts_with(target) {
                continue;
            }
            let name = used.get(len).cloned().unwrap_or_else(|| "self".into());
            out.entry((from, index[target])).or_default().insert(name);
        }
    }
    out
}

/// Strongly connected components with two or more modules (Tarjan).
fn cycles(n: usize, arrows: &Arrows) -> Vec<Vec<usize>> {
    let mut next: Vec<Vec<usize>> = vec![Vec::new(); n];
    for &(a, b) in arrows.keys() {
        next[a].push(b);
    }
    struct State {
        index: Vec<Option<usize>>,
        low: Vec<usize>,
        on_stack: Vec<bool>,
        stack: Vec<usize>,
        counter: usize,
        out: Vec<Vec<usize>>,
    }
    fn visit(v: usize, next: &[Vec<usize>], s: &mut State) {
        s.index[v] = Some(s.counter);
        s.low[v] = s.counter;
        s.counter += 1;
        s.stack.push(v);
        s.on_stack[v] = true;
        for &w in &next[v] {
            match s.index[w] {
                None => {
                    visit(w, next, s);
                    s.low[v] = s.low[v].min(s.low[w]);
                }
                Some(iw) if s.on_stack[w] => s.low[v] = s.low[v].min(iw),
                Some(_) => {}
            }
        }
        if Some(s.low[v]) == s.index[v] {
            let mut component = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on_stack[w] = false;
                component.push(w);
                if w == v {
                    break;
                }
            }
            if component.len() > 1 {
                component.sort_unstable();
                s.out.push(component);
            }
        }
    }
    let mut s = State {
        index: vec![None; n],
        low: vec![0; n],
        on_stack: vec![false; n],
        stack: Vec::new(),
        counter: 0,
        out: Vec::new(),
    };
    for v in 0..n {
        if s.index[v].is_none() {
            visit(v, &next, &mut s);
        }
    }
    s.out.sort();
    s.out
}

/// The report of one crate: its cycles, or `None` when it has none.
fn check(src: &Path) -> Result<Option<String>, String> {
    let root = ["lib.rs", "main.rs"]
        .iter()
        .map(|f| src.join(f))
        .find(|p| p.is_file())
        .ok_or_else(|| format!("{}: no lib.rs or main.rs", src.display()))?;
    let mut modules = Vec::new();
    read_file(&root, Vec::new(), &mut modules)?;
    let arrows = arrows(&modules);
    let found = cycles(modules.len(), &arrows);
    if found.is_empty() {
        return Ok(None);
    }
    let mut out = String::new();
    for (i, component) in found.iter().enumerate() {
        let labels: Vec<String> = component.iter().map(|&m| modules[m].label()).collect();
        out += &format!("cycle {}: {}\n", i + 1, labels.join(", "));
        for (&(a, b), names) in &arrows {
            if component.contains(&a) && component.contains(&b) {
                let names: Vec<&str> = names.iter().map(String::as_str).collect();
                out += &format!(
                    "  {} -> {}: {}\n",
                    modules[a].label(),
                    modules[b].label(),
                    names.join(", ")
                );
            }
        }
    }
    Ok(Some(out))
}

fn main() -> ExitCode {
    let dirs: Vec<PathBuf> = std::env::args_os().skip(1).map(PathBuf::from).collect();
    if dirs.is_empty() {
        eprintln!("usage: module-cycles SRC_DIR...");
        return ExitCode::from(2);
    }
    let mut failed = false;
    for dir in &dirs {
        match check(dir) {
            Ok(None) => println!("{}: no module cycles", dir.display()),
            Ok(Some(report)) => {
                failed = true;
                println!("{}: module cycles:\n{report}", dir.display());
            }
            Err(e) => {
                eprintln!("error: {e}");
                return ExitCode::from(2);
            }
        }
    }
    if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Writes a crate of `files` (path, text) into a fresh directory.
    fn tree(name: &str, files: &[(&str, &str)]) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("module-cycles-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        for (path, text) in files {
            let p = dir.join(path);
            std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
            std::fs::write(p, text).expect("write");
        }
        dir
    }

    #[test]
    fn a_use_cycle_between_siblings_is_found_with_its_names() {
        let dir = tree(
            "siblings",
            &[
                ("lib.rs", "mod a;\nmod b;\n"),
                ("a.rs", "use crate::b::B;\npub struct A;\n"),
                (
                    "b.rs",
                    "pub struct B;\npub fn f() -> crate::a::A { crate::a::A }\n",
                ),
            ],
        );
        let report = check(&dir).expect("reads").expect("a cycle");
        assert!(report.contains("cycle 1: "), "{report}");
        assert!(report.contains("a.rs -> "), "{report}");
        assert!(report.contains("b.rs: B"), "{report}");
        assert!(report.contains("a.rs: A"), "{report}");
    }

    #[test]
    fn a_cycle_through_a_parent_facade_and_super_paths_is_found() {
        let dir = tree(
            "facade",
            &[
                ("lib.rs", "pub mod store;\nmod delivery;\n"),
                (
                    "store/mod.rs",
                    "mod config;\npub use config::Lease;\npub struct Store;\n",
                ),
                (
                    "store/config.rs",
                    "use super::Store;\npub struct Lease(crate::delivery::Young);\n",
                ),
                (
                    "delivery.rs",
                    "use crate::store::Store;\npub struct Young;\n",
                ),
            ],
        );
        let report = check(&dir).expect("reads").expect("a cycle");
        assert!(report.contains("store/mod.rs -> "), "{report}");
        assert!(report.contains("delivery.rs: Young"), "{report}");
    }

    #[test]
    fn children_naming_their_ancestors_and_test_modules_draw_no_cycle() {
        let dir = tree(
            "tree",
            &[
                ("lib.rs", "pub mod http;\npub struct Root;\n#[cfg(test)]\nmod tests { use crate::http::handlers::H; }\n"),
                ("http/mod.rs", "mod handlers;\nmod errors;\npub use handlers::H;\nfn helper() {}\n"),
                ("http/handlers.rs", "use super::errors::ok;\nuse super::*;\npub struct H(crate::Root);\nfn g() { super::helper() }\n"),
                ("http/errors.rs", "pub fn ok() {}\n#[cfg(test)]\nmod tests { use crate::http::handlers::H; }\n"),
            ],
        );
        assert_eq!(check(&dir), Ok(None));
    }

    #[test]
    fn a_missing_module_file_is_an_error() {
        let dir = tree("missing", &[("lib.rs", "mod gone;\n")]);
        assert!(check(&dir).is_err());
    }
}
