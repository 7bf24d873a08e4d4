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

mod errors;
mod handlers;
mod parties;
mod proposals;
mod request;

use lambda_http::http::Method;
use lambda_http::request::RequestContext;
use lambda_http::{Request, RequestExt};

pub use errors::{envelope, not_found, ApiError, ErrorCode, ErrorDetails};
pub use handlers::{join, leave, match_record, my_status, put_rating, queue_status};
pub use parties::{cancel_party, create_party, join_party};
pub use proposals::accept;
pub use request::{caller, with_caller, MAX_BODY_BYTES};

pub const JOIN_PATH: &str = "/v1/matching/join";
pub const LEAVE_PATH: &str = "/v1/matching/leave";
pub const MY_STATUS_PATH: &str = "/v1/matching/my-status";
pub const ACCEPT_PATH: &str = "/v1/matching/accept";
/// Followed by the world name: `/v1/matching/queue-status/{worldType}`.
pub const QUEUE_STATUS_PREFIX: &str = "/v1/matching/queue-status/";
/// Followed by the match id: `/v1/matching/matches/{matchId}`.
pub const MATCH_PREFIX: &str = "/v1/matching/matches/";
/// Followed by the player id: `PUT /v1/ratings/{playerId}`.
pub const RATINGS_PREFIX: &str = "/v1/ratings/";
/// `POST /v1/parties`; followed by `{partyId}` (`DELETE`) or
/// `{partyId}/join` (`POST`).
pub const PARTIES_PATH: &str = "/v1/parties";
pub const PARTIES_PREFIX: &str = "/v1/parties/";
const PARTY_JOIN_SUFFIX: &str = "/join";

/// The routes of the API.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Route {
    Join,
    Leave,
    QueueStatus,
    MyStatus,
    Match,
    Rating,
    /// `POST /v1/parties`
    CreateParty,
    /// `POST /v1/parties/{partyId}/join`
    JoinParty,
    /// `DELETE /v1/parties/{partyId}`
    CancelParty,
    /// `POST /v1/matching/accept`
    Accept,
}

/// The `{partyId}` of a party route path, and whether it is the join route.
fn party_path(path: &str) -> Option<(&str, bool)> {
    let rest = path.strip_prefix(PARTIES_PREFIX)?;
    let (id, join) = match rest.strip_suffix(PARTY_JOIN_SUFFIX) {
        Some(id) => (id, true),
        None => (rest, false),
    };
    (!id.is_empty() && !id.contains('/')).then_some((id, join))
}

/// The last segment of `path` after `prefix`, if it is one non-empty segment.
fn segment_after<'a>(path: &'a str, prefix: &str) -> Option<&'a str> {
    path.strip_prefix(prefix)
        .filter(|rest| !rest.is_empty() && !rest.contains('/'))
}

impl Route {
    /// The route a request's path belongs to (any method), if any.
    pub fn of(req: &Request) -> Option<Self> {
        let path = request_path(req);
        match path {
            JOIN_PATH => Some(Route::Join),
            LEAVE_PATH => Some(Route::Leave),
            MY_STATUS_PATH => Some(Route::MyStatus),
            ACCEPT_PATH => Some(Route::Accept),
            _ if segment_after(path, QUEUE_STATUS_PREFIX).is_some() => Some(Route::QueueStatus),
            _ if segment_after(path, MATCH_PREFIX).is_some() => Some(Route::Match),
            _ if segment_after(path, RATINGS_PREFIX).is_some() => Some(Route::Rating),
            PARTIES_PATH => Some(Route::CreateParty),
            _ => match party_path(path) {
                Some((_, true)) => Some(Route::JoinParty),
                Some((_, false)) => Some(Route::CancelParty),
                None => None,
            },
        }
    }

    /// The one method the route answers.
    pub fn method(self) -> Method {
        match self {
            Route::Join | Route::Leave | Route::CreateParty | Route::JoinParty | Route::Accept => {
                Method::POST
            }
            Route::QueueStatus | Route::MyStatus | Route::Match => Method::GET,
            Route::Rating => Method::PUT,
            Route::CancelParty => Method::DELETE,
        }
    }

    fn method_name(self) -> &'static str {
        match self {
            Route::Join | Route::Leave | Route::CreateParty | Route::JoinParty | Route::Accept => {
                "POST"
            }
            Route::QueueStatus | Route::MyStatus | Route::Match => "GET",
            Route::Rating => "PUT",
            Route::CancelParty => "DELETE",
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

#[cfg(test)]
mod tests {
    use lambda_http::aws_lambda_events::apigw::ApiGatewayV2httpRequestContext;
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
