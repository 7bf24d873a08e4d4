//! A real HTTP server on 127.0.0.1 standing in for what the functions reach
//! outside the VPC: API Gateway's `@connections` management endpoint (what
//! `PostToConnection` calls) and the identity provider's JWKS document. Plus
//! [`TestIssuer`], which signs test tokens with a generated RSA key.
//!
//! The server records every `POST .../@connections/{id}` (with or without a
//! stage prefix), answers 200 unless told otherwise per connection, and
//! shapes its errors like API Gateway (`{"message": ...}` plus the
//! `x-amzn-ErrorType` header) so the AWS SDK maps them to its typed errors.
//! SigV4 signatures are not checked.

use std::collections::{HashMap, HashSet, VecDeque};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::Router;
use base64::Engine;
use serde_json::{json, Value};
use tokio::sync::Notify;
use tokio::task::JoinHandle;

/// Path of the JWKS document the server publishes.
pub const JWKS_PATH: &str = "/.well-known/jwks.json";

/// One `POST /@connections/{id}` the server received.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Post {
    pub connection_id: String,
    /// The request path as sent (stage prefix included).
    pub path: String,
    pub body: Vec<u8>,
    /// The status the server answered with.
    pub status: u16,
    /// Whether the request carried a SigV4 `Authorization` header.
    pub signed: bool,
    pub received_at: Instant,
}

impl Post {
    pub fn delivered(&self) -> bool {
        (200..300).contains(&self.status)
    }

    /// The body parsed as JSON (`Null` when it is not JSON).
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or(Value::Null)
    }
}

#[derive(Default)]
struct Recorded {
    posts: Vec<Post>,
    scripted: HashMap<String, VecDeque<u16>>,
    gone: HashSet<String>,
    stalls: HashMap<String, Duration>,
    /// Connections closed with DELETE, in order.
    deletes: Vec<String>,
    jwks: Option<Value>,
    jwks_requests: u64,
}

#[derive(Default)]
struct Shared {
    recorded: Mutex<Recorded>,
    changed: Notify,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Recorded> {
        // A test that panicked while holding the lock must not hide the
        // recordings from the others.
        self.recorded
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// The running stand-in. Stops when dropped.
pub struct ConnectionsServer {
    addr: SocketAddr,
    shared: Arc<Shared>,
    task: JoinHandle<()>,
}

impl ConnectionsServer {
    /// Starts on a free loopback port.
    pub async fn start() -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind the stand-in server");
        let addr = listener.local_addr().expect("local addr");
        let shared = Arc::new(Shared::default());
        let app = Router::new().fallback(handle).with_state(shared.clone());
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Self { addr, shared, task }
    }

    /// Base URL without a stage: `http://127.0.0.1:PORT`.
    pub fn endpoint(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Base URL with a stage path, like the real management endpoint.
    pub fn endpoint_with_stage(&self, stage: &str) -> String {
        format!("{}/{stage}", self.endpoint())
    }

    pub fn jwks_url(&self) -> String {
        format!("{}{JWKS_PATH}", self.endpoint())
    }

    /// Answers the next pushes to `conn` with `statuses`, in order; 200 after.
    pub fn respond(&self, conn: &str, statuses: impl IntoIterator<Item = u16>) {
        self.shared
            .lock()
            .scripted
            .entry(conn.to_owned())
            .or_default()
            .extend(statuses);
    }

    /// Answers everything for `conn` with 410 Gone from now on.
    pub fn set_gone(&self, conn: &str) {
        self.shared.lock().gone.insert(conn.to_owned());
    }

    /// Delays every answer to `conn` by `delay` (to provoke client timeouts).
    pub fn stall(&self, conn: &str, delay: Duration) {
        self.shared.lock().stalls.insert(conn.to_owned(), delay);
    }

    /// Publishes `jwks` at [`JWKS_PATH`] (404 until called).
    pub fn serve_jwks(&self, jwks: Value) {
        self.shared.lock().jwks = Some(jwks);
    }

    /// How often the JWKS document was requested.
    pub fn jwks_requests(&self) -> u64 {
        self.shared.lock().jwks_requests
    }

    /// Every push received, in arrival order.
    /// Every connection a DELETE was sent for, in order.
    pub fn deletes(&self) -> Vec<String> {
        self.shared.lock().deletes.clone()
    }

    pub fn posts(&self) -> Vec<Post> {
        self.shared.lock().posts.clone()
    }

    /// Every push to `conn`, answered or failed.
    pub fn posts_to(&self, conn: &str) -> Vec<Post> {
        self.shared
            .lock()
            .posts
            .iter()
            .filter(|p| p.connection_id == conn)
            .cloned()
            .collect()
    }

    /// The JSON bodies of the pushes to `conn` that were answered 2xx.
    pub fn delivered_to(&self, conn: &str) -> Vec<Value> {
        self.posts_to(conn)
            .iter()
            .filter(|p| p.delivered())
            .map(Post::json)
            .collect()
    }

    /// Waits until `conn` has received at least `n` pushes (any answer);
    /// panics after `deadline`.
    pub async fn wait_for_posts(&self, conn: &str, n: usize, deadline: Duration) -> Vec<Post> {
        self.wait_until(&format!("{n} pushes to {conn}"), deadline, || {
            let posts = self.posts_to(conn);
            (posts.len() >= n).then_some(posts)
        })
        .await
    }

    /// Waits until `n` pushes to `conn` were answered 2xx; panics after
    /// `deadline`. Returns their JSON bodies.
    pub async fn wait_for_deliveries(
        &self,
        conn: &str,
        n: usize,
        deadline: Duration,
    ) -> Vec<Value> {
        self.wait_until(&format!("{n} deliveries to {conn}"), deadline, || {
            let delivered = self.delivered_to(conn);
            (delivered.len() >= n).then_some(delivered)
        })
        .await
    }

    async fn wait_until<T>(
        &self,
        what: &str,
        deadline: Duration,
        mut check: impl FnMut() -> Option<T>,
    ) -> T {
        let until = tokio::time::Instant::now() + deadline;
        loop {
            // Register interest before checking, so a push arriving in
            // between is not missed.
            let changed = self.shared.changed.notified();
            if let Some(v) = check() {
                return v;
            }
            if tokio::time::timeout_at(until, changed).await.is_err() {
                if let Some(v) = check() {
                    return v;
                }
                panic!(
                    "timed out after {deadline:?} waiting for {what}; received: {:?}",
                    self.posts()
                        .iter()
                        .map(|p| (p.connection_id.clone(), p.status))
                        .collect::<Vec<_>>()
                );
            }
        }
    }
}

impl Drop for ConnectionsServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn handle(
    State(shared): State<Arc<Shared>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let path = uri.path().to_owned();
    if path == JWKS_PATH && method == Method::GET {
        let mut recorded = shared.lock();
        recorded.jwks_requests += 1;
        return match &recorded.jwks {
            Some(jwks) => (StatusCode::OK, axum::Json(jwks.clone())).into_response(),
            None => error(404, "NotFoundException", "no JWKS published"),
        };
    }
    let Some(connection_id) = connection_id_of(&path) else {
        return error(404, "NotFoundException", "unknown path");
    };

    let (status, stall) = {
        let mut recorded = shared.lock();
        let gone = recorded.gone.contains(&connection_id);
        let stall = recorded.stalls.get(&connection_id).copied();
        let status = match method {
            Method::POST => {
                let status = if gone {
                    410
                } else {
                    recorded
                        .scripted
                        .get_mut(&connection_id)
                        .and_then(VecDeque::pop_front)
                        .unwrap_or(200)
                };
                recorded.posts.push(Post {
                    connection_id: connection_id.clone(),
                    path: path.clone(),
                    body: body.to_vec(),
                    status,
                    signed: headers.contains_key("authorization"),
                    received_at: Instant::now(),
                });
                status
            }
            Method::GET => {
                if gone {
                    410
                } else {
                    200
                }
            }
            Method::DELETE => {
                recorded.deletes.push(connection_id.clone());
                if gone {
                    410
                } else {
                    recorded.gone.insert(connection_id.clone());
                    204
                }
            }
            _ => 405,
        };
        (status, stall)
    };
    shared.changed.notify_waiters();
    if let Some(delay) = stall {
        tokio::time::sleep(delay).await;
    }

    match (method, status) {
        (Method::GET, 200) => (
            StatusCode::OK,
            axum::Json(json!({
                "connectedAt": "2024-01-01T00:00:00.000Z",
                "identity": { "sourceIp": "127.0.0.1", "userAgent": "stand-in" },
                "lastActiveAt": "2024-01-01T00:00:00.000Z",
            })),
        )
            .into_response(),
        (_, 200..=299) => StatusCode::from_u16(status)
            .unwrap_or(StatusCode::OK)
            .into_response(),
        (_, 410) => error(410, "GoneException", "connection is gone"),
        (_, 429) => error(429, "LimitExceededException", "Too Many Requests"),
        (_, 403) => error(403, "ForbiddenException", "Forbidden"),
        (_, 413) => error(413, "PayloadTooLargeException", "Payload too large"),
        (_, 405) => error(405, "MethodNotAllowedException", "method not allowed"),
        (_, s) if s >= 500 => error(s, "InternalServerErrorException", "Internal server error"),
        (_, s) => error(s, "BadRequestException", "Bad request"),
    }
}

/// The decoded connection id of `.../@connections/{id}`; any stage prefix
/// before `/@connections/` is accepted.
fn connection_id_of(path: &str) -> Option<String> {
    let (_, encoded) = path.split_once("/@connections/")?;
    let id = percent_encoding::percent_decode_str(encoded)
        .decode_utf8()
        .ok()?
        .into_owned();
    (!id.is_empty()).then_some(id)
}

fn error(status: u16, kind: &str, message: &str) -> Response {
    let mut response = (
        StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
        axum::Json(json!({ "message": message })),
    )
        .into_response();
    if let Ok(value) = HeaderValue::from_str(kind) {
        response.headers_mut().insert("x-amzn-ErrorType", value);
    }
    response
}

/// Seconds since the Unix epoch.
pub fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// PKCS#1 DER of process-wide test keys; generating RSA keys is slow, so
/// each slot is generated once per test binary and shared.
fn rsa_key_der(slot: usize) -> &'static [u8] {
    static KEYS: [OnceLock<Vec<u8>>; 3] = [OnceLock::new(), OnceLock::new(), OnceLock::new()];
    KEYS[slot % KEYS.len()].get_or_init(|| {
        use rsa::pkcs1::EncodeRsaPrivateKey;
        use rsa::Generate;
        let started = Instant::now();
        let key = rsa::PrivateKey::generate();
        let der = key
            .to_pkcs1_der()
            .expect("encode the test key")
            .as_bytes()
            .to_vec();
        eprintln!("generated test RSA key {slot} in {:?}", started.elapsed());
        der
    })
}

/// An identity provider for tests: an RSA key (with `kid`), its JWKS, and
/// RS256 tokens for a fixed issuer and audience.
#[derive(Clone, Debug)]
pub struct TestIssuer {
    pub issuer: String,
    pub audience: String,
    kid: String,
    der: &'static [u8],
}

impl TestIssuer {
    /// An issuer signing with test key 0 under kid `test-key-0`.
    pub fn new(issuer: &str, audience: &str) -> Self {
        Self {
            issuer: issuer.to_owned(),
            audience: audience.to_owned(),
            kid: "test-key-0".into(),
            der: rsa_key_der(0),
        }
    }

    /// The same issuer and audience signing with another key (slot 0..=2)
    /// under `kid`: a rotated key, or a forger's key reusing a real kid.
    pub fn with_key(&self, slot: usize, kid: &str) -> Self {
        Self {
            issuer: self.issuer.clone(),
            audience: self.audience.clone(),
            kid: kid.to_owned(),
            der: rsa_key_der(slot),
        }
    }

    pub fn kid(&self) -> &str {
        &self.kid
    }

    fn encoding_key(&self) -> jsonwebtoken::EncodingKey {
        jsonwebtoken::EncodingKey::from_rsa_der(self.der)
    }

    /// The public key as a JWK (`kty`, `n`, `e`, `kid`, `use`, `alg`).
    pub fn jwk(&self) -> Value {
        let jwk = jsonwebtoken::jwk::Jwk::from_encoding_key(
            &self.encoding_key(),
            jsonwebtoken::Algorithm::RS256,
        )
        .expect("JWK of the test key");
        let mut value = serde_json::to_value(jwk).expect("serialize JWK");
        value["kid"] = json!(self.kid);
        value["use"] = json!("sig");
        value
    }

    /// A JWKS document with this issuer's key.
    pub fn jwks(&self) -> Value {
        json!({ "keys": [self.jwk()] })
    }

    /// Valid claims for `sub`: issuer, audience, issued now, expiring in 10 min.
    pub fn claims_for(&self, sub: &str) -> Value {
        let now = now_secs();
        json!({
            "iss": self.issuer,
            "aud": self.audience,
            "sub": sub,
            "iat": now,
            "exp": now + 600,
        })
    }

    /// A valid token for `sub`.
    pub fn token_for(&self, sub: &str) -> String {
        self.sign(&self.claims_for(sub))
    }

    /// Signs `claims` with RS256 under this issuer's kid.
    pub fn sign(&self, claims: &Value) -> String {
        self.sign_with_kid(claims, Some(&self.kid))
    }

    pub fn sign_with_kid(&self, claims: &Value, kid: Option<&str>) -> String {
        let mut header = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::RS256);
        header.kid = kid.map(str::to_owned);
        jsonwebtoken::encode(&header, claims, &self.encoding_key()).expect("sign test token")
    }
}

/// An unsigned token (`alg: none`) carrying `claims`.
pub fn unsigned_token(claims: &Value, kid: &str) -> String {
    let b64 = |v: &Value| {
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v.to_string().as_bytes())
    };
    format!(
        "{}.{}.",
        b64(&json!({ "alg": "none", "typ": "JWT", "kid": kid })),
        b64(claims)
    )
}

/// An HS256 token with `secret` (e.g. the issuer's public key bytes, the
/// classic algorithm-confusion attack).
pub fn hs256_token(secret: &[u8], claims: &Value, kid: &str) -> String {
    let mut header = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::HS256);
    header.kid = Some(kid.to_owned());
    let key = jsonwebtoken::EncodingKey::from_secret(secret).expect("HMAC key");
    jsonwebtoken::encode(&header, claims, &key).expect("sign HS256 token")
}

#[cfg(test)]
mod tests {
    use lambda_common::push::ApiGatewayPusher;
    use shared::{PushError, Pusher};

    use super::*;

    const WAIT: Duration = Duration::from_secs(10);

    fn conn(id: &str) -> shared::ConnectionId {
        shared::ConnectionId::parse(id).expect("connection id")
    }

    #[test]
    fn connection_ids_are_decoded_with_or_without_a_stage() {
        assert_eq!(
            connection_id_of("/prod/@connections/L0SM9cOFvHcCIhw%3D").as_deref(),
            Some("L0SM9cOFvHcCIhw=")
        );
        assert_eq!(
            connection_id_of("/@connections/a%2Fb+c").as_deref(),
            Some("a/b+c")
        );
        assert_eq!(connection_id_of("/@connections/"), None);
        assert_eq!(connection_id_of("/prod/other/x"), None);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_sdk_pusher_reaches_the_stand_in_through_a_stage_path() {
        let server = ConnectionsServer::start().await;
        let pusher = ApiGatewayPusher::with_static_credentials(
            &server.endpoint_with_stage("prod"),
            "eu-west-1",
        )
        .unwrap();
        pusher
            .push(&conn("L0SM9cOFvHcCIhw="), br#"{"type":"X"}"#)
            .await
            .unwrap();
        let posts = server.wait_for_posts("L0SM9cOFvHcCIhw=", 1, WAIT).await;
        assert_eq!(posts[0].json(), json!({"type": "X"}));
        assert!(
            posts[0].path.starts_with("/prod/@connections/"),
            "{}",
            posts[0].path
        );
        assert!(posts[0].signed, "the SDK signs with SigV4");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn sdk_errors_map_to_gone_and_retryable() {
        let server = ConnectionsServer::start().await;
        let pusher =
            ApiGatewayPusher::with_static_credentials(&server.endpoint(), "us-east-1").unwrap();

        server.set_gone("gone");
        assert_eq!(
            pusher.push(&conn("gone"), b"{}").await,
            Err(PushError::Gone)
        );

        // The SDK retries once itself; two failures in a row reach the outbox.
        for (status, conn) in [(429, "throttled"), (500, "broken"), (403, "forbidden")] {
            server.respond(conn, [status, status]);
            let result = pusher.push(&self::conn(conn), b"{}").await;
            assert!(
                matches!(result, Err(PushError::Retryable(_))),
                "{status}: {result:?}"
            );
        }
        // One throttle is absorbed by the SDK's single retry.
        server.respond("blip", [429]);
        assert_eq!(pusher.push(&conn("blip"), b"{}").await, Ok(()));
        assert_eq!(
            server
                .posts_to("blip")
                .iter()
                .map(|p| p.status)
                .collect::<Vec<_>>(),
            [429, 200]
        );
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn get_and_delete_are_served_and_delete_makes_the_connection_gone() {
        let server = ConnectionsServer::start().await;
        let pusher =
            ApiGatewayPusher::with_static_credentials(&server.endpoint(), "us-east-1").unwrap();
        let path = "/prod/@connections/abc";
        assert!(raw_request(&server, "GET", path)
            .await
            .starts_with("HTTP/1.1 200"));
        assert!(raw_request(&server, "DELETE", path)
            .await
            .starts_with("HTTP/1.1 204"));
        let gone = raw_request(&server, "GET", path).await;
        assert!(gone.starts_with("HTTP/1.1 410"), "{gone}");
        assert!(
            gone.to_ascii_lowercase()
                .contains("x-amzn-errortype: goneexception"),
            "{gone}"
        );
        assert_eq!(pusher.push(&conn("abc"), b"{}").await, Err(PushError::Gone));
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_stalled_endpoint_is_a_retryable_timeout() {
        let server = ConnectionsServer::start().await;
        let pusher =
            ApiGatewayPusher::with_static_credentials(&server.endpoint(), "us-east-1").unwrap();
        server.stall("slow", Duration::from_secs(10));
        let started = Instant::now();
        let result = pusher.push(&conn("slow"), b"{}").await;
        assert!(matches!(result, Err(PushError::Retryable(_))), "{result:?}");
        assert!(
            started.elapsed() < Duration::from_secs(6),
            "bounded by the operation timeout"
        );
    }

    /// A raw HTTP/1.1 request over TCP.
    async fn raw_request(server: &ConnectionsServer, method: &str, path: &str) -> String {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let mut stream = tokio::net::TcpStream::connect(server.addr).await.unwrap();
        let request = format!("{method} {path} HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n");
        stream.write_all(request.as_bytes()).await.unwrap();
        let mut out = String::new();
        stream.read_to_string(&mut out).await.unwrap();
        out
    }
}
