//! Identity: no route acts for anyone but the verified `sub`.
//!
//! At the handlers (API Gateway events as Lambda receives them, real Redis,
//! pushes through the real API Gateway pusher to the `@connections`
//! stand-in): a body naming another player is refused and changes nothing;
//! A's leave never touches B's ticket; A's my-status never shows B's ticket
//! or match; headers, query strings, path parameters, other claims and
//! Lambda-authorizer contexts are never an identity.
//!
//! Through the local stack (real HTTP and real WebSocket upgrades): every
//! forged, foreign, expired or unsigned token is refused with 401 and changes
//! nothing, and a token for one player cannot register a connection that
//! receives another player's pushes. A scope counts whether the token's
//! `scope`/`scp` claim is a space-separated string or a JSON list.

mod support;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use base64::Engine;
use futures_util::StreamExt;
use integration_tests::connections_server::{
    hs256_token, now_secs, unsigned_token, ConnectionsServer, TestIssuer,
};
use integration_tests::keyspace::{walk, Keyspace, Scope};
use integration_tests::{eventually, settings_for, RedisServer};
use lambda_common::push::ApiGatewayPusher;
use lambda_http::Request;
use local_stack::LocalStack;
use serde_json::{json, Value};
use shared::{ConnectionId, MatchStore, PlayerId, PlayerStatus};
use support::{call, start_stack, Player};
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::Message;

const WORLDS: &str = "world1:3,world2:2";

fn player(s: &str) -> PlayerId {
    PlayerId::parse(s).expect("valid player id")
}

/// Every key of the server with its logical contents, so a key outside the
/// layout shows up too.
type State = Keyspace;

async fn snapshot(store: &MatchStore) -> State {
    walk(store, Scope::Server).await
}

// ---------------------------------------------------------------------------
// Handler level
// ---------------------------------------------------------------------------

struct Handlers {
    _redis: RedisServer,
    connections: ConnectionsServer,
    join: join::App<ApiGatewayPusher>,
    leave: leave::App,
    status: status::App,
    store: MatchStore,
}

impl Handlers {
    async fn start(ns: &str) -> Self {
        let redis = RedisServer::start();
        let store =
            MatchStore::new(settings_for(&redis.url(), false, ns, WORLDS, &[])).expect("store");
        let connections = ConnectionsServer::start().await;
        let pusher = ApiGatewayPusher::with_static_credentials(
            &connections.endpoint_with_stage("prod"),
            "us-east-1",
        )
        .expect("pusher");
        for (conn, p) in [("conn-alice=", "alice"), ("conn-bob=", "bob")] {
            store
                .register_connection(&ConnectionId::parse(conn).unwrap(), &player(p))
                .await
                .expect("register");
        }
        Self {
            _redis: redis,
            connections,
            join: join::App {
                store: store.clone(),
                pusher,
            },
            leave: leave::App {
                store: store.clone(),
            },
            status: status::App {
                store: store.clone(),
            },
            store,
        }
    }

    /// Sends `event` to the function serving its route; returns (status, body).
    async fn send(&self, event: Value) -> (u16, Value) {
        let request: Request =
            lambda_http::request::from_str(&event.to_string()).expect("HTTP API event");
        let path = event["rawPath"].as_str().unwrap_or_default().to_owned();
        let result = if path.ends_with("/join") {
            join::handle(&self.join, request).await
        } else if path.ends_with("/leave") {
            leave::handle(&self.leave, request).await
        } else {
            status::handle(&self.status, request).await
        };
        let resp = result.expect("no function error");
        let status = resp.status().as_u16();
        let body: Value = serde_json::from_slice(resp.body().as_ref()).expect("JSON");
        assert_eq!(body["resultCode"], status.to_string(), "{body}");
        (status, body)
    }

    async fn status_of(&self, p: &str) -> PlayerStatus {
        self.store.player_status(&player(p)).await.expect("status")
    }
}

/// An HTTP API event from `events/`, for `sub`, with `body`.
fn event(file: &str, sub: Option<&str>, body: Option<Value>) -> Value {
    let text = match file {
        "join" => include_str!("../../../events/join.json"),
        "leave" => include_str!("../../../events/leave.json"),
        "my-status" => include_str!("../../../events/my-status.json"),
        _ => include_str!("../../../events/queue-status.json"),
    };
    let mut v: Value = serde_json::from_str(text).expect("event file");
    match sub {
        Some(s) => v["requestContext"]["authorizer"]["jwt"]["claims"]["sub"] = json!(s),
        None => {
            if let Some(ctx) = v["requestContext"].as_object_mut() {
                ctx.remove("authorizer");
            }
        }
    }
    if let Some(b) = body {
        v["body"] = json!(b.to_string());
        v["isBase64Encoded"] = json!(false);
    }
    v
}

fn join_event(sub: &str, world: &str) -> Value {
    event("join", Some(sub), Some(json!({ "worldType": world })))
}

fn leave_event(sub: &str, world: &str) -> Value {
    event("leave", Some(sub), Some(json!({ "worldType": world })))
}

fn queued_at(status: &PlayerStatus) -> Option<(String, u64)> {
    match status {
        PlayerStatus::Queued(q) => Some((q.world_type.to_string(), q.position)),
        _ => None,
    }
}

/// Fields a client might use to name a player.
const PLAYER_FIELDS: [&str; 9] = [
    "player",
    "memberId",
    "sub",
    "userId",
    "playerId",
    "player_id",
    "user",
    "Player",
    "identity",
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_naming_another_player_is_refused_and_changes_nothing() {
    let h = Handlers::start("id-body").await;
    assert_eq!(h.send(join_event("bob", "world1")).await.0, 200);
    let bob_before = h.status_of("bob").await;
    for field in PLAYER_FIELDS {
        for value in [json!("bob"), json!({ "id": "bob" }), json!(["bob"])] {
            let before = snapshot(&h.store).await;
            let posts = h.connections.posts().len();
            let mut body = json!({ "worldType": "world1" });
            body[field] = value.clone();
            for file in ["join", "leave"] {
                let (status, answer) = h.send(event(file, Some("alice"), Some(body.clone()))).await;
                assert_eq!(
                    (status, answer["data"]["error"].as_str()),
                    (400, Some("INVALID_REQUEST")),
                    "{file} with {field}={value}: {answer}"
                );
                assert!(
                    answer["msg"]
                        .as_str()
                        .unwrap_or_default()
                        .contains("unknown field"),
                    "{answer}"
                );
            }
            assert_eq!(
                snapshot(&h.store).await,
                before,
                "{field}={value} changed Redis"
            );
            assert_eq!(h.connections.posts().len(), posts, "{field}={value} pushed");
        }
    }
    // Also nested in the ticket data: only data, never an identity.
    let body = json!({ "worldType": "world2", "data": { "player": "bob", "sub": "bob" } });
    let (status, answer) = h.send(event("join", Some("alice"), Some(body))).await;
    assert_eq!(
        (status, answer["data"]["status"].as_str()),
        (200, Some("QUEUED"))
    );
    assert_eq!(
        queued_at(&h.status_of("alice").await),
        Some(("world2".into(), 1))
    );
    assert_eq!(h.status_of("bob").await, bob_before, "bob is untouched");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leave_never_touches_another_players_ticket() {
    let h = Handlers::start("id-leave").await;
    assert_eq!(h.send(join_event("bob", "world1")).await.0, 200);
    assert_eq!(h.send(join_event("carol", "world1")).await.0, 200);

    // Alice has no ticket: her leave of bob's world is NOT_QUEUED and writes nothing.
    let before = snapshot(&h.store).await;
    let (status, body) = h.send(leave_event("alice", "world1")).await;
    assert_eq!(
        (status, body["data"]["error"].as_str()),
        (404, Some("NOT_QUEUED")),
        "{body}"
    );
    assert!(body["data"].get("queuedIn").is_none(), "{body}");
    assert_eq!(snapshot(&h.store).await, before);

    // Waiting in world2, she is told so (her own world, nobody else's).
    assert_eq!(h.send(join_event("alice", "world2")).await.0, 200);
    let before = snapshot(&h.store).await;
    let (status, body) = h.send(leave_event("alice", "world1")).await;
    assert_eq!(
        (status, body["data"]["queuedIn"].as_str()),
        (404, Some("world2")),
        "{body}"
    );
    assert!(!body.to_string().contains("bob") && !body.to_string().contains("carol"));
    assert_eq!(snapshot(&h.store).await, before);

    // Her own leave removes only her ticket.
    let (status, body) = h.send(leave_event("alice", "world2")).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(h.status_of("alice").await, PlayerStatus::Idle);
    assert_eq!(
        queued_at(&h.status_of("bob").await),
        Some(("world1".into(), 1))
    );
    assert_eq!(
        queued_at(&h.status_of("carol").await),
        Some(("world1".into(), 2))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn my_status_shows_only_the_callers_own_ticket_and_match() {
    let h = Handlers::start("id-status").await;
    let mine = |sub: &str| event("my-status", Some(sub), None);

    assert_eq!(h.send(join_event("bob", "world1")).await.0, 200);
    let (status, body) = h.send(mine("alice")).await;
    assert_eq!(
        (status, body["data"].clone()),
        (200, json!({ "status": "IDLE" }))
    );

    // Bob, carol and dave match; alice still sees only herself.
    assert_eq!(h.send(join_event("carol", "world1")).await.0, 200);
    let (_, matched) = h.send(join_event("dave", "world1")).await;
    assert_eq!(matched["data"]["status"], "MATCHED", "{matched}");
    let (status, body) = h.send(mine("alice")).await;
    assert_eq!(
        (status, body["data"].clone()),
        (200, json!({ "status": "IDLE" }))
    );
    // My-status shows the record as join answered it, with what became of
    // the match since (its state).
    let (_, bobs) = h.send(mine("bob")).await;
    let mut shown = bobs["data"]["match"].clone();
    assert_eq!(
        shown.as_object_mut().and_then(|m| m.remove("state")),
        Some(json!("FORMED")),
        "{bobs}"
    );
    assert_eq!(shown, matched["data"]["match"]);

    // Alice queues; bob's answer is still his match, alice's is her ticket.
    assert_eq!(h.send(join_event("alice", "world2")).await.0, 200);
    let (_, body) = h.send(mine("alice")).await;
    assert_eq!(body["data"]["status"], "QUEUED");
    assert_eq!(body["data"]["worldType"], "world2");
    for other in ["bob", "carol", "dave"] {
        assert!(!body.to_string().contains(other), "{body}");
    }
    let (_, bobs) = h.send(mine("bob")).await;
    assert_eq!(bobs["data"]["status"], "MATCHED");
    assert!(!bobs.to_string().contains("alice"), "{bobs}");

    // queue-status names nobody.
    let (status, body) = h.send(event("queue-status", Some("erin"), None)).await;
    assert_eq!(status, 200, "{body}");
    for p in ["alice", "bob", "carol", "dave"] {
        assert!(!body.to_string().contains(p), "{body}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn identity_comes_only_from_the_verified_claims() {
    let h = Handlers::start("id-claims").await;
    let bob_token_payload = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .encode(json!({ "sub": "bob" }).to_string());
    let impersonate = |v: &mut Value| {
        for (k, val) in [
            ("x-user-id", "bob".to_owned()),
            ("x-player-id", "bob".to_owned()),
            ("x-amzn-oidc-identity", "bob".to_owned()),
            ("x-forwarded-user", "bob".to_owned()),
            ("x-remote-user", "bob".to_owned()),
            ("cookie", "sub=bob; player=bob".to_owned()),
            ("authorization", format!("Bearer e30.{bob_token_payload}.")),
        ] {
            v["headers"][k] = json!(val);
        }
        v["rawQueryString"] = json!("player=bob&sub=bob");
        v["queryStringParameters"] = json!({ "player": "bob", "sub": "bob" });
        v["pathParameters"] = json!({ "player": "bob", "sub": "bob" });
        v["stageVariables"] = json!({ "sub": "bob" });
    };

    // With alice's verified claims (and other claims naming bob), alice acts.
    let mut e = join_event("alice", "world1");
    impersonate(&mut e);
    let claims = &mut e["requestContext"]["authorizer"]["jwt"]["claims"];
    for k in [
        "username",
        "cognito:username",
        "email",
        "client_id",
        "player",
        "userId",
    ] {
        claims[k] = json!("bob");
    }
    let (status, body) = h.send(e).await;
    assert_eq!(
        (status, body["data"]["status"].as_str()),
        (200, Some("QUEUED")),
        "{body}"
    );
    assert_eq!(
        queued_at(&h.status_of("alice").await),
        Some(("world1".into(), 1))
    );
    assert_eq!(h.status_of("bob").await, PlayerStatus::Idle);
    // The QUEUED push went to alice's connection only.
    let posts = h.connections.posts();
    assert_eq!(posts.len(), 1, "{posts:?}");
    assert_eq!(posts[0].connection_id, "conn-alice=");

    // Without the JWT authorizer's sub, nothing else is an identity: 401 everywhere.
    let before = snapshot(&h.store).await;
    type Edit = fn(&mut Value);
    let no_identity: [(&str, Edit); 5] = [
        ("no authorizer", |_| {}),
        ("Lambda authorizer context", |v| {
            v["requestContext"]["authorizer"] =
                json!({ "lambda": { "sub": "bob", "principalId": "bob" } })
        }),
        ("IAM authorizer", |v| {
            v["requestContext"]["authorizer"] = json!({ "iam": { "userId": "bob" } })
        }),
        ("claims without sub", |v| {
            v["requestContext"]["authorizer"] =
                json!({ "jwt": { "claims": { "username": "bob", "Sub": "bob", " sub": "bob" } } })
        }),
        ("empty sub", |v| {
            v["requestContext"]["authorizer"] = json!({ "jwt": { "claims": { "sub": "" } } })
        }),
    ];
    for (what, edit) in no_identity {
        for file in ["join", "leave", "my-status", "queue-status"] {
            let mut e = event(file, None, None);
            if file == "leave" {
                e["body"] = json!(json!({ "worldType": "world1" }).to_string());
            }
            impersonate(&mut e);
            edit(&mut e);
            let (status, body) = h.send(e).await;
            assert_eq!(
                (status, body["data"]["error"].as_str()),
                (401, Some("UNAUTHORIZED")),
                "{what}, {file}: {body}"
            );
        }
    }
    assert_eq!(snapshot(&h.store).await, before, "a 401 changed Redis");
    assert_eq!(h.connections.posts().len(), 1, "a 401 pushed");
}

// ---------------------------------------------------------------------------
// Through the local stack
// ---------------------------------------------------------------------------

/// Redis state without the matcher loop's own: its lease and sleep mark.
async fn stack_state(stack: &LocalStack) -> State {
    let mut state = snapshot(&stack.store).await;
    state.remove(&stack.store.keys().matcher_lease());
    state.remove(&stack.store.keys().matcher_asleep());
    state
}

/// Valid claims for `sub` from the stack's issuer.
fn claims_for(stack: &LocalStack, sub: &str) -> Value {
    json!({
        "sub": sub,
        "iss": stack.issuer.issuer,
        "aud": stack.issuer.audience,
        "iat": now_secs(),
        "exp": now_secs() + 600,
    })
}

/// Tokens that must never authenticate, each claiming to be `sub`.
fn bad_tokens(stack: &LocalStack, sub: &str) -> Vec<(&'static str, String)> {
    let valid = claims_for(stack, sub);
    let with = |k: &str, v: Value| {
        let mut c = valid.clone();
        c[k] = v;
        c
    };
    let without = |k: &str| {
        let mut c = valid.clone();
        if let Some(o) = c.as_object_mut() {
            o.remove(k);
        }
        c
    };
    let forger = TestIssuer::new(&stack.issuer.issuer, &stack.issuer.audience);
    let n = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(
            stack.issuer.jwks()["keys"][0]["n"]
                .as_str()
                .unwrap_or_default(),
        )
        .expect("modulus");
    let genuine = stack.issuer.sign(&valid).expect("sign");
    let mut parts: Vec<&str> = genuine.split('.').collect();
    let other_payload = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .encode(with("sub", json!("someone-else")).to_string());
    parts[1] = &other_payload;
    let spliced = parts.join(".");
    vec![
        (
            "forged signature (another key, the real kid)",
            forger.with_key(1, "local-dev-key").sign(&valid),
        ),
        (
            "unknown kid",
            forger.with_key(1, "another-kid").sign(&valid),
        ),
        ("payload swapped under a genuine signature", spliced),
        (
            "wrong issuer",
            stack
                .issuer
                .sign(&with("iss", json!("https://evil.example.test")))
                .expect("sign"),
        ),
        (
            "wrong audience",
            stack
                .issuer
                .sign(&with("aud", json!("another-api")))
                .expect("sign"),
        ),
        (
            "expired",
            stack
                .issuer
                .sign(&with("exp", json!(now_secs() - 300)))
                .expect("sign"),
        ),
        ("no exp", stack.issuer.sign(&without("exp")).expect("sign")),
        ("alg none", unsigned_token(&valid, "local-dev-key")),
        (
            "HS256 keyed with the public key",
            hs256_token(&n, &valid, "local-dev-key"),
        ),
        ("garbage", "not.a.jwt".to_owned()),
        ("empty", String::new()),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_refuses_every_bad_token_and_changes_nothing() {
    let stack = start_stack(WORLDS, &[]).await;
    let alice = support::token(&stack, "alice").await;
    let (status, body) = call(
        &stack,
        "POST",
        "/v1/matching/join",
        Some(&alice),
        Some(json!({ "worldType": "world1" })),
    )
    .await;
    assert_eq!(status, 200, "{body}");

    let routes: [(&str, &str, Option<Value>); 4] = [
        (
            "POST",
            "/v1/matching/join",
            Some(json!({ "worldType": "world2" })),
        ),
        (
            "POST",
            "/v1/matching/leave",
            Some(json!({ "worldType": "world1" })),
        ),
        ("GET", "/v1/matching/queue-status/world1", None),
        ("GET", "/v1/matching/my-status", None),
    ];
    let before = stack_state(&stack).await;
    let mut tokens: Vec<(&str, Option<String>)> = bad_tokens(&stack, "alice")
        .into_iter()
        .map(|(what, t)| (what, Some(t)))
        .collect();
    tokens.push(("no Authorization header", None));
    for (what, token) in &tokens {
        for (method, path, body) in &routes {
            let (status, answer) = call(&stack, method, path, token.as_deref(), body.clone()).await;
            assert_eq!(
                (status, answer.clone()),
                (401, json!({ "message": "Unauthorized" })),
                "{what}: {method} {path}"
            );
        }
    }
    // The token in the query string or in another header is not a credential.
    let client = support::http();
    for req in [
        client.get(format!(
            "{}/v1/matching/my-status?token={alice}",
            stack.http_url
        )),
        client
            .get(format!("{}/v1/matching/my-status", stack.http_url))
            .header("x-api-key", alice.clone()),
        client
            .get(format!("{}/v1/matching/my-status", stack.http_url))
            .header("cookie", format!("token={alice}")),
    ] {
        assert_eq!(req.send().await.expect("answer").status(), 401);
    }
    assert_eq!(
        stack_state(&stack).await,
        before,
        "a refused request changed Redis"
    );
    // Alice's own token still works: the 401s were the tokens.
    let (status, body) = call(&stack, "GET", "/v1/matching/my-status", Some(&alice), None).await;
    assert_eq!(
        (status, body["data"]["status"].as_str()),
        (200, Some("QUEUED"))
    );
    stack.stop().await;
}

/// A WebSocket client that records every text message.
struct Socket {
    received: Arc<Mutex<Vec<Value>>>,
    reader: tokio::task::JoinHandle<()>,
}

impl Socket {
    /// Opens `url` with `headers`; `Err(status)` when the upgrade is refused.
    async fn open(url: &str, headers: &[(&str, &str)]) -> Result<Self, u16> {
        let mut request = url.into_client_request().expect("request");
        for (k, v) in headers {
            request.headers_mut().insert(
                tokio_tungstenite::tungstenite::http::HeaderName::from_bytes(k.as_bytes())
                    .expect("header name"),
                v.parse().expect("header value"),
            );
        }
        let (socket, _) = match tokio_tungstenite::connect_async(request).await {
            Ok(ok) => ok,
            Err(tokio_tungstenite::tungstenite::Error::Http(resp)) => {
                return Err(resp.status().as_u16())
            }
            Err(e) => panic!("WebSocket connect failed: {e}"),
        };
        let received: Arc<Mutex<Vec<Value>>> = Arc::default();
        let sink = received.clone();
        let reader = tokio::spawn(async move {
            let (_write, mut read) = socket.split();
            while let Some(Ok(message)) = read.next().await {
                if let Message::Text(text) = message {
                    let value = serde_json::from_str(&text).unwrap_or(Value::Null);
                    sink.lock().expect("lock").push(value);
                }
            }
        });
        Ok(Self { received, reader })
    }

    fn messages(&self) -> Vec<Value> {
        self.received.lock().expect("lock").clone()
    }
}

impl Drop for Socket {
    fn drop(&mut self) {
        self.reader.abort();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn websocket_connect_refuses_every_bad_token() {
    let stack = start_stack(WORLDS, &[]).await;
    let before = stack_state(&stack).await;
    for (what, token) in bad_tokens(&stack, "alice") {
        let url = format!("{}?token={token}", stack.websocket_url);
        let result = Socket::open(&url, &[]).await.map(|_| ());
        assert_eq!(result, Err(401), "{what}");
    }
    // No token at all, or the token where ws-connect does not read it.
    let alice = support::token(&stack, "alice").await;
    let auth = format!("Bearer {alice}");
    for (url, headers) in [
        (stack.websocket_url.clone(), vec![]),
        (format!("{}?Token={alice}", stack.websocket_url), vec![]),
        (
            stack.websocket_url.clone(),
            vec![("authorization", auth.as_str())],
        ),
    ] {
        let result = Socket::open(&url, &headers).await.map(|_| ());
        assert_eq!(result, Err(401), "{url} {headers:?}");
    }
    assert_eq!(
        stack_state(&stack).await,
        before,
        "a refused $connect changed Redis"
    );
    assert!(stack
        .store
        .connections_of(&player("alice"))
        .await
        .unwrap()
        .is_empty());
    // Alice's genuine token connects.
    let socket = Socket::open(&format!("{}?token={alice}", stack.websocket_url), &[]).await;
    assert!(socket.is_ok());
    assert_eq!(
        stack
            .store
            .connections_of(&player("alice"))
            .await
            .unwrap()
            .len(),
        1
    );
    drop(socket);
    stack.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_for_one_player_never_receives_another_players_pushes() {
    let stack = start_stack(WORLDS, &[]).await;
    let alice = Player::connect(&stack, "alice").await;
    let bob = Player::connect(&stack, "bob").await;
    let carol = Player::connect(&stack, "carol").await;

    // Mallory tries to pass as alice on $connect: her own token plus
    // parameters and headers naming alice. She is registered as mallory.
    let mallory_token = support::token(&stack, "mallory").await;
    let mallory = Socket::open(
        &format!(
            "{}?token={mallory_token}&player=alice&sub=alice&connectionId=x",
            stack.websocket_url
        ),
        &[("x-user-id", "alice"), ("x-amzn-oidc-identity", "alice")],
    )
    .await
    .expect("mallory's own token connects");
    // A token for alice that mallory signed herself does not connect.
    let forged = TestIssuer::new(&stack.issuer.issuer, &stack.issuer.audience)
        .with_key(1, "local-dev-key")
        .sign(&claims_for(&stack, "alice"));
    let refused = Socket::open(&format!("{}?token={forged}", stack.websocket_url), &[]).await;
    assert_eq!(refused.map(|_| ()), Err(401));

    let registry: BTreeMap<&str, usize> = {
        let mut m = BTreeMap::new();
        for p in ["alice", "bob", "carol", "mallory"] {
            m.insert(
                p,
                stack.store.connections_of(&player(p)).await.unwrap().len(),
            );
        }
        m
    };
    assert_eq!(
        registry,
        BTreeMap::from([("alice", 1), ("bob", 1), ("carol", 1), ("mallory", 1)])
    );

    // Mallory waits in world2; alice and bob in world1.
    let (status, body) = call(
        &stack,
        "POST",
        "/v1/matching/join",
        Some(&mallory_token),
        Some(json!({ "worldType": "world2" })),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(alice.join(&stack, "world1").await.0, 200);
    assert_eq!(bob.join(&stack, "world1").await.0, 200);
    // Her leave of their world, with or without naming alice, touches nothing.
    let before = stack_state(&stack).await;
    for body in [
        json!({ "worldType": "world1", "player": "alice" }),
        json!({ "worldType": "world1" }),
    ] {
        let (status, answer) = call(
            &stack,
            "POST",
            "/v1/matching/leave",
            Some(&mallory_token),
            Some(body),
        )
        .await;
        assert!(matches!(status, 400 | 404), "{answer}");
    }
    assert_eq!(stack_state(&stack).await, before);
    assert_eq!(alice.my_status(&stack).await["position"], 1);

    // Carol completes the match: alice, bob and carol hear it, mallory does not.
    let (status, matched) = carol.join(&stack, "world1").await;
    assert_eq!(
        (status, matched["data"]["status"].as_str()),
        (200, Some("MATCHED"))
    );
    let match_id = matched["data"]["match"]["matchId"].clone();
    for p in [&alice, &bob, &carol] {
        eventually(
            "MATCH_FOUND for every participant",
            Duration::from_secs(10),
            || async {
                p.messages_of_type("MATCH_FOUND")
                    .iter()
                    .any(|m| m["matchId"] == match_id)
                    .then_some(())
            },
        )
        .await;
    }
    eventually("the outbox drained", Duration::from_secs(10), || async {
        let n: u64 = stack
            .store
            .command(redis::cmd("ZCARD").arg(stack.store.keys().outbox()))
            .await
            .ok()?;
        (n == 0).then_some(())
    })
    .await;
    let heard = mallory.messages();
    assert_eq!(
        heard,
        vec![
            json!({ "type": "QUEUED", "worldType": "world2", "position": 1,
                     "queueSize": 1, "estimatedWaitSeconds": null })
        ],
        "mallory heard only her own QUEUED"
    );
    for p in [&alice, &bob, &carol] {
        let all = p.received.lock().unwrap().clone();
        assert!(
            all.iter().all(|m| m["worldType"] == "world1"),
            "{} heard another player's push: {all:?}",
            p.id
        );
    }
    drop(mallory);
    for p in [alice, bob, carol] {
        p.disconnect().await;
    }
    stack.stop().await;
}

/// The writer scope the scope tests configure.
const WRITER_SCOPE: &str = "matchmaking/ratings.write";

/// A stack whose rule set names [`WRITER_SCOPE`] as the ratings writer scope.
async fn start_stack_with_writer_scope() -> LocalStack {
    let rules = format!(
        r#"{{"ratings": {{"writerScope": "{WRITER_SCOPE}"}},
            "worlds": [{{"name": "world1", "teamSize": 2}}]}}"#
    );
    support::start_stack_vars(&[("MM_RULES", &rules)]).await
}

/// `PUT /v1/ratings/target` with a token carrying `claims`: status and
/// `data.error` (empty for a success).
async fn rating_write_with(stack: &LocalStack, claims: Value) -> (u16, String) {
    let token = support::token_with(stack, "game-server", claims).await;
    let (status, body) = call(
        stack,
        "PUT",
        "/v1/ratings/target",
        Some(&token),
        Some(json!({"rating": 1500})),
    )
    .await;
    let code = body["data"]["error"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    (status, code)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scope_counts_in_a_string_claim_and_in_a_json_list_claim() {
    let stack = start_stack_with_writer_scope().await;
    let granted = [
        json!({"scope": WRITER_SCOPE}),
        json!({"scp": WRITER_SCOPE}),
        json!({"scope": format!("matchmaking/play {WRITER_SCOPE}")}),
        // The list form some identity providers issue.
        json!({"scp": [WRITER_SCOPE]}),
        json!({"scp": ["matchmaking/play", WRITER_SCOPE]}),
        json!({"scope": [WRITER_SCOPE]}),
    ];
    for claims in granted {
        assert_eq!(
            rating_write_with(&stack, claims.clone()).await,
            (200, String::new()),
            "{claims}"
        );
    }
    let refused = [
        json!({}),
        json!({"scp": ["matchmaking/play"]}),
        json!({"scp": []}),
        // Neither a prefix, nor the scope's text inside a longer one.
        json!({"scp": ["matchmaking/ratings"]}),
        json!({"scp": [format!("{WRITER_SCOPE}s")]}),
        json!({"scp": [format!("{WRITER_SCOPE} x")]}),
        json!({"scp": format!("[\"{WRITER_SCOPE}\"")}),
        json!({"scp": {"scope": WRITER_SCOPE}}),
    ];
    for claims in refused {
        assert_eq!(
            rating_write_with(&stack, claims.clone()).await,
            (403, "FORBIDDEN".to_owned()),
            "{claims}"
        );
    }
    stack.stop().await;
}

/// `POST /dev/token` with `body`: status and JSON answer.
async fn dev_token(stack: &LocalStack, body: &Value) -> (u16, Value) {
    let res = support::http()
        .post(format!("{}/dev/token", stack.http_url))
        .body(body.to_string())
        .send()
        .await
        .expect("POST /dev/token");
    let status = res.status().as_u16();
    (status, res.json().await.expect("JSON answer"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dev_token_refuses_fields_it_would_drop_and_says_where_claims_go() {
    let stack = start_stack(WORLDS, &[]).await;
    for (body, field) in [
        (
            json!({"sub": "alice", "scp": "matchmaking/ratings.write"}),
            "scp",
        ),
        (json!({"sub": "alice", "claims": {}, "mmr": 1700}), "mmr"),
        (json!({"sub": "alice", "Claims": {"mmr": 1700}}), "Claims"),
    ] {
        let (status, answer) = dev_token(&stack, &body).await;
        let message = answer["message"].as_str().unwrap_or_default();
        assert_eq!(status, 400, "{body}: {answer}");
        assert!(answer.get("token").is_none(), "{body}: {answer}");
        assert!(
            message.contains(&format!("\"{field}\"")) && message.contains("claims"),
            "the message names the field and points to claims: {message}"
        );
    }
    // Claims that are not an object would be dropped as well.
    let (status, answer) = dev_token(&stack, &json!({"sub": "alice", "claims": ["mmr"]})).await;
    assert_eq!(status, 400, "{answer}");
    assert!(answer.get("token").is_none(), "{answer}");

    // What it takes: `sub`, and extra claims under `claims`.
    let (status, answer) = dev_token(
        &stack,
        &json!({"sub": "alice", "claims": {"scp": ["matchmaking/ratings.write"], "mmr": 1700}}),
    )
    .await;
    assert_eq!(status, 200, "{answer}");
    let token = answer["token"].as_str().expect("a token");
    let claims = stack.issuer.verify(token).expect("a valid token");
    assert_eq!(claims["sub"], "alice");
    assert_eq!(claims["scp"], json!(["matchmaking/ratings.write"]));
    assert_eq!(claims["mmr"], 1700);
    let (status, answer) = dev_token(&stack, &json!({"sub": "alice"})).await;
    assert_eq!(status, 200, "{answer}");
    stack.stop().await;
}
