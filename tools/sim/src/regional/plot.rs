//! The regions scenario's charts: per home cluster, the waits (p50 and
//! p95) and the worst-member latency of the players' matches (mean and
//! p95), one colour per variant.

use std::path::Path;

use plotters::prelude::*;

use super::cluster_rows;
use crate::outcome::Run;
use crate::plot::{color, err, legend, solid_and_dashed, wait_lines, Series, FLOOR};
use crate::scenario::Scenario;
use crate::stats::Dist;

/// One series per run: `solid` and p95 of `pick` per cluster (x = 1, 2, ...).
fn series(
    scenario: &Scenario,
    runs: &[&Run],
    pick: fn(&super::ClusterRow) -> Option<Dist>,
    solid: fn(&Dist) -> f64,
    floor: f64,
) -> Vec<Series> {
    runs.iter()
        .map(|r| {
            let rows = cluster_rows(scenario, r);
            let points = |f: fn(&Dist) -> f64| -> Vec<(f64, f64)> {
                rows.iter()
                    .enumerate()
                    .filter_map(|(c, row)| pick(row).map(|d| ((c + 1) as f64, f(&d).max(floor))))
                    .collect()
            };
            (r.label.clone(), points(solid), points(|d| d.p95))
        })
        .collect()
}

fn region_names(scenario: &Scenario) -> Vec<String> {
    scenario
        .geo
        .as_ref()
        .map(|g| g.regions.clone())
        .unwrap_or_default()
}

/// Waits by home cluster: p50 (solid) and p95 (dashed), log scale.
pub fn waits_chart(
    path: &Path,
    title: &str,
    scenario: &Scenario,
    runs: &[&Run],
) -> Result<(), String> {
    let names = region_names(scenario);
    let n = names.len();
    let label = move |v: &f64| cluster_label(&names, *v);
    wait_lines(
        path,
        (
            &format!("{title}: wait by home cluster, p50 (solid) and p95 (dashed)"),
            "home region of the players",
        ),
        0.5..n as f64 + 0.5,
        n,
        &label,
        series(scenario, runs, |r| r.wait, |d| d.p50, FLOOR),
        "p50",
    )
}

fn cluster_label(names: &[String], v: f64) -> String {
    let i = v.round();
    if (v - i).abs() < 1e-6 && i >= 1.0 {
        names.get(i as usize - 1).cloned().unwrap_or_default()
    } else {
        String::new()
    }
}

/// The worst-member latency of the players' matches by home cluster: mean
/// (solid) and p95 (dashed), linear scale.
pub fn latency_chart(
    path: &Path,
    title: &str,
    scenario: &Scenario,
    runs: &[&Run],
) -> Result<(), String> {
    let names = region_names(scenario);
    let n = names.len();
    let lines = series(scenario, runs, |r| r.latency, |d| d.mean, 0.0);
    let top = lines
        .iter()
        .flat_map(|(_, a, b)| a.iter().chain(b.iter()).map(|p| p.1))
        .fold(0.0f64, f64::max);
    let root = SVGBackend::new(path, (900, 600)).into_drawing_area();
    root.fill(&WHITE).map_err(err)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(
            format!("{title}: worst-member latency by home cluster, mean (solid) and p95 (dashed)"),
            ("sans-serif", 20),
        )
        .margin(15)
        .x_label_area_size(45)
        .y_label_area_size(65)
        .build_cartesian_2d(0.5..n as f64 + 0.5, 0.0..(top * 1.25).max(10.0))
        .map_err(err)?;
    chart
        .configure_mesh()
        .x_desc("home region of the players")
        .y_desc("worst member's latency in the match (ms)")
        .x_labels(n)
        .x_label_formatter(&|v| cluster_label(&names, *v))
        .y_label_formatter(&|v| format!("{v:.0}"))
        .draw()
        .map_err(err)?;
    for (i, (label, mean, p95)) in lines.into_iter().enumerate() {
        let c = color(i);
        solid_and_dashed(&mut chart, format!("{label} mean / p95"), c, &mean, &p95)?;
    }
    legend(&mut chart, SeriesLabelPosition::UpperLeft)?;
    root.present().map_err(err)?;
    Ok(())
}

/// Both charts of every rule set into `dir`; returns the files written.
pub fn charts(
    dir: &Path,
    scenario: &Scenario,
    runs: &[Run],
) -> Result<Vec<std::path::PathBuf>, String> {
    let mut written = Vec::new();
    for (file, list) in super::by_file(runs) {
        let (waits, latency) = super::report::chart_names(&file);
        let title = super::report::stem(&file);
        waits_chart(&dir.join(&waits), &title, scenario, &list)?;
        latency_chart(&dir.join(&latency), &title, scenario, &list)?;
        written.push(dir.join(waits));
        written.push(dir.join(latency));
    }
    Ok(written)
}
