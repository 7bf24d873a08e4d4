//! How to run the stack: [`StackConfig`], from the environment.

use super::*;

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
    /// How long a demo game lasts from its assignment before the demo game
    /// server reports its result (`MM_DEMO_GAME_SECS`, default
    /// [`DEMO_GAME_DEFAULT`]).
    pub demo_game: Duration,
}

/// The demo game's length unless `MM_DEMO_GAME_SECS` says otherwise: long
/// enough to see a game on the demo page, short enough to play again soon.
pub const DEMO_GAME_DEFAULT: Duration = Duration::from_secs(10);

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
            demo_game: match lookup("MM_DEMO_GAME_SECS") {
                None => DEMO_GAME_DEFAULT,
                // Fractions allowed: a browser test plays a game in 0.5 s.
                Some(v) => v
                    .trim()
                    .parse::<f64>()
                    .ok()
                    .and_then(|s| Duration::try_from_secs_f64(s).ok())
                    .ok_or_else(|| ConfigError {
                        var: "MM_DEMO_GAME_SECS",
                        reason: format!("expected seconds >= 0, got {v:?}"),
                    })?,
            },
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
