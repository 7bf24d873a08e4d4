//! Percentiles, means and rating deciles.

/// The `p`-th percentile (0 < p <= 100) by the nearest-rank method: the
/// smallest value with at least `p` % of the values at or below it. `None`
/// for no values. Sorts `values`.
pub fn percentile(values: &mut [f64], p: f64) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    values.sort_by(f64::total_cmp);
    Some(percentile_sorted(values, p))
}

/// [`percentile`] of values already sorted ascending (not empty).
pub fn percentile_sorted(sorted: &[f64], p: f64) -> f64 {
    let n = sorted.len();
    let rank = ((p / 100.0) * n as f64).ceil() as usize;
    sorted[rank.clamp(1, n) - 1]
}

pub fn mean(values: &[f64]) -> Option<f64> {
    if values.is_empty() {
        None
    } else {
        Some(values.iter().sum::<f64>() / values.len() as f64)
    }
}

/// Location statistics of a sample.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Dist {
    pub n: usize,
    pub mean: f64,
    pub p50: f64,
    pub p90: f64,
    pub p95: f64,
    pub max: f64,
}

impl Dist {
    /// `None` for an empty sample.
    pub fn of(values: &[f64]) -> Option<Self> {
        let mut sorted = values.to_vec();
        sorted.sort_by(f64::total_cmp);
        Some(Self {
            n: sorted.len(),
            mean: mean(&sorted)?,
            p50: percentile_sorted(&sorted, 50.0),
            p90: percentile_sorted(&sorted, 90.0),
            p95: percentile_sorted(&sorted, 95.0),
            max: *sorted.last()?,
        })
    }
}

/// Splits players into ten rating deciles of (nearly) equal size by their
/// rank in the whole trace: the lowest-rated tenth is decile 0. Ties keep the
/// trace order. Returns each player's decile and each decile's rating range.
pub fn deciles(ratings: &[f64]) -> (Vec<usize>, Vec<(f64, f64)>) {
    let n = ratings.len();
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|a, b| ratings[*a].total_cmp(&ratings[*b]).then(a.cmp(b)));
    let mut of = vec![0; n];
    let mut ranges = vec![(f64::INFINITY, f64::NEG_INFINITY); 10];
    for (rank, i) in order.into_iter().enumerate() {
        let d = rank * 10 / n;
        of[i] = d;
        ranges[d].0 = ranges[d].0.min(ratings[i]);
        ranges[d].1 = ranges[d].1.max(ratings[i]);
    }
    (of, ranges)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_percentiles() {
        let mut v: Vec<f64> = (1..=100).rev().map(f64::from).collect();
        assert_eq!(percentile(&mut v, 50.0), Some(50.0));
        assert_eq!(percentile(&mut v, 95.0), Some(95.0));
        assert_eq!(percentile(&mut v, 100.0), Some(100.0));
        assert_eq!(percentile(&mut v, 0.1), Some(1.0));
        let mut small = vec![3.0, 1.0, 2.0];
        assert_eq!(percentile(&mut small, 50.0), Some(2.0));
        assert_eq!(percentile(&mut small, 95.0), Some(3.0));
        assert_eq!(percentile(&mut [7.0], 95.0), Some(7.0));
        assert_eq!(percentile(&mut [], 50.0), None);
    }

    #[test]
    fn distributions() {
        let d = Dist::of(&[4.0, 1.0, 3.0, 2.0]).unwrap();
        assert_eq!((d.n, d.mean, d.p50, d.p95, d.max), (4, 2.5, 2.0, 4.0, 4.0));
        assert_eq!(Dist::of(&[]), None);
        assert_eq!(mean(&[]), None);
    }

    #[test]
    fn deciles_are_equal_sized_by_rank() {
        // 25 players: deciles of 2 or 3, lowest first, ranges in order.
        let ratings: Vec<f64> = (0..25).map(|i| f64::from((i * 7) % 25)).collect();
        let (of, ranges) = deciles(&ratings);
        let mut sizes = [0; 10];
        for d in &of {
            sizes[*d] += 1;
        }
        assert!(sizes.iter().all(|s| (2..=3).contains(s)), "{sizes:?}");
        assert_eq!(sizes.iter().sum::<usize>(), 25);
        assert_eq!(ranges[0].0, 0.0);
        assert_eq!(ranges[9].1, 24.0);
        assert!(ranges.windows(2).all(|w| w[0].1 < w[1].0));
        for (i, r) in ratings.iter().enumerate() {
            let (lo, hi) = ranges[of[i]];
            assert!(lo <= *r && *r <= hi);
        }
        // Ties are split by trace order, so equal ratings still fill deciles.
        let (of, _) = deciles(&[5.0; 20]);
        assert_eq!(of, (0..20).map(|i| i / 2).collect::<Vec<_>>());
    }
}
