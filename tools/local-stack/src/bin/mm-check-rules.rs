//! `mm-check-rules`: validates a rule set offline, without Redis or
//! anything else started: the same validation a function runs at cold start
//! on `MM_RULES` / `MM_RULES_FILE` (see docs/rules.md).
//!
//! ```text
//! mm-check-rules rules.json     # or `-` to read standard input
//! ok: 2 worlds (arena, casual), 3 attributes, 4 rules
//! ```
//!
//! Exit status 0 when the rule set is valid; 1 when it is not (the error,
//! which names the world, the rule and the field, on stderr) or cannot be
//! read; 2 for a wrong command line.

use std::io::Read;
use std::process::ExitCode;
use std::time::Duration;

use shared::config::rules;

const USAGE: &str = "\
usage: mm-check-rules <file>   validate the rule set in <file> (`-`: standard input)
       mm-check-rules --help

Validates a rule set (the MM_RULES / MM_RULES_FILE document, see docs/rules.md)
exactly as the functions do at cold start, without starting anything.
Prints `ok: N worlds (names), M attributes, R rules` and exits 0 when it is
valid; prints the error (naming the world, the rule and the field) on stderr
and exits 1 when it is not; exits 2 for a wrong command line.";

/// The ticket lifetime of worlds that give none (`MM_TICKET_TTL_SECS`'s
/// default); it changes no validation.
const DEFAULT_TTL: Duration = Duration::from_secs(600);

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let path = match args.as_slice() {
        [flag] if flag == "--help" || flag == "-h" => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        [path] if path == "-" || !path.starts_with('-') => path.as_str(),
        _ => {
            eprintln!("{USAGE}");
            return ExitCode::from(2);
        }
    };
    let (label, text) = if path == "-" {
        let mut text = String::new();
        if let Err(e) = std::io::stdin().read_to_string(&mut text) {
            eprintln!("mm-check-rules: cannot read standard input: {e}");
            return ExitCode::FAILURE;
        }
        ("<stdin>", text)
    } else {
        match std::fs::read_to_string(path) {
            Ok(text) => (path, text),
            Err(e) => {
                eprintln!("mm-check-rules: cannot read {path}: {e}");
                return ExitCode::FAILURE;
            }
        }
    };
    match rules::parse("MM_RULES_FILE", &text, DEFAULT_TTL) {
        Ok((worlds, _, access)) => {
            let names: Vec<&str> = worlds.iter().map(|w| w.name.as_str()).collect();
            let rule_count: usize = worlds.iter().map(|w| w.match_rules.len()).sum();
            println!(
                "ok: {} worlds ({}), {} attributes, {rule_count} rules",
                names.len(),
                names.join(", "),
                access.attributes.len(),
            );
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("mm-check-rules: {label}: {}", e.reason);
            ExitCode::FAILURE
        }
    }
}
