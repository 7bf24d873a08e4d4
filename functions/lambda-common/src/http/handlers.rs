//! The four routes: parse, call one use case, map its outcome.

use lambda_http::http::StatusCode;
use lambda_http::{Body, Error, Request, RequestExt, Response};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use shared::{
    use_cases, JoinOutcome, LeaveOutcome, MatchId, MatchRecord, MatchStore, PlayerStatus, Pusher,
    QueuePosition, TicketData, WorldName,
};
use tracing::field::Empty;

use super::errors::{
    envelope, finish, not_found_error, ApiError, ErrorCode, ErrorDetails, Failure,
};
use super::request::{caller, check_method, configured_world, invalid_field, json_body};
use super::{request_path, segment_after, Route, MATCH_PREFIX, QUEUE_STATUS_PREFIX};

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct JoinBody {
    world_type: String,
    /// Optional ticket data; `null` means none.
    #[serde(default)]
    data: Option<Value>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct LeaveBody {
    world_type: String,
}

/// `data` of a join or my-status answer: the caller's state.
#[derive(Serialize)]
#[serde(tag = "status", rename_all = "SCREAMING_SNAKE_CASE")]
enum CallerState<'a> {
    Idle {},
    Queued(&'a QueuePosition),
    Matched {
        #[serde(rename = "match")]
        record: &'a MatchRecord,
    },
}

/// `data` of a leave answer.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Left<'a> {
    world_type: &'a WorldName,
    previous_position: u64,
    remaining_queue_size: u64,
}

fn ok<T: Serialize>(msg: &str, data: &T) -> Response<Body> {
    envelope(StatusCode::OK, msg, data)
}

fn queued_message(q: &QueuePosition) -> String {
    format!(
        "queued in {} at position {} of {}",
        q.world_type, q.position, q.queue_size
    )
}

/// `POST /v1/matching/join`: queue the caller, or match them at once. The
/// caller's WebSocket connections are told (QUEUED / MATCH_FOUND) before the
/// answer, best effort: the outbox retries MATCH_FOUND.
#[tracing::instrument(name = "http_join", skip_all, fields(player = Empty, world = Empty))]
pub async fn join<P: Pusher>(
    store: &MatchStore,
    pusher: &P,
    req: Request,
) -> Result<Response<Body>, Error> {
    finish(join_inner(store, pusher, &req).await)
}

async fn join_inner<P: Pusher>(
    store: &MatchStore,
    pusher: &P,
    req: &Request,
) -> Result<Response<Body>, Failure> {
    check_method(req, Route::Join)?;
    let player = caller(req)?;
    tracing::Span::current().record("player", player.as_str());
    let body: JoinBody = json_body(req)?;
    let world = configured_world(store, &body.world_type)?;
    tracing::Span::current().record("world", world.name.as_str());
    let data = body
        .data
        .as_ref()
        .map(TicketData::from_value)
        .transpose()
        .map_err(|e| invalid_field("data", e))?;

    match use_cases::join_and_notify(store, pusher, world, &player, data.as_ref()).await? {
        JoinOutcome::Queued(q) => Ok(ok(&queued_message(&q), &CallerState::Queued(&q))),
        JoinOutcome::Matched { record, .. } => {
            let msg = format!("match {} found in {}", record.match_id, record.world_type);
            Ok(ok(&msg, &CallerState::Matched { record: &record }))
        }
        JoinOutcome::AlreadyQueued(q) => Err(ApiError::new(
            ErrorCode::AlreadyQueued,
            format!(
                "already queued in {} at position {} of {}; leave that queue first",
                q.world_type, q.position, q.queue_size
            ),
        )
        .with(ErrorDetails::Queued(q))
        .into()),
        JoinOutcome::NotConnected { world_type } => Err(ApiError::new(
            ErrorCode::NotConnected,
            format!(
                "{world_type} requires a live WebSocket connection: connect (and keep sending heartbeats), then join"
            ),
        )
        .with(ErrorDetails::World { world_type })
        .into()),
        JoinOutcome::QueueFull {
            world_type,
            queue_size,
        } => Err(ApiError::new(
            ErrorCode::QueueFull,
            format!("the {world_type} queue is full ({queue_size} waiting); try again later"),
        )
        .with(ErrorDetails::QueueFull {
            world_type,
            queue_size,
        })
        .into()),
    }
}

/// `POST /v1/matching/leave`: remove the caller's ticket from a world.
#[tracing::instrument(name = "http_leave", skip_all, fields(player = Empty, world = Empty))]
pub async fn leave(store: &MatchStore, req: Request) -> Result<Response<Body>, Error> {
    finish(leave_inner(store, &req).await)
}

async fn leave_inner(store: &MatchStore, req: &Request) -> Result<Response<Body>, Failure> {
    check_method(req, Route::Leave)?;
    let player = caller(req)?;
    tracing::Span::current().record("player", player.as_str());
    let body: LeaveBody = json_body(req)?;
    let world = configured_world(store, &body.world_type)?;
    tracing::Span::current().record("world", world.name.as_str());
    match use_cases::leave(store, world, &player).await? {
        LeaveOutcome::Left {
            previous_position,
            remaining_queue_size,
        } => Ok(ok(
            &format!("left the {} queue", world.name),
            &Left {
                world_type: &world.name,
                previous_position,
                remaining_queue_size,
            },
        )),
        LeaveOutcome::NotQueued { queued_in } => {
            let msg = match &queued_in {
                Some(other) => format!("not queued in {}; queued in {other}", world.name),
                None => format!("not queued in {}", world.name),
            };
            Err(ApiError::new(ErrorCode::NotQueued, msg)
                .with(ErrorDetails::NotQueued {
                    world_type: world.name.clone(),
                    queued_in,
                })
                .into())
        }
    }
}

/// The `{worldType}` of a queue-status request: the path parameter, or the
/// last path segment when the request did not come with path parameters.
fn queue_status_world(req: &Request) -> Option<String> {
    if let Some(world) = req.path_parameters_ref().and_then(|p| p.first("worldType")) {
        return Some(world.to_owned());
    }
    segment_after(request_path(req), QUEUE_STATUS_PREFIX).map(str::to_owned)
}

/// `GET /v1/matching/queue-status/{worldType}`: a world's queue depth.
#[tracing::instrument(name = "http_queue_status", skip_all, fields(world = Empty))]
pub async fn queue_status(store: &MatchStore, req: Request) -> Result<Response<Body>, Error> {
    finish(queue_status_inner(store, &req).await)
}

async fn queue_status_inner(store: &MatchStore, req: &Request) -> Result<Response<Body>, Failure> {
    check_method(req, Route::QueueStatus)?;
    caller(req)?;
    let Some(name) = queue_status_world(req) else {
        return Err(not_found_error(req).into());
    };
    let world = configured_world(store, &name)?;
    tracing::Span::current().record("world", world.name.as_str());
    let status = use_cases::queue_status(store, world).await?;
    let msg = format!("{} waiting in {}", status.waiting, status.world_type);
    Ok(ok(&msg, &status))
}

/// `GET /v1/matching/my-status`: whether the caller is idle, queued or matched.
#[tracing::instrument(name = "http_my_status", skip_all, fields(player = Empty))]
pub async fn my_status(store: &MatchStore, req: Request) -> Result<Response<Body>, Error> {
    finish(my_status_inner(store, &req).await)
}

async fn my_status_inner(store: &MatchStore, req: &Request) -> Result<Response<Body>, Failure> {
    check_method(req, Route::MyStatus)?;
    let player = caller(req)?;
    tracing::Span::current().record("player", player.as_str());
    match use_cases::player_status(store, &player).await? {
        PlayerStatus::Idle => Ok(ok("not queued", &CallerState::Idle {})),
        PlayerStatus::Queued(q) => Ok(ok(&queued_message(&q), &CallerState::Queued(&q))),
        PlayerStatus::Matched(record) => {
            let msg = format!("matched in {} ({})", record.world_type, record.match_id);
            Ok(ok(&msg, &CallerState::Matched { record: &record }))
        }
    }
}

/// `GET /v1/matching/matches/{matchId}`: the full record of a match, for its
/// participants (a `MATCH_FOUND` that had to leave the ticket data out points
/// here). Anyone else gets the same 404 as for a match that does not exist.
#[tracing::instrument(name = "http_match", skip_all, fields(player = Empty))]
pub async fn match_record(store: &MatchStore, req: Request) -> Result<Response<Body>, Error> {
    finish(match_record_inner(store, &req).await)
}

async fn match_record_inner(store: &MatchStore, req: &Request) -> Result<Response<Body>, Failure> {
    check_method(req, Route::Match)?;
    let player = caller(req)?;
    tracing::Span::current().record("player", player.as_str());
    let raw = req
        .path_parameters_ref()
        .and_then(|p| p.first("matchId"))
        .map(str::to_owned)
        .or_else(|| segment_after(request_path(req), MATCH_PREFIX).map(str::to_owned))
        .ok_or_else(|| not_found_error(req))?;
    let id = MatchId::parse(&raw).map_err(|e| invalid_field("matchId", e))?;
    match use_cases::match_for_participant(store, &id, &player).await? {
        Some(record) => Ok(ok(
            &format!("match {} in {}", record.match_id, record.world_type),
            &record,
        )),
        None => Err(ApiError::new(
            ErrorCode::MatchNotFound,
            format!("no match {id} of yours is on record (it may have expired)"),
        )
        .with(ErrorDetails::Match {
            match_id: id.to_string(),
        })
        .into()),
    }
}
