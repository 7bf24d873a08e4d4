//! `POST /v1/matching/accept`: a participant answers a match proposal (a
//! ready check).

use lambda_http::{Body, Error, Request, Response};
use serde::{Deserialize, Serialize};
use shared::{use_cases, AnswerOutcome, MatchId, MatchRecord, MatchStore, Pusher, WorldName};
use tracing::field::Empty;

use super::errors::{finish, ok, ApiError, ErrorCode, ErrorDetails, Failure};
use super::request::{caller, check_method, invalid_field, json_body};
use super::Route;

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct AnswerBody {
    match_id: String,
    accept: bool,
}

/// `data` of an answer.
#[derive(Serialize)]
#[serde(tag = "status", rename_all = "SCREAMING_SNAKE_CASE")]
enum Answered<'a> {
    /// Accepted; `accepted` of `total` so far.
    #[serde(rename_all = "camelCase")]
    Accepted {
        match_id: &'a MatchId,
        accepted: u64,
        total: u64,
    },
    /// Everyone accepted: the match is final.
    Matched {
        #[serde(rename = "match")]
        record: &'a MatchRecord,
    },
    /// Cancelled (a decline, or the backfill it was for ended): the
    /// others requeued. `requeued` means what `MATCH_CANCELLED`'s does, for
    /// the caller: whether their ticket is back in the queue; how many
    /// tickets went back is `requeued_tickets`.
    #[serde(rename_all = "camelCase")]
    Cancelled {
        match_id: &'a MatchId,
        world_type: &'a WorldName,
        requeued: bool,
        requeued_tickets: u64,
    },
}

/// `POST /v1/matching/accept` `{"matchId", "accept": true|false}`.
#[tracing::instrument(name = "http_accept", skip_all, fields(player = Empty, match_id = Empty))]
pub async fn accept<P: Pusher>(
    store: &MatchStore,
    pusher: &P,
    req: Request,
) -> Result<Response<Body>, Error> {
    finish(accept_inner(store, pusher, &req).await)
}

async fn accept_inner<P: Pusher>(
    store: &MatchStore,
    pusher: &P,
    req: &Request,
) -> Result<Response<Body>, Failure> {
    check_method(req, Route::Accept)?;
    let player = caller(req)?;
    tracing::Span::current().record("player", player.as_str());
    let body: AnswerBody = json_body(req)?;
    let id = MatchId::parse(&body.match_id).map_err(|e| invalid_field("matchId", e))?;
    tracing::Span::current().record("match_id", id.as_str());
    let not_found = |id: &MatchId| -> Failure {
        ApiError::new(
            ErrorCode::ProposalNotFound,
            format!("no pending proposal {id} of yours (it may have been decided already)"),
        )
        .with(ErrorDetails::Match {
            match_id: id.to_string(),
        })
        .into()
    };
    match use_cases::answer_proposal(store, pusher, &id, &player, body.accept).await? {
        AnswerOutcome::Accepted { accepted, total }
        | AnswerOutcome::AlreadyAccepted { accepted, total } => Ok(ok(
            &format!("accepted match {id}: {accepted} of {total} have"),
            &Answered::Accepted {
                match_id: &id,
                accepted,
                total,
            },
        )),
        AnswerOutcome::Matched { record, .. } => Ok({
            crate::metrics::print_request_matches(std::slice::from_ref(&*record));
            ok(
                &format!("everyone accepted: match {id} is on"),
                &Answered::Matched { record: &record },
            )
        }),
        AnswerOutcome::Backfilled { joined, .. } => Ok(ok(
            &format!(
                "everyone accepted: you join running match {}",
                joined.match_id
            ),
            &super::handlers::CallerState::MatchedWithLifecycle {
                view: joined.view_for(&player),
            },
        )),
        // A decline removes the caller's ticket; an accept is answered
        // CANCELLED only when the backfill it was for ended, and then every
        // ticket, the caller's too, is back (proposal_answer.lua).
        AnswerOutcome::Cancelled {
            world_type,
            requeued,
        } => Ok(ok(
            &if body.accept {
                format!("match {id} was cancelled (its backfill ended); you are back in the queue")
            } else {
                format!("declined match {id}; the others are back in the queue")
            },
            &Answered::Cancelled {
                match_id: &id,
                world_type: &world_type,
                requeued: body.accept,
                requeued_tickets: requeued,
            },
        )),
        AnswerOutcome::Expired { .. } => Err(ApiError::new(
            ErrorCode::ProposalExpired,
            format!("the time to accept match {id} had run out"),
        )
        .with(ErrorDetails::Match {
            match_id: id.to_string(),
        })
        .into()),
        AnswerOutcome::NotFound => Err(not_found(&id)),
    }
}
