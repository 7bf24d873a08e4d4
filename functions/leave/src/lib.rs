//! `POST /v1/matching/leave` and `DELETE /v1/parties/{partyId}` (a member
//! cancels a party, or an invited player declines). The mapping lives in [`lambda_common::http`]; this
//! crate only wires it to the Lambda runtime.

use lambda_common::http::{self, Function, Route};
use lambda_http::{Body, Error, Request, Response};
use shared::MatchStore;

/// What the function builds once per process.
pub struct App {
    pub store: MatchStore,
}

#[tracing::instrument(skip_all, fields(method = %req.method(), path = %req.uri().path()))]
pub async fn handle(app: &App, req: Request) -> Result<Response<Body>, Error> {
    match http::route_for(Function::Leave, &req) {
        Some(Route::Leave) => http::leave(&app.store, req).await,
        Some(Route::CancelParty) => http::cancel_party(&app.store, req).await,
        // Another function's route, or none: what an unknown path gets.
        _ => Ok(http::not_found(&req)),
    }
}
