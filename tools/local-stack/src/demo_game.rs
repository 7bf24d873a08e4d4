//! The demo game server's games: each assigned match plays for
//! `MM_DEMO_GAME_SECS` from its assignment, then the server reports its
//! result through the real result route
//! (`POST /v1/matching/matches/{matchId}/result`, over HTTP with the
//! server-scope token, like the assignment), so ratings move in rated worlds
//! and every player may queue again.
//!
//! **Ranks** ([`result_of`]): the sides (the teams of a match with teams,
//! else the players) are placed in random order, except that a side with
//! fewer players still in the game places after one with more: in a match
//! without teams every player who left shares the last place; in one with
//! teams, a team that lost more players places lower.
//!
//! **Leaving** (`GET /leave` on the game server): the player's part ends and
//! they are placed as above. The result is what frees a player in this
//! service (their match holds them `409 IN_MATCH` until it is in, and a
//! result ends the match for all its players), so the game decides at once:
//! when fewer than two sides still have a player, nobody is left to play
//! against and the game ends now (the result frees everyone, the leaver
//! included); otherwise the server asks for a backfill of the seat with the
//! players it still has and plays on, and the leaver may queue again when
//! the game ends, at most `MM_DEMO_GAME_SECS` after the assignment.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use rand::seq::SliceRandom;
use serde_json::{json, Value};
use tokio::sync::{watch, Notify};
use tokio::time::Instant;

use crate::demo_allocator::{lock, GameServer, ALLOCATOR_SUBJECT, RETRY_AFTER};
use crate::dev_auth::DevIssuer;

/// Lifetime of the game server's token (minted for each call).
const TOKEN_TTL: Duration = Duration::from_secs(3600);
/// How often the game server renews its backfill (the keep-alive is
/// `MM_BACKFILL_KEEPALIVE_SECS`, 15 s by default).
pub const RENEW_EVERY: Duration = Duration::from_secs(5);
/// How many times a result is sent again after a refusal that a fresh
/// read of the match may cure (a backfill seated someone meanwhile), or a
/// failure of the API (5xx, unreachable) before the game server gives up.
const RESULT_ATTEMPTS: u32 = 30;

/// How the game server calls the API: the stack's URL and a token with the
/// server scope.
#[derive(Clone)]
pub(crate) struct Api {
    pub(crate) url: String,
    pub(crate) issuer: Arc<DevIssuer>,
    pub(crate) scope: String,
    pub(crate) http: reqwest::Client,
}

impl Api {
    fn token(&self) -> Option<String> {
        self.issuer
            .mint_with(
                ALLOCATOR_SUBJECT,
                TOKEN_TTL,
                &serde_json::Map::from_iter([("scp".to_owned(), json!([self.scope]))]),
            )
            .inspect_err(|e| tracing::warn!(error = %e, "demo game server: cannot mint its token"))
            .ok()
    }

    /// Calls the API: the status and the JSON answer, `None` when it could
    /// not be reached or answered no JSON (the caller decides what to log).
    pub(crate) async fn call(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<Value>,
    ) -> Option<(u16, Value)> {
        let mut req = self
            .http
            .request(method, format!("{}{path}", self.url))
            .bearer_auth(self.token()?);
        if let Some(body) = body {
            req = req
                .header("content-type", "application/json")
                .body(body.to_string());
        }
        let res = req
            .send()
            .await
            .inspect_err(|e| tracing::warn!(path, error = %e, "demo game server: API unreachable"))
            .ok()?;
        let status = res.status().as_u16();
        let body = serde_json::from_str(&res.text().await.ok()?).ok()?;
        Some((status, body))
    }

    /// The match as the server sees it (`data` of `GET .../matches/{id}`).
    pub(crate) async fn view(&self, match_id: &str) -> Option<Value> {
        let path = format!("/v1/matching/matches/{match_id}");
        match self.call(reqwest::Method::GET, &path, None).await? {
            (200, body) => Some(body["data"].clone()),
            (status, body) => {
                // Expired (404): the game is over for the service anyway.
                tracing::debug!(match_id, status, answer = %body, "demo game server: no match view");
                None
            }
        }
    }
}

/// A running game: when it ends, and how a leave reaches it.
pub(crate) struct Game {
    pub(crate) ends_at: Instant,
    pub(crate) left: Arc<Notify>,
}

/// The player ids of a JSON array.
fn ids(v: &Value) -> Vec<String> {
    v.as_array()
        .into_iter()
        .flatten()
        .filter_map(|p| p.as_str().map(str::to_owned))
        .collect()
}

/// The sides of a match record (its teams, or one side per participant
/// when it has none) and whether it has teams.
fn sides(record: &Value) -> (Vec<Vec<String>>, bool) {
    match record["teams"].as_array() {
        Some(teams) => (teams.iter().map(ids).collect(), true),
        None => (
            ids(&record["participants"])
                .into_iter()
                .map(|p| vec![p])
                .collect(),
            false,
        ),
    }
}

/// How many sides of `record` still have a player who did not leave.
pub fn sides_playing(record: &Value, left: &HashSet<String>) -> usize {
    sides(record)
        .0
        .iter()
        .filter(|side| side.iter().any(|p| !left.contains(p)))
        .count()
}

/// The result the demo game server reports for `record` (a match record as
/// the API answers it) when the players in `left` left: sides with more
/// players still in the game first, in random order among equals, each its
/// own place; in a match without teams the players who left share the
/// last place (`teamRanks` for a match with teams, else `playerRanks`).
pub fn result_of(record: &Value, left: &HashSet<String>) -> Value {
    let (sides, teams) = sides(record);
    let staying = |side: &Vec<String>| side.iter().filter(|p| !left.contains(*p)).count();
    let mut order: Vec<usize> = (0..sides.len()).collect();
    order.shuffle(&mut rand::rng());
    // Stable: the shuffle breaks the ties.
    order.sort_by_key(|&i| std::cmp::Reverse(staying(&sides[i])));
    let mut places = vec![0u32; sides.len()];
    let mut next = 1u32;
    for &i in &order {
        places[i] = next;
        // Players who left share the place after the last who stayed.
        if teams || staying(&sides[i]) > 0 {
            next += 1;
        }
    }
    if teams {
        json!({ "teamRanks": places })
    } else {
        let ranks: serde_json::Map<String, Value> = sides
            .iter()
            .zip(&places)
            .filter_map(|(side, place)| Some((side.first()?.clone(), json!(place))))
            .collect();
        json!({ "playerRanks": ranks })
    }
}

impl GameServer {
    /// Starts the game of a match just assigned here (once per match); it
    /// reports its result after the game's length, or when leaves end it.
    pub(crate) fn start_game(self: &Arc<Self>, match_id: &str, shutdown: watch::Receiver<bool>) {
        let left = Arc::new(Notify::new());
        {
            let mut games = lock(&self.games);
            if games.contains_key(match_id) {
                return;
            }
            games.insert(
                match_id.to_owned(),
                Game {
                    ends_at: Instant::now() + self.length,
                    left: left.clone(),
                },
            );
        }
        tokio::spawn(self.clone().play(match_id.to_owned(), left, shutdown));
    }

    /// When the game of `match_id` ends, if it is still on.
    pub(crate) fn game_ends_at(&self, match_id: &str) -> Option<Instant> {
        lock(&self.games).get(match_id).map(|g| g.ends_at)
    }

    /// Tells the game of `match_id` that a player left (a no-op once over).
    pub(crate) fn player_left(&self, match_id: &str) {
        if let Some(game) = lock(&self.games).get(match_id) {
            // A permit is kept if the game is busy: it reads every leave.
            game.left.notify_one();
        }
    }

    /// A `BackfillFilled` event seated `added` players in `match_id`.
    pub(crate) fn filled(&self, match_id: &str, added: usize) {
        if let Some(open) = lock(&self.open_seats).get_mut(match_id) {
            *open = open.saturating_sub(added as u64);
        }
    }

    /// Whether the game of `match_id` is over (or never ran here).
    fn is_over(&self, match_id: &str) -> bool {
        !lock(&self.games).contains_key(match_id)
    }

    fn left_of(&self, match_id: &str) -> HashSet<String> {
        lock(&self.left).get(match_id).cloned().unwrap_or_default()
    }

    async fn play(
        self: Arc<Self>,
        match_id: String,
        left: Arc<Notify>,
        mut shutdown: watch::Receiver<bool>,
    ) {
        let ends_at = self.game_ends_at(&match_id).unwrap_or_else(Instant::now);
        loop {
            tokio::select! {
                () = tokio::time::sleep_until(ends_at) => break,
                () = left.notified() => {
                    let Some(api) = self.api.get() else { break };
                    let Some(view) = api.view(&match_id).await else { break };
                    if sides_playing(&view["match"], &self.left_of(&match_id)) < 2 {
                        tracing::info!(match_id, "demo game server: too few players left; the game ends now");
                        break;
                    }
                    tokio::spawn(self.clone().refill(match_id.clone(), view));
                }
                _ = shutdown.changed() => return,
            }
        }
        self.report(&match_id, &mut shutdown).await;
        lock(&self.games).remove(&match_id);
    }

    /// Reports the game's result, reading the match again where it changed
    /// under the report (a backfill seated someone) or the API failed.
    async fn report(&self, match_id: &str, shutdown: &mut watch::Receiver<bool>) {
        let Some(api) = self.api.get() else {
            return;
        };
        let path = format!("/v1/matching/matches/{match_id}/result");
        let view_path = format!("/v1/matching/matches/{match_id}");
        for _ in 0..RESULT_ATTEMPTS {
            match api.call(reqwest::Method::GET, &view_path, None).await {
                Some((200, body)) if body["data"]["state"] == "FINISHED" => {
                    tracing::debug!(match_id, "demo game server: the result is in already");
                    return;
                }
                Some((200, body)) => {
                    let result = result_of(&body["data"]["match"], &self.left_of(match_id));
                    match api
                        .call(reqwest::Method::POST, &path, Some(result.clone()))
                        .await
                    {
                        Some((200, _)) => {
                            tracing::info!(match_id, %result, "demo game server: game over, result reported");
                            return;
                        }
                        // Expired, or another result won: the game is over.
                        Some((status @ (404 | 409), body)) => {
                            tracing::debug!(match_id, status, answer = %body, "demo game server: result not needed");
                            return;
                        }
                        Some((status, body)) => {
                            tracing::debug!(match_id, status, answer = %body, "demo game server: result refused; reading the match again");
                        }
                        None => {}
                    }
                }
                // Expired: its players are free already.
                Some((404, _)) => return,
                Some((status, body)) => {
                    tracing::debug!(match_id, status, answer = %body, "demo game server: cannot read the match; trying again");
                }
                None => {}
            }
            tokio::select! {
                () = tokio::time::sleep(RETRY_AFTER) => {}
                _ = shutdown.changed() => return,
            }
        }
        tracing::warn!(
            match_id,
            "demo game server: could not report the result; its players stay in the match until it expires"
        );
    }

    /// After a player left: asks for a backfill with the players the match
    /// (`view`) still has, and renews it until it is filled or the game
    /// ends.
    async fn refill(self: Arc<Self>, match_id: String, view: Value) {
        let Some(api) = self.api.get().cloned() else {
            return;
        };
        let gone = self.left_of(&match_id);
        let teams: Vec<Vec<String>> = sides(&view["match"])
            .0
            .into_iter()
            .map(|side| side.into_iter().filter(|p| !gone.contains(p)).collect())
            .collect();
        // One list per team; a match without teams is one team.
        let teams = if view["match"]["teams"].is_array() {
            teams
        } else {
            vec![teams.into_iter().flatten().collect()]
        };
        let backfill = format!("/v1/matching/matches/{match_id}/backfill");
        match api
            .call(
                reqwest::Method::POST,
                &backfill,
                Some(json!({ "teams": teams })),
            )
            .await
        {
            Some((200, answer)) => {
                let open: u64 = answer["data"]["backfill"]["openSeats"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_u64)
                    .sum();
                lock(&self.open_seats).insert(match_id.clone(), open);
                tracing::info!(match_id, open, "demo game server: asked for a backfill");
            }
            Some((status, body)) => {
                tracing::warn!(match_id, status, answer = %body, "demo game server: backfill refused");
                return;
            }
            None => return,
        }
        // One renewal loop per match: a second leave replaced the request.
        if !lock(&self.renewing).insert(match_id.clone()) {
            return;
        }
        loop {
            tokio::time::sleep(RENEW_EVERY).await;
            // Over, or every seat taken (BackfillFilled): the backfill
            // ended, there is nothing to renew.
            if self.is_over(&match_id)
                || lock(&self.open_seats)
                    .get(&match_id)
                    .is_some_and(|n| *n == 0)
            {
                tracing::debug!(match_id, "demo game server: backfill done");
                break;
            }
            let renewed = api
                .call(
                    reqwest::Method::POST,
                    &format!("{backfill}/keepalive"),
                    None,
                )
                .await;
            match renewed {
                Some((200, _)) => {}
                // No open backfill: filled before its event came, or the
                // game ended; nothing is wrong.
                Some((404 | 409, body)) => {
                    tracing::debug!(match_id, answer = %body, "demo game server: backfill done");
                    break;
                }
                Some((status, body)) => {
                    tracing::warn!(match_id, status, answer = %body, "demo game server: backfill renewal refused");
                    break;
                }
                None => {}
            }
        }
        lock(&self.renewing).remove(&match_id);
        lock(&self.open_seats).remove(&match_id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(players: &[&str]) -> HashSet<String> {
        players.iter().map(|p| p.to_string()).collect()
    }

    #[test]
    fn players_who_left_share_the_last_place_and_the_others_get_one_each() {
        let record = json!({"participants": ["a", "b", "c", "d"]});
        for _ in 0..50 {
            let result = result_of(&record, &set(&["b", "d"]));
            let ranks = &result["playerRanks"];
            assert_eq!(
                (&ranks["b"], &ranks["d"]),
                (&json!(3), &json!(3)),
                "{result}"
            );
            let mut stayed = [ranks["a"].as_u64(), ranks["c"].as_u64()];
            stayed.sort();
            assert_eq!(stayed, [Some(1), Some(2)], "{result}");
        }
        let everyone = result_of(&record, &set(&[]));
        let mut places: Vec<u64> = ["a", "b", "c", "d"]
            .iter()
            .map(|p| everyone["playerRanks"][p].as_u64().unwrap())
            .collect();
        places.sort();
        assert_eq!(places, [1, 2, 3, 4]);
    }

    #[test]
    fn the_order_among_equals_is_random() {
        let record = json!({"participants": ["a", "b", "c"]});
        let winners: HashSet<String> = (0..200)
            .map(|_| {
                let r = result_of(&record, &HashSet::new());
                ["a", "b", "c"]
                    .into_iter()
                    .find(|p| r["playerRanks"][p] == 1)
                    .unwrap()
                    .to_owned()
            })
            .collect();
        assert_eq!(winners.len(), 3, "each player wins sometimes");
    }

    #[test]
    fn a_team_that_lost_players_places_after_the_full_ones() {
        let record = json!({"participants": ["a", "b", "c", "d", "e", "f"],
                            "teams": [["a", "b"], ["c", "d"], ["e", "f"]]});
        for _ in 0..50 {
            let result = result_of(&record, &set(&["c", "e", "f"]));
            assert_eq!(result["teamRanks"], json!([1, 2, 3]), "{result}");
        }
        assert_eq!(sides_playing(&record, &set(&["c", "e", "f"])), 2);
        assert_eq!(sides_playing(&record, &set(&["c", "d", "e", "f"])), 1);
        let ffa = json!({"participants": ["a", "b", "c"]});
        assert_eq!(sides_playing(&ffa, &set(&["a"])), 2);
        assert_eq!(sides_playing(&ffa, &set(&["a", "b"])), 1);
    }
}
