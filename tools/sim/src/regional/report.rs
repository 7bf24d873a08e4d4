//! The regions scenario's Markdown report.

use std::fmt::Write as _;
use std::path::Path;

use super::{by_file, cluster_rows, find, overall, ClusterRow};
use crate::outcome::{Run, Variant};
use crate::report::{checks_table, teams_table, ticking, write_header, Check, Context};
use crate::scenario::Scenario;
use crate::stats::Dist;

fn num(v: f64) -> String {
    if v >= 100.0 {
        format!("{v:.0}")
    } else if v >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

fn opt(d: Option<Dist>, f: impl Fn(Dist) -> f64) -> String {
    d.map_or_else(|| "–".into(), |d| num(f(d)))
}

/// The file stem of a rule set file: the charts' prefix.
pub fn stem(file: &str) -> String {
    Path::new(file)
        .file_stem()
        .map_or_else(|| "rules".into(), |s| s.to_string_lossy().into_owned())
}

/// The charts of rule set `file`: (waits, latencies).
pub fn chart_names(file: &str) -> (String, String) {
    let s = stem(file);
    (format!("{s}-waits.svg"), format!("{s}-latency.svg"))
}

/// All players, one row per variant.
pub fn overall_table(scenario: &Scenario, runs: &[&Run]) -> String {
    let mut out = String::new();
    out.push_str("| matcher | matches | matched | unmatched | wait mean | wait p50 | wait p95 | worst-member latency mean | p95 | max | matches mixing home regions |\n");
    out.push_str("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    for run in runs {
        let o = overall(scenario, run);
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} ({:.1} %) |",
            run.label,
            o.matches,
            o.matched,
            o.unmatched,
            opt(o.wait, |d| d.mean),
            opt(o.wait, |d| d.p50),
            opt(o.wait, |d| d.p95),
            opt(o.latency, |d| d.mean),
            opt(o.latency, |d| d.p95),
            opt(o.latency, |d| d.max),
            o.mixed,
            o.mixed as f64 * 100.0 / o.matches.max(1) as f64
        );
    }
    out
}

/// By home cluster: one row per cluster and variant.
pub fn cluster_table(scenario: &Scenario, runs: &[&Run]) -> String {
    let rows: Vec<(&Run, Vec<ClusterRow>)> = runs
        .iter()
        .map(|r| (*r, cluster_rows(scenario, r)))
        .collect();
    let clusters = rows.first().map_or(0, |(_, r)| r.len());
    let total = scenario.arrivals.len().max(1) as f64;
    let mut out = String::new();
    out.push_str("| home | players | matcher | unmatched | wait p50 | wait p95 (matched) | wait p95, unmatched counted: (R2)'s | worst-member latency mean | p95 | played away from home |\n");
    out.push_str("|---|---:|---|---:|---:|---:|---:|---:|---:|---:|\n");
    for c in 0..clusters {
        for (i, (run, rows)) in rows.iter().enumerate() {
            let r = &rows[c];
            let matched = r.wait.map_or(0, |d| d.n);
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {:.1} % |",
                if i == 0 { r.region.as_str() } else { "" },
                if i == 0 {
                    format!("{} ({:.1} %)", r.players, r.players as f64 * 100.0 / total)
                } else {
                    String::new()
                },
                run.label,
                r.unmatched,
                opt(r.wait, |d| d.p50),
                opt(r.wait, |d| d.p95),
                r.wait_p95_all.map_or_else(
                    || "–".into(),
                    |x| if x.is_finite() {
                        num(x)
                    } else {
                        "unmatched".into()
                    }
                ),
                opt(r.latency, |d| d.mean),
                opt(r.latency, |d| d.p95),
                r.away as f64 * 100.0 / matched.max(1) as f64
            );
        }
    }
    out
}

/// The whole report. `images` links the charts (the file); without it, it
/// is the terminal version.
pub fn render(
    ctx: &Context,
    scenario: &Scenario,
    runs: &[Run],
    checks: &[Check],
    images: bool,
) -> String {
    let mut out = String::new();
    write_header(&mut out, ctx, runs, &ticking(ctx), "matcher");
    if let Some(model) = scenario.geo.as_ref().and_then(|g| g.model.as_ref()) {
        out.push_str("## Latency model\n\n");
        out.push_str(&model.markdown());
        out.push('\n');
    }

    out.push_str("## Done criteria\n\n");
    out.push_str("Each rule set's world against its best-region-only variant on the same trace: (R1) mean worst-member latency per match, (R2) the p95 wait of each of the two smallest home clusters (its unmatched players counted as the longest waits), (R3) no match of the regions world with a member over `maxLatencyCapMs` (from the trace's latencies, and the core's records agreeing). The issue's criteria are the FIFO world's; a rated world's are shown for comparison.\n\n");
    if checks.is_empty() {
        out.push_str("Nothing to check: no regions world was simulated.\n\n");
    } else {
        out.push_str(&checks_table(checks));
        out.push('\n');
    }

    out.push_str("## How a match's latency is counted\n\n");
    out.push_str("A match's latency is its **worst member's** latency where it plays, from the trace's latencies (the latencies each player's client sent). **regions**: the region the core chose (the record's `region`; its `latencies` and `worstLatency` are checked against the trace). **best region only**: the region of the world the match formed in. **latency ignored**: computed offline, the best region for that match, i.e. the minimum over regions of the worst member's latency (ties: the lower mean), whatever the cap. Waits are in simulated seconds, from each join (a party's create) to its match. Per home cluster, each matched player counts its own match's worst latency; *played away from home* is the share of its matched players whose match plays in another region; *wait p95 (matched)* is over its matched players only, while (R2) compares *wait p95, unmatched counted* (docs/simulator.md, \"Criteria: one definition each\").\n\n");

    for (file, list) in by_file(runs) {
        let _ = writeln!(out, "## {}\n", stem(&file));
        if let Some(regions) = find(&list, Variant::Regions) {
            if let Some((_, _, world)) = ctx.rule_sets.iter().find(|(l, _, _)| *l == regions.label)
            {
                let _ = writeln!(out, "`{file}`: {world}.\n");
            }
        }
        out.push_str("### All players\n\n");
        out.push_str(&overall_table(scenario, &list));
        out.push('\n');
        out.push_str("### By home cluster\n\n");
        if images {
            let (waits, latency) = chart_names(&file);
            let _ = writeln!(
                out,
                "![waits by home cluster]({waits})\n\n![worst-member latency by home cluster]({latency})\n"
            );
        }
        out.push_str(&cluster_table(scenario, &list));
        out.push('\n');
        let owned: Vec<Run> = list.iter().map(|r| (*r).clone()).collect();
        if scenario.has_parties() || owned.iter().any(|r| r.shape.teams > 1) {
            out.push_str("### Parties and teams\n\n");
            out.push_str(&teams_table(scenario, &owned));
            out.push('\n');
        }
    }

    out.push_str("## Run diagnostics\n\n");
    for run in runs.iter().filter(|r| !r.notes.is_empty()) {
        let _ = writeln!(out, "- **{}**", run.label);
        for note in &run.notes {
            let _ = writeln!(out, "  - {note}");
        }
    }
    out
}
