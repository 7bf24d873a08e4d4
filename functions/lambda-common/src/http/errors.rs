//! The response envelope and the error answers. The HTTP status of an error
//! is decided by its [`ErrorCode`] alone.

use lambda_http::http::header::{HeaderValue, ALLOW, CACHE_CONTROL, CONTENT_TYPE};
use lambda_http::http::{Method, StatusCode};
use lambda_http::{Body, Error, Request, Response};
use serde::Serialize;
use shared::{PlayerId, ProposalView, QueuePosition, StoreError, WorldName};

use super::{request_path, Route};

/// Declares [`ErrorCode`], [`ErrorCode::ALL`] and [`ErrorCode::as_str`] from
/// one list, so every code is in `ALL` (what the API spec test walks).
macro_rules! error_codes {
    ($( $code:ident = $name:literal, )+) => {
        /// Stable, machine-readable error codes (`data.error`).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
        #[serde(rename_all = "SCREAMING_SNAKE_CASE")]
        pub enum ErrorCode {
            $( $code, )+
        }

        impl ErrorCode {
            /// Every code, in declaration order.
            pub const ALL: &'static [ErrorCode] = &[$( ErrorCode::$code, )+];

            pub fn as_str(self) -> &'static str {
                match self {
                    $( ErrorCode::$code => $name, )+
                }
            }
        }
    };
}

error_codes! {
    Unauthorized = "UNAUTHORIZED",
    InvalidRequest = "INVALID_REQUEST",
    UnknownWorld = "UNKNOWN_WORLD",
    AlreadyQueued = "ALREADY_QUEUED",
    NotQueued = "NOT_QUEUED",
    PayloadTooLarge = "PAYLOAD_TOO_LARGE",
    UnsupportedMediaType = "UNSUPPORTED_MEDIA_TYPE",
    MethodNotAllowed = "METHOD_NOT_ALLOWED",
    NotFound = "NOT_FOUND",
    QueueFull = "QUEUE_FULL",
    RedisUnavailable = "REDIS_UNAVAILABLE",
    NotConnected = "NOT_CONNECTED",
    MatchNotFound = "MATCH_NOT_FOUND",
    Forbidden = "FORBIDDEN",
    RatingRequired = "RATING_REQUIRED",
    InvalidRating = "INVALID_RATING",
    InParty = "IN_PARTY",
    MemberBusy = "MEMBER_BUSY",
    PartyNotFound = "PARTY_NOT_FOUND",
    InvalidParty = "INVALID_PARTY",
    ProposalPending = "PROPOSAL_PENDING",
    ProposalNotFound = "PROPOSAL_NOT_FOUND",
    ProposalExpired = "PROPOSAL_EXPIRED",
    CoolingDown = "COOLING_DOWN",
    InvalidLatencies = "INVALID_LATENCIES",
    LatencyRequired = "LATENCY_REQUIRED",
    InMatch = "IN_MATCH",
    InvalidAssignment = "INVALID_ASSIGNMENT",
    InvalidResult = "INVALID_RESULT",
    AssignmentConflict = "ASSIGNMENT_CONFLICT",
    ResultConflict = "RESULT_CONFLICT",
    MatchFinished = "MATCH_FINISHED",
    InvalidBackfill = "INVALID_BACKFILL",
    BackfillNotFound = "BACKFILL_NOT_FOUND",
    MatchNotAssigned = "MATCH_NOT_ASSIGNED",
    InvalidAttributes = "INVALID_ATTRIBUTES",
    AttributesRequired = "ATTRIBUTES_REQUIRED",
    AttributesConflict = "ATTRIBUTES_CONFLICT",
    InvalidWorlds = "INVALID_WORLDS",
}

impl ErrorCode {
    pub fn status(self) -> StatusCode {
        match self {
            ErrorCode::Unauthorized => StatusCode::UNAUTHORIZED,
            ErrorCode::InvalidWorlds
            | ErrorCode::InvalidRequest
            | ErrorCode::InvalidRating
            | ErrorCode::InvalidParty
            | ErrorCode::InvalidLatencies
            | ErrorCode::InvalidAssignment
            | ErrorCode::InvalidResult
            | ErrorCode::InvalidBackfill
            | ErrorCode::InvalidAttributes => StatusCode::BAD_REQUEST,
            ErrorCode::Forbidden => StatusCode::FORBIDDEN,
            ErrorCode::UnknownWorld
            | ErrorCode::NotQueued
            | ErrorCode::NotFound
            | ErrorCode::MatchNotFound
            | ErrorCode::PartyNotFound
            | ErrorCode::ProposalNotFound
            | ErrorCode::BackfillNotFound => StatusCode::NOT_FOUND,
            ErrorCode::AlreadyQueued
            | ErrorCode::NotConnected
            | ErrorCode::RatingRequired
            | ErrorCode::LatencyRequired
            | ErrorCode::InParty
            | ErrorCode::MemberBusy
            | ErrorCode::ProposalPending
            | ErrorCode::ProposalExpired
            | ErrorCode::CoolingDown
            | ErrorCode::InMatch
            | ErrorCode::AssignmentConflict
            | ErrorCode::ResultConflict
            | ErrorCode::MatchFinished
            | ErrorCode::MatchNotAssigned
            | ErrorCode::AttributesRequired
            | ErrorCode::AttributesConflict => StatusCode::CONFLICT,
            ErrorCode::PayloadTooLarge => StatusCode::PAYLOAD_TOO_LARGE,
            ErrorCode::UnsupportedMediaType => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            ErrorCode::MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
            ErrorCode::QueueFull | ErrorCode::RedisUnavailable => StatusCode::SERVICE_UNAVAILABLE,
        }
    }
}

/// What an error answer says besides its code, flattened into `data`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged, rename_all_fields = "camelCase")]
pub enum ErrorDetails {
    None {},
    /// The request field at fault.
    Field {
        field: &'static str,
    },
    /// Where the caller already waits (ALREADY_QUEUED).
    Queued(Box<QueuePosition>),
    UnknownWorld {
        world_type: WorldName,
        worlds: Vec<WorldName>,
    },
    NotQueued {
        world_type: WorldName,
        #[serde(skip_serializing_if = "Option::is_none")]
        queued_in: Option<WorldName>,
    },
    QueueFull {
        world_type: WorldName,
        queue_size: u64,
    },
    World {
        world_type: WorldName,
    },
    Match {
        match_id: String,
    },
    /// The caller's game in progress (IN_MATCH): where to reconnect.
    InMatch {
        match_id: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        assignment: Option<Box<shared::SeatAssignment>>,
    },
    /// A match's state when a report conflicts with it.
    MatchState {
        match_id: String,
        state: shared::MatchState,
    },
    /// The party at issue (PARTY_NOT_FOUND).
    Party {
        party_id: String,
    },
    /// The party the caller belongs to, and its world (IN_PARTY).
    InParty {
        party_id: String,
        world_type: WorldName,
    },
    /// The member at issue (MEMBER_BUSY).
    Member {
        player_id: PlayerId,
    },
    /// A pending match proposal (PROPOSAL_PENDING).
    Proposal(Box<ProposalView>),
    /// When the caller may join again (COOLING_DOWN).
    CoolingDown {
        retry_after_seconds: u64,
    },
    /// A party too large for its world (INVALID_PARTY).
    PartyLimit {
        world_type: WorldName,
        size: usize,
        max_party_size: u32,
    },
    /// A rating that cannot be used, and where it came from.
    Rating {
        #[serde(skip_serializing_if = "Option::is_none")]
        world_type: Option<WorldName>,
        rating: String,
        source: &'static str,
        min: f64,
        max: f64,
    },
    /// What the caller's token lacks.
    Scope {
        required: Option<String>,
    },
    PayloadTooLarge {
        limit_bytes: u64,
        size_bytes: u64,
    },
    UnsupportedMediaType {
        content_type: String,
    },
    MethodNotAllowed {
        allowed: [&'static str; 1],
    },
    NotFound {
        path: String,
    },
    /// The request field and the attribute at fault (INVALID_ATTRIBUTES).
    Attribute {
        field: &'static str,
        attribute: String,
    },
    /// The world and the attribute at issue (ATTRIBUTES_REQUIRED,
    /// ATTRIBUTES_CONFLICT).
    WorldAttribute {
        world_type: WorldName,
        attribute: String,
    },
    /// A key twice in one object of the body (INVALID_REQUEST): the key and
    /// the JSON Pointer of its second occurrence.
    DuplicateKey {
        duplicate_key: String,
        path: String,
    },
}

/// An error answer: a code, a human message and details for `data`.
#[derive(Debug, Clone, PartialEq)]
pub struct ApiError {
    pub code: ErrorCode,
    pub msg: String,
    pub details: ErrorDetails,
}

/// The body of an error answer.
#[derive(Serialize)]
struct ErrorData<'a> {
    error: ErrorCode,
    #[serde(flatten)]
    details: &'a ErrorDetails,
}

/// The envelope every response is wrapped in.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Envelope<'a, T> {
    result_code: String,
    msg: &'a str,
    data: T,
}

impl ApiError {
    pub fn new(code: ErrorCode, msg: impl Into<String>) -> Self {
        Self {
            code,
            msg: msg.into(),
            details: ErrorDetails::None {},
        }
    }

    pub fn with(mut self, details: ErrorDetails) -> Self {
        self.details = details;
        self
    }

    pub fn into_response(self) -> Response<Body> {
        let mut resp = envelope(
            self.code.status(),
            &self.msg,
            &ErrorData {
                error: self.code,
                details: &self.details,
            },
        );
        if let ErrorDetails::MethodNotAllowed { allowed: [method] } = self.details {
            resp.headers_mut()
                .insert(ALLOW, HeaderValue::from_static(method));
        }
        resp
    }
}

/// A `200` answer in the envelope.
pub(super) fn ok<T: Serialize>(msg: &str, data: &T) -> Response<Body> {
    envelope(StatusCode::OK, msg, data)
}

/// Builds an enveloped JSON response.
pub fn envelope<T: Serialize>(status: StatusCode, msg: &str, data: &T) -> Response<Body> {
    let body = Envelope {
        result_code: status.as_u16().to_string(),
        msg,
        data,
    };
    // Plain structs of strings and numbers always serialize.
    let text = serde_json::to_string(&body).unwrap_or_default();
    let mut resp = Response::new(Body::from(text));
    *resp.status_mut() = status;
    let headers = resp.headers_mut();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    // Answers are per caller and change with every queue operation.
    headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    resp
}

/// 404 for a path no function serves.
pub fn not_found(req: &Request) -> Response<Body> {
    not_found_error(req).into_response()
}

pub(super) fn not_found_error(req: &Request) -> ApiError {
    let path = request_path(req);
    ApiError::new(ErrorCode::NotFound, format!("no route for {path}")).with(
        ErrorDetails::NotFound {
            path: path.to_owned(),
        },
    )
}

pub(super) fn method_not_allowed(route: Route, method: &Method) -> ApiError {
    let allowed = route.method_name();
    ApiError::new(
        ErrorCode::MethodNotAllowed,
        format!("{method} is not allowed here; use {allowed}"),
    )
    .with(ErrorDetails::MethodNotAllowed { allowed: [allowed] })
}

/// Why a handler did not produce a success response.
pub(super) enum Failure {
    /// Answered with an error envelope.
    Api(ApiError),
    /// Unexpected; the Lambda runtime turns it into a 500.
    Internal(Error),
}

impl From<ApiError> for Failure {
    fn from(e: ApiError) -> Self {
        Failure::Api(e)
    }
}

impl From<StoreError> for Failure {
    fn from(e: StoreError) -> Self {
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
}

/// The handler's result as the Lambda runtime wants it.
pub(super) fn finish(result: Result<Response<Body>, Failure>) -> Result<Response<Body>, Error> {
    match result {
        Ok(resp) => Ok(resp),
        Err(Failure::Api(e)) => {
            tracing::info!(code = e.code.as_str(), msg = %e.msg, "request refused");
            Ok(e.into_response())
        }
        Err(Failure::Internal(e)) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::Value;

    use super::*;

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
            (ErrorCode::NotConnected, 409, "NOT_CONNECTED"),
            (ErrorCode::MatchNotFound, 404, "MATCH_NOT_FOUND"),
            (ErrorCode::Forbidden, 403, "FORBIDDEN"),
            (ErrorCode::RatingRequired, 409, "RATING_REQUIRED"),
            (ErrorCode::InvalidRating, 400, "INVALID_RATING"),
            (ErrorCode::InParty, 409, "IN_PARTY"),
            (ErrorCode::MemberBusy, 409, "MEMBER_BUSY"),
            (ErrorCode::PartyNotFound, 404, "PARTY_NOT_FOUND"),
            (ErrorCode::InvalidParty, 400, "INVALID_PARTY"),
            (ErrorCode::ProposalPending, 409, "PROPOSAL_PENDING"),
            (ErrorCode::ProposalNotFound, 404, "PROPOSAL_NOT_FOUND"),
            (ErrorCode::ProposalExpired, 409, "PROPOSAL_EXPIRED"),
            (ErrorCode::CoolingDown, 409, "COOLING_DOWN"),
            (ErrorCode::InvalidLatencies, 400, "INVALID_LATENCIES"),
            (ErrorCode::LatencyRequired, 409, "LATENCY_REQUIRED"),
            (ErrorCode::InMatch, 409, "IN_MATCH"),
            (ErrorCode::InvalidAssignment, 400, "INVALID_ASSIGNMENT"),
            (ErrorCode::InvalidResult, 400, "INVALID_RESULT"),
            (ErrorCode::AssignmentConflict, 409, "ASSIGNMENT_CONFLICT"),
            (ErrorCode::ResultConflict, 409, "RESULT_CONFLICT"),
            (ErrorCode::MatchFinished, 409, "MATCH_FINISHED"),
            (ErrorCode::InvalidBackfill, 400, "INVALID_BACKFILL"),
            (ErrorCode::BackfillNotFound, 404, "BACKFILL_NOT_FOUND"),
            (ErrorCode::MatchNotAssigned, 409, "MATCH_NOT_ASSIGNED"),
            (ErrorCode::InvalidAttributes, 400, "INVALID_ATTRIBUTES"),
            (ErrorCode::AttributesRequired, 409, "ATTRIBUTES_REQUIRED"),
            (ErrorCode::AttributesConflict, 409, "ATTRIBUTES_CONFLICT"),
            (ErrorCode::InvalidWorlds, 400, "INVALID_WORLDS"),
        ];
        for (code, status, name) in codes {
            assert_eq!(code.as_str(), name);
            let resp = ApiError::new(code, "m")
                .with(ErrorDetails::Field { field: "k" })
                .into_response();
            assert_eq!(resp.status().as_u16(), status);
            let body: Value = serde_json::from_slice(resp.body().as_ref()).unwrap();
            assert_eq!(body["resultCode"], status.to_string());
            assert_eq!(body["data"]["error"], name);
            assert_eq!(body["data"]["field"], "k");
            assert_eq!(resp.headers()[CONTENT_TYPE], "application/json");
        }
    }

    /// Every store failure about reaching Redis, a failover's refusals
    /// (READONLY, MOVED, TRYAGAIN, CLUSTERDOWN, a reset) and missing replica
    /// acknowledgements included, is the 503 envelope with a retry hint.
    #[test]
    fn unavailable_store_errors_answer_503_with_a_retry_hint() {
        for e in [
            StoreError::Unavailable(
                "ReadOnly: You can't write against a read only replica.".into(),
            ),
            StoreError::Timeout(std::time::Duration::from_millis(500)),
            StoreError::NotReplicated {
                acked: 0,
                wanted: 1,
                applied: true,
            },
            StoreError::NotReplicated {
                acked: 0,
                wanted: 1,
                applied: false,
            },
        ] {
            let Failure::Api(api) = Failure::from(e) else {
                panic!("an unavailable store error is an API answer")
            };
            let resp = api.into_response();
            assert_eq!(resp.status().as_u16(), 503);
            let body: Value = serde_json::from_slice(resp.body().as_ref()).unwrap();
            assert_eq!(body["resultCode"], "503");
            assert_eq!(body["data"]["error"], "REDIS_UNAVAILABLE");
            assert!(body["msg"].as_str().unwrap().contains("retry"), "{body}");
        }
    }

    #[test]
    fn every_code_is_listed_once_and_serializes_as_its_name() {
        let mut names: Vec<&str> = ErrorCode::ALL.iter().map(|c| c.as_str()).collect();
        for code in ErrorCode::ALL {
            assert_eq!(
                serde_json::to_value(code).unwrap(),
                Value::String(code.as_str().to_owned())
            );
        }
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), ErrorCode::ALL.len());
    }

    #[test]
    fn details_flatten_into_data() {
        let resp = ApiError::new(ErrorCode::PayloadTooLarge, "big")
            .with(ErrorDetails::PayloadTooLarge {
                limit_bytes: 8192,
                size_bytes: 9000,
            })
            .into_response();
        let body: Value = serde_json::from_slice(resp.body().as_ref()).unwrap();
        assert_eq!(
            body["data"],
            serde_json::json!({"error": "PAYLOAD_TOO_LARGE", "limitBytes": 8192, "sizeBytes": 9000})
        );
        let none = ApiError::new(ErrorCode::Unauthorized, "who").into_response();
        let body: Value = serde_json::from_slice(none.body().as_ref()).unwrap();
        assert_eq!(body["data"], serde_json::json!({"error": "UNAUTHORIZED"}));
    }
}
