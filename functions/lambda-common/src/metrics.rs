//! Per-world metrics as CloudWatch Embedded Metric Format (EMF): one JSON
//! line on stdout per world per matcher tick, and one per world for the
//! matches a request formed (an instant match on join, a party completing,
//! the last accept of a ready check), which Lambda ships to CloudWatch Logs
//! and CloudWatch turns into metrics without any API call. Both carry
//! `MatchesFormed` and `PlayersMatched` with the `World` dimension, so a
//! sum over them counts every match however it formed. Worlds with regions
//! add `WorstLatencyMs`: each match's worst member latency, as an EMF array
//! (one value per match, at most [`MAX_EMF_VALUES`] per line), so CloudWatch
//! keeps its distribution (p50, p99) per world.
//!
//! The lines are written only where something reads them: inside Lambda
//! (`AWS_LAMBDA_FUNCTION_NAME` set), or when `MM_METRICS_STDOUT` says so
//! ([`stdout_enabled`]); elsewhere (the local stack, a test) they would
//! only fill the console.

use std::collections::BTreeMap;
use std::io::Write;

use serde::Serialize;
use shared::matcher::WorldTick;
use shared::MatchRecord;

/// Turns the EMF lines on (`true`) or off (`false`); unset, they are on
/// only inside Lambda.
pub const METRICS_STDOUT_VAR: &str = "MM_METRICS_STDOUT";

/// Whether EMF lines go to stdout, from `lookup` (the environment):
/// `MM_METRICS_STDOUT` when it is `true`/`false` (also `1`/`0`, `yes`/`no`,
/// `on`/`off`), else whether this runs in Lambda. An unreadable value is
/// `Err` with the default.
pub fn stdout_enabled_from(lookup: impl Fn(&str) -> Option<String>) -> Result<bool, bool> {
    let in_lambda = lookup("AWS_LAMBDA_FUNCTION_NAME").is_some_and(|v| !v.is_empty());
    match lookup(METRICS_STDOUT_VAR)
        .map(|v| v.trim().to_ascii_lowercase())
        .as_deref()
    {
        None | Some("") => Ok(in_lambda),
        Some("1" | "true" | "yes" | "on") => Ok(true),
        Some("0" | "false" | "no" | "off") => Ok(false),
        Some(_) => Err(in_lambda),
    }
}

/// [`stdout_enabled_from`] the process environment, read once.
pub fn stdout_enabled() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| {
        stdout_enabled_from(|k| std::env::var(k).ok()).unwrap_or_else(|default| {
            tracing::warn!(
                var = METRICS_STDOUT_VAR,
                default,
                "expected true or false; using the default"
            );
            default
        })
    })
}

/// CloudWatch namespace of every metric.
pub const NAMESPACE: &str = "Matchmaking";
/// Most values one EMF metric may carry in one line (CloudWatch's limit).
pub const MAX_EMF_VALUES: usize = 100;

/// The worst member latency of each match that has one (worlds with
/// regions), at most [`MAX_EMF_VALUES`].
fn worst_latencies<'a>(matches: impl Iterator<Item = &'a MatchRecord>) -> Vec<u32> {
    matches
        .filter_map(|m| m.worst_latency)
        .take(MAX_EMF_VALUES)
        .collect()
}

fn latency_definition() -> MetricDefinition {
    MetricDefinition {
        name: "WorstLatencyMs",
        unit: "Milliseconds",
    }
}

/// What one matcher tick saw and did in one world.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct WorldTickMetrics {
    pub world: String,
    pub matches_formed: u64,
    pub players_matched: u64,
    /// Tickets waiting after the tick.
    pub queue_depth: u64,
    /// How long the oldest waiting ticket has waited, in milliseconds.
    pub oldest_wait_ms: u64,
    pub expired_tickets: u64,
    /// Tickets removed because their player had no live connection.
    pub removed_tickets: u64,
    /// Rated worlds: mean spread of the matches formed (none without).
    pub mean_spread: Option<f64>,
    /// Worlds with regions: each match's worst member latency (ms).
    pub worst_latencies: Vec<u32>,
}

impl From<&WorldTick> for WorldTickMetrics {
    fn from(tick: &WorldTick) -> Self {
        Self {
            world: tick.world.to_string(),
            matches_formed: tick.matches_formed(),
            players_matched: tick.players_matched(),
            queue_depth: tick.queue_depth,
            oldest_wait_ms: tick.oldest_wait_ms,
            expired_tickets: tick.expired_tickets,
            removed_tickets: tick.removed_tickets,
            mean_spread: tick.mean_spread(),
            worst_latencies: worst_latencies(tick.formed.iter()),
        }
    }
}

#[derive(Serialize)]
#[serde(rename_all = "PascalCase")]
struct MetricDefinition {
    name: &'static str,
    unit: &'static str,
}

#[derive(Serialize)]
#[serde(rename_all = "PascalCase")]
struct MetricDirective {
    namespace: &'static str,
    dimensions: [[&'static str; 1]; 1],
    metrics: Vec<MetricDefinition>,
}

#[derive(Serialize)]
#[serde(rename_all = "PascalCase")]
struct Metadata {
    timestamp: u64,
    #[serde(rename = "CloudWatchMetrics")]
    cloudwatch_metrics: [MetricDirective; 1],
}

#[derive(Serialize)]
#[serde(rename_all = "PascalCase")]
struct EmfLine<'a> {
    #[serde(rename = "_aws")]
    aws: Metadata,
    world: &'a str,
    matches_formed: u64,
    players_matched: u64,
    queue_depth: u64,
    oldest_wait_ms: u64,
    expired_tickets: u64,
    removed_tickets: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    mean_spread: Option<f64>,
    #[serde(rename = "WorstLatencyMs", skip_serializing_if = "<[u32]>::is_empty")]
    worst_latencies: &'a [u32],
}

/// Renders `metrics` as one EMF JSON line (no trailing newline), stamped
/// with `timestamp_ms` (Unix milliseconds).
pub fn emf_line(metrics: &WorldTickMetrics, timestamp_ms: u64) -> String {
    let mut definitions = vec![
        count("MatchesFormed"),
        count("PlayersMatched"),
        count("QueueDepth"),
        MetricDefinition {
            name: "OldestWaitMs",
            unit: "Milliseconds",
        },
        count("ExpiredTickets"),
        count("RemovedTickets"),
    ];
    // Declared only when there is a value (a tick that formed rated matches).
    if metrics.mean_spread.is_some() {
        definitions.push(MetricDefinition {
            name: "MeanSpread",
            unit: "None",
        });
    }
    if !metrics.worst_latencies.is_empty() {
        definitions.push(latency_definition());
    }
    let line = EmfLine {
        aws: Metadata {
            timestamp: timestamp_ms,
            cloudwatch_metrics: [MetricDirective {
                namespace: NAMESPACE,
                dimensions: [["World"]],
                metrics: definitions,
            }],
        },
        world: &metrics.world,
        matches_formed: metrics.matches_formed,
        players_matched: metrics.players_matched,
        queue_depth: metrics.queue_depth,
        oldest_wait_ms: metrics.oldest_wait_ms,
        expired_tickets: metrics.expired_tickets,
        removed_tickets: metrics.removed_tickets,
        mean_spread: metrics.mean_spread,
        worst_latencies: &metrics.worst_latencies,
    };
    // Plain structs of strings and numbers always serialize.
    serde_json::to_string(&line).unwrap_or_default()
}

/// The EMF line of the matches one request formed in one world.
#[derive(Serialize)]
#[serde(rename_all = "PascalCase")]
struct RequestMatchesLine<'a> {
    #[serde(rename = "_aws")]
    aws: Metadata,
    world: &'a str,
    matches_formed: u64,
    players_matched: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    mean_spread: Option<f64>,
    #[serde(rename = "WorstLatencyMs", skip_serializing_if = "Vec::is_empty")]
    worst_latencies: Vec<u32>,
}

/// One EMF line per world for `formed`, the matches a request formed.
pub fn request_match_lines(formed: &[MatchRecord], timestamp_ms: u64) -> Vec<String> {
    let mut by_world: BTreeMap<&str, Vec<&MatchRecord>> = BTreeMap::new();
    for m in formed {
        by_world.entry(m.world_type.as_str()).or_default().push(m);
    }
    by_world
        .into_iter()
        .map(|(world, matches)| {
            let spreads: Vec<f64> = matches.iter().filter_map(|m| m.spread).collect();
            let mean_spread =
                (!spreads.is_empty()).then(|| spreads.iter().sum::<f64>() / spreads.len() as f64);
            let mut definitions = vec![count("MatchesFormed"), count("PlayersMatched")];
            if mean_spread.is_some() {
                definitions.push(MetricDefinition {
                    name: "MeanSpread",
                    unit: "None",
                });
            }
            let worst_latencies = worst_latencies(matches.iter().copied());
            if !worst_latencies.is_empty() {
                definitions.push(latency_definition());
            }
            let line = RequestMatchesLine {
                aws: Metadata {
                    timestamp: timestamp_ms,
                    cloudwatch_metrics: [MetricDirective {
                        namespace: NAMESPACE,
                        dimensions: [["World"]],
                        metrics: definitions,
                    }],
                },
                world,
                matches_formed: matches.len() as u64,
                players_matched: matches.iter().map(|m| m.participants.len() as u64).sum(),
                mean_spread,
                worst_latencies,
            };
            serde_json::to_string(&line).unwrap_or_default()
        })
        .collect()
}

/// Writes the EMF lines of the matches a request formed to stdout (best
/// effort: a closed stdout must not fail the request).
pub fn print_request_matches(formed: &[MatchRecord]) {
    if formed.is_empty() || !stdout_enabled() {
        return;
    }
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
    let mut out = std::io::stdout().lock();
    for line in request_match_lines(formed, now_ms) {
        let _ = writeln!(out, "{line}");
    }
    let _ = out.flush();
}

fn count(name: &'static str) -> MetricDefinition {
    MetricDefinition {
        name,
        unit: "Count",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn emf_line_has_the_exact_cloudwatch_shape() {
        let metrics = WorldTickMetrics {
            world: "world1".into(),
            matches_formed: 2,
            players_matched: 6,
            queue_depth: 1,
            oldest_wait_ms: 1500,
            expired_tickets: 3,
            removed_tickets: 1,
            mean_spread: None,
            worst_latencies: Vec::new(),
        };
        let line = emf_line(&metrics, 1_700_000_000_123);
        assert_eq!(
            line,
            concat!(
                r#"{"_aws":{"Timestamp":1700000000123,"CloudWatchMetrics":[{"Namespace":"Matchmaking","#,
                r#""Dimensions":[["World"]],"Metrics":[{"Name":"MatchesFormed","Unit":"Count"},"#,
                r#"{"Name":"PlayersMatched","Unit":"Count"},{"Name":"QueueDepth","Unit":"Count"},"#,
                r#"{"Name":"OldestWaitMs","Unit":"Milliseconds"},{"Name":"ExpiredTickets","Unit":"Count"},"#,
                r#"{"Name":"RemovedTickets","Unit":"Count"}]}]},"#,
                r#""World":"world1","MatchesFormed":2,"PlayersMatched":6,"QueueDepth":1,"#,
                r#""OldestWaitMs":1500,"ExpiredTickets":3,"RemovedTickets":1}"#
            )
        );
        assert!(!line.contains('\n'), "one line per world");
    }

    #[test]
    fn mean_spread_is_declared_only_with_a_value() {
        let rated = WorldTickMetrics {
            mean_spread: Some(42.5),
            ..WorldTickMetrics::default()
        };
        let value: serde_json::Value = serde_json::from_str(&emf_line(&rated, 1)).unwrap();
        assert_eq!(value["MeanSpread"], 42.5);
        let names: Vec<_> = value["_aws"]["CloudWatchMetrics"][0]["Metrics"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["Name"].as_str().unwrap().to_owned())
            .collect();
        assert!(names.contains(&"MeanSpread".to_owned()));
        let fifo = emf_line(&WorldTickMetrics::default(), 1);
        assert!(!fifo.contains("MeanSpread"));
    }

    #[test]
    fn worst_latencies_go_as_one_array_per_line() {
        let geo = WorldTickMetrics {
            worst_latencies: vec![40, 75],
            ..WorldTickMetrics::default()
        };
        let value: serde_json::Value = serde_json::from_str(&emf_line(&geo, 1)).unwrap();
        assert_eq!(value["WorstLatencyMs"], serde_json::json!([40, 75]));
        let declared = value["_aws"]["CloudWatchMetrics"][0]["Metrics"]
            .as_array()
            .unwrap()
            .iter()
            .any(|m| m["Name"] == "WorstLatencyMs" && m["Unit"] == "Milliseconds");
        assert!(declared, "{value}");
        assert!(!emf_line(&WorldTickMetrics::default(), 1).contains("WorstLatencyMs"));
    }

    #[test]
    fn a_requests_matches_are_counted_per_world() {
        let record = |id: &str, world: &str, players: &[&str], spread: Option<f64>| MatchRecord {
            match_id: shared::MatchId::parse(id).unwrap(),
            world_type: shared::WorldName::parse(world).unwrap(),
            participants: players
                .iter()
                .map(|p| shared::PlayerId::parse(p).unwrap())
                .collect(),
            matched_at: 1,
            player_data: None,
            ratings: None,
            spread,
            teams: None,
            team_difference: None,
            parties: None,
            region: None,
            latencies: None,
            worst_latency: None,
            attributes: None,
            rules: None,
            anchor: None,
            roles: None,
            anchor_wait_ms: None,
        };
        let lines = request_match_lines(
            &[
                record("1-a", "duel", &["a", "b"], None),
                record("1-b", "ranked", &["c", "d"], Some(10.0)),
                record("1-c", "ranked", &["e", "f"], Some(30.0)),
            ],
            7,
        );
        assert_eq!(lines.len(), 2, "one line per world");
        let duel: serde_json::Value = serde_json::from_str(&lines[0]).unwrap();
        assert_eq!(
            (
                duel["World"].as_str(),
                duel["MatchesFormed"].as_u64(),
                duel["PlayersMatched"].as_u64()
            ),
            (Some("duel"), Some(1), Some(2))
        );
        assert!(duel.get("MeanSpread").is_none());
        let ranked: serde_json::Value = serde_json::from_str(&lines[1]).unwrap();
        assert_eq!(
            (
                ranked["MatchesFormed"].as_u64(),
                ranked["MeanSpread"].as_f64()
            ),
            (Some(2), Some(20.0))
        );
        let directive = &ranked["_aws"]["CloudWatchMetrics"][0];
        assert_eq!(directive["Namespace"], NAMESPACE);
        for metric in directive["Metrics"].as_array().unwrap() {
            assert!(ranked[metric["Name"].as_str().unwrap()].is_number());
        }
    }

    #[test]
    fn every_declared_metric_has_a_value_and_the_dimension_is_present() {
        let line = emf_line(&WorldTickMetrics::default(), 1);
        let value: serde_json::Value = serde_json::from_str(&line).unwrap();
        let directive = &value["_aws"]["CloudWatchMetrics"][0];
        for dimension in directive["Dimensions"][0].as_array().unwrap() {
            assert!(value[dimension.as_str().unwrap()].is_string());
        }
        for metric in directive["Metrics"].as_array().unwrap() {
            let name = metric["Name"].as_str().unwrap();
            assert!(value[name].is_u64(), "{name} has no value");
        }
    }

    #[test]
    fn emf_lines_are_on_in_lambda_or_when_asked() {
        let env = |vars: &'static [(&'static str, &'static str)]| {
            move |k: &str| {
                vars.iter()
                    .find(|(key, _)| *key == k)
                    .map(|(_, v)| (*v).to_owned())
            }
        };
        assert_eq!(stdout_enabled_from(env(&[])), Ok(false), "local: off");
        assert_eq!(
            stdout_enabled_from(env(&[("AWS_LAMBDA_FUNCTION_NAME", "matcher")])),
            Ok(true),
            "Lambda: on"
        );
        assert_eq!(
            stdout_enabled_from(env(&[(METRICS_STDOUT_VAR, "true")])),
            Ok(true)
        );
        assert_eq!(
            stdout_enabled_from(env(&[
                ("AWS_LAMBDA_FUNCTION_NAME", "matcher"),
                (METRICS_STDOUT_VAR, " OFF ")
            ])),
            Ok(false)
        );
        assert_eq!(
            stdout_enabled_from(env(&[
                ("AWS_LAMBDA_FUNCTION_NAME", "matcher"),
                (METRICS_STDOUT_VAR, "maybe")
            ])),
            Err(true),
            "unreadable: the default, reported"
        );
    }
}
