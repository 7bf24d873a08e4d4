//! The block-list study's charts, per rule set: the waits' distribution in
//! each lane, and the waits by group of players (p50 and p95).

use std::path::{Path, PathBuf};

use plotters::prelude::*;

use super::analysis::{pairs_of, Grouping};
use super::{LaneResult, Outcome};
use crate::outcome::Fate;
use crate::plot::{color, err, legend, wait_lines, Series, FLOOR};

/// The matched arrivals' waits of `lane`, sorted.
fn waits(lane: &LaneResult) -> Vec<f64> {
    let mut w: Vec<f64> = lane
        .fates
        .iter()
        .filter_map(|f| match f {
            Fate::Matched { wait, .. } => Some(wait.max(FLOOR)),
            _ => None,
        })
        .collect();
    w.sort_by(f64::total_cmp);
    w
}

/// The share of all arrivals matched within each wait: one line per lane,
/// on a log wait axis (what never matched keeps the line below 1).
pub fn cdf_chart(path: &Path, title: &str, lanes: &[&LaneResult]) -> Result<(), String> {
    let all: Vec<(String, Vec<f64>, usize)> = lanes
        .iter()
        .map(|l| (l.label.clone(), waits(l), l.fates.len().max(1)))
        .collect();
    let hi = all
        .iter()
        .filter_map(|(_, w, _)| w.last().copied())
        .fold(1.0f64, f64::max)
        * 1.3;
    let root = SVGBackend::new(path, (900, 560)).into_drawing_area();
    root.fill(&WHITE).map_err(err)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(
            format!("{title}: share of arrivals matched within a wait"),
            ("sans-serif", 22),
        )
        .margin(15)
        .x_label_area_size(45)
        .y_label_area_size(65)
        .build_cartesian_2d((FLOOR..hi).log_scale(), 0.0..1.0)
        .map_err(err)?;
    chart
        .configure_mesh()
        .x_desc("wait (simulated s, log)")
        .y_desc("share of arrivals matched")
        .x_label_formatter(&|v| {
            if *v >= 1.0 {
                format!("{v:.0}")
            } else {
                format!("{v:.2}")
            }
        })
        .y_label_formatter(&|v| format!("{:.0} %", v * 100.0))
        .draw()
        .map_err(err)?;
    for (i, (label, w, n)) in all.into_iter().enumerate() {
        let c = color(i);
        let mut points = Vec::with_capacity(w.len() + 1);
        points.push((FLOOR, 0.0));
        for (k, v) in w.iter().enumerate() {
            points.push((*v, (k + 1) as f64 / n as f64));
        }
        if let Some(&(_, last)) = points.last() {
            points.push((hi, last));
        }
        chart
            .draw_series(LineSeries::new(points, c.stroke_width(2)))
            .map_err(err)?
            .label(label)
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], c.stroke_width(2)));
    }
    legend(&mut chart, SeriesLabelPosition::LowerRight)?;
    root.present().map_err(err)?;
    Ok(())
}

/// Waits by group (x = 1, 2, …): p50 solid, p95 dashed, one colour per lane.
pub fn group_chart(
    path: &Path,
    title: &str,
    g: &Grouping,
    lanes: &[&LaneResult],
    outcome: &Outcome,
) -> Result<(), String> {
    let labels: Vec<String> = g.bands.iter().map(|b| b.label()).collect();
    let n = labels.len();
    let series: Vec<Series> = lanes
        .iter()
        .map(|l| {
            let rows = g.rows(l, &outcome.trace);
            let points = |f: fn(&crate::stats::Dist) -> f64| -> Vec<(f64, f64)> {
                rows.iter()
                    .enumerate()
                    .filter_map(|(b, s)| s.wait.map(|d| ((b + 1) as f64, f(&d).max(FLOOR))))
                    .collect()
            };
            (l.label.clone(), points(|d| d.p50), points(|d| d.p95))
        })
        .collect();
    let label = move |v: &f64| {
        let i = v.round();
        if (v - i).abs() < 1e-6 && i >= 1.0 {
            labels.get(i as usize - 1).cloned().unwrap_or_default()
        } else {
            String::new()
        }
    };
    wait_lines(
        path,
        (
            &format!("{title}: wait by {}, p50 (solid) and p95 (dashed)", g.title),
            g.title,
        ),
        0.5..n as f64 + 0.5,
        n,
        &label,
        series,
        "p50",
    )
}

/// Every chart of the study into `dir`: per rule set
/// `<rule set>-waits-cdf.svg`, `<rule set>-waits-by-list-size.svg` and
/// `<rule set>-waits-by-avoided-by.svg`. Returns their paths.
pub fn charts(dir: &Path, outcome: &Outcome) -> Result<Vec<PathBuf>, String> {
    let mut out = Vec::new();
    for (with, without) in pairs_of(&outcome.lanes) {
        let lanes = [with, without];
        let name = &with.rule_set;
        let path = dir.join(format!("{name}-waits-cdf.svg"));
        cdf_chart(&path, name, &lanes)?;
        out.push(path);
        for (file, g) in [
            ("list-size", Grouping::by_list_size(&outcome.population)),
            ("avoided-by", Grouping::by_avoided_by(&outcome.population)),
        ] {
            let path = dir.join(format!("{name}-waits-by-{file}.svg"));
            group_chart(&path, name, &g, &lanes, outcome)?;
            out.push(path);
        }
    }
    Ok(out)
}
