//! The player-record routes: `GET /v1/matching/queue-status/{worldType}`,
//! `GET /v1/matching/my-status`, `GET /v1/matching/matches/{matchId}` (reads)
//! and the privileged `PUT /v1/ratings/{playerId}`,
//! `POST /v1/matching/matches/{matchId}/assignment` and `.../result` (their
//! announcements go through the outbox: the matcher pushes them). None of
//! them pushes.
//! The mapping lives in [`lambda_common::http`]; this crate only wires it to the
//! Lambda runtime.

use lambda_common::http::{self, Function, Route};
use lambda_http::{Body, Error, Request, Response};
use shared::MatchStore;

/// What the function builds once per process.
pub struct App {
    pub store: MatchStore,
}

#[tracing::instrument(skip_all, fields(method = %req.method(), path = %req.uri().path()))]
pub async fn handle(app: &App, req: Request) -> Result<Response<Body>, Error> {
    match http::route_for(Function::Status, &req) {
        Some(Route::QueueStatus) => http::queue_status(&app.store, req).await,
        Some(Route::MyStatus) => http::my_status(&app.store, req).await,
        Some(Route::Match) => http::match_record(&app.store, req).await,
        Some(Route::Rating) => http::put_rating(&app.store, req).await,
        Some(Route::Attributes) => http::put_attributes(&app.store, req).await,
        Some(Route::Avoid) => http::put_avoid(&app.store, req).await,
        Some(Route::Assign) => http::assign(&app.store, req).await,
        Some(Route::Report) => http::report(&app.store, req).await,
        Some(Route::Backfill) => http::backfill(&app.store, req).await,
        Some(Route::BackfillKeepalive) => http::backfill_keepalive(&app.store, req).await,
        Some(Route::CancelBackfill) => http::cancel_backfill(&app.store, req).await,
        Some(Route::AdminTickets) => http::admin_tickets(&app.store, req).await,
        Some(Route::AdminMatches) => http::admin_matches(&app.store, req).await,
        Some(Route::AdminPlayer) => http::admin_player(&app.store, req).await,
        Some(Route::AdminAudit) => http::admin_audit(&app.store, req).await,
        Some(Route::AdminRemoveTicket) => http::admin_remove_ticket(&app.store, req).await,
        Some(Route::AdminCancelProposal) => http::admin_cancel_proposal(&app.store, req).await,
        Some(Route::AdminFinishMatch) => http::admin_finish_match(&app.store, req).await,
        Some(Route::AdminVoidMatch) => http::admin_void_match(&app.store, req).await,
        // Another function's route, or none: what an unknown path gets.
        _ => Ok(http::not_found(&req)),
    }
}
