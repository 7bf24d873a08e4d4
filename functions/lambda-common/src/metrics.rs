//! Per-world matcher metrics as CloudWatch Embedded Metric Format (EMF):
//! one JSON line on stdout per world per tick, which Lambda ships to
//! CloudWatch Logs and CloudWatch turns into metrics without any API call.

use serde::Serialize;
use shared::matcher::WorldTick;

/// CloudWatch namespace of every metric.
pub const NAMESPACE: &str = "Matchmaking";

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
    };
    // Plain structs of strings and numbers always serialize.
    serde_json::to_string(&line).unwrap_or_default()
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
}
