//! The real [`EventSink`]: EventBridge `PutEvents` on the configured bus,
//! one entry per match event (`DetailType` [`MatchEvent::DETAIL_TYPE`],
//! `Detail` the event's JSON, `Time` the match's formation time, so a
//! republished event is the same entry again).
//!
//! Only the matcher publishes (`MM_MATCH_EVENTS=true`, the bus in
//! `MM_EVENT_BUS`). Events go out in `PutEvents` calls of at most
//! [`MAX_ENTRIES_PER_CALL`] entries (EventBridge's limit) and
//! [`MAX_BYTES_PER_CALL`]; a call that fails fails all of its events, and an
//! entry EventBridge refuses (`FailedEntryCount`, the entry's `ErrorCode`)
//! fails only that event: the outbox retries exactly those.
//!
//! The endpoint: `MM_EVENTS_ENDPOINT` when set (the template gives the
//! dual-stack `https://events.{region}.api.aws` in the default IPv6 network
//! mode; the local stack its stand-in), else the SDK's default. It is set on
//! this client only: dual-stack is never switched on for the shared SDK
//! configuration, where the `@connections` client (a custom endpoint) would
//! refuse every call.

use std::time::Duration;

use aws_sdk_eventbridge::config::retry::RetryConfig;
use aws_sdk_eventbridge::config::timeout::TimeoutConfig;
use aws_sdk_eventbridge::config::{BehaviorVersion, Builder, Credentials, Region};
use aws_sdk_eventbridge::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_eventbridge::operation::put_events::{PutEventsError, PutEventsOutput};
use aws_sdk_eventbridge::primitives::DateTime;
use aws_sdk_eventbridge::types::PutEventsRequestEntry;
use aws_sdk_eventbridge::Client;
use futures_util::future::join_all;
use shared::{EventError, EventSink, MatchEvent};

/// The bus match events go to (name or ARN). Required with `MM_MATCH_EVENTS=true`.
pub const EVENT_BUS_VAR: &str = "MM_EVENT_BUS";
/// The events' `Source` (default [`DEFAULT_SOURCE`]): what a rule matches on.
pub const EVENT_SOURCE_VAR: &str = "MM_EVENT_SOURCE";
/// Endpoint override of the EventBridge client; empty or unset: the SDK's.
pub const EVENTS_ENDPOINT_VAR: &str = "MM_EVENTS_ENDPOINT";
/// `Source` of the match events when [`EVENT_SOURCE_VAR`] is not set.
pub const DEFAULT_SOURCE: &str = "matchmaking";

/// Most entries of one `PutEvents` call (EventBridge's limit).
pub const MAX_ENTRIES_PER_CALL: usize = 10;
/// Most bytes of one call's entries, as EventBridge counts them (source,
/// detail type, detail, bus name, 14 for the time). EventBridge's request
/// limit is larger; staying at the long-standing 256 KB keeps any region
/// and quota happy. A single larger event still goes out, alone.
pub const MAX_BYTES_PER_CALL: usize = 256 * 1024;

/// Upper bound of one call, its retry included; the outbox retries later.
const OPERATION_TIMEOUT: Duration = Duration::from_secs(3);
const CONNECT_TIMEOUT: Duration = Duration::from_secs(1);
const MAX_ATTEMPTS: u32 = 2;
const RETRY_INITIAL_BACKOFF: Duration = Duration::from_millis(50);
const RETRY_MAX_BACKOFF: Duration = Duration::from_millis(200);

/// The match-event configuration is not usable.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EventsConfigError {
    #[error(
        "MM_MATCH_EVENTS is true but {EVENT_BUS_VAR} is not set: name the EventBridge bus \
         match events go to (its name or ARN), or set MM_MATCH_EVENTS=false"
    )]
    MissingBus,
    #[error("{EVENT_BUS_VAR} must be a bus name or ARN (1-1600 characters, no spaces), got {0:?}")]
    BadBus(String),
    #[error("{EVENT_SOURCE_VAR} must be 1-256 characters without spaces, got {0:?}")]
    BadSource(String),
    #[error("{EVENTS_ENDPOINT_VAR} must be empty or an http:// or https:// URL, got {0:?}")]
    BadEndpoint(String),
    #[error("no AWS region configured (set AWS_REGION)")]
    MissingRegion,
}

/// Where match events go: bus, source and endpoint, read from the environment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventsTarget {
    pub bus: String,
    pub source: String,
    /// `None`: the SDK's endpoint for the region.
    pub endpoint: Option<String>,
}

impl EventsTarget {
    /// Reads [`EVENT_BUS_VAR`], [`EVENT_SOURCE_VAR`] and [`EVENTS_ENDPOINT_VAR`]
    /// through `lookup` (blank is unset).
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Self, EventsConfigError> {
        let get = |k: &str| {
            lookup(k)
                .map(|v| v.trim().to_owned())
                .filter(|v| !v.is_empty())
        };
        let bus = get(EVENT_BUS_VAR).ok_or(EventsConfigError::MissingBus)?;
        if bus.len() > 1600 || bus.chars().any(char::is_whitespace) {
            return Err(EventsConfigError::BadBus(bus));
        }
        let source = get(EVENT_SOURCE_VAR).unwrap_or_else(|| DEFAULT_SOURCE.to_owned());
        if source.len() > 256 || source.chars().any(char::is_whitespace) {
            return Err(EventsConfigError::BadSource(source));
        }
        let endpoint = get(EVENTS_ENDPOINT_VAR)
            .map(|e| parse_endpoint(&e))
            .transpose()?;
        Ok(Self {
            bus,
            source,
            endpoint,
        })
    }
}

fn parse_endpoint(value: &str) -> Result<String, EventsConfigError> {
    let rest = value
        .strip_prefix("https://")
        .or_else(|| value.strip_prefix("http://"))
        .ok_or_else(|| EventsConfigError::BadEndpoint(value.to_owned()))?;
    if rest.is_empty() || rest.starts_with('/') || rest.chars().any(char::is_whitespace) {
        return Err(EventsConfigError::BadEndpoint(value.to_owned()));
    }
    Ok(value.trim_end_matches('/').to_owned())
}

/// Publishes match events with `PutEvents`. Build it once per process.
#[derive(Clone, Debug)]
pub struct EventBridgeSink {
    client: Client,
    bus: String,
    source: String,
}

impl EventBridgeSink {
    /// Reads the target from the environment ([`EventsTarget::from_lookup`])
    /// and the standard AWS configuration (region and the function role's
    /// credentials from the Lambda environment).
    pub async fn from_env() -> Result<Self, EventsConfigError> {
        let target = EventsTarget::from_lookup(|k| std::env::var(k).ok())?;
        let sdk = aws_config::defaults(BehaviorVersion::latest()).load().await;
        if sdk.region().is_none() {
            return Err(EventsConfigError::MissingRegion);
        }
        Ok(Self::from_builder(Builder::from(&sdk), target))
    }

    /// A sink with fixed dummy credentials aimed at `target`, for the local
    /// stack and tests: their stand-in does not check SigV4 signatures.
    pub fn with_static_credentials(target: EventsTarget, region: &str) -> Self {
        let builder = aws_sdk_eventbridge::Config::builder()
            .behavior_version(BehaviorVersion::latest())
            .region(Region::new(region.to_owned()))
            .credentials_provider(Credentials::new(
                "local-access-key",
                "local-secret-key",
                None,
                None,
                "static",
            ));
        Self::from_builder(builder, target)
    }

    fn from_builder(mut builder: Builder, target: EventsTarget) -> Self {
        if let Some(endpoint) = target.endpoint {
            // This client only, and without dual-stack resolution: the URL
            // already is the endpoint (the SDK refuses a custom endpoint
            // with dual-stack on, should the environment switch it on).
            builder = builder.endpoint_url(endpoint).use_dual_stack(false);
        }
        let config = builder
            .timeout_config(
                TimeoutConfig::builder()
                    .connect_timeout(CONNECT_TIMEOUT)
                    .operation_timeout(OPERATION_TIMEOUT)
                    .build(),
            )
            .retry_config(
                RetryConfig::standard()
                    .with_max_attempts(MAX_ATTEMPTS)
                    .with_initial_backoff(RETRY_INITIAL_BACKOFF)
                    .with_max_backoff(RETRY_MAX_BACKOFF),
            )
            .build();
        Self {
            client: Client::from_conf(config),
            bus: target.bus,
            source: target.source,
        }
    }

    pub fn bus(&self) -> &str {
        &self.bus
    }

    pub fn source(&self) -> &str {
        &self.source
    }

    /// The `PutEvents` entry of `event`.
    pub fn entry(&self, event: &MatchEvent) -> PutEventsRequestEntry {
        PutEventsRequestEntry::builder()
            .event_bus_name(&self.bus)
            .source(&self.source)
            .detail_type(event.detail_type())
            .detail(event.to_json())
            .time(DateTime::from_millis(
                i64::try_from(event.matched_at).unwrap_or(i64::MAX),
            ))
            .build()
    }

    /// One `PutEvents` call; one result per entry, in order.
    async fn put(&self, entries: Vec<PutEventsRequestEntry>) -> Vec<Result<(), EventError>> {
        let count = entries.len();
        let answer = self
            .client
            .put_events()
            .set_entries(Some(entries))
            .send()
            .await;
        match answer {
            Ok(output) => entry_results(&output, count),
            Err(e) => {
                let why = call_failure(&e);
                tracing::warn!(error = %why, events = count, bus = %self.bus, "PutEvents failed");
                (0..count).map(|_| Err(EventError(why.clone()))).collect()
            }
        }
    }
}

impl EventSink for EventBridgeSink {
    async fn publish(&self, events: &[MatchEvent]) -> Vec<Result<(), EventError>> {
        let entries: Vec<PutEventsRequestEntry> = events.iter().map(|e| self.entry(e)).collect();
        let sizes: Vec<usize> = entries.iter().map(entry_size).collect();
        let calls = batches(&sizes);
        let mut entries = entries.into_iter();
        let answers = join_all(calls.iter().map(|&n| {
            let batch: Vec<PutEventsRequestEntry> = entries.by_ref().take(n).collect();
            self.put(batch)
        }))
        .await;
        answers.into_iter().flatten().collect()
    }
}

/// The size of an entry as EventBridge counts it.
pub fn entry_size(entry: &PutEventsRequestEntry) -> usize {
    let text = |s: Option<&str>| s.map_or(0, str::len);
    14 + text(entry.source())
        + text(entry.detail_type())
        + text(entry.detail())
        + text(entry.event_bus_name())
        + entry.resources().iter().map(String::len).sum::<usize>()
}

/// Splits entries of `sizes` into consecutive calls: each at most
/// [`MAX_ENTRIES_PER_CALL`] entries and [`MAX_BYTES_PER_CALL`] bytes (an
/// entry larger than that alone). Returns each call's entry count.
pub fn batches(sizes: &[usize]) -> Vec<usize> {
    let mut calls = Vec::new();
    let (mut n, mut bytes) = (0usize, 0usize);
    for &size in sizes {
        if n > 0 && (n == MAX_ENTRIES_PER_CALL || bytes + size > MAX_BYTES_PER_CALL) {
            calls.push(n);
            (n, bytes) = (0, 0);
        }
        n += 1;
        bytes += size;
    }
    if n > 0 {
        calls.push(n);
    }
    calls
}

/// Per entry: `Ok` when EventBridge gave it an event id, else the entry's
/// error code and message. An answer with another number of entries than
/// sent fails them all (nothing says which went through).
fn entry_results(output: &PutEventsOutput, sent: usize) -> Vec<Result<(), EventError>> {
    let entries = output.entries();
    if entries.len() != sent {
        let why = format!(
            "PutEvents answered {} entries for {sent} sent (FailedEntryCount {})",
            entries.len(),
            output.failed_entry_count()
        );
        return (0..sent).map(|_| Err(EventError(why.clone()))).collect();
    }
    entries
        .iter()
        .map(|entry| match (entry.error_code(), entry.event_id()) {
            (None, Some(id)) if !id.is_empty() => Ok(()),
            (code, _) => Err(EventError(format!(
                "entry refused: {} ({})",
                code.unwrap_or("no event id"),
                entry.error_message().unwrap_or("no message")
            ))),
        })
        .collect()
}

fn call_failure(err: &SdkError<PutEventsError>) -> String {
    let status = err.raw_response().map_or_else(
        || "no status".to_owned(),
        |r| r.status().as_u16().to_string(),
    );
    match err {
        SdkError::ServiceError(service) => {
            let source = service.err();
            format!(
                "PutEvents refused with {status} ({}: {}); check {EVENT_BUS_VAR} and the \
                 events:PutEvents permission",
                source.code().unwrap_or("unknown"),
                source.message().unwrap_or("no message")
            )
        }
        SdkError::TimeoutError(_) => "PutEvents timed out".to_owned(),
        SdkError::DispatchFailure(failure) => format!("PutEvents not sent: {failure:?}"),
        SdkError::ResponseError(_) => format!("PutEvents answer unreadable ({status})"),
        other => format!("PutEvents failed: {other:?}"),
    }
}

/// The bus a function sends [`WAKE_DETAIL_TYPE`] to when it finds the
/// matcher asleep ([`shared::wake`]); unset: the process wakes nobody (the
/// matcher's schedule does, within a minute).
pub const WAKE_BUS_VAR: &str = "MM_WAKE_BUS";
/// `Source` of a wake-up: the rule that invokes the matcher matches it.
pub const WAKE_SOURCE: &str = "matchmaking.wake";
/// `DetailType` of a wake-up.
pub const WAKE_DETAIL_TYPE: &str = "MatcherWake";

/// Wakes the sleeping matcher with one `PutEvents` entry (source
/// [`WAKE_SOURCE`], detail type [`WAKE_DETAIL_TYPE`], detail the namespace)
/// on [`WAKE_BUS_VAR`]'s bus, where a rule invokes the matcher function
/// asynchronously. Same client settings as [`EventBridgeSink`].
#[derive(Clone, Debug)]
pub struct EventBridgeWaker {
    sink: EventBridgeSink,
    detail: String,
}

impl EventBridgeWaker {
    /// The wake-up target: [`WAKE_BUS_VAR`] (`None` when unset) and the
    /// events endpoint ([`EVENTS_ENDPOINT_VAR`]).
    pub fn target_from_lookup(
        lookup: impl Fn(&str) -> Option<String>,
    ) -> Result<Option<EventsTarget>, EventsConfigError> {
        let Some(bus) = lookup(WAKE_BUS_VAR).filter(|v| !v.trim().is_empty()) else {
            return Ok(None);
        };
        EventsTarget::from_lookup(|k| match k {
            EVENT_BUS_VAR => Some(bus.clone()),
            EVENT_SOURCE_VAR => Some(WAKE_SOURCE.to_owned()),
            other => lookup(other),
        })
        .map(Some)
    }

    /// From the environment and the standard AWS configuration; `None` when
    /// [`WAKE_BUS_VAR`] is not set.
    pub async fn from_env(namespace: &str) -> Result<Option<Self>, EventsConfigError> {
        let Some(target) = Self::target_from_lookup(|k| std::env::var(k).ok())? else {
            return Ok(None);
        };
        let sdk = aws_config::defaults(BehaviorVersion::latest()).load().await;
        if sdk.region().is_none() {
            return Err(EventsConfigError::MissingRegion);
        }
        Ok(Some(Self::new(
            EventBridgeSink::from_builder(Builder::from(&sdk), target),
            namespace,
        )))
    }

    /// Aimed at `target` with dummy credentials, for the local stack.
    pub fn with_static_credentials(target: EventsTarget, region: &str, namespace: &str) -> Self {
        Self::new(
            EventBridgeSink::with_static_credentials(target, region),
            namespace,
        )
    }

    fn new(sink: EventBridgeSink, namespace: &str) -> Self {
        Self {
            sink,
            detail: serde_json::json!({ "namespace": namespace }).to_string(),
        }
    }

    pub fn bus(&self) -> &str {
        self.sink.bus()
    }
}

impl shared::Waker for EventBridgeWaker {
    fn wake(
        &self,
    ) -> std::pin::Pin<
        Box<dyn std::future::Future<Output = Result<(), shared::WakeError>> + Send + '_>,
    > {
        Box::pin(async move {
            let entry = PutEventsRequestEntry::builder()
                .event_bus_name(self.sink.bus())
                .source(self.sink.source())
                .detail_type(WAKE_DETAIL_TYPE)
                .detail(&self.detail)
                .build();
            match self.sink.put(vec![entry]).await.pop() {
                Some(Ok(())) => Ok(()),
                Some(Err(e)) => Err(shared::WakeError(e.0)),
                None => Err(shared::WakeError("PutEvents answered nothing".into())),
            }
        })
    }
}

/// The sink a matcher runs with: EventBridge when match events are on
/// (`MM_MATCH_EVENTS`), nothing otherwise.
#[derive(Clone, Debug)]
pub enum MatchEventSink {
    EventBridge(EventBridgeSink),
    /// Match events are off: the matcher never publishes (the outbox has no
    /// event pending), and should it be asked to, it refuses.
    Off,
}

/// What [`MatchEventSink::Off`] answers if it is ever asked to publish.
pub const EVENTS_OFF: &str = "MM_MATCH_EVENTS is off in this process";

impl EventSink for MatchEventSink {
    async fn publish(&self, events: &[MatchEvent]) -> Vec<Result<(), EventError>> {
        match self {
            Self::EventBridge(sink) => sink.publish(events).await,
            Self::Off => events
                .iter()
                .map(|_| Err(EventError(EVENTS_OFF.to_owned())))
                .collect(),
        }
    }
}

impl MatchEventSink {
    /// [`EventBridgeSink::from_env`] when `match_events` is on, else [`MatchEventSink::Off`].
    pub async fn from_env(match_events: bool) -> Result<Self, EventsConfigError> {
        if !match_events {
            return Ok(Self::Off);
        }
        Ok(Self::EventBridge(EventBridgeSink::from_env().await?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lookup<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |k| {
            vars.iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| v.to_string())
        }
    }

    #[test]
    fn the_bus_is_required_and_the_rest_has_defaults() {
        assert_eq!(
            EventsTarget::from_lookup(lookup(&[])),
            Err(EventsConfigError::MissingBus)
        );
        assert_eq!(
            EventsTarget::from_lookup(lookup(&[(EVENT_BUS_VAR, "  ")])),
            Err(EventsConfigError::MissingBus)
        );
        assert_eq!(
            EventsTarget::from_lookup(lookup(&[
                (EVENT_BUS_VAR, "mm-matches"),
                (EVENTS_ENDPOINT_VAR, "")
            ])),
            Ok(EventsTarget {
                bus: "mm-matches".into(),
                source: DEFAULT_SOURCE.into(),
                endpoint: None
            })
        );
        assert_eq!(
            EventsTarget::from_lookup(lookup(&[
                (
                    EVENT_BUS_VAR,
                    "arn:aws:events:eu-west-1:123456789012:event-bus/mm"
                ),
                (EVENT_SOURCE_VAR, "studio.matchmaking"),
                (EVENTS_ENDPOINT_VAR, "https://events.eu-west-1.api.aws/"),
            ])),
            Ok(EventsTarget {
                bus: "arn:aws:events:eu-west-1:123456789012:event-bus/mm".into(),
                source: "studio.matchmaking".into(),
                endpoint: Some("https://events.eu-west-1.api.aws".into())
            })
        );
        for (var, bad) in [
            (EVENT_BUS_VAR, "a bus"),
            (EVENT_SOURCE_VAR, "my source"),
            (EVENTS_ENDPOINT_VAR, "events.eu-west-1.api.aws"),
            (EVENTS_ENDPOINT_VAR, "https://"),
        ] {
            let mut vars = vec![(EVENT_BUS_VAR, "bus")];
            vars.retain(|(k, _)| *k != var);
            vars.push((var, bad));
            assert!(
                EventsTarget::from_lookup(lookup(&vars)).is_err(),
                "{var}={bad:?} must be refused"
            );
        }
        // The message names what to set.
        assert!(EventsConfigError::MissingBus
            .to_string()
            .contains("MM_EVENT_BUS"));
    }

    #[test]
    fn batches_hold_at_most_ten_entries_and_the_byte_budget() {
        assert_eq!(batches(&[]), Vec::<usize>::new());
        assert_eq!(batches(&[100; 10]), [10]);
        assert_eq!(batches(&[100; 25]), [10, 10, 5]);
        let big = MAX_BYTES_PER_CALL / 2;
        assert_eq!(batches(&[big, big, 1]), [2, 1]);
        assert_eq!(batches(&[big + 1, big]), [1, 1]);
        // An entry over the budget goes alone, never dropped.
        assert_eq!(batches(&[10, MAX_BYTES_PER_CALL * 2, 10]), [1, 1, 1]);
        let sizes: Vec<usize> = (0..200).map(|i| 1000 + i * 37).collect();
        let calls = batches(&sizes);
        assert_eq!(calls.iter().sum::<usize>(), sizes.len());
        assert!(calls
            .iter()
            .all(|&n| (1..=MAX_ENTRIES_PER_CALL).contains(&n)));
    }

    #[tokio::test]
    async fn a_sink_that_is_off_publishes_nothing_and_says_why() {
        let sink = MatchEventSink::from_env(false).await.unwrap();
        assert!(matches!(sink, MatchEventSink::Off));
        let event: MatchEvent = sample_event();
        let got = sink.publish(&[event.clone(), event]).await;
        assert_eq!(got, vec![Err(EventError(EVENTS_OFF.into())); 2]);
    }

    fn sample_event() -> MatchEvent {
        let record: shared::MatchRecord = serde_json::from_value(serde_json::json!({
            "matchId": "18f3a2b4c5d-2a", "worldType": "duel", "matchedAt": 1741608005123u64,
            "participants": ["a", "b"],
        }))
        .unwrap();
        MatchEvent::of(&record)
    }

    #[test]
    fn an_entry_is_the_event_on_the_bus_with_its_formation_time() {
        let sink = EventBridgeSink::with_static_credentials(
            EventsTarget {
                bus: "mm-matches".into(),
                source: "matchmaking".into(),
                endpoint: Some("http://127.0.0.1:9".into()),
            },
            "us-east-1",
        );
        let event = sample_event();
        let entry = sink.entry(&event);
        assert_eq!(entry.event_bus_name(), Some("mm-matches"));
        assert_eq!(entry.source(), Some("matchmaking"));
        assert_eq!(entry.detail_type(), Some("MatchFormed"));
        assert_eq!(entry.detail(), Some(event.to_json().as_str()));
        assert_eq!(
            entry.time().map(|t| t.to_millis().unwrap()),
            Some(1741608005123)
        );
        assert_eq!(
            entry_size(&entry),
            14 + "matchmaking".len()
                + "MatchFormed".len()
                + event.to_json().len()
                + "mm-matches".len()
        );
    }
}
