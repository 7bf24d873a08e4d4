//! WebSocket `$connect`. API Gateway WebSocket APIs allow only Lambda
//! authorizers here, so this function verifies the `?token=<JWT>` itself
//! (`lambda_common::auth`) and registers the connection under the token's `sub`.
//! Any non-2xx answer refuses the connection. Nothing is pushed from here:
//! `PostToConnection` on a connection still in `$connect` fails with 410.

use aws_lambda_events::event::apigw::{ApiGatewayProxyResponse, ApiGatewayWebsocketProxyRequest};
use lambda_common::auth::JwtVerifier;
use lambda_common::websocket::websocket_response as response;
use lambda_runtime::LambdaEvent;
use shared::{use_cases, ConnectionId, MatchStore};
use tracing::field::Empty;

/// Query parameter carrying the JWT (browsers cannot set headers on a
/// WebSocket upgrade).
pub const TOKEN_PARAM: &str = "token";

#[tracing::instrument(
    skip_all,
    fields(request_id = %event.context.request_id, connection = Empty, player = Empty)
)]
pub async fn handle_connect(
    store: &MatchStore,
    verifier: &JwtVerifier,
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

    match use_cases::connect(store, &conn, &player).await {
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
