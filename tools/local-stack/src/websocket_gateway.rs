//! API Gateway WebSocket API emulation: a real WebSocket server that turns
//! each connect, client message and disconnect into the `$connect`,
//! `$default` and `$disconnect` proxy events the `ws-connect` /
//! `ws-disconnect` handlers receive in AWS, refuses the upgrade when
//! `$connect` answers non-2xx, sends `$default`'s answer back as the route
//! response, closes connections idle longer than API Gateway's idle timeout,
//! and serves the `@connections` management API so the real
//! `aws-sdk-apigatewaymanagement` client, pointed at it, delivers pushes to
//! the open sockets. Like API Gateway, it answers 410 for a connection whose
//! `$connect` has not completed yet.

use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use aws_lambda_events::apigw::{ApiGatewayProxyResponse, ApiGatewayWebsocketProxyRequest};
use axum::body::Bytes;
use axum::extract::ws::{CloseFrame, Message, WebSocket, WebSocketUpgrade};
use axum::extract::{ConnectInfo, Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{any, get};
use axum::{Json, Router};
use futures_util::{SinkExt, StreamExt};
use serde_json::{json, Value};
use tokio::sync::mpsc;

/// API Gateway's idle timeout for WebSocket connections.
pub const API_GATEWAY_IDLE_TIMEOUT: Duration = Duration::from_secs(600);

/// The Lambda handlers behind the WebSocket API's routes.
pub trait WebsocketHandlers: Send + Sync + 'static {
    fn connect(
        &self,
        event: ApiGatewayWebsocketProxyRequest,
    ) -> impl Future<Output = ApiGatewayProxyResponse> + Send;
    /// `$default`: a client message; the answer's body goes back to the
    /// client (the route response).
    fn message(
        &self,
        event: ApiGatewayWebsocketProxyRequest,
    ) -> impl Future<Output = ApiGatewayProxyResponse> + Send;
    fn disconnect(
        &self,
        event: ApiGatewayWebsocketProxyRequest,
    ) -> impl Future<Output = ApiGatewayProxyResponse> + Send;
}

struct OpenConnection {
    outbound: mpsc::UnboundedSender<Message>,
    connected_at_ms: u64,
    last_active_ms: u64,
    source_ip: String,
    user_agent: String,
}

/// Most recent matches pushed, for the demo page's overview.
const RECENT_MATCHES: usize = 20;

/// The open sockets by connection id, plus what the overview shows.
#[derive(Default)]
pub struct ConnectionHub {
    open: Mutex<HashMap<String, OpenConnection>>,
    recent_matches: Mutex<VecDeque<Value>>,
}

impl ConnectionHub {
    pub fn open_connections(&self) -> usize {
        self.open.lock().map_or(0, |m| m.len())
    }

    /// Matches seen in MATCH_FOUND pushes, newest first, one entry per match.
    pub fn recent_matches(&self) -> Vec<Value> {
        self.recent_matches
            .lock()
            .map_or_else(|_| Vec::new(), |r| r.iter().cloned().collect())
    }

    fn note_push(&self, payload: &str) {
        let Ok(message) = serde_json::from_str::<Value>(payload) else {
            return;
        };
        if message["type"] != "MATCH_FOUND" {
            return;
        }
        if let Ok(mut recent) = self.recent_matches.lock() {
            if recent.iter().any(|m| m["matchId"] == message["matchId"]) {
                return;
            }
            recent.push_front(message);
            recent.truncate(RECENT_MATCHES);
        }
    }
}

/// Timing of the emulated API Gateway.
#[derive(Debug, Clone, Copy)]
pub struct GatewayTiming {
    /// Close a connection after this long without a client message.
    pub idle_timeout: Duration,
    /// How long after `$connect` answers 200 the connection is established
    /// (API Gateway answers 410 to pushes until then).
    pub connect_latency: Duration,
}

struct Gateway<H> {
    handlers: H,
    hub: Arc<ConnectionHub>,
    domain: String,
    timing: GatewayTiming,
}

/// Builds the WebSocket + `@connections` router.
pub fn router<H: WebsocketHandlers>(
    handlers: H,
    hub: Arc<ConnectionHub>,
    domain: String,
    timing: GatewayTiming,
) -> Router {
    let gateway = Arc::new(Gateway {
        handlers,
        hub,
        domain,
        timing,
    });
    Router::new()
        .route("/", get(upgrade::<H>))
        .route("/@connections/{id}", any(management::<H>))
        .with_state(gateway)
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(0))
}

/// A connection id shaped like API Gateway's (12 random bytes, base64).
fn new_connection_id() -> String {
    use base64::Engine;
    let bytes: [u8; 12] = rand::random();
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// The proxy event API Gateway sends for `$connect`, `$default` (with the
/// message as `body`) or `$disconnect`.
#[allow(clippy::too_many_arguments)]
fn websocket_event(
    route: &str,
    connection_id: &str,
    connected_at_ms: u64,
    domain: &str,
    source_ip: &str,
    headers: &HeaderMap,
    query: Option<&HashMap<String, String>>,
    body: Option<&str>,
) -> Result<ApiGatewayWebsocketProxyRequest, serde_json::Error> {
    let header_map: serde_json::Map<String, Value> = headers
        .iter()
        .filter_map(|(k, v)| {
            v.to_str()
                .ok()
                .map(|v| (k.as_str().to_owned(), Value::from(v)))
        })
        .collect();
    let (event_type, extra) = match route {
        "$connect" => ("CONNECT", json!({})),
        "$disconnect" => (
            "DISCONNECT",
            json!({ "disconnectStatusCode": 1005, "disconnectReason": "Client-side close frame" }),
        ),
        _ => (
            "MESSAGE",
            json!({ "messageId": format!("{:016x}", rand::random::<u64>()) }),
        ),
    };
    let now = now_ms();
    let mut context = json!({
        "routeKey": route,
        "eventType": event_type,
        "extendedRequestId": format!("{:016x}", rand::random::<u64>()),
        "requestTime": httpdate(now),
        "messageDirection": "IN",
        "stage": "local",
        "connectedAt": connected_at_ms,
        "requestTimeEpoch": now,
        "identity": { "sourceIp": source_ip, "userAgent": headers.get("user-agent").and_then(|v| v.to_str().ok()) },
        "requestId": format!("{:016x}", rand::random::<u64>()),
        "domainName": domain,
        "connectionId": connection_id,
        "apiId": "local",
    });
    if let (Some(ctx), Some(extra)) = (context.as_object_mut(), extra.as_object()) {
        ctx.extend(extra.clone());
    }
    let mut event = json!({
        "headers": header_map,
        "isBase64Encoded": false,
        "requestContext": context,
    });
    if let Some(body) = body {
        // Message events carry no handshake headers, only the body.
        event = json!({ "body": body, "isBase64Encoded": false, "requestContext": event["requestContext"].take() });
    }
    if let Some(q) = query.filter(|q| !q.is_empty()) {
        event["queryStringParameters"] = json!(q);
        event["multiValueQueryStringParameters"] =
            Value::Object(q.iter().map(|(k, v)| (k.clone(), json!([v]))).collect());
    }
    serde_json::from_value(event)
}

/// `requestTime` in API Gateway's format, e.g. `09/Apr/2024:12:34:56 +0000`.
fn httpdate(ms: u64) -> String {
    let secs = ms / 1000;
    let days = secs / 86_400;
    let (h, m, s) = ((secs % 86_400) / 3600, (secs % 3600) / 60, secs % 60);
    // Civil-from-days (Howard Hinnant's algorithm).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let month_name = MONTHS[usize::try_from(month - 1).unwrap_or(0).min(11)];
    format!("{day:02}/{month_name}/{year}:{h:02}:{m:02}:{s:02} +0000")
}

async fn upgrade<H: WebsocketHandlers>(
    State(gateway): State<Arc<Gateway<H>>>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    Query(query): Query<HashMap<String, String>>,
    headers: HeaderMap,
    ws: WebSocketUpgrade,
) -> Response {
    let connection_id = new_connection_id();
    let connected_at = now_ms();
    let source_ip = peer.ip().to_string();
    let event = match websocket_event(
        "$connect",
        &connection_id,
        connected_at,
        &gateway.domain,
        &source_ip,
        &headers,
        Some(&query),
        None,
    ) {
        Ok(event) => event,
        Err(e) => {
            return (
                StatusCode::INTERNAL_SERVER_ERROR,
                format!("building $connect event: {e}"),
            )
                .into_response()
        }
    };
    let answer = gateway.handlers.connect(event).await;
    if !(200..300).contains(&answer.status_code) {
        // API Gateway refuses the upgrade with the $connect route's status.
        let status = u16::try_from(answer.status_code)
            .ok()
            .and_then(|s| StatusCode::from_u16(s).ok())
            .unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        return (status, body_text(&answer)).into_response();
    }
    // The connection is registered but not established yet: pushes to it
    // answer 410 meanwhile, as on API Gateway.
    tokio::time::sleep(gateway.timing.connect_latency).await;
    let user_agent = headers
        .get("user-agent")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    ws.on_upgrade(move |socket| async move {
        serve_socket(
            gateway,
            socket,
            connection_id,
            connected_at,
            source_ip,
            user_agent,
            headers,
        )
        .await;
    })
}

fn body_text(answer: &ApiGatewayProxyResponse) -> String {
    match &answer.body {
        Some(aws_lambda_events::encodings::Body::Text(t)) => t.clone(),
        Some(aws_lambda_events::encodings::Body::Binary(b)) => {
            String::from_utf8_lossy(b).into_owned()
        }
        _ => String::new(),
    }
}

async fn serve_socket<H: WebsocketHandlers>(
    gateway: Arc<Gateway<H>>,
    socket: WebSocket,
    connection_id: String,
    connected_at_ms: u64,
    source_ip: String,
    user_agent: String,
    headers: HeaderMap,
) {
    let (mut sink, mut stream) = socket.split();
    let (outbound, mut queued) = mpsc::unbounded_channel::<Message>();
    if let Ok(mut open) = gateway.hub.open.lock() {
        open.insert(
            connection_id.clone(),
            OpenConnection {
                outbound,
                connected_at_ms,
                last_active_ms: connected_at_ms,
                source_ip: source_ip.clone(),
                user_agent,
            },
        );
    }
    let writer = tokio::spawn(async move {
        while let Some(message) = queued.recv().await {
            let closing = matches!(message, Message::Close(_));
            if sink.send(message).await.is_err() || closing {
                break;
            }
        }
    });
    // Client messages go to the `$default` route; its answer is sent back.
    // A connection without a client message for the idle timeout is closed.
    loop {
        let message = match tokio::time::timeout(gateway.timing.idle_timeout, stream.next()).await {
            Ok(Some(Ok(message))) => message,
            Ok(_) => break,
            Err(_) => {
                if let Ok(open) = gateway.hub.open.lock() {
                    if let Some(c) = open.get(&connection_id) {
                        let _ = c.outbound.send(Message::Close(Some(CloseFrame {
                            code: 1001,
                            reason: "Going away: idle timeout".into(),
                        })));
                    }
                }
                break;
            }
        };
        if let Ok(mut open) = gateway.hub.open.lock() {
            if let Some(c) = open.get_mut(&connection_id) {
                c.last_active_ms = now_ms();
            }
        }
        let text = match message {
            Message::Close(_) => break,
            Message::Text(t) => t.to_string(),
            Message::Binary(b) => String::from_utf8_lossy(&b).into_owned(),
            Message::Ping(_) | Message::Pong(_) => continue,
        };
        match websocket_event(
            "$default",
            &connection_id,
            connected_at_ms,
            &gateway.domain,
            &source_ip,
            &headers,
            None,
            Some(&text),
        ) {
            Ok(event) => {
                let answer = gateway.handlers.message(event).await;
                let reply = body_text(&answer);
                if !reply.is_empty() {
                    if let Ok(open) = gateway.hub.open.lock() {
                        if let Some(c) = open.get(&connection_id) {
                            let _ = c.outbound.send(Message::Text(reply.into()));
                        }
                    }
                }
            }
            Err(e) => tracing::error!(error = %e, "building the $default event"),
        }
    }
    // Let a close frame queued above go out before the writer stops.
    let _ = tokio::time::timeout(Duration::from_secs(1), async {
        while !writer.is_finished() {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
    if let Ok(mut open) = gateway.hub.open.lock() {
        open.remove(&connection_id);
    }
    writer.abort();
    // API Gateway sends $disconnect however the connection ended.
    match websocket_event(
        "$disconnect",
        &connection_id,
        connected_at_ms,
        &gateway.domain,
        &source_ip,
        &headers,
        None,
        None,
    ) {
        Ok(event) => {
            gateway.handlers.disconnect(event).await;
        }
        Err(e) => tracing::error!(error = %e, "building $disconnect event"),
    }
}

fn gone() -> Response {
    (
        StatusCode::GONE,
        [
            ("x-amzn-errortype", "GoneException"),
            ("content-type", "application/json"),
        ],
        Json(json!({ "message": null })),
    )
        .into_response()
}

/// `POST` / `GET` / `DELETE /@connections/{id}`, like API Gateway's management API.
async fn management<H: WebsocketHandlers>(
    State(gateway): State<Arc<Gateway<H>>>,
    Path(id): Path<String>,
    method: axum::http::Method,
    body: Bytes,
) -> Response {
    let Ok(mut open) = gateway.hub.open.lock() else {
        return StatusCode::INTERNAL_SERVER_ERROR.into_response();
    };
    let Some(connection) = open.get_mut(&id) else {
        return gone();
    };
    match method.as_str() {
        "POST" => {
            // API Gateway's limit for one WebSocket message.
            if body.len() > 128 * 1024 {
                return (
                    StatusCode::PAYLOAD_TOO_LARGE,
                    [("x-amzn-errortype", "PayloadTooLargeException")],
                    "",
                )
                    .into_response();
            }
            let text = String::from_utf8_lossy(&body).into_owned();
            if connection
                .outbound
                .send(Message::Text(text.clone().into()))
                .is_err()
            {
                open.remove(&id);
                return gone();
            }
            drop(open);
            gateway.hub.note_push(&text);
            StatusCode::OK.into_response()
        }
        "GET" => Json(json!({
            "ConnectedAt": connection.connected_at_ms / 1000,
            "LastActiveAt": connection.last_active_ms / 1000,
            "Identity": { "SourceIp": connection.source_ip, "UserAgent": connection.user_agent },
        }))
        .into_response(),
        "DELETE" => {
            let _ = connection.outbound.send(Message::Close(Some(CloseFrame {
                code: 1000,
                reason: "deleted".into(),
            })));
            StatusCode::NO_CONTENT.into_response()
        }
        _ => StatusCode::METHOD_NOT_ALLOWED.into_response(),
    }
}

#[cfg(test)]
mod tests;
