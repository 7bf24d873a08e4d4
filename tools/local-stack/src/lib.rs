//! The whole matchmaking system on one machine, without AWS: an HTTP API and
//! a WebSocket API that emulate API Gateway in front of the very handler
//! functions the Lambda binaries run, the matcher ticking every second
//! through the same matcher code, and Redis (`REDIS_URL`, or a private
//! `redis-server` started as the embedded default).

pub mod dev_auth;
pub mod embedded_redis;
pub mod http_gateway;
pub mod websocket_gateway;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use aws_lambda_events::apigw::{ApiGatewayProxyResponse, ApiGatewayWebsocketProxyRequest};
use lambda_common::http::{Function, Route};
use lambda_common::push::ApiGatewayPusher;
use lambda_runtime::{Context, LambdaEvent};
use shared::{ConfigError, MatchStore, Settings};
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::dev_auth::DevIssuer;
use crate::embedded_redis::EmbeddedRedis;
use crate::http_gateway::HttpHandlers;
use crate::websocket_gateway::{ConnectionHub, GatewayTiming, WebsocketHandlers};

/// The demo page, built into the binary (no build step).
pub const DEMO_PAGE: &str = include_str!("../static/index.html");

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
}

impl StackConfig {
    /// Reads the core settings from `lookup` (the environment in `main`):
    /// everything the Lambda functions read, plus `MM_HTTP_ADDR` and
    /// `MM_WS_ADDR` for the listen addresses.
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        let external_redis = lookup("REDIS_URL").is_some_and(|v| !v.trim().is_empty());
        let addr = |var: &'static str, default: &str| -> Result<SocketAddr, ConfigError> {
            let value = lookup(var).unwrap_or_else(|| default.to_owned());
            value.parse().map_err(|_| ConfigError {
                var,
                reason: format!("expected host:port, got {value:?}"),
            })
        };
        Ok(Self {
            http_addr: addr("MM_HTTP_ADDR", "127.0.0.1:3000")?,
            websocket_addr: addr("MM_WS_ADDR", "127.0.0.1:3001")?,
            settings: Settings::from_lookup(&lookup)?,
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
    shutdown: watch::Sender<bool>,
    tasks: Vec<JoinHandle<()>>,
    redis: Option<EmbeddedRedis>,
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
        let http_router = http_gateway::router(
            handlers.clone(),
            issuer.clone(),
            store.clone(),
            hub.clone(),
            websocket_url.clone(),
            http_addr.to_string(),
        );
        tasks.push(serve(http_listener, http_router, shutdown.subscribe()));
        let ws_router =
            websocket_gateway::router(handlers, hub.clone(), ws_addr.to_string(), config.websocket);
        tasks.push(serve(ws_listener, ws_router, shutdown.subscribe()));
        tasks.push(tokio::spawn(matcher_loop(
            store.clone(),
            pusher,
            config.tick,
            shutdown.subscribe(),
        )));

        Ok(Self {
            http_url,
            websocket_url,
            store,
            hub,
            issuer,
            shutdown,
            tasks,
            redis,
        })
    }

    /// Stops the servers and the matcher, then the embedded Redis.
    pub async fn stop(self) {
        let _ = self.shutdown.send(true);
        for task in self.tasks {
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

/// The matcher, ticking every `period` through the matcher function's own code.
async fn matcher_loop(
    store: MatchStore,
    pusher: ApiGatewayPusher,
    period: Duration,
    mut shutdown: watch::Receiver<bool>,
) {
    let mut interval = tokio::time::interval(period);
    interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = interval.tick() => {
                if let Err(e) = shared::matcher::tick(&store, &pusher).await {
                    tracing::warn!(error = %e, "matcher tick failed; retrying next tick");
                }
            }
            _ = shutdown.changed() => return,
        }
    }
}
