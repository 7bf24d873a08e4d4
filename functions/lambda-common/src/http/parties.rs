//! The party routes: `POST /v1/parties` (create), `POST
//! /v1/parties/{partyId}/join` and `DELETE /v1/parties/{partyId}` (cancel,
//! or decline an invitation).

use lambda_http::http::StatusCode;
use lambda_http::{Body, Error, Request, Response};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use shared::store::JoinInput;
use shared::use_cases::{self, PartyRejection};
use shared::{
    MatchStore, PartyCancelOutcome, PartyCreateOutcome, PartyId, PartyJoinOutcome, PartyView,
    PlayerId, Pusher, Rating, TicketData, World,
};
use tracing::field::Empty;

use super::errors::{
    envelope, finish, not_found_error, ok, ApiError, ErrorCode, ErrorDetails, Failure,
};
use super::handlers::{claimed_rating, proposed_message, queued_message, CallerState};
use super::joined::{joined_worlds, party_also_in, AlsoInBody};
use super::rejection::rejected;
use super::request::{
    caller, check_method, claim, configured_world, invalid_field, json_body, optional_json_body,
};
use super::{path_parameter, Route};

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct CreatePartyBody {
    world_type: String,
    /// The players to invite (the caller, the leader, may be listed too).
    members: Vec<String>,
    /// The leader's optional ticket data.
    #[serde(default)]
    data: Option<Value>,
    /// Worlds with regions: the leader's latency to each region (ms).
    #[serde(default)]
    latencies: Option<Value>,
    /// Worlds with attributes: the leader's client attributes.
    #[serde(default)]
    attributes: Option<Value>,
    /// Other worlds of `worldType`'s queueGroup the party queues in too.
    #[serde(default)]
    also_in: Option<Vec<AlsoInBody>>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct JoinPartyBody {
    /// The joining player's optional ticket data.
    #[serde(default)]
    data: Option<Value>,
    /// Worlds with regions: the player's latency to each region (ms).
    #[serde(default)]
    latencies: Option<Value>,
    /// Worlds with attributes: the player's client attributes.
    #[serde(default)]
    attributes: Option<Value>,
    /// A party queuing in several worlds: the player's attributes in some
    /// of the others.
    #[serde(default)]
    also_in: Option<Vec<AlsoInBody>>,
}

/// `data` of a cancelled party.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Cancelled<'a> {
    cancelled: bool,
    party: &'a PartyView,
}

fn ticket_data(data: Option<&Value>) -> Result<Option<TicketData>, Failure> {
    Ok(data
        .map(TicketData::from_value)
        .transpose()
        .map_err(|e| invalid_field("data", e))?)
}

/// The caller's verified rating claim, for `rated`, the first rated world
/// joined (none: no claim is read).
fn rating_claim(
    store: &MatchStore,
    rated: Option<&World>,
    req: &Request,
) -> Result<Option<Rating>, Failure> {
    match (rated, &store.settings().ratings.claim) {
        (Some(world), Some(name)) => claimed_rating(store, world, claim(req, name)),
        _ => Ok(None),
    }
}

/// The `{partyId}` of the request: the path parameter, else from the path.
fn party_id(req: &Request) -> Result<PartyId, Failure> {
    let raw = path_parameter(req, "partyId").ok_or_else(|| not_found_error(req))?;
    Ok(PartyId::parse(&raw).map_err(|e| invalid_field("partyId", e))?)
}

fn party_not_found(id: &PartyId) -> Failure {
    ApiError::new(
        ErrorCode::PartyNotFound,
        format!("no party {id} you are a member of (it may have been cancelled or matched)"),
    )
    .with(ErrorDetails::Party {
        party_id: id.to_string(),
    })
    .into()
}

/// The configured world of a party id; a party of any other world is not
/// found.
fn party_world<'a>(store: &'a MatchStore, id: &PartyId) -> Result<&'a World, Failure> {
    store
        .settings()
        .worlds
        .get(id.world().as_str())
        .ok_or_else(|| party_not_found(id))
}

/// `POST /v1/parties`: the caller creates a party and invites `members`.
#[tracing::instrument(name = "http_create_party", skip_all, fields(player = Empty, world = Empty))]
pub async fn create_party(store: &MatchStore, req: Request) -> Result<Response<Body>, Error> {
    finish(create_party_inner(store, &req).await)
}

async fn create_party_inner(store: &MatchStore, req: &Request) -> Result<Response<Body>, Failure> {
    check_method(req, Route::CreateParty)?;
    let leader = caller(req)?;
    tracing::Span::current().record("player", leader.as_str());
    let body: CreatePartyBody = json_body(req)?;
    let world = configured_world(store, &body.world_type)?;
    tracing::Span::current().record("world", world.name.as_str());
    let members = body
        .members
        .iter()
        .map(|m| PlayerId::parse(m))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| invalid_field("members", e))?;
    let data = ticket_data(body.data.as_ref())?;
    let joined = joined_worlds(
        store,
        world,
        body.latencies.as_ref(),
        body.attributes.as_ref(),
        body.also_in.as_deref().unwrap_or_default(),
    )?;
    let claimed = rating_claim(store, joined.rated(world), req)?;
    let also = joined.also_joined();
    let input = JoinInput {
        data: data.as_ref(),
        claimed,
        latencies: joined.latencies.as_ref(),
        attributes: joined.attributes.as_deref(),
        also: &also,
    };
    let outcome = match use_cases::create_party(store, world, &leader, &members, &input).await? {
        Ok(outcome) => outcome,
        Err(rejection) => {
            let details = match &rejection {
                PartyRejection::NoOtherMembers => ErrorDetails::Field { field: "members" },
                PartyRejection::TooLarge { world, size, max } => ErrorDetails::PartyLimit {
                    world_type: world.clone(),
                    size: *size,
                    max_party_size: *max,
                },
            };
            return Err(
                ApiError::new(ErrorCode::InvalidParty, rejection.to_string())
                    .with(details)
                    .into(),
            );
        }
    };
    match outcome {
        PartyCreateOutcome::Created(party) => Ok(envelope(
            StatusCode::CREATED,
            &format!(
                "party {} created; waiting for {} invited player(s) to join",
                party.party_id,
                party.members.iter().filter(|m| !m.joined).count()
            ),
            &CallerState::Party { party: &party },
        )),
        PartyCreateOutcome::MemberBusy { player } => Err(ApiError::new(
            ErrorCode::MemberBusy,
            format!("{player} is queued, in another party or playing a match"),
        )
        .with(ErrorDetails::Member { player_id: player })
        .into()),
        PartyCreateOutcome::Rejected(rejection) => Err(rejected(store, rejection)),
    }
}

/// `POST /v1/parties/{partyId}/join`: an invited caller joins; the last one
/// puts the party in the queue (and it may be matched at once).
#[tracing::instrument(name = "http_join_party", skip_all, fields(player = Empty, party = Empty))]
pub async fn join_party<P: Pusher>(
    store: &MatchStore,
    pusher: &P,
    req: Request,
) -> Result<Response<Body>, Error> {
    finish(join_party_inner(store, pusher, &req).await)
}

async fn join_party_inner<P: Pusher>(
    store: &MatchStore,
    pusher: &P,
    req: &Request,
) -> Result<Response<Body>, Failure> {
    check_method(req, Route::JoinParty)?;
    let player = caller(req)?;
    tracing::Span::current().record("player", player.as_str());
    let id = party_id(req)?;
    tracing::Span::current().record("party", id.as_str());
    let mut body: JoinPartyBody = optional_json_body(req)?;
    let world = party_world(store, &id)?;
    let data = ticket_data(body.data.as_ref())?;
    let mut also_in = body.also_in.take().unwrap_or_default();
    if world.queue_group.is_some() {
        // The party may queue in other worlds of the group: the member is
        // admitted by each, so the call describes them all, in its order.
        let Some(worlds) = store.party_other_worlds(&id).await? else {
            return Err(party_not_found(&id));
        };
        also_in = party_also_in(&worlds, also_in)?;
    }
    let joined = joined_worlds(
        store,
        world,
        body.latencies.as_ref(),
        body.attributes.as_ref(),
        &also_in,
    )?;
    let claimed = rating_claim(store, joined.rated(world), req)?;
    let also = joined.also_joined();
    let input = JoinInput {
        data: data.as_ref(),
        claimed,
        latencies: joined.latencies.as_ref(),
        attributes: joined.attributes.as_deref(),
        also: &also,
    };
    let outcome = use_cases::join_party(store, pusher, world, &id, &player, &input).await?;
    match outcome {
        PartyJoinOutcome::OtherWorlds(worlds) => Err(Failure::Internal(
            format!("party {id}: its worlds ({worlds:?}) are not those read before").into(),
        )),
        PartyJoinOutcome::Joined(party) | PartyJoinOutcome::AlreadyJoined(party) => Ok(ok(
            &format!(
                "in party {}; waiting for {} more",
                party.party_id,
                party.members.iter().filter(|m| !m.joined).count()
            ),
            &CallerState::Party { party: &party },
        )),
        PartyJoinOutcome::Queued(q) => Ok(ok(&queued_message(&q), &CallerState::Queued(&q))),
        PartyJoinOutcome::Matched { record, formed, .. } => Ok({
            crate::metrics::print_request_matches(&formed);
            ok(
                &format!("match {} found in {}", record.match_id, record.world_type),
                &CallerState::Matched { record: &record },
            )
        }),
        PartyJoinOutcome::Proposed(proposal) => Ok(ok(
            &proposed_message(&proposal),
            &CallerState::Proposed {
                proposal: &proposal,
            },
        )),
        PartyJoinOutcome::NotFound => Err(party_not_found(&id)),
        PartyJoinOutcome::AttributesConflict {
            world_type,
            attribute,
        } => Err(ApiError::new(
            ErrorCode::AttributesConflict,
            format!(
                "your {attribute} differs from a party member's, and {world_type} matches only equal {attribute} values"
            ),
        )
        .with(ErrorDetails::WorldAttribute {
            world_type,
            attribute,
        })
        .into()),
        PartyJoinOutcome::Rejected(rejection) => Err(rejected(store, rejection)),
    }
}

/// `DELETE /v1/parties/{partyId}`: a member cancels the party, or an
/// invited player declines; the others are told.
#[tracing::instrument(name = "http_cancel_party", skip_all, fields(player = Empty, party = Empty))]
pub async fn cancel_party(store: &MatchStore, req: Request) -> Result<Response<Body>, Error> {
    finish(cancel_party_inner(store, &req).await)
}

async fn cancel_party_inner(store: &MatchStore, req: &Request) -> Result<Response<Body>, Failure> {
    check_method(req, Route::CancelParty)?;
    let player = caller(req)?;
    tracing::Span::current().record("player", player.as_str());
    let id = party_id(req)?;
    tracing::Span::current().record("party", id.as_str());
    match use_cases::cancel_party(store, &id, &player).await? {
        PartyCancelOutcome::Cancelled(party) => Ok(ok(
            &format!("party {id} cancelled"),
            &Cancelled {
                cancelled: true,
                party: &party,
            },
        )),
        PartyCancelOutcome::NotFound => Err(party_not_found(&id)),
    }
}
