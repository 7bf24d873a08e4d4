//! Which function `template.yaml` routes each `events/*.json` file to, read
//! from the template itself (no YAML library: a reader for the few shapes
//! the template uses, which fails loudly when it finds none of them):
//!
//! - an HTTP API payload 2.0 event (`"version": "2.0"`, `"routeKey": "POST
//!   /v1/..."`) goes to the `AWS::Serverless::Function` with an `HttpApi`
//!   event of that `Method` and `Path`;
//! - a WebSocket event (`requestContext.eventType`, `requestContext.routeKey`
//!   `$connect` / `$default` / `$disconnect`) goes to the function whose
//!   `AWS::ApiGatewayV2::Integration` the `AWS::ApiGatewayV2::Route` of that
//!   `RouteKey` targets;
//! - an EventBridge scheduled event goes to the function with a `Schedule`
//!   event.
//!
//! A function is named by its binary (`Metadata.BuildProperties.Binary`),
//! which is what `cargo lambda` and the tests start.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use serde_json::Value;

use super::repo_root;

/// What makes Lambda invoke a function.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Trigger {
    /// An HTTP API route key, `"POST /v1/matching/join"`.
    Http(String),
    /// A WebSocket API route key, `"$connect"`.
    WebSocket(String),
    /// An EventBridge schedule.
    Schedule,
}

/// The routes of `template.yaml`: trigger -> binary.
#[derive(Debug, Clone, Default)]
pub struct Routes {
    pub by_trigger: BTreeMap<Trigger, String>,
    /// Every function's binary.
    pub binaries: BTreeSet<String>,
}

/// A resource of the template: its logical id, type and lines.
struct Resource<'a> {
    id: &'a str,
    kind: &'a str,
    lines: Vec<&'a str>,
}

fn indent(line: &str) -> usize {
    line.len() - line.trim_start().len()
}

/// `key: value` of a line (value unquoted), if the line is that key.
fn value_of<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    let rest = line.trim_start().strip_prefix(key)?.strip_prefix(':')?;
    Some(rest.trim().trim_matches('"'))
}

/// Every `${...}` in `text`, in order.
fn substitutions(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        let after = &rest[start + 2..];
        let Some(len) = after.find('}') else { break };
        out.push(&after[..len]);
        rest = &after[len..];
    }
    out
}

/// The name inside the first `${Name}` of `text`.
fn substituted(text: &str) -> Option<&str> {
    substitutions(text).into_iter().next()
}

/// The resource whose ARN `text` substitutes (`${Name.Arn}`).
fn arn_of(text: &str) -> Option<&str> {
    substitutions(text)
        .into_iter()
        .find_map(|s| s.strip_suffix(".Arn"))
}

fn resources(template: &str) -> Vec<Resource<'_>> {
    let mut out: Vec<Resource<'_>> = Vec::new();
    let mut inside = false;
    for line in template.lines() {
        if line.trim().is_empty() || line.trim_start().starts_with('#') {
            continue;
        }
        if indent(line) == 0 {
            inside = line.trim_end() == "Resources:";
            continue;
        }
        if !inside {
            continue;
        }
        if indent(line) == 2 {
            if let Some(id) = line.trim().strip_suffix(':') {
                out.push(Resource {
                    id,
                    kind: "",
                    lines: Vec::new(),
                });
            }
            continue;
        }
        if let Some(resource) = out.last_mut() {
            if indent(line) == 4 {
                if let Some(kind) = value_of(line, "Type") {
                    resource.kind = kind;
                }
            }
            resource.lines.push(line);
        }
    }
    out
}

/// Reads the routes out of template text.
pub fn routes_of(template: &str) -> Routes {
    let resources = resources(template);
    let mut routes = Routes::default();
    let mut binary_of: BTreeMap<&str, String> = BTreeMap::new();
    let mut integration_fn: BTreeMap<&str, &str> = BTreeMap::new();
    let mut ws_routes: Vec<(String, &str)> = Vec::new();
    for r in &resources {
        match r.kind {
            "AWS::Serverless::Function" => {
                let binary = r
                    .lines
                    .iter()
                    .find_map(|l| value_of(l, "Binary"))
                    .unwrap_or_else(|| panic!("{} has no BuildProperties.Binary", r.id))
                    .to_owned();
                binary_of.insert(r.id, binary.clone());
                routes.binaries.insert(binary.clone());
                // Events: a `Type:` line deeper than the resource's own
                // starts an event; HttpApi events name Method and Path.
                let mut event_type = "";
                let mut method: Option<&str> = None;
                for l in &r.lines {
                    if indent(l) > 4 {
                        if let Some(kind) = value_of(l, "Type") {
                            event_type = kind;
                            method = None;
                            if kind == "Schedule" {
                                routes.by_trigger.insert(Trigger::Schedule, binary.clone());
                            }
                            continue;
                        }
                    }
                    if event_type != "HttpApi" {
                        continue;
                    }
                    if let Some(m) = value_of(l, "Method") {
                        method = Some(m);
                    } else if let (Some(path), Some(m)) = (value_of(l, "Path"), method) {
                        let key = format!("{} {path}", m.to_ascii_uppercase());
                        let previous = routes
                            .by_trigger
                            .insert(Trigger::Http(key.clone()), binary.clone());
                        assert!(previous.is_none(), "{key} is routed twice");
                    }
                }
            }
            "AWS::ApiGatewayV2::Integration" => {
                if let Some(f) = r
                    .lines
                    .iter()
                    .find_map(|l| value_of(l, "IntegrationUri"))
                    .and_then(arn_of)
                {
                    integration_fn.insert(r.id, f);
                }
            }
            "AWS::ApiGatewayV2::Route" => {
                let key = r.lines.iter().find_map(|l| value_of(l, "RouteKey"));
                let target = r
                    .lines
                    .iter()
                    .find_map(|l| value_of(l, "Target"))
                    .and_then(substituted);
                if let (Some(key), Some(target)) = (key, target) {
                    ws_routes.push((key.to_owned(), target));
                }
            }
            _ => {}
        }
    }
    for (key, integration) in ws_routes {
        let function = integration_fn.get(integration).unwrap_or_else(|| {
            panic!("route {key} targets {integration}, not a Lambda integration")
        });
        let binary = binary_of.get(function).unwrap_or_else(|| {
            panic!("integration {integration} invokes {function}, not a function")
        });
        routes
            .by_trigger
            .insert(Trigger::WebSocket(key), binary.clone());
    }
    assert!(
        !routes.binaries.is_empty() && !routes.by_trigger.is_empty(),
        "no functions or routes found in the template: has its layout changed?"
    );
    routes
}

/// The routes of the repository's `template.yaml`.
pub fn routes() -> Routes {
    let path = repo_root().join("template.yaml");
    let text =
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    routes_of(&text)
}

/// Whether `path` (`/v1/parties/world1.x/join`) fits the route's path
/// pattern (`/v1/parties/{partyId}/join`).
fn path_fits(pattern: &str, path: &str) -> bool {
    let (p, a): (Vec<_>, Vec<_>) = (pattern.split('/').collect(), path.split('/').collect());
    p.len() == a.len()
        && p.iter()
            .zip(&a)
            .all(|(p, a)| (p.starts_with('{') && p.ends_with('}') && !a.is_empty()) || p == a)
}

/// What invokes a function with `event`; `Err` says why it is none of the
/// known shapes, or why its fields disagree.
pub fn trigger_of(event: &Value) -> Result<Trigger, String> {
    let ctx = &event["requestContext"];
    if event["version"] == "2.0" {
        let key = event["routeKey"]
            .as_str()
            .ok_or("an HTTP API 2.0 event without routeKey")?;
        let (method, pattern) = key
            .split_once(' ')
            .ok_or_else(|| format!("routeKey {key:?} is not \"METHOD /path\""))?;
        if ctx["routeKey"] != key {
            return Err(format!(
                "routeKey {key:?} but requestContext.routeKey {}",
                ctx["routeKey"]
            ));
        }
        if ctx["http"]["method"] != method {
            return Err(format!(
                "routeKey {key:?} but requestContext.http.method {}",
                ctx["http"]["method"]
            ));
        }
        for field in [&event["rawPath"], &ctx["http"]["path"]] {
            let path = field.as_str().unwrap_or_default();
            if !path_fits(pattern, path) {
                return Err(format!("path {path:?} does not fit routeKey {key:?}"));
            }
        }
        return Ok(Trigger::Http(key.to_owned()));
    }
    if let (Some(_), Some(key)) = (ctx["eventType"].as_str(), ctx["routeKey"].as_str()) {
        return Ok(Trigger::WebSocket(key.to_owned()));
    }
    if event["source"] == "aws.events" && event["detail-type"] == "Scheduled Event" {
        return Ok(Trigger::Schedule);
    }
    Err("neither an HTTP API 2.0, a WebSocket nor a scheduled event".into())
}

/// The directory of the sample events.
pub fn events_dir() -> PathBuf {
    repo_root().join("events")
}

/// Every `events/*.json` file, by file name, parsed.
pub fn event_files() -> BTreeMap<String, Value> {
    let dir = events_dir();
    let mut out = BTreeMap::new();
    for entry in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("read {}: {e}", dir.display())) {
        let path = entry.expect("directory entry").path();
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .expect("a UTF-8 file name")
            .to_owned();
        assert!(
            name.ends_with(".json"),
            "events/{name}: only JSON events belong in events/"
        );
        let text = std::fs::read_to_string(&path).expect("read the event");
        let value: Value = serde_json::from_str(&text)
            .unwrap_or_else(|e| panic!("events/{name} is not JSON: {e}"));
        out.insert(name, value);
    }
    out
}

/// Every event file with the binary the template routes it to. Panics for
/// an event that is no known shape or that the template routes nowhere.
pub fn routed_events() -> BTreeMap<String, (Value, String)> {
    let routes = routes();
    event_files()
        .into_iter()
        .map(|(name, event)| {
            let trigger = trigger_of(&event).unwrap_or_else(|e| panic!("events/{name}: {e}"));
            let binary = routes.by_trigger.get(&trigger).unwrap_or_else(|| {
                panic!("events/{name}: template.yaml routes {trigger:?} to no function")
            });
            (name, (event, binary.clone()))
        })
        .collect()
}

/// The events `binary`'s local-invoke test must run, checked against what
/// it `claims` (the file names it has an expectation for): every event the
/// template routes to `binary` is claimed, and nothing routed elsewhere is.
/// So an event added to `events/` fails the test of the function it goes
/// to until that test runs it, and an event nobody can route fails every
/// test. Also checks that every function in the template has a
/// `functions/<binary>/tests/local_invoke.rs`.
pub fn claimed_events(binary: &str, claims: &[&str]) -> BTreeMap<String, Value> {
    let routes = routes();
    for b in &routes.binaries {
        let test = repo_root().join(format!("functions/{b}/tests/local_invoke.rs"));
        assert!(
            test.exists(),
            "template.yaml has function `{b}` but there is no {}",
            test.display()
        );
    }
    assert!(
        routes.binaries.contains(binary),
        "template.yaml has no function with binary `{binary}`"
    );
    let all = routed_events();
    let claimed: BTreeSet<&str> = claims.iter().copied().collect();
    assert_eq!(
        claimed.len(),
        claims.len(),
        "{binary} claims an event twice"
    );
    for name in &claimed {
        match all.get(*name) {
            None => panic!("{binary}'s local-invoke test claims events/{name}, which does not exist"),
            Some((_, to)) if to != binary => panic!(
                "{binary}'s local-invoke test claims events/{name}, which template.yaml routes to `{to}`"
            ),
            Some(_) => {}
        }
    }
    let mine: BTreeMap<String, Value> = all
        .into_iter()
        .filter(|(_, (_, to))| to == binary)
        .map(|(name, (event, _))| (name, event))
        .collect();
    let unclaimed: Vec<&String> = mine
        .keys()
        .filter(|n| !claimed.contains(n.as_str()))
        .collect();
    assert!(
        unclaimed.is_empty(),
        "template.yaml routes {unclaimed:?} to `{binary}`, but functions/{binary}/tests/local_invoke.rs \
         does not invoke them: add an expectation for each"
    );
    mine
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_template_routes_every_route_to_its_binary() {
        let routes = routes();
        assert_eq!(
            routes
                .binaries
                .iter()
                .map(String::as_str)
                .collect::<Vec<_>>(),
            [
                "join",
                "leave",
                "matcher",
                "status",
                "ws-connect",
                "ws-disconnect"
            ]
        );
        let to = |t: Trigger| routes.by_trigger.get(&t).cloned();
        assert_eq!(
            to(Trigger::Http("POST /v1/matching/join".into())).as_deref(),
            Some("join")
        );
        assert_eq!(
            to(Trigger::Http("DELETE /v1/parties/{partyId}".into())).as_deref(),
            Some("leave")
        );
        assert_eq!(
            to(Trigger::WebSocket("$default".into())).as_deref(),
            Some("ws-connect")
        );
        assert_eq!(
            to(Trigger::WebSocket("$disconnect".into())).as_deref(),
            Some("ws-disconnect")
        );
        assert_eq!(to(Trigger::Schedule).as_deref(), Some("matcher"));
    }

    #[test]
    fn every_event_file_is_routed() {
        let routed = routed_events();
        assert!(routed.len() >= 13, "{:?}", routed.keys());
    }

    #[test]
    fn events_whose_fields_disagree_are_refused() {
        let event = |method: &str, path: &str| {
            json!({"version": "2.0", "routeKey": "POST /v1/parties/{partyId}/join",
                   "rawPath": path,
                   "requestContext": {"routeKey": "POST /v1/parties/{partyId}/join",
                                      "http": {"method": method, "path": path}}})
        };
        assert_eq!(
            trigger_of(&event("POST", "/v1/parties/world1.a-1/join")),
            Ok(Trigger::Http("POST /v1/parties/{partyId}/join".into()))
        );
        assert!(trigger_of(&event("GET", "/v1/parties/world1.a-1/join")).is_err());
        assert!(trigger_of(&event("POST", "/v1/parties/join")).is_err());
        assert!(trigger_of(&json!({"hello": "world"})).is_err());
    }
}
