//! The ratings scenario's charts: per rule set, the mean absolute rating
//! error over games played and the match quality over games played.

use std::path::{Path, PathBuf};

use plotters::prelude::*;

use super::report::{by_rule_set, over_time, MAE_VS_START};
use super::{Outcome, Variant};
use crate::plot::{color, linear_lines as lines, Line};

fn variant_color(v: Variant) -> RGBColor {
    match v {
        Variant::Updates => color(0),
        Variant::NoUpdates => RED,
        Variant::Known => color(2),
    }
}

/// `<label>-error.svg` and `<label>-quality.svg` per rule set in `dir`.
pub fn charts(dir: &Path, outcome: &Outcome, games: f64) -> Result<Vec<PathBuf>, String> {
    let mut written = Vec::new();
    for (_, label, runs) in by_rule_set(&outcome.lanes) {
        let mut series: Vec<Line> = runs
            .iter()
            .map(|r| {
                (
                    r.variant.describe().to_owned(),
                    variant_color(r.variant),
                    r.curve.clone(),
                    false,
                )
            })
            .collect();
        if let Some(start) = runs
            .iter()
            .find(|r| r.variant == Variant::Updates)
            .and_then(|r| r.curve.first())
        {
            series.push((
                format!("target: {:.0} % of the start", MAE_VS_START * 100.0),
                RGBColor(90, 90, 90),
                vec![
                    (0.0, start.1 * MAE_VS_START),
                    (games, start.1 * MAE_VS_START),
                ],
                true,
            ));
        }
        let path = dir.join(format!("{label}-error.svg"));
        lines(
            &path,
            &format!("{label}: mean |rating used − true skill| over games played"),
            (
                "games per player (mean over the population)",
                "mean absolute rating error",
            ),
            games,
            series,
        )?;
        written.push(path);

        let width = (games / 30.0).max(0.5);
        let mut series: Vec<Line> = Vec::new();
        for r in &runs {
            let bins = over_time(&r.matches, width, games);
            let mid = |lo: f64| lo + width / 2.0;
            series.push((
                format!("{}: spread", r.variant.describe()),
                variant_color(r.variant),
                bins.iter()
                    .filter_map(|(lo, q)| q.spread.map(|d| (mid(*lo), d.mean)))
                    .collect(),
                false,
            ));
            let diffs: Vec<(f64, f64)> = bins
                .iter()
                .filter_map(|(lo, q)| q.team_difference.map(|d| (mid(*lo), d.mean)))
                .collect();
            if !diffs.is_empty() {
                series.push((
                    format!("{}: team difference", r.variant.describe()),
                    variant_color(r.variant),
                    diffs,
                    true,
                ));
            }
        }
        let path = dir.join(format!("{label}-quality.svg"));
        lines(
            &path,
            &format!("{label}: true-skill spread (solid), team difference (dashed)"),
            (
                "games per player when the match formed",
                "mean per match (true skill points)",
            ),
            games,
            series,
        )?;
        written.push(path);
    }
    Ok(written)
}
