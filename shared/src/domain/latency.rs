//! Latencies: what a client measured to each region of a world with regions.

use std::collections::BTreeMap;

use crate::error::ValidationError;

/// The highest latency a player may report, in ms (and so the highest cap a
/// world's rules may set).
pub const MAX_LATENCY_MS: u32 = 10_000;

/// A player's round-trip latency to each region they measured, in whole
/// milliseconds (a fraction rounds up), every region one the world names,
/// each 0 < ms <= [`MAX_LATENCY_MS`]. The client's own measurement: it only
/// decides where that player can be matched.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Latencies(BTreeMap<String, u32>);

impl Latencies {
    /// Validates a request's `latencies` object against the world's regions
    /// (`regions`: the names its rules list, `RegionRules::names`).
    pub fn from_value(
        value: &serde_json::Value,
        regions: &[String],
    ) -> Result<Self, ValidationError> {
        let bad = |why: String| ValidationError::BadLatencies(why);
        let fields = value
            .as_object()
            .ok_or_else(|| bad("latencies must be an object of region -> milliseconds".into()))?;
        if fields.is_empty() {
            return Err(bad("latencies must name at least one region".into()));
        }
        if fields.len() > regions.len() {
            return Err(bad(format!(
                "{} latencies for {} regions",
                fields.len(),
                regions.len()
            )));
        }
        let mut out = BTreeMap::new();
        for (name, ms) in fields {
            if !regions.iter().any(|r| r == name) {
                return Err(bad(format!(
                    "unknown region {name:?}; this world's regions are {}",
                    regions.join(", ")
                )));
            }
            let ms = ms.as_f64().ok_or_else(|| {
                bad(format!(
                    "latency of {name} must be a number of milliseconds"
                ))
            })?;
            if !(ms > 0.0 && ms <= f64::from(MAX_LATENCY_MS)) {
                return Err(bad(format!(
                    "latency of {name} must be > 0 and <= {MAX_LATENCY_MS} ms, got {ms}"
                )));
            }
            // In (0, MAX_LATENCY_MS]: the cast cannot truncate.
            out.insert(name.clone(), ms.ceil() as u32);
        }
        Ok(Self(out))
    }

    /// As the scripts take it: `name=ms,...`.
    pub fn as_arg(&self) -> String {
        self.0
            .iter()
            .map(|(name, ms)| format!("{name}={ms}"))
            .collect::<Vec<_>>()
            .join(",")
    }

    pub fn get(&self, region: &str) -> Option<u32> {
        self.0.get(region).copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn regions() -> Vec<String> {
        vec!["eu".into(), "us-east".into()]
    }

    #[test]
    fn latencies_are_known_regions_with_bounded_positive_times() {
        let l = Latencies::from_value(&json!({"eu": 20.2, "us-east": 110}), &regions()).unwrap();
        assert_eq!(l.as_arg(), "eu=21,us-east=110");
        for bad in [
            json!([]),
            json!({}),
            json!({"asia": 10}),
            json!({"eu": 0}),
            json!({"eu": -5}),
            json!({"eu": "10"}),
            json!({"eu": null}),
            json!({"eu": 10001}),
            json!({"eu": 1e308}),
        ] {
            assert!(Latencies::from_value(&bad, &regions()).is_err(), "{bad}");
        }
    }
}
