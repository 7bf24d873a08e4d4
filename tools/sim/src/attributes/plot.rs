//! The attributes scenario's charts: the waits by the number of modes
//! listed (p50 and p95, one colour per variant), and each match's spread
//! against its anchor's wait under the distance rule's number in force.

use std::path::Path;

use plotters::prelude::*;

use super::{
    by_file, counts_listed, distance_in_force, distance_limit, distance_rule, find,
    intersection_rule, listed_rows, player_spread, spread_points, variant_of,
};
use crate::outcome::{AttrVariant, Run};
use crate::plot::{color, err, legend, solid_and_dashed, Series, FLOOR};
use crate::scenario::Scenario;
use crate::stats::mean;

/// Waits by the number of modes listed: p50 (solid) and p95 (dashed) of
/// the matched players, log scale.
pub fn listed_chart(
    path: &Path,
    title: &str,
    scenario: &Scenario,
    runs: &[&Run],
    attribute: &str,
) -> Result<(), String> {
    let counts = counts_listed(scenario, attribute);
    let highest = counts.last().copied().unwrap_or(1);
    let series: Vec<Series> = runs
        .iter()
        .map(|r| {
            let rows = listed_rows(scenario, r, attribute);
            let pick = |f: fn(&crate::stats::Dist) -> f64| -> Vec<(f64, f64)> {
                rows.iter()
                    .filter_map(|row| {
                        let n: f64 = row.key.parse().ok()?;
                        row.wait.map(|w| (n, f(&w).max(FLOOR)))
                    })
                    .collect()
            };
            (r.label.clone(), pick(|w| w.p50), pick(|w| w.p95))
        })
        .collect();
    let caption =
        format!("{title}: wait by the number of modes listed, p50 (solid) and p95 (dashed)");
    let values: Vec<f64> = series
        .iter()
        .flat_map(|(_, a, b)| a.iter().chain(b.iter()).map(|p| p.1))
        .collect();
    let lo = values
        .iter()
        .copied()
        .fold(f64::INFINITY, f64::min)
        .max(FLOOR);
    let hi = values.iter().copied().fold(FLOOR, f64::max);
    // Room above the lines for the legend.
    let y = if lo.is_finite() {
        lo / 1.6..hi * 8.0
    } else {
        FLOOR..1.0
    };
    let root = SVGBackend::new(path, (900, 600)).into_drawing_area();
    root.fill(&WHITE).map_err(err)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(caption, ("sans-serif", 20))
        .margin(15)
        .x_label_area_size(45)
        .y_label_area_size(65)
        .build_cartesian_2d(0.5..highest as f64 + 0.5, y.log_scale())
        .map_err(err)?;
    chart
        .configure_mesh()
        .x_desc("modes the player lists")
        .y_desc("wait (simulated s, log)")
        .x_labels(highest)
        .x_label_formatter(&|v| {
            let i = v.round();
            if (v - i).abs() < 1e-6 && i >= 1.0 {
                format!("{i:.0}")
            } else {
                String::new()
            }
        })
        .y_label_formatter(&|v| {
            if *v >= 10.0 {
                format!("{v:.0}")
            } else if *v >= 1.0 {
                format!("{v:.1}")
            } else {
                format!("{v:.2}")
            }
        })
        .draw()
        .map_err(err)?;
    for (i, (label, p50, p95)) in series.into_iter().enumerate() {
        let c = color(i);
        solid_and_dashed(&mut chart, format!("{label} p50 / p95"), c, &p50, &p95)?;
    }
    legend(&mut chart, SeriesLabelPosition::UpperRight)?;
    root.present().map_err(err)?;
    Ok(())
}

/// Every match of the world as written: its spread (what the distance rule
/// measures, from the trace) against its anchor's wait, under the rule's
/// number in force at that wait; the mean spread without the rule as a
/// dashed line.
pub fn spread_chart(
    path: &Path,
    title: &str,
    scenario: &Scenario,
    runs: &[&Run],
    rule: &shared::config::MatchRule,
) -> Result<(), String> {
    let attribute = rule.kind.attribute().unwrap_or_default();
    let written = find(runs, AttrVariant::AsWritten);
    let points = written.map_or_else(Vec::new, |r| spread_points(scenario, r, rule));
    let without = find(runs, AttrVariant::WithoutRules).and_then(|r| {
        let spreads: Vec<f64> = r
            .matches
            .iter()
            .filter_map(|m| player_spread(scenario, m, attribute))
            .collect();
        mean(&spreads)
    });
    let x_max = points.iter().map(|p| p.anchor_wait).fold(1.0f64, f64::max) * 1.05;
    let y_max = points
        .iter()
        .map(|p| p.distance)
        .chain(without)
        .fold(distance_limit(rule), f64::max)
        * 1.1;
    let root = SVGBackend::new(path, (900, 600)).into_drawing_area();
    root.fill(&WHITE).map_err(err)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(
            format!("{title}: {attribute} spread per match against the anchor's wait"),
            ("sans-serif", 20),
        )
        .margin(15)
        .x_label_area_size(45)
        .y_label_area_size(65)
        .build_cartesian_2d(0.0..x_max, 0.0..y_max.max(1.0))
        .map_err(err)?;
    chart
        .configure_mesh()
        .x_desc("the anchor's wait when the match formed (simulated s)")
        .y_desc(format!(
            "{attribute} spread in the match (highest - lowest)"
        ))
        .x_label_formatter(&|v| format!("{v:.0}"))
        .y_label_formatter(&|v| format!("{v:.0}"))
        .draw()
        .map_err(err)?;
    let c = color(0);
    chart
        .draw_series(
            points
                .iter()
                .map(|p| Circle::new((p.anchor_wait, p.distance), 2, c.mix(0.5).filled())),
        )
        .map_err(err)?
        .label(format!(
            "{} ({} matches)",
            written.map_or("as written", |r| r.label.as_str()),
            points.len()
        ))
        .legend(move |(x, y)| Circle::new((x + 10, y), 3, c.filled()));
    let steps = 400;
    let line: Vec<(f64, f64)> = (0..=steps)
        .filter_map(|i| {
            let w = x_max * f64::from(i) / f64::from(steps);
            distance_in_force(rule, w).map(|v| (w, v))
        })
        .collect();
    let black = RGBColor(0, 0, 0);
    chart
        .draw_series(LineSeries::new(line, black.stroke_width(2)))
        .map_err(err)?
        .label(format!("{}: the most allowed at that wait", rule.name))
        .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], black.stroke_width(2)));
    if let Some(m) = without {
        let red = RED;
        chart
            .draw_series(DashedLineSeries::new(
                vec![(0.0, m), (x_max, m)],
                6,
                4,
                red.stroke_width(2),
            ))
            .map_err(err)?
            .label(format!("without rules: mean spread {m:.1}"))
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], red.stroke_width(2)));
    }
    legend(&mut chart, SeriesLabelPosition::UpperRight)?;
    root.present().map_err(err)?;
    Ok(())
}

/// The charts of every rule set into `dir`; returns the files written.
pub fn charts(
    dir: &Path,
    scenario: &Scenario,
    runs: &[Run],
) -> Result<Vec<std::path::PathBuf>, String> {
    let mut written = Vec::new();
    for (file, list) in by_file(runs) {
        let rules = list
            .first()
            .and_then(|r| variant_of(r))
            .map_or(&[][..], |(_, _, r)| r);
        let (waits, spread) = super::report::chart_names(&file);
        let title = super::report::stem(&file);
        if let Some((_, attribute)) = intersection_rule(rules) {
            listed_chart(&dir.join(&waits), &title, scenario, &list, attribute)?;
            written.push(dir.join(waits));
        }
        if let Some(rule) = distance_rule(rules) {
            spread_chart(&dir.join(&spread), &title, scenario, &list, rule)?;
            written.push(dir.join(spread));
        }
    }
    Ok(written)
}
