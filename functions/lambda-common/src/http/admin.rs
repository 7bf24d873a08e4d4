//! The operator's reads (`GET /v1/admin/...`): a world's waiting tickets
//! and matches, page by page, a player look-up and the audit list. Every
//! admin route checks its scope first, before it reads anything else of the
//! request: a caller without it learns nothing, not even which worlds exist.

use std::collections::BTreeMap;

use lambda_http::{Body, Error, Request, RequestExt, Response};
use serde::Serialize;
use shared::domain::{
    AuditEntry, OpenProposal, Rating, RatingChange, AUDIT_CAP, MAX_MATCHES_PAGE, MAX_TICKETS_PAGE,
};
use shared::{
    use_cases, MatchRecord, MatchReport, MatchState, MatchStore, MatchWithLifecycle, PlayerId,
    PlayerStatus, WorldName,
};
use tracing::field::Empty;

use super::errors::{finish, not_found_error, ok, Failure};
use super::handlers::{proposed_message, queued_message, CallerState};
use super::request::{authorize, caller, check_method, configured_world, invalid_field};
use super::{path_parameter, Route};

/// Method, caller and the route's scope, in that order, before anything
/// else of the request is read.
pub(super) fn admit(req: &Request, route: Route, store: &MatchStore) -> Result<PlayerId, Failure> {
    check_method(req, route)?;
    let operator = caller(req)?;
    tracing::Span::current().record("operator", operator.as_str());
    authorize(req, route, store.settings())?;
    Ok(operator)
}

/// The largest `after` and `offset` (the spec's: what JSON numbers hold
/// exactly).
const MAX_CURSOR: u64 = (1 << 53) - 1;

/// A whole-number query parameter within `range`; absent: `default`.
fn query_number(
    req: &Request,
    name: &'static str,
    range: std::ops::RangeInclusive<u64>,
    default: u64,
) -> Result<u64, Failure> {
    let Some(raw) = req
        .query_string_parameters_ref()
        .and_then(|q| q.first(name))
    else {
        return Ok(default);
    };
    match raw.parse::<u64>() {
        Ok(n) if range.contains(&n) => Ok(n),
        _ => Err(invalid_field(
            name,
            format!(
                "{name} must be a whole number from {} to {}",
                range.start(),
                range.end()
            ),
        )
        .into()),
    }
}

/// A match as the operator sees it: the record, where it stands, its
/// server, result and age (the players' seat tokens are left out).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct OperatorMatch<'a> {
    #[serde(rename = "match")]
    record: &'a MatchRecord,
    state: MatchState,
    /// The server's address (`connection` of the assignment).
    #[serde(skip_serializing_if = "Option::is_none")]
    server: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    result: Option<&'a MatchReport>,
    #[serde(skip_serializing_if = "Option::is_none")]
    rating_changes: Option<&'a BTreeMap<PlayerId, RatingChange>>,
    /// Since the match formed (ms, Redis time).
    age_ms: u64,
}

impl<'a> OperatorMatch<'a> {
    pub(super) fn of(m: &'a MatchWithLifecycle, now_ms: u64) -> Self {
        Self {
            record: &m.record,
            state: m.lifecycle.state,
            server: m
                .lifecycle
                .assignment
                .as_ref()
                .map(|a| a.connection.as_str()),
            result: m.lifecycle.report.as_ref(),
            rating_changes: m.lifecycle.rating_changes.as_ref(),
            age_ms: now_ms.saturating_sub(m.record.matched_at),
        }
    }
}

/// `data` of the matches page.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct MatchesAnswer<'a> {
    world_type: &'a WorldName,
    proposals: &'a [OpenProposal],
    matches: Vec<OperatorMatch<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    next_offset: Option<u64>,
}

/// `data` of the player look-up.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct PlayerAnswer<'a> {
    player_id: &'a PlayerId,
    /// What my-status would answer the player.
    state: CallerState<'a>,
    /// The trusted ratings store's entries: `*` (every world) and per world.
    ratings: &'a BTreeMap<String, Rating>,
    /// Open WebSocket connections.
    connections: usize,
}

/// `data` of the audit read.
#[derive(Serialize)]
struct AuditAnswer<'a> {
    entries: &'a [AuditEntry],
}

/// `GET /v1/admin/worlds/{worldType}/tickets?after=&limit=`: one page of a
/// world's waiting tickets, oldest first.
#[tracing::instrument(name = "http_admin_tickets", skip_all, fields(operator = Empty))]
pub async fn admin_tickets(store: &MatchStore, req: Request) -> Result<Response<Body>, Error> {
    finish(admin_tickets_inner(store, &req).await)
}

async fn admin_tickets_inner(store: &MatchStore, req: &Request) -> Result<Response<Body>, Failure> {
    admit(req, Route::AdminTickets, store)?;
    let name = path_parameter(req, "worldType").ok_or_else(|| not_found_error(req))?;
    let world = configured_world(store, &name)?;
    let after = query_number(req, "after", 0..=MAX_CURSOR, 0)?;
    let limit = query_number(req, "limit", 1..=u64::from(MAX_TICKETS_PAGE), 50)?;
    let limit = u32::try_from(limit).unwrap_or(MAX_TICKETS_PAGE);
    let page = store.admin_tickets(world, after, limit).await?;
    let msg = format!(
        "{} of {} waiting in {}",
        page.tickets.len(),
        page.waiting,
        world.name
    );
    Ok(ok(&msg, &page))
}

/// `GET /v1/admin/worlds/{worldType}/matches?offset=&limit=`: a world's
/// open proposals and one page of its live matches.
#[tracing::instrument(name = "http_admin_matches", skip_all, fields(operator = Empty))]
pub async fn admin_matches(store: &MatchStore, req: Request) -> Result<Response<Body>, Error> {
    finish(admin_matches_inner(store, &req).await)
}

async fn admin_matches_inner(store: &MatchStore, req: &Request) -> Result<Response<Body>, Failure> {
    admit(req, Route::AdminMatches, store)?;
    let name = path_parameter(req, "worldType").ok_or_else(|| not_found_error(req))?;
    let world = configured_world(store, &name)?;
    let offset = query_number(req, "offset", 0..=MAX_CURSOR, 0)?;
    let limit = query_number(req, "limit", 1..=u64::from(MAX_MATCHES_PAGE), 20)?;
    let limit = u32::try_from(limit).unwrap_or(MAX_MATCHES_PAGE);
    let page = store.admin_matches(&world.name, offset, limit).await?;
    let answer = MatchesAnswer {
        world_type: &world.name,
        proposals: &page.proposals,
        matches: page
            .matches
            .iter()
            .map(|m| OperatorMatch::of(m, page.now_ms))
            .collect(),
        next_offset: page.next_offset,
    };
    let msg = format!(
        "{} proposal(s) and {} match(es) in {}",
        page.proposals.len(),
        page.matches.len(),
        world.name
    );
    Ok(ok(&msg, &answer))
}

/// `GET /v1/admin/players/{playerId}`: where a player stands (as their
/// my-status would say), their stored ratings and open connections.
#[tracing::instrument(name = "http_admin_player", skip_all, fields(operator = Empty))]
pub async fn admin_player(store: &MatchStore, req: Request) -> Result<Response<Body>, Error> {
    finish(admin_player_inner(store, &req).await)
}

async fn admin_player_inner(store: &MatchStore, req: &Request) -> Result<Response<Body>, Failure> {
    admit(req, Route::AdminPlayer, store)?;
    let raw = path_parameter(req, "playerId").ok_or_else(|| not_found_error(req))?;
    let player = PlayerId::parse(&raw).map_err(|e| invalid_field("playerId", e))?;
    let status = use_cases::player_status(store, &player).await?;
    let ratings = store.stored_ratings(&player).await?;
    let connections = store.connections_of(&player).await?.len();
    let (msg, state) = match &status {
        PlayerStatus::Idle => (format!("{player} is idle"), CallerState::Idle {}),
        PlayerStatus::Queued(q) => (
            format!("{player}: {}", queued_message(q)),
            CallerState::Queued(q),
        ),
        PlayerStatus::Party(party) => (
            format!("{player} is in party {}", party.party_id),
            CallerState::Party { party },
        ),
        PlayerStatus::Proposed(proposal) => (
            format!("{player}: {}", proposed_message(proposal)),
            CallerState::Proposed { proposal },
        ),
        PlayerStatus::Matched(m) => (
            format!("{player} matched in {} ({})", m.world_type, m.match_id),
            CallerState::MatchedWithLifecycle {
                view: m.view_for(&player),
            },
        ),
    };
    let answer = PlayerAnswer {
        player_id: &player,
        state,
        ratings: &ratings,
        connections,
    };
    Ok(ok(&msg, &answer))
}

/// `GET /v1/admin/audit?limit=`: the latest operator actions, newest first.
#[tracing::instrument(name = "http_admin_audit", skip_all, fields(operator = Empty))]
pub async fn admin_audit(store: &MatchStore, req: Request) -> Result<Response<Body>, Error> {
    finish(admin_audit_inner(store, &req).await)
}

async fn admin_audit_inner(store: &MatchStore, req: &Request) -> Result<Response<Body>, Failure> {
    admit(req, Route::AdminAudit, store)?;
    let limit = query_number(req, "limit", 1..=u64::from(AUDIT_CAP), 100)?;
    let limit = u32::try_from(limit).unwrap_or(AUDIT_CAP);
    let entries: Vec<AuditEntry> = store
        .audit(limit)
        .await?
        .iter()
        // Entries are written only by audit_append, from `AuditEntry`.
        .filter_map(|json| serde_json::from_str(json).ok())
        .collect();
    Ok(ok(
        &format!("{} audit entries", entries.len()),
        &AuditAnswer { entries: &entries },
    ))
}
