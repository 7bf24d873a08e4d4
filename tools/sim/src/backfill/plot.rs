//! The backfill scenario's charts, per rule set: how long empty seats
//! waited, and the team-average differences (both as cumulative shares).

use std::path::{Path, PathBuf};

use plotters::style::RGBColor;

use super::report::{by_rule_set, SEAT_WAIT_MEDIAN};
use super::Variant;
use crate::plot::{color, linear_lines, Line};

/// The empirical cumulative share of `values` at or below each value,
/// from (0, 0), out of `total` (values beyond `x_max` are left off).
pub fn cumulative(values: &[f64], total: usize, x_max: f64) -> Vec<(f64, f64)> {
    let mut sorted: Vec<f64> = values.iter().copied().filter(|v| v.is_finite()).collect();
    sorted.sort_by(f64::total_cmp);
    let n = total.max(1) as f64;
    let mut out = vec![(0.0, 0.0)];
    for (k, v) in sorted.iter().enumerate() {
        if *v > x_max {
            out.push((x_max, k as f64 / n));
            return out;
        }
        out.push((*v, k as f64 / n));
        out.push((*v, (k + 1) as f64 / n));
    }
    out.push((x_max, sorted.len() as f64 / n));
    out
}

/// `<label>-seat-waits.svg` and `<label>-balance.svg` per rule set.
pub fn charts(dir: &Path, outcome: &super::Outcome) -> Result<Vec<PathBuf>, String> {
    let mut written = Vec::new();
    for (_, label, runs) in by_rule_set(&outcome.lanes) {
        let Some(with) = runs.iter().find(|l| l.variant == Variant::Backfill) else {
            continue;
        };
        let waits: Vec<f64> = with
            .seats
            .iter()
            .filter_map(|s| s.filled_at.map(|f| f - s.left_at))
            .collect();
        let x_max = 30.0;
        let grey = RGBColor(90, 90, 90);
        let series: Vec<Line> = vec![
            (
                format!(
                    "{} (seats never filled count as never)",
                    Variant::Backfill.describe()
                ),
                color(0),
                cumulative(&waits, with.seats.len(), x_max),
                false,
            ),
            (
                format!("target: median ≤ {SEAT_WAIT_MEDIAN} s"),
                grey,
                vec![(SEAT_WAIT_MEDIAN, 0.0), (SEAT_WAIT_MEDIAN, 0.5), (0.0, 0.5)],
                true,
            ),
        ];
        let path = dir.join(format!("{label}-seat-waits.svg"));
        linear_lines(
            &path,
            &format!("{label}: share of empty seats filled within x seconds"),
            ("simulated seconds since the player left", "share of seats"),
            x_max,
            series,
        )?;
        written.push(path);

        let b = super::report::balance(with);
        let fresh: Vec<f64> = with.games.iter().map(|g| g.team_difference).collect();
        let done: Vec<f64> = with
            .fills
            .iter()
            .filter(|f| f.completes)
            .map(|f| f.team_difference)
            .collect();
        let mut all = fresh.clone();
        all.extend(&done);
        let mut short = Vec::new();
        if let Some(without) = runs.iter().find(|l| l.variant == Variant::ShortHanded) {
            short = without
                .games
                .iter()
                .filter_map(|g| g.after_leaves.last().copied())
                .collect();
            all.extend(&short);
        }
        all.sort_by(f64::total_cmp);
        let x_max = all
            .get(all.len().saturating_sub(1) * 99 / 100)
            .copied()
            .unwrap_or(100.0)
            .max(1.0);
        let mut series: Vec<Line> = vec![
            (
                format!(
                    "fresh matches (mean {:.1})",
                    b.fresh.map_or(0.0, |d| d.mean)
                ),
                color(2),
                cumulative(&fresh, fresh.len(), x_max),
                false,
            ),
            (
                format!(
                    "after backfill (mean {:.1})",
                    b.after_backfill.map_or(0.0, |d| d.mean)
                ),
                color(0),
                cumulative(&done, done.len(), x_max),
                false,
            ),
        ];
        if !short.is_empty() {
            let mean = crate::stats::mean(&short).unwrap_or(0.0);
            series.push((
                format!("short-handed, without backfill (mean {mean:.1})"),
                plotters::style::RED,
                cumulative(&short, short.len(), x_max),
                true,
            ));
        }
        let path = dir.join(format!("{label}-balance.svg"));
        linear_lines(
            &path,
            &format!("{label}: team-average difference per match (cumulative share)"),
            (
                "highest minus lowest team average rating",
                "share of matches",
            ),
            x_max,
            series,
        )?;
        written.push(path);
    }
    Ok(written)
}
