//! The fixture the functions' `tests/local_invoke.rs` share: a private
//! `redis-server`, the `@connections` + JWKS stand-in, and the function
//! environment of `env.json` (what `sam local invoke --env-vars env.json`
//! gives every function) with its three addresses of the developer's
//! machine pointed at them instead:
//!
//! | variable | env.json | here |
//! |---|---|---|
//! | `REDIS_URL` | `redis://host.docker.internal:6379` | the private server |
//! | `MM_WS_ENDPOINT` | `http://host.docker.internal:3001` | the stand-in, stage `prod` |
//! | `AUTH_JWKS_URL` | `http://host.docker.internal:3000/.well-known/jwks.json` | the stand-in's JWKS |
//!
//! Everything else (namespace, worlds, issuer, audience, heartbeat, ...) is
//! used as `env.json` has it, so the tests prove the file works. Starting
//! the fixture also checks that `env.json` sets exactly the variables the
//! template gives the functions and that `.env.cargo-lambda` agrees with it.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::Duration;

use base64::Engine;
use serde_json::Value;
use shared::{MatchStore, Settings};

use super::{repo_root, Deadline, LocalFunction};
use crate::connections_server::{ConnectionsServer, TestIssuer};
use crate::RedisServer;

/// How long an invocation may take to be answered, cold start included: a
/// busy two-core machine running other test binaries stalls processes for
/// seconds, and an answer that comes is all that is checked.
pub const WAIT: Duration = Duration::from_secs(60);

/// The deadline Lambda hands the HTTP and WebSocket functions: their
/// timeout (the template's `Globals.Function.Timeout`, 10 s) from now.
pub fn function_deadline() -> Deadline {
    Deadline::In(Duration::from_secs(10))
}

/// The variables of `env.json` pointed at the developer's machine, which
/// the fixture points at its own servers.
pub const ADJUSTED: [&str; 3] = ["REDIS_URL", "MM_WS_ENDPOINT", "AUTH_JWKS_URL"];

/// The stage of the stand-in `@connections` endpoint, as in AWS.
pub const STAGE: &str = "prod";

/// `env.json`'s `Parameters` (the variables of every function).
pub fn env_json() -> BTreeMap<String, String> {
    let path = repo_root().join("env.json");
    let text =
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    let json: Value = serde_json::from_str(&text).expect("env.json is JSON");
    json["Parameters"]
        .as_object()
        .expect("env.json has a Parameters object (it applies to every function)")
        .iter()
        .map(|(k, v)| {
            let v = v
                .as_str()
                .unwrap_or_else(|| panic!("env.json: {k} must be a string"));
            (k.clone(), v.to_owned())
        })
        .collect()
}

/// `.env.cargo-lambda`'s `KEY=VALUE` lines (comments and blank lines skipped).
pub fn env_cargo_lambda() -> BTreeMap<String, String> {
    let path = repo_root().join(".env.cargo-lambda");
    let text =
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|l| {
            let (k, v) = l
                .split_once('=')
                .unwrap_or_else(|| panic!(".env.cargo-lambda: {l:?} is not KEY=VALUE"));
            (k.trim().to_owned(), v.trim().to_owned())
        })
        .collect()
}

/// The variables `template.yaml` gives every function
/// (`Globals.Function.Environment.Variables`).
pub fn template_variables() -> BTreeSet<String> {
    let path = repo_root().join("template.yaml");
    let text =
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    let indent = |l: &str| l.len() - l.trim_start().len();
    let mut section = "";
    let mut in_variables = None::<usize>;
    let mut out = BTreeSet::new();
    for line in text.lines() {
        let trimmed = line.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        if indent(line) == 0 {
            section = trimmed;
            in_variables = None;
            continue;
        }
        if section != "Globals:" {
            continue;
        }
        match in_variables {
            None if trimmed == "Variables:" => in_variables = Some(indent(line)),
            Some(level) if indent(line) <= level => in_variables = None,
            Some(level) if indent(line) == level + 2 => {
                if let Some((key, _)) = trimmed.split_once(':') {
                    out.insert(key.to_owned());
                }
            }
            _ => {}
        }
    }
    assert!(
        !out.is_empty(),
        "no Globals.Function.Environment.Variables in template.yaml"
    );
    out
}

/// `env.json` sets exactly the template's variables (SAM passes only
/// those, and leaves any it cannot resolve unparsed), points only
/// [`ADJUSTED`] at `host.docker.internal`, and `.env.cargo-lambda` has the
/// same values with `127.0.0.1` in place of `host.docker.internal` (an
/// empty value and a missing line are the same to the functions), plus
/// only `AWS_*` settings for the SDK.
pub fn assert_env_files_agree() {
    let sam = env_json();
    let template: BTreeSet<String> = template_variables();
    let keys: BTreeSet<String> = sam.keys().cloned().collect();
    assert_eq!(
        keys, template,
        "env.json must set exactly the variables template.yaml gives the functions"
    );
    for (k, v) in &sam {
        assert_eq!(
            v.contains("host.docker.internal"),
            ADJUSTED.contains(&k.as_str()),
            "env.json {k}={v}: only {ADJUSTED:?} point at the host (and the local-invoke tests \
             replace exactly those)"
        );
    }
    let cargo_lambda = env_cargo_lambda();
    for (k, v) in &sam {
        let expected = v.replace("host.docker.internal", "127.0.0.1");
        assert_eq!(
            cargo_lambda.get(k).cloned().unwrap_or_default(),
            expected,
            ".env.cargo-lambda {k} must be env.json's value with 127.0.0.1 for host.docker.internal"
        );
    }
    for k in cargo_lambda.keys() {
        assert!(
            sam.contains_key(k) || k.starts_with("AWS_"),
            ".env.cargo-lambda sets {k}, which env.json does not"
        );
    }
}

/// Redis, the stand-in and the function environment.
pub struct LocalEnv {
    pub redis: RedisServer,
    /// `@connections` (stage [`STAGE`]) and the JWKS document.
    pub stand_in: ConnectionsServer,
    /// The environment every function of this fixture starts with.
    pub env: BTreeMap<String, String>,
}

impl LocalEnv {
    pub async fn start() -> Self {
        assert_env_files_agree();
        let redis = RedisServer::start();
        let stand_in = ConnectionsServer::start().await;
        let mut env = env_json();
        env.insert("REDIS_URL".into(), redis.url());
        env.insert("MM_WS_ENDPOINT".into(), stand_in.endpoint_with_stage(STAGE));
        env.insert("AUTH_JWKS_URL".into(), stand_in.jwks_url());
        Self {
            redis,
            stand_in,
            env,
        }
    }

    /// The settings the functions read from [`LocalEnv::env`].
    pub fn settings(&self) -> Settings {
        Settings::from_lookup(|k| self.env.get(k).cloned()).expect("env.json's settings are valid")
    }

    /// A store with the functions' settings, for setting up and checking state.
    pub fn store(&self) -> MatchStore {
        MatchStore::new(self.settings()).expect("store")
    }

    /// An issuer with `env.json`'s `AUTH_ISSUER` and `AUTH_AUDIENCE`, its
    /// key published at `AUTH_JWKS_URL`.
    pub fn issuer(&self) -> TestIssuer {
        let issuer = TestIssuer::new(&self.env["AUTH_ISSUER"], &self.env["AUTH_AUDIENCE"]);
        self.stand_in.serve_jwks(issuer.jwks());
        issuer
    }

    /// Starts `binary` as Lambda function `name` with [`LocalEnv::env`].
    pub async fn function(&self, binary: &str, name: &str) -> LocalFunction {
        self.function_with(binary, name, &[]).await
    }

    /// Starts it with `changes` to the environment: `Some` sets, `None` unsets.
    pub async fn function_with(
        &self,
        binary: &str,
        name: &str,
        changes: &[(&str, Option<&str>)],
    ) -> LocalFunction {
        let mut env = self.env.clone();
        for (k, v) in changes {
            match v {
                Some(v) => env.insert((*k).to_owned(), (*v).to_owned()),
                None => env.remove(*k),
            };
        }
        LocalFunction::start(Path::new(binary), name, &env).await
    }

    /// Empties Redis (`FLUSHALL`): the next event meets a fresh deployment.
    pub async fn flush(&self) {
        let _: () = self
            .store()
            .command(&redis::cmd("FLUSHALL"))
            .await
            .expect("FLUSHALL");
    }
}

/// An HTTP API (payload 2.0) answer: checks the documented envelope — a
/// JSON body `{"resultCode", "msg", "data"}` with `resultCode` equal to the
/// status code, a message, an object in `data` — and returns (status, body).
pub fn http_envelope(answer: &Value) -> (u16, Value) {
    let status = answer["statusCode"]
        .as_u64()
        .and_then(|s| u16::try_from(s).ok())
        .unwrap_or_else(|| panic!("no statusCode in {answer}"));
    let content_type = answer["headers"]["content-type"]
        .as_str()
        .or_else(|| answer["multiValueHeaders"]["content-type"][0].as_str());
    assert_eq!(content_type, Some("application/json"), "{answer}");
    let raw = answer["body"]
        .as_str()
        .unwrap_or_else(|| panic!("no body in {answer}"));
    let text = if answer["isBase64Encoded"] == true {
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(raw)
            .expect("base64 body");
        String::from_utf8(bytes).expect("UTF-8 body")
    } else {
        raw.to_owned()
    };
    let body: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("body {text:?}: {e}"));
    assert_eq!(body["resultCode"], status.to_string(), "{body}");
    assert!(
        body["msg"].as_str().is_some_and(|m| !m.is_empty()),
        "{body}"
    );
    assert!(body["data"].is_object(), "{body}");
    (status, body)
}

/// A WebSocket route answer (`{"statusCode", "body"}`): (status, body).
pub fn websocket_answer(answer: &Value) -> (u16, String) {
    let status = answer["statusCode"]
        .as_u64()
        .and_then(|s| u16::try_from(s).ok())
        .unwrap_or_else(|| panic!("no statusCode in {answer}"));
    let body = answer["body"].as_str().unwrap_or_default().to_owned();
    (status, body)
}

/// The lines of `output` that are JSON log records at `level` (the
/// functions log JSON lines on Lambda), parsed.
pub fn log_records(output: &[String], level: &str) -> Vec<Value> {
    output
        .iter()
        .filter_map(|l| l.split_once("] ").map(|(_, rest)| rest))
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["level"] == level)
        .collect()
}
