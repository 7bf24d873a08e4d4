//! The Lambda Runtime API, emulated in-process, and the built function
//! binaries run against it the way `sam local invoke` and `cargo lambda
//! invoke` run them: a child process with `AWS_LAMBDA_RUNTIME_API` pointing
//! at a real HTTP server on 127.0.0.1 that implements
//!
//! - `GET  /2018-06-01/runtime/invocation/next`, long-polled until an event
//!   is handed in, answered with the event and the headers
//!   `Lambda-Runtime-Aws-Request-Id`, `Lambda-Runtime-Deadline-Ms`,
//!   `Lambda-Runtime-Invoked-Function-Arn` and `Lambda-Runtime-Trace-Id`;
//! - `POST /2018-06-01/runtime/invocation/{id}/response` and `.../{id}/error`;
//! - `POST /2018-06-01/runtime/init/error`.
//!
//! [`LocalFunction`] pairs one emulator with one process (an emulator never
//! outlives its process, so a stale long poll of a stopped process can never
//! take the next process's event). [`LocalFunction::invoke`] hands in one
//! event and polls for its answer with a deadline, watching the process and
//! the init-error endpoint, so a function that fails to start or dies is
//! reported at once with its output instead of hanging the test.
//!
//! [`template`] routes `events/*.json` to functions the way `template.yaml`
//! does; [`local`] is the fixture the functions' `tests/local_invoke.rs`
//! share (Redis, the `@connections` and JWKS stand-in, `env.json`).

pub mod local;
pub mod template;

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::io::{BufRead, BufReader, Read};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use axum::body::Bytes;
use axum::extract::{Path as UrlPath, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use serde_json::{json, Value};
use tokio::sync::{oneshot, Notify};
use tokio::task::JoinHandle;

/// The Runtime API's version prefix.
pub const RUNTIME_PREFIX: &str = "/2018-06-01/runtime";
/// How often [`LocalFunction::invoke`] looks at the process and the
/// init-error endpoint while it waits for an answer.
const POLL: Duration = Duration::from_millis(25);

/// The `Lambda-Runtime-Deadline-Ms` an invocation is handed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Deadline {
    /// This long from now, as Lambda does (`now + the function's timeout`).
    In(Duration),
    /// Exactly this header value (Unix milliseconds), e.g. `"600000"`, what
    /// `cargo lambda watch` sends.
    RawMs(String),
}

impl Deadline {
    fn header_value(&self) -> String {
        match self {
            Self::In(d) => unix_ms(SystemTime::now() + *d).to_string(),
            Self::RawMs(v) => v.clone(),
        }
    }
}

/// Unix milliseconds of `at`.
pub fn unix_ms(at: SystemTime) -> u64 {
    at.duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// What the function posted for an invocation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// `POST .../invocation/{id}/response`: the body.
    Response(Vec<u8>),
    /// `POST .../invocation/{id}/error`.
    Error {
        /// The `Lambda-Runtime-Function-Error-Type` header.
        error_type: Option<String>,
        body: Vec<u8>,
    },
}

/// A `POST /2018-06-01/runtime/init/error`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InitError {
    pub error_type: Option<String>,
    pub body: Vec<u8>,
}

impl InitError {
    /// The body as JSON (`{"errorMessage", "errorType", ...}`; `Null` if not JSON).
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or(Value::Null)
    }
}

/// Why an invocation got no [`Outcome`].
#[derive(Debug)]
pub enum Failure {
    /// The runtime reported a start failure instead of asking for the event.
    InitError(InitError),
    /// The process exited first.
    Exited(ExitStatus),
    /// Nothing within the wait.
    TimedOut(Duration),
}

/// One event handed to the emulator, not yet taken by the runtime.
struct Pending {
    request_id: String,
    body: Vec<u8>,
    deadline_ms: String,
    function_arn: String,
    trace_id: String,
    reply: oneshot::Sender<Outcome>,
}

/// A request the emulator received, for assertions and failure messages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Received {
    pub method: String,
    pub path: String,
    /// The answer's status.
    pub status: u16,
}

#[derive(Default)]
struct Recorded {
    queue: VecDeque<Pending>,
    in_flight: HashMap<String, oneshot::Sender<Outcome>>,
    init_errors: Vec<InitError>,
    requests: Vec<Received>,
}

#[derive(Default)]
struct Shared {
    recorded: Mutex<Recorded>,
    changed: Notify,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Recorded> {
        self.recorded
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn record(&self, method: &Method, path: &str, status: StatusCode) {
        self.lock().requests.push(Received {
            method: method.to_string(),
            path: path.to_owned(),
            status: status.as_u16(),
        });
        self.changed.notify_waiters();
    }
}

/// The Runtime API emulator on a free loopback port. Stops when dropped.
pub struct RuntimeApi {
    addr: SocketAddr,
    shared: Arc<Shared>,
    task: JoinHandle<()>,
}

impl RuntimeApi {
    pub async fn start() -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind the Runtime API emulator");
        let addr = listener.local_addr().expect("local addr");
        let shared = Arc::new(Shared::default());
        let app = Router::new()
            .route(
                &format!("{RUNTIME_PREFIX}/invocation/next"),
                get(next_invocation),
            )
            .route(
                &format!("{RUNTIME_PREFIX}/invocation/{{id}}/response"),
                post(invocation_response),
            )
            .route(
                &format!("{RUNTIME_PREFIX}/invocation/{{id}}/error"),
                post(invocation_error),
            )
            .route(&format!("{RUNTIME_PREFIX}/init/error"), post(init_error))
            .fallback(unknown)
            .with_state(shared.clone());
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Self { addr, shared, task }
    }

    /// `host:port`, the value of `AWS_LAMBDA_RUNTIME_API`.
    pub fn address(&self) -> String {
        self.addr.to_string()
    }

    /// Queues `event` for the next `GET .../invocation/next` of
    /// `function_name`; the receiver gets what the runtime posts for it.
    pub fn enqueue(
        &self,
        function_name: &str,
        event: &[u8],
        deadline: &Deadline,
    ) -> (String, oneshot::Receiver<Outcome>) {
        let request_id = request_id();
        let (reply, answer) = oneshot::channel();
        self.shared.lock().queue.push_back(Pending {
            request_id: request_id.clone(),
            body: event.to_vec(),
            deadline_ms: deadline.header_value(),
            function_arn: format!("arn:aws:lambda:us-east-1:123456789012:function:{function_name}"),
            trace_id: trace_id(),
            reply,
        });
        self.shared.changed.notify_waiters();
        (request_id, answer)
    }

    /// Every init error reported so far.
    pub fn init_errors(&self) -> Vec<InitError> {
        self.shared.lock().init_errors.clone()
    }

    /// Every request received so far, in order.
    pub fn requests(&self) -> Vec<Received> {
        self.shared.lock().requests.clone()
    }

    /// How many `GET .../invocation/next` the runtime sent (a runtime that
    /// started asks once, then once after each answer).
    pub fn next_requests(&self) -> usize {
        self.requests()
            .iter()
            .filter(|r| r.path.ends_with("/invocation/next"))
            .count()
    }
}

impl Drop for RuntimeApi {
    fn drop(&mut self) {
        self.task.abort();
    }
}

fn request_id() -> String {
    let a: u128 = rand::random();
    let hex = format!("{a:032x}");
    format!(
        "{}-{}-{}-{}-{}",
        &hex[..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..]
    )
}

fn trace_id() -> String {
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let root: u128 = rand::random();
    let parent: u64 = rand::random();
    format!(
        "Root=1-{secs:08x}-{:024x};Parent={parent:016x};Sampled=0",
        root >> 32
    )
}

/// `GET .../invocation/next`: waits until an event is queued (the long poll
/// of the real API), then hands it out with its headers.
async fn next_invocation(State(shared): State<Arc<Shared>>, uri: Uri) -> Response {
    shared.record(&Method::GET, uri.path(), StatusCode::OK);
    let pending = loop {
        // Interest first, then the check: an enqueue in between is not missed.
        let changed = shared.changed.notified();
        if let Some(pending) = shared.lock().queue.pop_front() {
            break pending;
        }
        changed.await;
    };
    let Pending {
        request_id,
        body,
        deadline_ms,
        function_arn,
        trace_id,
        reply,
    } = pending;
    shared.lock().in_flight.insert(request_id.clone(), reply);
    let mut response = (StatusCode::OK, body).into_response();
    let headers = response.headers_mut();
    for (name, value) in [
        ("content-type", "application/json"),
        ("lambda-runtime-aws-request-id", request_id.as_str()),
        ("lambda-runtime-deadline-ms", deadline_ms.as_str()),
        ("lambda-runtime-invoked-function-arn", function_arn.as_str()),
        ("lambda-runtime-trace-id", trace_id.as_str()),
    ] {
        headers.insert(
            name,
            HeaderValue::from_str(value).expect("a valid header value"),
        );
    }
    response
}

fn error_type(headers: &HeaderMap) -> Option<String> {
    headers
        .get("lambda-runtime-function-error-type")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
}

async fn invocation_response(
    State(shared): State<Arc<Shared>>,
    UrlPath(id): UrlPath<String>,
    uri: Uri,
    body: Bytes,
) -> Response {
    settle(&shared, &id, uri.path(), Outcome::Response(body.to_vec()))
}

async fn invocation_error(
    State(shared): State<Arc<Shared>>,
    UrlPath(id): UrlPath<String>,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let outcome = Outcome::Error {
        error_type: error_type(&headers),
        body: body.to_vec(),
    };
    settle(&shared, &id, uri.path(), outcome)
}

/// Hands the runtime's answer to the waiting invoke: 202 as the real API,
/// 400 for a request id that is not in flight.
fn settle(shared: &Shared, id: &str, path: &str, outcome: Outcome) -> Response {
    let reply = shared.lock().in_flight.remove(id);
    let status = match reply {
        Some(reply) => {
            let _ = reply.send(outcome);
            StatusCode::ACCEPTED
        }
        None => StatusCode::BAD_REQUEST,
    };
    shared.record(&Method::POST, path, status);
    if status == StatusCode::ACCEPTED {
        (status, axum::Json(json!({"status": "OK"}))).into_response()
    } else {
        (
            status,
            axum::Json(json!({
                "errorMessage": format!("no invocation {id} is in flight"),
                "errorType": "InvalidRequestID",
            })),
        )
            .into_response()
    }
}

async fn init_error(
    State(shared): State<Arc<Shared>>,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    shared.lock().init_errors.push(InitError {
        error_type: error_type(&headers),
        body: body.to_vec(),
    });
    shared.record(&Method::POST, uri.path(), StatusCode::ACCEPTED);
    (StatusCode::ACCEPTED, axum::Json(json!({"status": "OK"}))).into_response()
}

async fn unknown(State(shared): State<Arc<Shared>>, method: Method, uri: Uri) -> Response {
    shared.record(&method, uri.path(), StatusCode::NOT_FOUND);
    (
        StatusCode::NOT_FOUND,
        axum::Json(json!({"errorMessage": "not part of the Runtime API", "errorType": "NotFound"})),
    )
        .into_response()
}

/// The output of a process, line by line, as it arrives.
#[derive(Clone, Default)]
struct Output(Arc<Mutex<Vec<String>>>);

impl Output {
    fn follow(
        &self,
        stream: impl Read + Send + 'static,
        label: &'static str,
    ) -> std::thread::JoinHandle<()> {
        let lines = self.0.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stream).lines() {
                let Ok(line) = line else { break };
                lines
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .push(format!("[{label}] {line}"));
            }
        })
    }

    fn lines(&self) -> Vec<String> {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

/// One function binary running against its own [`RuntimeApi`], as Lambda
/// runs a `provided.al2023` function. Killed when dropped.
pub struct LocalFunction {
    pub api: RuntimeApi,
    name: String,
    child: Child,
    output: Output,
    readers: Vec<std::thread::JoinHandle<()>>,
    exited: Option<ExitStatus>,
}

impl LocalFunction {
    /// Starts `binary` as function `name` with exactly `env` plus the
    /// variables Lambda sets (runtime API address, function name, memory,
    /// version, log group and stream, region, placeholder credentials).
    /// Nothing of the test process's own environment is passed on.
    pub async fn start(binary: &Path, name: &str, env: &BTreeMap<String, String>) -> Self {
        let api = RuntimeApi::start().await;
        let mut command = Command::new(binary);
        command
            .env_clear()
            .env("AWS_LAMBDA_RUNTIME_API", api.address())
            .env("AWS_LAMBDA_FUNCTION_NAME", name)
            .env("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "256")
            .env("AWS_LAMBDA_FUNCTION_VERSION", "$LATEST")
            .env("AWS_LAMBDA_LOG_GROUP_NAME", format!("/aws/lambda/{name}"))
            .env("AWS_LAMBDA_LOG_STREAM_NAME", "2025/03/10/[$LATEST]local")
            .env("AWS_REGION", "us-east-1")
            .env("AWS_DEFAULT_REGION", "us-east-1")
            // What SAM CLI hands a local function when no credentials are
            // configured; the @connections stand-in does not check SigV4.
            .env("AWS_ACCESS_KEY_ID", "defaultkey")
            .env("AWS_SECRET_ACCESS_KEY", "defaultsecret")
            .env("AWS_EC2_METADATA_DISABLED", "true")
            .envs(env)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = command
            .spawn()
            .unwrap_or_else(|e| panic!("start {}: {e}", binary.display()));
        let output = Output::default();
        let readers = vec![
            output.follow(child.stdout.take().expect("piped stdout"), "stdout"),
            output.follow(child.stderr.take().expect("piped stderr"), "stderr"),
        ];
        Self {
            api,
            name: name.to_owned(),
            child,
            output,
            readers,
            exited: None,
        }
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// Everything the process printed so far (stdout and stderr, labelled).
    pub fn output(&self) -> Vec<String> {
        self.output.lines()
    }

    /// Its exit status, if it exited.
    pub fn exit_status(&mut self) -> Option<ExitStatus> {
        if self.exited.is_none() {
            self.exited = self.child.try_wait().ok().flatten();
        }
        self.exited
    }

    /// Hands `event` to the runtime with `deadline` and waits up to `wait`
    /// for what it posts, polling the process and the init-error endpoint.
    pub async fn invoke(
        &mut self,
        event: &[u8],
        deadline: &Deadline,
        wait: Duration,
    ) -> Result<Outcome, Failure> {
        let (_, mut answer) = self.api.enqueue(&self.name, event, deadline);
        let until = Instant::now() + wait;
        loop {
            match tokio::time::timeout(POLL, &mut answer).await {
                Ok(Ok(outcome)) => return Ok(outcome),
                Ok(Err(_)) => unreachable!("the emulator keeps the reply until it is sent"),
                Err(_) => {}
            }
            if let Some(init) = self.api.init_errors().pop() {
                return Err(Failure::InitError(init));
            }
            if let Some(status) = self.exit_status() {
                return Err(Failure::Exited(status));
            }
            if Instant::now() >= until {
                return Err(Failure::TimedOut(wait));
            }
        }
    }

    /// [`LocalFunction::invoke`] that must be answered with a response:
    /// returns it as JSON, panics with the process's output otherwise.
    pub async fn respond(&mut self, event: &Value, deadline: &Deadline, wait: Duration) -> Value {
        let bytes = serde_json::to_vec(event).expect("serialize the event");
        match self.invoke(&bytes, deadline, wait).await {
            Ok(Outcome::Response(body)) => serde_json::from_slice(&body).unwrap_or_else(|e| {
                self.fail(&format!(
                    "answered a body that is not JSON ({e}): {}",
                    String::from_utf8_lossy(&body)
                ))
            }),
            Ok(Outcome::Error { error_type, body }) => self.fail(&format!(
                "answered an error {error_type:?}: {}",
                String::from_utf8_lossy(&body)
            )),
            Err(failure) => self.fail(&format!("did not answer: {failure:?}")),
        }
    }

    /// Panics with `what` and the process's output.
    pub fn fail(&self, what: &str) -> ! {
        panic!(
            "{} {what}\nRuntime API requests: {:?}\n--- output of {} ---\n{}",
            self.name,
            self.api.requests(),
            self.name,
            self.output().join("\n")
        )
    }

    /// Stops the process (SIGKILL, as Lambda freezes and discards an
    /// environment) and returns its output.
    pub fn stop(mut self) -> Vec<String> {
        self.kill();
        self.output()
    }

    /// [`LocalFunction::stop`], asserting that the function logged no error.
    pub fn stop_without_errors(self) -> Vec<String> {
        let output = self.stop();
        assert!(
            local::log_records(&output, "ERROR").is_empty(),
            "{}",
            output.join("\n")
        );
        output
    }

    /// Invokes `event` on a function whose configuration is refused: the
    /// start must fail visibly (`Runtime.InitError` naming `variable`,
    /// posted to `/runtime/init/error`) without ever asking for an event.
    pub async fn expect_init_error(&mut self, event: &[u8], variable: &str) -> InitError {
        let init = match self
            .invoke(event, &local::function_deadline(), local::WAIT)
            .await
        {
            Err(Failure::InitError(init)) => init,
            other => self.fail(&format!("answered {other:?} instead of an init error")),
        };
        let json = init.json();
        assert_eq!(json["errorType"], "Runtime.InitError", "{json}");
        assert!(
            json["errorMessage"]
                .as_str()
                .is_some_and(|m| m.contains(variable)),
            "{json}"
        );
        assert_eq!(self.api.next_requests(), 0, "it never asked for an event");
        init
    }

    fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        for reader in self.readers.drain(..) {
            let _ = reader.join();
        }
    }
}

impl Drop for LocalFunction {
    fn drop(&mut self) {
        self.kill();
    }
}

/// The repository's root (the parent of the `tests` crate).
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the tests crate lives in the repository")
        .to_path_buf()
}

#[cfg(test)]
mod tests {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    use super::*;

    /// One HTTP/1.1 exchange over a fresh connection: (status, head, body).
    async fn raw(
        addr: SocketAddr,
        request_line: &str,
        extra: &str,
        body: &str,
    ) -> (u16, String, String) {
        let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
        let request = format!(
            "{request_line} HTTP/1.1\r\nhost: x\r\nconnection: close\r\n{extra}content-length: {}\r\n\r\n{body}",
            body.len()
        );
        stream.write_all(request.as_bytes()).await.unwrap();
        let mut out = String::new();
        stream.read_to_string(&mut out).await.unwrap();
        let (head, body) = out.split_once("\r\n\r\n").unwrap();
        let status = head.split_whitespace().nth(1).unwrap().parse().unwrap();
        (status, head.to_ascii_lowercase(), body.to_owned())
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn events_go_out_with_the_lambda_headers_and_answers_come_back() {
        let api = RuntimeApi::start().await;
        let next = format!("GET {RUNTIME_PREFIX}/invocation/next");
        // The long poll waits for an event.
        let mut polling = tokio::spawn(raw(
            api.addr,
            "GET /2018-06-01/runtime/invocation/next",
            "",
            "",
        ));
        let early = tokio::time::timeout(Duration::from_millis(100), &mut polling).await;
        assert!(early.is_err(), "no event yet: the poll waits");
        let (id, answer) = api.enqueue("fn-a", br#"{"a":1}"#, &Deadline::RawMs("600000".into()));
        let (status, head, body) = polling.await.unwrap();
        assert_eq!((status, body.as_str()), (200, r#"{"a":1}"#));
        for header in [
            format!("lambda-runtime-aws-request-id: {id}"),
            "lambda-runtime-deadline-ms: 600000".to_owned(),
            "lambda-runtime-invoked-function-arn: arn:aws:lambda:us-east-1:123456789012:function:fn-a".to_owned(),
            "lambda-runtime-trace-id: root=1-".to_owned(),
        ] {
            assert!(head.contains(&header), "{header} in {head}");
        }

        let respond = format!("POST {RUNTIME_PREFIX}/invocation/{id}/response");
        assert_eq!(raw(api.addr, &respond, "", r#"{"ok":true}"#).await.0, 202);
        assert_eq!(
            answer.await.unwrap(),
            Outcome::Response(br#"{"ok":true}"#.to_vec())
        );
        // Answered once: a second answer names no invocation in flight.
        assert_eq!(raw(api.addr, &respond, "", "{}").await.0, 400);

        let (id, answer) = api.enqueue("fn-a", b"{}", &Deadline::In(Duration::from_secs(10)));
        let (_, head, _) = raw(api.addr, &next, "", "").await;
        let deadline: u64 = head
            .lines()
            .find_map(|l| l.strip_prefix("lambda-runtime-deadline-ms: "))
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        let now = unix_ms(SystemTime::now());
        assert!(
            deadline > now && deadline <= now + 10_000,
            "{deadline} vs {now}"
        );
        let error = format!("POST {RUNTIME_PREFIX}/invocation/{id}/error");
        let typed = "lambda-runtime-function-error-type: Runtime.Oops\r\n";
        assert_eq!(
            raw(api.addr, &error, typed, r#"{"errorMessage":"x"}"#)
                .await
                .0,
            202
        );
        assert_eq!(
            answer.await.unwrap(),
            Outcome::Error {
                error_type: Some("Runtime.Oops".into()),
                body: br#"{"errorMessage":"x"}"#.to_vec()
            }
        );

        let init = format!("POST {RUNTIME_PREFIX}/init/error");
        assert_eq!(
            raw(api.addr, &init, typed, r#"{"errorMessage":"boom"}"#)
                .await
                .0,
            202
        );
        assert_eq!(api.init_errors()[0].json()["errorMessage"], "boom");
        assert_eq!(
            raw(api.addr, &format!("GET {RUNTIME_PREFIX}/nothing"), "", "")
                .await
                .0,
            404
        );
        assert_eq!(api.next_requests(), 2);
    }
}
