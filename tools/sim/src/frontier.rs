//! The oracle's quality/wait frontier: one (mean wait, mean spread) point
//! per batch period, and the spread it reaches at any mean wait in between.

/// One oracle point.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Point {
    pub period: f64,
    pub mean_wait: f64,
    pub mean_spread: f64,
}

/// Where a queried wait lies relative to the frontier's points.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Position {
    /// Between two points (or on one): interpolated.
    Inside,
    /// Shorter than the shortest oracle wait: the first point's spread is
    /// used (the oracle would do worse still at a shorter wait, so this is
    /// the strict side).
    BelowRange,
    /// Longer than the longest oracle wait: the last point's spread is used
    /// (lenient; add a longer period to cover it).
    AboveRange,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Frontier {
    /// Sorted by mean wait.
    points: Vec<Point>,
}

impl Frontier {
    pub fn new(mut points: Vec<Point>) -> Self {
        points.retain(|p| p.mean_wait.is_finite() && p.mean_spread.is_finite());
        points.sort_by(|a, b| a.mean_wait.total_cmp(&b.mean_wait));
        Self { points }
    }

    pub fn points(&self) -> &[Point] {
        &self.points
    }

    /// The oracle's mean spread at mean wait `wait`. Between two points the
    /// frontier is interpolated linearly in log(wait)–log(spread) space, which
    /// is exact for a power law (spread ~ 1/wait, what a batch of players
    /// that grows with the period gives); where a value is not positive it
    /// falls back to linear interpolation. `None` without points.
    pub fn spread_at(&self, wait: f64) -> Option<(f64, Position)> {
        let first = self.points.first()?;
        let last = self.points.last()?;
        if wait <= first.mean_wait {
            let pos = if wait < first.mean_wait {
                Position::BelowRange
            } else {
                Position::Inside
            };
            return Some((first.mean_spread, pos));
        }
        if wait >= last.mean_wait {
            let pos = if wait > last.mean_wait {
                Position::AboveRange
            } else {
                Position::Inside
            };
            return Some((last.mean_spread, pos));
        }
        let i = self.points.partition_point(|p| p.mean_wait <= wait);
        let (a, b) = (self.points[i - 1], self.points[i]);
        let logs = a.mean_wait > 0.0 && a.mean_spread > 0.0 && b.mean_spread > 0.0;
        let spread = if logs {
            let f = (wait.ln() - a.mean_wait.ln()) / (b.mean_wait.ln() - a.mean_wait.ln());
            (a.mean_spread.ln() + f * (b.mean_spread.ln() - a.mean_spread.ln())).exp()
        } else {
            let f = (wait - a.mean_wait) / (b.mean_wait - a.mean_wait);
            a.mean_spread + f * (b.mean_spread - a.mean_spread)
        };
        Some((spread, Position::Inside))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(period: f64, mean_wait: f64, mean_spread: f64) -> Point {
        Point {
            period,
            mean_wait,
            mean_spread,
        }
    }

    #[test]
    fn interpolates_between_points_on_a_log_log_line() {
        // spread = 100 / wait
        let f = Frontier::new(vec![
            p(20.0, 10.0, 10.0),
            p(2.0, 1.0, 100.0),
            p(8.0, 4.0, 25.0),
        ]);
        assert_eq!(f.points()[0].period, 2.0, "sorted by wait");
        for (wait, want) in [
            (1.0, 100.0),
            (2.0, 50.0),
            (4.0, 25.0),
            (5.0, 20.0),
            (10.0, 10.0),
        ] {
            let (got, pos) = f.spread_at(wait).unwrap();
            assert!((got - want).abs() < 1e-9, "at {wait}: {got} != {want}");
            assert_eq!(pos, Position::Inside);
        }
    }

    #[test]
    fn outside_the_range_the_nearest_end_is_used() {
        let f = Frontier::new(vec![p(1.0, 1.0, 100.0), p(10.0, 10.0, 10.0)]);
        assert_eq!(f.spread_at(0.2), Some((100.0, Position::BelowRange)));
        assert_eq!(f.spread_at(50.0), Some((10.0, Position::AboveRange)));
        assert_eq!(Frontier::new(vec![]).spread_at(1.0), None);
    }

    #[test]
    fn zero_values_fall_back_to_linear() {
        let f = Frontier::new(vec![p(1.0, 0.0, 50.0), p(2.0, 2.0, 10.0)]);
        let (got, _) = f.spread_at(1.0).unwrap();
        assert!((got - 30.0).abs() < 1e-9, "{got}");
        let g = Frontier::new(vec![p(1.0, 1.0, 10.0), p(2.0, 3.0, 0.0)]);
        let (got, _) = g.spread_at(2.0).unwrap();
        assert!((got - 5.0).abs() < 1e-9, "{got}");
    }
}
