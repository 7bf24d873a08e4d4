//! The operator's actions (`POST /v1/admin/...`): remove a ticket, cancel
//! a proposal, finish or void a match. Each is idempotent (a repeat answers
//! 200 with `changed: false`) and audited (`shared::use_cases::admin`).
//! Each takes an optional `note` for the audit.

use lambda_http::{Body, Error, Request, Response};
use serde::{Deserialize, Serialize};
use shared::domain::{ProposalCancellation, TicketRemoval, MAX_NOTE_CHARS};
use shared::use_cases::admin::{self, Operator};
use shared::use_cases::ResultReport;
use shared::{MatchId, MatchReport, MatchStore, MatchWithLifecycle, PlayerId, WorldName};
use tracing::field::Empty;

use super::admin::{admit, OperatorMatch};
use super::errors::{finish, not_found_error, ok, ApiError, ErrorCode, ErrorDetails, Failure};
use super::request::{configured_world, invalid_field, json_body, optional_json_body};
use super::{path_parameter, Route};

/// The body of remove, cancel and void: optional, a note at most.
#[derive(Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct ActionBody {
    #[serde(default)]
    note: Option<String>,
}

/// The body of finish: the result, as a game server reports it.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FinishBody {
    result: MatchReport,
    #[serde(default)]
    note: Option<String>,
}

fn checked_note(note: Option<&str>) -> Result<Option<&str>, Failure> {
    match note {
        Some(n) if n.chars().count() > MAX_NOTE_CHARS || n.chars().any(char::is_control) => {
            Err(invalid_field(
                "note",
                format!("note: at most {MAX_NOTE_CHARS} characters, no control characters"),
            )
            .into())
        }
        other => Ok(other),
    }
}

fn match_id(req: &Request) -> Result<MatchId, Failure> {
    let raw = path_parameter(req, "matchId").ok_or_else(|| not_found_error(req))?;
    MatchId::parse(&raw).map_err(|e| invalid_field("matchId", e).into())
}

/// `data` of a ticket removal.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Removal<'a> {
    changed: bool,
    world_type: &'a WorldName,
    player_id: &'a PlayerId,
    #[serde(skip_serializing_if = "Option::is_none")]
    previous_position: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    remaining_queue_size: Option<u64>,
    /// Players told TICKET_REMOVED (a party ticket's members).
    #[serde(skip_serializing_if = "Option::is_none")]
    players_told: Option<u64>,
    /// Nothing removed: the player's state (`idle`, `ticket`, `party`,
    /// `proposal`, `match`, `cooldown`).
    #[serde(skip_serializing_if = "Option::is_none")]
    player_state: Option<&'a str>,
}

/// `data` of a proposal cancellation.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Cancellation<'a> {
    changed: bool,
    match_id: &'a MatchId,
    #[serde(skip_serializing_if = "Option::is_none")]
    world_type: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    requeued: Option<u64>,
}

/// `data` of a finish or void: the match as the operator sees it.
#[derive(Serialize)]
struct Ended<'a> {
    changed: bool,
    #[serde(flatten)]
    view: OperatorMatch<'a>,
}

/// `POST /v1/admin/worlds/{worldType}/tickets/{playerId}/remove`.
#[tracing::instrument(name = "http_admin_remove_ticket", skip_all, fields(operator = Empty))]
pub async fn admin_remove_ticket(
    store: &MatchStore,
    req: Request,
) -> Result<Response<Body>, Error> {
    finish(remove_inner(store, &req).await)
}

async fn remove_inner(store: &MatchStore, req: &Request) -> Result<Response<Body>, Failure> {
    let operator = admit(req, Route::AdminRemoveTicket, store)?;
    let name = path_parameter(req, "worldType").ok_or_else(|| not_found_error(req))?;
    let world = configured_world(store, &name)?;
    let raw = path_parameter(req, "playerId").ok_or_else(|| not_found_error(req))?;
    let player = PlayerId::parse(&raw).map_err(|e| invalid_field("playerId", e))?;
    let body: ActionBody = optional_json_body(req)?;
    let note = checked_note(body.note.as_deref())?;
    let by = Operator {
        id: &operator,
        note,
    };
    let answer = |changed| Removal {
        changed,
        world_type: &world.name,
        player_id: &player,
        previous_position: None,
        remaining_queue_size: None,
        players_told: None,
        player_state: None,
    };
    match admin::remove_ticket(store, by, world, &player).await? {
        TicketRemoval::Removed {
            previous_position,
            remaining_queue_size,
            players_told,
        } => Ok(ok(
            &format!("removed {player}'s ticket from {}", world.name),
            &Removal {
                previous_position: Some(previous_position),
                remaining_queue_size: Some(remaining_queue_size),
                players_told: Some(players_told),
                ..answer(true)
            },
        )),
        TicketRemoval::NotQueued { state, .. } => Ok(ok(
            &format!("{player} has no ticket waiting in {} ({state})", world.name),
            &Removal {
                player_state: Some(&state),
                ..answer(false)
            },
        )),
    }
}

/// `POST /v1/admin/proposals/{matchId}/cancel`.
#[tracing::instrument(name = "http_admin_cancel_proposal", skip_all, fields(operator = Empty))]
pub async fn admin_cancel_proposal(
    store: &MatchStore,
    req: Request,
) -> Result<Response<Body>, Error> {
    finish(cancel_inner(store, &req).await)
}

async fn cancel_inner(store: &MatchStore, req: &Request) -> Result<Response<Body>, Failure> {
    let operator = admit(req, Route::AdminCancelProposal, store)?;
    let id = match_id(req)?;
    let body: ActionBody = optional_json_body(req)?;
    let note = checked_note(body.note.as_deref())?;
    let by = Operator {
        id: &operator,
        note,
    };
    match admin::cancel_proposal(store, by, &id).await? {
        ProposalCancellation::Cancelled { world, requeued } => Ok(ok(
            &format!("proposal {id} cancelled; {requeued} ticket(s) requeued"),
            &Cancellation {
                changed: true,
                match_id: &id,
                world_type: Some(&world),
                requeued: Some(requeued),
            },
        )),
        ProposalCancellation::NotFound => Ok(ok(
            &format!("no open proposal {id} (answered, timed out or cancelled already)"),
            &Cancellation {
                changed: false,
                match_id: &id,
                world_type: None,
                requeued: None,
            },
        )),
    }
}

/// `POST /v1/admin/matches/{matchId}/finish`: records a result, as the
/// game server would.
#[tracing::instrument(name = "http_admin_finish_match", skip_all, fields(operator = Empty))]
pub async fn admin_finish_match(store: &MatchStore, req: Request) -> Result<Response<Body>, Error> {
    finish(finish_inner(store, &req).await)
}

async fn finish_inner(store: &MatchStore, req: &Request) -> Result<Response<Body>, Failure> {
    let operator = admit(req, Route::AdminFinishMatch, store)?;
    let id = match_id(req)?;
    let body: FinishBody = json_body(req)?;
    if body.result.cancelled {
        return Err(ApiError::new(
            ErrorCode::InvalidResult,
            "a finish has ranks; void the match to cancel it",
        )
        .with(ErrorDetails::Field { field: "result" })
        .into());
    }
    let note = checked_note(body.note.as_deref())?;
    end(store, &operator, note, &id, &body.result).await
}

/// `POST /v1/admin/matches/{matchId}/void`: the game did not count; the
/// match finishes as cancelled and no rating moves.
#[tracing::instrument(name = "http_admin_void_match", skip_all, fields(operator = Empty))]
pub async fn admin_void_match(store: &MatchStore, req: Request) -> Result<Response<Body>, Error> {
    finish(void_inner(store, &req).await)
}

async fn void_inner(store: &MatchStore, req: &Request) -> Result<Response<Body>, Failure> {
    let operator = admit(req, Route::AdminVoidMatch, store)?;
    let id = match_id(req)?;
    let body: ActionBody = optional_json_body(req)?;
    let note = checked_note(body.note.as_deref())?;
    let report = MatchReport {
        team_ranks: None,
        player_ranks: None,
        cancelled: true,
    };
    end(store, &operator, note, &id, &report).await
}

async fn end(
    store: &MatchStore,
    operator: &PlayerId,
    note: Option<&str>,
    id: &MatchId,
    report: &MatchReport,
) -> Result<Response<Body>, Failure> {
    let by = Operator { id: operator, note };
    let what = if report.cancelled {
        "voided"
    } else {
        "finished"
    };
    // The age is counted on the function's clock here (the pages count on
    // Redis's); close enough for a human reading it.
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
    let answer = |m: &MatchWithLifecycle, changed: bool, msg: String| {
        ok(
            &msg,
            &Ended {
                changed,
                view: OperatorMatch::of(m, now),
            },
        )
    };
    match admin::end_match(store, by, id, report).await? {
        ResultReport::Finished(m) => Ok(answer(&m, true, format!("match {id} {what}"))),
        ResultReport::Unchanged(m) => Ok(answer(
            &m,
            false,
            format!("match {id} was {what} so already"),
        )),
        ResultReport::Conflict(life) => Err(ApiError::new(
            ErrorCode::ResultConflict,
            "the match has another result already",
        )
        .with(ErrorDetails::MatchState {
            match_id: id.to_string(),
            state: life.state,
        })
        .into()),
        ResultReport::Invalid(e) => Err(ApiError::new(ErrorCode::InvalidResult, e.to_string())
            .with(ErrorDetails::Field { field: "result" })
            .into()),
        ResultReport::NotFound => Err(ApiError::new(
            ErrorCode::MatchNotFound,
            format!("no match {id} is on record (it may have expired)"),
        )
        .with(ErrorDetails::Match {
            match_id: id.to_string(),
        })
        .into()),
    }
}
