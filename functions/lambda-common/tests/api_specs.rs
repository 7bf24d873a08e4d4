//! `docs/openapi.yaml` is held to the code: its paths and methods are
//! exactly the route table (`lambda_common::http::ROUTES`), each operation's
//! security is its route's access rule, every `ErrorCode` has its schema and
//! is only ever declared under the HTTP status the code maps to. (The
//! answers themselves are held to the spec by Schemathesis and the
//! end-to-end run in `tools/local-stack/tests/api_specs.rs`.)

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use lambda_common::http::{Access, ConfiguredScope, ErrorCode, Route, ROUTES};
use serde_json::Value;

const SPEC: &str = "docs/openapi.yaml";
const METHODS: [&str; 8] = [
    "get", "put", "post", "delete", "options", "head", "patch", "trace",
];

fn spec() -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(SPEC);
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    serde_norway::from_str(&text).unwrap_or_else(|e| panic!("{SPEC} is not YAML: {e}"))
}

/// The node a local `$ref` (`#/components/...`) points to.
fn deref<'a>(doc: &'a Value, node: &'a Value) -> &'a Value {
    match node.get("$ref").and_then(Value::as_str) {
        Some(reference) => {
            let pointer = reference
                .strip_prefix('#')
                .unwrap_or_else(|| panic!("{SPEC}: only local references are used: {reference}"));
            let target = doc
                .pointer(pointer)
                .unwrap_or_else(|| panic!("{SPEC}: dangling reference {reference}"));
            deref(doc, target)
        }
        None => node,
    }
}

/// Every operation: (METHOD, path template) -> operation object.
fn operations(doc: &Value) -> BTreeMap<(String, String), &Value> {
    let paths = doc["paths"].as_object().expect("paths");
    let mut found = BTreeMap::new();
    for (path, item) in paths {
        for (key, operation) in item.as_object().expect("path item") {
            if METHODS.contains(&key.as_str()) {
                found.insert((key.to_ascii_uppercase(), path.clone()), operation);
            }
        }
    }
    found
}

fn spec_of(route: Route) -> (String, String) {
    (
        route.method_name().to_owned(),
        route.path_template().to_owned(),
    )
}

/// `Join` -> `join`, `QueueStatus` -> `queueStatus`.
fn operation_id(route: Route) -> String {
    let name = format!("{route:?}");
    let mut chars = name.chars();
    chars
        .next()
        .map(|first| first.to_ascii_lowercase().to_string() + chars.as_str())
        .unwrap_or_default()
}

/// The `data.error` constants of every schema reachable from `node`.
fn error_codes_under(doc: &Value, node: &Value) -> BTreeSet<String> {
    let mut codes = BTreeSet::new();
    let mut seen = BTreeSet::new();
    let mut pending = vec![node];
    while let Some(node) = pending.pop() {
        if let Some(reference) = node.get("$ref").and_then(Value::as_str) {
            if seen.insert(reference.to_owned()) {
                pending.push(deref(doc, node));
            }
            continue;
        }
        if let Some(code) = node
            .pointer("/properties/error/const")
            .and_then(Value::as_str)
        {
            codes.insert(code.to_owned());
        }
        match node {
            Value::Object(map) => pending.extend(map.values()),
            Value::Array(items) => pending.extend(items),
            _ => {}
        }
    }
    codes
}

fn code_named(name: &str) -> ErrorCode {
    *ErrorCode::ALL
        .iter()
        .find(|c| c.as_str() == name)
        .unwrap_or_else(|| panic!("{SPEC} names an error code the code does not have: {name}"))
}

#[test]
fn the_spec_declares_exactly_the_routes_of_the_table() {
    let doc = spec();
    let declared: BTreeSet<(String, String)> = operations(&doc).into_keys().collect();
    let table: BTreeSet<(String, String)> = ROUTES.iter().map(|r| spec_of(r.route)).collect();
    let only_table: Vec<_> = table.difference(&declared).collect();
    let only_spec: Vec<_> = declared.difference(&table).collect();
    assert!(
        only_table.is_empty() && only_spec.is_empty(),
        "{SPEC} and the route table (functions/lambda-common/src/http/routes.rs) differ:\n  \
         only in the table: {only_table:?}\n  only in {SPEC}: {only_spec:?}"
    );
}

#[test]
fn each_operation_is_named_after_its_route_and_declares_its_path_parameters() {
    let doc = spec();
    let operations = operations(&doc);
    for row in ROUTES {
        let key = spec_of(row.route);
        let Some(operation) = operations.get(&key) else {
            continue; // the routes test names it
        };
        assert_eq!(
            operation["operationId"].as_str(),
            Some(operation_id(row.route).as_str()),
            "{key:?}: operationId"
        );
        let declared: Vec<String> = operation["parameters"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|p| deref(&doc, p))
            .filter(|p| p["in"] == "path")
            .map(|p| {
                assert_eq!(p["required"], true, "{key:?}: path parameters are required");
                p["name"].as_str().expect("parameter name").to_owned()
            })
            .collect();
        let template: Vec<String> = row.parameter_names().map(str::to_owned).collect();
        assert_eq!(declared, template, "{key:?}: path parameters");
    }
}

#[test]
fn each_operations_security_is_its_routes_access_rule() {
    let doc = spec();
    let operations = operations(&doc);
    let global = doc["security"].clone();
    assert_eq!(
        global,
        serde_json::json!([{"playerJwt": []}]),
        "{SPEC}: every route is behind the JWT authorizer"
    );
    for row in ROUTES {
        let key = spec_of(row.route);
        let Some(operation) = operations.get(&key) else {
            continue;
        };
        let security = operation.get("security").unwrap_or(&global);
        let want = match row.access {
            Access::Player => serde_json::json!([{"playerJwt": []}]),
            Access::Scope(ConfiguredScope::RatingsWriter) => {
                serde_json::json!([{"ratingsWriterJwt": [ConfiguredScope::RatingsWriter.setting()]}])
            }
            Access::Scope(ConfiguredScope::AttributesWriter) => {
                serde_json::json!([{"attributesWriterJwt": [ConfiguredScope::AttributesWriter.setting()]}])
            }
            Access::Scope(ConfiguredScope::Server) => {
                serde_json::json!([{"serverJwt": [ConfiguredScope::Server.setting()]}])
            }
            Access::Scope(ConfiguredScope::AdminRead) => {
                serde_json::json!([{"adminReadJwt": [ConfiguredScope::AdminRead.setting()]}])
            }
            Access::Scope(ConfiguredScope::AdminAction) => {
                serde_json::json!([{"adminActionJwt": [ConfiguredScope::AdminAction.setting()]}])
            }
        };
        assert_eq!(security, &want, "{key:?}: security for {:?}", row.access);
    }
    for scheme in [
        "playerJwt",
        "ratingsWriterJwt",
        "attributesWriterJwt",
        "serverJwt",
        "adminReadJwt",
        "adminActionJwt",
    ] {
        let declared = &doc["components"]["securitySchemes"][scheme];
        assert_eq!(
            (
                &declared["type"],
                &declared["scheme"],
                &declared["bearerFormat"]
            ),
            (&"http".into(), &"bearer".into(), &"JWT".into()),
            "{scheme}"
        );
    }
}

#[test]
fn every_error_code_has_its_schema() {
    let doc = spec();
    let all: BTreeSet<String> = ErrorCode::ALL
        .iter()
        .map(|c| c.as_str().to_owned())
        .collect();
    let listed: BTreeSet<String> = doc["components"]["schemas"]["ErrorCode"]["enum"]
        .as_array()
        .expect("components.schemas.ErrorCode.enum")
        .iter()
        .map(|v| v.as_str().expect("a code").to_owned())
        .collect();
    assert_eq!(
        listed, all,
        "{SPEC}: components.schemas.ErrorCode lists other codes than ErrorCode (errors.rs)"
    );
    let with_schema = error_codes_under(&doc, &doc["components"]["schemas"]);
    assert_eq!(
        with_schema, all,
        "{SPEC}: every code needs an error schema (data.error const)"
    );
}

#[test]
fn error_codes_are_declared_only_under_their_status_and_each_is_answered_somewhere() {
    let doc = spec();
    let mut answered = BTreeSet::new();
    for ((method, path), operation) in operations(&doc) {
        let responses = operation["responses"].as_object().expect("responses");
        for (status, response) in responses {
            for code in error_codes_under(&doc, response) {
                let want = code_named(&code).status().as_u16().to_string();
                assert_eq!(
                    status, &want,
                    "{method} {path}: {code} is declared under {status}, but the code answers {want}"
                );
                answered.insert(code);
            }
        }
        for status in ["401", "429", "500"] {
            assert!(
                responses.contains_key(status),
                "{method} {path}: API Gateway's {status} is not declared"
            );
        }
        assert!(
            error_codes_under(&doc, &responses["503"]).contains("REDIS_UNAVAILABLE"),
            "{method} {path}: 503 REDIS_UNAVAILABLE is not declared"
        );
    }
    // The two codes a function answers only to an event API Gateway never
    // sends (invoked directly) are documented but no operation's.
    for code in ErrorCode::ALL {
        let direct_only = doc["components"]["schemas"]
            .as_object()
            .expect("schemas")
            .values()
            .filter(|s| error_codes_under(&doc, s).contains(code.as_str()))
            .any(|s| s["x-direct-invocation-only"] == true);
        let expected_direct_only =
            matches!(code, ErrorCode::NotFound | ErrorCode::MethodNotAllowed);
        assert_eq!(
            direct_only,
            expected_direct_only,
            "{}: x-direct-invocation-only",
            code.as_str()
        );
        assert_eq!(
            answered.contains(code.as_str()),
            !direct_only,
            "{}: {}",
            code.as_str(),
            if direct_only {
                "answered only to direct invocations, yet declared by an operation"
            } else {
                "no operation declares it"
            }
        );
    }
}

/// The body limit of a route: an assignment carries a token per player.

#[test]
fn the_limits_in_the_spec_are_the_codes() {
    let doc = spec();
    let data = &doc["components"]["schemas"]["TicketData"];
    assert_eq!(
        data["x-max-bytes"],
        shared::domain::MAX_TICKET_DATA_BYTES as u64
    );
    assert_eq!(
        data["x-max-depth"],
        shared::domain::MAX_TICKET_DATA_DEPTH as u64
    );
    let schemas = &doc["components"]["schemas"];
    assert_eq!(
        schemas["AssignmentProperties"]["x-max-bytes"],
        shared::domain::MAX_PROPERTIES_BYTES as u64
    );
    for (name, chars) in [
        ("Connection", shared::domain::MAX_CONNECTION_CHARS),
        ("SeatToken", shared::domain::MAX_TOKEN_CHARS),
    ] {
        assert_eq!(schemas[name]["maxLength"], chars as u64, "{name}.maxLength");
        assert_eq!(schemas[name]["minLength"], 1, "{name}.minLength");
        // No control characters, as for player ids (char::is_control).
        assert_eq!(
            schemas[name]["pattern"], schemas["PlayerId"]["pattern"],
            "{name}.pattern"
        );
    }
    let operations = operations(&doc);
    let mut with_body = 0;
    for row in ROUTES {
        let Some(operation) = operations.get(&spec_of(row.route)) else {
            continue;
        };
        let Some(body) = operation.get("requestBody") else {
            continue;
        };
        with_body += 1;
        let limit = row.route.max_body_bytes() as u64;
        assert_eq!(
            body["x-max-body-bytes"], limit,
            "{:?}: x-max-body-bytes",
            row.route
        );
        let schema = deref(&doc, &body["content"]["application/json"]["schema"]);
        assert_eq!(
            schema["additionalProperties"], false,
            "{:?}: unknown fields are refused",
            row.route
        );
        // Its 413 names the same limit.
        let too_large = deref(&doc, &operation["responses"]["413"]);
        let variants = too_large
            .pointer("/content/application~1json/schema/properties/data/oneOf")
            .and_then(Value::as_array)
            .unwrap_or_else(|| panic!("{:?}: no 413 data schemas", row.route));
        for variant in variants {
            let error = deref(&doc, variant);
            assert_eq!(
                (
                    &error["properties"]["limitBytes"]["const"],
                    &error["properties"]["sizeBytes"]["minimum"]
                ),
                (&Value::from(limit), &Value::from(limit + 1)),
                "{:?}: the 413's limit",
                row.route
            );
        }
    }
    assert!(with_body >= 7, "only {with_body} operations with a body");
}

/// The match as a participant sees it (my-status, `GET .../matches/{id}`) is
/// the match record with its lifecycle: the record's fields, the same, and
/// the four of the lifecycle view.
#[test]
fn the_match_view_is_the_record_and_its_lifecycle() {
    let doc = spec();
    let schemas = &doc["components"]["schemas"];
    let record = &schemas["MatchRecord"];
    let view = &schemas["MatchView"];
    let mut properties = view["properties"].as_object().expect("properties").clone();
    for field in ["state", "assignment", "result", "ratingChanges"] {
        assert!(
            properties.remove(field).is_some(),
            "MatchView.{field} is missing"
        );
    }
    assert_eq!(
        Value::Object(properties),
        record["properties"],
        "MatchView's record fields"
    );
    let mut required: Vec<Value> = record["required"].as_array().expect("required").clone();
    required.push("state".into());
    assert_eq!(
        view["required"],
        Value::Array(required),
        "MatchView.required"
    );
    assert_eq!(view["additionalProperties"], false);
    // The lifecycle fields are the ones LifecycleView serializes.
    let life = shared::domain::LifecycleView {
        state: shared::MatchState::Finished,
        assignment: Some(shared::SeatAssignment {
            connection: "h:1".into(),
            properties: None,
            token: None,
        }),
        result: Some(
            serde_json::from_value(serde_json::json!({"teamRanks": [1, 2]})).expect("a result"),
        ),
        rating_changes: Some(BTreeMap::new()),
    };
    let fields: BTreeSet<String> = serde_json::to_value(&life)
        .expect("JSON")
        .as_object()
        .expect("an object")
        .keys()
        .cloned()
        .collect();
    let want: BTreeSet<String> = ["state", "assignment", "result", "ratingChanges"]
        .map(String::from)
        .into();
    assert_eq!(fields, want, "LifecycleView's fields");
}

#[test]
fn no_value_is_left_out() {
    // A YAML slip such as `{description: whole seconds, rounded up}` makes
    // a key `rounded up` with a null value; nothing in the spec is null.
    fn nulls(node: &Value, at: &str, found: &mut Vec<String>) {
        match node {
            Value::Object(map) => {
                for (key, value) in map {
                    let here = format!("{at}/{key}");
                    if value.is_null() {
                        found.push(here.clone());
                    }
                    nulls(value, &here, found);
                }
            }
            Value::Array(items) => {
                for (i, item) in items.iter().enumerate() {
                    nulls(item, &format!("{at}/{i}"), found);
                }
            }
            _ => {}
        }
    }
    let mut found = Vec::new();
    nulls(&spec(), "", &mut found);
    assert!(found.is_empty(), "{SPEC}: null values at {found:?}");
}
