//! `PUT /v1/avoid/{playerId}`: a player's avoid list (block lists).

use std::collections::HashSet;

use lambda_http::{Body, Error, Request, Response};
use serde_json::Value;
use shared::{MatchStore, PlayerId};
use tracing::field::Empty;

use super::errors::{finish, not_found_error, ok, ApiError, Failure};
use super::request::{authorize, caller, check_method, invalid_field, json_body_within};
use super::{path_parameter, Route};

/// The body of an avoid-list write.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct AvoidBody {
    players: Value,
}

/// `data` of an avoid-list write.
#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct AvoidStored<'a> {
    player_id: &'a PlayerId,
    players: &'a [PlayerId],
    previous_players: Vec<String>,
}

/// The avoid list of `player` in `value`: an array of distinct player ids,
/// at most `max` of them once the player's own id (which blocks nobody) is
/// left out. 400 INVALID_REQUEST (`field: "players"`) otherwise.
fn avoid_list(player: &PlayerId, value: &Value, max: usize) -> Result<Vec<PlayerId>, ApiError> {
    let items = value
        .as_array()
        .ok_or_else(|| invalid_field("players", "players must be an array of player ids"))?;
    let too_many = |n: usize| {
        invalid_field(
            "players",
            format!("an avoid list holds at most {max} players (blockLists.maxEntries), got {n}"),
        )
    };
    // Bounds the work before any id is read (the own id may be there too).
    if items.len() > max + 1 {
        return Err(too_many(items.len()));
    }
    let mut seen = HashSet::with_capacity(items.len());
    let mut out = Vec::with_capacity(items.len());
    for item in items {
        let id = item
            .as_str()
            .ok_or_else(|| invalid_field("players", "players must be an array of player ids"))
            .and_then(|s| {
                PlayerId::parse(s).map_err(|e| invalid_field("players", format!("players: {e}")))
            })?;
        if id == *player {
            continue;
        }
        if !seen.insert(id.clone()) {
            return Err(invalid_field(
                "players",
                format!("{id} is listed twice in players"),
            ));
        }
        out.push(id);
    }
    if out.len() > max {
        return Err(too_many(out.len()));
    }
    Ok(out)
}

/// `PUT /v1/avoid/{playerId}`: replaces a player's avoid list (`{"players":
/// []}` clears it; the player's own id is left out). From then on the player and each listed player are
/// never matched or backfilled together, in any world. Only callers whose
/// verified token carries `servers.scope` may; a malformed write is a 400
/// whoever sends it. A rule set without `blockLists` keeps no lists: 400.
#[tracing::instrument(name = "http_put_avoid", skip_all, fields(caller = Empty))]
pub async fn put_avoid(store: &MatchStore, req: Request) -> Result<Response<Body>, Error> {
    finish(put_avoid_inner(store, &req).await)
}

async fn put_avoid_inner(store: &MatchStore, req: &Request) -> Result<Response<Body>, Failure> {
    check_method(req, Route::Avoid)?;
    let caller = caller(req)?;
    tracing::Span::current().record("caller", caller.as_str());
    let raw = path_parameter(req, "playerId").ok_or_else(|| not_found_error(req))?;
    let player = PlayerId::parse(&raw).map_err(|e| invalid_field("playerId", e))?;
    let body: AvoidBody = json_body_within(req, Route::Avoid.max_body_bytes())?;
    let Some(lists) = store.settings().block_lists else {
        return Err(invalid_field(
            "players",
            "block lists are off: the rule set has no blockLists",
        )
        .into());
    };
    let avoided = avoid_list(&player, &body.players, lists.max_entries)?;
    authorize(req, Route::Avoid, store.settings())?;
    let previous = store.set_avoid_list(&player, &avoided).await?;
    Ok(ok(
        &format!("avoid list of {player} stored"),
        &AvoidStored {
            player_id: &player,
            players: &avoided,
            previous_players: previous,
        },
    ))
}
