//! Order statistics over samples.

/// Median and spread of a set of samples.
#[derive(Debug, Clone, Copy)]
pub struct Summary {
    pub n: usize,
    pub median: f64,
    pub p10: f64,
    pub p90: f64,
    pub min: f64,
    pub max: f64,
}

/// Nearest-rank percentile of sorted samples (`q` in 0..=1).
pub fn percentile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = (q * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

pub fn summarize(samples: &[f64]) -> Summary {
    let mut sorted: Vec<f64> = samples.iter().copied().filter(|v| !v.is_nan()).collect();
    sorted.sort_by(f64::total_cmp);
    let median = if sorted.is_empty() {
        f64::NAN
    } else if sorted.len() % 2 == 1 {
        sorted[sorted.len() / 2]
    } else {
        (sorted[sorted.len() / 2 - 1] + sorted[sorted.len() / 2]) / 2.0
    };
    Summary {
        n: sorted.len(),
        median,
        p10: percentile(&sorted, 0.10),
        p90: percentile(&sorted, 0.90),
        min: sorted.first().copied().unwrap_or(f64::NAN),
        max: sorted.last().copied().unwrap_or(f64::NAN),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_and_percentiles() {
        let s = summarize(&[5.0, 1.0, 3.0, 2.0, 4.0]);
        assert_eq!((s.n, s.median, s.min, s.max), (5, 3.0, 1.0, 5.0));
        assert_eq!(s.p10, 1.0);
        assert_eq!(s.p90, 5.0);
        let even = summarize(&[1.0, 2.0, 3.0, 4.0]);
        assert_eq!(even.median, 2.5);
        let hundred: Vec<f64> = (1..=100).map(f64::from).collect();
        let h = summarize(&hundred);
        assert_eq!((h.p10, h.p90), (10.0, 90.0));
        assert_eq!(percentile(&hundred, 0.99), 99.0);
        assert!(summarize(&[]).median.is_nan());
    }
}
