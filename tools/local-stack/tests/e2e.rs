//! End-to-end: the local stack on free ports with its embedded Redis, real
//! WebSocket clients and real HTTP calls through the emulated API Gateway.

mod support;

use integration_tests::outbox_len;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::time::Duration;

use futures_util::future::join_all;
use integration_tests::eventually;
use rand::{Rng, SeedableRng};
use serde_json::{json, Value};
use support::{call, start_stack, Player};

const WORLDS: &str = "world1:3,world2:2,world3:4";

fn team_size(world: &str) -> usize {
    match world {
        "world1" => 3,
        "world2" => 2,
        _ => 4,
    }
}

async fn waiting(stack: &local_stack::LocalStack, token: &str, world: &str) -> u64 {
    let (status, body) = call(
        stack,
        "GET",
        &format!("/v1/matching/queue-status/{world}"),
        Some(token),
        None,
    )
    .await;
    assert_eq!(status, 200, "{body}");
    body["data"]["waiting"].as_u64().expect("waiting")
}

/// 300+ players with their own tokens and sockets join random worlds, some
/// leave; every player who stayed hears exactly one match (a timed-out push may
/// be repeated, identically: delivery is at least once), matches are
/// well-formed, my-status agrees with the socket, leavers hear nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hundreds_of_players_each_get_exactly_one_match() {
    let stack = start_stack(WORLDS, &[]).await;
    let worlds = ["world1", "world2", "world3"];
    let mut rng = rand::rngs::StdRng::seed_from_u64(7);

    let mut players = Vec::new();
    for chunk in (0..300).collect::<Vec<_>>().chunks(50) {
        let names: Vec<String> = chunk.iter().map(|i| format!("player-{i:03}")).collect();
        players.extend(join_all(names.iter().map(|name| Player::connect(&stack, name))).await);
    }
    let choices: Vec<(&str, bool)> = players
        .iter()
        .map(|_| {
            (
                worlds[rng.random_range(0..3)],
                rng.random_range(0..100) < 15,
            )
        })
        .collect();

    // Everyone joins at once; about one in seven then tries to leave.
    let started = std::time::Instant::now();
    let joins = join_all(
        players
            .iter()
            .zip(&choices)
            .map(|(p, (world, _))| p.join(&stack, world)),
    )
    .await;
    eprintln!("300 joins answered in {:?}", started.elapsed());
    for (status, body) in &joins {
        assert_eq!(*status, 200, "{body}");
        assert!(
            matches!(body["data"]["status"].as_str(), Some("QUEUED" | "MATCHED")),
            "{body}"
        );
    }
    let mut left = BTreeSet::new();
    let stack_ref = &stack;
    let leaves = join_all(
        players
            .iter()
            .zip(&choices)
            .filter(|(_, (_, leave))| *leave)
            .map(|(p, (world, _))| async move { (p.id.clone(), p.leave(stack_ref, world).await) }),
    )
    .await;
    for (id, (status, body)) in leaves {
        match status {
            200 => {
                left.insert(id);
            }
            404 => assert_eq!(body["data"]["error"], "NOT_QUEUED", "{body}"), // matched before leaving
            other => panic!("leave answered {other}: {body}"),
        }
    }

    // Fill every partial group so that every player who stayed gets matched.
    let probe = &players[0].token;
    let mut fillers = Vec::new();
    for world in worlds {
        let mut n = 0;
        while waiting(&stack, probe, world).await > 0 {
            let filler = Player::connect(&stack, &format!("filler-{world}-{n}")).await;
            let (status, body) = filler.join(&stack, world).await;
            assert_eq!(status, 200, "{body}");
            fillers.push((filler, world));
            n += 1;
            assert!(n < team_size(world), "{world} needed too many fillers");
        }
    }

    let stayed: Vec<&Player> = players
        .iter()
        .filter(|p| !left.contains(&p.id))
        .chain(fillers.iter().map(|(f, _)| f))
        .collect();
    assert!(stayed.len() >= 250, "most players stay: {}", stayed.len());
    eventually(
        "every staying player to get MATCH_FOUND and the outbox to drain",
        Duration::from_secs(30),
        || async {
            let all = stayed
                .iter()
                .all(|p| !p.messages_of_type("MATCH_FOUND").is_empty());
            (all && outbox_len(&stack.store).await == 0).then_some(())
        },
    )
    .await;

    let mut matches: BTreeMap<String, Value> = BTreeMap::new();
    let mut seen_by: HashMap<String, BTreeSet<String>> = HashMap::new();
    let mut repeats = 0;
    for p in &stayed {
        let found = p.messages_of_type("MATCH_FOUND");
        // Delivery is at least once: a push that timed out on the join's
        // path (800 ms) may still have arrived, and the outbox sends it
        // again. A repeat must be the same message; a second match never.
        let m = &found[0];
        for again in &found[1..] {
            assert_eq!(again, m, "{} heard two different matches", p.id);
            repeats += 1;
        }
        let id = m["matchId"].as_str().expect("matchId").to_owned();
        let participants: Vec<&str> = m["participants"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(Value::as_str)
            .collect();
        assert!(
            participants.contains(&p.id.as_str()),
            "{} told about a match without them",
            p.id
        );
        seen_by.entry(id.clone()).or_default().insert(p.id.clone());
        if let Some(previous) = matches.insert(id, m.clone()) {
            assert_eq!(previous, *m, "one match id, one record");
        }
        let status = p.my_status(&stack).await;
        assert_eq!(status["status"], "MATCHED", "{}: {status}", p.id);
        assert_eq!(
            status["match"]["matchId"], m["matchId"],
            "my-status agrees with the socket for {}",
            p.id
        );
    }
    for (id, m) in &matches {
        let world = m["worldType"].as_str().unwrap();
        let participants: BTreeSet<&str> = m["participants"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(Value::as_str)
            .collect();
        assert_eq!(participants.len(), team_size(world), "match {id}: {m}");
        assert_eq!(
            m["participants"].as_array().unwrap().len(),
            team_size(world),
            "distinct players in {id}"
        );
        let told: BTreeSet<&str> = seen_by[id].iter().map(String::as_str).collect();
        assert_eq!(told, participants, "every participant of {id} was told");
    }
    for p in players.iter().filter(|p| left.contains(&p.id)) {
        assert!(
            p.messages_of_type("MATCH_FOUND").is_empty(),
            "{} left but was matched",
            p.id
        );
        assert!(p.messages_of_type("TICKET_EXPIRED").is_empty(), "{}", p.id);
        assert_eq!(p.my_status(&stack).await["status"], "IDLE", "{}", p.id);
    }
    eprintln!(
        "{} players, {} left, {} matches, {repeats} repeated deliveries",
        stayed.len() + left.len(),
        left.len(),
        matches.len()
    );
    stack.stop().await;
}

/// A queued player who closes their socket is never matched afterwards.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_disconnected_player_is_never_matched() {
    let stack = start_stack(WORLDS, &[]).await;
    let ghost = Player::connect(&stack, "ghost").await;
    let stays = Player::connect(&stack, "stays").await;
    assert_eq!(ghost.join(&stack, "world1").await.0, 200);
    assert_eq!(stays.join(&stack, "world1").await.0, 200);
    let ghost_token = ghost.token.clone();
    ghost.disconnect().await;
    eventually(
        "the ghost's ticket to be removed",
        Duration::from_secs(5),
        || async {
            let (_, body) = call(
                &stack,
                "GET",
                "/v1/matching/my-status",
                Some(&ghost_token),
                None,
            )
            .await;
            (body["data"]["status"] == "IDLE").then_some(())
        },
    )
    .await;
    let a = Player::connect(&stack, "a").await;
    let b = Player::connect(&stack, "b").await;
    a.join(&stack, "world1").await;
    let (_, body) = b.join(&stack, "world1").await;
    assert_eq!(body["data"]["status"], "MATCHED", "{body}");
    let participants = body["data"]["match"]["participants"].clone();
    assert_eq!(participants, json!(["stays", "a", "b"]));
    let (_, status) = call(
        &stack,
        "GET",
        "/v1/matching/my-status",
        Some(&ghost_token),
        None,
    )
    .await;
    assert_eq!(status["data"]["status"], "IDLE");
    stack.stop().await;
}

/// Missing, forged and expired tokens are refused on HTTP and on the upgrade.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_tokens_are_refused() {
    let stack = start_stack(WORLDS, &[]).await;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let expired = stack
        .issuer
        .sign(&json!({"sub": "eve", "iss": stack.issuer.issuer, "aud": stack.issuer.audience, "exp": now - 600}))
        .unwrap();
    let wrong_audience = stack
        .issuer
        .sign(&json!({"sub": "eve", "iss": stack.issuer.issuer, "aud": "another-api", "exp": now + 600}))
        .unwrap();
    let forger =
        local_stack::dev_auth::DevIssuer::generate(&stack.issuer.issuer, &stack.issuer.audience)
            .unwrap();
    let forged = forger.mint("eve", Duration::from_secs(600)).unwrap();
    let valid = support::token(&stack, "eve").await;
    let mut parts: Vec<&str> = valid.split('.').collect();
    let none_header = {
        use base64::Engine;
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(r#"{"alg":"none","typ":"JWT"}"#)
    };
    parts[0] = &none_header;
    let alg_none = format!("{}.{}.", parts[0], parts[1]);

    for (label, token) in [
        ("missing", None),
        ("garbage", Some("not-a-jwt")),
        ("expired", Some(expired.as_str())),
        ("wrong audience", Some(wrong_audience.as_str())),
        ("forged signature", Some(forged.as_str())),
        ("alg none", Some(alg_none.as_str())),
    ] {
        let (status, body) = call(
            &stack,
            "POST",
            "/v1/matching/join",
            token,
            Some(json!({"worldType": "world1"})),
        )
        .await;
        assert_eq!(status, 401, "HTTP with {label} token: {body}");
        let url = match token {
            Some(t) => format!("{}?token={t}", stack.websocket_url),
            None => stack.websocket_url.clone(),
        };
        match tokio_tungstenite::connect_async(url).await {
            Err(tokio_tungstenite::tungstenite::Error::Http(response)) => {
                assert_eq!(response.status(), 401, "upgrade with {label} token");
            }
            Ok(_) => panic!("upgrade with {label} token was accepted"),
            Err(other) => panic!("upgrade with {label} token: unexpected {other}"),
        }
    }
    assert_eq!(stack.hub.open_connections(), 0);
    let (status, _) = call(
        &stack,
        "POST",
        "/v1/matching/join",
        Some(&valid),
        Some(json!({"worldType": "world1"})),
    )
    .await;
    assert_eq!(status, 200, "the valid token works");
    let registered: u64 = stack
        .store
        .command(redis::cmd("HLEN").arg(stack.store.keys().conns()))
        .await
        .unwrap();
    assert_eq!(registered, 0, "no refused connection was registered");
    stack.stop().await;
}
