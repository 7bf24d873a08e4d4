//! Reading a request: the caller's identity, the method, the media type
//! and a JSON body of an exact shape.

use lambda_http::aws_lambda_events::apigw::{
    ApiGatewayRequestAuthorizer, ApiGatewayRequestAuthorizerJwtDescription,
    ApiGatewayV2httpRequestContext,
};
use lambda_http::http::header::CONTENT_TYPE;
use lambda_http::request::RequestContext;
use lambda_http::{Request, RequestExt};
use serde::de::DeserializeOwned;
use serde_json::Value;
use shared::{MatchStore, PlayerId, Settings, World, WorldName};

use super::duplicate_keys::{first_duplicate_key, DuplicateKey};
use super::errors::{method_not_allowed, ApiError, ErrorCode, ErrorDetails};
use super::{Access, ConfiguredScope, Route};

/// Largest request body accepted, in bytes (ticket data alone is capped at
/// 4 KiB; the rest is room for the envelope around it).
pub const MAX_BODY_BYTES: usize = 8 * 1024;
/// Largest body of a route that lists the players of a match with a part
/// each ([`Route::max_body_bytes`]).
pub const MAX_LIST_BODY_BYTES: usize = 64 * 1024;

pub(super) fn check_method(req: &Request, route: Route) -> Result<(), ApiError> {
    if req.method() == route.method() {
        Ok(())
    } else {
        Err(method_not_allowed(route, req.method()))
    }
}

/// The caller: the `sub` claim the API Gateway JWT authorizer verified.
pub fn caller(req: &Request) -> Result<PlayerId, ApiError> {
    let sub = match req.request_context_ref() {
        Some(RequestContext::ApiGatewayV2(ctx)) => ctx
            .authorizer
            .as_ref()
            .and_then(|a| a.jwt.as_ref())
            .and_then(|jwt| jwt.claims.get("sub")),
        _ => None,
    };
    let unauthorized = |why: &str| ApiError::new(ErrorCode::Unauthorized, why);
    match sub {
        None => Err(unauthorized(
            "no authenticated caller (missing JWT sub claim)",
        )),
        Some(sub) => PlayerId::parse(sub)
            .map_err(|_| unauthorized("the JWT sub claim is not a usable player id")),
    }
}

/// A claim of the caller's verified token, as the JWT authorizer passes it
/// (every claim is a string; numbers and lists arrive as their text).
pub fn claim<'a>(req: &'a Request, name: &str) -> Option<&'a str> {
    match req.request_context_ref() {
        Some(RequestContext::ApiGatewayV2(ctx)) => ctx
            .authorizer
            .as_ref()
            .and_then(|a| a.jwt.as_ref())
            .and_then(|jwt| jwt.claims.get(name))
            .map(String::as_str),
        _ => None,
    }
}

/// The caller's OAuth scopes: what the JWT authorizer parsed into
/// `jwt.scopes`, plus those of the `scope` and `scp` claims in any of the
/// forms they arrive in (see [`claim_scopes`]).
pub fn scopes(req: &Request) -> Vec<String> {
    let parsed: Vec<String> = match req.request_context_ref() {
        Some(RequestContext::ApiGatewayV2(ctx)) => ctx
            .authorizer
            .as_ref()
            .and_then(|a| a.jwt.as_ref())
            .map(|jwt| jwt.scopes.iter().flatten().cloned().collect())
            .unwrap_or_default(),
        _ => Vec::new(),
    };
    let from_claims = ["scope", "scp"]
        .into_iter()
        .filter_map(|name| claim(req, name))
        .flat_map(claim_scopes);
    parsed.into_iter().chain(from_claims).collect()
}

/// The scopes in one claim. Every claim reaches the function as a string,
/// whatever its JSON type in the token, so a list of scopes comes as
/// - a space-separated string (`a b`: OAuth's `scope`, Cognito);
/// - JSON text of a list of strings (`["a","b"]`: what the local stack
///   passes, and what a string claim holding JSON looks like);
/// - API Gateway's rendering of a list claim (`[a b]`).
///
/// A JSON list's elements are taken whole (a scope has no spaces).
fn claim_scopes(value: &str) -> Vec<String> {
    if let Ok(list) = serde_json::from_str::<Vec<String>>(value) {
        return list.into_iter().filter(|s| !s.is_empty()).collect();
    }
    value
        .trim_start_matches('[')
        .trim_end_matches(']')
        .split(|c: char| c.is_ascii_whitespace() || c == ',')
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect()
}

/// Applies `route`'s access rule (its row of the route table) to the
/// caller, whose identity [`caller`] has already checked.
pub(super) fn authorize(req: &Request, route: Route, settings: &Settings) -> Result<(), ApiError> {
    match route.access() {
        Access::Player => Ok(()),
        Access::Scope(scope) => {
            if has_scope(req, scope, settings) {
                Ok(())
            } else {
                Err(forbidden(scope, settings))
            }
        }
    }
}

/// Whether the caller's token carries `scope` (configured).
pub(super) fn has_scope(req: &Request, scope: ConfiguredScope, settings: &Settings) -> bool {
    scope
        .required(settings)
        .is_some_and(|required| scopes(req).iter().any(|have| have == required))
}

/// 403 FORBIDDEN: the caller's token lacks `scope` (or none is configured).
pub(super) fn forbidden(scope: ConfiguredScope, settings: &Settings) -> ApiError {
    ApiError::new(ErrorCode::Forbidden, scope.refusal()).with(ErrorDetails::Scope {
        required: scope.required(settings).map(str::to_owned),
    })
}

/// Attaches the identity a JWT authorizer would: `sub` = `player`. For the
/// local stack (which verifies tokens itself) and tests.
pub fn with_caller(mut req: Request, player: &str) -> Request {
    let mut jwt = ApiGatewayRequestAuthorizerJwtDescription::default();
    jwt.claims.insert("sub".into(), player.into());
    let mut authorizer = ApiGatewayRequestAuthorizer::default();
    authorizer.jwt = Some(jwt);
    let mut ctx = match req.request_context_ref() {
        Some(RequestContext::ApiGatewayV2(ctx)) => ctx.clone(),
        _ => ApiGatewayV2httpRequestContext::default(),
    };
    ctx.authorizer = Some(authorizer);
    ctx.http.method = req.method().clone();
    req.extensions_mut()
        .insert(RequestContext::ApiGatewayV2(ctx));
    req
}

/// Accepts `application/json` (any case, optionally with a UTF-8 charset)
/// or no content type at all.
pub(super) fn check_content_type(req: &Request) -> Result<(), ApiError> {
    let Some(value) = req.headers().get(CONTENT_TYPE) else {
        return Ok(());
    };
    let refuse = || {
        let shown = String::from_utf8_lossy(value.as_bytes()).into_owned();
        ApiError::new(
            ErrorCode::UnsupportedMediaType,
            format!("content-type {shown:?} is not supported; send application/json"),
        )
        .with(ErrorDetails::UnsupportedMediaType {
            content_type: shown,
        })
    };
    let text = value.to_str().map_err(|_| refuse())?.to_ascii_lowercase();
    let mut parts = text.split(';').map(str::trim);
    if parts.next() != Some("application/json") {
        return Err(refuse());
    }
    for param in parts.filter(|p| !p.is_empty()) {
        match param.split_once('=') {
            Some(("charset", cs)) if matches!(cs.trim_matches('"'), "utf-8" | "utf8") => {}
            Some(("charset", _)) => return Err(refuse()),
            _ => {}
        }
    }
    Ok(())
}

/// Parses a JSON request body of type `T`, refusing bodies over
/// [`MAX_BODY_BYTES`], other media types, invalid UTF-8, an object with a
/// key twice at any depth (`data.duplicateKey`, `data.path`) and any JSON
/// that does not fit `T` exactly.
pub(super) fn json_body<T: DeserializeOwned>(req: &Request) -> Result<T, ApiError> {
    json_body_within(req, MAX_BODY_BYTES)
}

/// [`json_body`] with a limit of its own (an assignment's per-player tokens).
pub(super) fn json_body_within<T: DeserializeOwned>(
    req: &Request,
    limit: usize,
) -> Result<T, ApiError> {
    check_content_type(req)?;
    let bytes: &[u8] = req.body().as_ref();
    if bytes.len() > limit {
        return Err(ApiError::new(
            ErrorCode::PayloadTooLarge,
            format!(
                "request body is {} bytes; at most {limit} are allowed",
                bytes.len()
            ),
        )
        .with(ErrorDetails::PayloadTooLarge {
            limit_bytes: limit as u64,
            size_bytes: bytes.len() as u64,
        }));
    }
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err(ApiError::new(
            ErrorCode::InvalidRequest,
            "request body is required (a JSON object)",
        ));
    }
    let text = std::str::from_utf8(bytes)
        .map_err(|_| ApiError::new(ErrorCode::InvalidRequest, "request body is not valid UTF-8"))?;
    let invalid = |e: serde_json::Error| {
        ApiError::new(
            ErrorCode::InvalidRequest,
            format!("invalid request body: {e}"),
        )
    };
    let value: Value = serde_json::from_str(text).map_err(invalid)?;
    // Derived struct deserializers would also take a JSON array by position.
    if !value.is_object() {
        return Err(ApiError::new(
            ErrorCode::InvalidRequest,
            "request body must be a JSON object",
        ));
    }
    // `Value` kept the last of two equal keys; the text still has both.
    if let Some(DuplicateKey { key, path }) = first_duplicate_key(text) {
        return Err(ApiError::new(
            ErrorCode::InvalidRequest,
            format!("invalid request body: key {key:?} appears twice in one object (at {path})"),
        )
        .with(ErrorDetails::DuplicateKey {
            duplicate_key: key,
            path,
        }));
    }
    serde_json::from_value(value).map_err(invalid)
}

/// Like [`json_body`], but an empty body means `T::default()`.
pub(super) fn optional_json_body<T: DeserializeOwned + Default>(
    req: &Request,
) -> Result<T, ApiError> {
    let bytes: &[u8] = req.body().as_ref();
    if bytes.iter().all(u8::is_ascii_whitespace) {
        check_content_type(req)?;
        return Ok(T::default());
    }
    json_body(req)
}

pub(super) fn invalid_field(field: &'static str, msg: impl std::fmt::Display) -> ApiError {
    ApiError::new(ErrorCode::InvalidRequest, msg.to_string()).with(ErrorDetails::Field { field })
}

/// A request's `latencies` for `world`: 400 INVALID_LATENCIES when they are
/// malformed, name an unknown region or are out of range, or when the world
/// has no regions at all.
pub(super) fn latencies_for(
    world: &World,
    value: Option<&serde_json::Value>,
) -> Result<Option<shared::Latencies>, ApiError> {
    let bad = |msg: String| {
        ApiError::new(ErrorCode::InvalidLatencies, msg)
            .with(ErrorDetails::Field { field: "latencies" })
    };
    match (value, &world.regions) {
        (None | Some(serde_json::Value::Null), _) => Ok(None),
        (Some(_), None) => Err(bad(format!(
            "{} has no regions: leave latencies out",
            world.name
        ))),
        (Some(v), Some(regions)) => shared::Latencies::from_value(v, &regions.names)
            .map(Some)
            .map_err(|e| bad(e.to_string())),
    }
}

/// The configured world called `name`: 400 for a malformed name, 404 for a
/// well-formed one that is not configured.
pub(super) fn configured_world<'a>(
    store: &'a MatchStore,
    name: &str,
) -> Result<&'a World, ApiError> {
    let name = WorldName::parse(name).map_err(|e| invalid_field("worldType", e))?;
    let worlds = &store.settings().worlds;
    worlds.get(name.as_str()).ok_or_else(|| {
        let configured: Vec<WorldName> = worlds.iter().map(|w| w.name.clone()).collect();
        let listed: Vec<&str> = configured.iter().map(WorldName::as_str).collect();
        ApiError::new(
            ErrorCode::UnknownWorld,
            format!(
                "world {name} is not configured; known worlds: {}",
                listed.join(", ")
            ),
        )
        .with(ErrorDetails::UnknownWorld {
            world_type: name.clone(),
            worlds: configured,
        })
    })
}

#[cfg(test)]
mod tests {
    use lambda_http::http::header::HeaderValue;
    use lambda_http::http::Method;
    use lambda_http::Body;

    use super::*;

    const JOIN_PATH: &str = "/v1/matching/join";
    const MY_STATUS_PATH: &str = "/v1/matching/my-status";

    fn request(method: Method, uri: &str, content_type: Option<&str>, body: &str) -> Request {
        let mut req = Request::new(Body::from(body));
        *req.method_mut() = method;
        *req.uri_mut() = uri.parse().unwrap();
        if let Some(ct) = content_type {
            req.headers_mut()
                .insert(CONTENT_TYPE, HeaderValue::from_str(ct).unwrap());
        }
        req
    }

    #[test]
    fn content_types_other_than_json_are_refused() {
        for ok in [
            None,
            Some("application/json"),
            Some("Application/JSON; charset=UTF-8"),
            Some("application/json;charset=\"utf-8\""),
        ] {
            let req = request(Method::POST, JOIN_PATH, ok, "{}");
            assert!(check_content_type(&req).is_ok(), "{ok:?}");
        }
        for bad in [
            "text/plain",
            "application/x-www-form-urlencoded",
            "application/json; charset=latin1",
            "application/jsonp",
        ] {
            let req = request(Method::POST, JOIN_PATH, Some(bad), "{}");
            let err = check_content_type(&req).unwrap_err();
            assert_eq!(err.code, ErrorCode::UnsupportedMediaType, "{bad}");
        }
    }

    #[test]
    fn a_body_with_a_key_twice_at_any_depth_is_refused_naming_it() {
        let cases = [
            (
                r#"{"worldType":"world1","worldType":"world2"}"#,
                "worldType",
                "/worldType",
            ),
            (
                r#"{"worldType":"geo","latencies":{"eu":30,"eu":40}}"#,
                "eu",
                "/latencies/eu",
            ),
            (
                r#"{"worldType":"w","data":{"k":{"x":1,"x":1}}}"#,
                "x",
                "/data/k/x",
            ),
            (
                r#"{"players":[{"playerId":"a"},{"playerId":"b","playerId":"c"}]}"#,
                "playerId",
                "/players/1/playerId",
            ),
            (
                r#"{"playerRanks":{"a":1,"b":2,"a":3}}"#,
                "a",
                "/playerRanks/a",
            ),
        ];
        for (body, key, path) in cases {
            let req = request(Method::POST, JOIN_PATH, Some("application/json"), body);
            let err = json_body::<Value>(&req).unwrap_err();
            assert_eq!(err.code, ErrorCode::InvalidRequest, "{body}");
            assert_eq!(
                err.details,
                ErrorDetails::DuplicateKey {
                    duplicate_key: key.into(),
                    path: path.into()
                },
                "{body}"
            );
            assert!(err.msg.contains(path), "{body}: {}", err.msg);
        }
        // The same keys once each are read as before.
        let req = request(
            Method::POST,
            JOIN_PATH,
            None,
            r#"{"latencies":{"eu":30,"us":40}}"#,
        );
        assert_eq!(
            json_body::<Value>(&req).unwrap(),
            serde_json::json!({"latencies": {"eu": 30, "us": 40}})
        );
    }

    #[test]
    fn a_duplicate_key_answers_400_with_duplicate_key_and_path_in_data() {
        let body = r#"{"worldType":"geo","latencies":{"eu":30,"eu":40}}"#;
        let req = request(Method::POST, JOIN_PATH, None, body);
        let resp = json_body::<Value>(&req).unwrap_err().into_response();
        assert_eq!(resp.status().as_u16(), 400);
        let answer: Value = serde_json::from_slice(resp.body().as_ref()).unwrap();
        assert_eq!(answer["resultCode"], "400");
        assert_eq!(
            answer["data"],
            serde_json::json!({"error": "INVALID_REQUEST", "duplicateKey": "eu", "path": "/latencies/eu"})
        );
    }

    #[test]
    fn malformed_json_and_non_objects_keep_their_refusal_before_duplicates() {
        // Syntax first: a duplicate before a syntax error is not what is reported.
        let req = request(Method::POST, JOIN_PATH, None, r#"{"a":1,"a":2"#);
        let err = json_body::<Value>(&req).unwrap_err();
        assert_eq!(err.code, ErrorCode::InvalidRequest);
        assert_eq!(err.details, ErrorDetails::None {});
        let req = request(Method::POST, JOIN_PATH, None, r#"[{"a":1,"a":2}]"#);
        let err = json_body::<Value>(&req).unwrap_err();
        assert_eq!(err.msg, "request body must be a JSON object");
    }

    #[test]
    fn the_optional_body_of_a_party_join_is_checked_too() {
        #[derive(Debug, Default, serde::Deserialize)]
        struct Body {
            #[allow(dead_code)]
            latencies: Option<Value>,
        }
        let req = request(
            Method::POST,
            JOIN_PATH,
            None,
            r#"{"latencies":{"eu":1,"eu":2}}"#,
        );
        let err = optional_json_body::<Body>(&req).unwrap_err();
        assert_eq!(err.code, ErrorCode::InvalidRequest);
        assert!(matches!(err.details, ErrorDetails::DuplicateKey { .. }));
        let req = request(Method::POST, JOIN_PATH, None, "");
        assert!(optional_json_body::<Body>(&req).is_ok());
    }

    #[test]
    fn scope_claims_are_read_as_a_string_a_json_list_or_api_gateways_list() {
        let cases: [(&str, &[&str]); 9] = [
            ("a b", &["a", "b"]),
            ("a", &["a"]),
            // The local stack: a list claim as JSON text.
            (r#"["a/x.write"]"#, &["a/x.write"]),
            (r#"["a", "b"]"#, &["a", "b"]),
            (r#"["a b"]"#, &["a b"]),
            // API Gateway: a list claim as `[a b]`.
            ("[a/x.write b]", &["a/x.write", "b"]),
            ("[]", &[]),
            ("", &[]),
            (r#"{"scope":"a"}"#, &[r#"{"scope":"a"}"#]),
        ];
        for (claim, want) in cases {
            assert_eq!(claim_scopes(claim), want, "{claim}");
        }
    }

    #[test]
    fn identity_comes_only_from_the_jwt_sub_claim() {
        let req = request(Method::GET, MY_STATUS_PATH, None, "");
        assert_eq!(caller(&req).unwrap_err().code, ErrorCode::Unauthorized);
        let req = with_caller(req, "player-1");
        assert_eq!(caller(&req).unwrap().as_str(), "player-1");
        let req = with_caller(req, "");
        assert_eq!(caller(&req).unwrap_err().code, ErrorCode::Unauthorized);
    }
}
