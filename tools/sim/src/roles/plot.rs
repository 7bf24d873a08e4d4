//! The role-queue study's charts, per rule set: the waits' distribution
//! per group of players in both lanes, the waits by role offered and by
//! number of roles offered (p50 and p95), and who waits over time.

use std::path::{Path, PathBuf};

use plotters::prelude::*;

use super::analysis::{by_count, by_group, pairs_of, queue_over_time, Summary};
use super::arrivals::Group;
use super::{LaneResult, Outcome, Trace, Variant};
use crate::oracle::trim_float;
use crate::outcome::Fate;
use crate::plot::{color, err, legend, linear_lines, wait_lines, Line, Series, FLOOR};

/// The matched waits of `lane`'s arrivals in `group`, sorted, and how
/// many arrivals the group has.
fn waits(lane: &LaneResult, trace: &Trace, group: Group) -> (Vec<f64>, usize) {
    let mut n = 0;
    let mut w = Vec::new();
    for (f, a) in lane.fates.iter().zip(&trace.arrivals) {
        if a.offer.group() != group {
            continue;
        }
        n += 1;
        if let Fate::Matched { wait, .. } = f {
            w.push(wait.max(FLOOR));
        }
    }
    w.sort_by(f64::total_cmp);
    (w, n)
}

/// The share of each group's arrivals matched within each wait, on a log
/// wait axis: one colour per group, the role queue solid, role-agnostic
/// dashed (what never matched keeps a line below 1).
pub fn cdf_chart(
    path: &Path,
    title: &str,
    lanes: &[&LaneResult],
    trace: &Trace,
) -> Result<(), String> {
    let mut all = Vec::new();
    for lane in lanes {
        for (i, g) in Group::ALL.into_iter().enumerate() {
            let (w, n) = waits(lane, trace, g);
            all.push((
                format!("{}, {}", g.label(), lane.variant.describe()),
                color(i),
                lane.variant == Variant::Agnostic,
                w,
                n.max(1),
            ));
        }
    }
    let hi = all
        .iter()
        .filter_map(|l| l.3.last().copied())
        .fold(1.0f64, f64::max)
        * 1.3;
    let root = SVGBackend::new(path, (900, 560)).into_drawing_area();
    root.fill(&WHITE).map_err(err)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(
            format!("{title}: share of each group's arrivals matched within a wait"),
            ("sans-serif", 20),
        )
        .margin(15)
        .x_label_area_size(45)
        .y_label_area_size(65)
        .build_cartesian_2d((FLOOR..hi).log_scale(), 0.0..1.0)
        .map_err(err)?;
    chart
        .configure_mesh()
        .x_desc("wait (simulated s, log); role queue solid, role-agnostic dashed")
        .y_desc("share of the group's arrivals matched")
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
    for (label, c, dashed, w, n) in all {
        let mut points = Vec::with_capacity(w.len() + 2);
        points.push((FLOOR, 0.0));
        for (k, v) in w.iter().enumerate() {
            points.push((*v, (k + 1) as f64 / n as f64));
        }
        if let Some(&(_, last)) = points.last() {
            points.push((hi, last));
        }
        let width = if dashed { 1 } else { 2 };
        let series = if dashed {
            chart
                .draw_series(DashedLineSeries::new(points, 6, 4, c.stroke_width(2)))
                .map_err(err)?
        } else {
            chart
                .draw_series(LineSeries::new(points, c.stroke_width(2)))
                .map_err(err)?
        };
        series.label(label).legend(move |(x, y)| {
            PathElement::new(vec![(x, y), (x + 20, y)], c.stroke_width(width))
        });
    }
    legend(&mut chart, SeriesLabelPosition::LowerRight)?;
    root.present().map_err(err)?;
    Ok(())
}

/// A series labelled `label`: p50 (solid) and p95 (dashed) of each row's
/// matched waits at x = 1, 2, …
fn series_of(label: String, rows: &[Summary]) -> Series {
    let pick = |f: fn(&crate::stats::Dist) -> f64| -> Vec<(f64, f64)> {
        rows.iter()
            .enumerate()
            .filter_map(|(i, s)| s.wait.map(|d| ((i + 1) as f64, f(&d).max(FLOOR))))
            .collect()
    };
    (label, pick(|d| d.p50), pick(|d| d.p95))
}

/// Waits by category (x = 1, 2, …, labelled `labels`): p50 solid, p95
/// dashed, one colour per lane.
fn category_chart(
    path: &Path,
    (caption, x_desc): (&str, &str),
    labels: Vec<String>,
    series: Vec<Series>,
) -> Result<(), String> {
    let n = labels.len();
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
        (caption, x_desc),
        0.5..n as f64 + 0.5,
        n,
        &label,
        series,
        "p50",
    )
}

/// Every chart of the study into `dir`: per rule set
/// `<rule set>-waits-cdf.svg`, `<rule set>-waits-by-role.svg`,
/// `<rule set>-waits-by-roles-offered.svg` and `<rule set>-queue.svg`.
/// Returns their paths.
pub fn charts(dir: &Path, outcome: &Outcome) -> Result<Vec<PathBuf>, String> {
    let trace = &outcome.trace;
    let mut out = Vec::new();
    for (q, a) in pairs_of(&outcome.lanes) {
        let lanes = [q, a];
        let name = &q.rule_set;
        let path = dir.join(format!("{name}-waits-cdf.svg"));
        cdf_chart(&path, name, &lanes, trace)?;
        out.push(path);

        let path = dir.join(format!("{name}-waits-by-role.svg"));
        let series = lanes
            .iter()
            .map(|l| {
                let rows: Vec<Summary> = by_group(l, trace).into_iter().map(|r| r.1).collect();
                series_of(l.label.clone(), &rows)
            })
            .collect();
        category_chart(
            &path,
            (
                &format!("{name}: wait by role offered (matched), p50 (solid) and p95 (dashed)"),
                "roles offered",
            ),
            Group::ALL.iter().map(|g| g.label()).collect(),
            series,
        )?;
        out.push(path);

        let path = dir.join(format!("{name}-waits-by-roles-offered.svg"));
        let series = lanes
            .iter()
            .map(|l| {
                let rows: Vec<Summary> = by_count(l, trace).into_iter().map(|r| r.1).collect();
                series_of(l.label.clone(), &rows)
            })
            .collect();
        category_chart(
            &path,
            (
                &format!(
                    "{name}: wait by number of roles offered (matched), p50 (solid) and p95 (dashed)"
                ),
                "number of roles offered",
            ),
            vec!["1".into(), "2".into()],
            series,
        )?;
        out.push(path);

        let path = dir.join(format!("{name}-queue.svg"));
        let step = (q.end / 120.0).ceil().max(1.0);
        let mut lines: Vec<Line> = Vec::new();
        for lane in lanes {
            let samples = queue_over_time(lane, trace, step);
            for (i, g) in Group::ALL.into_iter().enumerate() {
                lines.push((
                    format!("{}, {}", g.label(), lane.variant.describe()),
                    color(i),
                    samples.iter().map(|(t, n)| (*t, n[i])).collect(),
                    lane.variant == Variant::Agnostic,
                ));
            }
        }
        linear_lines(
            &path,
            &format!("{name}: players waiting, role queue solid, role-agnostic dashed"),
            (
                "simulated s",
                &format!("players waiting (mean over {} s)", trim_float(step)),
            ),
            q.end.max(a.end),
            lines,
        )?;
        out.push(path);
    }
    Ok(out)
}
