//! WebSocket `$disconnect`: forgets the connection. When it was the player's
//! last one, the store also removes their ticket (a player nobody can notify
//! should not be matched). API Gateway ignores the answer; the status codes
//! only make the logs and tests clear.

use aws_lambda_events::event::apigw::{ApiGatewayProxyResponse, ApiGatewayWebsocketProxyRequest};
use lambda_common::websocket::websocket_response as response;
use lambda_runtime::LambdaEvent;
use shared::{use_cases, ConnectionId, MatchStore};
use tracing::field::Empty;

#[tracing::instrument(
    skip_all,
    fields(request_id = %event.context.request_id, connection = Empty)
)]
pub async fn handle_disconnect(
    store: &MatchStore,
    event: LambdaEvent<ApiGatewayWebsocketProxyRequest>,
) -> Result<ApiGatewayProxyResponse, lambda_runtime::Error> {
    let context = event.payload.request_context;
    let conn = match context.connection_id.as_deref().map(ConnectionId::parse) {
        Some(Ok(conn)) => conn,
        _ => {
            tracing::warn!("$disconnect without a valid connection id");
            return Ok(response(400, "invalid connection id"));
        }
    };
    tracing::Span::current().record("connection", conn.as_str());

    match use_cases::disconnect(store, &conn).await {
        Ok(gone) => {
            // An unknown connection (never registered, or already expired) is fine.
            tracing::info!(
                player = gone.player.as_ref().map_or("", |p| p.as_str()),
                remaining_connections = gone.remaining_connections,
                removed_ticket_world = gone
                    .removed_ticket_world
                    .as_ref()
                    .map_or("", |w| w.as_str()),
                close_code = context.disconnect_status_code.unwrap_or_default(),
                "connection closed"
            );
            Ok(response(200, "disconnected"))
        }
        Err(e) if e.is_unavailable() => {
            // The entry expires with its TTL and housekeeping removes it then.
            tracing::warn!(error = %e, "Redis is unavailable; connection left to expire");
            Ok(response(503, "service unavailable"))
        }
        Err(e) => {
            tracing::error!(error = %e, "could not unregister the connection");
            Ok(response(500, "internal error"))
        }
    }
}
