//! The environment the deployed functions read, held to its copies: the
//! configuration table of docs/deploy.md (every row not marked "local stack
//! only"), `env.json` (the `sam local invoke` environment) and the list of
//! variables every function gets in `scripts/template/invariants.py`. The
//! variables are recorded from the code that reads them:
//! `shared::Settings::from_lookup`, `AuthSettings::from_lookup`,
//! `EventsTarget::from_lookup`, the wake-up bus, the `@connections`
//! endpoint, `MM_METRICS_STDOUT` and `RUST_LOG` (the log filter).

use std::cell::RefCell;
use std::collections::BTreeSet;
use std::path::Path;

use lambda_common::auth::AuthSettings;
use lambda_common::events::{EventsTarget, EVENT_BUS_VAR, WAKE_BUS_VAR};
use lambda_common::metrics::METRICS_STDOUT_VAR;
use lambda_common::push::WS_ENDPOINT_VAR;
use shared::config::doc_table::{documented_variables, settings_variables};

fn read(relative: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(relative);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()))
}

/// Every variable `read` asks `lookup` for, answering `answer`.
fn recorded<T>(
    answer: impl Fn(&str) -> Option<String>,
    read: impl FnOnce(&dyn Fn(&str) -> Option<String>) -> T,
) -> BTreeSet<String> {
    let seen = RefCell::new(BTreeSet::new());
    read(&|k: &str| {
        seen.borrow_mut().insert(k.to_owned());
        answer(k)
    });
    seen.into_inner()
}

/// Every variable a deployed function reads.
fn deployed_variables() -> BTreeSet<String> {
    let mut vars = settings_variables();
    vars.extend(recorded(
        |k| {
            Some(if k == "AUTH_JWKS_URL" {
                "https://issuer/jwks".into()
            } else {
                "x".into()
            })
        },
        |lookup| AuthSettings::from_lookup(lookup).expect("auth settings"),
    ));
    vars.extend(recorded(
        |k| (k == EVENT_BUS_VAR).then(|| "bus".to_owned()),
        |lookup| EventsTarget::from_lookup(lookup).expect("events target"),
    ));
    vars.extend(
        [
            WAKE_BUS_VAR,
            WS_ENDPOINT_VAR,
            METRICS_STDOUT_VAR,
            "RUST_LOG",
        ]
        .map(str::to_owned),
    );
    vars
}

fn difference_report(name: &str, expected: &BTreeSet<String>, found: &BTreeSet<String>) -> String {
    format!(
        "{name} and the variables the functions read differ:\n  read but not in {name}: {:?}\n  \
         in {name} but read by no function: {:?}",
        expected.difference(found).collect::<Vec<_>>(),
        found.difference(expected).collect::<Vec<_>>()
    )
}

#[test]
fn the_configuration_table_lists_exactly_what_the_functions_read() {
    let rows = documented_variables(&read("docs/deploy.md"));
    assert!(!rows.is_empty(), "no configuration table in docs/deploy.md");
    let documented: BTreeSet<String> = rows
        .iter()
        .filter(|row| !row.meaning.starts_with("local stack only"))
        .flat_map(|row| row.variables.iter().cloned())
        .collect();
    let deployed = deployed_variables();
    assert!(
        documented == deployed,
        "{}",
        difference_report(
            "docs/deploy.md's configuration table",
            &deployed,
            &documented
        )
    );
}

/// The names in `invariants.py`'s `env_vars = {...}` set.
fn invariants_env_vars(source: &str) -> BTreeSet<String> {
    let start = source
        .find("env_vars = {")
        .expect("env_vars in invariants.py");
    let body = &source[start..];
    let body = &body[..body.find('}').expect("the end of env_vars")];
    body.split('"')
        .skip(1)
        .step_by(2)
        .map(str::to_owned)
        .collect()
}

#[test]
fn env_json_and_the_template_invariants_name_only_variables_the_functions_read() {
    let deployed = deployed_variables();
    let env: serde_json::Value = serde_json::from_str(&read("env.json")).expect("env.json is JSON");
    let env_json: BTreeSet<String> = env["Parameters"]
        .as_object()
        .expect("env.json has Parameters")
        .keys()
        .cloned()
        .collect();
    let invariants = invariants_env_vars(&read("scripts/template/invariants.py"));
    assert!(
        invariants.len() > 10,
        "env_vars read from invariants.py: {invariants:?}"
    );
    for (name, vars) in [
        ("env.json", &env_json),
        ("invariants.py's env_vars", &invariants),
    ] {
        let unknown: Vec<&String> = vars.difference(&deployed).collect();
        assert!(
            unknown.is_empty(),
            "{name} sets variables no function reads: {unknown:?}"
        );
    }
    // env.json is every function's environment: the template's common
    // variables plus the world configuration (MM_RULES or MM_WORLDS).
    let mut expected = invariants.clone();
    expected.extend(["MM_RULES", "MM_WORLDS"].map(str::to_owned));
    assert!(
        env_json == expected,
        "env.json's Parameters should be invariants.py's env_vars plus MM_RULES and MM_WORLDS:\n  \
         missing: {:?}\n  extra: {:?}",
        expected.difference(&env_json).collect::<Vec<_>>(),
        env_json.difference(&expected).collect::<Vec<_>>()
    );
}

#[test]
fn a_variable_nobody_reads_is_named() {
    let deployed = deployed_variables();
    assert!(deployed.contains("MM_NAMESPACE") && deployed.contains("AUTH_ISSUER"));
    assert!(deployed.contains("MM_EVENT_SOURCE") && deployed.contains("MM_EVENTS_ENDPOINT"));
    let mut found = deployed.clone();
    found.insert("MM_CONNECTION_TTL_SECS".into());
    found.remove("MM_NAMESPACE");
    let report = difference_report("the table", &deployed, &found);
    assert!(
        report.contains("MM_CONNECTION_TTL_SECS") && report.contains("MM_NAMESPACE"),
        "{report}"
    );
    assert_eq!(
        invariants_env_vars("x = 1\nenv_vars = {\n    \"A\", \"B_C\",\n}\nother = {\"D\"}"),
        BTreeSet::from(["A".to_owned(), "B_C".to_owned()])
    );
}
