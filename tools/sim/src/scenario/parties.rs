//! Party-size distributions: how many players arrive together.

use std::fmt;

use rand::Rng;

/// How many players arrive together: `(size, probability)` pairs, sizes
/// ascending, probabilities summing to 1.
#[derive(Debug, Clone, PartialEq)]
pub struct PartySizes {
    weights: Vec<(u32, f64)>,
}

/// The largest party a trace may hold (a match holds at most 100 players).
pub const MAX_PARTY: u32 = 100;

impl PartySizes {
    /// Everyone arrives alone.
    pub fn solo() -> Self {
        Self {
            weights: vec![(1, 1.0)],
        }
    }

    /// Parses `1:0.6,2:0.25,3:0.15` (size:probability) or the positional
    /// `0.6,0.25,0.15` (the probabilities of sizes 1, 2, 3, ...). The
    /// probabilities must sum to 1 (within 0.001; they are then
    /// normalised).
    pub fn parse(spec: &str) -> Result<Self, String> {
        let items: Vec<&str> = spec.split(',').map(str::trim).collect();
        if items.iter().any(|i| i.is_empty()) {
            return Err(format!("party sizes {spec:?}: an empty item"));
        }
        let keyed = items.iter().filter(|i| i.contains(':')).count();
        if keyed != 0 && keyed != items.len() {
            return Err(format!(
                "party sizes {spec:?}: write every item as size:probability, or only probabilities (of sizes 1, 2, 3, ...)"
            ));
        }
        let mut weights: Vec<(u32, f64)> = Vec::new();
        for (i, item) in items.iter().enumerate() {
            let (size, p) = match item.split_once(':') {
                Some((s, p)) => (
                    s.trim().parse::<u32>().map_err(|_| {
                        format!("party sizes {spec:?}: size {s:?} is not a whole number")
                    })?,
                    p.trim(),
                ),
                None => (i as u32 + 1, *item),
            };
            let p: f64 = p
                .parse()
                .map_err(|_| format!("party sizes {spec:?}: probability {p:?} is not a number"))?;
            if !(1..=MAX_PARTY).contains(&size) {
                return Err(format!(
                    "party sizes {spec:?}: size {size} is outside 1..={MAX_PARTY}"
                ));
            }
            if !(p.is_finite() && (0.0..=1.0).contains(&p)) {
                return Err(format!(
                    "party sizes {spec:?}: probability {p} of size {size} is outside 0..=1"
                ));
            }
            if weights.iter().any(|(s, _)| *s == size) {
                return Err(format!("party sizes {spec:?}: size {size} is listed twice"));
            }
            weights.push((size, p));
        }
        let sum: f64 = weights.iter().map(|(_, p)| p).sum();
        if (sum - 1.0).abs() > 0.001 {
            return Err(format!(
                "party sizes {spec:?}: the probabilities sum to {sum}, not 1"
            ));
        }
        weights.retain(|(_, p)| *p > 0.0);
        weights.sort_by_key(|(s, _)| *s);
        for w in weights.iter_mut() {
            w.1 /= sum;
        }
        Ok(Self { weights })
    }

    /// `(size, probability)` pairs, sizes ascending.
    pub fn weights(&self) -> &[(u32, f64)] {
        &self.weights
    }

    pub fn is_solo(&self) -> bool {
        self.weights.iter().all(|(s, _)| *s == 1)
    }

    pub fn largest(&self) -> u32 {
        self.weights.last().map_or(1, |w| w.0)
    }

    /// Expected players per arrival.
    pub fn mean(&self) -> f64 {
        self.weights.iter().map(|(s, p)| f64::from(*s) * p).sum()
    }

    /// Draws one group size (no random number is drawn for solo-only
    /// distributions, so their traces equal the solo generator's).
    pub fn sample(&self, rng: &mut impl Rng) -> u32 {
        if self.weights.len() == 1 {
            return self.weights[0].0;
        }
        let u: f64 = rng.random();
        let mut acc = 0.0;
        for (size, p) in &self.weights {
            acc += p;
            if u < acc {
                return *size;
            }
        }
        self.largest()
    }
}

impl fmt::Display for PartySizes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> = self
            .weights
            .iter()
            .map(|(s, p)| format!("{s}:{}", crate::oracle::trim_float((p * 1e6).round() / 1e6)))
            .collect();
        f.write_str(&parts.join(","))
    }
}
