//! The route table (`lambda_common::http::ROUTES`) is the one declaration
//! of the HTTP API's routes; the deployed API is `template.yaml`'s HttpApi
//! events and the reference is docs/http-api.md. These tests fail when
//! either says something else than the table.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use lambda_common::http::{Access, ROUTES};
use serde_norway::Value;

/// (method, path template, who serves it).
type Row = (String, String, String);

fn repository_file(relative: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(relative)
}

fn read(relative: &str) -> String {
    let path = repository_file(relative);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()))
}

/// A YAML scalar as text. CloudFormation short tags (`!Ref HttpApi`) parse
/// as tagged values: their tag is dropped, so `!Ref X` reads as `X`.
fn text(value: &Value) -> Option<String> {
    match value {
        Value::String(s) => Some(s.clone()),
        Value::Tagged(tagged) => text(&tagged.value),
        _ => None,
    }
}

/// Every HttpApi event of every function in the template, as
/// (method, path, function logical id).
fn template_routes(template: &Value) -> BTreeSet<Row> {
    let resources = template
        .get("Resources")
        .and_then(Value::as_mapping)
        .expect("template.yaml has a Resources mapping");
    let mut routes = BTreeSet::new();
    for (name, resource) in resources {
        let name = text(name).expect("resource names are strings");
        let events = resource
            .get("Properties")
            .and_then(|p| p.get("Events"))
            .and_then(Value::as_mapping);
        for (event_name, event) in events.into_iter().flatten() {
            if event.get("Type").and_then(text).as_deref() != Some("HttpApi") {
                continue;
            }
            let what = format!("{name}.Events.{}", text(event_name).unwrap_or_default());
            let properties = event.get("Properties");
            let field = |key: &str| {
                properties
                    .and_then(|p| p.get(key))
                    .and_then(text)
                    .unwrap_or_else(|| panic!("{what}: no {key}"))
            };
            assert_eq!(field("ApiId"), "HttpApi", "{what}: an event of another API");
            routes.insert((
                field("Method").to_ascii_uppercase(),
                field("Path"),
                name.clone(),
            ));
        }
    }
    routes
}

fn table_routes(
    function_name: impl Fn(&lambda_common::http::RouteSpec) -> String,
) -> BTreeSet<Row> {
    ROUTES
        .iter()
        .map(|spec| {
            (
                spec.method.as_str().to_owned(),
                spec.path.to_owned(),
                function_name(spec),
            )
        })
        .collect()
}

/// What each side has that the other lacks, if anything.
fn differences<T: Ord + std::fmt::Debug>(
    table: &BTreeSet<T>,
    other: &BTreeSet<T>,
    other_name: &str,
) -> Option<String> {
    let only_table: Vec<&T> = table.difference(other).collect();
    let only_other: Vec<&T> = other.difference(table).collect();
    (!only_table.is_empty() || !only_other.is_empty()).then(|| {
        format!(
            "{other_name} and the route table (functions/lambda-common/src/http/routes.rs) differ:\n  \
             only in the table: {only_table:?}\n  only in {other_name}: {only_other:?}"
        )
    })
}

#[test]
fn template_declares_exactly_the_routes_of_the_table() {
    let template: Value =
        serde_norway::from_str(&read("template.yaml")).expect("template.yaml is YAML");
    let declared = template_routes(&template);
    assert!(
        !declared.is_empty(),
        "no HttpApi event found in template.yaml"
    );
    let table = table_routes(|spec| spec.function.logical_id().to_owned());
    if let Some(message) = differences(&table, &declared, "template.yaml") {
        panic!("{message}");
    }
}

#[test]
fn a_route_missing_from_the_template_is_named() {
    // The comparison itself can fail: drop one event and add a stray one.
    let yaml = r#"
Resources:
  JoinFunction:
    Type: AWS::Serverless::Function
    Properties:
      Events:
        Join:
          Type: HttpApi
          Properties:
            ApiId: !Ref HttpApi
            Method: post
            Path: /v1/matching/join
        Stray:
          Type: HttpApi
          Properties:
            ApiId: !Ref HttpApi
            Method: GET
            Path: /v1/stray
        Tick:
          Type: Schedule
          Properties:
            Schedule: rate(1 minute)
"#;
    let template: Value = serde_norway::from_str(yaml).expect("YAML");
    let declared = template_routes(&template);
    assert_eq!(
        declared,
        BTreeSet::from([
            (
                "POST".into(),
                "/v1/matching/join".into(),
                "JoinFunction".into()
            ),
            ("GET".into(), "/v1/stray".into(), "JoinFunction".into()),
        ])
    );
    let table = table_routes(|spec| spec.function.logical_id().to_owned());
    let message = differences(&table, &declared, "the template").expect("the sets differ");
    assert!(message.contains("/v1/matching/leave"), "{message}");
    assert!(message.contains("/v1/stray"), "{message}");
}

/// The rows of the first Markdown table of docs/http-api.md: method, path,
/// function, who may call.
fn documented_routes(doc: &str) -> Vec<Vec<String>> {
    doc.lines()
        .skip_while(|line| !line.starts_with("| Method"))
        .skip(2)
        .take_while(|line| line.starts_with('|'))
        .map(|line| {
            line.trim_matches('|')
                .split('|')
                .map(|cell| cell.trim().trim_matches('`').to_owned())
                .collect()
        })
        .collect()
}

#[test]
fn the_reference_lists_exactly_the_routes_of_the_table() {
    let rows = documented_routes(&read("docs/http-api.md"));
    assert!(!rows.is_empty(), "no route table in docs/http-api.md");
    let documented: BTreeSet<(String, String, String, String)> = rows
        .into_iter()
        .map(|cells| {
            let [method, path, function, access] = <[String; 4]>::try_from(cells)
                .unwrap_or_else(|c| panic!("a route row has 4 cells: {c:?}"));
            (method, path, function, access)
        })
        .collect();
    let table: BTreeSet<(String, String, String, String)> = ROUTES
        .iter()
        .map(|spec| {
            let access = match spec.access {
                Access::Player => "any player".to_owned(),
                Access::Scope(scope) => scope.setting().to_owned(),
            };
            (
                spec.method.as_str().to_owned(),
                spec.path.to_owned(),
                spec.function.binary().to_owned(),
                access,
            )
        })
        .collect();
    if let Some(message) = differences(&table, &documented, "docs/http-api.md") {
        let expected: Vec<String> = ROUTES
            .iter()
            .map(|spec| {
                let access = match spec.access {
                    Access::Player => "any player".to_owned(),
                    Access::Scope(scope) => format!("`{}`", scope.setting()),
                };
                format!(
                    "| {} | `{}` | {} | {access} |",
                    spec.method.as_str(),
                    spec.path,
                    spec.function.binary()
                )
            })
            .collect();
        panic!(
            "{message}\nits rows must be (in any order, padded as you like):\n{}",
            expected.join("\n")
        );
    }
}
