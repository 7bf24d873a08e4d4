//! Helpers for the end-to-end tests: a local stack on free ports with its
//! embedded Redis, real HTTP and WebSocket clients, and a minimal Chrome
//! DevTools Protocol client for the headless-Chromium test.

#![allow(dead_code)] // each test binary uses a different subset

pub mod binary;
pub mod cdp;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use local_stack::{LocalStack, StackConfig};
use serde_json::{json, Value};
use tokio::task::JoinHandle;
use tokio_tungstenite::tungstenite::Message;

/// Starts a stack on free loopback ports with an embedded Redis.
pub async fn start_stack(worlds: &str, extra: &[(&str, &str)]) -> LocalStack {
    let mut vars = vec![("MM_WORLDS", worlds)];
    vars.extend_from_slice(extra);
    start_stack_vars(&vars).await
}

/// Starts a stack on free loopback ports with an embedded Redis and exactly
/// these settings (e.g. `MM_RULES` instead of `MM_WORLDS`).
pub async fn start_stack_vars(vars: &[(&str, &str)]) -> LocalStack {
    let mut all: Vec<(String, String)> = vec![
        ("MM_HTTP_ADDR".into(), "127.0.0.1:0".into()),
        ("MM_WS_ADDR".into(), "127.0.0.1:0".into()),
    ];
    all.extend(vars.iter().map(|(k, v)| (k.to_string(), v.to_string())));
    // Demo games end after MM_DEMO_GAME_SECS with the demo server's result;
    // tests that report their own results, or watch a match stay assigned,
    // get a game that outlasts them unless they set its length.
    if !vars.iter().any(|(k, _)| *k == "MM_DEMO_GAME_SECS") {
        all.push(("MM_DEMO_GAME_SECS".into(), "3600".into()));
    }
    let config =
        StackConfig::from_lookup(|k| all.iter().find(|(key, _)| key == k).map(|(_, v)| v.clone()))
            .expect("stack config");
    LocalStack::start(config).await.expect("local stack starts")
}

/// The game servers' scope in the rule sets of the lifecycle tests.
pub const SERVER_SCOPE: &str = "matchmaking/servers";

/// A rule set with `worlds`, the game servers' scope ([`SERVER_SCOPE`]) and
/// a ratings section (a claim `mmr`, 1500 by default, in 0..=5000).
pub fn server_rules(worlds: Value) -> String {
    json!({
        "ratings": {"claim": "mmr", "default": 1500, "min": 0, "max": 5000},
        "servers": {"scope": SERVER_SCOPE},
        "worlds": worlds,
    })
    .to_string()
}

/// A stack with the rule set `rules` on its embedded Redis, or on `cluster`
/// when given, plus `extra` settings.
pub async fn stack_on(
    rules: &str,
    cluster: Option<&integration_tests::RedisCluster>,
    extra: &[(&str, &str)],
) -> LocalStack {
    let urls = cluster.map(integration_tests::RedisCluster::urls);
    let mut vars: Vec<(&str, &str)> = vec![("MM_RULES", rules)];
    if let Some(urls) = &urls {
        vars.push(("REDIS_URL", urls));
        vars.push(("REDIS_CLUSTER", "true"));
    }
    vars.extend_from_slice(extra);
    start_stack_vars(&vars).await
}

/// A game server's token: [`SERVER_SCOPE`] in its `scp` claim.
pub async fn server_token(stack: &LocalStack) -> String {
    token_with(stack, "game-server-1", json!({ "scp": [SERVER_SCOPE] })).await
}

/// One client for every call: building one loads the platform's root
/// certificates, which in a debug build took ~25 ms per request and made 300
/// simultaneous joins queue behind the tests' own client set-up. No pooled
/// connections, since each test runs its own runtime and a pooled connection
/// would outlive the runtime it was made on.
pub fn http() -> reqwest::Client {
    static CLIENT: std::sync::OnceLock<reqwest::Client> = std::sync::OnceLock::new();
    CLIENT
        .get_or_init(|| {
            reqwest::Client::builder()
                .timeout(Duration::from_secs(10))
                .pool_max_idle_per_host(0)
                .build()
                .expect("http client")
        })
        .clone()
}

pub async fn token(stack: &LocalStack, sub: &str) -> String {
    let res = http()
        .post(format!("{}/dev/token", stack.http_url))
        .body(json!({ "sub": sub }).to_string())
        .send()
        .await
        .expect("POST /dev/token");
    assert_eq!(res.status(), 200);
    let body: Value = res.json().await.expect("token json");
    body["token"].as_str().expect("token").to_owned()
}

/// A development token for `sub` with extra claims (e.g. `{"mmr": 1700}`).
pub async fn token_with(stack: &LocalStack, sub: &str, claims: Value) -> String {
    let res = http()
        .post(format!("{}/dev/token", stack.http_url))
        .body(json!({ "sub": sub, "claims": claims }).to_string())
        .send()
        .await
        .expect("POST /dev/token");
    assert_eq!(res.status(), 200);
    let body: Value = res.json().await.expect("token json");
    body["token"].as_str().expect("token").to_owned()
}

/// Calls an API route; returns status and JSON body.
pub async fn call(
    stack: &LocalStack,
    method: &str,
    path: &str,
    token: Option<&str>,
    body: Option<Value>,
) -> (u16, Value) {
    let url = format!("{}{path}", stack.http_url);
    let mut req = match method {
        "GET" => http().get(url),
        "PUT" => http().put(url),
        "DELETE" => http().delete(url),
        "POST" => http().post(url),
        other => panic!("no such method in these tests: {other}"),
    };
    if let Some(t) = token {
        req = req.header("authorization", format!("Bearer {t}"));
    }
    if let Some(b) = body {
        req = req
            .header("content-type", "application/json")
            .body(b.to_string());
    }
    let res = req.send().await.expect("API call");
    let status = res.status().as_u16();
    let text = res.text().await.expect("body");
    (
        status,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}

/// A player with a real WebSocket connection; every message it receives is
/// recorded, and so is the close code if the server closes the socket.
pub struct Player {
    pub id: String,
    pub token: String,
    pub received: Arc<Mutex<Vec<Value>>>,
    /// The close code the server sent, once it closed the socket.
    pub closed_by_server: Arc<Mutex<Option<u16>>>,
    outbound: tokio::sync::mpsc::UnboundedSender<String>,
    reader: JoinHandle<()>,
    closer: Option<tokio::sync::oneshot::Sender<()>>,
}

impl Player {
    /// Connects a socket that never sends anything (no heartbeats).
    pub async fn connect(stack: &LocalStack, id: &str) -> Self {
        Self::connect_with(stack, id, None).await
    }

    /// Connects a socket that sends `{"action":"ping"}` every `interval`,
    /// like a client that keeps its presence.
    pub async fn connect_heartbeating(stack: &LocalStack, id: &str, interval: Duration) -> Self {
        Self::connect_with(stack, id, Some(interval)).await
    }

    async fn connect_with(stack: &LocalStack, id: &str, heartbeat: Option<Duration>) -> Self {
        let token = token(stack, id).await;
        Self::connect_token(stack, id, token, heartbeat).await
    }

    /// Another socket for the same player and token.
    pub async fn another_socket(&self, stack: &LocalStack) -> Self {
        Self::connect_token(stack, &self.id, self.token.clone(), None).await
    }

    async fn connect_token(
        stack: &LocalStack,
        id: &str,
        token: String,
        heartbeat: Option<Duration>,
    ) -> Self {
        let url = format!("{}?token={token}", stack.websocket_url);
        let (socket, _) = tokio_tungstenite::connect_async(url)
            .await
            .expect("WebSocket connect");
        let received: Arc<Mutex<Vec<Value>>> = Arc::default();
        let closed_by_server: Arc<Mutex<Option<u16>>> = Arc::default();
        let sink = received.clone();
        let closed = closed_by_server.clone();
        let (closer, mut close_rx) = tokio::sync::oneshot::channel::<()>();
        let (outbound, mut to_send) = tokio::sync::mpsc::unbounded_channel::<String>();
        let reader = tokio::spawn(async move {
            let (mut write, mut read) = socket.split();
            let mut beat = heartbeat.map(tokio::time::interval);
            loop {
                tokio::select! {
                    message = read.next() => match message {
                        Some(Ok(Message::Text(text))) => {
                            let value = serde_json::from_str(&text).unwrap_or(Value::String(text.to_string()));
                            sink.lock().unwrap().push(value);
                        }
                        Some(Ok(Message::Close(frame))) => {
                            *closed.lock().unwrap() = Some(frame.map_or(1005, |f| f.code.into()));
                            return;
                        }
                        Some(Ok(_)) => {}
                        _ => return,
                    },
                    Some(text) = to_send.recv() => {
                        if write.send(Message::Text(text.into())).await.is_err() {
                            return;
                        }
                    }
                    _ = async {
                        match beat.as_mut() {
                            Some(b) => { b.tick().await; }
                            None => std::future::pending::<()>().await,
                        }
                    } => {
                        let ping = json!({"action": "ping"}).to_string();
                        if write.send(Message::Text(ping.into())).await.is_err() {
                            return;
                        }
                    }
                    _ = &mut close_rx => {
                        let _ = write.send(Message::Close(None)).await;
                        // Drain until the server acknowledges the close.
                        while let Some(Ok(_)) = read.next().await {}
                        return;
                    }
                }
            }
        });
        Self {
            id: id.to_owned(),
            token,
            received,
            closed_by_server,
            outbound,
            reader,
            closer: Some(closer),
        }
    }

    /// Sends a text message on the socket.
    pub fn send(&self, text: &str) {
        let _ = self.outbound.send(text.to_owned());
    }

    /// The server's close code, once it has closed this socket.
    pub fn close_code(&self) -> Option<u16> {
        *self.closed_by_server.lock().unwrap()
    }

    pub fn messages_of_type(&self, kind: &str) -> Vec<Value> {
        self.received
            .lock()
            .unwrap()
            .iter()
            .filter(|m| m["type"] == kind)
            .cloned()
            .collect()
    }

    /// Waits (up to `wait`) until at least `n` messages of type `kind`
    /// arrived; returns all of them.
    pub async fn heard(&self, kind: &str, n: usize, wait: Duration) -> Vec<Value> {
        integration_tests::eventually(&format!("{} to hear {n} {kind}", self.id), wait, || async {
            let got = self.messages_of_type(kind);
            (got.len() >= n).then_some(got)
        })
        .await
    }

    pub async fn join(&self, stack: &LocalStack, world: &str) -> (u16, Value) {
        call(
            stack,
            "POST",
            "/v1/matching/join",
            Some(&self.token),
            Some(json!({ "worldType": world })),
        )
        .await
    }

    pub async fn leave(&self, stack: &LocalStack, world: &str) -> (u16, Value) {
        call(
            stack,
            "POST",
            "/v1/matching/leave",
            Some(&self.token),
            Some(json!({ "worldType": world })),
        )
        .await
    }

    pub async fn my_status(&self, stack: &LocalStack) -> Value {
        let (status, body) = call(
            stack,
            "GET",
            "/v1/matching/my-status",
            Some(&self.token),
            None,
        )
        .await;
        assert_eq!(status, 200, "{body}");
        body["data"].clone()
    }

    /// Closes the socket (a clean client-side close) and waits for it to end.
    pub async fn disconnect(mut self) {
        if let Some(closer) = self.closer.take() {
            let _ = closer.send(());
        }
        let _ = tokio::time::timeout(Duration::from_secs(5), &mut self.reader).await;
    }
}
