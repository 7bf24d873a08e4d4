//! The whole matchmaking system on one machine, without AWS: an HTTP API and
//! a WebSocket API that emulate API Gateway in front of the very handler
//! functions the Lambda binaries run, the matcher ticking every second
//! through the same matcher code, and Redis (`REDIS_URL`, or a private
//! `redis-server` started as the embedded default). Match events go to an
//! EventBridge stand-in ([`event_bus`]) through the deployed matcher's
//! `EventBridgeSink`, and a demo allocator ([`demo_allocator`]) assigns
//! every match to a demo game server on this machine.

pub mod demo_allocator;
pub mod dev_auth;
pub mod embedded_redis;
pub mod event_bus;
pub mod http_gateway;
pub mod websocket_gateway;

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use aws_lambda_events::apigw::{ApiGatewayProxyResponse, ApiGatewayWebsocketProxyRequest};
use lambda_common::events::{
    EventBridgeSink, EventBridgeWaker, EventsTarget, EVENT_BUS_VAR, EVENT_SOURCE_VAR, WAKE_SOURCE,
};
use lambda_common::http::{Function, Route};
use lambda_common::push::ApiGatewayPusher;
use lambda_runtime::{Context, LambdaEvent};
use shared::{ConfigError, MatchStore, Settings};
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::demo_allocator::{Allocator, GameServer};
use crate::dev_auth::DevIssuer;
use crate::embedded_redis::EmbeddedRedis;
use crate::event_bus::EventBus;
use crate::http_gateway::HttpHandlers;
use crate::websocket_gateway::{ConnectionHub, GatewayTiming, WebsocketHandlers};

/// The demo page, built into the binary (no build step).
pub const DEMO_PAGE: &str = include_str!("../static/index.html");

/// The TypeScript SDK bundled for the demo page (`/mm-client.js`): built
/// from `clients/typescript` by its `npm run bundle` and committed, so that
/// cargo alone builds the stack; the SDK's tests fail while it is stale.
pub const DEMO_CLIENT: &str = include_str!("../static/mm-client.js");

/// Audience of development tokens (what `AUTH_AUDIENCE` would be in AWS).
pub const DEV_AUDIENCE: &str = "matchmaking-local";

/// How to run the stack.
pub struct StackConfig {
    pub http_addr: SocketAddr,
    pub websocket_addr: SocketAddr,
    /// Core settings; `None` for its `REDIS_URL` starts the embedded Redis.
    pub settings: Settings,
    /// Whether `settings.redis` came from `REDIS_URL` (else: embedded Redis).
    pub external_redis: bool,
    /// Matcher period.
    pub tick: Duration,
    /// API Gateway's WebSocket timing: the idle timeout
    /// (`MM_WS_IDLE_TIMEOUT_SECS`, default 10 minutes) and how long a
    /// connection takes to be established after `$connect` answers
    /// (`MM_WS_CONNECT_LATENCY_MS`, default 0; pushes meanwhile get 410).
    pub websocket: GatewayTiming,
    /// The EventBridge stand-in's address (`MM_EVENTBRIDGE_ADDR`, default
    /// a free loopback port).
    pub eventbridge_addr: SocketAddr,
    /// Where match events go (`MM_EVENT_BUS`, default
    /// [`event_bus::LOCAL_BUS`]; `MM_EVENT_SOURCE`), aimed at the stand-in.
    pub events: EventsTarget,
    /// Run the demo allocator (`MM_DEMO_ALLOCATOR`, default true). It
    /// assigns only while match events are on and the rule set names a
    /// server scope (`servers.scope`).
    pub demo_allocator: bool,
    /// The demo game server's address (`MM_GAME_SERVER_ADDR`, default a
    /// free loopback port): the assignments' `connection`.
    pub game_server_addr: SocketAddr,
}

impl StackConfig {
    /// Reads the core settings from `lookup` (the environment in `main`):
    /// everything the Lambda functions read, plus `MM_HTTP_ADDR` and
    /// `MM_WS_ADDR` for the listen addresses. Unlike the functions, and
    /// like the deployed template, the stack publishes match events and
    /// lets its matcher sleep unless told not to (`MM_MATCH_EVENTS` and
    /// `MM_MATCHER_SLEEP` default to true).
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        let lookup = |k: &str| match (k, lookup(k)) {
            ("MM_MATCH_EVENTS" | "MM_MATCHER_SLEEP", None) => Some("true".to_owned()),
            (_, value) => value,
        };
        let external_redis = lookup("REDIS_URL").is_some_and(|v| !v.trim().is_empty());
        let addr = |var: &'static str, default: &str| -> Result<SocketAddr, ConfigError> {
            let value = lookup(var).unwrap_or_else(|| default.to_owned());
            value.parse().map_err(|_| ConfigError {
                var,
                reason: format!("expected host:port, got {value:?}"),
            })
        };
        let flag = |var: &'static str, default: bool| -> Result<bool, ConfigError> {
            match lookup(var)
                .map(|v| v.trim().to_ascii_lowercase())
                .as_deref()
            {
                None | Some("") => Ok(default),
                Some("1" | "true" | "yes" | "on") => Ok(true),
                Some("0" | "false" | "no" | "off") => Ok(false),
                Some(v) => Err(ConfigError {
                    var,
                    reason: format!("expected true or false, got {v:?}"),
                }),
            }
        };
        let text = |var: &str, default: &str| {
            lookup(var)
                .map(|v| v.trim().to_owned())
                .filter(|v| !v.is_empty())
                .unwrap_or_else(|| default.to_owned())
        };
        let eventbridge_addr = addr("MM_EVENTBRIDGE_ADDR", "127.0.0.1:0")?;
        let events = EventsTarget::from_lookup(|k| match k {
            EVENT_BUS_VAR => Some(text(EVENT_BUS_VAR, event_bus::LOCAL_BUS)),
            EVENT_SOURCE_VAR => lookup(EVENT_SOURCE_VAR),
            _ => None,
        })
        .map_err(|e| ConfigError {
            var: "MM_EVENT_BUS",
            reason: e.to_string(),
        })?;
        Ok(Self {
            eventbridge_addr,
            events,
            demo_allocator: flag("MM_DEMO_ALLOCATOR", true)?,
            game_server_addr: addr("MM_GAME_SERVER_ADDR", "127.0.0.1:0")?,
            http_addr: addr("MM_HTTP_ADDR", "127.0.0.1:3000")?,
            websocket_addr: addr("MM_WS_ADDR", "127.0.0.1:3001")?,
            settings: Settings::from_lookup(lookup)?,
            external_redis,
            tick: Duration::from_secs(1),
            websocket: GatewayTiming {
                idle_timeout: match lookup("MM_WS_IDLE_TIMEOUT_SECS") {
                    None => websocket_gateway::API_GATEWAY_IDLE_TIMEOUT,
                    Some(v) => v
                        .trim()
                        .parse::<u64>()
                        .ok()
                        .filter(|s| *s > 0)
                        .map(Duration::from_secs)
                        .ok_or_else(|| ConfigError {
                            var: "MM_WS_IDLE_TIMEOUT_SECS",
                            reason: format!("expected seconds > 0, got {v:?}"),
                        })?,
                },
                connect_latency: match lookup("MM_WS_CONNECT_LATENCY_MS") {
                    None => Duration::ZERO,
                    Some(v) => {
                        v.trim()
                            .parse::<u64>()
                            .map(Duration::from_millis)
                            .map_err(|_| ConfigError {
                                var: "MM_WS_CONNECT_LATENCY_MS",
                                reason: format!("expected milliseconds, got {v:?}"),
                            })?
                    }
                },
            },
        })
    }
}

#[derive(Debug, thiserror::Error)]
pub enum StackError {
    #[error(transparent)]
    Redis(#[from] embedded_redis::EmbeddedRedisError),
    #[error("cannot listen on {addr}: {source}")]
    Listen {
        addr: SocketAddr,
        source: std::io::Error,
    },
    #[error("{0}")]
    Setup(String),
}

/// The Lambda handlers, wired as the deployed functions are.
struct LambdaHandlers {
    join: join::App<ApiGatewayPusher>,
    leave: leave::App,
    status: status::App,
    websocket: ws_connect::App<ApiGatewayPusher>,
}

impl HttpHandlers for Arc<LambdaHandlers> {
    async fn invoke(
        &self,
        route: Route,
        request: lambda_http::Request,
    ) -> Result<lambda_http::Response<lambda_http::Body>, lambda_http::Error> {
        match route.function() {
            Function::Join => join::handle(&self.join, request).await,
            Function::Leave => leave::handle(&self.leave, request).await,
            Function::Status => status::handle(&self.status, request).await,
        }
    }
}

impl WebsocketHandlers for Arc<LambdaHandlers> {
    async fn connect(&self, event: ApiGatewayWebsocketProxyRequest) -> ApiGatewayProxyResponse {
        let event = LambdaEvent::new(event, Context::default());
        let result = ws_connect::handle(&self.websocket, event).await;
        result.unwrap_or_else(|e| internal_error(&e.to_string()))
    }

    async fn message(&self, event: ApiGatewayWebsocketProxyRequest) -> ApiGatewayProxyResponse {
        let event = LambdaEvent::new(event, Context::default());
        let result = ws_connect::handle(&self.websocket, event).await;
        result.unwrap_or_else(|e| internal_error(&e.to_string()))
    }

    async fn disconnect(&self, event: ApiGatewayWebsocketProxyRequest) -> ApiGatewayProxyResponse {
        let event = LambdaEvent::new(event, Context::default());
        let result = ws_disconnect::handle_disconnect(&self.websocket.store, event).await;
        result.unwrap_or_else(|e| internal_error(&e.to_string()))
    }
}

/// What API Gateway makes of a function error.
fn internal_error(reason: &str) -> ApiGatewayProxyResponse {
    tracing::error!(%reason, "WebSocket handler failed");
    let mut response = ApiGatewayProxyResponse::default();
    response.status_code = 500;
    response
}

/// A running local stack. Dropping it without [`LocalStack::stop`] also
/// stops the servers (their tasks end with the runtime).
pub struct LocalStack {
    pub http_url: String,
    pub websocket_url: String,
    pub store: MatchStore,
    pub hub: Arc<ConnectionHub>,
    pub issuer: Arc<DevIssuer>,
    /// The EventBridge stand-in: every match event the matcher published.
    pub events: Arc<EventBus>,
    /// The stand-in's endpoint (`http://host:port`), the matcher's
    /// `MM_EVENTS_ENDPOINT`.
    pub eventbridge_url: String,
    /// The demo game server and the seats the demo allocator gave out.
    pub game_server: Arc<GameServer>,
    /// `host:port` of the demo game server (the assignments' connection).
    pub game_server_addr: String,
    /// Whether the demo allocator runs (on, with match events and a server
    /// scope).
    pub demo_allocator: bool,
    matcher: std::sync::Mutex<MatcherTask>,
    shutdown: watch::Sender<bool>,
    tasks: Vec<JoinHandle<()>>,
    redis: Option<EmbeddedRedis>,
}

/// The matcher's task and what it takes to start another.
struct MatcherTask {
    running: Option<JoinHandle<()>>,
    store: MatchStore,
    pusher: ApiGatewayPusher,
    events: EventBridgeSink,
    period: Duration,
    /// Ticks completed, over every task this stack ran.
    ticks: Arc<AtomicU64>,
    /// Whether the matcher sleeps now (it went to sleep and was not woken).
    asleep: Arc<AtomicBool>,
    /// Where its wake-ups come from (the stand-in's wake rule).
    bus: Arc<EventBus>,
    /// The lease token of this stack's matcher, kept across restarts (one
    /// deployment: a restarted matcher need not wait for its own lease).
    lease_token: String,
}

impl MatcherTask {
    fn spawn(&mut self, shutdown: watch::Receiver<bool>) {
        self.running = Some(tokio::spawn(matcher_loop(
            MatcherRun {
                store: self.store.clone(),
                pusher: self.pusher.clone(),
                events: self.events.clone(),
                period: self.period,
                ticks: self.ticks.clone(),
                asleep: self.asleep.clone(),
                bus: self.bus.clone(),
                lease_token: self.lease_token.clone(),
            },
            shutdown,
        )));
    }
}

impl LocalStack {
    pub async fn start(mut config: StackConfig) -> Result<Self, StackError> {
        let redis = if config.external_redis {
            None
        } else {
            let embedded = EmbeddedRedis::start().await?;
            config.settings.redis.urls = vec![embedded.url.clone()];
            config.settings.redis.cluster = false;
            Some(embedded)
        };
        let http_listener = TcpListener::bind(config.http_addr)
            .await
            .map_err(|source| StackError::Listen {
                addr: config.http_addr,
                source,
            })?;
        let ws_listener = TcpListener::bind(config.websocket_addr)
            .await
            .map_err(|source| StackError::Listen {
                addr: config.websocket_addr,
                source,
            })?;
        let http_addr = http_listener
            .local_addr()
            .map_err(|e| StackError::Setup(e.to_string()))?;
        let ws_addr = ws_listener
            .local_addr()
            .map_err(|e| StackError::Setup(e.to_string()))?;
        let http_url = format!("http://{http_addr}");
        let websocket_url = format!("ws://{ws_addr}/");
        let (events_listener, eventbridge_url) = bind(config.eventbridge_addr).await?;
        let (game_listener, game_url) = bind(config.game_server_addr).await?;
        let game_server_addr = game_url.trim_start_matches("http://").to_owned();

        let issuer = Arc::new(
            DevIssuer::generate(&http_url, DEV_AUDIENCE)
                .map_err(|e| StackError::Setup(e.to_string()))?,
        );
        let store = MatchStore::new(config.settings.clone())
            .map_err(|e| StackError::Setup(e.to_string()))?;
        // The real SDK client, pointed at the emulated management API.
        let pusher =
            ApiGatewayPusher::with_static_credentials(&format!("http://{ws_addr}"), "us-east-1")
                .map_err(|e| StackError::Setup(e.to_string()))?;
        // The deployed matcher's sink, pointed at the stand-in.
        let mut target = config.events.clone();
        target.endpoint = Some(eventbridge_url.clone());
        let sink = EventBridgeSink::with_static_credentials(target.clone(), "us-east-1");
        // The functions' waker, as deployed: a MatcherWake entry on the bus,
        // which the stand-in hands to this stack's matcher (the wake rule).
        store.set_waker(Arc::new(EventBridgeWaker::with_static_credentials(
            EventsTarget {
                source: WAKE_SOURCE.to_owned(),
                ..target
            },
            "us-east-1",
            &store.settings().namespace,
        )));
        let verifier = lambda_common::auth::JwtVerifier::new(lambda_common::auth::AuthSettings {
            jwks_url: format!("{http_url}/.well-known/jwks.json"),
            issuer: http_url.clone(),
            audience: DEV_AUDIENCE.to_owned(),
        })
        .map_err(|e| StackError::Setup(e.to_string()))?;
        let handlers = Arc::new(LambdaHandlers {
            join: join::App {
                store: store.clone(),
                pusher: pusher.clone(),
            },
            leave: leave::App {
                store: store.clone(),
            },
            status: status::App {
                store: store.clone(),
            },
            websocket: ws_connect::App {
                store: store.clone(),
                verifier,
                pusher: pusher.clone(),
            },
        });
        let hub = Arc::new(ConnectionHub::default());

        let (shutdown, _) = watch::channel(false);
        let mut tasks = Vec::new();

        let ws_router = websocket_gateway::router(
            handlers.clone(),
            hub.clone(),
            ws_addr.to_string(),
            config.websocket,
        );
        tasks.push(serve(ws_listener, ws_router, shutdown.subscribe()));
        let events = Arc::new(EventBus::default());
        tasks.push(serve(
            events_listener,
            events.router(),
            shutdown.subscribe(),
        ));
        let game_server = Arc::new(GameServer::default());
        tasks.push(serve(
            game_listener,
            game_server.router(),
            shutdown.subscribe(),
        ));
        let mut matcher = MatcherTask {
            running: None,
            store: store.clone(),
            pusher,
            events: sink,
            period: config.tick,
            ticks: Arc::default(),
            asleep: Arc::default(),
            bus: events.clone(),
            lease_token: format!("local-stack-{:016x}", rand::random::<u64>()),
        };
        matcher.spawn(shutdown.subscribe());

        let settings = store.settings();
        let demo_allocator = match (
            config.demo_allocator,
            settings.match_events,
            &settings.server_scope,
        ) {
            (true, true, Some(scope)) => {
                let allocator = Allocator {
                    bus: events.clone(),
                    game: game_server.clone(),
                    connection: game_server_addr.clone(),
                    api_url: http_url.clone(),
                    issuer: issuer.clone(),
                    scope: scope.clone(),
                    http: reqwest::Client::builder()
                        .timeout(Duration::from_secs(10))
                        .build()
                        .map_err(|e| StackError::Setup(e.to_string()))?,
                };
                tasks.push(tokio::spawn(allocator.run(shutdown.subscribe())));
                true
            }
            (false, _, _) => false,
            (true, events_on, scope) => {
                tracing::info!(
                    match_events = events_on,
                    server_scope = scope.is_some(),
                    "demo allocator not started: it needs MM_MATCH_EVENTS and a rule set with servers.scope"
                );
                false
            }
        };

        let http_router = http_gateway::router(
            handlers.clone(),
            issuer.clone(),
            store.clone(),
            hub.clone(),
            websocket_url.clone(),
            http_addr.to_string(),
            http_gateway::Demo {
                events: events.clone(),
                game_server: game_server_addr.clone(),
                allocator: demo_allocator,
            },
        );
        tasks.push(serve(http_listener, http_router, shutdown.subscribe()));

        Ok(Self {
            http_url,
            websocket_url,
            store,
            hub,
            issuer,
            events,
            eventbridge_url,
            game_server,
            game_server_addr,
            demo_allocator,
            matcher: std::sync::Mutex::new(matcher),
            shutdown,
            tasks,
            redis,
        })
    }

    /// Kills the matcher where it is (its task aborted, mid-tick or between
    /// ticks), as a matcher invocation that dies: whatever it had claimed
    /// stays claimed until the claim's lease lapses. Waits until it is gone.
    pub async fn crash_matcher(&self) {
        let running = self.lock_matcher().running.take();
        if let Some(task) = running {
            task.abort();
            let _ = task.await;
        }
    }

    /// Starts a matcher again after [`LocalStack::crash_matcher`] (a new
    /// invocation); a no-op while one runs.
    pub fn restart_matcher(&self) {
        let mut matcher = self.lock_matcher();
        if matcher.running.is_none() {
            matcher.spawn(self.shutdown.subscribe());
        }
    }

    /// Matcher ticks completed so far.
    pub fn matcher_ticks(&self) -> u64 {
        self.lock_matcher().ticks.load(Ordering::Relaxed)
    }

    /// Whether the matcher sleeps now (nothing to do; `MM_MATCHER_SLEEP`).
    pub fn matcher_asleep(&self) -> bool {
        self.lock_matcher().asleep.load(Ordering::Relaxed)
    }

    /// Waits until the matcher has completed `n` more ticks (a tick begun
    /// before the call may count as one: wait for one more than you need);
    /// false if that did not happen `within`.
    pub async fn ticks_pass(&self, n: u64, within: Duration) -> bool {
        let target = self.matcher_ticks() + n;
        let deadline = tokio::time::Instant::now() + within;
        while self.matcher_ticks() < target {
            if tokio::time::Instant::now() >= deadline {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        true
    }

    fn lock_matcher(&self) -> std::sync::MutexGuard<'_, MatcherTask> {
        self.matcher
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Stops the servers and the matcher, then the embedded Redis.
    pub async fn stop(self) {
        let _ = self.shutdown.send(true);
        let matcher = self.lock_matcher().running.take();
        for task in self.tasks.into_iter().chain(matcher) {
            let _ = tokio::time::timeout(Duration::from_secs(5), task).await;
        }
        if let Some(redis) = self.redis {
            redis.stop().await;
        }
    }
}

fn serve(
    listener: TcpListener,
    router: axum::Router,
    mut shutdown: watch::Receiver<bool>,
) -> JoinHandle<()> {
    tokio::spawn(async move {
        let app = router.into_make_service_with_connect_info::<SocketAddr>();
        let result = axum::serve(listener, app)
            .with_graceful_shutdown(async move {
                let _ = shutdown.changed().await;
            })
            .await;
        if let Err(e) = result {
            tracing::error!(error = %e, "server stopped");
        }
    })
}

async fn bind(addr: SocketAddr) -> Result<(TcpListener, String), StackError> {
    let listener = TcpListener::bind(addr)
        .await
        .map_err(|source| StackError::Listen { addr, source })?;
    let bound = listener
        .local_addr()
        .map_err(|e| StackError::Setup(e.to_string()))?;
    Ok((listener, format!("http://{bound}")))
}

/// How often the deployed schedule starts a matcher invocation: the local
/// matcher, asleep, looks again this often even if nobody wakes it.
pub const SCHEDULE: Duration = Duration::from_secs(60);

/// What the matcher task runs with.
struct MatcherRun {
    store: MatchStore,
    pusher: ApiGatewayPusher,
    events: EventBridgeSink,
    period: Duration,
    ticks: Arc<AtomicU64>,
    asleep: Arc<AtomicBool>,
    bus: Arc<EventBus>,
    lease_token: String,
}

/// The matcher, ticking every `period` through the matcher function's own
/// loop (lease, tick, sleep), publishing match events through the deployed
/// matcher's sink. Asleep, it waits for a wake-up from the stand-in's wake
/// rule, or [`SCHEDULE`], as a sleeping deployment waits for an invocation.
async fn matcher_loop(run: MatcherRun, mut shutdown: watch::Receiver<bool>) {
    let mut matcher = shared::matcher::MatcherLoop::new(&run.store, &run.pusher)
        .with_events(&run.events)
        .with_lease_token(run.lease_token.clone());
    let mut interval = tokio::time::interval(run.period);
    interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = interval.tick() => {
                match matcher.round().await {
                    shared::matcher::Round::Ticked(_) => {
                        run.ticks.fetch_add(1, Ordering::Relaxed);
                    }
                    shared::matcher::Round::Slept(_) => {
                        run.ticks.fetch_add(1, Ordering::Relaxed);
                        run.asleep.store(true, Ordering::Relaxed);
                        tokio::select! {
                            _ = run.bus.matcher_woken() => {}
                            _ = tokio::time::sleep(SCHEDULE) => {}
                            _ = shutdown.changed() => return,
                        }
                        run.asleep.store(false, Ordering::Relaxed);
                        // A new invocation ticks at once.
                        interval.reset_immediately();
                    }
                    // Logged by the loop; the next tick carries on.
                    shared::matcher::Round::NotLeader | shared::matcher::Round::Failed(_) => {}
                }
            }
            _ = shutdown.changed() => return,
        }
    }
}
