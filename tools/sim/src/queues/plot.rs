//! The several-queues study's charts, per rule set: the waits by number of
//! queues (p50 and p95), and the distribution of the waits by number of
//! queues and of the single-queue players' waits in each lane.

use std::path::{Path, PathBuf};

use plotters::prelude::*;

use super::analysis::{by_queues, lanes_of};
use super::{Arrival, LaneResult, Outcome, Trace};
use crate::outcome::Fate;
use crate::plot::{color, err, legend, wait_lines, Series, FLOOR};

/// One line of a distribution chart: its label, the matched waits
/// (sorted) and how many arrivals it stands for.
type Cdf = (String, Vec<f64>, usize);

/// The line of the arrivals of `lane` that `which` selects.
fn cdf_of(
    label: String,
    lane: &LaneResult,
    trace: &Trace,
    which: impl Fn(&Arrival) -> bool,
) -> Cdf {
    let mut waits = Vec::new();
    let mut n = 0;
    for (a, fate) in lane.fates.iter().enumerate() {
        let Some(fate) = fate else { continue };
        if !which(&trace.arrivals[a]) || *fate == Fate::Refused {
            continue;
        }
        n += 1;
        if let Fate::Matched { wait, .. } = fate {
            waits.push(wait.max(FLOOR));
        }
    }
    waits.sort_by(f64::total_cmp);
    (label, waits, n.max(1))
}

/// The share of arrivals matched within each wait, one line each, on a log
/// wait axis (what never matched keeps a line below 1).
pub fn cdf_chart(path: &Path, caption: &str, lines: Vec<Cdf>) -> Result<(), String> {
    let hi = lines
        .iter()
        .filter_map(|(_, w, _)| w.last().copied())
        .fold(1.0f64, f64::max)
        * 1.3;
    let root = SVGBackend::new(path, (900, 560)).into_drawing_area();
    root.fill(&WHITE).map_err(err)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(caption, ("sans-serif", 22))
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
    for (i, (label, w, n)) in lines.into_iter().enumerate() {
        let c = color(i);
        let mut points = Vec::with_capacity(w.len() + 2);
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

/// Waits by number of queues (x = 1, 2, 3): p50 solid, p95 dashed, one
/// colour per lane (the lanes that join multi-queue players).
pub fn queues_chart(
    path: &Path,
    title: &str,
    lanes: &[&LaneResult],
    trace: &Trace,
) -> Result<(), String> {
    let n = trace.mix.len();
    let series: Vec<Series> = lanes
        .iter()
        .map(|l| {
            let rows = by_queues(l, trace);
            let points = |f: fn(&super::analysis::Summary) -> Option<f64>| -> Vec<(f64, f64)> {
                rows.iter()
                    .filter_map(|(k, s)| {
                        f(s).filter(|v| v.is_finite())
                            .map(|v| (*k as f64, v.max(FLOOR)))
                    })
                    .collect()
            };
            (
                l.variant.describe().to_owned(),
                points(|s| s.p50_all),
                points(|s| s.p95_all),
            )
        })
        .collect();
    wait_lines(
        path,
        (
            &format!("{title}: wait by number of queues, p50 (solid) and p95 (dashed)"),
            "worlds the player queues in (one queue each: the same players, in their first)",
        ),
        0.5..n as f64 + 0.5,
        n,
        &|v: &f64| {
            let i = v.round();
            if (v - i).abs() < 1e-6 && i >= 1.0 {
                format!("{i:.0}")
            } else {
                String::new()
            }
        },
        series,
        "p50",
    )
}

/// Every chart of the study into `dir`: per rule set
/// `<rule set>-waits-by-queues.svg`, `<rule set>-waits-cdf.svg` (by number
/// of queues, several queues) and `<rule set>-single-queue-cdf.svg` (the
/// single-queue players in each lane). Returns their paths.
pub fn charts(dir: &Path, outcome: &Outcome) -> Result<Vec<PathBuf>, String> {
    let trace = &outcome.trace;
    let mut out = Vec::new();
    for [s, o, x] in lanes_of(&outcome.lanes) {
        let name = &s.rule_set;
        let path = dir.join(format!("{name}-waits-by-queues.svg"));
        queues_chart(&path, name, &[s, o], trace)?;
        out.push(path);
        let path = dir.join(format!("{name}-waits-cdf.svg"));
        let lines = (1..=trace.mix.len())
            .map(|k| {
                let label = format!("{k} queue{}", if k == 1 { "" } else { "s" });
                cdf_of(label, s, trace, |a| a.queues() == k)
            })
            .collect();
        cdf_chart(
            &path,
            &format!("{name}, several queues: share matched within a wait"),
            lines,
        )?;
        out.push(path);
        let path = dir.join(format!("{name}-single-queue-cdf.svg"));
        let lines = [s, o, x]
            .iter()
            .map(|l| cdf_of(l.variant.describe().into(), l, trace, |a| a.queues() == 1))
            .collect();
        cdf_chart(
            &path,
            &format!("{name}: single-queue players matched within a wait"),
            lines,
        )?;
        out.push(path);
    }
    Ok(out)
}
