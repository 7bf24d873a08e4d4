//! The game servers' routes: the allocator's assignment and the game
//! server's result of a match. Only callers whose verified token carries
//! the configured server scope (`servers.scope`) may post them.

use lambda_http::{Body, Error, Request, Response};
use serde::Serialize;
use shared::store::{AssignOutcome, BackfillOutcome};
use shared::use_cases::{self, ResultReport};
use shared::{Assignment, MatchId, MatchLifecycle, MatchReport, MatchStore, MatchWithLifecycle};
use tracing::field::Empty;

use super::errors::{finish, not_found_error, ok, ApiError, ErrorCode, ErrorDetails, Failure};
use super::path_parameter;
use super::request::{authorize, check_method, invalid_field, json_body, json_body_within};
use super::Route;
use serde::Deserialize;

/// A match as the server side sees it: the record with every addition,
/// its whole lifecycle (every player's token) and its open backfill.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ServerView<'a> {
    #[serde(rename = "match")]
    record: &'a shared::MatchRecord,
    state: shared::MatchState,
    #[serde(skip_serializing_if = "Option::is_none")]
    assignment: Option<&'a Assignment>,
    #[serde(skip_serializing_if = "Option::is_none")]
    result: Option<&'a MatchReport>,
    #[serde(skip_serializing_if = "Option::is_none")]
    rating_changes:
        Option<&'a std::collections::BTreeMap<shared::PlayerId, shared::domain::RatingChange>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    backfill: Option<&'a shared::domain::Backfill>,
}

impl<'a> ServerView<'a> {
    fn of(m: &'a MatchWithLifecycle, backfill: Option<&'a shared::domain::Backfill>) -> Self {
        Self {
            record: &m.record,
            state: m.lifecycle.state,
            assignment: m.lifecycle.assignment.as_ref(),
            result: m.lifecycle.report.as_ref(),
            rating_changes: m.lifecycle.rating_changes.as_ref(),
            backfill,
        }
    }
}

/// `data` of an assignment or result answer: the match as the server side
/// sees it (without its backfill), and whether this report changed it.
#[derive(Serialize)]
struct Reported<'a> {
    #[serde(flatten)]
    view: ServerView<'a>,
    /// False when this exact report was stored before (nothing changed).
    changed: bool,
}

impl<'a> Reported<'a> {
    fn of(m: &'a MatchWithLifecycle, changed: bool) -> Self {
        Self {
            view: ServerView::of(m, None),
            changed,
        }
    }
}

/// `GET /v1/matching/matches/{matchId}` for the server side (the caller
/// has the server scope): any match, with its open backfill.
pub(super) async fn server_match_view(
    store: &MatchStore,
    id: &MatchId,
) -> Result<Response<Body>, Failure> {
    match use_cases::match_for_server(store, id).await? {
        Some((m, backfill)) => Ok(ok(
            &format!("match {} in {}", m.match_id, m.world_type),
            &ServerView::of(&m, backfill.as_ref()),
        )),
        None => Err(match_not_found(id)),
    }
}

fn match_id(req: &Request) -> Result<MatchId, Failure> {
    let raw = path_parameter(req, "matchId").ok_or_else(|| not_found_error(req))?;
    MatchId::parse(&raw).map_err(|e| invalid_field("matchId", e).into())
}

fn match_not_found(id: &MatchId) -> Failure {
    ApiError::new(
        ErrorCode::MatchNotFound,
        format!("no match {id} is on record (it may have expired)"),
    )
    .with(ErrorDetails::Match {
        match_id: id.to_string(),
    })
    .into()
}

fn conflict(code: ErrorCode, id: &MatchId, life: &MatchLifecycle, msg: &str) -> Failure {
    ApiError::new(code, msg)
        .with(ErrorDetails::MatchState {
            match_id: id.to_string(),
            state: life.state,
        })
        .into()
}

/// `POST /v1/matching/matches/{matchId}/assignment`: the studio's
/// allocator names the server of a match. Stored once (the same assignment
/// again is 200 and changes nothing, a different one 409) and pushed to
/// every participant as `MATCH_ASSIGNED`, each with their own token only.
#[tracing::instrument(name = "http_assign", skip_all, fields(caller = Empty, match_id = Empty))]
pub async fn assign(store: &MatchStore, req: Request) -> Result<Response<Body>, Error> {
    finish(assign_inner(store, &req).await)
}

async fn assign_inner(store: &MatchStore, req: &Request) -> Result<Response<Body>, Failure> {
    check_method(req, Route::Assign)?;
    let caller = super::request::caller(req)?;
    tracing::Span::current().record("caller", caller.as_str());
    let id = match_id(req)?;
    tracing::Span::current().record("match_id", id.as_str());
    let assignment: Assignment = json_body_within(req, Route::Assign.max_body_bytes())?;
    assignment.validate().map_err(|e| {
        ApiError::new(ErrorCode::InvalidAssignment, e.to_string()).with(ErrorDetails::Field {
            field: "assignment",
        })
    })?;
    // The route's access rule, once the request is read: a malformed
    // report is a 400 whoever sends it.
    authorize(req, Route::Assign, store.settings())?;
    match use_cases::assign_match(store, &id, &assignment).await? {
        AssignOutcome::Assigned(m) => Ok(ok(
            &format!("match {id} assigned to {}", assignment.connection),
            &Reported::of(&m, true),
        )),
        AssignOutcome::Unchanged(m) => Ok(ok(
            &format!("match {id} was assigned this server already"),
            &Reported::of(&m, false),
        )),
        AssignOutcome::Conflict(life) => Err(conflict(
            ErrorCode::AssignmentConflict,
            &id,
            &life,
            "the match has another assignment; an assignment is made once",
        )),
        AssignOutcome::Finished(life) => Err(conflict(
            ErrorCode::MatchFinished,
            &id,
            &life,
            "the match has its result already",
        )),
        AssignOutcome::NotParticipant(player) => Err(ApiError::new(
            ErrorCode::InvalidAssignment,
            format!("players: {player} is not in match {id}"),
        )
        .with(ErrorDetails::Member { player_id: player })
        .into()),
        AssignOutcome::NotFound => Err(match_not_found(&id)),
    }
}

/// `POST /v1/matching/matches/{matchId}/result`: the game server reports
/// how a match ended. Accepted once (an identical repeat is 200 and changes
/// nothing, a different one 409); in a rated world that updates ratings,
/// every participant's rating moves in the same step; every participant
/// hears `MATCH_RESULT`, and the match is FINISHED (its players are free).
#[tracing::instrument(name = "http_result", skip_all, fields(caller = Empty, match_id = Empty))]
pub async fn report(store: &MatchStore, req: Request) -> Result<Response<Body>, Error> {
    finish(report_inner(store, &req).await)
}

async fn report_inner(store: &MatchStore, req: &Request) -> Result<Response<Body>, Failure> {
    check_method(req, Route::Report)?;
    let caller = super::request::caller(req)?;
    tracing::Span::current().record("caller", caller.as_str());
    let id = match_id(req)?;
    tracing::Span::current().record("match_id", id.as_str());
    let report: MatchReport = json_body(req)?;
    authorize(req, Route::Report, store.settings())?;
    match use_cases::report_result(store, &id, &report).await? {
        ResultReport::Finished(m) => Ok(ok(
            &format!("result of match {id} recorded"),
            &Reported::of(&m, true),
        )),
        ResultReport::Unchanged(m) => Ok(ok(
            &format!("this result of match {id} was recorded already"),
            &Reported::of(&m, false),
        )),
        ResultReport::Conflict(life) => Err(conflict(
            ErrorCode::ResultConflict,
            &id,
            &life,
            "the match has another result; a result is reported once",
        )),
        ResultReport::Invalid(e) => Err(ApiError::new(ErrorCode::InvalidResult, e.to_string())
            .with(ErrorDetails::Field { field: "result" })
            .into()),
        ResultReport::NotFound => Err(match_not_found(&id)),
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct BackfillBody {
    /// The players the match has now, one list per team.
    teams: Vec<Vec<shared::PlayerId>>,
    /// How many of the match's fills the server had heard of when it
    /// listed `teams`: players later fills added keep their seats.
    #[serde(default, deserialize_with = "shared::domain::integral::option_u32")]
    fills: Option<u32>,
}

/// `data` of a backfill answer.
#[derive(Serialize)]
struct BackfillAnswer<'a> {
    backfill: &'a shared::domain::Backfill,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    replaced: bool,
}

fn backfill_not_found(id: &MatchId) -> Failure {
    ApiError::new(
        ErrorCode::BackfillNotFound,
        format!("match {id} has no open backfill (cancelled, filled, lapsed or never requested)"),
    )
    .with(ErrorDetails::Match {
        match_id: id.to_string(),
    })
    .into()
}

fn backfill_answer(id: &MatchId, outcome: BackfillOutcome) -> Result<Response<Body>, Failure> {
    match outcome {
        BackfillOutcome::Open { backfill, replaced } => Ok(ok(
            &format!(
                "backfill of match {id} open: {} seat(s)",
                backfill.open.iter().sum::<u32>()
            ),
            &BackfillAnswer {
                backfill: &backfill,
                replaced,
            },
        )),
        BackfillOutcome::Renewed(backfill) => Ok(ok(
            &format!("backfill of match {id} renewed"),
            &BackfillAnswer {
                backfill: &backfill,
                replaced: false,
            },
        )),
        BackfillOutcome::Cancelled(backfill) => Ok(ok(
            &format!("backfill of match {id} cancelled"),
            &BackfillAnswer {
                backfill: &backfill,
                replaced: false,
            },
        )),
        BackfillOutcome::NotFound => Err(backfill_not_found(id)),
        BackfillOutcome::MatchNotFound => Err(match_not_found(id)),
        BackfillOutcome::NotAssigned => Err(ApiError::new(
            ErrorCode::MatchNotAssigned,
            format!("match {id} has no server yet; a backfill belongs to a running match"),
        )
        .with(ErrorDetails::MatchState {
            match_id: id.to_string(),
            state: shared::MatchState::Formed,
        })
        .into()),
        BackfillOutcome::Finished => Err(ApiError::new(
            ErrorCode::MatchFinished,
            format!("match {id} has its result already"),
        )
        .with(ErrorDetails::MatchState {
            match_id: id.to_string(),
            state: shared::MatchState::Finished,
        })
        .into()),
        BackfillOutcome::Invalid(reason) => Err(ApiError::new(ErrorCode::InvalidBackfill, reason)
            .with(ErrorDetails::Field { field: "teams" })
            .into()),
    }
}

/// `POST /v1/matching/matches/{matchId}/backfill`: a running match asks for
/// players with the players it has now per team; the open seats are filled
/// before new matches form. Replaces the match's backfill if it has one.
#[tracing::instrument(name = "http_backfill", skip_all, fields(caller = Empty, match_id = Empty))]
pub async fn backfill(store: &MatchStore, req: Request) -> Result<Response<Body>, Error> {
    finish(backfill_inner(store, &req).await)
}

async fn backfill_inner(store: &MatchStore, req: &Request) -> Result<Response<Body>, Failure> {
    check_method(req, Route::Backfill)?;
    let caller = super::request::caller(req)?;
    tracing::Span::current().record("caller", caller.as_str());
    let id = match_id(req)?;
    tracing::Span::current().record("match_id", id.as_str());
    let body: BackfillBody = json_body_within(req, Route::Backfill.max_body_bytes())?;
    authorize(req, Route::Backfill, store.settings())?;
    backfill_answer(
        &id,
        use_cases::request_backfill(store, &id, &body.teams, body.fills).await?,
    )
}

/// `POST /v1/matching/matches/{matchId}/backfill/keepalive`: the server
/// keeps its backfill open (it lapses unless renewed within the
/// keep-alive). No body.
#[tracing::instrument(name = "http_backfill_keepalive", skip_all, fields(caller = Empty, match_id = Empty))]
pub async fn backfill_keepalive(store: &MatchStore, req: Request) -> Result<Response<Body>, Error> {
    finish(backfill_keepalive_inner(store, &req).await)
}

async fn backfill_keepalive_inner(
    store: &MatchStore,
    req: &Request,
) -> Result<Response<Body>, Failure> {
    check_method(req, Route::BackfillKeepalive)?;
    let caller = super::request::caller(req)?;
    tracing::Span::current().record("caller", caller.as_str());
    let id = match_id(req)?;
    tracing::Span::current().record("match_id", id.as_str());
    authorize(req, Route::BackfillKeepalive, store.settings())?;
    backfill_answer(&id, use_cases::renew_backfill(store, &id).await?)
}

/// `DELETE /v1/matching/matches/{matchId}/backfill`: the server cancels its
/// backfill; the seats filled so far stay filled.
#[tracing::instrument(name = "http_cancel_backfill", skip_all, fields(caller = Empty, match_id = Empty))]
pub async fn cancel_backfill(store: &MatchStore, req: Request) -> Result<Response<Body>, Error> {
    finish(cancel_backfill_inner(store, &req).await)
}

async fn cancel_backfill_inner(
    store: &MatchStore,
    req: &Request,
) -> Result<Response<Body>, Failure> {
    check_method(req, Route::CancelBackfill)?;
    let caller = super::request::caller(req)?;
    tracing::Span::current().record("caller", caller.as_str());
    let id = match_id(req)?;
    tracing::Span::current().record("match_id", id.as_str());
    authorize(req, Route::CancelBackfill, store.settings())?;
    backfill_answer(&id, use_cases::cancel_backfill(store, &id).await?)
}
