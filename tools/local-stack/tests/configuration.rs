//! The rows of docs/deploy.md's configuration table marked "local stack
//! only" are exactly the variables `StackConfig::from_lookup` reads beyond
//! what the functions read (`shared::Settings` and the match events'
//! target, which lambda-common's tests/configuration.rs holds the other
//! rows to).

use std::cell::RefCell;
use std::collections::BTreeSet;
use std::path::Path;

use lambda_common::events::{EVENTS_ENDPOINT_VAR, EVENT_BUS_VAR, EVENT_SOURCE_VAR};
use local_stack::StackConfig;
use shared::config::doc_table::{documented_variables, settings_variables};

#[test]
fn the_local_stack_rows_are_what_only_the_stack_reads() {
    let seen = RefCell::new(BTreeSet::new());
    if let Err(e) = StackConfig::from_lookup(|k| {
        seen.borrow_mut().insert(k.to_owned());
        None
    }) {
        panic!("the stack's defaults: {e}");
    }
    let mut stack_only = seen.into_inner();
    for var in settings_variables() {
        stack_only.remove(&var);
    }
    for var in [EVENT_BUS_VAR, EVENT_SOURCE_VAR, EVENTS_ENDPOINT_VAR] {
        stack_only.remove(var);
    }
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/deploy.md");
    let doc = std::fs::read_to_string(&path).expect("docs/deploy.md");
    let documented: BTreeSet<String> = documented_variables(&doc)
        .into_iter()
        .filter(|row| row.meaning.starts_with("local stack only"))
        .flat_map(|row| row.variables)
        .collect();
    assert!(
        documented == stack_only,
        "docs/deploy.md's \"local stack only\" rows and StackConfig::from_lookup differ:\n  \
         read by the stack, not documented: {:?}\n  documented, not read: {:?}",
        stack_only.difference(&documented).collect::<Vec<_>>(),
        documented.difference(&stack_only).collect::<Vec<_>>()
    );
}
