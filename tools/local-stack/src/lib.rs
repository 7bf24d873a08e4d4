//! The whole matchmaking system on one machine, without AWS: an HTTP API and
//! a WebSocket API that emulate API Gateway in front of the very handler
//! functions the Lambda binaries run, the matcher ticking every second
//! through the same matcher code, and Redis (`REDIS_URL`, or a private
//! `redis-server` started as the embedded default). Match events go to an
//! EventBridge stand-in ([`event_bus`]) through the deployed matcher's
//! `EventBridgeSink`, and a demo allocator ([`demo_allocator`]) assigns
//! every match to a demo game server on this machine.

pub mod demo_allocator;
pub mod demo_game;
pub mod dev_auth;
pub mod embedded_redis;
pub mod event_bus;
pub mod http_gateway;
pub mod websocket_gateway;

mod config;
mod matcher;

pub use config::{StackConfig, DEMO_GAME_DEFAULT};
use matcher::MatcherTask;
pub use matcher::SCHEDULE;

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

/// The demo page's Play view (`/play.js`): renders the SDK's player state.
pub const DEMO_PLAY: &str = include_str!("../static/play.js");

/// The operator page (`/operator`): the admin routes with a token carrying
/// the rule set's admin scopes.
pub const OPERATOR_PAGE: &str = include_str!("../static/operator.html");

/// Audience of development tokens (what `AUTH_AUDIENCE` would be in AWS).
pub const DEV_AUDIENCE: &str = "matchmaking-local";

#[derive(Debug, thiserror::Error)]
pub enum StackError {
    #[error(transparent)]
    Redis(#[from] embedded_redis::EmbeddedRedisError),
    #[error("{}", listen_failure(*addr, var, source))]
    Listen {
        /// The variable that sets this address.
        var: &'static str,
        addr: SocketAddr,
        source: std::io::Error,
    },
    #[error("{0}")]
    Setup(String),
}

/// What to do about an address the stack cannot listen on, in one line
/// (a busy port is the common case: another stack, or another program).
fn listen_failure(addr: SocketAddr, var: &str, source: &std::io::Error) -> String {
    if source.kind() == std::io::ErrorKind::AddrInUse {
        format!("{addr} is in use; set {var} to another address")
    } else {
        format!("cannot listen on {addr} ({source}); set {var} to another address")
    }
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

impl LocalStack {
    pub async fn start(mut config: StackConfig) -> Result<Self, StackError> {
        // Listeners first: a busy port fails before anything is started.
        let (http_listener, _) = bind(config.http_addr, "MM_HTTP_ADDR").await?;
        let (ws_listener, _) = bind(config.websocket_addr, "MM_WS_ADDR").await?;
        let (events_listener, eventbridge_url) =
            bind(config.eventbridge_addr, "MM_EVENTBRIDGE_ADDR").await?;
        let (game_listener, game_url) =
            bind(config.game_server_addr, "MM_GAME_SERVER_ADDR").await?;
        let redis = if config.external_redis {
            None
        } else {
            let embedded = EmbeddedRedis::start().await?;
            config.settings.redis.urls = vec![embedded.url.clone()];
            config.settings.redis.cluster = false;
            Some(embedded)
        };
        let http_addr = http_listener
            .local_addr()
            .map_err(|e| StackError::Setup(e.to_string()))?;
        let ws_addr = ws_listener
            .local_addr()
            .map_err(|e| StackError::Setup(e.to_string()))?;
        let http_url = format!("http://{http_addr}");
        let websocket_url = format!("ws://{ws_addr}/");
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
        let game_server = Arc::new(GameServer::new(config.demo_game));
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

/// Listens on `addr`, which the variable `var` sets.
async fn bind(addr: SocketAddr, var: &'static str) -> Result<(TcpListener, String), StackError> {
    let listener = TcpListener::bind(addr)
        .await
        .map_err(|source| StackError::Listen { var, addr, source })?;
    let bound = listener
        .local_addr()
        .map_err(|e| StackError::Setup(e.to_string()))?;
    Ok((listener, format!("http://{bound}")))
}
