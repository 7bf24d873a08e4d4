//! The operations table of docs/architecture.md ("The scripts") is generated
//! from [`DECLARATIONS`] and each script's header; this test holds the doc
//! to it.

use super::{own_source, Worlds, DECLARATIONS};

/// The first sentence of `lua/<file>`'s header comment, after `<file>: `.
fn summary(file: &str) -> String {
    let header: Vec<&str> = own_source(file)
        .lines()
        .map_while(|line| line.strip_prefix("--"))
        .map(str::trim)
        .take_while(|line| !line.is_empty())
        .collect();
    let text = header.join(" ");
    let text = text
        .strip_prefix(&format!("{file}: "))
        .unwrap_or_else(|| panic!("lua/{file}'s header starts with \"-- {file}: \""));
    let end = text.find(". ").map_or(text.len(), |i| i + 1);
    text[..end].trim_end_matches('.').replace('|', "\\|")
}

/// The operations as a Markdown table: script, what its header says it
/// does, the world blocks its KEYS carry, its arguments.
pub fn markdown_table() -> String {
    let mut out = String::from(
        "| script | does (its header's first sentence) | world blocks | arguments |\n|---|---|---|---|\n",
    );
    for d in DECLARATIONS {
        let worlds = match d.worlds {
            Worlds::None => "none",
            Worlds::One => "one",
            Worlds::Many => "any number",
            Worlds::First => "one or more",
        };
        let mut args: Vec<String> = d.args.iter().map(|a| format!("`{a}`")).collect();
        if matches!(d.worlds, Worlds::Many | Worlds::First) {
            args.push("world names".into());
        }
        if let Some(rest) = d.rest {
            args.push(format!("`{rest}...`"));
        }
        out.push_str(&format!(
            "| `{}` | {} | {worlds} | {} |\n",
            d.file,
            summary(d.file),
            args.join(", ")
        ));
    }
    out
}

#[test]
fn the_architecture_doc_lists_exactly_the_declared_operations() {
    let doc = include_str!("../../../docs/architecture.md");
    let table = markdown_table();
    assert!(
        doc.contains(&table),
        "docs/architecture.md's table of scripts differs from the operations! declaration \
         (shared/src/scripts/mod.rs) and the scripts' headers; it must read:\n{table}"
    );
}
