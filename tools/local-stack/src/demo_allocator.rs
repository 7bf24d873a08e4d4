//! The demo allocator and its game server: what a studio's allocator does
//! with the match events, on this machine.
//!
//! The allocator follows the match events the EventBridge stand-in received
//! ([`crate::event_bus::EventBus`]) and assigns each match, once, to the
//! demo game server `127.0.0.1:<port>` through the real assignment route
//! (`POST /v1/matching/matches/{matchId}/assignment` over HTTP, the JWT
//! authorizer emulation included) with a token carrying the rule set's
//! server scope (`servers.scope`) and a fresh per-player token for every
//! participant. Duplicated events (at-least-once) are assigned once; an
//! assignment the API answers 5xx, or cannot be reached for, is tried again
//! on the next event or after [`RETRY_AFTER`].
//!
//! The game server is a real HTTP listener on that port: `GET /` says what
//! it is, `GET /join?match=<id>&token=<token>` admits the player whose
//! token it is (200 `{"matchId", "playerId"}`; 403 otherwise), and
//! `GET /leave?match=<id>&token=<token>` lets that player drop out of the
//! running game. Each assigned match plays for `MM_DEMO_GAME_SECS` from its
//! assignment, then the server reports its result; a leave ends the game
//! early or asks for a backfill of the seat ([`crate::demo_game`] says how
//! and how the ranks are made). A player a backfill seated has no
//! per-player token (the assignment was made before they came): the server
//! admits them by `player=<id>`, having heard of them from the
//! `BackfillFilled` event. Every answer has `Access-Control-Allow-Origin: *`
//! so the demo page can call it.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use serde_json::{json, Value};
use tokio::sync::watch;

use crate::demo_game::{Api, Game};
use crate::dev_auth::DevIssuer;
use crate::event_bus::EventBus;

/// The `sub` of the allocator's token.
pub const ALLOCATOR_SUBJECT: &str = "local-demo-allocator";
/// How soon a failed assignment is tried again.
pub const RETRY_AFTER: Duration = Duration::from_secs(1);
/// Lifetime of the allocator's token (minted again before it runs out).
const TOKEN_TTL: Duration = Duration::from_secs(3600);

/// The seats the demo game server knows: match -> player -> token (empty
/// for a player a backfill seated), and who left.
pub struct GameServer {
    seats: Mutex<HashMap<String, BTreeMap<String, String>>>,
    pub(crate) left: Mutex<HashMap<String, HashSet<String>>>,
    /// The server side's credentials, once the allocator runs.
    pub(crate) api: std::sync::OnceLock<Api>,
    /// How long a game lasts from its assignment (`MM_DEMO_GAME_SECS`).
    pub(crate) length: Duration,
    /// The games on now, by match.
    pub(crate) games: Mutex<HashMap<String, Game>>,
    /// The matches whose backfill is being renewed.
    pub(crate) renewing: Mutex<HashSet<String>>,
    /// Seats still open in each match's backfill, as the server last heard
    /// (its request's answer, less the `BackfillFilled` events since).
    pub(crate) open_seats: Mutex<HashMap<String, u64>>,
}

impl GameServer {
    /// A game server whose games last `length` from their assignment.
    pub fn new(length: Duration) -> Self {
        Self {
            seats: Mutex::default(),
            left: Mutex::default(),
            api: std::sync::OnceLock::new(),
            length,
            games: Mutex::default(),
            renewing: Mutex::default(),
            open_seats: Mutex::default(),
        }
    }

    fn seat(&self, match_id: &str, tokens: BTreeMap<String, String>) {
        lock(&self.seats)
            .entry(match_id.to_owned())
            .or_insert(tokens);
    }

    /// Seats players a backfill added (no per-player token).
    fn seat_added(&self, match_id: &str, players: impl IntoIterator<Item = String>) {
        let mut seats = lock(&self.seats);
        let seats = seats.entry(match_id.to_owned()).or_default();
        for p in players {
            seats.entry(p).or_default();
        }
    }

    /// The tokens of a match's players, once it was assigned here.
    pub fn tokens_of(&self, match_id: &str) -> Option<BTreeMap<String, String>> {
        lock(&self.seats).get(match_id).cloned()
    }

    pub fn router(self: &Arc<Self>) -> Router {
        Router::new()
            .route(
                "/",
                get(|| async {
                    "local demo game server: GET /join?match=<matchId>&token=<your token>, \
                     GET /leave?match=<matchId>&token=<your token> (or player=<id> without a token)\n"
                }),
            )
            .route("/join", get(join))
            .route("/leave", get(leave))
            .with_state(self.clone())
    }

    /// The player `query` names (their token, or `player` for one a
    /// backfill seated, who has none), if seated in `match_id`.
    fn player_of(&self, match_id: &str, query: &HashMap<String, String>) -> Option<String> {
        let seats = lock(&self.seats);
        let seats = seats.get(match_id)?;
        match (
            query.get("token").filter(|t| !t.is_empty()),
            query.get("player"),
        ) {
            (Some(token), _) => seats
                .iter()
                .find(|(_, t)| *t == token)
                .map(|(p, _)| p.clone()),
            (None, Some(player)) => seats
                .get(player)
                .filter(|t| t.is_empty())
                .map(|_| player.clone()),
            (None, None) => None,
        }
    }

    /// A player `query` names by id whom a backfill seated but whose
    /// `BackfillFilled` event has not reached the allocator yet: the match
    /// as the API has it now decides (then they are seated here).
    async fn seated_by_backfill(
        &self,
        match_id: &str,
        query: &HashMap<String, String>,
    ) -> Option<String> {
        if query.get("token").is_some_and(|t| !t.is_empty()) {
            return None;
        }
        let player = query.get("player")?.clone();
        let api = self.api.get()?;
        let view = api.view(match_id).await?;
        // The `BackfillFilled` event may have seated them while the view
        // was read: that seat (no token) admits them. A player the
        // allocator seated with a token must use it.
        let seat = lock(&self.seats)
            .get(match_id)
            .and_then(|seats| seats.get(&player).cloned());
        if let Some(token) = seat {
            return token.is_empty().then_some(player);
        }
        let listed = view["match"]["participants"]
            .as_array()
            .is_some_and(|ps| ps.iter().any(|p| p.as_str() == Some(player.as_str())));
        if !listed || view["state"] != "ASSIGNED" {
            return None;
        }
        self.seat_added(match_id, [player.clone()]);
        Some(player)
    }
}

pub(crate) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

async fn join(
    State(server): State<Arc<GameServer>>,
    Query(query): Query<HashMap<String, String>>,
) -> Response {
    let cors = [("access-control-allow-origin", "*")];
    let Some(match_id) = query.get("match") else {
        return (
            StatusCode::BAD_REQUEST,
            cors,
            Json(json!({"message": "GET /join?match=<matchId>&token=<token>"})),
        )
            .into_response();
    };
    let player = match server.player_of(match_id, &query) {
        Some(player) => Some(player),
        None => server.seated_by_backfill(match_id, &query).await,
    };
    match player {
        Some(player) => (
            cors,
            Json(json!({"matchId": match_id, "playerId": player, "message": format!("{player} joined the game of match {match_id}")})),
        )
            .into_response(),
        None => (
            StatusCode::FORBIDDEN,
            cors,
            Json(json!({"message": "no seat in that match for this token"})),
        )
            .into_response(),
    }
}

async fn leave(
    State(server): State<Arc<GameServer>>,
    Query(query): Query<HashMap<String, String>>,
) -> Response {
    let cors = [("access-control-allow-origin", "*")];
    let Some(match_id) = query.get("match").cloned() else {
        return (
            StatusCode::BAD_REQUEST,
            cors,
            Json(json!({"message": "GET /leave?match=<matchId>&token=<token>"})),
        )
            .into_response();
    };
    let Some(player) = server.player_of(&match_id, &query) else {
        return (
            StatusCode::FORBIDDEN,
            cors,
            Json(json!({"message": "no seat in that match for this token"})),
        )
            .into_response();
    };
    let Some(ends_at) = server.game_ends_at(&match_id) else {
        return (
            StatusCode::CONFLICT,
            cors,
            Json(json!({"matchId": match_id, "playerId": player,
                        "message": format!("no game of match {match_id} is on (over, or not begun)")})),
        )
            .into_response();
    };
    lock(&server.left)
        .entry(match_id.clone())
        .or_default()
        .insert(player.clone());
    server.player_left(&match_id);
    let remaining = ends_at.saturating_duration_since(tokio::time::Instant::now());
    (
        cors,
        Json(json!({"matchId": match_id, "playerId": player,
        "message": format!(
            "{player} left the game of match {match_id} and is placed last; the game ends at once \
             if fewer than two sides still play, else in {} s (the server asks for a backfill), \
             and its result lets {player} queue again",
            remaining.as_secs().max(1)
        )})),
    )
        .into_response()
}

/// What the allocator needs.
pub struct Allocator {
    pub bus: Arc<EventBus>,
    pub game: Arc<GameServer>,
    /// `host:port` of the game server: the assignments' `connection`.
    pub connection: String,
    /// The stack's HTTP API (`http://host:port`).
    pub api_url: String,
    pub issuer: Arc<DevIssuer>,
    /// The rule set's `servers.scope`.
    pub scope: String,
    pub http: reqwest::Client,
}

/// What became of an assignment.
enum Assigned {
    /// Assigned to the demo game server: its game starts.
    Here,
    /// Settled otherwise (expired, assigned elsewhere, finished, refused):
    /// nothing a retry would change.
    Settled,
    /// The API failed or could not be reached: try again.
    Retry,
}

/// A per-player token: 128 random bits, hex.
fn player_token() -> String {
    format!("{:032x}", rand::random::<u128>())
}

impl Allocator {
    /// Follows the bus until `shutdown`: every match event's match is
    /// assigned once.
    pub async fn run(self, mut shutdown: watch::Receiver<bool>) {
        // The game server asks for backfills with the same credentials.
        let _ = self.game.api.set(Api {
            url: self.api_url.clone(),
            issuer: self.issuer.clone(),
            scope: self.scope.clone(),
            http: self.http.clone(),
        });
        let mut seen = 0usize;
        let mut done: HashSet<String> = HashSet::new();
        let mut pending: Vec<Value> = Vec::new();
        let mut token: Option<(String, tokio::time::Instant)> = None;
        loop {
            for event in self.bus.received_since(seen) {
                seen += 1;
                if event.detail_type == shared::MatchEvent::DETAIL_TYPE {
                    pending.push(event.detail);
                } else if event.detail_type
                    == shared::domain::MatchEventKind::BackfillFilled.detail_type()
                {
                    // Seats for the newcomers, admitted by their player id.
                    if let Some(id) = event.match_id() {
                        let added = event.detail["added"]
                            .as_array()
                            .into_iter()
                            .flatten()
                            .filter_map(|a| a["playerId"].as_str().map(str::to_owned));
                        let added: Vec<String> = added.collect();
                        self.game.filled(id, added.len());
                        self.game.seat_added(id, added);
                    }
                }
            }
            let mut retry = Vec::new();
            for detail in pending.drain(..) {
                let Some(id) = detail["matchId"].as_str().map(str::to_owned) else {
                    continue;
                };
                if done.contains(&id) {
                    continue;
                }
                let bearer = match &token {
                    Some((t, until)) if *until > tokio::time::Instant::now() => t.clone(),
                    _ => match self.issuer.mint_with(
                        ALLOCATOR_SUBJECT,
                        TOKEN_TTL,
                        &serde_json::Map::from_iter([("scp".to_owned(), json!([self.scope]))]),
                    ) {
                        Ok(t) => {
                            let until = tokio::time::Instant::now() + TOKEN_TTL / 2;
                            token = Some((t.clone(), until));
                            t
                        }
                        Err(e) => {
                            tracing::warn!(error = %e, "demo allocator: cannot mint its token");
                            retry.push(detail);
                            continue;
                        }
                    },
                };
                match self.assign(&id, &detail, &bearer).await {
                    Assigned::Here => {
                        self.game.start_game(&id, shutdown.clone());
                        done.insert(id);
                    }
                    Assigned::Settled => {
                        done.insert(id);
                    }
                    Assigned::Retry => retry.push(detail),
                }
            }
            pending = retry;
            let wait = async {
                if pending.is_empty() {
                    self.bus.wait_past(seen).await;
                } else {
                    tokio::time::sleep(RETRY_AFTER).await;
                }
            };
            tokio::select! {
                _ = wait => {}
                _ = shutdown.changed() => return,
            }
        }
    }

    /// Assigns one match.
    async fn assign(&self, id: &str, detail: &Value, bearer: &str) -> Assigned {
        let players: Vec<String> = detail["teams"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_array)
            .flatten()
            .filter_map(|p| p["playerId"].as_str().map(str::to_owned))
            .collect();
        let tokens: BTreeMap<String, String> = players
            .iter()
            .map(|p| (p.clone(), player_token()))
            .collect();
        // Seated first, so a player told the assignment can join at once.
        self.game.seat(id, tokens.clone());
        let seats = self.game.tokens_of(id).unwrap_or(tokens);
        let body = json!({
            "connection": self.connection,
            "properties": {"allocator": "local-demo", "worldType": detail["worldType"]},
            "players": seats.iter().map(|(p, t)| (p.clone(), json!({"token": t}))).collect::<serde_json::Map<_, _>>(),
        });
        let url = format!("{}/v1/matching/matches/{id}/assignment", self.api_url);
        let answer = self
            .http
            .post(url)
            .bearer_auth(bearer)
            .header("content-type", "application/json")
            .body(body.to_string())
            .send()
            .await;
        match answer {
            Ok(res) if res.status().is_success() => {
                tracing::info!(match_id = id, connection = %self.connection, "demo allocator assigned a match");
                Assigned::Here
            }
            Ok(res) if res.status().is_server_error() => {
                tracing::warn!(
                    match_id = id,
                    status = res.status().as_u16(),
                    "demo allocator: assignment failed; will retry"
                );
                Assigned::Retry
            }
            Ok(res) => {
                // 404 (expired), 409 (assigned or finished), 403 (scope):
                // nothing a retry would change.
                let status = res.status().as_u16();
                let text = res.text().await.unwrap_or_default();
                tracing::warn!(match_id = id, status, answer = %text, "demo allocator: assignment refused");
                Assigned::Settled
            }
            Err(e) => {
                tracing::warn!(match_id = id, error = %e, "demo allocator: API unreachable; will retry");
                Assigned::Retry
            }
        }
    }
}
