//! The HTTP API: the one place that turns requests into store calls and
//! domain outcomes and errors into responses. The Lambda functions and the
//! local stack call exactly these functions.
//!
//! Every response is JSON in the envelope
//! `{"resultCode": "200", "msg": "...", "data": {...}}` with the HTTP status
//! equal to `resultCode`; errors carry a stable code in `data.error`.
//! See `docs/http-api.md`.

use futures_util::future::join_all;
use lambda_http::aws_lambda_events::apigw::{
    ApiGatewayRequestAuthorizer, ApiGatewayRequestAuthorizerJwtDescription,
    ApiGatewayV2httpRequestContext,
};
use lambda_http::http::header::{HeaderValue, ALLOW, CACHE_CONTROL, CONTENT_TYPE};
use lambda_http::http::{Method, StatusCode};
use lambda_http::request::RequestContext;
use lambda_http::{Body, Error, Request, RequestExt, Response};
use serde::de::DeserializeOwned;
use serde::Deserialize;
use serde_json::{Map, Value};
use tracing::field::Empty;

use crate::config::World;
use crate::delivery::{deliver_now, Pusher};
use crate::domain::{
    JoinOutcome, LeaveOutcome, MatchRecord, PlayerId, PlayerStatus, QueuePosition, ServerMessage,
    TicketData, WorldName,
};
use crate::error::StoreError;
use crate::store::{match_notification_ids, MatchStore};

/// Largest request body accepted, in bytes (ticket data alone is capped at
/// 4 KiB; the rest is room for the envelope around it).
pub const MAX_BODY_BYTES: usize = 8 * 1024;

pub const JOIN_PATH: &str = "/v1/matching/join";
pub const LEAVE_PATH: &str = "/v1/matching/leave";
pub const MY_STATUS_PATH: &str = "/v1/matching/my-status";
/// Followed by the world name: `/v1/matching/queue-status/{worldType}`.
pub const QUEUE_STATUS_PREFIX: &str = "/v1/matching/queue-status/";

/// The routes of the API.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Route {
    Join,
    Leave,
    QueueStatus,
    MyStatus,
}

impl Route {
    /// The route a request's path belongs to (any method), if any.
    pub fn of(req: &Request) -> Option<Self> {
        let path = request_path(req);
        match path {
            JOIN_PATH => Some(Route::Join),
            LEAVE_PATH => Some(Route::Leave),
            MY_STATUS_PATH => Some(Route::MyStatus),
            _ => path
                .strip_prefix(QUEUE_STATUS_PREFIX)
                .filter(|world| !world.is_empty() && !world.contains('/'))
                .map(|_| Route::QueueStatus),
        }
    }

    /// The one method the route answers.
    pub fn method(self) -> Method {
        match self {
            Route::Join | Route::Leave => Method::POST,
            Route::QueueStatus | Route::MyStatus => Method::GET,
        }
    }

    fn method_name(self) -> &'static str {
        match self {
            Route::Join | Route::Leave => "POST",
            Route::QueueStatus | Route::MyStatus => "GET",
        }
    }
}

/// The request path without the stage. API Gateway puts a named stage in
/// front of `rawPath` (`/prod/v1/...`); the `$default` stage adds nothing.
pub fn request_path(req: &Request) -> &str {
    let raw = req.raw_http_path();
    let path = if raw.is_empty() {
        req.uri().path()
    } else {
        raw
    };
    let stage = match req.request_context_ref() {
        Some(RequestContext::ApiGatewayV2(ctx)) => ctx.stage.as_deref(),
        _ => None,
    };
    match stage {
        Some(stage) if stage != "$default" && !stage.is_empty() => path
            .strip_prefix('/')
            .and_then(|p| p.strip_prefix(stage))
            .filter(|p| p.starts_with('/'))
            .unwrap_or(path),
        _ => path,
    }
}

/// Stable, machine-readable error codes (`data.error`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorCode {
    Unauthorized,
    InvalidRequest,
    UnknownWorld,
    AlreadyQueued,
    NotQueued,
    PayloadTooLarge,
    UnsupportedMediaType,
    MethodNotAllowed,
    NotFound,
    QueueFull,
    RedisUnavailable,
}

impl ErrorCode {
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::Unauthorized => "UNAUTHORIZED",
            ErrorCode::InvalidRequest => "INVALID_REQUEST",
            ErrorCode::UnknownWorld => "UNKNOWN_WORLD",
            ErrorCode::AlreadyQueued => "ALREADY_QUEUED",
            ErrorCode::NotQueued => "NOT_QUEUED",
            ErrorCode::PayloadTooLarge => "PAYLOAD_TOO_LARGE",
            ErrorCode::UnsupportedMediaType => "UNSUPPORTED_MEDIA_TYPE",
            ErrorCode::MethodNotAllowed => "METHOD_NOT_ALLOWED",
            ErrorCode::NotFound => "NOT_FOUND",
            ErrorCode::QueueFull => "QUEUE_FULL",
            ErrorCode::RedisUnavailable => "REDIS_UNAVAILABLE",
        }
    }

    pub fn status(self) -> StatusCode {
        match self {
            ErrorCode::Unauthorized => StatusCode::UNAUTHORIZED,
            ErrorCode::InvalidRequest => StatusCode::BAD_REQUEST,
            ErrorCode::UnknownWorld | ErrorCode::NotQueued | ErrorCode::NotFound => {
                StatusCode::NOT_FOUND
            }
            ErrorCode::AlreadyQueued => StatusCode::CONFLICT,
            ErrorCode::PayloadTooLarge => StatusCode::PAYLOAD_TOO_LARGE,
            ErrorCode::UnsupportedMediaType => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            ErrorCode::MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
            ErrorCode::QueueFull | ErrorCode::RedisUnavailable => StatusCode::SERVICE_UNAVAILABLE,
        }
    }
}

/// An error answer: a code, a human message and details for `data`.
#[derive(Debug, Clone, PartialEq)]
pub struct ApiError {
    pub code: ErrorCode,
    pub msg: String,
    pub details: Map<String, Value>,
}

impl ApiError {
    pub fn new(code: ErrorCode, msg: impl Into<String>) -> Self {
        Self {
            code,
            msg: msg.into(),
            details: Map::new(),
        }
    }

    /// Adds a detail to `data`.
    pub fn with(mut self, key: &str, value: impl Into<Value>) -> Self {
        self.details.insert(key.to_owned(), value.into());
        self
    }

    pub fn into_response(self) -> Response<Body> {
        let mut data = Map::new();
        data.insert("error".into(), self.code.as_str().into());
        data.extend(self.details);
        envelope(self.code.status(), &self.msg, data)
    }
}

/// Builds an enveloped JSON response.
pub fn envelope(status: StatusCode, msg: &str, data: Map<String, Value>) -> Response<Body> {
    let mut body = Map::new();
    body.insert("resultCode".into(), status.as_u16().to_string().into());
    body.insert("msg".into(), msg.into());
    body.insert("data".into(), Value::Object(data));
    let mut resp = Response::new(Body::from(Value::Object(body).to_string()));
    *resp.status_mut() = status;
    let headers = resp.headers_mut();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    // Answers are per caller and change with every queue operation.
    headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    resp
}

fn ok(msg: &str, data: Map<String, Value>) -> Response<Body> {
    envelope(StatusCode::OK, msg, data)
}

/// 404 for a path no function serves.
pub fn not_found(req: &Request) -> Response<Body> {
    let path = request_path(req);
    ApiError::new(ErrorCode::NotFound, format!("no route for {path}"))
        .with("path", path)
        .into_response()
}

fn method_not_allowed(route: Route, method: &Method) -> Response<Body> {
    let allowed = route.method_name();
    let mut resp = ApiError::new(
        ErrorCode::MethodNotAllowed,
        format!("{method} is not allowed here; use {allowed}"),
    )
    .with("allowed", vec![allowed])
    .into_response();
    resp.headers_mut()
        .insert(ALLOW, HeaderValue::from_static(allowed));
    resp
}

/// Why a handler did not produce a success response.
enum Failure {
    /// Answered with an error envelope.
    Api(ApiError),
    /// Answered with a ready response (405, 404); boxed, it is large.
    Response(Box<Response<Body>>),
    /// Unexpected; the Lambda runtime turns it into a 500.
    Internal(Error),
}

impl From<ApiError> for Failure {
    fn from(e: ApiError) -> Self {
        Failure::Api(e)
    }
}

fn store_failure(e: StoreError) -> Failure {
    if e.is_unavailable() {
        tracing::warn!(error = %e, "Redis unavailable");
        Failure::Api(ApiError::new(
            ErrorCode::RedisUnavailable,
            "the matchmaking service is temporarily unavailable; retry in a few seconds",
        ))
    } else {
        tracing::error!(error = %e, "unexpected store error");
        Failure::Internal(Box::new(e))
    }
}

fn finish(result: Result<Response<Body>, Failure>) -> Result<Response<Body>, Error> {
    match result {
        Ok(resp) => Ok(resp),
        Err(Failure::Api(e)) => {
            tracing::info!(code = e.code.as_str(), msg = %e.msg, "request refused");
            Ok(e.into_response())
        }
        Err(Failure::Response(resp)) => Ok(*resp),
        Err(Failure::Internal(e)) => Err(e),
    }
}

fn check_method(req: &Request, route: Route) -> Result<(), Failure> {
    if req.method() == route.method() {
        Ok(())
    } else {
        Err(Failure::Response(Box::new(method_not_allowed(
            route,
            req.method(),
        ))))
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
fn check_content_type(req: &Request) -> Result<(), ApiError> {
    let Some(value) = req.headers().get(CONTENT_TYPE) else {
        return Ok(());
    };
    let refuse = || {
        let shown = String::from_utf8_lossy(value.as_bytes()).into_owned();
        ApiError::new(
            ErrorCode::UnsupportedMediaType,
            format!("content-type {shown:?} is not supported; send application/json"),
        )
        .with("contentType", shown)
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
/// [`MAX_BODY_BYTES`], other media types, invalid UTF-8 and any JSON that
/// does not fit `T` exactly.
fn json_body<T: DeserializeOwned>(req: &Request) -> Result<T, ApiError> {
    check_content_type(req)?;
    let bytes: &[u8] = req.body().as_ref();
    if bytes.len() > MAX_BODY_BYTES {
        return Err(ApiError::new(
            ErrorCode::PayloadTooLarge,
            format!(
                "request body is {} bytes; at most {MAX_BODY_BYTES} are allowed",
                bytes.len()
            ),
        )
        .with("limitBytes", MAX_BODY_BYTES as u64)
        .with("sizeBytes", bytes.len() as u64));
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
    serde_json::from_value(value).map_err(invalid)
}

fn invalid_field(field: &str, msg: impl std::fmt::Display) -> ApiError {
    ApiError::new(ErrorCode::InvalidRequest, msg.to_string()).with("field", field)
}

/// The configured world called `name`: 400 for a malformed name, 404 for a
/// well-formed one that is not configured.
fn configured_world<'a>(store: &'a MatchStore, name: &str) -> Result<&'a World, ApiError> {
    let name = WorldName::parse(name).map_err(|e| invalid_field("worldType", e))?;
    let worlds = &store.settings().worlds;
    worlds.get(name.as_str()).ok_or_else(|| {
        let configured: Vec<&str> = worlds.iter().map(|w| w.name.as_str()).collect();
        ApiError::new(
            ErrorCode::UnknownWorld,
            format!(
                "world {name} is not configured; known worlds: {}",
                configured.join(", ")
            ),
        )
        .with("worldType", name.as_str())
        .with("worlds", configured)
    })
}

fn position_fields(q: &QueuePosition) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("worldType".into(), q.world_type.as_str().into());
    m.insert("position".into(), q.position.into());
    m.insert("queueSize".into(), q.queue_size.into());
    m.insert(
        "estimatedWaitSeconds".into(),
        q.estimated_wait_seconds.into(),
    );
    m
}

fn status_data(status: &str, mut fields: Map<String, Value>) -> Map<String, Value> {
    fields.insert("status".into(), status.into());
    fields
}

fn matched_data(record: &MatchRecord) -> Result<Map<String, Value>, Failure> {
    let value = serde_json::to_value(record).map_err(|e| Failure::Internal(Box::new(e)))?;
    let mut m = Map::new();
    m.insert("match".into(), value);
    Ok(status_data("MATCHED", m))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct JoinBody {
    world_type: String,
    /// Optional ticket data; `null` means none.
    #[serde(default)]
    data: Option<Value>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct LeaveBody {
    world_type: String,
}

/// `POST /v1/matching/join`: queue the caller, or match them at once. The
/// caller's WebSocket connections are told (QUEUED / MATCH_FOUND) before the
/// answer, best effort: the outbox retries MATCH_FOUND.
#[tracing::instrument(name = "http_join", skip_all, fields(player = Empty, world = Empty))]
pub async fn join<P: Pusher>(
    store: &MatchStore,
    pusher: &P,
    req: Request,
) -> Result<Response<Body>, Error> {
    finish(join_inner(store, pusher, &req).await)
}

async fn join_inner<P: Pusher>(
    store: &MatchStore,
    pusher: &P,
    req: &Request,
) -> Result<Response<Body>, Failure> {
    check_method(req, Route::Join)?;
    let player = caller(req)?;
    tracing::Span::current().record("player", player.as_str());
    let body: JoinBody = json_body(req)?;
    let world = configured_world(store, &body.world_type)?;
    tracing::Span::current().record("world", world.name.as_str());
    let data = body
        .data
        .as_ref()
        .map(TicketData::from_value)
        .transpose()
        .map_err(|e| invalid_field("data", e))?;

    match store
        .join(world, &player, data.as_ref())
        .await
        .map_err(store_failure)?
    {
        JoinOutcome::Queued(q) => {
            push_queued(store, pusher, &player, &q).await;
            let msg = format!(
                "queued in {} at position {} of {}",
                q.world_type, q.position, q.queue_size
            );
            Ok(ok(&msg, status_data("QUEUED", position_fields(&q))))
        }
        JoinOutcome::Matched { record, formed } => {
            let ids: Vec<String> = formed.iter().flat_map(match_notification_ids).collect();
            match deliver_now(store, pusher, &ids).await {
                Ok(report) => tracing::debug!(?report, "MATCH_FOUND pushed"),
                // The notifications stay in the outbox; the matcher retries.
                Err(e) => {
                    tracing::warn!(error = %e, "MATCH_FOUND push failed; left to the matcher")
                }
            }
            let msg = format!("match {} found in {}", record.match_id, record.world_type);
            Ok(ok(&msg, matched_data(&record)?))
        }
        JoinOutcome::AlreadyQueued(q) => {
            let mut e = ApiError::new(
                ErrorCode::AlreadyQueued,
                format!(
                    "already queued in {} at position {} of {}; leave that queue first",
                    q.world_type, q.position, q.queue_size
                ),
            );
            e.details = position_fields(&q);
            Err(e.into())
        }
        JoinOutcome::QueueFull {
            world_type,
            queue_size,
        } => Err(ApiError::new(
            ErrorCode::QueueFull,
            format!("the {world_type} queue is full ({queue_size} waiting); try again later"),
        )
        .with("worldType", world_type)
        .with("queueSize", queue_size)
        .into()),
    }
}

/// Tells the player's connections they are queued. Failures are only logged:
/// the join itself succeeded and the player can poll my-status.
async fn push_queued<P: Pusher>(
    store: &MatchStore,
    pusher: &P,
    player: &PlayerId,
    q: &QueuePosition,
) {
    let connections = match store.connections_of(player).await {
        Ok(c) => c,
        Err(e) => {
            tracing::warn!(error = %e, "cannot look up connections for the QUEUED push");
            return;
        }
    };
    if connections.is_empty() {
        return;
    }
    let payload = ServerMessage::Queued {
        world_type: q.world_type.clone(),
        position: q.position,
        queue_size: q.queue_size,
        estimated_wait_seconds: q.estimated_wait_seconds,
    }
    .to_json();
    let results = join_all(
        connections
            .iter()
            .map(|c| pusher.push(c, payload.as_bytes())),
    )
    .await;
    for (connection, result) in connections.iter().zip(results) {
        if let Err(e) = result {
            tracing::info!(%connection, error = %e, "QUEUED push failed");
        }
    }
}

/// `POST /v1/matching/leave`: remove the caller's ticket from a world.
#[tracing::instrument(name = "http_leave", skip_all, fields(player = Empty, world = Empty))]
pub async fn leave(store: &MatchStore, req: Request) -> Result<Response<Body>, Error> {
    finish(leave_inner(store, &req).await)
}

async fn leave_inner(store: &MatchStore, req: &Request) -> Result<Response<Body>, Failure> {
    check_method(req, Route::Leave)?;
    let player = caller(req)?;
    tracing::Span::current().record("player", player.as_str());
    let body: LeaveBody = json_body(req)?;
    let world = configured_world(store, &body.world_type)?;
    tracing::Span::current().record("world", world.name.as_str());
    match store.leave(world, &player).await.map_err(store_failure)? {
        LeaveOutcome::Left {
            previous_position,
            remaining_queue_size,
        } => {
            let mut data = Map::new();
            data.insert("worldType".into(), world.name.as_str().into());
            data.insert("previousPosition".into(), previous_position.into());
            data.insert("remainingQueueSize".into(), remaining_queue_size.into());
            Ok(ok(&format!("left the {} queue", world.name), data))
        }
        LeaveOutcome::NotQueued { queued_in } => {
            let msg = match &queued_in {
                Some(other) => format!("not queued in {}; queued in {other}", world.name),
                None => format!("not queued in {}", world.name),
            };
            let mut e =
                ApiError::new(ErrorCode::NotQueued, msg).with("worldType", world.name.as_str());
            if let Some(other) = queued_in {
                e = e.with("queuedIn", other);
            }
            Err(e.into())
        }
    }
}

/// The `{worldType}` of a queue-status request: the path parameter, or the
/// last path segment when the request did not come with path parameters.
fn queue_status_world(req: &Request) -> Option<String> {
    if let Some(world) = req.path_parameters_ref().and_then(|p| p.first("worldType")) {
        return Some(world.to_owned());
    }
    request_path(req)
        .strip_prefix(QUEUE_STATUS_PREFIX)
        .filter(|w| !w.is_empty() && !w.contains('/'))
        .map(str::to_owned)
}

/// `GET /v1/matching/queue-status/{worldType}`: a world's queue depth.
#[tracing::instrument(name = "http_queue_status", skip_all, fields(world = Empty))]
pub async fn queue_status(store: &MatchStore, req: Request) -> Result<Response<Body>, Error> {
    finish(queue_status_inner(store, &req).await)
}

async fn queue_status_inner(store: &MatchStore, req: &Request) -> Result<Response<Body>, Failure> {
    check_method(req, Route::QueueStatus)?;
    caller(req)?;
    let Some(name) = queue_status_world(req) else {
        return Err(Failure::Response(Box::new(not_found(req))));
    };
    let world = configured_world(store, &name)?;
    tracing::Span::current().record("world", world.name.as_str());
    let status = store.queue_status(world).await.map_err(store_failure)?;
    let mut data = Map::new();
    data.insert("worldType".into(), status.world_type.as_str().into());
    data.insert("waiting".into(), status.waiting.into());
    data.insert("teamSize".into(), status.team_size.into());
    data.insert(
        "estimatedWaitSeconds".into(),
        status.estimated_wait_seconds.into(),
    );
    data.insert("oldestWaitMs".into(), status.oldest_wait_ms.into());
    let msg = format!("{} waiting in {}", status.waiting, status.world_type);
    Ok(ok(&msg, data))
}

/// `GET /v1/matching/my-status`: whether the caller is idle, queued or matched.
#[tracing::instrument(name = "http_my_status", skip_all, fields(player = Empty))]
pub async fn my_status(store: &MatchStore, req: Request) -> Result<Response<Body>, Error> {
    finish(my_status_inner(store, &req).await)
}

async fn my_status_inner(store: &MatchStore, req: &Request) -> Result<Response<Body>, Failure> {
    check_method(req, Route::MyStatus)?;
    let player = caller(req)?;
    tracing::Span::current().record("player", player.as_str());
    match store.player_status(&player).await.map_err(store_failure)? {
        PlayerStatus::Idle => Ok(ok("not queued", status_data("IDLE", Map::new()))),
        PlayerStatus::Queued(q) => {
            let msg = format!(
                "queued in {} at position {} of {}",
                q.world_type, q.position, q.queue_size
            );
            Ok(ok(&msg, status_data("QUEUED", position_fields(&q))))
        }
        PlayerStatus::Matched(record) => {
            let msg = format!("matched in {} ({})", record.world_type, record.match_id);
            Ok(ok(&msg, matched_data(&record)?))
        }
    }
}

/// A response to an API Gateway WebSocket route event (`$connect`,
/// `$disconnect`): for `$connect`, anything but 2xx refuses the connection.
pub fn websocket_response(
    status: i64,
    body: &str,
) -> lambda_http::aws_lambda_events::apigw::ApiGatewayProxyResponse {
    let mut response = lambda_http::aws_lambda_events::apigw::ApiGatewayProxyResponse::default();
    response.status_code = status;
    response.body = Some(lambda_http::aws_lambda_events::encodings::Body::Text(
        body.to_owned(),
    ));
    response
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn routes_are_found_by_path_and_stage_is_ignored() {
        let at = |uri: &str| Route::of(&request(Method::GET, uri, None, ""));
        assert_eq!(at("/v1/matching/join"), Some(Route::Join));
        assert_eq!(at("/v1/matching/leave"), Some(Route::Leave));
        assert_eq!(at("/v1/matching/my-status"), Some(Route::MyStatus));
        assert_eq!(
            at("/v1/matching/queue-status/world1"),
            Some(Route::QueueStatus)
        );
        assert_eq!(at("/v1/matching/queue-status/"), None);
        assert_eq!(at("/v1/matching/queue-status/a/b"), None);
        assert_eq!(at("/v1/matching/joins"), None);

        let mut ctx = ApiGatewayV2httpRequestContext::default();
        ctx.stage = Some("prod".into());
        let mut req = request(Method::GET, "/prod/v1/matching/my-status", None, "");
        req.extensions_mut()
            .insert(RequestContext::ApiGatewayV2(ctx));
        assert_eq!(Route::of(&req), Some(Route::MyStatus));
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
    fn identity_comes_only_from_the_jwt_sub_claim() {
        let req = request(Method::GET, MY_STATUS_PATH, None, "");
        assert_eq!(caller(&req).unwrap_err().code, ErrorCode::Unauthorized);
        let req = with_caller(req, "player-1");
        assert_eq!(caller(&req).unwrap().as_str(), "player-1");
        let req = with_caller(req, "");
        assert_eq!(caller(&req).unwrap_err().code, ErrorCode::Unauthorized);
    }

    #[test]
    fn every_error_code_maps_to_its_status() {
        let codes = [
            (ErrorCode::Unauthorized, 401, "UNAUTHORIZED"),
            (ErrorCode::InvalidRequest, 400, "INVALID_REQUEST"),
            (ErrorCode::UnknownWorld, 404, "UNKNOWN_WORLD"),
            (ErrorCode::AlreadyQueued, 409, "ALREADY_QUEUED"),
            (ErrorCode::NotQueued, 404, "NOT_QUEUED"),
            (ErrorCode::PayloadTooLarge, 413, "PAYLOAD_TOO_LARGE"),
            (
                ErrorCode::UnsupportedMediaType,
                415,
                "UNSUPPORTED_MEDIA_TYPE",
            ),
            (ErrorCode::MethodNotAllowed, 405, "METHOD_NOT_ALLOWED"),
            (ErrorCode::NotFound, 404, "NOT_FOUND"),
            (ErrorCode::QueueFull, 503, "QUEUE_FULL"),
            (ErrorCode::RedisUnavailable, 503, "REDIS_UNAVAILABLE"),
        ];
        for (code, status, name) in codes {
            let resp = ApiError::new(code, "m").with("k", 1).into_response();
            assert_eq!(resp.status().as_u16(), status);
            let body: Value = serde_json::from_slice(resp.body().as_ref()).unwrap();
            assert_eq!(body["resultCode"], status.to_string());
            assert_eq!(body["data"]["error"], name);
            assert_eq!(body["data"]["k"], 1);
            assert_eq!(resp.headers()[CONTENT_TYPE], "application/json");
        }
    }
}
