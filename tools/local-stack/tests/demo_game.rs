//! The demo game server plays whole games through the local stack, with
//! real sockets: a game lasts `MM_DEMO_GAME_SECS` from its assignment, then
//! the server's result (through the real result route) moves the ratings
//! of a rated world and lets every player queue again; a player who leaves
//! is placed last, and the game ends at once when fewer than two sides
//! still play, else the seat is backfilled and the game plays on.

mod support;

use std::time::{Duration, Instant};

use local_stack::LocalStack;
use serde_json::{json, Value};
use support::{http, server_rules, stack_on, Player};

const WAIT: Duration = Duration::from_secs(20);

/// Connects and queues `names` in `world`; returns them once the first
/// heard the match's assignment, with the match id.
async fn assigned(stack: &LocalStack, world: &str, names: &[&str]) -> (String, Vec<Player>) {
    let mut players = Vec::new();
    for name in names {
        let p = Player::connect(stack, name).await;
        assert_eq!(p.join(stack, world).await.0, 200, "{name} joins");
        players.push(p);
    }
    let heard = players[0].heard("MATCH_ASSIGNED", 1, WAIT).await;
    (heard[0]["matchId"].as_str().unwrap().to_owned(), players)
}

/// The game server's answer to `GET /leave` for `player` of match `id`.
async fn leave_game(stack: &LocalStack, id: &str, player: &Player) -> (u16, Value) {
    let seats = stack.game_server.tokens_of(id).expect("seated");
    let url = format!(
        "http://{}/leave?match={id}&token={}",
        stack.game_server_addr, seats[&player.id]
    );
    let res = http().get(url).send().await.expect("game server");
    let status = res.status().as_u16();
    (status, res.json().await.expect("JSON"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_game_ends_with_a_result_that_moves_ratings_and_frees_its_players() {
    let stack = stack_on(
        &server_rules(json!([{"name": "ranked", "teamSize": 3, "mode": "rating",
                              "rating": {"baseWindow": 500, "widenPerSecond": 10, "maxWindow": 500, "relaxAfterSeconds": 60}}])),
        None,
        &[("MM_DEMO_GAME_SECS", "1.5")],
    )
    .await;
    // The assignment comes after this, so the game ends no sooner than
    // its length from here.
    let before_joins = Instant::now();
    let (id, players) = assigned(&stack, "ranked", &["ann", "ben", "cat"]).await;
    // While the game is on, its players may not queue.
    let (status, body) = players[0].join(&stack, "ranked").await;
    assert_eq!(
        (status, &body["data"]["error"]),
        (409, &json!("IN_MATCH")),
        "{body}"
    );

    let mut places = Vec::new();
    for p in &players {
        let result = &p.heard("MATCH_RESULT", 1, WAIT).await[0];
        assert_eq!(result["matchId"], id.as_str(), "{result}");
        let place = result["result"]["playerRanks"][&p.id]
            .as_u64()
            .expect("a place");
        let rating = &result["rating"];
        assert_eq!(rating["games"], 1, "{}'s rating moved: {result}", p.id);
        if place == 1 {
            assert!(
                rating["after"].as_f64() > rating["before"].as_f64(),
                "the winner gains: {result}"
            );
        }
        places.push(place);
    }
    assert!(
        before_joins.elapsed() >= Duration::from_millis(1500),
        "the game lasted MM_DEMO_GAME_SECS from the assignment"
    );
    places.sort();
    assert_eq!(places, [1, 2, 3], "each its own place");
    // Finished: everyone queues again.
    for p in &players {
        let (status, body) = p.join(&stack, "ranked").await;
        assert_eq!(status, 200, "{}: {body}", p.id);
    }
    stack.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leave_that_leaves_one_side_ends_the_game_at_once_with_the_leaver_last() {
    // An hour-long game: only the leave can end it within the test.
    let stack = stack_on(
        &server_rules(json!([{"name": "duel", "teamSize": 2}])),
        None,
        &[("MM_DEMO_GAME_SECS", "3600")],
    )
    .await;
    let (id, players) = assigned(&stack, "duel", &["ann", "ben"]).await;
    let (status, body) = leave_game(&stack, &id, &players[1]).await;
    assert_eq!(status, 200, "{body}");
    for p in &players {
        let result = &p.heard("MATCH_RESULT", 1, WAIT).await[0];
        assert_eq!(
            result["result"],
            json!({"playerRanks": {"ann": 1, "ben": 2}}),
            "the leaver is last: {result}"
        );
    }
    let (status, body) = players[1].join(&stack, "duel").await;
    assert_eq!(status, 200, "the leaver queues again: {body}");
    // The game is over: another leave is refused.
    let (status, body) = leave_game(&stack, &id, &players[0]).await;
    assert_eq!(status, 409, "{body}");
    stack.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leaver_seat_is_backfilled_and_the_result_ranks_the_newcomer_and_the_leaver_last() {
    let stack = stack_on(
        &server_rules(json!([{"name": "trio", "teamSize": 3}])),
        None,
        &[("MM_DEMO_GAME_SECS", "4")],
    )
    .await;
    let (id, players) = assigned(&stack, "trio", &["ann", "ben", "cat"]).await;
    let (status, body) = leave_game(&stack, &id, &players[2]).await;
    assert_eq!(status, 200, "{body}");
    // Two still play: the seat opens and the next player in the queue
    // takes it, into the running game.
    let dan = Player::connect(&stack, "dan").await;
    assert_eq!(dan.join(&stack, "trio").await.0, 200);
    let found = &dan.heard("MATCH_FOUND", 1, WAIT).await[0];
    assert_eq!(
        (&found["matchId"], &found["backfill"]),
        (&json!(id), &json!(true)),
        "{found}"
    );
    // The leaver is held until the game's end, then freed by its result.
    let (status, body) = players[2].join(&stack, "trio").await;
    assert_eq!(
        (status, &body["data"]["error"]),
        (409, &json!("IN_MATCH")),
        "{body}"
    );
    let result = &dan.heard("MATCH_RESULT", 1, WAIT).await[0];
    let ranks = &result["result"]["playerRanks"];
    assert_eq!(ranks["cat"], 4, "the leaver is last: {result}");
    let mut stayed: Vec<u64> = ["ann", "ben", "dan"]
        .iter()
        .map(|p| ranks[p].as_u64().expect("ranked"))
        .collect();
    stayed.sort();
    assert_eq!(stayed, [1, 2, 3], "{result}");
    let (status, body) = players[2].join(&stack, "trio").await;
    assert_eq!(status, 200, "{body}");
    stack.stop().await;
}
