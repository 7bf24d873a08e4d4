//! A world's regions, as written in the rule set.

use super::*;
use crate::domain::MAX_LATENCY_MS;

/// A world's regions, as written in the document.
#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(super) struct RegionsSection {
    names: Vec<String>,
    max_latency_ms: f64,
    #[serde(default)]
    widen_per_second: f64,
    #[serde(default)]
    max_latency_cap_ms: Option<f64>,
    #[serde(default)]
    max_spread_ms: Option<f64>,
    #[serde(default)]
    default_region: Option<String>,
}

/// Most regions a world names.
pub const MAX_REGIONS: usize = 16;

impl RegionsSection {
    pub(super) fn validate(self) -> Result<RegionRules, String> {
        if self.names.is_empty() || self.names.len() > MAX_REGIONS {
            return Err(format!(
                "regions.names: 1..={MAX_REGIONS} regions, got {}",
                self.names.len()
            ));
        }
        let mut seen = std::collections::BTreeSet::new();
        for name in &self.names {
            let valid = !name.is_empty()
                && name.len() <= 32
                && name.starts_with(|c: char| c.is_ascii_lowercase() || c.is_ascii_digit())
                && name
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
            if !valid {
                return Err(format!(
                    "regions.names: {name:?} is not [a-z0-9][a-z0-9-]{{0,31}}"
                ));
            }
            if !seen.insert(name.as_str()) {
                return Err(format!("regions.names: {name:?} is listed twice"));
            }
        }
        let max = f64::from(MAX_LATENCY_MS);
        let base = finite_at_least("regions.maxLatencyMs", self.max_latency_ms, 1.0)?;
        if base > max {
            return Err(format!("regions.maxLatencyMs: at most {max}, got {base}"));
        }
        let widen = finite_at_least("regions.widenPerSecond", self.widen_per_second, 0.0)?;
        let cap = match self.max_latency_cap_ms {
            None => base,
            Some(c) => finite_at_least("regions.maxLatencyCapMs", c, base)?,
        };
        if cap > max {
            return Err(format!("regions.maxLatencyCapMs: at most {max}, got {cap}"));
        }
        let spread = self
            .max_spread_ms
            .map(|s| finite_at_least("regions.maxSpreadMs", s, 0.0))
            .transpose()?;
        if let Some(d) = &self.default_region {
            if !self.names.contains(d) {
                return Err(format!(
                    "regions.defaultRegion: {d:?} is not one of regions.names"
                ));
            }
        }
        Ok(RegionRules {
            names: self.names,
            max_latency_ms: base,
            widen_per_second: widen,
            latency_cap_ms: cap,
            max_spread_ms: spread,
            default_region: self.default_region,
        })
    }
}
