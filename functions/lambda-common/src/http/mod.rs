//! The HTTP API adapter: API Gateway HTTP API (payload 2.0) requests in,
//! enveloped JSON responses out. Each handler parses its request, calls one
//! use case of the core (`shared::use_cases`) and maps the typed outcome to
//! a response; nothing here decides matchmaking. The Lambda functions and
//! the local stack call exactly these functions.
//!
//! Every response is JSON in the envelope
//! `{"resultCode": "200", "msg": "...", "data": {...}}` with the HTTP status
//! equal to `resultCode`; errors carry a stable code in `data.error`, and the
//! status is decided by that code. See `docs/http-api.md`.

mod admin;
mod admin_actions;
mod attributes;
mod avoid;
mod duplicate_keys;
mod errors;
mod handlers;
mod joined;
mod lifecycle;
mod parties;
mod proposals;
mod rejection;
mod request;
mod routes;

use lambda_http::request::RequestContext;
use lambda_http::{Request, RequestExt};

pub use admin::{admin_audit, admin_matches, admin_player, admin_tickets};
pub use admin_actions::{
    admin_cancel_proposal, admin_finish_match, admin_remove_ticket, admin_void_match,
};
pub use attributes::put_attributes;
pub use avoid::put_avoid;
pub use errors::{envelope, not_found, ApiError, ErrorCode, ErrorDetails};
pub use handlers::{join, leave, match_record, my_status, put_rating, queue_status};
pub use lifecycle::{assign, backfill, backfill_keepalive, cancel_backfill, report};
pub use parties::{cancel_party, create_party, join_party};
pub use proposals::accept;
pub use request::{caller, with_caller, MAX_BODY_BYTES, MAX_LIST_BODY_BYTES};
pub use routes::{Access, ConfiguredScope, Function, Route, RouteSpec, ROUTES};

impl Route {
    /// The route a request's path belongs to (any method: its handler
    /// answers another method 405), the stage ignored.
    pub fn of(req: &Request) -> Option<Self> {
        Route::at(req.method(), request_path(req))
    }
}

/// The route of `req` if `function` serves it. A route of another function
/// is answered like an unknown path ([`not_found`]), as API Gateway never
/// sends a function another one's route.
pub fn route_for(function: Function, req: &Request) -> Option<Route> {
    Route::of(req).filter(|route| route.function() == function)
}

/// A path parameter of the request: the one API Gateway sent, else the
/// segment of the path where the matching route's template names it.
pub(crate) fn path_parameter(req: &Request, name: &str) -> Option<String> {
    if let Some(value) = req.path_parameters_ref().and_then(|p| p.first(name)) {
        return Some(value.to_owned());
    }
    let route = Route::of(req)?;
    route
        .spec()
        .match_path(request_path(req))?
        .into_iter()
        .find(|(n, _)| *n == name)
        .map(|(_, value)| value.to_owned())
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

#[cfg(test)]
mod tests {
    use lambda_http::aws_lambda_events::apigw::ApiGatewayV2httpRequestContext;
    use lambda_http::http::Method;
    use lambda_http::Body;

    use super::*;

    fn request(method: Method, uri: &str) -> Request {
        let mut req = Request::new(Body::Empty);
        *req.method_mut() = method;
        *req.uri_mut() = uri.parse().unwrap();
        req
    }

    #[test]
    fn routes_are_found_by_path_and_stage_is_ignored() {
        let at = |uri: &str| Route::of(&request(Method::GET, uri));
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
        assert_eq!(at("/v1/matching/matches/18f-2a"), Some(Route::Match));
        assert_eq!(at("/v1/matching/matches/"), None);
        assert_eq!(at("/v1/ratings/alice"), Some(Route::Rating));
        assert_eq!(at("/v1/parties"), Some(Route::CreateParty));
        assert_eq!(at("/v1/matching/accept"), Some(Route::Accept));
        assert_eq!(at("/v1/parties/arena.1-a/join"), Some(Route::JoinParty));
        assert_eq!(at("/v1/parties/arena.1-a"), Some(Route::CancelParty));
        assert_eq!(at("/v1/parties/"), None);
        assert_eq!(at("/v1/parties//join"), None);
        assert_eq!(at("/v1/parties/a/b/join"), None);

        let mut ctx = ApiGatewayV2httpRequestContext::default();
        ctx.stage = Some("prod".into());
        let mut req = request(Method::GET, "/prod/v1/matching/my-status");
        req.extensions_mut()
            .insert(RequestContext::ApiGatewayV2(ctx));
        assert_eq!(Route::of(&req), Some(Route::MyStatus));
    }
}
