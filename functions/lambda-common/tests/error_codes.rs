//! docs/http-api.md's table of error codes lists exactly the codes of
//! `error_codes!` (functions/lambda-common/src/http/errors.rs), each with
//! the status `ErrorCode::status()` gives it.

use std::collections::BTreeSet;
use std::path::Path;

use lambda_common::http::ErrorCode;

/// (code, HTTP status) of each row of the table after `## Error codes`.
fn documented_codes(doc: &str) -> BTreeSet<(String, String)> {
    doc.lines()
        .skip_while(|line| line.trim() != "## Error codes")
        .skip_while(|line| !line.starts_with("| `data.error`"))
        .skip(2)
        .take_while(|line| line.starts_with('|'))
        .map(|line| {
            let cells: Vec<&str> = line.trim_matches('|').split('|').map(str::trim).collect();
            (cells[0].trim_matches('`').to_owned(), cells[1].to_owned())
        })
        .collect()
}

fn declared_codes() -> BTreeSet<(String, String)> {
    ErrorCode::ALL
        .iter()
        .map(|code| (code.as_str().to_owned(), code.status().as_u16().to_string()))
        .collect()
}

#[test]
fn the_reference_lists_every_error_code_with_its_status() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/http-api.md");
    let doc = std::fs::read_to_string(&path).expect("docs/http-api.md");
    let documented = documented_codes(&doc);
    assert!(!documented.is_empty(), "no error table in docs/http-api.md");
    let declared = declared_codes();
    assert!(
        documented == declared,
        "docs/http-api.md's error codes differ from error_codes! and ErrorCode::status():\n  \
         only in the code: {:?}\n  only in the doc: {:?}\nits first two columns must be, in any order:\n{}",
        declared.difference(&documented).collect::<Vec<_>>(),
        documented.difference(&declared).collect::<Vec<_>>(),
        declared
            .iter()
            .map(|(code, status)| format!("| `{code}` | {status} |"))
            .collect::<Vec<_>>()
            .join("\n")
    );
}

#[test]
fn a_wrong_status_is_seen() {
    let doc = "## Error codes\n\n| `data.error` | HTTP | When |\n|---|---|---|\n\
               | `IN_MATCH`   | 404  | x |\n";
    let documented = documented_codes(doc);
    assert_eq!(
        documented,
        BTreeSet::from([("IN_MATCH".to_owned(), "404".to_owned())])
    );
    assert!(!declared_codes().contains(&("IN_MATCH".to_owned(), "404".to_owned())));
    assert!(declared_codes().contains(&("IN_MATCH".to_owned(), "409".to_owned())));
}
