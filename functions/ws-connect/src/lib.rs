//! The WebSocket routes of a live connection: `$connect` and `$default`.
//!
//! `$connect`: API Gateway WebSocket APIs allow only Lambda authorizers here,
//! so this function verifies the `?token=<JWT>` itself
//! (`lambda_common::auth`) and registers the connection under the token's
//! `sub`. Any non-2xx answer refuses the connection. Nothing is pushed to it
//! from here (`PostToConnection` on a connection still in `$connect` fails
//! with 410); a connection evicted to respect the per-player cap is closed.
//!
//! `$default`: every client message is a heartbeat. It renews the
//! connection's registration and the player's presence and is answered with
//! a `PONG` (the route response); a connection that is not registered any
//! more is closed so the client reconnects with a token.

use aws_lambda_events::event::apigw::{ApiGatewayProxyResponse, ApiGatewayWebsocketProxyRequest};
use lambda_common::auth::JwtVerifier;
use lambda_common::websocket::websocket_response as response;
use lambda_runtime::LambdaEvent;
use shared::store::Heartbeat;
use shared::{use_cases, ConnectionId, MatchStore, Pusher, ServerMessage};
use tracing::field::Empty;

/// Query parameter carrying the JWT (browsers cannot set headers on a
/// WebSocket upgrade).
pub const TOKEN_PARAM: &str = "token";

#[tracing::instrument(
    skip_all,
    fields(request_id = %event.context.request_id, connection = Empty, player = Empty)
)]
pub async fn handle_connect<P: Pusher>(
    store: &MatchStore,
    verifier: &JwtVerifier,
    pusher: &P,
    event: LambdaEvent<ApiGatewayWebsocketProxyRequest>,
) -> Result<ApiGatewayProxyResponse, lambda_runtime::Error> {
    let request = event.payload;
    let conn = match request
        .request_context
        .connection_id
        .as_deref()
        .map(ConnectionId::parse)
    {
        Some(Ok(conn)) => conn,
        Some(Err(e)) => {
            tracing::warn!(error = %e, "refusing a connection with an invalid id");
            return Ok(response(400, "invalid connection id"));
        }
        None => {
            tracing::warn!("refusing a connection without an id");
            return Ok(response(400, "missing connection id"));
        }
    };
    let span = tracing::Span::current();
    span.record("connection", conn.as_str());

    let token = request
        .query_string_parameters
        .first(TOKEN_PARAM)
        .unwrap_or_default();
    let player = match verifier.verify(token).await {
        Ok(player) => player,
        Err(e) if e.is_unavailable() => {
            tracing::warn!(error = %e, "cannot verify tokens now; refusing the connection");
            return Ok(response(503, "authentication is temporarily unavailable"));
        }
        Err(e) => {
            // The reason is logged, never echoed: it would help a forger.
            tracing::info!(reason = %e, "refusing an unauthenticated connection");
            return Ok(response(401, "unauthorized"));
        }
    };
    span.record("player", player.as_str());

    match use_cases::connect(store, pusher, &conn, &player).await {
        Ok(registered) => {
            tracing::info!(
                connections = registered.connections,
                evicted = registered.evicted.as_ref().map_or("", |c| c.as_str()),
                "connection registered"
            );
            Ok(response(200, "connected"))
        }
        Err(e) if e.is_unavailable() => {
            tracing::warn!(error = %e, "Redis is unavailable; refusing the connection");
            Ok(response(503, "service unavailable"))
        }
        Err(e) => {
            tracing::error!(error = %e, "could not register the connection");
            Ok(response(500, "internal error"))
        }
    }
}

/// What the function builds once per process.
pub struct App<P> {
    pub store: MatchStore,
    pub verifier: JwtVerifier,
    pub pusher: P,
}

/// Routes an event by its route key: `$connect`, or a message (`$default`).
pub async fn handle<P: Pusher>(
    app: &App<P>,
    event: LambdaEvent<ApiGatewayWebsocketProxyRequest>,
) -> Result<ApiGatewayProxyResponse, lambda_runtime::Error> {
    match event.payload.request_context.route_key.as_deref() {
        Some("$connect") => handle_connect(&app.store, &app.verifier, &app.pusher, event).await,
        _ => handle_message(&app.store, &app.pusher, event).await,
    }
}

/// `$default`: a client message, which is a heartbeat. Answers a `PONG`.
#[tracing::instrument(
    skip_all,
    fields(request_id = %event.context.request_id, connection = Empty)
)]
pub async fn handle_message<P: Pusher>(
    store: &MatchStore,
    pusher: &P,
    event: LambdaEvent<ApiGatewayWebsocketProxyRequest>,
) -> Result<ApiGatewayProxyResponse, lambda_runtime::Error> {
    let conn = match event
        .payload
        .request_context
        .connection_id
        .as_deref()
        .map(ConnectionId::parse)
    {
        Some(Ok(conn)) => conn,
        _ => {
            tracing::warn!("message without a valid connection id");
            return Ok(response(400, "invalid connection id"));
        }
    };
    tracing::Span::current().record("connection", conn.as_str());
    let settings = store.settings();
    let pong = |registered: bool| {
        ServerMessage::Pong {
            registered,
            heartbeat_seconds: settings.heartbeat_interval.as_secs(),
            presence_timeout_seconds: settings.presence_timeout.as_secs(),
        }
        .to_json()
    };
    match use_cases::heartbeat(store, pusher, &conn).await {
        Ok(Heartbeat::Renewed { .. }) => Ok(response(200, &pong(true))),
        Ok(Heartbeat::Unknown) => Ok(response(200, &pong(false))),
        Err(e) if e.is_unavailable() => {
            tracing::warn!(error = %e, "Redis is unavailable; heartbeat not recorded");
            Ok(response(503, "service unavailable"))
        }
        Err(e) => {
            tracing::error!(error = %e, "could not record the heartbeat");
            Ok(response(500, "internal error"))
        }
    }
}
