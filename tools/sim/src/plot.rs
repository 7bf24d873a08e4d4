//! The report's charts, drawn with plotters' SVG backend: the quality/wait
//! frontier, the waits per rating decile, per party size and per
//! acceptance probability.

use std::path::Path;

use plotters::prelude::*;

use crate::oracle::trim_float;
use crate::outcome::{Kind, Run};
use crate::report::{frontier, party_rows, summarize, Deciles};
use crate::scenario::Scenario;

/// Values below this are drawn at it (log axes have no zero).
pub(crate) const FLOOR: f64 = 0.01;

pub(crate) fn color(i: usize) -> RGBColor {
    const COLORS: [RGBColor; 8] = [
        RGBColor(0, 114, 178),
        RGBColor(213, 94, 0),
        RGBColor(0, 158, 115),
        RGBColor(204, 121, 167),
        RGBColor(86, 180, 233),
        RGBColor(230, 159, 0),
        RGBColor(120, 120, 120),
        RGBColor(240, 228, 66),
    ];
    COLORS[i % COLORS.len()]
}

/// A log axis range around `values` (positive, floored at [`FLOOR`]).
fn log_range(values: impl Iterator<Item = f64>) -> std::ops::Range<f64> {
    let (lo, hi) = values
        .map(|v| v.max(FLOOR))
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
            (lo.min(v), hi.max(v))
        });
    if lo.is_finite() && hi.is_finite() {
        (lo / 1.6)..(hi * 1.6)
    } else {
        FLOOR..1.0
    }
}

pub(crate) fn err(e: impl std::fmt::Display) -> String {
    format!("drawing a chart: {e}")
}

/// A pair of series in colour `c`, labelled once: `solid` as a line with
/// dots (a p50 or a mean), `dashed` as a dashed line with rings (its p95).
pub(crate) fn solid_and_dashed<'a, DB, X, Y>(
    chart: &mut ChartContext<'a, DB, Cartesian2d<X, Y>>,
    label: String,
    c: RGBColor,
    solid: &[(f64, f64)],
    dashed: &[(f64, f64)],
) -> Result<(), String>
where
    DB: DrawingBackend + 'a,
    X: Ranged<ValueType = f64>,
    Y: Ranged<ValueType = f64>,
{
    chart
        .draw_series(LineSeries::new(solid.to_vec(), c.stroke_width(2)))
        .map_err(err)?
        .label(label)
        .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], c.stroke_width(2)));
    chart
        .draw_series(solid.iter().map(|p| Circle::new(*p, 3, c.filled())))
        .map_err(err)?;
    chart
        .draw_series(DashedLineSeries::new(
            dashed.to_vec(),
            6,
            4,
            c.stroke_width(2),
        ))
        .map_err(err)?;
    chart
        .draw_series(dashed.iter().map(|p| Circle::new(*p, 3, c.stroke_width(1))))
        .map_err(err)?;
    Ok(())
}

/// The series' legend, in every chart's style, at `position`.
pub(crate) fn legend<'a, DB, X, Y>(
    chart: &mut ChartContext<'a, DB, Cartesian2d<X, Y>>,
    position: SeriesLabelPosition,
) -> Result<(), String>
where
    DB: DrawingBackend + 'a,
    X: Ranged,
    Y: Ranged,
{
    chart
        .configure_series_labels()
        .position(position)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .label_font(("sans-serif", 14))
        .draw()
        .map_err(err)
}

/// Mean wait against mean spread: the oracle's curve (one point per T),
/// every rule set and FIFO as a point.
pub fn frontier_chart(path: &Path, runs: &[Run]) -> Result<(), String> {
    let f = frontier(runs);
    let others: Vec<(String, bool, f64, f64)> = runs
        .iter()
        .filter(|r| !matches!(r.kind, Kind::Oracle { .. }))
        .filter_map(|r| {
            let s = summarize(r);
            Some((
                r.label.clone(),
                r.kind == Kind::Fifo,
                s.wait?.mean.max(FLOOR),
                s.spread?.mean.max(FLOOR),
            ))
        })
        .collect();
    let xs = f
        .points()
        .iter()
        .map(|p| p.mean_wait)
        .chain(others.iter().map(|o| o.2));
    let ys = f
        .points()
        .iter()
        .map(|p| p.mean_spread)
        .chain(others.iter().map(|o| o.3));
    let (x_range, y_range) = (log_range(xs), log_range(ys));

    let root = SVGBackend::new(path, (900, 600)).into_drawing_area();
    root.fill(&WHITE).map_err(err)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(
            "Quality/wait frontier: mean spread against mean wait",
            ("sans-serif", 22),
        )
        .margin(15)
        .x_label_area_size(45)
        .y_label_area_size(65)
        .build_cartesian_2d(x_range.log_scale(), y_range.log_scale())
        .map_err(err)?;
    chart
        .configure_mesh()
        .x_desc("mean wait (simulated s, log)")
        .y_desc("mean spread (rating points, log)")
        .x_label_formatter(&|v| trim_axis(*v))
        .y_label_formatter(&|v| trim_axis(*v))
        .draw()
        .map_err(err)?;

    let oracle: Vec<(f64, f64)> = f
        .points()
        .iter()
        .map(|p| (p.mean_wait.max(FLOOR), p.mean_spread.max(FLOOR)))
        .collect();
    let grey = RGBColor(90, 90, 90);
    chart
        .draw_series(LineSeries::new(oracle.clone(), grey.stroke_width(2)))
        .map_err(err)?
        .label("oracle frontier (batch every T s)")
        .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], grey.stroke_width(2)));
    chart
        .draw_series(f.points().iter().map(|p| {
            EmptyElement::at((p.mean_wait.max(FLOOR), p.mean_spread.max(FLOOR)))
                + Circle::new((0, 0), 3, grey.filled())
                + Text::new(
                    format!("T={}s", trim_float(p.period)),
                    (6, -14),
                    ("sans-serif", 13),
                )
        }))
        .map_err(err)?;
    for (i, (label, is_fifo, wait, spread)) in others.into_iter().enumerate() {
        let c = if is_fifo { RED } else { color(i) };
        let point = (wait, spread);
        if is_fifo {
            chart
                .draw_series(std::iter::once(Cross::new(point, 7, c.stroke_width(3))))
                .map_err(err)?
                .label(label.clone())
                .legend(move |(x, y)| Cross::new((x + 10, y), 5, c.stroke_width(3)));
        } else {
            chart
                .draw_series(std::iter::once(TriangleMarker::new(point, 8, c.filled())))
                .map_err(err)?
                .label(label.clone())
                .legend(move |(x, y)| TriangleMarker::new((x + 10, y), 6, c.filled()));
        }
        chart
            .draw_series(std::iter::once(
                EmptyElement::at(point) + Text::new(label, (10, 4), ("sans-serif", 13)),
            ))
            .map_err(err)?;
    }
    legend(&mut chart, SeriesLabelPosition::UpperRight)?;
    root.present().map_err(err)?;
    Ok(())
}

/// A run's label with its p50 and p95 points.
pub(crate) type Series = (String, Vec<(f64, f64)>, Vec<(f64, f64)>);

/// Wait p50 (solid) and p95 (dashed) per rating decile, one colour per
/// rule set and FIFO (and the oracle at the period nearest each rule set's
/// mean wait is left to the tables, to keep the chart readable).
pub fn decile_chart(path: &Path, scenario: &Scenario, runs: &[Run]) -> Result<(), String> {
    let deciles = Deciles::new(scenario);
    let series: Vec<Series> = runs
        .iter()
        .filter(|r| !matches!(r.kind, Kind::Oracle { .. }))
        .map(|r| {
            let rows = deciles.rows(r);
            let pick = |f: fn(&crate::stats::Dist) -> f64| -> Vec<(f64, f64)> {
                rows.iter()
                    .enumerate()
                    .filter_map(|(d, row)| row.wait.map(|w| ((d + 1) as f64, f(&w).max(FLOOR))))
                    .collect()
            };
            (r.label.clone(), pick(|w| w.p50), pick(|w| w.p95))
        })
        .collect();
    wait_lines(
        path,
        (
            "Wait by rating decile: p50 (solid) and p95 (dashed)",
            "rating decile (1 = lowest rated tenth)",
        ),
        0.5..10.5,
        10,
        &|v| format!("{v:.0}"),
        series,
        "p50",
    )
}

/// Waits per party size: mean (solid) and p95 (dashed), one colour per
/// rule set and FIFO. Only for a trace with parties.
pub fn party_chart(path: &Path, scenario: &Scenario, runs: &[Run]) -> Result<(), String> {
    let series: Vec<Series> = runs
        .iter()
        .filter(|r| !matches!(r.kind, Kind::Oracle { .. }))
        .map(|r| {
            let rows = party_rows(scenario, r);
            let pick = |f: fn(&crate::stats::Dist) -> f64| -> Vec<(f64, f64)> {
                rows.iter()
                    .filter_map(|row| row.wait.map(|w| (f64::from(row.size), f(&w).max(FLOOR))))
                    .collect()
            };
            (r.label.clone(), pick(|w| w.mean), pick(|w| w.p95))
        })
        .collect();
    let largest = f64::from(scenario.largest_party());
    wait_lines(
        path,
        (
            "Wait by party size: mean (solid) and p95 (dashed)",
            "players arriving together (1 = solo)",
        ),
        0.5..largest + 0.5,
        scenario.largest_party() as usize,
        &|v| format!("{v:.0}"),
        series,
        "mean",
    )
}

/// Waits per acceptance probability of each ready-check rule set: mean
/// (solid) and p95 (dashed), and the same rule set without its ready check
/// as a flat line. Only when a run has a ready check.
pub fn ready_chart(path: &Path, runs: &[Run]) -> Result<(), String> {
    let mut files: Vec<&str> = Vec::new();
    for r in runs.iter().filter(|r| r.ready.is_some()) {
        if let Kind::RuleSet { file, .. } = &r.kind {
            if !files.contains(&file.as_str()) {
                files.push(file);
            }
        }
    }
    let of_file = |r: &&Run, f: &str| matches!(&r.kind, Kind::RuleSet { file, .. } if file == f);
    let lowest = runs
        .iter()
        .filter_map(|r| r.ready.as_ref().map(|s| s.accept_probability))
        .fold(1.0f64, f64::min);
    let x = (lowest - 0.05).max(0.0)..1.05;
    let mut series: Vec<Series> = Vec::new();
    for f in files {
        let mut mean = Vec::new();
        let mut p95 = Vec::new();
        for r in runs.iter().filter(|r| of_file(r, f)) {
            let Some(w) = summarize(r).wait else { continue };
            match &r.ready {
                Some(s) => {
                    mean.push((s.accept_probability, w.mean.max(FLOOR)));
                    p95.push((s.accept_probability, w.p95.max(FLOOR)));
                }
                None => series.push((
                    r.label.clone(),
                    vec![(x.start, w.mean.max(FLOOR)), (x.end, w.mean.max(FLOOR))],
                    vec![(x.start, w.p95.max(FLOOR)), (x.end, w.p95.max(FLOOR))],
                )),
            }
        }
        mean.sort_by(|a, b| a.0.total_cmp(&b.0));
        p95.sort_by(|a, b| a.0.total_cmp(&b.0));
        series.push((format!("{f} with its ready check"), mean, p95));
    }
    wait_lines(
        path,
        (
            "Wait by acceptance probability: mean (solid) and p95 (dashed)",
            "probability that each participant accepts a proposal",
        ),
        x,
        10,
        &|v| format!("{v:.2}"),
        series,
        "mean",
    )
}

/// One line per series (solid: `solid`, dashed: p95) on a log wait axis,
/// under `caption`, with `x_desc` along the x axis.
pub(crate) fn wait_lines(
    path: &Path,
    (caption, x_desc): (&str, &str),
    x: std::ops::Range<f64>,
    x_labels: usize,
    x_fmt: &dyn Fn(&f64) -> String,
    series: Vec<Series>,
    solid: &str,
) -> Result<(), String> {
    let y_range = log_range(
        series
            .iter()
            .flat_map(|(_, a, b)| a.iter().chain(b.iter()).map(|p| p.1)),
    );

    let root = SVGBackend::new(path, (900, 600)).into_drawing_area();
    root.fill(&WHITE).map_err(err)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(caption, ("sans-serif", 22))
        .margin(15)
        .x_label_area_size(45)
        .y_label_area_size(65)
        .build_cartesian_2d(x, y_range.log_scale())
        .map_err(err)?;
    chart
        .configure_mesh()
        .x_desc(x_desc)
        .y_desc("wait (simulated s, log)")
        .x_labels(x_labels)
        .x_label_formatter(x_fmt)
        .y_label_formatter(&|v| trim_axis(*v))
        .draw()
        .map_err(err)?;
    for (i, (label, p50, p95)) in series.into_iter().enumerate() {
        let c = if label.starts_with("FIFO") {
            RED
        } else {
            color(i)
        };
        solid_and_dashed(&mut chart, format!("{label} {solid} / p95"), c, &p50, &p95)?;
    }
    legend(&mut chart, SeriesLabelPosition::UpperLeft)?;
    root.present().map_err(err)?;
    Ok(())
}

/// One line on a linear chart: label, colour, points, dashed.
pub(crate) type Line = (String, RGBColor, Vec<(f64, f64)>, bool);

/// A line chart on linear axes from 0 (x up to `x_max`, y up to the
/// highest point + 10 %).
pub(crate) fn linear_lines(
    path: &Path,
    caption: &str,
    (x_desc, y_desc): (&str, &str),
    x_max: f64,
    series: Vec<Line>,
) -> Result<(), String> {
    let y_max = series
        .iter()
        .flat_map(|(_, _, pts, _)| pts.iter().map(|p| p.1))
        .fold(1.0f64, f64::max)
        * 1.1;
    let root = SVGBackend::new(path, (900, 560)).into_drawing_area();
    root.fill(&WHITE).map_err(err)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(caption, ("sans-serif", 22))
        .margin(15)
        .x_label_area_size(45)
        .y_label_area_size(65)
        .build_cartesian_2d(0.0..x_max.max(1.0), 0.0..y_max)
        .map_err(err)?;
    chart
        .configure_mesh()
        .x_desc(x_desc)
        .y_desc(y_desc)
        .x_label_formatter(&|v| format!("{v:.0}"))
        .y_label_formatter(&|v| {
            if y_max <= 2.0 {
                format!("{v:.1}")
            } else {
                format!("{v:.0}")
            }
        })
        .draw()
        .map_err(err)?;
    for (label, c, pts, dashed) in series {
        if dashed {
            chart
                .draw_series(DashedLineSeries::new(pts, 6, 4, c.stroke_width(2)))
                .map_err(err)?
                .label(label)
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 20, y)], c.stroke_width(1))
                });
        } else {
            chart
                .draw_series(LineSeries::new(pts, c.stroke_width(2)))
                .map_err(err)?
                .label(label)
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 20, y)], c.stroke_width(2))
                });
        }
    }
    legend(&mut chart, SeriesLabelPosition::UpperRight)?;
    root.present().map_err(err)?;
    Ok(())
}

fn trim_axis(v: f64) -> String {
    if v >= 10.0 {
        format!("{v:.0}")
    } else if v >= 1.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}
