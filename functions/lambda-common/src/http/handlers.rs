//! The queue, status, match and rating routes: parse, call one use case,
//! map its outcome. The party routes are in `parties.rs`.

use lambda_http::{Body, Error, Request, Response};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use shared::store::JoinInput;
use shared::use_cases::RatingWrite;
use shared::{
    use_cases, JoinOutcome, LeaveOutcome, MatchId, MatchRecord, MatchStore, PartyView, PlayerId,
    PlayerStatus, ProposalView, Pusher, QueuePosition, Rating, TicketData, WorldName,
};
use tracing::field::Empty;

use super::errors::{finish, not_found_error, ok, ApiError, ErrorCode, ErrorDetails, Failure};
use super::joined::{joined_worlds, AlsoInBody};
use super::rejection::{invalid_rating, rejected};
use super::request::{
    authorize, caller, check_method, claim, configured_world, forbidden, has_scope, invalid_field,
    json_body, scopes,
};
use super::{path_parameter, ConfiguredScope, Route};

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct JoinBody {
    world_type: String,
    /// Optional ticket data; `null` means none.
    #[serde(default)]
    data: Option<Value>,
    /// Worlds with regions: the client's latency to each region (ms).
    #[serde(default)]
    latencies: Option<Value>,
    /// Worlds with attributes: the player's client attributes.
    #[serde(default)]
    attributes: Option<Value>,
    /// Other worlds of `worldType`'s queueGroup the same ticket waits in.
    #[serde(default)]
    also_in: Option<Vec<AlsoInBody>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct LeaveBody {
    world_type: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RatingBody {
    rating: f64,
    /// The world the rating is for; absent: every world.
    #[serde(default)]
    world_type: Option<String>,
}

/// `data` of a rating write.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct RatingStored<'a> {
    player_id: &'a PlayerId,
    #[serde(skip_serializing_if = "Option::is_none")]
    world_type: Option<&'a WorldName>,
    rating: Rating,
    previous_rating: Option<Rating>,
}

/// `data` of a join, party or my-status answer: the caller's state.
#[derive(Serialize)]
#[serde(tag = "status", rename_all = "SCREAMING_SNAKE_CASE")]
pub(super) enum CallerState<'a> {
    Idle {},
    Queued(&'a QueuePosition),
    /// In a party that is still assembling.
    Party {
        party: &'a PartyView,
    },
    /// In a match proposal awaiting answers (a ready check).
    Proposed {
        proposal: &'a ProposalView,
    },
    Matched {
        #[serde(rename = "match")]
        record: &'a MatchRecord,
    },
    /// my-status: the latest match with what happened to it since (state,
    /// the caller's seat on the server, the result).
    #[serde(rename = "MATCHED")]
    MatchedWithLifecycle {
        #[serde(rename = "match")]
        view: shared::MatchView<'a>,
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

pub(super) fn queued_message(q: &QueuePosition) -> String {
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
    let joined = joined_worlds(
        store,
        world,
        body.latencies.as_ref(),
        body.attributes.as_ref(),
        body.also_in.as_deref().unwrap_or_default(),
    )?;
    let claimed = match (joined.rated(world), &store.settings().ratings.claim) {
        (Some(rated), Some(name)) => claimed_rating(store, rated, claim(req, name))?,
        _ => None,
    };
    let also = joined.also_joined();
    let input = JoinInput {
        data: data.as_ref(),
        claimed,
        latencies: joined.latencies.as_ref(),
        attributes: joined.attributes.as_deref(),
        also: &also,
    };

    match use_cases::join_and_notify(store, pusher, world, &player, &input).await? {
        JoinOutcome::Queued(q) => Ok(ok(&queued_message(&q), &CallerState::Queued(&q))),
        JoinOutcome::Matched { record, formed, .. } => {
            crate::metrics::print_request_matches(&formed);
            let msg = format!("match {} found in {}", record.match_id, record.world_type);
            Ok(ok(&msg, &CallerState::Matched { record: &record }))
        }
        JoinOutcome::Proposed(proposal) => Ok(ok(
            &proposed_message(&proposal),
            &CallerState::Proposed {
                proposal: &proposal,
            },
        )),
        JoinOutcome::Backfilled { joined, .. } => {
            let msg = format!(
                "seated in running match {} in {} (backfill)",
                joined.match_id, joined.world_type
            );
            Ok(ok(
                &msg,
                &CallerState::MatchedWithLifecycle {
                    view: joined.view_for(&player),
                },
            ))
        }
        JoinOutcome::Rejected(rejection) => Err(rejected(store, rejection)),
    }
}

pub(super) fn proposed_message(p: &ProposalView) -> String {
    format!(
        "match {} proposed in {}: accept by {} (Unix ms)",
        p.match_id, p.world_type, p.accept_by
    )
}

/// The rating in the caller's verified token claim, checked against the
/// configured range (an unusable claim is the token's fault: 400).
pub(super) fn claimed_rating(
    store: &MatchStore,
    world: &shared::World,
    value: Option<&str>,
) -> Result<Option<Rating>, Failure> {
    let Some(value) = value else {
        return Ok(None);
    };
    let r = &store.settings().ratings;
    match Rating::parse(value) {
        Ok(rating) if (r.min..=r.max).contains(&rating.value()) => Ok(Some(rating)),
        _ => Err(invalid_rating(
            store,
            Some(world.name.clone()),
            value,
            "claim",
        )),
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

/// `GET /v1/matching/queue-status/{worldType}`: a world's queue depth.
#[tracing::instrument(name = "http_queue_status", skip_all, fields(world = Empty))]
pub async fn queue_status(store: &MatchStore, req: Request) -> Result<Response<Body>, Error> {
    finish(queue_status_inner(store, &req).await)
}

async fn queue_status_inner(store: &MatchStore, req: &Request) -> Result<Response<Body>, Failure> {
    check_method(req, Route::QueueStatus)?;
    caller(req)?;
    let Some(name) = path_parameter(req, "worldType") else {
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
        PlayerStatus::Party(party) => Ok(ok(
            &format!(
                "in party {} of {}, assembling",
                party.party_id, party.world_type
            ),
            &CallerState::Party { party: &party },
        )),
        PlayerStatus::Proposed(proposal) => Ok(ok(
            &proposed_message(&proposal),
            &CallerState::Proposed {
                proposal: &proposal,
            },
        )),
        PlayerStatus::Matched(m) => {
            let msg = format!("matched in {} ({})", m.world_type, m.match_id);
            Ok(ok(
                &msg,
                &CallerState::MatchedWithLifecycle {
                    view: m.view_for(&player),
                },
            ))
        }
    }
}

/// `GET /v1/matching/matches/{matchId}`: the full record of a match, for its
/// participants (a `MATCH_FOUND` that had to leave the ticket data out points
/// here). Anyone else gets the same 404 as for a match that does not exist,
/// but a token with the server scope: the allocator and game servers see
/// any match with its whole lifecycle and open backfill.
#[tracing::instrument(name = "http_match", skip_all, fields(player = Empty))]
pub async fn match_record(store: &MatchStore, req: Request) -> Result<Response<Body>, Error> {
    finish(match_record_inner(store, &req).await)
}

async fn match_record_inner(store: &MatchStore, req: &Request) -> Result<Response<Body>, Failure> {
    check_method(req, Route::Match)?;
    let player = caller(req)?;
    tracing::Span::current().record("player", player.as_str());
    let raw = path_parameter(req, "matchId").ok_or_else(|| not_found_error(req))?;
    let id = MatchId::parse(&raw).map_err(|e| invalid_field("matchId", e))?;
    if has_scope(req, ConfiguredScope::Server, store.settings()) {
        return super::lifecycle::server_match_view(store, &id).await;
    }
    match use_cases::match_for_participant(store, &id, &player).await? {
        Some(m) => Ok(ok(
            &format!("match {} in {}", m.match_id, m.world_type),
            &m.view_for(&player),
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

/// `PUT /v1/ratings/{playerId}`: writes a player's rating to the trusted
/// ratings store. Only callers whose verified token carries the configured
/// writer scope (a game server, an admin tool) may; everyone else gets 403.
#[tracing::instrument(name = "http_put_rating", skip_all, fields(caller = Empty))]
pub async fn put_rating(store: &MatchStore, req: Request) -> Result<Response<Body>, Error> {
    finish(put_rating_inner(store, &req).await)
}

async fn put_rating_inner(store: &MatchStore, req: &Request) -> Result<Response<Body>, Failure> {
    check_method(req, Route::Rating)?;
    let caller = caller(req)?;
    tracing::Span::current().record("caller", caller.as_str());
    let raw = path_parameter(req, "playerId").ok_or_else(|| not_found_error(req))?;
    let player = PlayerId::parse(&raw).map_err(|e| invalid_field("playerId", e))?;
    let body: RatingBody = json_body(req)?;
    let world = body
        .world_type
        .as_deref()
        .map(|name| configured_world(store, name).map(|w| w.name.clone()))
        .transpose()?;
    let rating = Rating::new(body.rating).map_err(|e| invalid_field("rating", e))?;
    // The route's access rule, once the request is read: a malformed write
    // is a 400 whoever sends it.
    authorize(req, Route::Rating, store.settings())?;
    let scopes = scopes(req);
    let scopes: Vec<&str> = scopes.iter().map(String::as_str).collect();
    match use_cases::set_rating(store, &scopes, &player, world.as_ref(), rating).await? {
        RatingWrite::Stored { previous } => Ok(ok(
            &format!("rating of {player} set to {rating}"),
            &RatingStored {
                player_id: &player,
                world_type: world.as_ref(),
                rating,
                previous_rating: previous,
            },
        )),
        RatingWrite::Forbidden => {
            Err(forbidden(ConfiguredScope::RatingsWriter, store.settings()).into())
        }
        RatingWrite::OutOfRange { .. } => {
            Err(invalid_rating(store, world, &rating.to_string(), "request"))
        }
    }
}
