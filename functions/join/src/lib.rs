//! `POST /v1/matching/join` and the party routes that may put a party in
//! the queue: `POST /v1/parties`, `POST /v1/parties/{partyId}/join`; and
//! `POST /v1/matching/accept` (a ready check's answer, which may make a
//! match final and push it). The mapping lives in [`lambda_common::http`]; this
//! crate only wires it to the Lambda runtime.

use lambda_common::http::{self, Function, Route};
use lambda_http::{Body, Error, Request, Response};
use shared::{MatchStore, Pusher};

/// What the function builds once per process.
pub struct App<P> {
    pub store: MatchStore,
    pub pusher: P,
}

#[tracing::instrument(skip_all, fields(method = %req.method(), path = %req.uri().path()))]
pub async fn handle<P: Pusher>(app: &App<P>, req: Request) -> Result<Response<Body>, Error> {
    match http::route_for(Function::Join, &req) {
        Some(Route::Join) => http::join(&app.store, &app.pusher, req).await,
        Some(Route::CreateParty) => http::create_party(&app.store, req).await,
        Some(Route::JoinParty) => http::join_party(&app.store, &app.pusher, req).await,
        Some(Route::Accept) => http::accept(&app.store, &app.pusher, req).await,
        // Another function's route, or none: what an unknown path gets.
        _ => Ok(http::not_found(&req)),
    }
}
