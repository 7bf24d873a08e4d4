//! API Gateway HTTP API emulation: exactly the routes of the route table
//! (`lambda_common::http::ROUTES`), a JWT authorizer
//! (RS256 against the development key, 401 like API Gateway's), each request
//! built into a payload format 2.0 event and handed to the same handler
//! functions the Lambda binaries run. Plus the development endpoints and the
//! demo page, which exist only in the local stack.

use std::collections::HashMap;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::body::{Body, Bytes};
use axum::extract::{ConnectInfo, State};
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use lambda_common::http::{Route, ROUTES};
use serde_json::{json, Map, Value};
use shared::{MatchStore, PlayerId};

use crate::dev_auth::DevIssuer;
use crate::event_bus::EventBus;
use crate::websocket_gateway::ConnectionHub;

/// Matches a request like API Gateway does: method and path must both fit a
/// row of the route table, otherwise the answer is 404 `Not Found`. The path
/// parameters are percent-decoded, as API Gateway sends them.
fn resolve(method: &Method, path: &str) -> Option<(Route, HashMap<String, String>)> {
    // Leading slashes collapse (`//v1/...` resolves), as this emulation has
    // always done; the function, which gets the raw path, answers NOT_FOUND.
    let path = format!("/{}", path.trim_start_matches('/'));
    ROUTES
        .iter()
        .filter(|spec| spec.method == *method)
        .find_map(|spec| {
            let parameters = spec.match_path(&path)?;
            let decoded = parameters
                .into_iter()
                .map(|(name, raw)| (name.to_owned(), percent_decode(raw)))
                .collect();
            Some((spec.route, decoded))
        })
}

fn percent_decode(s: &str) -> String {
    fn hex(b: u8) -> Option<u8> {
        (b as char).to_digit(16).and_then(|d| u8::try_from(d).ok())
    }
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            if let (Some(hi), Some(lo)) = (hex(bytes[i + 1]), hex(bytes[i + 2])) {
                out.push(hi * 16 + lo);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The HTTP Lambda handlers behind the API.
pub trait HttpHandlers: Send + Sync + 'static {
    fn invoke(
        &self,
        route: Route,
        request: lambda_http::Request,
    ) -> impl Future<Output = Result<lambda_http::Response<lambda_http::Body>, lambda_http::Error>> + Send;
}

struct HttpGateway<H> {
    handlers: H,
    issuer: Arc<DevIssuer>,
    store: MatchStore,
    hub: Arc<ConnectionHub>,
    websocket_url: String,
    domain: String,
    demo: Demo,
}

/// The local stack's match-event stand-in and demo allocator, for the
/// development endpoints.
#[derive(Clone)]
pub struct Demo {
    pub events: Arc<EventBus>,
    /// The demo game server's `host:port`.
    pub game_server: String,
    /// Whether the demo allocator runs.
    pub allocator: bool,
}

/// API Gateway's own body limit for HTTP APIs.
const MAX_BODY: usize = 10 * 1024 * 1024;
/// Lifetime of development tokens.
const DEV_TOKEN_TTL: Duration = Duration::from_secs(12 * 3600);

pub fn router<H: HttpHandlers>(
    handlers: H,
    issuer: Arc<DevIssuer>,
    store: MatchStore,
    hub: Arc<ConnectionHub>,
    websocket_url: String,
    domain: String,
    demo: Demo,
) -> Router {
    let gateway = Arc::new(HttpGateway {
        handlers,
        issuer,
        store,
        hub,
        websocket_url,
        domain,
        demo,
    });
    Router::new()
        .route("/", get(|| async { Html(crate::DEMO_PAGE) }))
        .route(
            "/mm-client.js",
            get(|| async {
                let js = "text/javascript; charset=utf-8";
                ([(axum::http::header::CONTENT_TYPE, js)], crate::DEMO_CLIENT)
            }),
        )
        .route(
            "/play.js",
            get(|| async {
                let js = "text/javascript; charset=utf-8";
                ([(axum::http::header::CONTENT_TYPE, js)], crate::DEMO_PLAY)
            }),
        )
        .route("/operator", get(|| async { Html(crate::OPERATOR_PAGE) }))
        .route("/.well-known/jwks.json", get(jwks::<H>))
        .route("/dev/token", post(dev_token::<H>))
        .route("/dev/config", get(dev_config::<H>))
        .route("/dev/overview", get(dev_overview::<H>))
        .route("/dev/events", get(dev_events::<H>))
        .fallback(api::<H>)
        .layer(axum::extract::DefaultBodyLimit::max(MAX_BODY))
        .with_state(gateway)
}

async fn jwks<H: HttpHandlers>(State(gateway): State<Arc<HttpGateway<H>>>) -> Json<Value> {
    Json(gateway.issuer.jwks().clone())
}

/// What `POST /dev/token` takes.
const DEV_TOKEN_SHAPE: &str = r#"{"sub": "<player id>", "claims": {<extra claims>}}"#;

/// The `sub` and extra claims of a `POST /dev/token` body. Anything it would
/// not put in the token is refused rather than dropped, so a claim written
/// next to `sub` instead of inside `claims` is not silently missing.
fn dev_token_request(body: &[u8]) -> Result<(String, Map<String, Value>), String> {
    let Ok(Value::Object(mut request)) = serde_json::from_slice::<Value>(body) else {
        return Err(format!("body must be {DEV_TOKEN_SHAPE}"));
    };
    let claims = match request.remove("claims") {
        None => Map::new(),
        Some(Value::Object(claims)) => claims,
        Some(_) => {
            return Err(format!(
                "\"claims\" must be an object of extra claims: {DEV_TOKEN_SHAPE}"
            ))
        }
    };
    let sub = match request.remove("sub") {
        Some(Value::String(sub)) => sub,
        _ => return Err(format!("body must be {DEV_TOKEN_SHAPE}")),
    };
    if let Some(field) = request.keys().next() {
        return Err(format!(
            "unknown field {field:?}: extra claims go inside \"claims\", \
             e.g. {{\"sub\": {sub:?}, \"claims\": {{{field:?}: ...}}}}"
        ));
    }
    PlayerId::parse(&sub).map_err(|e| e.to_string())?;
    Ok((sub, claims))
}

async fn dev_token<H: HttpHandlers>(
    State(gateway): State<Arc<HttpGateway<H>>>,
    body: Bytes,
) -> Response {
    let (sub, extra) = match dev_token_request(&body) {
        Ok(request) => request,
        Err(message) => {
            return (StatusCode::BAD_REQUEST, Json(json!({ "message": message }))).into_response()
        }
    };
    match gateway.issuer.mint_with(&sub, DEV_TOKEN_TTL, &extra) {
        Ok(token) => {
            Json(json!({ "token": token, "expiresIn": DEV_TOKEN_TTL.as_secs() })).into_response()
        }
        Err(e) => (
            StatusCode::INTERNAL_SERVER_ERROR,
            Json(json!({"message": e.to_string()})),
        )
            .into_response(),
    }
}

async fn dev_config<H: HttpHandlers>(State(gateway): State<Arc<HttpGateway<H>>>) -> Json<Value> {
    let worlds: Vec<Value> = gateway
        .store
        .settings()
        .worlds
        .iter()
        .map(|w| {
            json!({
                "worldType": w.name,
                "teamSize": w.team_size,
                "teams": w.teams,
                "maxPartySize": w.max_party_size,
                "regions": w.regions.as_ref().map(|r| &r.names),
                // The page shows the rating field only where a rating counts.
                "rated": matches!(w.mode, shared::config::MatchMode::Rating(_)),
            })
        })
        .collect();
    Json(json!({
        "websocketUrl": gateway.websocket_url,
        "worlds": worlds,
        "heartbeatSeconds": gateway.store.settings().heartbeat_interval.as_secs(),
        "matchEvents": gateway.store.settings().match_events,
        "demoAllocator": gateway.demo.allocator,
        // With game servers a formed match holds its players (IN_MATCH).
        "gameServers": gateway.store.settings().server_scope.is_some(),
        // The operator page asks /dev/token for these.
        "adminReadScope": gateway.store.settings().admin.read,
        "adminActionScope": gateway.store.settings().admin.action,
        "gameServer": gateway.demo.game_server,
    }))
}

/// `GET /dev/events`: every entry the EventBridge stand-in accepted, in
/// order (`?since=N` skips the first N): what PutEvents carried (bus,
/// source, detail type, the detail as JSON, time) plus the id the stand-in
/// gave it and when it came.
async fn dev_events<H: HttpHandlers>(
    State(gateway): State<Arc<HttpGateway<H>>>,
    uri: Uri,
) -> Response {
    let since = uri
        .query()
        .unwrap_or_default()
        .split('&')
        .find_map(|pair| pair.strip_prefix("since="))
        .map(str::parse::<usize>);
    let since = match since {
        None => 0,
        Some(Ok(n)) => n,
        Some(Err(_)) => {
            return (
                StatusCode::BAD_REQUEST,
                Json(json!({"message": "since must be a whole number"})),
            )
                .into_response()
        }
    };
    let events = gateway.demo.events.received_since(since);
    Json(json!({
        "since": since,
        "count": since + events.len(),
        "events": events,
    }))
    .into_response()
}

/// Every world's queue and the latest matches, for the demo's overview.
async fn dev_overview<H: HttpHandlers>(State(gateway): State<Arc<HttpGateway<H>>>) -> Response {
    let mut worlds = Vec::new();
    for world in gateway.store.settings().worlds.iter() {
        match gateway.store.queue_status(world).await {
            Ok(status) => worlds.push(json!(status)),
            Err(e) => {
                return (
                    StatusCode::SERVICE_UNAVAILABLE,
                    Json(json!({"message": e.to_string()})),
                )
                    .into_response()
            }
        }
    }
    Json(json!({
        "worlds": worlds,
        "recentMatches": gateway.hub.recent_matches(),
        "openConnections": gateway.hub.open_connections(),
    }))
    .into_response()
}

fn api_gateway_message(status: StatusCode, message: &str) -> Response {
    (status, Json(json!({ "message": message }))).into_response()
}

async fn api<H: HttpHandlers>(
    State(gateway): State<Arc<HttpGateway<H>>>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let Some((route, path_parameters)) = resolve(&method, uri.path()) else {
        return api_gateway_message(StatusCode::NOT_FOUND, "Not Found");
    };
    // The JWT authorizer runs before the function; its failures never reach it.
    let token = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .map(|v| v.strip_prefix("Bearer ").unwrap_or(v).trim())
        .filter(|t| !t.is_empty());
    let claims = match token.map(|t| gateway.issuer.verify(t)) {
        Some(Ok(claims)) => claims,
        // API Gateway says why in `www-authenticate`, never in the body.
        refused => {
            let challenge = match refused {
                Some(Err(e)) => format!(
                    "Bearer scope=\"\" error=\"invalid_token\" error_description=\"{}\"",
                    e.to_string().replace(['"', '\\'], "'")
                ),
                _ => "Bearer".to_owned(),
            };
            let mut response = api_gateway_message(StatusCode::UNAUTHORIZED, "Unauthorized");
            if let Ok(value) = axum::http::HeaderValue::from_str(&challenge) {
                response.headers_mut().insert("www-authenticate", value);
            }
            return response;
        }
    };
    let event = http_api_event(
        route,
        &method,
        &uri,
        &headers,
        &body,
        path_parameters,
        &claims,
        &peer,
        &gateway.domain,
    );
    let request = match lambda_http::request::from_str(&event.to_string()) {
        Ok(r) => r,
        Err(e) => {
            tracing::error!(error = %e, "building the payload 2.0 event");
            return api_gateway_message(StatusCode::INTERNAL_SERVER_ERROR, "Internal Server Error");
        }
    };
    match gateway.handlers.invoke(route, request).await {
        Ok(response) => into_axum(response),
        Err(e) => {
            // A function error: API Gateway answers 500 with its own body.
            tracing::error!(error = %e, route = route.route_key(), "handler failed");
            api_gateway_message(StatusCode::INTERNAL_SERVER_ERROR, "Internal Server Error")
        }
    }
}

/// The payload format 2.0 event API Gateway would send for this request.
#[allow(clippy::too_many_arguments)]
fn http_api_event(
    route: Route,
    method: &Method,
    uri: &Uri,
    headers: &HeaderMap,
    body: &[u8],
    path_parameters: HashMap<String, String>,
    claims: &serde_json::Map<String, Value>,
    peer: &SocketAddr,
    domain: &str,
) -> Value {
    let mut header_map: HashMap<String, String> = HashMap::new();
    for (name, value) in headers {
        // API Gateway sets these itself; a client's own values never reach
        // the function (and a malformed one would break the event's URL).
        if matches!(
            name.as_str(),
            "host" | "x-forwarded-for" | "x-forwarded-proto" | "x-forwarded-port"
        ) {
            continue;
        }
        if let Ok(v) = value.to_str() {
            header_map
                .entry(name.as_str().to_owned())
                .and_modify(|existing| {
                    existing.push(',');
                    existing.push_str(v);
                })
                .or_insert_with(|| v.to_owned());
        }
    }
    header_map.insert("host".into(), domain.to_owned());
    header_map.insert("x-forwarded-for".into(), peer.ip().to_string());
    header_map.insert("x-forwarded-proto".into(), "http".into());
    if let Some((_, port)) = domain.rsplit_once(':') {
        header_map.insert("x-forwarded-port".into(), port.to_owned());
    }
    // API Gateway passes JWT claims as strings.
    let claims: HashMap<&String, String> = claims
        .iter()
        .map(|(k, v)| (k, v.as_str().map_or_else(|| v.to_string(), str::to_owned)))
        .collect();
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis());
    let query = uri.query().unwrap_or_default();
    let (body, base64) = match std::str::from_utf8(body) {
        Ok(text) => (text.to_owned(), false),
        Err(_) => {
            use base64::Engine;
            (base64::engine::general_purpose::STANDARD.encode(body), true)
        }
    };
    let mut event = json!({
        "version": "2.0",
        "routeKey": route.route_key(),
        "rawPath": uri.path(),
        "rawQueryString": query,
        "headers": header_map,
        "requestContext": {
            "accountId": "000000000000",
            "apiId": "local",
            "authorizer": { "jwt": { "claims": claims, "scopes": null } },
            "domainName": domain,
            "domainPrefix": "local",
            "http": {
                "method": method.as_str(),
                "path": uri.path(),
                "protocol": "HTTP/1.1",
                "sourceIp": peer.ip().to_string(),
                "userAgent": headers.get("user-agent").and_then(|v| v.to_str().ok()).unwrap_or_default(),
            },
            "requestId": format!("{:016x}", rand::random::<u64>()),
            "routeKey": route.route_key(),
            "stage": "$default",
            "time": "",
            "timeEpoch": now,
        },
        "isBase64Encoded": base64,
    });
    if !body.is_empty() {
        event["body"] = Value::String(body);
    }
    if !path_parameters.is_empty() {
        event["pathParameters"] = json!(path_parameters);
    }
    if !query.is_empty() {
        let params: HashMap<String, String> = query
            .split('&')
            .filter_map(|pair| pair.split_once('=').or(Some((pair, ""))))
            .map(|(k, v)| (percent_decode(k), percent_decode(v)))
            .collect();
        event["queryStringParameters"] = json!(params);
    }
    event
}

fn into_axum(response: lambda_http::Response<lambda_http::Body>) -> Response {
    let (parts, body) = response.into_parts();
    let body = match body {
        lambda_http::Body::Empty => Body::empty(),
        lambda_http::Body::Text(t) => Body::from(t),
        lambda_http::Body::Binary(b) => Body::from(b),
        _ => Body::empty(),
    };
    Response::from_parts(parts, body)
}

#[cfg(test)]
mod tests;
