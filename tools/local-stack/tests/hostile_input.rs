//! Hostile input, property-based: every HTTP route and the WebSocket
//! `$connect` event get arbitrary requests, built from API Gateway events
//! exactly as Lambda builds them (`lambda_http::request::from_str` for the
//! HTTP API, the proxy event struct for `$connect`), handed to the real
//! handlers against a real `redis-server`; a subset goes end to end through
//! the local stack's HTTP and WebSocket servers.
//!
//! Properties, for every request:
//! - the answer is exactly what `docs/http-api.md` says (an oracle written
//!   from the docs computes the expected status and `data.error`), in the
//!   documented envelope (`resultCode` == HTTP status, `data.error` a known
//!   code with its documented status); never a function error (a bare 500),
//!   never a panic;
//! - a refused request (any 4xx/5xx) and every read change nothing in Redis,
//!   and push nothing;
//! - a successful join queues or matches exactly the `sub` of the claims,
//!   and pushes reach only that player's (or the match participants')
//!   connections;
//! - the party routes (`POST /v1/parties`, `POST /v1/parties/{id}/join`,
//!   `DELETE /v1/parties/{id}`) and the join and leave of party members
//!   answer what the party state read from Redis just before the call says
//!   (who leads, is invited to or has joined which party, who is queued);
//!   a creation (201) makes the caller, and only the caller, the leader of
//!   exactly the party asked for; a party join marks only the caller as
//!   joined (and the last one queues or matches the whole party); a cancel
//!   or a member's leave deletes the party, its pointers and its ticket;
//!   none of them pushes, but for a match;
//! - no Redis key is ever built from input: after the run every key of the
//!   server is one of `store.keys().all(&settings.worlds)`.
//!
//! Party ids are made by the scripts, so cases name parties by
//! placeholders resolved against Redis just before the call (see
//! [`PLACEHOLDERS`], [`CALLER_PLACEHOLDERS`], [`MY_WORLD`]).
//!
//! `$connect`: only 200 (valid token and connection id), 400 (connection
//! id) or 401, and a registration exactly when the answer is 200.
//!
//! `MM_PROPTEST_CASES` scales the case counts, `MM_PROPTEST_SEED` replays a
//! run (the seed is printed), `MM_CORPUS_OUT=<dir>` saves every generated
//! case with a new outcome as a corpus file. `tests/corpus/{http,ws}/*.json`
//! is replayed by `corpus_replays_with_the_same_properties`.
//!
//! Bugs these tests found are fixed; their regression tests run by default
//! (see docs/hardening-input.md).

mod support;

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::path::{Path, PathBuf};
use std::time::Duration;

use aws_lambda_events::apigw::ApiGatewayWebsocketProxyRequest;
use base64::Engine;
use integration_tests::connections_server::{
    hs256_token, now_secs, unsigned_token, ConnectionsServer, TestIssuer,
};
use integration_tests::keyspace::{walk, KeyContents, Scope};
use integration_tests::{eventually, RedisServer};
use lambda_common::auth::{AuthSettings, JwtVerifier};
use lambda_common::http::{Function, Route, RouteSpec, ROUTES};
use lambda_common::push::ApiGatewayPusher;
use lambda_http::{Body, Request, Response};
use lambda_runtime::{Context, LambdaEvent};
use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};
use shared::{ConnectionId, MatchStore, PlayerId, PlayerStatus, Settings, WorldName};

// ---------------------------------------------------------------------------
// What the docs promise
// ---------------------------------------------------------------------------

/// The harness's rule set: two FIFO worlds and two with a ready check.
/// `duel` (no cool-down, proposals that outlive any run) is played by the
/// generators; `blitz` (1 s to accept, an hour's cool-down) only by the
/// seeds, which wait for its proposals to run out (see [`HttpCase::late`]),
/// so no generated answer races its clock. `attr` and `vip` are worlds with
/// player attributes (see [`ATTRIBUTES`]): `attr` takes client attributes
/// of every type (one of them required) and a trusted one, and matches only
/// equal `mode`s; `vip` takes only a trusted attribute it requires, which
/// `PUT /v1/attributes/{playerId}` writes (with [`WRITER_SCOPE`]).
const RULES: &str = r#"{
  "attributes": {
    "mode": {"type": "string", "values": ["ctf", "koth", "dm"]},
    "level": {"type": "number", "min": 0, "max": 100},
    "maps": {"type": "stringList", "values": ["harbor", "mill", "dunes", "peak", "canal"],
             "maxItems": 3},
    "loadout": {"type": "numberMap", "maxLength": 8, "maxItems": 2, "min": -10, "max": 10},
    "build": {"type": "string", "maxLength": 8, "missing": "refuse"},
    "platform": {"type": "string", "values": ["pc", "console"], "default": "pc"},
    "rank": {"type": "number", "source": "trusted", "min": 0, "max": 5000},
    "tier": {"type": "string", "source": "trusted", "values": ["bronze", "silver", "gold"],
             "missing": "refuse"}},
  "attributeStore": {"writerScope": "matchmaking/attributes.write"},
  "blockLists": {"maxEntries": 4},
  "worlds": [
    {"name": "world1", "teamSize": 4},
    {"name": "world2", "teamSize": 3},
    {"name": "duel", "teamSize": 2,
     "readyCheck": {"acceptSeconds": 600, "declineCooldownSeconds": 0}},
    {"name": "blitz", "teamSize": 2,
     "readyCheck": {"acceptSeconds": 1, "declineCooldownSeconds": 3600}},
    {"name": "geo", "teamSize": 2,
     "regions": {"names": ["eu", "us"], "maxLatencyMs": 50, "widenPerSecond": 0,
                 "maxLatencyCapMs": 100}},
    {"name": "attr", "teamSize": 2,
     "attributes": ["level", "maps", "loadout", "build", "platform", "rank"],
     "rules": [{"name": "sameMode", "type": "equality", "attribute": "mode"}]},
    {"name": "vip", "teamSize": 2, "attributes": ["tier"]}]}"#;
const CONFIGURED: [&str; 7] = ["world1", "world2", "duel", "blitz", "geo", "attr", "vip"];
/// The regions of the world with regions (`geo`).
const GEO_REGIONS: [&str; 2] = ["eu", "us"];
/// The highest latency a client may report (ms).
const MAX_LATENCY_MS: f64 = 10_000.0;
/// The worlds generated cases name.
const PLAYABLE: [&str; 4] = ["world1", "world2", "duel", "attr"];
const MAX_BODY_BYTES: usize = 8 * 1024;
/// The routes that list a match's players with a part each (docs/http-api.md).
const MAX_LIST_BODY_BYTES: usize = 64 * 1024;
const MAX_TICKET_DATA_BYTES: usize = 4096;
const MAX_TICKET_DATA_DEPTH: usize = 16;
/// Largest party, the leader included, by world: `maxPartySize`, which
/// defaults to the team size.
const MAX_PARTY_SIZE: [(&str, usize); 7] = [
    ("world1", 4),
    ("world2", 3),
    ("duel", 2),
    ("blitz", 2),
    ("geo", 2),
    ("attr", 2),
    ("vip", 2),
];
/// `MM_QUEUE_CAPACITY` (its default).
const QUEUE_CAPACITY: u64 = 1_000_000;

fn max_party_size(world: &str) -> usize {
    MAX_PARTY_SIZE
        .iter()
        .find(|(w, _)| *w == world)
        .map_or(0, |(_, n)| *n)
}

/// `data.error` codes of docs/http-api.md with their HTTP status: the
/// table of its "Error codes" section, in its order (checked against the
/// document by `the_error_code_table_is_the_documented_one`).
const ERROR_CODES: [(&str, u16); 39] = [
    ("UNAUTHORIZED", 401),
    ("INVALID_REQUEST", 400),
    ("UNKNOWN_WORLD", 404),
    ("ALREADY_QUEUED", 409),
    ("NOT_QUEUED", 404),
    ("PAYLOAD_TOO_LARGE", 413),
    ("UNSUPPORTED_MEDIA_TYPE", 415),
    ("METHOD_NOT_ALLOWED", 405),
    ("NOT_FOUND", 404),
    ("QUEUE_FULL", 503),
    ("NOT_CONNECTED", 409),
    ("FORBIDDEN", 403),
    ("RATING_REQUIRED", 409),
    ("INVALID_RATING", 400),
    ("INVALID_LATENCIES", 400),
    ("LATENCY_REQUIRED", 409),
    ("MATCH_NOT_FOUND", 404),
    ("INVALID_PARTY", 400),
    ("INVALID_WORLDS", 400),
    ("IN_PARTY", 409),
    ("MEMBER_BUSY", 409),
    ("PARTY_NOT_FOUND", 404),
    ("PROPOSAL_PENDING", 409),
    ("PROPOSAL_NOT_FOUND", 404),
    ("PROPOSAL_EXPIRED", 409),
    ("COOLING_DOWN", 409),
    ("IN_MATCH", 409),
    ("INVALID_ASSIGNMENT", 400),
    ("INVALID_RESULT", 400),
    ("ASSIGNMENT_CONFLICT", 409),
    ("RESULT_CONFLICT", 409),
    ("MATCH_FINISHED", 409),
    ("INVALID_BACKFILL", 400),
    ("BACKFILL_NOT_FOUND", 404),
    ("MATCH_NOT_ASSIGNED", 409),
    ("INVALID_ATTRIBUTES", 400),
    ("ATTRIBUTES_REQUIRED", 409),
    ("ATTRIBUTES_CONFLICT", 409),
    ("REDIS_UNAVAILABLE", 503),
];

const ISSUER: &str = "https://issuer.example.test/hostile";
const AUDIENCE: &str = "game-client";
/// Players with registered WebSocket connections in the harness; the
/// generators pick them often so joins collide, match and push.
const COMMON_PLAYERS: [&str; 6] = ["alice", "bob", "carol", "dave", "erin", "frank"];
/// Players of the party flow (also connected): apart from the others, so
/// the solo queues the other cases fill do not keep them all busy.
const PARTY_PLAYERS: [&str; 6] = ["ann", "ben", "cat", "dan", "eve", "fay"];
/// Players of the ready-check flow (also connected), in `duel`.
const READY_PLAYERS: [&str; 6] = ["gus", "hal", "ivy", "jon", "kim", "lou"];
/// Players of the attribute flow (also connected), in `attr` and `vip`.
const ATTR_PLAYERS: [&str; 6] = ["mia", "noa", "oli", "pia", "quin", "rae"];

fn proptest_cases(default: u32) -> u32 {
    std::env::var("MM_PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse::<u32>().ok())
        .map_or(default, |scale| scale.max(1))
}

/// A runner with a printed (or given) seed, no regression files, bounded shrinking.
fn runner(cases: u32) -> TestRunner {
    let seed = std::env::var("MM_PROPTEST_SEED")
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
        .unwrap_or_else(rand::random);
    eprintln!("proptest: {cases} cases, MM_PROPTEST_SEED={seed}");
    let mut bytes = [0u8; 32];
    for (i, chunk) in bytes.chunks_mut(8).enumerate() {
        chunk.copy_from_slice(&(seed.wrapping_add(i as u64)).to_le_bytes());
    }
    let config = Config {
        cases,
        failure_persistence: None,
        max_shrink_iters: 512,
        max_shrink_time: 60_000,
        ..Config::default()
    };
    TestRunner::new_with_rng(config, TestRng::from_seed(RngAlgorithm::ChaCha, &bytes))
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio runtime")
}

// ---------------------------------------------------------------------------
// Cases (also the corpus file format)
// ---------------------------------------------------------------------------

/// Who the authorizer says the caller is.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
enum Identity {
    /// `requestContext` without `authorizer`.
    NoAuthorizer,
    /// `authorizer: {}` (no `jwt`).
    NoJwt,
    /// A Lambda authorizer's context (not the JWT authorizer's claims).
    LambdaContext(BTreeMap<String, String>),
    /// JWT claims, as strings (API Gateway passes every claim as a string).
    Claims(BTreeMap<String, String>),
}

impl Identity {
    fn sub(&self) -> Option<&str> {
        match self {
            Identity::Claims(c) => c.get("sub").map(String::as_str),
            _ => None,
        }
    }
}

/// A piece of a request body.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
enum Part {
    Text(String),
    /// Raw bytes, hex (for invalid UTF-8).
    Hex(String),
    Repeat {
        text: String,
        times: usize,
    },
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct BodySpec {
    parts: Vec<Part>,
    /// Sent with `isBase64Encoded` (always so when the bytes are not UTF-8,
    /// as API Gateway does for binary bodies).
    #[serde(default)]
    base64: bool,
}

impl BodySpec {
    fn text(s: impl Into<String>) -> Self {
        Self {
            parts: vec![Part::Text(s.into())],
            base64: false,
        }
    }

    fn bytes(&self) -> Vec<u8> {
        let mut out = Vec::new();
        for part in &self.parts {
            match part {
                Part::Text(t) => out.extend_from_slice(t.as_bytes()),
                Part::Hex(h) => out.extend(hex_decode(h)),
                Part::Repeat { text, times } => {
                    for _ in 0..*times {
                        out.extend_from_slice(text.as_bytes());
                    }
                }
            }
        }
        out
    }
}

/// One HTTP API request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct HttpCase {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    note: String,
    function: Function,
    method: String,
    /// The path after the stage, as the client sent it (percent-encoded).
    path: String,
    /// A named stage (`/{stage}` then prefixes `rawPath`); absent: `$default`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    stage: Option<String>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    query: String,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    headers: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    path_parameters: Option<BTreeMap<String, String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    body: Option<BodySpec>,
    identity: Identity,
    /// A late answer: before the call, wait (polling Redis's clock, with a
    /// deadline) until the caller's pending proposal has run out. Only the
    /// corpus sets it, for `blitz` (1 s to accept); nothing sweeps
    /// proposals in the harness, so the answer comes after `acceptBy` and
    /// before any sweep.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    late: bool,
}

/// How a `$connect` token is made (at replay time, so expiry is relative).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
enum TokenSpec {
    /// Sent verbatim.
    Raw(String),
    /// `claims` signed by `signer`. In claims, `"$issuer"` / `"$audience"`
    /// stand for the configured values and `"now+600"` / `"now-300"` for
    /// Unix times relative to the call.
    Signed {
        claims: Map<String, Value>,
        signer: Signer,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
enum Signer {
    /// The issuer's key (published in the JWKS).
    Issuer,
    /// Another RSA key under the issuer's `kid`.
    Forger,
    /// `alg: none`, no signature.
    None,
    /// HS256 keyed with the issuer's public modulus (algorithm confusion).
    Hs256Public,
}

/// One WebSocket `$connect` event.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct WsCase {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    note: String,
    /// `requestContext.connectionId`; absent when `None`.
    connection_id: Option<String>,
    /// The `token` query parameter; absent when `None`.
    token: Option<TokenSpec>,
    /// Other query parameters.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    query: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    headers: BTreeMap<String, String>,
}

fn hex_decode(h: &str) -> Vec<u8> {
    let digits: Vec<u8> = h
        .bytes()
        .filter(u8::is_ascii_hexdigit)
        .map(|b| (b as char).to_digit(16).unwrap_or(0) as u8)
        .collect();
    digits
        .chunks(2)
        .map(|p| p[0] * 16 + p.get(1).unwrap_or(&0))
        .collect()
}

fn hex_encode(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn percent_encode(s: &str) -> String {
    s.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

/// A case for messages: JSON, cut short.
fn shown<T: Serialize>(case: &T) -> String {
    let text = serde_json::to_string(case).unwrap_or_default();
    if text.len() > 3000 {
        let mut cut = 3000;
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        format!("{}… ({} bytes)", &text[..cut], text.len())
    } else {
        text
    }
}

// ---------------------------------------------------------------------------
// Events, as API Gateway sends them
// ---------------------------------------------------------------------------

const HOST: &str = "a1b2c3d4e5.execute-api.us-east-1.amazonaws.com";

/// The payload format 2.0 event API Gateway would send for `case`.
fn http_event(case: &HttpCase) -> Value {
    let stage = case.stage.clone().unwrap_or_else(|| "$default".into());
    let raw_path = match &case.stage {
        Some(s) => format!("/{s}{}", case.path),
        None => case.path.clone(),
    };
    let mut headers = Map::new();
    for (k, v) in &case.headers {
        headers.insert(k.to_ascii_lowercase(), Value::String(v.clone()));
    }
    // API Gateway sets these itself; a client cannot choose them.
    headers.insert("host".into(), json!(HOST));
    headers.insert("x-forwarded-proto".into(), json!("https"));
    headers.insert("x-forwarded-port".into(), json!("443"));
    headers.insert("x-forwarded-for".into(), json!("203.0.113.24"));
    let route_key = format!("{} {}", case.method, case.path);
    let mut context = json!({
        "accountId": "123456789012",
        "apiId": "a1b2c3d4e5",
        "domainName": HOST,
        "domainPrefix": "a1b2c3d4e5",
        "http": {
            "method": case.method,
            "path": raw_path,
            "protocol": "HTTP/1.1",
            "sourceIp": "203.0.113.24",
            "userAgent": "hostile-input-test",
        },
        "requestId": "H7bXkjJ1oAMEJdA=",
        "routeKey": route_key,
        "stage": stage,
        "time": "10/Mar/2025:12:00:01 +0000",
        "timeEpoch": 1741608001000u64,
    });
    match &case.identity {
        Identity::NoAuthorizer => {}
        Identity::NoJwt => context["authorizer"] = json!({}),
        Identity::LambdaContext(c) => context["authorizer"] = json!({ "lambda": c }),
        Identity::Claims(c) => {
            context["authorizer"] =
                json!({ "jwt": { "claims": c, "scopes": ["matchmaking/play"] } })
        }
    }
    let mut event = json!({
        "version": "2.0",
        "routeKey": route_key,
        "rawPath": raw_path,
        "rawQueryString": case.query,
        "headers": headers,
        "requestContext": context,
        "isBase64Encoded": false,
    });
    if !case.query.is_empty() {
        let params: Map<String, Value> = case
            .query
            .split('&')
            .map(|pair| pair.split_once('=').unwrap_or((pair, "")))
            .map(|(k, v)| (k.to_owned(), json!(v)))
            .collect();
        event["queryStringParameters"] = Value::Object(params);
    }
    if let Some(params) = &case.path_parameters {
        event["pathParameters"] = json!(params);
    }
    if let Some(body) = &case.body {
        let bytes = body.bytes();
        match String::from_utf8(bytes) {
            Ok(text) if !body.base64 => event["body"] = json!(text),
            Ok(text) => {
                event["body"] = json!(base64::engine::general_purpose::STANDARD.encode(text));
                event["isBase64Encoded"] = json!(true);
            }
            Err(e) => {
                event["body"] =
                    json!(base64::engine::general_purpose::STANDARD.encode(e.into_bytes()));
                event["isBase64Encoded"] = json!(true);
            }
        }
    }
    event
}

/// Resolves `"$issuer"`, `"$audience"` and `"now±N"` in claims.
fn render_claims(claims: &Map<String, Value>) -> Value {
    let now = now_secs() as i64;
    let mut out = Map::new();
    for (k, v) in claims {
        let value = match v.as_str() {
            Some("$issuer") => json!(ISSUER),
            Some("$audience") => json!(AUDIENCE),
            Some(s) if s.starts_with("now") && s.len() > 3 => {
                let offset: i64 = s[3..].trim_start_matches('+').parse().unwrap_or(0);
                json!(now + offset)
            }
            _ => v.clone(),
        };
        out.insert(k.clone(), value);
    }
    Value::Object(out)
}

// ---------------------------------------------------------------------------
// The harness: real handlers, real Redis, real @connections stand-in
// ---------------------------------------------------------------------------

struct Harness {
    redis: RedisServer,
    connections: ConnectionsServer,
    join: join::App<ApiGatewayPusher>,
    leave: leave::App,
    status: status::App,
    store: MatchStore,
    issuer: TestIssuer,
    forger: TestIssuer,
    verifier: JwtVerifier,
    /// Connection id -> player, registered at start.
    registered: BTreeMap<String, String>,
}

impl Harness {
    async fn start(ns: &str) -> Self {
        Self::start_with(ns, &[]).await
    }

    async fn start_with(ns: &str, overrides: &[(&str, &str)]) -> Self {
        let redis = RedisServer::start();
        let base = [
            ("REDIS_URL", redis.url()),
            ("REDIS_CLUSTER", "false".to_owned()),
            ("MM_NAMESPACE", ns.to_owned()),
            ("MM_RULES", RULES.to_owned()),
        ];
        let settings = Settings::from_lookup(|k| {
            overrides
                .iter()
                .find(|(key, _)| *key == k)
                .map(|(_, v)| (*v).to_owned())
                .or_else(|| {
                    base.iter()
                        .find(|(key, _)| *key == k)
                        .map(|(_, v)| v.clone())
                })
        })
        .expect("valid test settings");
        let store = MatchStore::new(settings).expect("store");
        let connections = ConnectionsServer::start().await;
        let issuer = TestIssuer::new(ISSUER, AUDIENCE);
        connections.serve_jwks(issuer.jwks());
        let forger = issuer.with_key(1, issuer.kid());
        let pusher = ApiGatewayPusher::with_static_credentials(
            &connections.endpoint_with_stage("prod"),
            "us-east-1",
        )
        .expect("pusher");
        let verifier = JwtVerifier::new(AuthSettings {
            jwks_url: connections.jwks_url(),
            issuer: ISSUER.into(),
            audience: AUDIENCE.into(),
        })
        .expect("verifier");
        // What the oracle assumes of the configuration.
        if overrides.is_empty() {
            for world in store.settings().worlds.iter() {
                assert_eq!(
                    world.max_party_size as usize,
                    max_party_size(world.name.as_str()),
                    "{}",
                    world.name
                );
            }
            assert_eq!(store.settings().queue_capacity, QUEUE_CAPACITY);
        }
        let mut registered = BTreeMap::new();
        for (i, p) in COMMON_PLAYERS
            .iter()
            .chain(&PARTY_PLAYERS)
            .chain(&READY_PLAYERS)
            .chain(&ATTR_PLAYERS)
            .enumerate()
        {
            let conn = format!("conn-{i}=");
            store
                .register_connection(&ConnectionId::parse(&conn).unwrap(), &player(p))
                .await
                .expect("register");
            registered.insert(conn, (*p).to_owned());
        }
        Self {
            redis,
            connections,
            join: join::App {
                store: store.clone(),
                pusher,
            },
            leave: leave::App {
                store: store.clone(),
            },
            status: status::App {
                store: store.clone(),
            },
            store,
            issuer,
            forger,
            verifier,
            registered,
        }
    }

    async fn invoke(&self, function: Function, request: Request) -> Response<Body> {
        let result = match function {
            Function::Join => join::handle(&self.join, request).await,
            Function::Leave => leave::handle(&self.leave, request).await,
            Function::Status => status::handle(&self.status, request).await,
        };
        result
            .unwrap_or_else(|e| panic!("function error (API Gateway would answer a bare 500): {e}"))
    }

    fn token(&self, spec: &TokenSpec) -> String {
        match spec {
            TokenSpec::Raw(t) => t.clone(),
            TokenSpec::Signed { claims, signer } => {
                let claims = render_claims(claims);
                match signer {
                    Signer::Issuer => self.issuer.sign(&claims),
                    Signer::Forger => self.forger.sign(&claims),
                    Signer::None => unsigned_token(&claims, self.issuer.kid()),
                    Signer::Hs256Public => {
                        let jwk = self.issuer.jwk();
                        let n = base64::engine::general_purpose::URL_SAFE_NO_PAD
                            .decode(jwk["n"].as_str().unwrap_or_default())
                            .unwrap_or_default();
                        hs256_token(&n, &claims, self.issuer.kid())
                    }
                }
            }
        }
    }
}

fn player(s: &str) -> PlayerId {
    PlayerId::parse(s).expect("valid player id")
}

/// A key's type and contents, canonical (sorted where Redis does not order).
/// Every key of the server with its contents (not only the namespace's
/// keys: a stray key anywhere is a finding).
async fn redis_state(store: &MatchStore) -> BTreeMap<String, KeyContents> {
    walk(store, Scope::Server).await
}

/// The keys whose value differs between two states.
fn changed_keys(
    a: &BTreeMap<String, KeyContents>,
    b: &BTreeMap<String, KeyContents>,
) -> Vec<String> {
    a.keys()
        .chain(b.keys())
        .filter(|k| a.get(*k) != b.get(*k))
        .cloned()
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect()
}

fn assert_only_known_keys(store: &MatchStore, state: &BTreeMap<String, KeyContents>, why: &str) {
    let known: BTreeSet<String> = store
        .keys()
        .all(&store.settings().worlds)
        .into_iter()
        .collect();
    for key in state.keys() {
        assert!(
            known.contains(key),
            "Redis key {key:?} is not one of store.keys().all(): built from input? ({why})"
        );
    }
}

// ---------------------------------------------------------------------------
// The oracle, from docs/http-api.md
// ---------------------------------------------------------------------------

// The routes, their methods and functions: the route table
// (`lambda_common::http::ROUTES`), which a test of lambda-common holds equal
// to template.yaml's and docs/http-api.md's.

const ACCEPT_PATH: &str = Route::Accept.path_template();
const PARTIES_PATH: &str = Route::CreateParty.path_template();
const PARTIES_PREFIX: &str = "/v1/parties/";

/// The route whose template `path` (after the stage) fits, whatever the method.
fn route_of(path: &str) -> Option<Route> {
    ROUTES
        .iter()
        .find(|spec| spec.match_path(path).is_some())
        .map(|spec| spec.route)
}

/// The route a request asks for: of those whose template fits `path`, the
/// one that answers `method`, else the first (which answers 405).
fn route_asked(method: &str, path: &str) -> Option<Route> {
    let fitting = || ROUTES.iter().filter(|spec| spec.match_path(path).is_some());
    fitting()
        .find(|spec| spec.method.as_str() == method)
        .or_else(|| fitting().next())
        .map(|spec| spec.route)
}

/// The segment of `path` where `route`'s template names `name`, as sent.
fn raw_path_param<'p>(route: Route, path: &'p str, name: &str) -> Option<&'p str> {
    route
        .spec()
        .match_path(path)?
        .into_iter()
        .find(|(n, _)| *n == name)
        .map(|(_, value)| value)
}

/// A match id as the scripts make them: `[0-9a-z-]{1,64}`.
fn valid_match_id(s: &str) -> bool {
    (1..=64).contains(&s.len())
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
}

/// A party id as the scripts make them: `<world>.<[0-9a-z-]{1,64}>`.
fn valid_party_id(s: &str) -> bool {
    s.split_once('.')
        .is_some_and(|(world, rest)| valid_world_name(world) && valid_match_id(rest))
}

/// Player ids of a proposal's `players` or `accepted` (cjson writes an empty
/// list as `{}`).
fn proposal_players(list: &Value) -> Vec<String> {
    list.as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(str::to_owned)
        .collect()
}

/// Redis's clock, ms.
async fn redis_now_ms(store: &MatchStore) -> u64 {
    let (secs, micros): (u64, u64) = store.command(&redis::cmd("TIME")).await.expect("TIME");
    secs * 1000 + micros / 1000
}

/// The world part of a party id.
fn party_world(id: &str) -> &str {
    id.split_once('.').map_or("", |(world, _)| world)
}

fn configured(world: &str) -> bool {
    CONFIGURED.contains(&world)
}

fn serves(function: Function, route: Route) -> bool {
    route.function() == function
}

fn route_method(route: Route) -> &'static str {
    route.method_name()
}

/// An assignment body: `None` when it does not parse as one (400
/// INVALID_REQUEST), else whether it is within the documented limits
/// (connection 1..=512 characters, properties at most 4096 bytes as JSON,
/// tokens 1..=512 characters; neither with control characters).
fn assignment_shape(body: &Map<String, Value>) -> Option<bool> {
    let text_ok = |s: &str, max: usize| {
        let n = s.chars().count();
        (1..=max).contains(&n) && !s.chars().any(char::is_control)
    };
    let Some(Value::String(connection)) = body.get("connection") else {
        return None;
    };
    let mut within = text_ok(connection, 512);
    match body.get("properties") {
        None | Some(Value::Null) => {}
        Some(Value::Object(p)) => {
            within &= serde_json::to_string(p).is_ok_and(|t| t.len() <= 4096);
        }
        Some(_) => return None,
    }
    match body.get("players") {
        None | Some(Value::Null) => {}
        Some(Value::Object(players)) => {
            for (player, part) in players {
                if !valid_player_id(player) {
                    return None;
                }
                let Value::Object(part) = part else {
                    return None;
                };
                if part.keys().any(|k| k != "token") {
                    return None;
                }
                match part.get("token") {
                    None | Some(Value::Null) => {}
                    Some(Value::String(t)) => within &= text_ok(t, 512),
                    Some(_) => return None,
                }
            }
        }
        Some(_) => return None,
    }
    Some(within)
}

/// Whether a result body parses as one: `teamRanks` a list and
/// `playerRanks` a map (by valid player ids) of whole numbers 0..=2^32-1,
/// `cancelled` a boolean, each optional (whether it fits the match is
/// decided after the scope check).
/// A `u32` as JSON may write it: an integer, also with a zero fraction
/// (`2.0`, an integer to JSON Schema too).
fn integral_u32(v: &Value) -> bool {
    v.as_u64().is_some_and(|n| n <= u64::from(u32::MAX))
        || v.as_f64().is_some_and(|f| {
            v.is_f64() && f.fract() == 0.0 && (0.0..=f64::from(u32::MAX)).contains(&f)
        })
}

fn report_shape(body: &Map<String, Value>) -> bool {
    let rank = integral_u32;
    let team_ok = match body.get("teamRanks") {
        None | Some(Value::Null) => true,
        Some(Value::Array(ranks)) => ranks.iter().all(rank),
        Some(_) => false,
    };
    let player_ok = match body.get("playerRanks") {
        None | Some(Value::Null) => true,
        Some(Value::Object(ranks)) => ranks.iter().all(|(p, r)| valid_player_id(p) && rank(r)),
        Some(_) => false,
    };
    let cancelled_ok = matches!(body.get("cancelled"), None | Some(Value::Bool(_)));
    team_ok && player_ok && cancelled_ok
}

/// "1–128 characters, no control characters".
fn valid_player_id(s: &str) -> bool {
    let n = s.chars().count();
    (1..=128).contains(&n) && !s.chars().any(char::is_control)
}

/// `[a-z0-9_-]{1,32}`.
fn valid_world_name(s: &str) -> bool {
    (1..=32).contains(&s.len())
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-')
}

/// `application/json`, any case, optionally with a UTF-8 charset; or none.
fn json_content_type(value: Option<&str>) -> bool {
    let Some(value) = value else { return true };
    if !value.is_ascii() {
        return false;
    }
    let lower = value.to_ascii_lowercase();
    let mut parts = lower.split(';').map(str::trim);
    if parts.next() != Some("application/json") {
        return false;
    }
    parts
        .filter(|p| !p.is_empty())
        .all(|p| match p.split_once('=') {
            Some(("charset", cs)) => matches!(cs.trim_matches('"'), "utf-8" | "utf8"),
            _ => true,
        })
}

/// Ticket data: absent or `null` (none), or an object of at most 4 KiB of
/// compact JSON and 16 levels.
/// A request's `latencies` for `world`: `Err` with the documented refusal
/// when they are refused (any in a world without regions; not an object of
/// at most one entry per region, each a region the world names and a number
/// in (0, 10000] ms), `Ok(true)` when valid ones were given, `Ok(false)`
/// when none were.
fn check_latencies(world: &str, latencies: Option<&Value>) -> Result<bool, Expected> {
    let refused = Expected::Refused(400, "INVALID_LATENCIES", field("latencies"));
    let value = match latencies {
        None | Some(Value::Null) => return Ok(false),
        Some(v) => v,
    };
    if world != "geo" {
        return Err(refused);
    }
    let Value::Object(entries) = value else {
        return Err(refused);
    };
    let valid = !entries.is_empty()
        && entries.len() <= GEO_REGIONS.len()
        && entries.iter().all(|(region, ms)| {
            GEO_REGIONS.contains(&region.as_str())
                && ms
                    .as_f64()
                    .is_some_and(|ms| ms > 0.0 && ms <= MAX_LATENCY_MS)
        });
    if valid {
        Ok(true)
    } else {
        Err(refused)
    }
}

/// 409 LATENCY_REQUIRED: a world with regions, no latencies, no default.
fn latency_required(world: &str) -> Expected {
    Expected::Refused(409, "LATENCY_REQUIRED", Some(("worldType", json!(world))))
}

// ---------------------------------------------------------------------------
// Player attributes (docs/http-api.md "Worlds with attributes", docs/rules.md)
// ---------------------------------------------------------------------------

/// `blockLists.maxEntries` of [`RULES`].
const MAX_AVOIDED: usize = 4;
/// `attributeStore.writerScope` of [`RULES`].
const WRITER_SCOPE: &str = "matchmaking/attributes.write";

/// An attribute's declared `type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum AttrKind {
    Str,
    Num,
    List,
    Map,
}

/// One attribute [`RULES`] declares, with what the docs say of the fields
/// it leaves out (`maxLength` 32, `maxItems` 8, `min`..`max` -1e9..1e9).
#[derive(Debug)]
struct AttrDecl {
    name: &'static str,
    kind: AttrKind,
    trusted: bool,
    /// `values` (string, stringList) or `keys` (numberMap).
    allowed: Option<&'static [&'static str]>,
    max_length: usize,
    max_items: usize,
    min: f64,
    max: f64,
    /// `default`, as stored (a string's token).
    default: Option<&'static str>,
    /// `"missing": "refuse"`.
    refuse: bool,
}

impl AttrDecl {
    const fn new(name: &'static str, kind: AttrKind) -> Self {
        Self {
            name,
            kind,
            trusted: false,
            allowed: None,
            max_length: 32,
            max_items: 8,
            min: -1e9,
            max: 1e9,
            default: None,
            refuse: false,
        }
    }
}

/// The declarations of [`RULES`], in its order (the stored encoding's).
const ATTRIBUTES: [AttrDecl; 8] = [
    AttrDecl {
        allowed: Some(&["ctf", "koth", "dm"]),
        ..AttrDecl::new("mode", AttrKind::Str)
    },
    AttrDecl {
        min: 0.0,
        max: 100.0,
        ..AttrDecl::new("level", AttrKind::Num)
    },
    AttrDecl {
        allowed: Some(&["harbor", "mill", "dunes", "peak", "canal"]),
        max_items: 3,
        ..AttrDecl::new("maps", AttrKind::List)
    },
    AttrDecl {
        max_length: 8,
        max_items: 2,
        min: -10.0,
        max: 10.0,
        ..AttrDecl::new("loadout", AttrKind::Map)
    },
    AttrDecl {
        max_length: 8,
        refuse: true,
        ..AttrDecl::new("build", AttrKind::Str)
    },
    AttrDecl {
        allowed: Some(&["pc", "console"]),
        default: Some("pc"),
        ..AttrDecl::new("platform", AttrKind::Str)
    },
    AttrDecl {
        trusted: true,
        min: 0.0,
        max: 5000.0,
        ..AttrDecl::new("rank", AttrKind::Num)
    },
    AttrDecl {
        trusted: true,
        allowed: Some(&["bronze", "silver", "gold"]),
        refuse: true,
        ..AttrDecl::new("tier", AttrKind::Str)
    },
];

/// The equality rules of the worlds: (world, attribute).
const EQUALITY_RULES: [(&str, &str); 1] = [("attr", "mode")];

fn attribute_decl(name: &str) -> Option<&'static AttrDecl> {
    ATTRIBUTES.iter().find(|d| d.name == name)
}

/// A world's attributes: those its rules name and those it lists, in
/// declaration order.
fn world_attributes(world: &str) -> &'static [&'static str] {
    match world {
        "attr" => &[
            "mode", "level", "maps", "loadout", "build", "platform", "rank",
        ],
        "vip" => &["tier"],
        _ => &[],
    }
}

/// `^[A-Za-z0-9._:-]{1,max}$`.
fn attribute_token(s: &str, max: usize) -> bool {
    (1..=max).contains(&s.len())
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b':' | b'-'))
}

/// `value` as a value of `decl` (lists sorted, maps by key), or `None` when
/// the docs refuse it: a string a token (among `values`, if listed); a
/// number finite and within `min`..`max`; a list of 1 to `maxItems` such
/// tokens, none twice; a map of 1 to `maxItems` token keys (among `keys`)
/// to such numbers.
fn attribute_value(decl: &AttrDecl, value: &Value) -> Option<Value> {
    let token = |s: &str| {
        attribute_token(s, decl.max_length) && decl.allowed.is_none_or(|a| a.contains(&s))
    };
    let number = |v: &Value| {
        v.as_f64()
            .filter(|n| n.is_finite() && (decl.min..=decl.max).contains(n))
            .map(|n| n + 0.0)
    };
    let count = |n: usize| (1..=decl.max_items).contains(&n);
    match decl.kind {
        AttrKind::Str => value.as_str().filter(|s| token(s)).map(Value::from),
        AttrKind::Num => number(value).map(Value::from),
        AttrKind::List => {
            let items = value.as_array().filter(|items| count(items.len()))?;
            let mut out: Vec<&str> = items
                .iter()
                .map(|i| i.as_str().filter(|s| token(s)))
                .collect::<Option<_>>()?;
            out.sort_unstable();
            let distinct = out.windows(2).all(|w| w[0] != w[1]);
            distinct.then(|| json!(out))
        }
        AttrKind::Map => {
            let entries = value.as_object().filter(|e| count(e.len()))?;
            let mut out = Map::new();
            for (key, v) in entries {
                if !attribute_token(key, decl.max_length) {
                    return None;
                }
                out.insert(key.clone(), Value::from(number(v)?));
            }
            Some(Value::Object(out))
        }
    }
}

/// The `attribute` an answer names for a name from a request: cut after 40
/// characters (`...` added), so a huge name is not echoed whole.
fn shown_attribute(name: &str) -> String {
    match name.char_indices().nth(40) {
        None => name.to_owned(),
        Some((at, _)) => format!("{}...", &name[..at]),
    }
}

/// 400 INVALID_ATTRIBUTES naming `attribute` (`Value::Null`: naming none).
fn invalid_attributes(attribute: Value) -> Expected {
    Expected::Refused(400, "INVALID_ATTRIBUTES", Some(("attribute", attribute)))
}

/// The client attributes a join, party creation or party join in `world`
/// carries (`value`: the body's `attributes`), by name, defaults filled in;
/// or the documented refusal. `null` is none. A world without attributes
/// refuses any other value, naming no attribute. Otherwise a value that is
/// not an object names the attribute `""`; each entry, in the order the
/// handler reads the object in (the same `serde_json::Map`), must name a
/// client attribute of the world and hold a valid value; then a client
/// attribute left out takes its `default`, and one declared `"missing":
/// "refuse"` without a default is refused.
fn client_attributes(world: &str, value: Option<&Value>) -> Result<Map<String, Value>, Expected> {
    let value = value.filter(|v| !v.is_null());
    let names = world_attributes(world);
    if names.is_empty() {
        return match value {
            None => Ok(Map::new()),
            Some(_) => Err(invalid_attributes(Value::Null)),
        };
    }
    let mut out = Map::new();
    if let Some(value) = value {
        let Value::Object(entries) = value else {
            return Err(invalid_attributes(json!("")));
        };
        for (name, v) in entries {
            let decl = names
                .contains(&name.as_str())
                .then(|| attribute_decl(name))
                .flatten()
                .filter(|d| !d.trusted)
                .ok_or_else(|| invalid_attributes(json!(shown_attribute(name))))?;
            let v = attribute_value(decl, v).ok_or_else(|| invalid_attributes(json!(name)))?;
            out.insert(name.clone(), v);
        }
    }
    for decl in names.iter().filter_map(|n| attribute_decl(n)) {
        if decl.trusted || out.contains_key(decl.name) {
            continue;
        }
        match decl.default {
            Some(default) => {
                out.insert(decl.name.to_owned(), json!(default));
            }
            None if decl.refuse => return Err(invalid_attributes(json!(decl.name))),
            None => {}
        }
    }
    Ok(out)
}

/// The body of `PUT /v1/attributes/{playerId}`'s `attributes`: an object of
/// trusted attributes (of any world) with valid values, or the documented
/// refusal (as for [`client_attributes`]; a client attribute is refused).
fn trusted_attributes(value: &Value) -> Result<Map<String, Value>, Expected> {
    let Value::Object(entries) = value else {
        return Err(invalid_attributes(json!("")));
    };
    let mut out = Map::new();
    for (name, v) in entries {
        let decl = attribute_decl(name)
            .filter(|d| d.trusted)
            .ok_or_else(|| invalid_attributes(json!(shown_attribute(name))))?;
        let v = attribute_value(decl, v).ok_or_else(|| invalid_attributes(json!(name)))?;
        out.insert(name.clone(), v);
    }
    Ok(out)
}

/// A number as the store writes it: Rust's `f64` Display.
fn stored_number(v: &Value) -> String {
    format!("{}", v.as_f64().unwrap_or(f64::NAN) + 0.0)
}

/// Attributes as the store encodes them (contract §3): `name=value` joined
/// by `;` in declaration order; a list's items sorted and joined by `,`, a
/// map's `key:number` entries sorted by key.
fn encode_attributes(values: &Map<String, Value>) -> String {
    ATTRIBUTES
        .iter()
        .filter_map(|d| {
            let v = values.get(d.name)?;
            let text = match d.kind {
                AttrKind::Str => v.as_str().unwrap_or_default().to_owned(),
                AttrKind::Num => stored_number(v),
                AttrKind::List => {
                    let mut items: Vec<&str> = v
                        .as_array()
                        .into_iter()
                        .flatten()
                        .filter_map(Value::as_str)
                        .collect();
                    items.sort_unstable();
                    items.join(",")
                }
                AttrKind::Map => v
                    .as_object()
                    .into_iter()
                    .flatten()
                    .map(|(k, n)| (k.clone(), stored_number(n)))
                    .collect::<BTreeMap<_, _>>()
                    .into_iter()
                    .map(|(k, n)| format!("{k}:{n}"))
                    .collect::<Vec<_>>()
                    .join(","),
            };
            Some(format!("{}={text}", d.name))
        })
        .collect::<Vec<_>>()
        .join(";")
}

/// An encoding read back as JSON (as the answers show attributes).
fn decode_attributes(text: &str) -> Value {
    let number = |s: &str| s.parse::<f64>().map_or(Value::Null, Value::from);
    let mut out = Map::new();
    for (name, value) in text.split(';').filter_map(|p| p.split_once('=')) {
        let v = match attribute_decl(name).map(|d| d.kind) {
            Some(AttrKind::Str) => json!(value),
            Some(AttrKind::Num) => number(value),
            Some(AttrKind::List) => json!(value.split(',').collect::<Vec<_>>()),
            Some(AttrKind::Map) => Value::Object(
                value
                    .split(',')
                    .filter_map(|e| e.rsplit_once(':'))
                    .map(|(k, n)| (k.to_owned(), number(n)))
                    .collect(),
            ),
            None => Value::Null,
        };
        out.insert(name.to_owned(), v);
    }
    Value::Object(out)
}

/// The value of `name` in an encoding.
fn encoded_value<'t>(text: &'t str, name: &str) -> Option<&'t str> {
    text.split(';')
        .filter_map(|p| p.split_once('='))
        .find(|(n, _)| *n == name)
        .map(|(_, v)| v)
}

/// JSON equality with numbers compared by value (`42` and `42.0` alike).
fn same_json(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| same_json(a, b))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| same_json(v, w)))
        }
        _ => a == b,
    }
}

/// Whether the caller's token carries [`WRITER_SCOPE`]: the authorizer's
/// `scopes` (the harness sends `matchmaking/play` only) and the `scope` and
/// `scp` claims as a list of strings in JSON, or as text split at
/// whitespace and commas (brackets around it dropped).
fn has_writer_scope(identity: &Identity) -> bool {
    let Identity::Claims(claims) = identity else {
        return false;
    };
    ["scope", "scp"]
        .into_iter()
        .filter_map(|name| claims.get(name))
        .any(|v| match serde_json::from_str::<Vec<String>>(v) {
            Ok(list) => list.iter().any(|s| s == WRITER_SCOPE),
            Err(_) => v
                .trim_start_matches('[')
                .trim_end_matches(']')
                .split(|c: char| c.is_ascii_whitespace() || c == ',')
                .any(|s| s == WRITER_SCOPE),
        })
}

/// 409 ATTRIBUTES_REQUIRED: a trusted attribute of `world` declared
/// `"missing": "refuse"` (without a default) of which the store holds no
/// value for `p`.
fn attributes_required(b: &Before, world: &str, p: &str) -> Option<Expected> {
    let stored = b.trusted.get(p).map_or("", String::as_str);
    world_attributes(world)
        .iter()
        .filter_map(|n| attribute_decl(n))
        .find(|d| {
            d.trusted && d.refuse && d.default.is_none() && encoded_value(stored, d.name).is_none()
        })
        .map(|d| {
            Expected::RefusedWith(
                409,
                "ATTRIBUTES_REQUIRED",
                vec![("worldType", json!(world)), ("attribute", json!(d.name))],
            )
        })
}

/// 409 ATTRIBUTES_CONFLICT: a party join whose value of an attribute an
/// equality rule of the world compares differs from a joined member's.
fn attributes_conflict(party: &Value, world: &str, mine: &Map<String, Value>) -> Option<Expected> {
    let members: Vec<&Value> = party["members"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|m| m["j"].as_f64() == Some(1.0))
        .collect();
    EQUALITY_RULES
        .iter()
        .filter(|(w, _)| *w == world)
        .find(|(_, attr)| {
            let Some(theirs) = mine.get(*attr).and_then(Value::as_str) else {
                return false;
            };
            members.iter().any(|m| {
                encoded_value(m["a"].as_str().unwrap_or_default(), attr)
                    .is_some_and(|v| v != theirs)
            })
        })
        .map(|(_, attr)| {
            Expected::RefusedWith(
                409,
                "ATTRIBUTES_CONFLICT",
                vec![("worldType", json!(world)), ("attribute", json!(attr))],
            )
        })
}

fn valid_ticket_data(data: Option<&Value>) -> bool {
    match data {
        None | Some(Value::Null) => true,
        Some(d @ Value::Object(_)) => {
            d.to_string().len() <= MAX_TICKET_DATA_BYTES && depth(d) <= MAX_TICKET_DATA_DEPTH
        }
        Some(_) => false,
    }
}

/// A path parameter as the function reads it: the one API Gateway sent, or
/// else the segment of the path where the route's template names it, as sent.
fn path_param(case: &HttpCase, name: &str) -> String {
    case.path_parameters
        .as_ref()
        .and_then(|p| p.get(name).cloned())
        .or_else(|| {
            let route = route_of(&case.path)?;
            raw_path_param(route, &case.path, name).map(str::to_owned)
        })
        .unwrap_or_default()
}

/// The `{partyId}` of a party route's case.
fn party_param(case: &HttpCase) -> String {
    path_param(case, "partyId")
}

/// The body of a case, when it is a JSON object.
fn body_object_of(case: &HttpCase) -> Option<Map<String, Value>> {
    let bytes = case.body.as_ref().map(BodySpec::bytes)?;
    match serde_json::from_slice(&bytes) {
        Ok(Value::Object(m)) => Some(m),
        _ => None,
    }
}

/// The first key found twice in one object of `bytes` (document order, at
/// any depth), read the oracle's own way: the text's tokens, one set of keys
/// per open object. Only asked of bytes that parse as JSON.
fn duplicate_key(bytes: &[u8]) -> Option<String> {
    // Per open container: `Some(keys)` for an object, `None` for an array.
    let mut open: Vec<Option<HashSet<String>>> = Vec::new();
    let mut i = 0;
    // Is the next string of the current object a key?
    let mut expect_key = false;
    while i < bytes.len() {
        match bytes[i] {
            b'{' => {
                open.push(Some(HashSet::new()));
                expect_key = true;
            }
            b'[' => {
                open.push(None);
                expect_key = false;
            }
            b'}' | b']' => {
                open.pop();
                expect_key = false;
            }
            b',' => expect_key = matches!(open.last(), Some(Some(_))),
            b'"' => {
                // The whole string literal, unescaped by serde_json.
                let start = i;
                i += 1;
                while bytes[i] != b'"' {
                    i += if bytes[i] == b'\\' { 2 } else { 1 };
                }
                if expect_key {
                    let key: String = serde_json::from_slice(&bytes[start..=i]).ok()?;
                    if let Some(Some(keys)) = open.last_mut() {
                        if !keys.insert(key.clone()) {
                            return Some(key);
                        }
                    }
                    expect_key = false;
                }
            }
            _ => {}
        }
        i += 1;
    }
    None
}

/// The fields of a hash, as `redis_state` read them.
fn hash_fields(state: &BTreeMap<String, KeyContents>, key: &str) -> BTreeMap<String, String> {
    state
        .get(key)
        .into_iter()
        .flat_map(|c| &c.entries)
        .filter_map(|e| {
            let text = String::from_utf8_lossy(e);
            text.split_once('\0')
                .map(|(f, v)| (f.to_owned(), v.to_owned()))
        })
        .collect()
}

/// The members of a sorted set, as `redis_state` read them.
fn zset_members(state: &BTreeMap<String, KeyContents>, key: &str) -> BTreeSet<String> {
    state
        .get(key)
        .into_iter()
        .flat_map(|c| &c.entries)
        .filter_map(|e| {
            let text = String::from_utf8_lossy(e);
            text.split_once('\0').map(|(m, _)| m.to_owned())
        })
        .collect()
}

/// A party's members as the scripts store them: (player, joined), the
/// leader first.
fn party_members(party: &Value) -> Vec<(String, bool)> {
    party["members"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|m| {
            (
                m["p"].as_str().unwrap_or_default().to_owned(),
                m["j"].as_f64() == Some(1.0),
            )
        })
        .collect()
}

/// A stored party as the routes and my-status show it (`partyId`,
/// `worldType`, `leader`, `state`, `expiresAt`, `members` of `playerId` and
/// `joined`).
fn party_view(party: &Value) -> Value {
    let members: Vec<Value> = party_members(party)
        .into_iter()
        .map(|(p, joined)| json!({ "playerId": p, "joined": joined }))
        .collect();
    json!({
        "partyId": party["id"],
        "worldType": party["world"],
        "leader": party["leader"],
        "state": party["state"],
        "expiresAt": party["expires"].as_f64().map(|ms| ms as u64),
        "members": members,
    })
}

/// What the oracle knows of the store just before a call: whatever an
/// answer depends on (is the caller queued, in a party, which parties exist
/// and who is in them) is read here, so the oracle predicts it exactly.
#[derive(Debug, Default)]
struct Before {
    /// Every party, as the scripts store it (`_tickets.lua`): `id`, `world`,
    /// `leader`, `state`, `expires`, `members` of `{p, j}`.
    parties: BTreeMap<String, Value>,
    /// Player -> party, for every member who has joined a party.
    pointers: BTreeMap<String, String>,
    /// Tickets waiting, by world.
    queue_sizes: BTreeMap<String, u64>,
    /// Players holding a solo ticket (live or not).
    solo_tickets: BTreeSet<String>,
    /// `my-status` of the caller and of the players a party creation names.
    statuses: BTreeMap<String, PlayerStatus>,
    /// Every pending match proposal, as the scripts store it
    /// (`_proposals.lua`): `id`, `world`, `acceptBy`, `cooldown`, `players`,
    /// `accepted`, `tickets` of `{t, p}`.
    proposals: BTreeMap<String, Value>,
    /// Player -> the proposal they are in.
    player_proposal: BTreeMap<String, String>,
    /// Player -> may join again from (ms).
    cooldowns: BTreeMap<String, u64>,
    /// Player -> id of their latest match.
    last_match: BTreeMap<String, String>,
    /// The trusted attribute store: player -> attributes as encoded.
    trusted: BTreeMap<String, String>,
    /// Redis's clock (ms) when this was read: the script of the call runs
    /// at this time or later.
    now_ms: u64,
}

impl Before {
    /// Parties, pointers and queue sizes (reads only).
    async fn load(store: &MatchStore) -> Self {
        let k = store.keys();
        let raw: BTreeMap<String, String> = store
            .command(redis::cmd("HGETALL").arg(k.parties()))
            .await
            .expect("HGETALL parties");
        let parties = raw
            .into_iter()
            .map(|(id, text)| {
                let party = serde_json::from_str(&text)
                    .unwrap_or_else(|e| panic!("party {id} is not JSON ({e}): {text}"));
                (id, party)
            })
            .collect();
        // Every player's state (`shared::PlayerState`), split by kind.
        let states: BTreeMap<String, String> = store
            .command(redis::cmd("HGETALL").arg(k.players()))
            .await
            .expect("HGETALL players");
        let mut pointers = BTreeMap::new();
        let mut solo_tickets = BTreeSet::new();
        let mut cooldowns = Vec::new();
        let mut last_match = BTreeMap::new();
        for (p, v) in &states {
            match shared::PlayerState::parse(v) {
                Some(shared::PlayerState::Party(id)) => {
                    pointers.insert(p.clone(), id.to_owned());
                }
                // A party's ticket is `\u{1}<party id>`; player ids have no
                // control characters.
                Some(shared::PlayerState::Waiting { .. }) if !p.starts_with('\u{1}') => {
                    solo_tickets.insert(p.clone());
                }
                Some(shared::PlayerState::CoolingDown(until)) => {
                    cooldowns.push((p.clone(), until as f64))
                }
                Some(shared::PlayerState::Matched(id)) => {
                    last_match.insert(p.clone(), id.to_owned());
                }
                _ => {}
            }
        }
        let raw: BTreeMap<String, String> = store
            .command(redis::cmd("HGETALL").arg(k.proposals()))
            .await
            .expect("HGETALL proposals");
        let proposals: BTreeMap<String, Value> = raw
            .into_iter()
            .map(|(id, text)| {
                let proposal = serde_json::from_str(&text)
                    .unwrap_or_else(|e| panic!("proposal {id} is not JSON ({e}): {text}"));
                (id, proposal)
            })
            .collect();
        // Every player of a pending proposal, solo or in a party.
        let mut player_proposal = BTreeMap::new();
        for (id, p) in &proposals {
            for player in p["players"].as_array().into_iter().flatten() {
                if let Some(player) = player.as_str() {
                    player_proposal.insert(player.to_owned(), id.clone());
                }
            }
        }
        let trusted: BTreeMap<String, String> = store
            .command(redis::cmd("HGETALL").arg(k.player_attributes()))
            .await
            .expect("HGETALL player-attributes");
        let now_ms = redis_now_ms(store).await;
        let mut queue_sizes = BTreeMap::new();
        for world in CONFIGURED {
            let queue = k.world(&WorldName::parse(world).expect("world")).queue;
            let size: u64 = store
                .command(redis::cmd("ZCARD").arg(queue))
                .await
                .expect("ZCARD");
            queue_sizes.insert(world.to_owned(), size);
        }
        Self {
            parties,
            pointers,
            queue_sizes,
            solo_tickets,
            statuses: BTreeMap::new(),
            proposals,
            player_proposal,
            cooldowns: cooldowns
                .into_iter()
                .map(|(p, ms)| (p, ms as u64))
                .collect(),
            last_match,
            trusted,
            now_ms,
        }
    }

    /// The pending proposal `p` is in (a pointer to one that exists).
    fn pending(&self, p: &str) -> Option<(&str, &Value)> {
        let id = self.player_proposal.get(p)?;
        self.proposals.get(id).map(|v| (id.as_str(), v))
    }

    /// `p` may not join yet after a ready check.
    fn cooling(&self, p: &str) -> bool {
        self.cooldowns
            .get(p)
            .is_some_and(|until| *until > self.now_ms)
    }

    /// Adds the `my-status` of the caller and of the players a party
    /// creation invites (when few enough for the store to be asked).
    async fn read_statuses(&mut self, store: &MatchStore, case: &HttpCase) {
        let mut players: BTreeSet<String> = case
            .identity
            .sub()
            .filter(|s| valid_player_id(s))
            .map(str::to_owned)
            .into_iter()
            .collect();
        if let Some(Value::Array(members)) =
            body_object_of(case).and_then(|b| b.get("members").cloned())
        {
            let named: BTreeSet<String> = members
                .iter()
                .filter_map(Value::as_str)
                .filter(|m| valid_player_id(m))
                .map(str::to_owned)
                .collect();
            // The store is asked only about parties of at most four.
            if named.len() <= 8 {
                players.extend(named);
            }
        }
        for p in players {
            if let std::collections::btree_map::Entry::Vacant(slot) = self.statuses.entry(p) {
                let status = store
                    .player_status(&player(slot.key()))
                    .await
                    .expect("status");
                slot.insert(status);
            }
        }
    }

    /// The world of `p`'s live solo ticket.
    fn solo_world(&self, p: &str) -> Option<&str> {
        match self.statuses.get(p) {
            Some(PlayerStatus::Queued(q)) if q.party.is_none() => Some(q.world_type.as_str()),
            Some(_) => None,
            None => panic!("oracle: the status of {p:?} was not read"),
        }
    }

    /// See [`CALLER_PLACEHOLDERS`].
    fn caller(&self, token: &str) -> String {
        let invitees: Vec<String> = self
            .parties
            .values()
            .flat_map(party_members)
            .filter(|(_, joined)| !joined)
            .map(|(p, _)| p)
            .collect();
        let free = |p: &&String| !self.pointers.contains_key(*p) && !self.solo_tickets.contains(*p);
        let found = match token {
            // One who is free to join, if any.
            "@invitee" => invitees.iter().find(free).or(invitees.first()).cloned(),
            // The same, of a party of a world with attributes.
            "@attr-invitee" => {
                let invitees: Vec<String> = self
                    .parties
                    .values()
                    .filter(|p| matches!(p["world"].as_str(), Some("attr" | "vip")))
                    .flat_map(party_members)
                    .filter(|(_, joined)| !joined)
                    .map(|(p, _)| p)
                    .collect();
                invitees.iter().find(free).or(invitees.first()).cloned()
            }
            // One who has still to answer, if any.
            "@proposed" => self
                .proposals
                .values()
                .flat_map(|p| {
                    let accepted = proposal_players(&p["accepted"]);
                    proposal_players(&p["players"])
                        .into_iter()
                        .map(move |q| (accepted.contains(&q), q))
                })
                .min()
                .map(|(_, q)| q),
            "@partner" => self
                .pointers
                .iter()
                .find(|(_, id)| self.parties.contains_key(*id))
                .map(|(p, _)| p.clone()),
            "@free" => self.free_player(""),
            _ => self.solo_tickets.iter().next().cloned(),
        };
        let fallback = match token {
            "@proposed" => READY_PLAYERS[0],
            "@attr-invitee" => ATTR_PLAYERS[0],
            _ => PARTY_PLAYERS[0],
        };
        found.unwrap_or_else(|| fallback.to_owned())
    }

    /// A party player other than `not` in no party (joined or invited), no
    /// solo ticket, no pending proposal and no cool-down, if any.
    fn free_player(&self, not: &str) -> Option<String> {
        let busy: BTreeSet<String> = self
            .parties
            .values()
            .flat_map(party_members)
            .map(|(p, _)| p)
            .chain(self.pointers.keys().cloned())
            .chain(self.solo_tickets.iter().cloned())
            .chain(
                self.proposals
                    .values()
                    .flat_map(|p| proposal_players(&p["players"])),
            )
            .collect();
        PARTY_PLAYERS
            .iter()
            .find(|p| **p != not && !busy.contains(**p) && !self.cooling(p))
            .map(|p| (*p).to_owned())
    }

    /// The match id a body placeholder stands for (see [`MATCH_PLACEHOLDERS`]).
    fn match_placeholder(&self, token: &str, sub: &str) -> String {
        let found = match token {
            "@proposal" => self.pending(sub).map(|(id, _)| id.to_owned()),
            "@foreign-proposal" => self
                .proposals
                .iter()
                .find(|(_, p)| !proposal_players(&p["players"]).iter().any(|q| q == sub))
                .map(|(id, _)| id.clone()),
            _ => self.last_match.get(sub).cloned(),
        };
        found.unwrap_or_else(|| NO_MATCH.to_owned())
    }

    /// See [`MY_WORLD`].
    fn my_world(&self, p: &str) -> String {
        let solo = match self.statuses.get(p) {
            Some(PlayerStatus::Queued(q)) if q.party.is_none() => Some(q.world_type.to_string()),
            _ => None,
        };
        solo.or_else(|| {
            self.pending(p)
                .and_then(|(_, proposal)| proposal["world"].as_str().map(str::to_owned))
        })
        .or_else(|| {
            self.pointer(p)
                .and_then(|id| self.parties.get(id))
                .and_then(|party| party["world"].as_str().map(str::to_owned))
        })
        .unwrap_or_else(|| "world1".to_owned())
    }

    /// The party `p` has joined.
    fn pointer(&self, p: &str) -> Option<&str> {
        self.pointers.get(p).map(String::as_str)
    }

    /// `Some(joined)` when `p` is a member (joined or invited) of `party`.
    fn membership(party: &Value, p: &str) -> Option<bool> {
        party_members(party)
            .into_iter()
            .find(|(m, _)| m == p)
            .map(|(_, joined)| joined)
    }

    /// The id a placeholder stands for (see [`PLACEHOLDERS`]).
    fn placeholder(&self, token: &str, sub: &str) -> String {
        let find = |want: &dyn Fn(Option<bool>) -> bool| {
            self.parties
                .iter()
                .find(|(_, p)| want(Self::membership(p, sub)))
                .map(|(id, _)| id.clone())
        };
        let mine = self
            .pointer(sub)
            .filter(|id| self.parties.contains_key(*id))
            .map(str::to_owned)
            .or_else(|| find(&|m| m.is_some()));
        let found = match token {
            "@invited" => find(&|m| m == Some(false)).or(mine),
            "@member" => mine,
            "@other" => self
                .parties
                .iter()
                .rev()
                .find(|(_, p)| Self::membership(p, sub).is_none())
                .map(|(id, _)| id.clone()),
            "@swapped" => mine.map(|id| {
                let (world, rest) = id.split_once('.').unwrap_or(("", &id));
                let other = CONFIGURED
                    .iter()
                    .find(|w| **w != world)
                    .unwrap_or(&"world1");
                format!("{other}.{rest}")
            }),
            _ => None,
        };
        found.unwrap_or_else(|| NO_PARTY.to_owned())
    }
}

/// Party ids are made by the scripts, so a generated or corpus case names
/// a party that exists at run time by a placeholder in its path and
/// `partyId` parameter, replaced by [`resolve`] just before the call:
/// `@invited` a party the caller is invited to and has not joined (else as
/// `@member`); `@member` the caller's party (joined, else invited); `@other`
/// a party the caller is no member of; `@swapped` the caller's party under
/// the other configured world. Without such a party: [`NO_PARTY`].
const PLACEHOLDERS: [&str; 4] = ["@invited", "@member", "@other", "@swapped"];
/// A well-formed id of a party that does not exist.
const NO_PARTY: &str = "world1.0-0";
/// In a body (an accept's `matchId`): `@proposal` the caller's pending
/// proposal, `@foreign-proposal` one the caller is not in, `@my-match` the
/// caller's latest match (a decided proposal, say). Without one: [`NO_MATCH`].
const MATCH_PLACEHOLDERS: [&str; 3] = ["@foreign-proposal", "@proposal", "@my-match"];
/// A well-formed id of a match or proposal that does not exist.
const NO_MATCH: &str = "0-0";
/// In a body: the world the caller waits in (alone or with a party), else
/// `world1`; so generated leaves find something to leave.
const MY_WORLD: &str = "@myworld";

/// As the `sub` claim: `@invitee` a player invited to a party who has not
/// joined it, `@partner` a player who has joined one, `@waiting` a player
/// with a solo ticket (else `ann`), `@proposed` a player in a pending
/// proposal, one who has not accepted yet if any (else `gus`),
/// `@attr-invitee` as `@invitee` for a party of `attr` or `vip` (else
/// `mia`), `@free` a party player who is busy with nothing (else `ann`);
/// so generated party joins, cancels, leaves and answers find something to
/// act on.
const CALLER_PLACEHOLDERS: [&str; 6] = [
    "@invitee",
    "@partner",
    "@waiting",
    "@proposed",
    "@attr-invitee",
    "@free",
];

/// In a body: a party player other than the caller who is busy with
/// nothing (else `fay`), so that generated party creations find members
/// they may invite: without it, one run in a few (seed
/// 4116137405858690613) created 4 parties in 460 cases, none joined.
const FREE_MEMBER: &str = "@free-member";

/// `case` with a caller placeholder replaced (the caller comes first: the
/// other placeholders depend on who it is).
fn resolve_caller(case: &HttpCase, before: Option<&Before>) -> HttpCase {
    let mut out = case.clone();
    if let Identity::Claims(claims) = &mut out.identity {
        if let Some(sub) = claims.get_mut("sub") {
            if CALLER_PLACEHOLDERS.contains(&sub.as_str()) {
                let none = Before::default();
                *sub = before.unwrap_or(&none).caller(sub);
            }
        }
    }
    // Members before the statuses are read, which they need.
    let sub = out.identity.sub().unwrap_or_default().to_owned();
    if let Some(body) = out.body.as_mut() {
        for part in &mut body.parts {
            if let Part::Text(text) = part {
                if text.contains(FREE_MEMBER) {
                    let none = Before::default();
                    let member = before
                        .unwrap_or(&none)
                        .free_player(&sub)
                        .unwrap_or_else(|| PARTY_PLAYERS[5].to_owned());
                    *text = text.replace(FREE_MEMBER, &member);
                }
            }
        }
    }
    out
}

/// `case` with its placeholders replaced (as if nothing existed without
/// `before`).
fn resolve(case: &HttpCase, before: Option<&Before>) -> HttpCase {
    let case = &resolve_caller(case, before);
    let sub = case.identity.sub().unwrap_or_default();
    let none = Before::default();
    let before = before.unwrap_or(&none);
    let mut out = case.clone();
    if let Some(body) = out.body.as_mut() {
        for part in &mut body.parts {
            if let Part::Text(text) = part {
                if text.contains(MY_WORLD) {
                    *text = text.replace(MY_WORLD, &before.my_world(sub));
                }
                for token in MATCH_PLACEHOLDERS {
                    if text.contains(token) {
                        *text = text.replace(token, &before.match_placeholder(token, sub));
                    }
                }
            }
        }
    }
    let param = case.path_parameters.as_ref().and_then(|p| p.get("partyId"));
    for token in PLACEHOLDERS {
        if !out.path.contains(token) && !param.is_some_and(|p| p.contains(token)) {
            continue;
        }
        let id = before.placeholder(token, sub);
        out.path = out.path.replace(token, &id);
        if let Some(v) = out
            .path_parameters
            .as_mut()
            .and_then(|p| p.get_mut("partyId"))
        {
            *v = v.replace(token, &id);
        }
    }
    out
}

/// A detail of `data` the oracle knows: key and value (`Value::Null` for
/// "absent").
type Detail = Option<(&'static str, Value)>;

fn field(name: &str) -> Detail {
    Some(("field", json!(name)))
}

#[derive(Debug, Clone, PartialEq)]
enum Expected {
    /// A refusal with this status and `data.error` (and a detail of `data`).
    Refused(u16, &'static str, Detail),
    /// A refusal with this status and `data.error`, and these details.
    RefusedWith(u16, &'static str, Vec<(&'static str, Value)>),
    Ok(Success),
}

/// What a successful answer must have done.
#[derive(Debug, Clone, PartialEq)]
enum Success {
    /// my-status or queue-status: 200, nothing changes.
    Read,
    /// A join: QUEUED or MATCHED.
    Joined,
    /// A leave; `party`: the caller's party, which it cancels.
    Left { party: Option<String> },
    /// 201: a party of `world` led by the caller, `invited` in order.
    Created { world: String, invited: Vec<String> },
    /// A party join by a member who had joined already: 200, nothing changes.
    AlreadyJoined { view: Value },
    /// A party join; others still have to join (`party` as it was).
    JoinedParty { party: Value },
    /// A party join by the last member: QUEUED or MATCHED.
    CompletedParty { party: Value },
    /// A party cancelled by a member (`party` as it was).
    CancelledParty { party: Value },
    /// A leave of the world of the caller's proposal, which cancels it.
    LeftProposal { proposal: Value, id: String },
    /// An accept; others have still to answer (`proposal` as it was).
    Accepted { proposal: Value },
    /// An accept by one who had accepted: 200, nothing changes.
    AlreadyAccepted { accepted: usize, total: usize },
    /// The last accept: the match is final.
    AcceptedLast { proposal: Value },
    /// A decline: the proposal is cancelled.
    Declined { proposal: Value },
    /// An answer after `acceptBy`: `409 PROPOSAL_EXPIRED`, and the proposal
    /// is cancelled as timed out (the one refusal that writes).
    Expired { proposal: Value },
    /// A trusted attribute write: `player`'s entry is now `attributes`.
    StoredAttributes {
        player: String,
        attributes: Map<String, Value>,
    },
}

impl Success {
    fn status(&self) -> u16 {
        match self {
            Success::Created { .. } => 201,
            Success::Expired { .. } => 409,
            _ => 200,
        }
    }
}

/// What the docs say the answer to `case` is, given the store's state just
/// before (`None`: Redis is down, so whatever needs the store is 503).
fn expected(case: &HttpCase, before: Option<&Before>) -> Expected {
    use Expected::Refused;
    let Some(route) = route_asked(&case.method, &case.path).filter(|r| serves(case.function, *r))
    else {
        return Refused(404, "NOT_FOUND", None);
    };
    if case.method != route_method(route) {
        return Refused(405, "METHOD_NOT_ALLOWED", None);
    }
    let Some(sub) = case.identity.sub().filter(|s| valid_player_id(s)) else {
        return Refused(401, "UNAUTHORIZED", None);
    };
    let unavailable = Refused(503, "REDIS_UNAVAILABLE", None);
    let party_not_found = |id: &str| Refused(404, "PARTY_NOT_FOUND", Some(("partyId", json!(id))));
    match route {
        Route::MyStatus => return before.map_or(unavailable, |_| Expected::Ok(Success::Read)),
        Route::QueueStatus => {
            let world = path_param(case, "worldType");
            return if !valid_world_name(&world) {
                Refused(400, "INVALID_REQUEST", field("worldType"))
            } else if !configured(&world) {
                Refused(404, "UNKNOWN_WORLD", Some(("worldType", json!(world))))
            } else {
                before.map_or(unavailable, |_| Expected::Ok(Success::Read))
            };
        }
        Route::Match => {
            let id = path_param(case, "matchId");
            // No generated id names one of the caller's matches.
            return if !valid_match_id(&id) {
                Refused(400, "INVALID_REQUEST", field("matchId"))
            } else {
                before.map_or(unavailable, |_| {
                    Refused(404, "MATCH_NOT_FOUND", Some(("matchId", json!(id))))
                })
            };
        }
        Route::Rating | Route::Attributes | Route::Avoid => {
            let id = path_param(case, "playerId");
            if !valid_player_id(&id) {
                return Refused(400, "INVALID_REQUEST", field("playerId"));
            }
        }
        Route::CancelParty => {
            // The body is not read at all.
            let id = party_param(case);
            if !valid_party_id(&id) {
                return Refused(400, "INVALID_REQUEST", field("partyId"));
            }
            let Some(b) = before else { return unavailable };
            return match b.parties.get(&id) {
                Some(party)
                    if party["world"] == party_world(&id)
                        && Before::membership(party, sub).is_some() =>
                {
                    Expected::Ok(Success::CancelledParty {
                        party: party.clone(),
                    })
                }
                _ => party_not_found(&id),
            };
        }
        Route::JoinParty => {
            if !valid_party_id(&party_param(case)) {
                return Refused(400, "INVALID_REQUEST", field("partyId"));
            }
        }
        Route::Assign | Route::Report | Route::Backfill => {
            if !valid_match_id(&path_param(case, "matchId")) {
                return Refused(400, "INVALID_REQUEST", field("matchId"));
            }
        }
        // No body is read; the harness configures no server scope.
        Route::BackfillKeepalive | Route::CancelBackfill => {
            return if valid_match_id(&path_param(case, "matchId")) {
                Refused(403, "FORBIDDEN", None)
            } else {
                Refused(400, "INVALID_REQUEST", field("matchId"))
            };
        }
        Route::Join | Route::Leave | Route::CreateParty | Route::Accept => {}
        // The harness configures no admin scopes, and the operator's routes
        // check theirs before reading anything else of the request.
        Route::AdminTickets
        | Route::AdminMatches
        | Route::AdminPlayer
        | Route::AdminAudit
        | Route::AdminRemoveTicket
        | Route::AdminCancelProposal
        | Route::AdminFinishMatch
        | Route::AdminVoidMatch => return Refused(403, "FORBIDDEN", None),
    }
    let content_type = case
        .headers
        .iter()
        .filter(|(k, _)| k.eq_ignore_ascii_case("content-type"))
        .map(|(_, v)| v.as_str())
        .next_back();
    if !json_content_type(content_type) {
        return Refused(415, "UNSUPPORTED_MEDIA_TYPE", None);
    }
    let bytes = case.body.as_ref().map(BodySpec::bytes).unwrap_or_default();
    let invalid = Refused(400, "INVALID_REQUEST", None);
    let body = if route == Route::JoinParty && bytes.iter().all(u8::is_ascii_whitespace) {
        // The join's body is optional: none (or only whitespace, of any
        // length) is `{}`; the content type is still checked.
        Map::new()
    } else {
        let limit = if matches!(route, Route::Assign | Route::Backfill | Route::Avoid) {
            MAX_LIST_BODY_BYTES
        } else {
            MAX_BODY_BYTES
        };
        if bytes.len() > limit {
            return Refused(413, "PAYLOAD_TOO_LARGE", None);
        }
        let Ok(Value::Object(body)) = serde_json::from_slice::<Value>(&bytes) else {
            return invalid;
        };
        // Well-formed JSON with a key twice in one object, at any depth
        // (what `Value` hid by keeping the last one).
        if let Some(key) = duplicate_key(&bytes) {
            return Refused(400, "INVALID_REQUEST", Some(("duplicateKey", json!(key))));
        }
        body
    };
    let allowed: &[&str] = match route {
        Route::Join => &["worldType", "data", "latencies", "attributes"],
        Route::Rating => &["rating", "worldType"],
        Route::Attributes => &["attributes"],
        Route::Avoid => &["players"],
        Route::CreateParty => &["worldType", "members", "data", "latencies", "attributes"],
        Route::JoinParty => &["data", "latencies", "attributes"],
        Route::Accept => &["matchId", "accept"],
        Route::Assign => &["connection", "properties", "players"],
        Route::Report => &["teamRanks", "playerRanks", "cancelled"],
        Route::Backfill => &["teams", "fills"],
        _ => &["worldType"],
    };
    if body.keys().any(|k| !allowed.contains(&k.as_str())) {
        return invalid;
    }
    if route == Route::Assign {
        // The shape, then the limits; the harness configures no server
        // scope, so every well-formed assignment is forbidden.
        return match assignment_shape(&body) {
            None => invalid,
            Some(false) => Refused(400, "INVALID_ASSIGNMENT", field("assignment")),
            Some(true) => Refused(403, "FORBIDDEN", None),
        };
    }
    if route == Route::Backfill {
        // A list of lists of player ids, required.
        let shaped = body
            .get("teams")
            .and_then(Value::as_array)
            .is_some_and(|teams| {
                teams.iter().all(|t| {
                    t.as_array().is_some_and(|players| {
                        players
                            .iter()
                            .all(|p| p.as_str().is_some_and(valid_player_id))
                    })
                })
            })
            && match body.get("fills") {
                None | Some(Value::Null) => true,
                Some(n) => integral_u32(n),
            };
        return if shaped {
            Refused(403, "FORBIDDEN", None)
        } else {
            invalid
        };
    }
    if route == Route::Report {
        return if report_shape(&body) {
            Refused(403, "FORBIDDEN", None)
        } else {
            invalid
        };
    }
    if route == Route::Accept {
        // Both fields are required, of their types; then the id's form.
        let (Some(Value::String(id)), Some(Value::Bool(accept))) =
            (body.get("matchId"), body.get("accept"))
        else {
            return invalid;
        };
        if !valid_match_id(id) {
            return Refused(400, "INVALID_REQUEST", field("matchId"));
        }
        let Some(b) = before else { return unavailable };
        return expected_answer(b, id, sub, *accept);
    }
    if route == Route::Rating {
        // A number is required; the world is optional. The harness configures
        // no writer scope, so every well-formed write is forbidden.
        if !body.get("rating").is_some_and(Value::is_number) {
            return invalid;
        }
        return match body.get("worldType") {
            None | Some(Value::Null) => Refused(403, "FORBIDDEN", None),
            Some(Value::String(w)) if !valid_world_name(w) => {
                Refused(400, "INVALID_REQUEST", field("worldType"))
            }
            Some(Value::String(w)) if !configured(w) => Refused(404, "UNKNOWN_WORLD", None),
            Some(Value::String(_)) => Refused(403, "FORBIDDEN", None),
            Some(_) => invalid,
        };
    }
    if route == Route::Attributes {
        // `attributes` is required (`null` is a value, and not an object);
        // the values are checked before the scope, and only then the store
        // is written.
        let Some(value) = body.get("attributes") else {
            return invalid;
        };
        let attributes = match trusted_attributes(value) {
            Ok(attributes) => attributes,
            Err(refused) => return refused,
        };
        if !has_writer_scope(&case.identity) {
            return Refused(403, "FORBIDDEN", Some(("required", json!(WRITER_SCOPE))));
        }
        let Some(_) = before else { return unavailable };
        return Expected::Ok(Success::StoredAttributes {
            player: path_param(case, "playerId"),
            attributes,
        });
    }
    if route == Route::Avoid {
        // `players` is required: player ids, distinct and at most
        // `blockLists.maxEntries` (4) once the player's own is left out; the
        // harness configures no server scope, so every well-formed write is
        // forbidden.
        let Some(value) = body.get("players") else {
            return invalid;
        };
        let own = path_param(case, "playerId");
        let listed = value.as_array().and_then(|list| {
            list.iter()
                .map(|p| p.as_str().filter(|p| valid_player_id(p)))
                .collect::<Option<Vec<&str>>>()
        });
        let good = listed.is_some_and(|ids| {
            let others: Vec<&str> = ids.into_iter().filter(|p| *p != own).collect();
            let distinct: BTreeSet<&str> = others.iter().copied().collect();
            others.len() <= MAX_AVOIDED && distinct.len() == others.len()
        });
        return if good {
            Refused(403, "FORBIDDEN", None)
        } else {
            Refused(400, "INVALID_REQUEST", field("players"))
        };
    }
    if route == Route::JoinParty {
        let id = party_param(case);
        // A party of a world that is not configured is not found.
        if !configured(party_world(&id)) {
            return party_not_found(&id);
        }
        if !valid_ticket_data(body.get("data")) {
            return Refused(400, "INVALID_REQUEST", field("data"));
        }
        let measured = match check_latencies(party_world(&id), body.get("latencies")) {
            Ok(measured) => measured,
            Err(refused) => return refused,
        };
        let mine = match client_attributes(party_world(&id), body.get("attributes")) {
            Ok(mine) => mine,
            Err(refused) => return refused,
        };
        let Some(b) = before else { return unavailable };
        return expected_party_join(b, &id, sub, measured, &mine);
    }
    let Some(Value::String(world)) = body.get("worldType") else {
        return invalid;
    };
    // The shape first (the body is parsed whole), then each field in turn.
    let members: Vec<&str> = match (route, body.get("members")) {
        (Route::CreateParty, Some(Value::Array(list))) => {
            match list.iter().map(Value::as_str).collect::<Option<Vec<_>>>() {
                Some(names) => names,
                None => return invalid,
            }
        }
        (Route::CreateParty, _) => return invalid,
        _ => Vec::new(),
    };
    if !valid_world_name(world) {
        return Refused(400, "INVALID_REQUEST", field("worldType"));
    }
    if !configured(world) {
        return Refused(404, "UNKNOWN_WORLD", Some(("worldType", json!(world))));
    }
    match route {
        Route::Join => {
            if !valid_ticket_data(body.get("data")) {
                return Refused(400, "INVALID_REQUEST", field("data"));
            }
            let measured = match check_latencies(world, body.get("latencies")) {
                Ok(measured) => measured,
                Err(refused) => return refused,
            };
            if let Err(refused) = client_attributes(world, body.get("attributes")) {
                return refused;
            }
            let Some(b) = before else { return unavailable };
            if let Some(w) = b.solo_world(sub) {
                return Refused(409, "ALREADY_QUEUED", Some(("worldType", json!(w))));
            }
            // A player in a proposal answers it first.
            if let Some((id, _)) = b.pending(sub) {
                return Refused(409, "PROPOSAL_PENDING", Some(("matchId", json!(id))));
            }
            // A party member waits with the party.
            if let Some(id) = b.pointer(sub) {
                return Refused(409, "IN_PARTY", Some(("partyId", json!(id))));
            }
            if b.cooling(sub) {
                return Refused(409, "COOLING_DOWN", None);
            }
            if b.queue_sizes.get(world.as_str()).copied().unwrap_or(0) >= QUEUE_CAPACITY {
                return Refused(503, "QUEUE_FULL", Some(("worldType", json!(world))));
            }
            if world == "geo" && !measured {
                return latency_required(world);
            }
            if let Some(refused) = attributes_required(b, world, sub) {
                return refused;
            }
            Expected::Ok(Success::Joined)
        }
        Route::CreateParty => {
            if !members.iter().all(|m| valid_player_id(m)) {
                return Refused(400, "INVALID_REQUEST", field("members"));
            }
            if !valid_ticket_data(body.get("data")) {
                return Refused(400, "INVALID_REQUEST", field("data"));
            }
            let measured = match check_latencies(world, body.get("latencies")) {
                Ok(measured) => measured,
                Err(refused) => return refused,
            };
            if let Err(refused) = client_attributes(world, body.get("attributes")) {
                return refused;
            }
            // The caller leads; listing them too, or anyone twice, counts once.
            let mut invited: Vec<String> = Vec::new();
            for m in members {
                if m != sub && !invited.iter().any(|i| i == m) {
                    invited.push(m.to_owned());
                }
            }
            if invited.is_empty() {
                return Refused(400, "INVALID_PARTY", field("members"));
            }
            if invited.len() + 1 > max_party_size(world) {
                return Refused(
                    400,
                    "INVALID_PARTY",
                    Some(("size", json!(invited.len() + 1))),
                );
            }
            let Some(b) = before else { return unavailable };
            if let Some(w) = b.solo_world(sub) {
                return Refused(409, "ALREADY_QUEUED", Some(("worldType", json!(w))));
            }
            // One admission for every route (lua/_admission.lua): a player
            // in a proposal answers it first, as on a join.
            if let Some((id, _)) = b.pending(sub) {
                return Refused(409, "PROPOSAL_PENDING", Some(("matchId", json!(id))));
            }
            if let Some(id) = b.pointer(sub) {
                return Refused(409, "IN_PARTY", Some(("partyId", json!(id))));
            }
            if b.cooling(sub) {
                return Refused(409, "COOLING_DOWN", None);
            }
            // The leader's admission (lua/_admission.lua) ends with the
            // attributes; the invited players are looked at after it.
            if let Some(refused) = attributes_required(b, world, sub) {
                return refused;
            }
            if let Some(p) = invited.iter().find(|p| {
                b.solo_world(p).is_some()
                    || b.pointer(p).is_some()
                    || b.player_proposal.contains_key(*p)
                    || b.cooling(p)
            }) {
                return Refused(409, "MEMBER_BUSY", Some(("playerId", json!(p))));
            }
            if world == "geo" && !measured {
                return latency_required(world);
            }
            Expected::Ok(Success::Created {
                world: world.clone(),
                invited,
            })
        }
        _ => {
            // Leave: the caller's solo ticket, else the party the caller has
            // joined (assembling or queued), which the leave cancels.
            let Some(b) = before else { return unavailable };
            // A player in a proposal of that world leaving cancels it.
            if let Some((id, proposal)) = b.pending(sub) {
                return if proposal["world"] == world.as_str() {
                    Expected::Ok(Success::LeftProposal {
                        proposal: proposal.clone(),
                        id: id.to_owned(),
                    })
                } else {
                    Refused(
                        404,
                        "NOT_QUEUED",
                        Some(("queuedIn", proposal["world"].clone())),
                    )
                };
            }
            let (waits_in, party) = match b.solo_world(sub) {
                Some(w) => (Some(w.to_owned()), None),
                None => match b
                    .pointer(sub)
                    .and_then(|id| b.parties.get(id).map(|p| (id, p)))
                {
                    Some((id, p)) => (p["world"].as_str().map(str::to_owned), Some(id.to_owned())),
                    None => (None, None),
                },
            };
            if waits_in.as_deref() == Some(world.as_str()) {
                Expected::Ok(Success::Left { party })
            } else {
                Refused(404, "NOT_QUEUED", Some(("queuedIn", json!(waits_in))))
            }
        }
    }
}

/// The store's part of an answer to a proposal (the request is valid).
fn expected_answer(b: &Before, id: &str, sub: &str, accept: bool) -> Expected {
    let not_found = Expected::Refused(404, "PROPOSAL_NOT_FOUND", Some(("matchId", json!(id))));
    let Some(proposal) = b.proposals.get(id) else {
        return not_found;
    };
    let players = proposal_players(&proposal["players"]);
    if !players.iter().any(|p| p == sub) {
        return not_found;
    }
    let proposal = proposal.clone();
    let accept_by = proposal["acceptBy"].as_u64().unwrap_or(0);
    if accept_by <= b.now_ms {
        return Expected::Ok(Success::Expired { proposal });
    }
    let accepted = proposal_players(&proposal["accepted"]);
    Expected::Ok(if !accept {
        Success::Declined { proposal }
    } else if accepted.iter().any(|p| p == sub) {
        Success::AlreadyAccepted {
            accepted: accepted.len(),
            total: players.len(),
        }
    } else if accepted.len() + 1 == players.len() {
        Success::AcceptedLast { proposal }
    } else {
        Success::Accepted { proposal }
    })
}

/// The store's part of a party join (the request itself is valid).
fn expected_party_join(
    b: &Before,
    id: &str,
    sub: &str,
    measured: bool,
    mine: &Map<String, Value>,
) -> Expected {
    use Expected::Refused;
    let not_found = Refused(404, "PARTY_NOT_FOUND", Some(("partyId", json!(id))));
    let Some(party) = b.parties.get(id).filter(|p| p["world"] == party_world(id)) else {
        return not_found;
    };
    match Before::membership(party, sub) {
        None => return not_found,
        Some(true) => {
            return Expected::Ok(Success::AlreadyJoined {
                view: party_view(party),
            })
        }
        Some(false) => {}
    }
    if let Some(w) = b.solo_world(sub) {
        return Refused(409, "ALREADY_QUEUED", Some(("worldType", json!(w))));
    }
    // One admission for every route (lua/_admission.lua), in its order.
    if let Some((pending, _)) = b.pending(sub) {
        return Refused(409, "PROPOSAL_PENDING", Some(("matchId", json!(pending))));
    }
    if let Some(other) = b.pointer(sub) {
        return Refused(409, "IN_PARTY", Some(("partyId", json!(other))));
    }
    if b.cooling(sub) {
        return Refused(409, "COOLING_DOWN", None);
    }
    if party_world(id) == "geo" && !measured {
        return latency_required(party_world(id));
    }
    let members = party_members(party);
    let complete = members.iter().filter(|(_, j)| *j).count() + 1 == members.len();
    let world = party_world(id);
    if complete && b.queue_sizes.get(world).copied().unwrap_or(0) >= QUEUE_CAPACITY {
        return Refused(503, "QUEUE_FULL", Some(("worldType", json!(world))));
    }
    if let Some(refused) = attributes_required(b, world, sub) {
        return refused;
    }
    if let Some(refused) = attributes_conflict(party, world, mine) {
        return refused;
    }
    let party = party.clone();
    Expected::Ok(if complete {
        Success::CompletedParty { party }
    } else {
        Success::JoinedParty { party }
    })
}

/// Checks the documented envelope; returns the parsed body.
fn check_envelope(resp: &Response<Body>, context: &str) -> Value {
    let status = resp.status().as_u16();
    assert!(
        matches!(
            status,
            200 | 201 | 400 | 401 | 403 | 404 | 405 | 409 | 413 | 415 | 503
        ),
        "undocumented status {status}: {context}"
    );
    assert_eq!(
        resp.headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok()),
        Some("application/json"),
        "{context}"
    );
    let body: Value = serde_json::from_slice(resp.body().as_ref())
        .unwrap_or_else(|e| panic!("answer is not JSON ({e}): {context}"));
    let obj = body.as_object().expect("envelope is an object");
    let keys: BTreeSet<&str> = obj.keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        BTreeSet::from(["data", "msg", "resultCode"]),
        "{body}: {context}"
    );
    assert_eq!(body["resultCode"], status.to_string(), "{body}: {context}");
    assert!(
        body["msg"].as_str().is_some_and(|m| !m.is_empty()),
        "{body}: {context}"
    );
    assert!(body["data"].is_object(), "{body}: {context}");
    if status >= 300 {
        let code = body["data"]["error"].as_str().unwrap_or_default();
        let documented = ERROR_CODES.iter().find(|(c, _)| *c == code);
        assert_eq!(
            documented.map(|(_, s)| *s),
            Some(status),
            "data.error {code:?} is not a documented code for {status}: {body}: {context}"
        );
        if status == 405 {
            assert!(resp.headers().contains_key("allow"), "405 without Allow");
        }
    } else {
        assert!(body["data"].get("error").is_none(), "{body}: {context}");
    }
    body
}

/// What a case came to, for the bookkeeping of the runs.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
struct Outcome {
    /// The route the function served, if any.
    route: Option<Route>,
    status: u16,
    /// `data.error`, empty for a success.
    code: String,
}

/// A call and what it did, for the checks of a success.
struct Observed<'a> {
    context: &'a str,
    caller: PlayerId,
    data: &'a Value,
    before: &'a Before,
    keys_before: &'a BTreeMap<String, KeyContents>,
    keys_after: &'a BTreeMap<String, KeyContents>,
    /// Connection ids pushed to during the call.
    pushes: Vec<String>,
}

impl Observed<'_> {
    fn assert_unchanged(&self) {
        assert!(
            self.keys_after == self.keys_before,
            "a refused request or one that changes nothing changed Redis (keys {:?}): {}",
            changed_keys(self.keys_before, self.keys_after),
            self.context
        );
        assert!(
            self.pushes.is_empty(),
            "a refused request or one that changes nothing pushed: {}",
            self.context
        );
    }

    /// Only keys of `allowed` changed.
    fn assert_changed_within(&self, allowed: &[String]) {
        for key in changed_keys(self.keys_before, self.keys_after) {
            assert!(
                allowed.contains(&key),
                "{key} changed (allowed: {allowed:?}): {}",
                self.context
            );
        }
    }
}

/// For a [`HttpCase::late`] case: waits until the caller's pending proposal
/// (if any) has run out by Redis's clock.
async fn wait_until_late(store: &MatchStore, case: &HttpCase) {
    let before = Before::load(store).await;
    let case = resolve_caller(case, Some(&before));
    let sub = case.identity.sub().unwrap_or_default();
    let Some(accept_by) = before
        .pending(sub)
        .and_then(|(_, p)| p["acceptBy"].as_u64())
    else {
        return;
    };
    eventually(
        "the proposal to run out by Redis's clock",
        Duration::from_secs(20),
        || async { (redis_now_ms(store).await > accept_by).then_some(()) },
    )
    .await;
}

/// Drives one HTTP case through its function and checks every property.
async fn check_http(h: &Harness, original: &HttpCase) -> Outcome {
    if original.late {
        wait_until_late(&h.store, original).await;
    }
    let mut before = Before::load(&h.store).await;
    let case = resolve_caller(original, Some(&before));
    before.read_statuses(&h.store, &case).await;
    let case = resolve(&case, Some(&before));
    let context = if case == *original {
        shown(&case)
    } else {
        format!("{} (resolved from {})", shown(&case), shown(original))
    };
    let event = http_event(&case);
    let request = lambda_http::request::from_str(&event.to_string())
        .unwrap_or_else(|e| panic!("not a valid HTTP API event ({e}): {context}"));
    let keys_before = redis_state(&h.store).await;
    let pushes_before = h.connections.posts().len();

    let resp = h.invoke(case.function, request).await;

    let status = resp.status().as_u16();
    let body = check_envelope(&resp, &context);
    let code = body["data"]["error"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let keys_after = redis_state(&h.store).await;
    assert_only_known_keys(&h.store, &keys_after, &context);
    let pushes: Vec<String> = h
        .connections
        .posts()
        .split_off(pushes_before)
        .into_iter()
        .map(|p| p.connection_id)
        .collect();
    let outcome = Outcome {
        route: route_asked(&case.method, &case.path).filter(|r| serves(case.function, *r)),
        status,
        code: code.clone(),
    };

    // The script ran somewhere between `before.now_ms` and now: a proposal
    // whose time ran out in between may have been answered either way, so
    // the oracle takes the clock the answer says, if it is in that range.
    if code == "PROPOSAL_EXPIRED" {
        let id = body_object_of(&case)
            .and_then(|b| b.get("matchId").cloned())
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_default();
        let accept_by = before
            .proposals
            .get(&id)
            .and_then(|p| p["acceptBy"].as_u64());
        let now = redis_now_ms(&h.store).await;
        if let Some(t) = accept_by.filter(|t| *t > before.now_ms && *t <= now) {
            before.now_ms = t;
        }
    }
    let want = expected(&case, Some(&before));
    if code == "INVALID_ATTRIBUTES" {
        assert_eq!(body["data"]["field"], "attributes", "{body}: {context}");
    }
    let success = match want {
        Expected::Refused(s, c, detail) => {
            assert_eq!((status, code.as_str()), (s, c), "{body}: {context}");
            if let Some((key, value)) = detail {
                assert_eq!(body["data"][key], value, "data.{key}: {body}: {context}");
            }
            None
        }
        Expected::RefusedWith(s, c, details) => {
            assert_eq!((status, code.as_str()), (s, c), "{body}: {context}");
            for (key, value) in details {
                assert_eq!(body["data"][key], value, "data.{key}: {body}: {context}");
            }
            None
        }
        Expected::Ok(success) => {
            assert_eq!(status, success.status(), "{body}: {context}");
            if let Success::Expired { proposal } = &success {
                assert_eq!(code, "PROPOSAL_EXPIRED", "{body}: {context}");
                assert_eq!(body["data"]["matchId"], proposal["id"], "{body}: {context}");
            }
            Some(success)
        }
    };
    let observed = Observed {
        context: &context,
        // Only successes use it, and they need a valid caller.
        caller: case
            .identity
            .sub()
            .and_then(|s| PlayerId::parse(s).ok())
            .unwrap_or_else(|| player("-")),
        data: &body["data"],
        before: &before,
        keys_before: &keys_before,
        keys_after: &keys_after,
        pushes,
    };
    match success {
        None => observed.assert_unchanged(),
        Some(success) => check_success(h, &success, &observed).await,
    }
    outcome
}

/// A success acted for exactly the verified caller, as documented.
async fn check_success(h: &Harness, success: &Success, o: &Observed<'_>) {
    let ctx = o.context;
    let data = o.data;
    let caller = &o.caller;
    let k = h.store.keys();
    let now = h.store.player_status(caller).await.expect("status");
    let after = Before::load(&h.store).await;
    // Who may be pushed to: nobody but for a join (the caller) or a match
    // (its participants).
    let mut may_hear: BTreeSet<String> = BTreeSet::new();
    let mut party_keys: Vec<String> = vec![
        k.parties(),
        k.party_expiry(),
        k.players(),
        k.notes(),
        k.counters(),
    ];
    party_keys.push(k.outbox());
    match success {
        Success::Read => o.assert_unchanged(),
        Success::StoredAttributes { player, attributes } => {
            // What is stored now, what was before (`{}` for nothing), and
            // only that entry of the trusted store changed.
            let previous = o.before.trusted.get(player).map_or("", String::as_str);
            let encoded = encode_attributes(attributes);
            assert_eq!(data["playerId"], json!(player), "{data}: {ctx}");
            assert!(
                same_json(&data["attributes"], &Value::Object(attributes.clone())),
                "stored {attributes:?}: {data}: {ctx}"
            );
            assert!(
                same_json(&data["previousAttributes"], &decode_attributes(previous)),
                "previously {previous:?}: {data}: {ctx}"
            );
            assert_eq!(
                after.trusted.get(player),
                (!encoded.is_empty()).then_some(&encoded),
                "{ctx}"
            );
            o.assert_changed_within(&[k.player_attributes()]);
        }
        Success::Joined => {
            may_hear.insert(caller.to_string());
            match data["status"].as_str() {
                Some("QUEUED") => assert!(
                    matches!(&now, PlayerStatus::Queued(q) if data["worldType"] == q.world_type.as_str() && q.party.is_none()),
                    "joined, but the caller is {now:?}: {ctx}"
                ),
                Some("MATCHED") => {
                    check_match(h, &data["match"], &[caller.to_string()], &mut may_hear, ctx).await
                }
                Some("PROPOSED") => check_proposed(&now, &data["proposal"], caller, ctx),
                other => panic!("unexpected join answer {other:?}: {data}: {ctx}"),
            }
        }
        Success::Left { party } => {
            assert!(
                !matches!(&now, PlayerStatus::Queued(_) | PlayerStatus::Party(_)),
                "left, but still waiting: {now:?}: {ctx}"
            );
            if let Some(id) = party {
                assert_gone(&after, o.keys_after, id, ctx);
                if o.before.parties[id]["state"] == "ASSEMBLING" {
                    assert_eq!(data["previousPosition"], 0, "{data}: {ctx}");
                }
            }
        }
        Success::LeftProposal { proposal, id } => {
            assert!(
                !matches!(
                    &now,
                    PlayerStatus::Queued(_) | PlayerStatus::Party(_) | PlayerStatus::Proposed(_)
                ),
                "left, but still waiting: {now:?}: {ctx}"
            );
            assert_eq!(data["previousPosition"], 0, "{data}: {ctx}");
            assert_eq!(data["worldType"], proposal["world"], "{data}: {ctx}");
            assert_cancelled(&after, id, &[caller.to_string()], proposal, ctx);
        }
        Success::AlreadyAccepted { accepted, total } => {
            o.assert_unchanged();
            assert_eq!(
                (&data["status"], &data["accepted"], &data["total"]),
                (&json!("ACCEPTED"), &json!(accepted), &json!(total)),
                "{data}: {ctx}"
            );
        }
        Success::Accepted { proposal } => {
            let id = proposal["id"].as_str().unwrap_or_default();
            let mut accepted = proposal_players(&proposal["accepted"]);
            accepted.push(caller.to_string());
            assert_eq!(
                (
                    &data["status"],
                    &data["matchId"],
                    &data["accepted"],
                    &data["total"]
                ),
                (
                    &json!("ACCEPTED"),
                    &json!(id),
                    &json!(accepted.len()),
                    &json!(proposal_players(&proposal["players"]).len())
                ),
                "{data}: {ctx}"
            );
            // Only the caller's answer was added.
            let stored = &after.proposals[id];
            assert_eq!(proposal_players(&stored["accepted"]), accepted, "{ctx}");
            assert_eq!(stored["players"], proposal["players"], "{ctx}");
            assert_eq!(stored["acceptBy"], proposal["acceptBy"], "{ctx}");
            assert!(
                matches!(&now, PlayerStatus::Proposed(v) if v.match_id.as_str() == id && v.accepted.iter().any(|p| p == caller)),
                "accepted, but my-status says {now:?}: {ctx}"
            );
            // The proposal, and a note (MATCH_ACCEPT_PROGRESS) for the outbox.
            let mut allowed: Vec<String> = vec![k.proposals(), k.proposal_expiry(), k.players()];
            allowed.extend([k.notes(), k.counters(), k.outbox()]);
            o.assert_changed_within(&allowed);
        }
        Success::AcceptedLast { proposal } => {
            let id = proposal["id"].as_str().unwrap_or_default();
            assert_eq!(data["status"], "MATCHED", "{data}: {ctx}");
            assert_eq!(data["match"]["matchId"], id, "{data}: {ctx}");
            let players = proposal_players(&proposal["players"]);
            assert_eq!(
                proposal_players(&data["match"]["participants"]),
                players,
                "{ctx}"
            );
            check_match(h, &data["match"], &players, &mut may_hear, ctx).await;
            assert!(
                !after.proposals.contains_key(id),
                "{id} still pending: {ctx}"
            );
            assert!(
                !after.player_proposal.values().any(|p| p == id),
                "players still point to {id}: {ctx}"
            );
        }
        Success::Declined { proposal } => {
            let id = proposal["id"].as_str().unwrap_or_default();
            let mine = proposal["tickets"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|t| {
                    proposal_players(&t["p"])
                        .iter()
                        .any(|p| p == caller.as_str())
                })
                .count();
            let tickets = proposal["tickets"].as_array().map_or(0, Vec::len);
            assert_eq!(
                (
                    &data["status"],
                    &data["matchId"],
                    &data["worldType"],
                    &data["requeuedTickets"]
                ),
                (
                    &json!("CANCELLED"),
                    &json!(id),
                    &proposal["world"],
                    &json!(tickets - mine)
                ),
                "{data}: {ctx}"
            );
            assert_cancelled(&after, id, &[caller.to_string()], proposal, ctx);
            // The others may be proposed again at once, and hear of it.
            may_hear.extend(proposal_players(&proposal["players"]));
        }
        Success::Expired { proposal } => {
            let id = proposal["id"].as_str().unwrap_or_default();
            let accepted = proposal_players(&proposal["accepted"]);
            let missed: Vec<String> = proposal_players(&proposal["players"])
                .into_iter()
                .filter(|p| !accepted.contains(p))
                .collect();
            assert_cancelled(&after, id, &missed, proposal, ctx);
            may_hear.extend(proposal_players(&proposal["players"]));
        }
        Success::Created { world, invited } => {
            assert_eq!(data["status"], "PARTY", "{data}: {ctx}");
            let view = &data["party"];
            let id = view["partyId"].as_str().unwrap_or_default();
            assert!(
                valid_party_id(id) && party_world(id) == world,
                "party id {id:?}: {ctx}"
            );
            let mut members = vec![json!({ "playerId": caller.as_str(), "joined": true })];
            members.extend(
                invited
                    .iter()
                    .map(|p| json!({ "playerId": p, "joined": false })),
            );
            assert_eq!(
                (&view["leader"], &view["worldType"], &view["state"]),
                (&json!(caller.as_str()), &json!(world), &json!("ASSEMBLING")),
                "{view}: {ctx}"
            );
            assert_eq!(view["members"], json!(members), "{view}: {ctx}");
            assert!(view["expiresAt"].is_u64(), "{view}: {ctx}");
            assert_eq!(view.as_object().map(Map::len), Some(6), "{view}: {ctx}");
            // It is the caller's party now, and no one else's.
            assert_status_party(&now, view, ctx);
            let mut pointers = o.before.pointers.clone();
            pointers.insert(caller.to_string(), id.to_owned());
            assert_eq!(after.pointers, pointers, "{ctx}");
            assert_eq!(
                after.parties.keys().collect::<BTreeSet<_>>(),
                o.before.parties.keys().chain([&id.to_owned()]).collect(),
                "{ctx}"
            );
            assert_eq!(party_view(&after.parties[id]), *view, "{ctx}");
            for p in invited {
                let theirs = h.store.player_status(&player(p)).await.expect("status");
                assert_eq!(
                    Some(&theirs),
                    o.before.statuses.get(p),
                    "invited {p}: {ctx}"
                );
            }
            o.assert_changed_within(&party_keys);
        }
        Success::AlreadyJoined { view } => {
            o.assert_unchanged();
            assert_eq!(data["status"], "PARTY", "{data}: {ctx}");
            assert_eq!(data["party"], *view, "{ctx}");
        }
        Success::JoinedParty { party } => {
            let id = party["id"].as_str().unwrap_or_default();
            assert_eq!(data["status"], "PARTY", "{data}: {ctx}");
            let mut view = party_view(party);
            for m in view["members"].as_array_mut().into_iter().flatten() {
                if m["playerId"] == caller.as_str() {
                    m["joined"] = json!(true);
                }
            }
            assert_eq!(data["party"], view, "{ctx}");
            assert_status_party(&now, &view, ctx);
            let mut pointers = o.before.pointers.clone();
            pointers.insert(caller.to_string(), id.to_owned());
            assert_eq!(after.pointers, pointers, "{ctx}");
            assert_eq!(party_view(&after.parties[id]), view, "{ctx}");
            o.assert_changed_within(&party_keys);
        }
        Success::CompletedParty { party } => {
            let id = party["id"].as_str().unwrap_or_default();
            let world = party["world"].as_str().unwrap_or_default();
            let members: Vec<String> = party_members(party).into_iter().map(|(p, _)| p).collect();
            match data["status"].as_str() {
                Some("QUEUED") => {
                    assert_eq!(data["worldType"], world, "{data}: {ctx}");
                    let view = &data["party"];
                    assert_eq!(view["partyId"], id, "{data}: {ctx}");
                    assert_eq!(view["state"], "QUEUED", "{data}: {ctx}");
                    let joined: Vec<Value> = members
                        .iter()
                        .map(|p| json!({ "playerId": p, "joined": true }))
                        .collect();
                    assert_eq!(view["members"], json!(joined), "{data}: {ctx}");
                    // Every member waits with the party.
                    for p in &members {
                        let theirs = h.store.player_status(&player(p)).await.expect("status");
                        assert!(
                            matches!(&theirs, PlayerStatus::Queued(q) if q.party.as_ref().is_some_and(|v| v.party_id == id)),
                            "member {p} is {theirs:?}: {ctx}"
                        );
                    }
                    let mut pointers = o.before.pointers.clone();
                    pointers.insert(caller.to_string(), id.to_owned());
                    assert_eq!(after.pointers, pointers, "{ctx}");
                }
                Some("MATCHED") => {
                    check_match(h, &data["match"], &members, &mut may_hear, ctx).await;
                    assert_gone(&after, o.keys_after, id, ctx);
                }
                Some("PROPOSED") => {
                    check_proposed(&now, &data["proposal"], caller, ctx);
                    let participants = proposal_players(&data["proposal"]["participants"]);
                    for p in &members {
                        assert!(participants.contains(p), "{p} not proposed: {data}: {ctx}");
                    }
                    assert_eq!(after.parties[id]["state"], "PROPOSED", "{ctx}");
                }
                other => panic!("unexpected party join answer {other:?}: {data}: {ctx}"),
            }
        }
        Success::CancelledParty { party } => {
            let id = party["id"].as_str().unwrap_or_default();
            assert_eq!(data["cancelled"], true, "{data}: {ctx}");
            assert_eq!(data["party"], party_view(party), "{data}: {ctx}");
            assert_gone(&after, o.keys_after, id, ctx);
            let still_in = match &now {
                PlayerStatus::Party(v) => v.party_id == id,
                PlayerStatus::Queued(q) => q.party.as_ref().is_some_and(|v| v.party_id == id),
                _ => false,
            };
            assert!(!still_in, "cancelled, but my-status says {now:?}: {ctx}");
            let mut others = o.before.parties.clone();
            others.remove(id);
            assert_eq!(after.parties, others, "another party changed: {ctx}");
        }
    }
    for conn in &o.pushes {
        let owner = h.registered.get(conn);
        assert!(
            owner.is_some_and(|o| may_hear.contains(o)),
            "a push to {conn} ({owner:?}) after {caller}'s request: {ctx}"
        );
    }
}

/// A `PROPOSED` answer: a proposal with the caller in it, which my-status
/// shows.
fn check_proposed(now: &PlayerStatus, proposal: &Value, caller: &PlayerId, ctx: &str) {
    let id = proposal["matchId"].as_str().unwrap_or_default();
    assert!(
        proposal_players(&proposal["participants"])
            .iter()
            .any(|p| p == caller.as_str()),
        "a proposal without {caller}: {proposal}: {ctx}"
    );
    assert!(
        matches!(now, PlayerStatus::Proposed(v) if v.match_id.as_str() == id),
        "proposed {id}, but my-status says {now:?}: {ctx}"
    );
}

/// Proposal `id` was cancelled: gone, nobody points to it, `out` (those who
/// declined, left or missed it) have no ticket and cool down as long as the
/// proposal says.
fn assert_cancelled(after: &Before, id: &str, out: &[String], proposal: &Value, ctx: &str) {
    assert!(
        !after.proposals.contains_key(id),
        "{id} still pending: {ctx}"
    );
    assert!(
        !after.player_proposal.values().any(|p| p == id),
        "players still point to {id}: {ctx}"
    );
    let cooldown = proposal["cooldown"].as_u64().unwrap_or(0);
    for p in out {
        assert!(
            !after.solo_tickets.contains(p),
            "{p} still has a ticket: {ctx}"
        );
        if cooldown > 0 {
            assert!(after.cooling(p), "{p} does not cool down: {ctx}");
        }
    }
}

/// `PlayerStatus::Party` showing exactly `view`.
fn assert_status_party(status: &PlayerStatus, view: &Value, ctx: &str) {
    match status {
        PlayerStatus::Party(v) => assert_eq!(
            serde_json::to_value(v).expect("party view"),
            *view,
            "my-status: {ctx}"
        ),
        other => panic!("in party {view}, but my-status says {other:?}: {ctx}"),
    }
}

/// Party `id` is gone: no record, no member points to it, no ticket waits
/// (a deadline entry stays until it is due, when the sweep drops it).
fn assert_gone(after: &Before, keys_after: &BTreeMap<String, KeyContents>, id: &str, ctx: &str) {
    assert!(
        !after.parties.contains_key(id),
        "party {id} still there: {ctx}"
    );
    assert!(
        !after.pointers.values().any(|p| p == id),
        "members still point to {id}: {ctx}"
    );
    let ticket = format!("\u{1}{id}");
    for key in keys_after.keys().filter(|k| !k.contains(":deadlines:")) {
        assert!(
            !zset_members(keys_after, key).contains(&ticket)
                && !hash_fields(keys_after, key).contains_key(&ticket),
            "the ticket of {id} is still in {key}: {ctx}"
        );
    }
}

/// A match answer: it includes `must_include`, every participant can read
/// it, and the participants may be pushed to.
async fn check_match(
    h: &Harness,
    record: &Value,
    must_include: &[String],
    may_hear: &mut BTreeSet<String>,
    ctx: &str,
) {
    let participants: Vec<&str> = record["participants"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    for p in must_include {
        assert!(
            participants.contains(&p.as_str()),
            "a match without {p}: {record}: {ctx}"
        );
    }
    for p in participants {
        may_hear.insert(p.to_owned());
        // Every participant can read the match.
        let theirs = h.store.player_status(&player(p)).await;
        assert!(
            matches!(&theirs, Ok(PlayerStatus::Matched(m)) if record["matchId"] == m.match_id.as_str()),
            "participant {p:?} cannot read the match: {theirs:?}: {ctx}"
        );
    }
}

/// The `$connect` proxy event for `case`, as API Gateway sends it.
fn ws_event(h: &Harness, case: &WsCase) -> ApiGatewayWebsocketProxyRequest {
    let context = shown(case);
    let mut event: Value =
        serde_json::from_str(include_str!("../../../events/ws-connect.json")).expect("event");
    let mut query: Map<String, Value> = case
        .query
        .iter()
        .map(|(k, v)| (k.clone(), json!(v)))
        .collect();
    let token = case.token.as_ref().map(|t| h.token(t));
    if let Some(t) = &token {
        query.insert("token".into(), json!(t));
    }
    if query.is_empty() {
        event["queryStringParameters"] = Value::Null;
        event["multiValueQueryStringParameters"] = Value::Null;
    } else {
        event["multiValueQueryStringParameters"] =
            Value::Object(query.iter().map(|(k, v)| (k.clone(), json!([v]))).collect());
        event["queryStringParameters"] = Value::Object(query);
    }
    for (k, v) in &case.headers {
        event["headers"][k] = json!(v);
    }
    match &case.connection_id {
        Some(id) => event["requestContext"]["connectionId"] = json!(id),
        None => {
            if let Some(ctx) = event["requestContext"].as_object_mut() {
                ctx.remove("connectionId");
            }
        }
    }
    serde_json::from_value(event)
        .unwrap_or_else(|e| panic!("not a $connect event ({e}): {context}"))
}

/// `$connect`: 200 exactly for a valid token and connection id, 400 for a bad
/// connection id, 401 otherwise; registration exactly on 200.
async fn check_ws(h: &Harness, case: &WsCase) -> (u16, String) {
    let context = shown(case);
    let request = ws_event(h, case);
    let valid_id = case.connection_id.as_deref().is_some_and(|id| {
        !id.is_empty()
            && id.len() <= 128
            && id
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'=' | b'_' | b'-'))
    });
    let verified_sub = case.token.as_ref().and_then(token_subject);
    let want = if !valid_id {
        400
    } else if verified_sub.is_some() {
        200
    } else {
        401
    };

    let before = redis_state(&h.store).await;
    let resp = ws_connect::handle_connect(
        &h.store,
        &h.verifier,
        &h.join.pusher,
        LambdaEvent::new(request, Context::default()),
    )
    .await
    .unwrap_or_else(|e| panic!("$connect function error: {e}: {context}"));
    let status = u16::try_from(resp.status_code).unwrap_or(0);
    let after = redis_state(&h.store).await;
    assert_only_known_keys(&h.store, &after, &context);
    assert_eq!(status, want, "{context}");
    if status == 200 {
        let sub = verified_sub.expect("valid");
        let conn = case.connection_id.clone().expect("valid id");
        let owner: Option<String> = h
            .store
            .command(redis::cmd("HGET").arg(h.store.keys().conns()).arg(&conn))
            .await
            .expect("HGET");
        // The registry keeps "<registered_ms> <player>".
        let owner = owner
            .as_deref()
            .and_then(|v| v.split_once(' '))
            .map(|(_, p)| p);
        assert_eq!(owner, Some(sub.as_str()), "{context}");
        let conns = h.store.connections_of(&player(&sub)).await.expect("conns");
        assert!(conns.iter().any(|c| *c == conn), "{conns:?}: {context}");
    } else {
        assert!(
            after == before,
            "a refused $connect changed Redis: {context}"
        );
    }
    (status, String::new())
}

/// The subject a token verifies to, by the documented rules (RS256 by the
/// issuer's key, `iss`, `aud` or else `client_id`, `exp` in the future with
/// 30 s leeway, `nbf` not ahead, `sub` a valid player id); `None` if invalid.
fn token_subject(spec: &TokenSpec) -> Option<String> {
    let TokenSpec::Signed { claims, signer } = spec else {
        return None;
    };
    if *signer != Signer::Issuer {
        return None;
    }
    let claims = render_claims(claims);
    let now = now_secs() as i64;
    let audience_ok = match claims.get("aud") {
        Some(Value::String(a)) => a == AUDIENCE,
        Some(Value::Array(list)) => list.contains(&json!(AUDIENCE)),
        None => claims.get("client_id") == Some(&json!(AUDIENCE)),
        Some(_) => false,
    };
    let exp_ok = claims
        .get("exp")
        .and_then(Value::as_i64)
        .is_some_and(|exp| exp > now - 30);
    let nbf_ok = match claims.get("nbf") {
        None => true,
        Some(v) => v.as_i64().is_some_and(|nbf| nbf <= now + 30),
    };
    let iss_ok = claims.get("iss") == Some(&json!(ISSUER));
    let sub = claims.get("sub").and_then(Value::as_str)?;
    (audience_ok && exp_ok && nbf_ok && iss_ok && valid_player_id(sub)).then(|| sub.to_owned())
}

// ---------------------------------------------------------------------------
// Generators
// ---------------------------------------------------------------------------

/// Strings that have broken key builders, parsers and logs elsewhere.
fn nasty_fixed() -> Vec<String> {
    vec![
        String::new(),
        "{".into(),
        "}".into(),
        ":".into(),
        "*".into(),
        "|".into(),
        " ".into(),
        "\n".into(),
        "\u{0}".into(),
        "world1 ".into(),
        " world1".into(),
        "World1".into(),
        "world1\n".into(),
        "world1\u{0}".into(),
        "world1*".into(),
        "world1:deadlines".into(),
        "{mm}".into(),
        "mm:{mm}:tickets".into(),
        "queue:world1".into(),
        "../world1".into(),
        "%7Bmm%7D".into(),
        "a".repeat(32),
        "a".repeat(33),
        "x".repeat(10 * 1024),
        "é".repeat(128),
        "é".repeat(129),
        "😀".repeat(128),
        "\u{202e}dlrow".into(),
        "\u{feff}world1".into(),
        "ｗｏｒｌｄ１".into(),
        "null".into(),
        "__proto__".into(),
        "M|1-1|alice".into(),
        "alice bob".into(),
        "alice\tbob".into(),
        "\u{7f}".into(),
        "\u{85}".into(),
        "\u{2028}".into(),
    ]
}

fn nasty_string() -> BoxedStrategy<String> {
    prop_oneof![
        3 => prop::sample::select(nasty_fixed()),
        2 => "[{}:*| \n\t\r\u{0}\u{7f}a-zA-Z0-9é한😀\u{202e}/%._-]{0,40}",
        1 => any::<String>(),
    ]
    .boxed()
}

fn sub_strategy() -> BoxedStrategy<String> {
    prop_oneof![
        3 => prop::sample::select(COMMON_PLAYERS.to_vec()).prop_map(str::to_owned),
        2 => nasty_string(),
    ]
    .boxed()
}

fn world_strategy() -> BoxedStrategy<String> {
    prop_oneof![
        4 => prop::sample::select(PLAYABLE.to_vec()).prop_map(str::to_owned),
        1 => "[a-z0-9_-]{1,32}",
        3 => nasty_string(),
    ]
    .boxed()
}

fn json_leaf() -> BoxedStrategy<Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        (-1e300f64..1e300f64).prop_map(Value::from),
        nasty_string().prop_map(Value::from),
    ]
    .boxed()
}

fn json_value() -> BoxedStrategy<Value> {
    json_leaf()
        .prop_recursive(4, 32, 6, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
                prop::collection::btree_map(nasty_string(), inner, 0..6)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
        .boxed()
}

/// Nesting depth of a JSON value (a scalar is 0, `{}` and `[]` are 1).
fn depth(value: &Value) -> usize {
    match value {
        Value::Array(items) => 1 + items.iter().map(depth).max().unwrap_or(0),
        Value::Object(fields) => 1 + fields.values().map(depth).max().unwrap_or(0),
        _ => 0,
    }
}

/// `depth` nested objects/arrays around a leaf.
fn nested(depth: usize, leaf: Value) -> Value {
    (0..depth).fold(leaf, |v, i| {
        if i % 2 == 0 {
            json!([v])
        } else {
            json!({ "k": v })
        }
    })
}

/// Ticket data: mostly valid objects, also wrong types, large and nested.
/// Nesting up to 100 levels: past 16 the join must refuse it.
fn data_strategy() -> BoxedStrategy<Value> {
    prop_oneof![
        4 => prop::collection::btree_map("[a-z]{1,8}", json_value(), 0..5)
            .prop_map(|m| Value::Object(m.into_iter().collect())),
        1 => Just(Value::Null),
        2 => json_value(),
        1 => (3900usize..4200).prop_map(|n| json!({ "pad": "x".repeat(n) })),
        1 => (1usize..100).prop_map(|d| json!({ "deep": nested(d, json!(1)) })),
    ]
    .boxed()
}

/// Field names a hostile body might use, including ones naming a player.
fn extra_field() -> BoxedStrategy<String> {
    prop_oneof![
        3 => prop::sample::select(vec![
            "player", "memberId", "sub", "userId", "playerId", "worldtype", "WorldType",
            "world_type", "data ", "", "__proto__",
        ])
        .prop_map(str::to_owned),
        1 => "[a-zA-Z]{1,10}",
    ]
    .boxed()
}

/// The `members` of a party creation: mostly players of the harness (with
/// the caller and duplicates now and then), also hostile ids, too many,
/// and wrong types.
fn members_strategy() -> BoxedStrategy<Value> {
    prop_oneof![
        6 => prop::collection::vec(prop::sample::select(COMMON_PLAYERS.to_vec()), 0..5)
            .prop_map(|v| json!(v)),
        2 => prop::collection::vec(sub_strategy(), 0..5).prop_map(|v| json!(v)),
        1 => (1usize..40).prop_map(|n| json!((0..n).map(|i| format!("p{i}")).collect::<Vec<_>>())),
        1 => prop::collection::vec(json_value(), 0..4).prop_map(Value::Array),
        1 => json_value(),
    ]
    .boxed()
}

/// An accept's `matchId`: placeholders (see [`MATCH_PLACEHOLDERS`]),
/// well-formed ids of nothing, near misses, wrong types.
fn match_id_value() -> BoxedStrategy<Value> {
    prop_oneof![
        4 => prop::sample::select(MATCH_PLACEHOLDERS.to_vec()).prop_map(Value::from),
        2 => "[0-9a-z-]{1,65}".prop_map(Value::from),
        1 => prop::sample::select(vec!["", "0-0 ", "A-1", "1_2", "0-0\u{0}", "{mm}", "M|1-1", "world1.1-a"])
            .prop_map(Value::from),
        1 => nasty_string().prop_map(Value::from),
        1 => json_value(),
    ]
    .boxed()
}

fn body_object() -> BoxedStrategy<Value> {
    (
        prop::option::weighted(
            0.9,
            prop_oneof![8 => world_strategy().prop_map(Value::from), 1 => json_value()],
        ),
        prop::option::weighted(0.4, data_strategy()),
        prop::option::weighted(
            0.2,
            prop_oneof![4 => any::<f64>().prop_map(Value::from), 1 => json_value()],
        ),
        prop::option::weighted(0.3, members_strategy()),
        prop_oneof![
            4 => Just(Vec::new()),
            1 => prop::collection::vec((extra_field(), json_value()), 1..3),
        ],
        prop::option::weighted(0.25, match_id_value()),
        prop::option::weighted(
            0.25,
            prop_oneof![4 => any::<bool>().prop_map(Value::from), 1 => json_value()],
        ),
        prop::option::weighted(0.2, attributes_strategy()),
    )
        .prop_map(
            |(world, data, rating, members, extra, match_id, accept, attributes)| {
                let mut m = Map::new();
                if let Some(a) = attributes {
                    m.insert("attributes".into(), a);
                }
                if let Some(id) = match_id {
                    m.insert("matchId".into(), id);
                }
                if let Some(a) = accept {
                    m.insert("accept".into(), a);
                }
                if let Some(w) = world {
                    m.insert("worldType".into(), w);
                }
                if let Some(d) = data {
                    m.insert("data".into(), d);
                }
                if let Some(r) = rating {
                    m.insert("rating".into(), r);
                }
                if let Some(list) = members {
                    m.insert("members".into(), list);
                }
                for (k, v) in extra {
                    m.insert(k, v);
                }
                Value::Object(m)
            },
        )
        .boxed()
}

/// A body with a key twice in one object: one of a generated body's own
/// members repeated in front of it, or a region named twice in `latencies`
/// or a key twice deep inside ticket `data` (the first one decides nothing:
/// the body is refused whatever the values).
fn duplicate_key_body() -> BoxedStrategy<String> {
    let repeated_member = (body_object(), any::<prop::sample::Index>()).prop_map(|(v, pick)| {
        let text = v.to_string();
        match &v {
            Value::Object(m) if !m.is_empty() => {
                let (key, value) = m.iter().nth(pick.index(m.len())).expect("in range");
                format!("{{{}:{value},{}", Value::from(key.as_str()), &text[1..])
            }
            _ => r#"{"worldType":"world1","worldType":"world1"}"#.to_owned(),
        }
    });
    let nested = (
        prop::sample::select(vec!["world1", "geo", "duel"]),
        json_leaf(),
        json_leaf(),
    )
        .prop_map(|(world, a, b)| {
            format!(r#"{{"worldType":"{world}","latencies":{{"eu":{a},"us":1,"eu":{b}}}}}"#)
        });
    let deep = (json_leaf(), 1..20usize).prop_map(|(leaf, depth)| {
        format!(
            r#"{{"worldType":"world1","data":{}{{"k":{leaf},"k":{leaf}}}{}}}"#,
            r#"{"a":"#.repeat(depth),
            "}".repeat(depth)
        )
    });
    prop_oneof![repeated_member, nested, deep].boxed()
}

fn body_strategy() -> BoxedStrategy<BodySpec> {
    let parts = prop_oneof![
        // A key twice in one object (400 INVALID_REQUEST naming it).
        1 => duplicate_key_body().prop_map(|t| vec![Part::Text(t)]),
        8 => body_object().prop_map(|v| vec![Part::Text(v.to_string())]),
        2 => json_value().prop_map(|v| vec![Part::Text(v.to_string())]),
        1 => prop::collection::vec(any::<u8>(), 0..64).prop_map(|b| vec![Part::Hex(hex_encode(&b))]),
        1 => any::<String>().prop_map(|s| vec![Part::Text(s)]),
        1 => prop::sample::select(vec!["", " ", "\n\t ", "null", "[]", "{}", "\"world1\"", "{\"worldType\":\"world1\"", "\u{feff}{\"worldType\":\"world1\"}", "{\"data\":{}}", "{\"data\":null}", "{\"worldType\":\"world1\",\"members\":[\"bob\"]}", "{\"worldType\":\"world2\",\"members\":[\"alice\",\"carol\"],\"data\":{\"k\":1}}"])
            .prop_map(|s| vec![Part::Text(s.to_owned())]),
        // Deep nesting, below and above the size limit (10 000 levels).
        1 => prop::sample::select(vec![64usize, 129, 1000, 4000, 10_000]).prop_map(|n| vec![
            Part::Repeat { text: "[".into(), times: n },
            Part::Repeat { text: "]".into(), times: n },
        ]),
        // Ticket data nested around our limit (16) and the parser's (128).
        1 => prop::sample::select(vec![15usize, 16, 17, 64, 100, 124, 125, 126, 127, 128, 3000]).prop_map(|n| vec![
            Part::Text("{\"worldType\":\"world1\",\"data\":".into()),
            Part::Repeat { text: "{\"a\":".into(), times: n },
            Part::Text("1".into()),
            Part::Repeat { text: "}".into(), times: n + 1 },
        ]),
        // Around 8 KiB and up to ~1 MiB.
        1 => prop::sample::select(vec![8100usize, 8150, 8160, 8170, 8200, 9000, 1 << 20]).prop_map(|n| vec![
            Part::Text("{\"worldType\":\"world1\",\"x\":\"".into()),
            Part::Repeat { text: "a".into(), times: n },
            Part::Text("\"}".into()),
        ]),
        // Invalid UTF-8 inside an otherwise valid body.
        1 => Just(vec![
            Part::Text("{\"worldType\":\"world1\",\"data\":{\"name\":\"".into()),
            Part::Hex("ff fe c3 28".into()),
            Part::Text("\"}}".into()),
        ]),
    ];
    (parts, prop::bool::weighted(0.15))
        .prop_map(|(parts, base64)| BodySpec { parts, base64 })
        .boxed()
}

fn identity_strategy() -> BoxedStrategy<Identity> {
    // Now and then a claim holds the attribute writer's scope (which only
    // `scope` and `scp` grant), in the forms claims arrive in, or nearly.
    let claim_value = prop_oneof![
        8 => sub_strategy(),
        1 => prop::sample::select(vec![
            WRITER_SCOPE,
            "matchmaking/play matchmaking/attributes.write",
            "[\"matchmaking/attributes.write\"]",
            "[matchmaking/attributes.write]",
            "matchmaking/attributes.write,x",
            "Matchmaking/attributes.write",
            " matchmaking/attributes.write ",
            "matchmaking/attributes.write\u{0}",
            "[\"matchmaking/attributes.write x\"]",
        ])
        .prop_map(str::to_owned),
    ];
    let other_claims = prop::collection::btree_map(
        prop::sample::select(vec![
            "username",
            "cognito:username",
            "email",
            "player",
            "userId",
            "client_id",
            "scope",
            "scp",
        ])
        .prop_map(str::to_owned),
        claim_value,
        0..3,
    );
    prop_oneof![
        1 => Just(Identity::NoAuthorizer),
        1 => Just(Identity::NoJwt),
        1 => sub_strategy().prop_map(|s| Identity::LambdaContext(BTreeMap::from([("sub".into(), s)]))),
        1 => other_claims.clone().prop_map(Identity::Claims),
        10 => (sub_strategy(), other_claims).prop_map(|(sub, mut c)| {
            c.insert("sub".into(), sub);
            Identity::Claims(c)
        }),
    ]
    .boxed()
}

fn headers_strategy() -> BoxedStrategy<BTreeMap<String, String>> {
    let content_type = prop_oneof![
        3 => Just(None),
        6 => prop::sample::select(vec![
            "application/json", "application/json; charset=utf-8", "Application/JSON; Charset=UTF-8",
            "application/json;charset=\"utf8\"", "application/json; charset=latin1",
            "application/json; boundary=x", "application/jsonp", "text/plain",
            "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", "",
            "application/json, text/plain", " application/json", "application/json;;",
        ])
        .prop_map(|s| Some(s.to_owned())),
        1 => "[ -~]{0,40}".prop_map(Some),
        1 => Just(Some("application/jsön".to_owned())),
    ];
    let identity_headers = prop::collection::btree_map(
        prop::sample::select(vec![
            "x-user-id",
            "x-player-id",
            "x-amzn-oidc-identity",
            "x-forwarded-user",
            "x-remote-user",
            "cookie",
            "x-amz-user",
        ])
        .prop_map(str::to_owned),
        prop::sample::select(COMMON_PLAYERS.to_vec()).prop_map(str::to_owned),
        0..3,
    );
    (content_type, identity_headers)
        .prop_map(|(ct, mut headers)| {
            if let Some(ct) = ct {
                headers.insert("content-type".into(), ct);
            }
            headers
        })
        .boxed()
}

const METHODS: [&str; 9] = [
    "GET", "POST", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS", "TRACE", "FOO",
];

/// Party ids: placeholders for parties that exist at run time (see
/// [`PLACEHOLDERS`]), some with a character more; well-formed ids of parties
/// that do not exist (also of unknown worlds); near misses; nasty strings.
fn party_id_strategy() -> BoxedStrategy<String> {
    prop_oneof![
        6 => (
            prop::sample::select(PLACEHOLDERS.to_vec()),
            prop::sample::select(vec!["", "", "", "", "0", "-", "A", "_", ".", "%00", "/x"]),
        )
            .prop_map(|(token, more)| format!("{token}{more}")),
        2 => (
            prop_oneof![
                3 => prop::sample::select(PLAYABLE.to_vec()).prop_map(str::to_owned),
                1 => Just("world9".to_owned()),
                1 => "[a-z0-9_-]{1,33}",
            ],
            "[0-9a-z-]{1,65}",
        )
            .prop_map(|(world, rest)| format!("{world}.{rest}")),
        1 => prop::sample::select(vec![
            "world1", ".1-a", "world1.", "World1.1-a", "world1.1_a", "world1.1-A", "world1..1",
            "world1.1.2", "world1.1-a ", " world1.1-a", "world1:1-a", "{mm}.1", "world1.{mm}",
            "join", "world1.1-a%2Fjoin",
        ])
        .prop_map(str::to_owned),
        1 => prop::sample::select(vec![33usize, 64, 65]).prop_map(|n| format!("world1.{}", "a".repeat(n))),
        2 => nasty_string(),
    ]
    .boxed()
}

/// A party id in a path: placeholders as they are (they are replaced
/// before the call), anything else percent-encoded.
fn party_segment(id: &str) -> String {
    if id.starts_with('@') {
        id.to_owned()
    } else {
        percent_encode(id)
    }
}

/// A path parameter's value, by the parameter's name.
fn path_parameter_strategy(name: &str) -> BoxedStrategy<String> {
    match name {
        "worldType" => world_strategy(),
        "playerId" => sub_strategy(),
        "partyId" => party_id_strategy(),
        // `matchId`, and the parameters of routes added later.
        _ => nasty_string(),
    }
}

/// A path of one route, its parameters generated by name, and (mostly) the
/// path parameters API Gateway would send.
fn route_path_strategy(
    spec: &'static RouteSpec,
) -> BoxedStrategy<(String, Option<BTreeMap<String, String>>)> {
    let names: Vec<&'static str> = spec.parameter_names().collect();
    if names.is_empty() {
        return Just((spec.path.to_owned(), None)).boxed();
    }
    let values: Vec<BoxedStrategy<String>> =
        names.iter().map(|n| path_parameter_strategy(n)).collect();
    (values, prop::bool::weighted(0.85))
        .prop_map(move |(values, send_params)| {
            let mut path = spec.path.to_owned();
            for (name, value) in names.iter().zip(&values) {
                // Placeholders are replaced before the call; anything else
                // is percent-encoded into its one segment.
                let segment = if *name == "partyId" {
                    party_segment(value)
                } else {
                    percent_encode(value)
                };
                path = path.replace(&format!("{{{name}}}"), &segment);
            }
            let params =
                send_params.then(|| names.iter().map(|n| (*n).to_owned()).zip(values).collect());
            (path, params)
        })
        .boxed()
}

/// A path (after the stage) and the path parameters API Gateway would send:
/// every route of the route table, and paths near them that are none.
fn path_strategy() -> BoxedStrategy<(String, Option<BTreeMap<String, String>>)> {
    let routes = ROUTES.iter().map(|spec| {
        let weight = if spec.parameter_names().next().is_some() {
            3
        } else {
            2
        };
        (weight, route_path_strategy(spec))
    });
    let routes = prop::strategy::Union::new_weighted(routes.collect());
    prop_oneof![
        25 => routes,
        3 => prop::sample::select(vec![
            "/", "/v1", "/v1/matching", "/v1/matching/", "/v1/matching/join/", "/V1/MATCHING/JOIN",
            "/v1//matching/join", "/v1/matching/queue-status/", "/v1/matching/queue-status/a/b",
            "/v1/matching/joins", "/v1/matching/join%00", "/v1/matching/my-status/alice",
            "/v1/matching/queue-status", "/v1/matching/join;x", "/v1/parties/", "/v1/parties//join",
            "/v1/parties/a/b/join", "/v1/parties/world1.1-a/join/", "/V1/PARTIES", "/v1/party",
            "/v1/parties/join", "/v1/parties/world1.1-a/JOIN", "/v1/parties/world1.1-a/leave",
            "/v1/parties/world1.1-a/join/join", "/v1/parties/%2Fjoin",
        ])
        .prop_map(|p| (p.to_owned(), None)),
        1 => nasty_string().prop_map(|s| (format!("/{}", percent_encode(&s)), None)),
    ]
    .boxed()
}

fn http_case_strategy() -> BoxedStrategy<HttpCase> {
    (
        path_strategy(),
        prop::option::weighted(0.75, Just(())),
        prop::sample::select(METHODS.to_vec()),
        prop::option::weighted(0.7, Just(())),
        prop::sample::select(Function::ALL.to_vec()),
        prop::option::weighted(
            0.15,
            prop_oneof![
                3 => "[a-zA-Z0-9_-]{1,12}",
                1 => Just("v1".to_owned()),
            ],
        ),
        prop_oneof![
            4 => Just(String::new()),
            1 => prop::sample::select(vec!["player=bob", "sub=bob&worldType=world9", "worldType=%7B%7D", "a=%00&b"]).prop_map(str::to_owned),
            1 => "[a-zA-Z0-9=&%._-]{0,30}",
        ],
        headers_strategy(),
        prop::option::weighted(0.9, body_strategy()),
        identity_strategy(),
        prop::bool::weighted(0.1),
    )
        .prop_map(
            |((path, params), right_method, random_method, right_fn, random_fn, stage, query, headers, body, identity, get_body)| {
                let route = route_of(&path);
                let method = match (route, right_method) {
                    (Some(r), Some(())) => route_method(r).to_owned(),
                    _ => random_method.to_owned(),
                };
                let function = match (route, right_fn) {
                    (Some(r), Some(())) => r.function(),
                    _ => random_fn,
                };
                let body = if method == "GET" || method == "HEAD" {
                    body.filter(|_| get_body)
                } else {
                    body
                };
                HttpCase {
                    note: String::new(),
                    function,
                    method,
                    path,
                    stage,
                    query,
                    headers,
                    path_parameters: params,
                    body,
                    identity,
                    late: false,
                }
            },
        )
        .boxed()
}

/// What a well-formed case asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ask {
    Join,
    Leave,
    QueueStatus,
    CreateParty,
    JoinParty,
    CancelParty,
    Accept,
}

/// Requests that are well-formed or nearly so (so the run reaches joins,
/// matches, parties, 409s and leaves, not only early refusals).
fn well_formed_case_strategy() -> BoxedStrategy<HttpCase> {
    (
        prop_oneof![
            3 => Just(Ask::Join),
            3 => Just(Ask::Leave),
            1 => Just(Ask::QueueStatus),
            4 => Just(Ask::CreateParty),
            3 => Just(Ask::JoinParty),
            2 => Just(Ask::CancelParty),
            2 => Just(Ask::Accept),
        ],
        prop_oneof![
            6 => prop::sample::select(PLAYABLE.to_vec()).prop_map(str::to_owned),
            1 => Just("world9".to_owned()),
            2 => nasty_string(),
        ],
        prop::bool::weighted(0.7),
        prop::option::weighted(0.4, data_strategy()),
        prop::sample::select(COMMON_PLAYERS.to_vec()),
        prop_oneof![
            3 => Just(None),
            3 => Just(Some("application/json")),
            1 => Just(Some("application/json; charset=UTF-8")),
            1 => Just(Some("text/plain")),
        ],
        headers_strategy(),
        prop::option::weighted(0.15, 8100usize..9000),
        prop_oneof![
            8 => prop::collection::vec(prop::sample::select(COMMON_PLAYERS.to_vec()), 0..5)
                .prop_map(|v| json!(v)),
            1 => members_strategy(),
        ],
        prop_oneof![
            3 => prop::sample::select(vec!["@invited", "@invited", "@member", "@other"])
                .prop_map(str::to_owned),
            2 => party_id_strategy(),
        ],
        // A party join's body: none, empty, whitespace, `{}`, or with data.
        prop::sample::select(vec![0u8, 1, 2, 3, 4, 4]),
        // `attributes`: mostly valid ones in `attr`, now and then any.
        (
            prop::option::weighted(0.25, attributes_strategy()),
            valid_attr_attributes(),
        ),
    )
        .prop_map(
            |(
                ask,
                world,
                my_world,
                data,
                sub,
                content_type,
                mut headers,
                pad,
                members,
                party,
                join_body,
                (attributes, valid_attributes),
            )| {
                let attributes = match world.as_str() {
                    "attr" => Some(attributes.unwrap_or(valid_attributes)),
                    _ => attributes,
                };
                headers.remove("content-type");
                if let Some(ct) = content_type {
                    headers.insert("content-type".into(), ct.to_owned());
                }
                let pad = |body: &mut Value| {
                    if let Some(n) = pad {
                        body["pad"] = json!("p".repeat(n));
                    }
                };
                let party_params = Some(BTreeMap::from([("partyId".to_owned(), party.clone())]));
                // Leaves mostly name the caller's world (see `MY_WORLD`).
                let body_world = if ask == Ask::Leave && my_world {
                    MY_WORLD.to_owned()
                } else {
                    world.clone()
                };
                let mut body = json!({ "worldType": body_world });
                let (function, path) = match ask {
                    Ask::QueueStatus => {
                        let mut case = post(
                            Function::Status,
                            &format!("/v1/matching/queue-status/{}", percent_encode(&world)),
                            None,
                            claims(sub),
                        );
                        case.method = "GET".into();
                        case.headers = headers;
                        case.path_parameters =
                            Some(BTreeMap::from([("worldType".to_owned(), world)]));
                        return case;
                    }
                    Ask::JoinParty => {
                        let body = match join_body {
                            0 => None,
                            1 => Some(BodySpec::text("")),
                            2 => Some(BodySpec::text(" \n\t")),
                            3 => Some(BodySpec::text("{}")),
                            _ => {
                                let mut b = json!({});
                                if let Some(d) = data {
                                    b["data"] = d;
                                }
                                if let Some(a) = attributes {
                                    b["attributes"] = a;
                                }
                                pad(&mut b);
                                Some(BodySpec::text(b.to_string()))
                            }
                        };
                        let path = format!("/v1/parties/{}/join", party_segment(&party));
                        let mut case = post(Function::Join, &path, body, claims(sub));
                        case.headers = headers;
                        case.path_parameters = party_params;
                        return case;
                    }
                    Ask::CancelParty => {
                        // The body is ignored: send whatever the join would.
                        let path = format!("/v1/parties/{}", party_segment(&party));
                        let mut case = post(
                            Function::Leave,
                            &path,
                            (join_body > 2).then(|| BodySpec::text(body.to_string())),
                            claims(sub),
                        );
                        case.method = "DELETE".into();
                        case.headers = headers;
                        case.path_parameters = party_params;
                        return case;
                    }
                    Ask::Accept => {
                        // A well-formed answer, mostly to the caller's own proposal.
                        let id = if my_world {
                            "@proposal"
                        } else {
                            "@foreign-proposal"
                        };
                        let mut b = json!({ "matchId": id, "accept": join_body != 0 });
                        pad(&mut b);
                        let mut case = post(
                            Function::Join,
                            ACCEPT_PATH,
                            Some(BodySpec::text(b.to_string())),
                            claims(sub),
                        );
                        case.headers = headers;
                        return case;
                    }
                    Ask::Join => (Function::Join, "/v1/matching/join"),
                    Ask::Leave => (Function::Leave, "/v1/matching/leave"),
                    Ask::CreateParty => (Function::Join, "/v1/parties"),
                };
                if let (Ask::Join | Ask::CreateParty, Some(d)) = (ask, data) {
                    body["data"] = d;
                }
                if let (Ask::Join | Ask::CreateParty, Some(a)) = (ask, attributes) {
                    body["attributes"] = a;
                }
                if ask == Ask::CreateParty {
                    body["members"] = members;
                }
                pad(&mut body);
                HttpCase {
                    headers,
                    ..post(
                        function,
                        path,
                        Some(BodySpec::text(body.to_string())),
                        claims(sub),
                    )
                }
            },
        )
        .boxed()
}

/// Valid requests of party life (create, join, cancel, leave, join the
/// queue) among the harness's players, so parties form, fill, queue, match
/// and break up during a run, and the refusals that depend on them (in a
/// party, member busy, already queued) come up.
fn party_flow_strategy() -> BoxedStrategy<HttpCase> {
    (
        prop_oneof![
            6 => Just(Ask::CreateParty),
            5 => Just(Ask::JoinParty),
            2 => Just(Ask::CancelParty),
            2 => Just(Ask::Leave),
            2 => Just(Ask::Join),
        ],
        prop::sample::select(PARTY_PLAYERS.to_vec()),
        0..6u8,
        // Not `duel`: its parties are proposed whole at once, and the ready
        // flow plays those.
        prop::sample::select(vec!["world1", "world2"]),
        prop::collection::btree_set(prop::sample::select(PARTY_PLAYERS.to_vec()), 1..3),
        prop::bool::weighted(0.8),
        prop::option::weighted(
            0.3,
            prop::collection::btree_map("[a-z]{1,6}", json_leaf(), 0..3),
        ),
        prop::bool::weighted(0.5),
    )
        .prop_map(
            |(ask, player, roll, world, members, usual, data, content_type)| {
                // Mostly callers the request can act for: a player invited to
                // a party joins it, a member cancels it, leaves, creates another
                // or joins the queue (see `CALLER_PLACEHOLDERS`).
                let sub = match (ask, roll) {
                    (Ask::JoinParty, 0..=3) | (Ask::CancelParty, 0..=1) => "@invitee",
                    (Ask::CreateParty, 0..=1)
                    | (Ask::CancelParty, 2..=4)
                    | (Ask::Leave, 0..=1)
                    | (Ask::Join, 0..=3) => "@partner",
                    (Ask::Leave, 2..=4) | (Ask::CreateParty, 2) => "@waiting",
                    (Ask::CreateParty, 3..=4) => "@free",
                    _ => player,
                };
                let party = match (ask, usual) {
                    (Ask::JoinParty, true) => "@invited",
                    (Ask::CancelParty, true) => "@member",
                    _ => "@other",
                };
                let data = data.map(|d| Value::Object(d.into_iter().collect()));
                let (function, method, path, body) = match ask {
                    Ask::CreateParty => {
                        // Mostly one member who may be invited (the others
                        // are often busy: 409 MEMBER_BUSY, ALREADY_QUEUED).
                        let members: Vec<&str> = if usual {
                            vec![FREE_MEMBER]
                        } else {
                            members.into_iter().filter(|m| *m != sub).collect()
                        };
                        let mut body = json!({ "worldType": world, "members": members });
                        if let Some(d) = data {
                            body["data"] = d;
                        }
                        (Function::Join, "POST", "/v1/parties".to_owned(), Some(body))
                    }
                    Ask::JoinParty => (
                        Function::Join,
                        "POST",
                        format!("/v1/parties/{party}/join"),
                        data.map(|d| json!({ "data": d })),
                    ),
                    Ask::CancelParty => (
                        Function::Leave,
                        "DELETE",
                        format!("/v1/parties/{party}"),
                        None,
                    ),
                    Ask::Leave => (
                        Function::Leave,
                        "POST",
                        "/v1/matching/leave".to_owned(),
                        Some(json!({ "worldType": MY_WORLD })),
                    ),
                    _ => (
                        Function::Join,
                        "POST",
                        "/v1/matching/join".to_owned(),
                        Some(json!({ "worldType": world })),
                    ),
                };
                let mut case = post(
                    function,
                    &path,
                    body.map(|b| BodySpec::text(b.to_string())),
                    claims(sub),
                );
                case.method = method.into();
                if !content_type {
                    case.headers.clear();
                }
                if path.starts_with(PARTIES_PREFIX) {
                    case.path_parameters =
                        Some(BTreeMap::from([("partyId".to_owned(), party.to_owned())]));
                }
                case
            },
        )
        .boxed()
}

/// Valid requests of ready-check life in `duel` among the harness's ready
/// players: joins that propose, accepts (mostly by a player who has still
/// to answer), declines, leaves of a proposal, answers to someone else's
/// proposal or to a decided one, joins while proposed (`@proposed`),
/// malformed answers; and now and then a
/// party that is proposed whole.
fn ready_flow_strategy() -> BoxedStrategy<HttpCase> {
    (
        0..20u8,
        prop::sample::select(READY_PLAYERS.to_vec()),
        prop::sample::select(READY_PLAYERS.to_vec()),
        prop::sample::select(vec!["duel", "duel", "world1"]),
    )
        .prop_map(|(roll, player, mate, world)| {
            let answer = |sub: &str, id: &str, accept: bool| {
                post(
                    Function::Join,
                    ACCEPT_PATH,
                    Some(BodySpec::text(
                        json!({ "matchId": id, "accept": accept }).to_string(),
                    )),
                    claims(sub),
                )
            };
            let body = |v: Value| Some(BodySpec::text(v.to_string()));
            match roll {
                0..=5 => post(
                    Function::Join,
                    "/v1/matching/join",
                    body(json!({ "worldType": world })),
                    claims(if roll < 4 { player } else { "@proposed" }),
                ),
                6..=11 => answer("@proposed", "@proposal", true),
                12 => answer("@proposed", "@proposal", false),
                13 => answer(player, "@foreign-proposal", true),
                14 => answer(player, "@my-match", true),
                15 => post(
                    Function::Leave,
                    "/v1/matching/leave",
                    body(json!({ "worldType": MY_WORLD })),
                    claims("@proposed"),
                ),
                16 => post(
                    Function::Join,
                    "/v1/parties",
                    body(json!({ "worldType": "duel", "members": [mate] })),
                    claims(player),
                ),
                17 => {
                    let mut case = post(
                        Function::Join,
                        "/v1/parties/@invited/join",
                        None,
                        claims(mate),
                    );
                    case.path_parameters = Some(BTreeMap::from([(
                        "partyId".to_owned(),
                        "@invited".to_owned(),
                    )]));
                    case
                }
                // Malformed answers to the caller's own proposal: 400.
                18 => post(
                    Function::Join,
                    ACCEPT_PATH,
                    body(json!({ "matchId": "@proposal", "accept": "true" })),
                    claims("@proposed"),
                ),
                _ => post(
                    Function::Join,
                    ACCEPT_PATH,
                    body(json!({ "matchId": "@proposal" })),
                    claims("@proposed"),
                ),
            }
        })
        .boxed()
}

/// Names in an `attributes` object: mostly declared ones (client and
/// trusted), also near misses and hostile ones (long names are cut in
/// answers).
fn attribute_name_strategy() -> BoxedStrategy<String> {
    prop_oneof![
        8 => prop::sample::select(ATTRIBUTES.iter().map(|d| d.name).collect::<Vec<_>>())
            .prop_map(str::to_owned),
        2 => prop::sample::select(vec![
            "Mode", "mode ", " mode", "MODE", "modes", "colour", "rating", "latencies", "",
            "__proto__", "mode\u{0}", "ｍｏｄｅ", "a", "level.x", "maps[]",
        ])
        .prop_map(str::to_owned),
        1 => prop::sample::select(vec![39usize, 40, 41, 100, 2000]).prop_map(|n| "m".repeat(n)),
        1 => nasty_string(),
    ]
    .boxed()
}

/// Tokens and near tokens: declared values, around the length limits,
/// characters outside `A-Za-z0-9._:-`, unicode look-alikes.
fn attribute_token_strategy() -> BoxedStrategy<String> {
    prop_oneof![
        4 => prop::sample::select(vec![
            "ctf", "koth", "dm", "pc", "console", "harbor", "mill", "dunes", "peak", "canal",
            "bronze", "silver", "gold", "1.4.2", "a:b", "x_y-z", ".", ":", "-",
        ])
        .prop_map(str::to_owned),
        2 => "[A-Za-z0-9._:-]{1,10}",
        1 => prop::sample::select(vec![8usize, 9, 32, 33, 64, 65, 1000]).prop_map(|n| "t".repeat(n)),
        2 => prop::sample::select(vec![
            "", " ", "ctf ", "CTF", "ｃｔｆ", "ctf\u{0}", "é", "😀", "a/b", "a,b", "a;b", "a=b",
            "a|b", "a b", "NaN", "Infinity", "-Infinity", "1e400", "-0", "null", "true",
            "\u{202e}ftc", "ctf\n",
        ])
        .prop_map(str::to_owned),
        1 => nasty_string(),
    ]
    .boxed()
}

/// Numbers around the declared ranges, huge, tiny, negative zero, and
/// numbers written as strings.
fn attribute_number_strategy() -> BoxedStrategy<Value> {
    prop_oneof![
        4 => (0u32..=100).prop_map(Value::from),
        2 => (-11.0f64..111.0).prop_map(Value::from),
        2 => prop::sample::select(vec![
            json!(0), json!(100), json!(-0.0), json!(100.000_000_1), json!(-1e-300),
            json!(1e-300), json!(101), json!(-1), json!(10), json!(-10), json!(10.5),
            json!(-10.000_001), json!(5000), json!(5001), json!(1e9), json!(1e308),
            json!(-1e308), json!(u64::MAX), json!(i64::MIN), json!(4.9e-324),
        ]),
        1 => any::<f64>().prop_map(Value::from),
        1 => prop::sample::select(vec!["5", "NaN", "Infinity", "1e400", "0x10", ""])
            .prop_map(Value::from),
    ]
    .boxed()
}

/// A value for any attribute: strings, numbers, lists (with repeats, too
/// many, wrong item types), maps, and anything else.
fn attribute_value_strategy() -> BoxedStrategy<Value> {
    let item = prop_oneof![
        6 => attribute_token_strategy().prop_map(Value::from),
        1 => json_leaf(),
    ];
    prop_oneof![
        3 => attribute_token_strategy().prop_map(Value::from),
        3 => attribute_number_strategy(),
        3 => prop::collection::vec(item, 0..5).prop_map(Value::Array),
        1 => (attribute_token_strategy(), 2usize..5)
            .prop_map(|(t, n)| json!(vec![t; n])),
        1 => prop::sample::select(vec![4usize, 9, 33, 100]).prop_map(|n| {
            json!((0..n).map(|i| format!("m{i}")).collect::<Vec<_>>())
        }),
        2 => prop::collection::btree_map(attribute_token_strategy(), attribute_number_strategy(), 0..4)
            .prop_map(|m| Value::Object(m.into_iter().collect())),
        1 => json_value(),
    ]
    .boxed()
}

/// Valid client attributes of `attr` (the required `build` now and then
/// left out): tokens, numbers and lists drawn within the declarations.
fn valid_attr_attributes() -> BoxedStrategy<Value> {
    (
        prop::option::weighted(0.7, prop::sample::select(vec!["ctf", "koth", "dm"])),
        prop::option::weighted(
            0.5,
            prop_oneof![
                (0u32..=100).prop_map(Value::from),
                (0.0f64..=100.0).prop_map(Value::from)
            ],
        ),
        prop::option::weighted(
            0.4,
            prop::collection::btree_set(
                prop::sample::select(vec!["harbor", "mill", "dunes", "peak", "canal"]),
                1..=3,
            ),
        ),
        prop::option::weighted(
            0.3,
            prop::collection::btree_map("[A-Za-z0-9._:-]{1,8}", -10.0f64..=10.0, 1..=2),
        ),
        prop::option::weighted(0.95, "[A-Za-z0-9._:-]{1,8}"),
        prop::option::weighted(0.3, prop::sample::select(vec!["pc", "console"])),
        any::<bool>(),
    )
        .prop_map(|(mode, level, maps, loadout, build, platform, reversed)| {
            let mut m = Map::new();
            if let Some(v) = mode {
                m.insert("mode".into(), json!(v));
            }
            if let Some(v) = level {
                m.insert("level".into(), v);
            }
            if let Some(v) = maps {
                // Any order: the store sorts them.
                let mut v: Vec<&str> = v.into_iter().collect();
                if reversed {
                    v.reverse();
                }
                m.insert("maps".into(), json!(v));
            }
            if let Some(v) = loadout {
                m.insert("loadout".into(), json!(v));
            }
            if let Some(v) = build {
                m.insert("build".into(), json!(v));
            }
            if let Some(v) = platform {
                m.insert("platform".into(), json!(v));
            }
            Value::Object(m)
        })
        .boxed()
}

/// Values of one attribute of `attr` at and just past its limits (and of
/// other types), by name: lengths around `maxLength`, counts around
/// `maxItems` (0 included), numbers at and past `min` and `max`, repeated
/// and unknown items, keys too long or not tokens.
fn boundary_value(name: &'static str) -> BoxedStrategy<Value> {
    let other_type = || {
        prop::sample::select(vec![
            Value::Null,
            json!(true),
            json!(1),
            json!("1"),
            json!([]),
            json!({}),
            json!(["ctf"]),
        ])
    };
    let number = |min: f64, max: f64| {
        prop::sample::select(vec![
            json!(min),
            json!(max),
            json!((min + max) / 2.0),
            json!(-0.0),
            json!(max + 1e-9 * max.abs().max(1.0)),
            json!(min - 1e-9 * min.abs().max(1.0)),
            json!(max + 1.0),
            json!(min - 1.0),
            json!(1e308),
            json!(-1e308),
            json!(u64::MAX),
            json!("NaN"),
            json!("Infinity"),
            json!(max.to_string()),
        ])
    };
    let token = |n: usize| {
        prop::collection::vec(prop::sample::select(b"Az09._:-".to_vec()), n..=n)
            .prop_map(|b| String::from_utf8(b).unwrap_or_default())
    };
    match name {
        "mode" | "platform" => prop_oneof![
            4 => prop::sample::select(vec![
                "ctf", "koth", "dm", "pc", "console", "CTF", "ctf ", " ctf", "", "ｃｔｆ", "mac",
                "ctf\u{0}", "dm:", "ctfctfctfctfctfctfctfctfctfctfctfc",
            ])
            .prop_map(Value::from),
            1 => other_type(),
        ]
        .boxed(),
        "build" => prop_oneof![
            4 => (7usize..=9).prop_flat_map(token).prop_map(Value::from),
            2 => prop::sample::select(vec!["", "1.4/2", "1 4", "1,4", "1;4", "1=4", "1|4", "é", "1.4\n"])
                .prop_map(Value::from),
            1 => other_type(),
        ]
        .boxed(),
        "level" => prop_oneof![4 => number(0.0, 100.0), 1 => other_type()].boxed(),
        "loadout" => {
            let key = prop_oneof![
                4 => (1usize..=9).prop_flat_map(token),
                1 => prop::sample::select(vec!["", "a/b", "a b", "ａ", "a,b", "a;b"])
                    .prop_map(str::to_owned),
            ];
            prop_oneof![
                4 => prop::collection::btree_map(key, number(-10.0, 10.0), 0..=3)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
                1 => other_type(),
            ]
            .boxed()
        }
        "maps" => {
            // Mostly at `maxItems` (3) and just past it.
            let values = vec!["harbor", "mill", "dunes", "peak", "canal"];
            (
                (
                    Just(values).prop_shuffle(),
                    prop::sample::select(vec![0usize, 1, 3, 3, 4, 4, 5]),
                )
                    .prop_map(|(mut v, n)| {
                        v.truncate(n);
                        v
                    }),
                prop::sample::select(vec![
                    None,
                    None,
                    None,
                    None,
                    None,
                    Some(json!("harbor")),
                    Some(json!("river")),
                    Some(json!("Mill")),
                    Some(json!(1)),
                    Some(Value::Null),
                ]),
                any::<prop::sample::Index>(),
            )
                .prop_map(|(items, more, at)| {
                    let mut items: Vec<Value> = items.into_iter().map(Value::from).collect();
                    if let Some(more) = more {
                        let at = at.index(items.len() + 1);
                        items.insert(at, more);
                    }
                    Value::Array(items)
                })
                .boxed()
        }
        _ => prop_oneof![
            3 => attribute_value_strategy(),
            1 => number(0.0, 5000.0),
            1 => prop::sample::select(vec!["bronze", "silver", "gold", "Gold", "platinum"])
                .prop_map(Value::from),
        ]
        .boxed(),
    }
}

/// Valid attributes of `attr` with one entry set to a value at or past its
/// limits (see [`boundary_value`]), or a name added (trusted, unknown, near
/// miss, long); now and then the required `build` left out too.
fn near_valid_attr_attributes() -> BoxedStrategy<Value> {
    let names = [
        "mode",
        "level",
        "maps",
        "loadout",
        "build",
        "platform",
        "rank",
        "tier",
        "colour",
        "Mode",
        "a_name_far_longer_than_the_forty_characters_an_answer_shows",
    ];
    // Mostly `attr`'s own client attributes.
    let edit = prop::strategy::Union::new_weighted(
        names
            .into_iter()
            .enumerate()
            .map(|(i, n)| {
                let weight = if i < 6 { 3 } else { 1 };
                (weight, boundary_value(n).prop_map(move |v| (n, v)).boxed())
            })
            .collect(),
    );
    (valid_attr_attributes(), edit, prop::bool::weighted(0.1))
        .prop_map(|(mut valid, (name, value), drop_build)| {
            if let Value::Object(m) = &mut valid {
                m.insert(name.to_owned(), value);
                if drop_build {
                    m.remove("build");
                }
            }
            valid
        })
        .boxed()
}

/// Hostile `attributes`: any names with any values, many entries, values
/// that are no object at all.
fn hostile_attributes() -> BoxedStrategy<Value> {
    prop_oneof![
        4 => prop::collection::btree_map(attribute_name_strategy(), attribute_value_strategy(), 0..5)
            .prop_map(|m| Value::Object(m.into_iter().collect())),
        1 => (1usize..40).prop_map(|n| {
            Value::Object((0..n).map(|i| (format!("a{i}"), json!(i))).collect())
        }),
        2 => json_value(),
    ]
    .boxed()
}

/// Any `attributes`: valid ones of `attr`, near-valid ones, hostile ones,
/// `null`.
fn attributes_strategy() -> BoxedStrategy<Value> {
    prop_oneof![
        3 => valid_attr_attributes(),
        3 => near_valid_attr_attributes(),
        3 => hostile_attributes(),
        1 => Just(Value::Null),
        1 => Just(json!({})),
    ]
    .boxed()
}

/// The `attributes` of a trusted write: valid ones (each trusted attribute
/// now and then), near-valid and client ones, hostile ones.
fn trusted_attributes_strategy() -> BoxedStrategy<Value> {
    let valid = (
        prop::option::weighted(0.7, prop::sample::select(vec!["bronze", "silver", "gold"])),
        prop::option::weighted(
            0.5,
            prop_oneof![
                (0u32..=5000).prop_map(Value::from),
                (0.0f64..=5000.0).prop_map(Value::from)
            ],
        ),
    )
        .prop_map(|(tier, rank)| {
            let mut m = Map::new();
            if let Some(t) = tier {
                m.insert("tier".into(), json!(t));
            }
            if let Some(r) = rank {
                m.insert("rank".into(), r);
            }
            Value::Object(m)
        });
    let edits = prop::sample::select(vec![
        ("tier", json!("platinum")),
        ("tier", json!("Gold")),
        ("tier", json!(["gold"])),
        ("tier", Value::Null),
        ("rank", json!(5000)),
        ("rank", json!(5000.5)),
        ("rank", json!(-1)),
        ("rank", json!("1500")),
        ("rank", json!(1e308)),
        ("mode", json!("ctf")),
        ("build", json!("1.4")),
        ("colour", json!("red")),
    ]);
    let near = (valid.clone(), edits).prop_map(|(mut v, (name, value))| {
        v[name] = value;
        v
    });
    prop_oneof![
        7 => valid,
        2 => near,
        1 => hostile_attributes(),
        1 => Just(Value::Null),
    ]
    .boxed()
}

/// Requests of the worlds with attributes among their own players (so
/// their tickets and parties are theirs): joins of `attr` with valid and
/// near-valid attributes (equal modes match, a party join with another
/// mode conflicts), parties there, leaves and cancels; trusted writes,
/// mostly with the writer scope, and joins and parties of `vip`, which
/// needs one; joins of worlds without attributes that send some.
fn attribute_flow_strategy() -> BoxedStrategy<HttpCase> {
    (
        0..26u8,
        prop::sample::select(ATTR_PLAYERS.to_vec()),
        prop::sample::select(ATTR_PLAYERS.to_vec()),
        prop_oneof![
            4 => valid_attr_attributes(),
            5 => near_valid_attr_attributes(),
            1 => attributes_strategy(),
        ],
        trusted_attributes_strategy(),
        prop::sample::select(vec![
            Some(WRITER_SCOPE),
            Some(WRITER_SCOPE),
            Some(WRITER_SCOPE),
            Some("[\"matchmaking/play\",\"matchmaking/attributes.write\"]"),
            Some("matchmaking/play matchmaking/attributes.write"),
            Some("[matchmaking/play matchmaking/attributes.write]"),
            Some("[matchmaking/play,matchmaking/attributes.write]"),
            Some("matchmaking/attributes.writ"),
            Some("Matchmaking/attributes.write"),
            None,
        ]),
        prop::bool::weighted(0.5),
    )
        .prop_map(|(roll, player, mate, attributes, trusted, scope, scp)| {
            let body = |v: Value| Some(BodySpec::text(v.to_string()));
            let world = if roll % 4 == 3 { "vip" } else { "attr" };
            let attributes_of = |world: &str| {
                if world == "attr" {
                    attributes.clone()
                } else {
                    // `vip` takes no client attribute: none, or whatever.
                    [Value::Null, json!({}), attributes.clone()][usize::from(roll % 3)].clone()
                }
            };
            let party_case = |sub: &str, path: &str, b: Option<BodySpec>| {
                let mut case = post(Function::Join, path, b, claims(sub));
                case.path_parameters = Some(BTreeMap::from([(
                    "partyId".to_owned(),
                    "@invited".to_owned(),
                )]));
                case
            };
            match roll {
                0..=4 => post(
                    Function::Join,
                    "/v1/matching/join",
                    body(json!({ "worldType": world, "attributes": attributes_of(world) })),
                    claims(player),
                ),
                5..=8 => {
                    let members: Vec<&str> = [mate].into_iter().filter(|m| *m != player).collect();
                    post(
                        Function::Join,
                        "/v1/parties",
                        body(json!({
                            "worldType": world,
                            "members": members,
                            "attributes": attributes_of(world),
                        })),
                        claims(player),
                    )
                }
                // With attributes (of `attr`), or none (as `vip` takes).
                9..=11 => party_case(
                    "@attr-invitee",
                    "/v1/parties/@invited/join",
                    body(json!({ "attributes": attributes })),
                ),
                12..=13 => party_case("@attr-invitee", "/v1/parties/@invited/join", None),
                14..=15 => {
                    let mut case =
                        post(Function::Leave, "/v1/parties/@member", None, claims(player));
                    case.method = "DELETE".into();
                    case.path_parameters = Some(BTreeMap::from([(
                        "partyId".to_owned(),
                        "@member".to_owned(),
                    )]));
                    case
                }
                16..=17 => post(
                    Function::Leave,
                    "/v1/matching/leave",
                    body(json!({ "worldType": MY_WORLD })),
                    claims(player),
                ),
                // Worlds without attributes: anything but `null` is refused.
                18..=19 => {
                    let world = ["world2", "geo", "duel"][usize::from(roll % 3)];
                    post(
                        Function::Join,
                        "/v1/matching/join",
                        body(json!({ "worldType": world, "attributes": attributes })),
                        claims(player),
                    )
                }
                _ => {
                    let mut identity = BTreeMap::from([("sub".to_owned(), "writer".to_owned())]);
                    if let Some(scope) = scope {
                        let name = if scp { "scp" } else { "scope" };
                        identity.insert(name.to_owned(), scope.to_owned());
                    }
                    let mut case = post(
                        Function::Status,
                        &format!("/v1/attributes/{player}"),
                        body(json!({ "attributes": trusted })),
                        Identity::Claims(identity),
                    );
                    case.method = "PUT".into();
                    if roll % 2 == 0 {
                        case.path_parameters =
                            Some(BTreeMap::from([("playerId".to_owned(), player.to_owned())]));
                    }
                    case
                }
            }
        })
        .boxed()
}

fn any_http_case_strategy() -> BoxedStrategy<HttpCase> {
    prop_oneof![
        8 => http_case_strategy(),
        4 => well_formed_case_strategy(),
        4 => party_flow_strategy(),
        4 => ready_flow_strategy(),
        3 => attribute_flow_strategy(),
    ]
    .boxed()
}

fn token_strategy() -> BoxedStrategy<TokenSpec> {
    let field = |good: Value, bad: Vec<Value>| {
        prop_oneof![
            6 => Just(Some(good)),
            1 => Just(None),
            2 => prop::sample::select(bad).prop_map(Some),
        ]
    };
    let sub = prop_oneof![
        6 => sub_strategy().prop_map(|s| Some(json!(s))),
        1 => Just(None),
        1 => Just(Some(json!(42))),
        1 => Just(Some(json!(["alice"]))),
    ];
    let signed = (
        sub,
        field(
            json!("$issuer"),
            vec![
                json!("https://evil.example.test"),
                json!(""),
                json!(ISSUER.to_uppercase()),
            ],
        ),
        field(
            json!("$audience"),
            vec![
                json!("other-app"),
                json!(["other", "$audience"]),
                json!([AUDIENCE, "x"]),
                json!(7),
            ],
        ),
        field(
            json!("now+600"),
            vec![
                json!("now-300"),
                json!("now-31"),
                json!("now+5"),
                json!("soon"),
                json!(-1),
            ],
        ),
        prop::option::weighted(
            0.2,
            prop::sample::select(vec![json!("now-60"), json!("now+3600")]),
        ),
        any::<bool>(),
        prop_oneof![
            8 => Just(Signer::Issuer),
            1 => Just(Signer::Forger),
            1 => Just(Signer::None),
            1 => Just(Signer::Hs256Public),
        ],
    )
        .prop_map(|(sub, iss, aud, exp, nbf, client_id, signer)| {
            let mut claims = Map::new();
            for (k, v) in [
                ("sub", sub),
                ("iss", iss),
                ("aud", aud),
                ("exp", exp),
                ("nbf", nbf),
            ] {
                if let Some(v) = v {
                    // `["other", "$audience"]` keeps the placeholder literal: a wrong audience.
                    claims.insert(k.to_owned(), v);
                }
            }
            if !claims.contains_key("aud") && client_id {
                claims.insert("client_id".into(), json!("$audience"));
            }
            TokenSpec::Signed { claims, signer }
        });
    prop_oneof![
        6 => signed,
        1 => prop::sample::select(vec![
            "", " ", "a.b.c", "Bearer x", "null", "eyJhbGciOiJub25lIn0.e30.", "..", "eyJ", "%00",
        ])
        .prop_map(|s| TokenSpec::Raw(s.to_owned())),
        1 => "[A-Za-z0-9._~+/=-]{0,300}".prop_map(TokenSpec::Raw),
        1 => any::<String>().prop_map(TokenSpec::Raw),
    ]
    .boxed()
}

fn ws_case_strategy() -> BoxedStrategy<WsCase> {
    (
        prop_oneof![
            6 => "[A-Za-z0-9+/=_-]{1,20}".prop_map(Some),
            2 => nasty_string().prop_map(Some),
            1 => Just(None),
        ],
        prop::option::weighted(0.9, token_strategy()),
        prop::collection::btree_map(
            prop::sample::select(vec!["Token", "token2", "player", "sub", "connectionId"])
                .prop_map(str::to_owned),
            sub_strategy(),
            0..2,
        ),
        prop::collection::btree_map(
            prop::sample::select(vec!["x-user-id", "Authorization", "X-Player-Id"])
                .prop_map(str::to_owned),
            prop::sample::select(COMMON_PLAYERS.to_vec()).prop_map(str::to_owned),
            0..2,
        ),
    )
        .prop_map(|(connection_id, token, query, headers)| WsCase {
            note: String::new(),
            connection_id,
            token,
            query,
            headers,
        })
        .boxed()
}

// ---------------------------------------------------------------------------
// Hand-picked cases (also saved to the corpus)
// ---------------------------------------------------------------------------

fn claims(sub: &str) -> Identity {
    Identity::Claims(BTreeMap::from([("sub".to_owned(), sub.to_owned())]))
}

fn post(function: Function, path: &str, body: Option<BodySpec>, identity: Identity) -> HttpCase {
    HttpCase {
        note: String::new(),
        function,
        method: "POST".into(),
        path: path.into(),
        stage: None,
        query: String::new(),
        headers: BTreeMap::from([("content-type".to_owned(), "application/json".to_owned())]),
        path_parameters: None,
        body,
        identity,
        late: false,
    }
}

/// Saves `case` to `MM_CORPUS_OUT/<kind>/<name>.json` when that is set.
fn save_to_corpus<T: Serialize>(kind: &str, name: &str, case: &T) {
    let Ok(dir) = std::env::var("MM_CORPUS_OUT") else {
        return;
    };
    let dir = PathBuf::from(dir).join(kind);
    std::fs::create_dir_all(&dir).expect("corpus dir");
    let text = serde_json::to_string_pretty(case).expect("serialize case");
    std::fs::write(dir.join(format!("{name}.json")), text + "\n").expect("write corpus file");
}

fn slug(s: &str) -> String {
    let mut out: String = s
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect();
    while out.contains("--") {
        out = out.replace("--", "-");
    }
    out.truncate(48);
    out.trim_matches('-').to_owned()
}

fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus")
}

/// The corpus files of `kind` (`http` or `ws`) whose names start with
/// `prefix`, in name order: the hand-picked hostile cases are the `seed-`
/// files, kept only there.
fn corpus<T: serde::de::DeserializeOwned>(kind: &str, prefix: &str) -> Vec<T> {
    let dir = corpus_dir().join(kind);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(prefix))
        })
        .collect();
    files.sort();
    files
        .iter()
        .map(|file| {
            let text = std::fs::read_to_string(file).expect("read corpus file");
            serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", file.display()))
        })
        .collect()
}

// ---------------------------------------------------------------------------
// The tests
// ---------------------------------------------------------------------------

/// The corpus name of a generated case's outcome: by function for the
/// queue, status and rating routes, by route for the party routes.
fn outcome_name(function: Function, outcome: &Outcome) -> String {
    let what = if outcome.code.is_empty() {
        "ok"
    } else {
        &outcome.code
    };
    let by = match outcome.route {
        Some(
            r @ (Route::CreateParty
            | Route::JoinParty
            | Route::CancelParty
            | Route::Accept
            | Route::Attributes),
        ) => format!("{r:?}"),
        _ => format!("{function:?}"),
    };
    format!("gen-{by}-{}-{}", outcome.status, slug(what)).to_lowercase()
}

/// Generated HTTP cases of a default run: 400 of the first four
/// generators of [`any_http_case_strategy`] and, at its weight (3 of 23),
/// 60 of the attribute flow beside them.
const HTTP_CASES: u32 = 460;

/// Arbitrary HTTP API events through the join, leave and status functions.
#[test]
fn arbitrary_http_requests_get_only_documented_answers() {
    let rt = runtime();
    let h = rt.block_on(Harness::start("hostile-http"));
    let seen = RefCell::new(HashSet::new());
    let counts = RefCell::new(BTreeMap::<(Function, u16), u32>::new());
    let outcomes = RefCell::new(BTreeMap::<Outcome, u32>::new());
    let mut runner = runner(proptest_cases(HTTP_CASES));
    let result = runner.run(&any_http_case_strategy(), |case| {
        let outcome = rt.block_on(check_http(&h, &case));
        *counts
            .borrow_mut()
            .entry((case.function, outcome.status))
            .or_default() += 1;
        let name = outcome_name(case.function, &outcome);
        if seen.borrow_mut().insert(name.clone()) {
            save_to_corpus("http", &name, &case);
        }
        *outcomes.borrow_mut().entry(outcome).or_default() += 1;
        Ok(())
    });
    if let Err(e) = result {
        panic!("{e}");
    }
    eprintln!("outcomes: {:?}", counts.borrow());
    let route_outcomes: Vec<_> = outcomes
        .borrow()
        .iter()
        .map(|(o, n)| format!("{:?} {} {}: {n}", o.route, o.status, o.code))
        .collect();
    eprintln!("route outcomes: {route_outcomes:?}");
    // The generators must reach past the early refusals (only outcomes that
    // 400 cases reach with near certainty; a leave's 200 needs the caller
    // queued in that world and is left to the seeds and tests/identity.rs).
    if proptest_cases(HTTP_CASES) >= HTTP_CASES {
        let counts = counts.borrow();
        let by_status = |s: u16| counts.iter().filter(|((_, st), _)| *st == s).count();
        for want in [
            (Function::Join, 200),
            (Function::Join, 201),
            (Function::Status, 200),
            (Function::Join, 400),
            (Function::Leave, 400),
            (Function::Status, 400),
            (Function::Join, 404),
            (Function::Leave, 404),
            (Function::Status, 404),
        ] {
            assert!(
                counts.contains_key(&want),
                "no case answered {want:?}: {counts:?}"
            );
        }
        for s in [401, 405, 409, 413, 415] {
            assert!(by_status(s) > 0, "no case answered {s}: {counts:?}");
        }
        let outcomes = outcomes.borrow();
        // By route (`None`: any code), also only what 400 cases reach with
        // near certainty; the corpus has every party and ready-check refusal
        // (a join's IN_PARTY and PROPOSAL_PENDING among them, which a run
        // of 400 misses now and then; so does a party creation's IN_PARTY:
        // 2 and 0 cases of 400 in two runs, seed 11112823778867823553
        // before and after the duplicate-key generator joined the mix, a
        // miss in about one run of eight; seeds 163 and 181 hold it).
        for (route, status, code) in [
            (Route::CreateParty, 201, Some("")),
            (Route::CreateParty, 400, None),
            (Route::JoinParty, 200, Some("")),
            (Route::JoinParty, 400, Some("INVALID_REQUEST")),
            (Route::JoinParty, 404, Some("PARTY_NOT_FOUND")),
            (Route::CancelParty, 200, Some("")),
            (Route::CancelParty, 400, Some("INVALID_REQUEST")),
            (Route::CancelParty, 404, Some("PARTY_NOT_FOUND")),
            (Route::Accept, 200, Some("")),
            (Route::Accept, 400, Some("INVALID_REQUEST")),
            (Route::Accept, 404, Some("PROPOSAL_NOT_FOUND")),
            (Route::JoinParty, 400, Some("INVALID_ATTRIBUTES")),
            (Route::Attributes, 200, Some("")),
        ] {
            assert!(
                outcomes.keys().any(|o| o.route == Some(route)
                    && o.status == status
                    && code.is_none_or(|c| o.code == c)),
                "no case answered {route:?} {status} {code:?}: {route_outcomes:?}"
            );
        }
    }
    if proptest_cases(HTTP_CASES) >= HTTP_CASES {
        // Bad attributes are refused somewhere (the corpus has every
        // route's refusal and the 409s of attributes).
        assert!(
            outcomes
                .borrow()
                .keys()
                .any(|o| o.status == 400 && o.code == "INVALID_ATTRIBUTES"),
            "no case answered 400 INVALID_ATTRIBUTES: {route_outcomes:?}"
        );
    }
    rt.block_on(async {
        let state = redis_state(&h.store).await;
        assert_only_known_keys(&h.store, &state, "after the whole run");
    });
}

/// The attribute flow alone, on a store of its own: every bad attribute
/// gets its documented 4xx and changes nothing, valid ones are taken, the
/// trusted store is written only with the writer scope.
#[test]
fn attribute_requests_get_only_documented_answers() {
    let rt = runtime();
    let h = rt.block_on(Harness::start("hostile-attributes"));
    let seen = RefCell::new(HashSet::new());
    let outcomes = RefCell::new(BTreeMap::<Outcome, u32>::new());
    let cases = proptest_cases(ATTRIBUTE_CASES);
    let mut runner = runner(cases);
    let result = runner.run(&attribute_flow_strategy(), |case| {
        let outcome = rt.block_on(check_http(&h, &case));
        let name = outcome_name(case.function, &outcome);
        if seen.borrow_mut().insert(name.clone()) {
            save_to_corpus("http", &name, &case);
        }
        *outcomes.borrow_mut().entry(outcome).or_default() += 1;
        Ok(())
    });
    if let Err(e) = result {
        panic!("{e}");
    }
    let route_outcomes: Vec<_> = outcomes
        .borrow()
        .iter()
        .map(|(o, n)| format!("{:?} {} {}: {n}", o.route, o.status, o.code))
        .collect();
    eprintln!("attribute outcomes: {route_outcomes:?}");
    // What 300 cases reach with near certainty (the 409s of attributes are
    // rarer: the corpus has them).
    if cases >= ATTRIBUTE_CASES {
        for (route, status, code) in [
            (Route::Join, 200, ""),
            (Route::Join, 400, "INVALID_ATTRIBUTES"),
            (Route::CreateParty, 201, ""),
            (Route::CreateParty, 400, "INVALID_ATTRIBUTES"),
            (Route::JoinParty, 400, "INVALID_ATTRIBUTES"),
            (Route::Attributes, 200, ""),
            (Route::Attributes, 400, "INVALID_ATTRIBUTES"),
            (Route::Attributes, 403, "FORBIDDEN"),
        ] {
            assert!(
                outcomes
                    .borrow()
                    .keys()
                    .any(|o| o.route == Some(route) && o.status == status && o.code == code),
                "no case answered {route:?} {status} {code}: {route_outcomes:?}"
            );
        }
    }
    rt.block_on(async {
        let state = redis_state(&h.store).await;
        assert_only_known_keys(&h.store, &state, "after the whole run");
    });
}

/// Cases of a default run of [`attribute_requests_get_only_documented_answers`].
const ATTRIBUTE_CASES: u32 = 300;

/// Arbitrary `$connect` events through ws-connect.
#[test]
fn arbitrary_connect_events_register_only_verified_subjects() {
    let rt = runtime();
    let h = rt.block_on(Harness::start("hostile-ws"));
    let seen = RefCell::new(HashSet::new());
    let mut runner = runner(proptest_cases(300));
    let result = runner.run(&ws_case_strategy(), |case| {
        let (status, _) = rt.block_on(check_ws(&h, &case));
        let kind = match &case.token {
            None => "none".to_owned(),
            Some(TokenSpec::Raw(_)) => "raw".to_owned(),
            Some(TokenSpec::Signed { signer, .. }) => format!("{signer:?}"),
        };
        if seen.borrow_mut().insert((status, kind.clone())) {
            save_to_corpus(
                "ws",
                &format!("gen-{status}-{}", kind.to_lowercase()),
                &case,
            );
        }
        Ok(())
    });
    if let Err(e) = result {
        panic!("{e}");
    }
    let statuses: BTreeSet<u16> = seen.borrow().iter().map(|s| s.0).collect();
    assert_eq!(statuses, BTreeSet::from([200, 400, 401]));
    rt.block_on(async {
        let state = redis_state(&h.store).await;
        assert_only_known_keys(&h.store, &state, "after the whole run");
    });
}

/// Every corpus file, replayed with the same properties.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn corpus_replays_with_the_same_properties() {
    let h = Harness::start("hostile-corpus").await;
    let http: Vec<HttpCase> = corpus("http", "");
    let ws: Vec<WsCase> = corpus("ws", "");
    let mut outcomes = BTreeSet::new();
    for case in &http {
        outcomes.insert(check_http(&h, case).await);
    }
    for case in &ws {
        check_ws(&h, case).await;
    }
    let replayed = http.len() + ws.len();
    assert!(replayed >= 50, "only {replayed} corpus files");
    // The party seeds reach what they are there for (their players are
    // used by no generated case, so the state they build is their own).
    for (route, status, code) in [
        (Route::CreateParty, 201, ""),
        (Route::CreateParty, 400, "INVALID_PARTY"),
        (Route::CreateParty, 409, "IN_PARTY"),
        (Route::CreateParty, 409, "MEMBER_BUSY"),
        (Route::CreateParty, 409, "ALREADY_QUEUED"),
        (Route::JoinParty, 200, ""),
        (Route::JoinParty, 404, "PARTY_NOT_FOUND"),
        (Route::JoinParty, 409, "IN_PARTY"),
        (Route::CancelParty, 200, ""),
        (Route::CancelParty, 404, "PARTY_NOT_FOUND"),
        (Route::CancelParty, 400, "INVALID_REQUEST"),
        (Route::Join, 409, "IN_PARTY"),
        // The latency seeds (`geo`, a world with regions).
        (Route::Join, 400, "INVALID_LATENCIES"),
        (Route::Join, 409, "LATENCY_REQUIRED"),
        (Route::CreateParty, 400, "INVALID_LATENCIES"),
        (Route::CreateParty, 409, "LATENCY_REQUIRED"),
        (Route::Leave, 200, ""),
        // The ready-check seeds (`duel`, and `blitz` for late answers).
        (Route::Join, 409, "PROPOSAL_PENDING"),
        (Route::Join, 409, "COOLING_DOWN"),
        (Route::CreateParty, 409, "COOLING_DOWN"),
        (Route::JoinParty, 409, "COOLING_DOWN"),
        (Route::Leave, 404, "NOT_QUEUED"),
        (Route::Accept, 200, ""),
        (Route::Accept, 400, "INVALID_REQUEST"),
        (Route::Accept, 401, "UNAUTHORIZED"),
        (Route::Accept, 404, "PROPOSAL_NOT_FOUND"),
        (Route::Accept, 405, "METHOD_NOT_ALLOWED"),
        (Route::Accept, 409, "PROPOSAL_EXPIRED"),
        (Route::Accept, 413, "PAYLOAD_TOO_LARGE"),
        (Route::Accept, 415, "UNSUPPORTED_MEDIA_TYPE"),
        // The servers' seeds (no servers.scope in the harness: whatever is
        // well formed and within its limits is forbidden).
        (Route::Assign, 400, "INVALID_ASSIGNMENT"),
        (Route::Assign, 400, "INVALID_REQUEST"),
        (Route::Assign, 403, "FORBIDDEN"),
        (Route::Assign, 413, "PAYLOAD_TOO_LARGE"),
        (Route::Report, 400, "INVALID_REQUEST"),
        (Route::Report, 403, "FORBIDDEN"),
        (Route::Report, 413, "PAYLOAD_TOO_LARGE"),
        // The attribute seeds (`attr`, `vip` and the trusted store).
        (Route::Join, 200, ""),
        (Route::Join, 400, "INVALID_ATTRIBUTES"),
        (Route::Join, 400, "INVALID_REQUEST"),
        (Route::Join, 409, "ATTRIBUTES_REQUIRED"),
        (Route::CreateParty, 400, "INVALID_ATTRIBUTES"),
        (Route::CreateParty, 409, "ATTRIBUTES_REQUIRED"),
        (Route::JoinParty, 400, "INVALID_ATTRIBUTES"),
        (Route::JoinParty, 409, "ATTRIBUTES_CONFLICT"),
        (Route::JoinParty, 409, "ATTRIBUTES_REQUIRED"),
        (Route::Attributes, 200, ""),
        (Route::Attributes, 400, "INVALID_ATTRIBUTES"),
        (Route::Attributes, 400, "INVALID_REQUEST"),
        (Route::Attributes, 401, "UNAUTHORIZED"),
        (Route::Attributes, 403, "FORBIDDEN"),
        (Route::Attributes, 405, "METHOD_NOT_ALLOWED"),
        (Route::Attributes, 413, "PAYLOAD_TOO_LARGE"),
        (Route::Attributes, 415, "UNSUPPORTED_MEDIA_TYPE"),
        // The avoid-list seeds (no servers.scope in the harness).
        (Route::Avoid, 400, "INVALID_REQUEST"),
        (Route::Avoid, 401, "UNAUTHORIZED"),
        (Route::Avoid, 403, "FORBIDDEN"),
        (Route::Avoid, 405, "METHOD_NOT_ALLOWED"),
        (Route::Avoid, 413, "PAYLOAD_TOO_LARGE"),
        (Route::Avoid, 415, "UNSUPPORTED_MEDIA_TYPE"),
    ] {
        assert!(
            outcomes
                .iter()
                .any(|o| o.route == Some(route) && o.status == status && o.code == code),
            "no corpus case answered {route:?} {status} {code}: {outcomes:?}"
        );
    }
    let state = redis_state(&h.store).await;
    assert_only_known_keys(&h.store, &state, "after the corpus");
}

/// Every row of the route table reaches a handler of its own function and of
/// no other (they answer NOT_FOUND, as for an unknown path): a route added to
/// the table without its arm in its function's `handle` fails here.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_route_of_the_table_is_served_by_its_function_only() {
    let h = Harness::start("hostile-routes").await;
    for spec in ROUTES {
        let path = spec
            .parameter_names()
            .fold(spec.path.to_owned(), |path, name| {
                path.replace(&format!("{{{name}}}"), "x")
            });
        for function in Function::ALL {
            // No identity: the route's own handler answers 401 before it
            // reads anything else.
            let mut case = post(function, &path, None, Identity::NoAuthorizer);
            case.method = spec.method.to_string();
            let context = shown(&case);
            let request = lambda_http::request::from_str(&http_event(&case).to_string())
                .unwrap_or_else(|e| panic!("not a valid HTTP API event ({e}): {context}"));
            let resp = h.invoke(function, request).await;
            let status = resp.status().as_u16();
            let body = check_envelope(&resp, &context);
            let want = if function == spec.function {
                (401, "UNAUTHORIZED")
            } else {
                (404, "NOT_FOUND")
            };
            assert_eq!(
                (status, body["data"]["error"].as_str().unwrap_or_default()),
                want,
                "{} sent to {function:?}: {body}",
                spec.route_key
            );
        }
    }
}

/// The oracle's table of error codes is the one docs/http-api.md documents
/// (its "Error codes" section: every code, with its status).
#[test]
fn the_error_code_table_is_the_documented_one() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/http-api.md");
    let text = std::fs::read_to_string(&path).expect("docs/http-api.md");
    let section = text
        .split("\n## Error codes")
        .nth(1)
        .and_then(|s| s.split("\n## ").next())
        .expect("an Error codes section");
    let documented: Vec<(String, u16)> = section
        .lines()
        .filter_map(|line| {
            let cells: Vec<&str> = line.split('|').map(str::trim).collect();
            let code = cells.get(1)?.strip_prefix('`')?.strip_suffix('`')?;
            Some((code.to_owned(), cells.get(2)?.parse().ok()?))
        })
        .collect();
    let ours: Vec<(String, u16)> = ERROR_CODES
        .iter()
        .map(|(c, s)| ((*c).to_owned(), *s))
        .collect();
    assert_eq!(ours, documented);
}

/// Events API Gateway never sends, which `lambda_http` refuses before any
/// of our code runs (the runtime reports an error, API Gateway answers 500):
/// a missing request context or `http` block, claims that are not strings.
/// Pinned so a `lambda_http` upgrade that starts accepting them is noticed
/// (the handlers would then see them, and must answer 401).
#[test]
fn malformed_events_never_reach_the_handlers() {
    let base = http_event(&post(
        Function::Join,
        "/v1/matching/join",
        Some(BodySpec::text("{\"worldType\":\"world1\"}")),
        claims("alice"),
    ));
    type Edit = fn(&mut Value);
    let edits: [(&str, Edit); 5] = [
        ("no requestContext", |v| {
            if let Some(o) = v.as_object_mut() {
                o.remove("requestContext");
            }
        }),
        ("no requestContext.http", |v| {
            if let Some(o) = v["requestContext"].as_object_mut() {
                o.remove("http");
            }
        }),
        ("numeric sub", |v| {
            v["requestContext"]["authorizer"]["jwt"]["claims"]["sub"] = json!(5)
        }),
        ("claims an array", |v| {
            v["requestContext"]["authorizer"]["jwt"]["claims"] = json!(["alice"])
        }),
        ("header with a newline", |v| {
            v["headers"]["x-a"] = json!("a\nb")
        }),
    ];
    for (what, edit) in edits {
        let mut event = base.clone();
        edit(&mut event);
        assert!(
            lambda_http::request::from_str(&event.to_string()).is_err(),
            "{what}: now accepted by lambda_http; add it to the handler cases"
        );
    }
}

/// `isBase64Encoded: true` with a body that is not base64: `lambda_http`
/// panics while building the request (aws_lambda_events
/// `Body::from_maybe_encoded`, `.expect("failed to decode aws base64 encoded
/// body")`), before any handler runs. API Gateway never sends this: it sets
/// the flag only on bodies it encoded itself. In Lambda the runtime catches
/// the panic and API Gateway answers 500. Pinned so an upgrade that changes
/// it is noticed; this is not our code to fix.
#[test]
fn invalid_base64_bodies_panic_inside_lambda_http_not_in_a_handler() {
    let mut event = http_event(&post(
        Function::Join,
        "/v1/matching/join",
        Some(BodySpec::text("{}")),
        claims("alice"),
    ));
    event["isBase64Encoded"] = json!(true);
    for body in ["!!!not base64!!!", "{\"worldType\":\"world1\"}", "YQ", "Y"] {
        event["body"] = json!(body);
        let text = event.to_string();
        let outcome = std::panic::catch_unwind(|| lambda_http::request::from_str(&text).is_ok());
        assert!(
            outcome.is_err(),
            "{body:?}: lambda_http no longer panics on invalid base64; replay it through the handlers"
        );
    }
    // Valid base64 is decoded before the handler sees it.
    event["body"] =
        json!(base64::engine::general_purpose::STANDARD.encode("{\"worldType\":\"world1\"}"));
    let request = lambda_http::request::from_str(&event.to_string()).expect("valid base64");
    assert_eq!(request.body().as_ref(), b"{\"worldType\":\"world1\"}");
}

/// One case with Redis down: the oracle without a store. Returns the status.
async fn check_http_down(h: &Harness, case: &HttpCase) -> u16 {
    let case = resolve(case, None);
    let context = shown(&case);
    let event = http_event(&case);
    let request = lambda_http::request::from_str(&event.to_string())
        .unwrap_or_else(|e| panic!("not a valid HTTP API event ({e}): {context}"));
    let resp = h.invoke(case.function, request).await;
    let body = check_envelope(&resp, &context);
    let status = resp.status().as_u16();
    let code = body["data"]["error"].as_str().unwrap_or_default();
    // What needs the store is 503; the oracle says so without it.
    let want = match expected(&case, None) {
        Expected::Refused(s, c, _) | Expected::RefusedWith(s, c, _) => (s, c),
        Expected::Ok(success) => panic!("{success:?} without a store: {context}"),
    };
    assert_eq!((status, code), want, "{body}: {context}");
    status
}

/// With Redis down: every refusal the docs place before the store stays the
/// same 4xx; whatever needs the store is 503 REDIS_UNAVAILABLE; never a
/// function error. `$connect`: 400/401 as before, 503 only for a valid token.
#[test]
fn with_redis_down_only_store_bound_requests_answer_503() {
    let rt = runtime();
    let mut h = rt.block_on(Harness::start_with(
        "hostile-down",
        &[
            ("REDIS_TIMEOUT_MS", "100"),
            ("REDIS_CONNECT_TIMEOUT_MS", "50"),
        ],
    ));
    h.redis.kill();
    let seen = RefCell::new(BTreeSet::new());
    let mut runner = runner((proptest_cases(400) / 4).max(1));
    let result = runner.run(&any_http_case_strategy(), |case| {
        let status = rt.block_on(check_http_down(&h, &case));
        seen.borrow_mut().insert(status);
        Ok(())
    });
    if let Err(e) = result {
        panic!("{e}");
    }
    // The party, accept and attribute seeds too (their placeholders name
    // nothing).
    for case in corpus::<HttpCase>("http", "seed-") {
        if case.path.starts_with(PARTIES_PATH)
            || case.path == ACCEPT_PATH
            || case.path.starts_with("/v1/attributes/")
            || case.note.starts_with("attributes:")
        {
            let status = rt.block_on(check_http_down(&h, &case));
            seen.borrow_mut().insert(status);
        }
    }
    assert!(seen.borrow().contains(&503), "{:?}", seen.borrow());
    rt.block_on(async {
        for case in corpus::<WsCase>("ws", "seed-") {
            let request = ws_event(&h, &case);
            let resp = ws_connect::handle_connect(
                &h.store,
                &h.verifier,
                &h.join.pusher,
                LambdaEvent::new(request, Context::default()),
            )
            .await
            .expect("no function error");
            let valid_id = case
                .connection_id
                .as_deref()
                .is_some_and(|id| ConnectionId::parse(id).is_ok());
            let want = if !valid_id {
                400
            } else if case.token.as_ref().and_then(token_subject).is_some() {
                503
            } else {
                401
            };
            assert_eq!(resp.status_code, want, "{}", shown(&case));
        }
    });
}

/// `$connect` events without a connection id (absent, null, empty) are
/// refused with 400 and register nothing; without a `requestContext` (or an
/// empty one) they do not even deserialize, so ws-connect never runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connect_events_without_a_context_are_bad_requests() {
    let h = Harness::start("hostile-ws-context").await;
    let token = h.issuer.token_for("ctx-player");
    let before = redis_state(&h.store).await;
    // No requestContext at all does not even deserialize: the runtime
    // refuses it before ws-connect runs (API Gateway always sends one).
    let mut event: Value =
        serde_json::from_str(include_str!("../../../events/ws-connect.json")).unwrap();
    if let Some(o) = event.as_object_mut() {
        o.remove("requestContext");
    }
    assert!(serde_json::from_value::<ApiGatewayWebsocketProxyRequest>(event).is_err());
    let mut event: Value =
        serde_json::from_str(include_str!("../../../events/ws-connect.json")).unwrap();
    event["requestContext"] = json!({});
    assert!(serde_json::from_value::<ApiGatewayWebsocketProxyRequest>(event).is_err());
    let edits: [fn(&mut Value); 3] = [
        |v| {
            if let Some(ctx) = v["requestContext"].as_object_mut() {
                ctx.remove("connectionId");
            }
        },
        |v| v["requestContext"]["connectionId"] = Value::Null,
        |v| v["requestContext"]["connectionId"] = json!(""),
    ];
    for (i, edit) in edits.iter().enumerate() {
        let mut event: Value =
            serde_json::from_str(include_str!("../../../events/ws-connect.json")).unwrap();
        event["queryStringParameters"] = json!({ "token": token });
        edit(&mut event);
        let request: ApiGatewayWebsocketProxyRequest =
            serde_json::from_value(event).unwrap_or_else(|e| panic!("edit {i}: {e}"));
        let resp = ws_connect::handle_connect(
            &h.store,
            &h.verifier,
            &h.join.pusher,
            LambdaEvent::new(request, Context::default()),
        )
        .await
        .expect("no function error");
        assert_eq!(resp.status_code, 400, "edit {i}");
    }
    assert!(redis_state(&h.store).await == before);
}

// ---------------------------------------------------------------------------
// End to end through the local stack
// ---------------------------------------------------------------------------

/// World sizes large enough that nothing matches, so the matcher loop does
/// not write while requests are compared before/after.
const E2E_WORLDS: &str = "world1:50,world2:50";
/// The stacks of these tests keep their matcher awake: a matcher that falls
/// asleep drops the worlds' stale deadline entries (lua/matcher_sleep.lua),
/// a write of its own in the middle of a before/after comparison.
const E2E_SETTINGS: &[(&str, &str)] = &[("MM_MATCHER_SLEEP", "false")];

/// Redis state without what the matcher loop changes on its own: its lease
/// (refreshed every tick) and sleep mark, and the outbox it drains (the
/// party routes leave notes there for it to deliver, a second or so later).
async fn stack_state(stack: &local_stack::LocalStack) -> BTreeMap<String, KeyContents> {
    let mut state = redis_state(&stack.store).await;
    let k = stack.store.keys();
    for key in [
        k.matcher_lease(),
        k.matcher_asleep(),
        k.outbox(),
        k.outbox_meta(),
        k.notes(),
    ] {
        state.remove(&key);
    }
    state
}

/// Sends `case` as a real HTTP request to the local stack, with a token
/// carrying the case's claims (when it has a sub). Returns status and body.
async fn send_through_stack(
    stack: &local_stack::LocalStack,
    client: &reqwest::Client,
    case: &HttpCase,
) -> (u16, Value) {
    let stage_path = match &case.stage {
        Some(s) => format!("/{s}{}", case.path),
        None => case.path.clone(),
    };
    let mut url = format!("{}{stage_path}", stack.http_url);
    if !case.query.is_empty() {
        url = format!("{url}?{}", case.query);
    }
    let method = reqwest::Method::from_bytes(case.method.as_bytes()).expect("method");
    let mut req = client.request(method, url);
    for (k, v) in &case.headers {
        if let Ok(v) = reqwest::header::HeaderValue::from_str(v) {
            req = req.header(k.as_str(), v);
        }
    }
    if let Identity::Claims(c) = &case.identity {
        if c.contains_key("sub") {
            let mut claims = json!({
                "iss": stack.issuer.issuer, "aud": stack.issuer.audience,
                "exp": now_secs() + 600, "iat": now_secs(),
            });
            for (k, v) in c {
                claims[k] = json!(v);
            }
            let token = stack.issuer.sign(&claims).expect("sign");
            req = req.header("authorization", format!("Bearer {token}"));
        }
    }
    if let Some(body) = &case.body {
        req = req.body(body.bytes());
    }
    let res = req
        .send()
        .await
        .unwrap_or_else(|e| panic!("no answer from the local stack ({e}): {}", shown(case)));
    let status = res.status().as_u16();
    let text = res.text().await.unwrap_or_default();
    (
        status,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}

/// A sample of generated cases, and the huge and deeply nested ones, through
/// the local stack's real HTTP server: API Gateway's own 404/401, or the
/// function's documented envelope; refusals change nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn generated_requests_end_to_end_through_the_local_stack() {
    let stack = support::start_stack(E2E_WORLDS, E2E_SETTINGS).await;
    let client = support::http();
    let mut cases: Vec<HttpCase> = corpus("http", "seed-");
    let sample = (proptest_cases(120) / 3).max(1);
    let mut runner = runner(sample);
    let strategy = any_http_case_strategy();
    for _ in 0..sample {
        let tree = strategy.new_tree(&mut runner).expect("generate");
        cases.push(tree.current());
    }
    let mut statuses = BTreeSet::new();
    for case in &cases {
        // HEAD answers have no body; `/` is the local stack's demo page.
        if matches!(case.method.as_str(), "HEAD" | "CONNECT" | "TRACE") || case.path == "/" {
            continue;
        }
        let mut known = Before::load(&stack.store).await;
        let case = &resolve_caller(case, Some(&known));
        known.read_statuses(&stack.store, case).await;
        let case = &resolve(case, Some(&known));
        let context = shown(case);
        let before = stack_state(&stack).await;
        let (status, body) = send_through_stack(&stack, &client, case).await;
        statuses.insert(status);
        let gateway_route = route_asked(&case.method, &case.path)
            .filter(|r| case.method == route_method(*r) && case.stage.is_none());
        let token_sent = matches!(&case.identity, Identity::Claims(c) if c.contains_key("sub"));
        match (gateway_route, token_sent) {
            (None, _) => assert_eq!(
                (status, body.clone()),
                (404, json!({"message": "Not Found"})),
                "{context}"
            ),
            (Some(_), false) => assert_eq!(
                (status, body.clone()),
                (401, json!({"message": "Unauthorized"})),
                "{context}"
            ),
            (Some(_), true) => {
                // 403: the servers' and the ratings writer's routes (this
                // stack configures neither scope).
                assert!(
                    matches!(status, 200 | 201 | 400 | 401 | 403 | 404 | 409 | 413 | 415),
                    "{status} {body}: {context}"
                );
                assert_eq!(body["resultCode"], status.to_string(), "{body}: {context}");
                if status >= 300 {
                    let code = body["data"]["error"].as_str().unwrap_or_default();
                    assert!(
                        ERROR_CODES.iter().any(|(c, s)| *c == code && *s == status),
                        "{body}: {context}"
                    );
                }
            }
        }
        let after = stack_state(&stack).await;
        assert_only_known_keys(&stack.store, &after, &context);
        let writes =
            matches!(status, 200 | 201) && matches!(case.method.as_str(), "POST" | "DELETE");
        if !writes {
            assert!(after == before, "{status} changed Redis: {context}");
        }
    }
    for s in [200, 400, 401, 404, 413] {
        assert!(
            statuses.contains(&s),
            "no request answered {s}: {statuses:?}"
        );
    }
    stack.stop().await;
}

/// Arbitrary tokens and query strings on a real WebSocket upgrade: only a
/// valid token upgrades (and registers under its `sub`); the rest are
/// refused with 401 and register nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn generated_websocket_upgrades_end_to_end_through_the_local_stack() {
    let stack = support::start_stack(E2E_WORLDS, E2E_SETTINGS).await;
    let issuer = TestIssuer::new(&stack.issuer.issuer, &stack.issuer.audience);
    let sample = (proptest_cases(60) / 3).max(1);
    let mut runner = runner(sample);
    let strategy = token_strategy();
    let mut specs: Vec<TokenSpec> = corpus::<WsCase>("ws", "seed-")
        .into_iter()
        .filter_map(|c| c.token)
        .collect();
    for _ in 0..sample {
        specs.push(strategy.new_tree(&mut runner).expect("generate").current());
    }
    let mut upgraded = 0;
    for spec in &specs {
        let context = shown(spec);
        // Sign like the harness, with the stack's key and issuer/audience.
        let (token, expect_sub) = match spec {
            TokenSpec::Raw(t) => (t.clone(), None),
            TokenSpec::Signed { claims, signer } => {
                let mut rendered = render_claims(claims);
                for (k, v) in rendered.as_object_mut().into_iter().flatten() {
                    if v == ISSUER {
                        *v = json!(stack.issuer.issuer);
                    } else if v == AUDIENCE {
                        *v = json!(stack.issuer.audience);
                    } else if k == "aud" && v.is_array() {
                        for a in v.as_array_mut().into_iter().flatten() {
                            if a == AUDIENCE {
                                *a = json!(stack.issuer.audience);
                            }
                        }
                    }
                }
                let token = match signer {
                    Signer::Issuer => stack.issuer.sign(&rendered).expect("sign"),
                    Signer::Forger => issuer.with_key(1, "local-dev-key").sign(&rendered),
                    Signer::None => unsigned_token(&rendered, "local-dev-key"),
                    Signer::Hs256Public => {
                        let n = base64::engine::general_purpose::URL_SAFE_NO_PAD
                            .decode(
                                stack.issuer.jwks()["keys"][0]["n"]
                                    .as_str()
                                    .unwrap_or_default(),
                            )
                            .unwrap_or_default();
                        hs256_token(&n, &rendered, "local-dev-key")
                    }
                };
                (token, token_subject(spec))
            }
        };
        let before = stack_state(&stack).await;
        let url = format!(
            "{}?token={}&player=alice&sub=bob",
            stack.websocket_url,
            percent_encode(&token)
        );
        match tokio_tungstenite::connect_async(&url).await {
            Ok((mut socket, _)) => {
                let sub = expect_sub.unwrap_or_else(|| panic!("upgraded: {context}"));
                upgraded += 1;
                let conns = stack
                    .store
                    .connections_of(&player(&sub))
                    .await
                    .expect("conns");
                assert_eq!(conns.len(), 1, "registered under {sub:?}: {context}");
                for other in ["alice", "bob"].into_iter().filter(|o| *o != sub) {
                    let theirs = stack
                        .store
                        .connections_of(&player(other))
                        .await
                        .expect("conns");
                    assert!(theirs.is_empty(), "{other} got a connection: {context}");
                }
                let _ = socket.close(None).await;
                drop(socket);
                eventually(
                    "the disconnect unregisters",
                    Duration::from_secs(10),
                    || async {
                        stack
                            .store
                            .connections_of(&player(&sub))
                            .await
                            .is_ok_and(|c| c.is_empty())
                            .then_some(())
                    },
                )
                .await;
            }
            Err(tokio_tungstenite::tungstenite::Error::Http(resp)) => {
                assert!(expect_sub.is_none(), "refused a valid token: {context}");
                assert_eq!(resp.status().as_u16(), 401, "{context}");
                assert!(stack_state(&stack).await == before, "{context}");
            }
            Err(e) => panic!("upgrade failed oddly ({e}): {context}"),
        }
    }
    assert!(upgraded > 0, "no valid token among {} cases", specs.len());
    stack.stop().await;
}

// ---------------------------------------------------------------------------
// Regressions of bugs found by these tests
// ---------------------------------------------------------------------------

/// Ticket data nested 120–126 levels used to pass validation (the body
/// parses within serde_json's 128-level limit) while the match record, which
/// embeds it two levels deeper, no longer parsed: a 500 for the completing
/// join, failing my-status, a blocked outbox. Data is now capped at 16 levels:
/// every such join is refused with 400 or, if accepted, the match reads back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deeply_nested_ticket_data_is_refused_before_it_reaches_a_match() {
    let h = Harness::start("hostile-deep-data").await;
    let mut failures = Vec::new();
    // `{"x": [[...]]}`: the data is `arrays + 1` levels deep.
    for arrays in [100usize, 120, 123, 124, 125, 126] {
        let team = h
            .store
            .settings()
            .worlds
            .get("world1")
            .expect("world1")
            .team_size;
        let players: Vec<String> = (0..team).map(|i| format!("deep-{arrays}-{i}")).collect();
        let body = format!(
            "{{\"worldType\":\"world1\",\"data\":{{\"x\":{}{}}}}}",
            "[".repeat(arrays),
            "]".repeat(arrays)
        );
        let mut answers = Vec::new();
        for p in &players {
            let case = post(
                Function::Join,
                "/v1/matching/join",
                Some(BodySpec::text(body.clone())),
                claims(p),
            );
            let req =
                lambda_http::request::from_str(&http_event(&case).to_string()).expect("event");
            let res = join::handle(&h.join, req).await;
            answers.push(res.map(|r| r.status().as_u16()).map_err(|e| e.to_string()));
        }
        if !answers.iter().all(|a| matches!(a, Ok(200 | 400))) {
            failures.push(format!(
                "data {} levels deep: joins answered {answers:?}",
                arrays + 1
            ));
        }
        for p in &players {
            let mut case = post(Function::Status, "/v1/matching/my-status", None, claims(p));
            case.method = "GET".into();
            let req =
                lambda_http::request::from_str(&http_event(&case).to_string()).expect("event");
            match status::handle(&h.status, req).await {
                Err(e) => failures.push(format!(
                    "data {} levels deep: {p}'s my-status is a function error: {e}",
                    arrays + 1
                )),
                Ok(resp) => {
                    if let Err(e) = serde_json::from_slice::<Value>(resp.body().as_ref()) {
                        failures.push(format!(
                            "data {} levels deep: {p}'s my-status answer does not parse: {e}",
                            arrays + 1
                        ));
                    }
                }
            }
        }
    }
    // The matcher's outbox drain claims every due entry in one batch.
    if let Err(e) = shared::matcher::tick(&h.store, &h.join.pusher).await {
        failures.push(format!("the matcher tick fails: {e}"));
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The local stack used to copy the client's `Host` and `X-Forwarded-Proto`
/// into the event verbatim, and `lambda_http` panicked building the URI from
/// a malformed one (no answer at all). Like API Gateway, the stack now sets
/// those headers itself.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_forwarding_headers_cannot_break_the_local_stack() {
    let stack = support::start_stack(E2E_WORLDS, E2E_SETTINGS).await;
    let token = support::token(&stack, "alice").await;
    for (header, value) in [
        ("x-forwarded-proto", "a b"),
        ("x-forwarded-proto", "1"),
        ("host", "a b"),
    ] {
        let res = support::http()
            .get(format!("{}/v1/matching/my-status", stack.http_url))
            .header("authorization", format!("Bearer {token}"))
            .header(header, value)
            .send()
            .await;
        let status = res.as_ref().map(|r| r.status().as_u16());
        assert!(
            matches!(status, Ok(200 | 400)),
            "{header}: {value:?} got no answer: {res:?}"
        );
    }
    stack.stop().await;
}
