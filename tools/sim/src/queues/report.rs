//! The several-queues study's Markdown report.

use std::fmt::Write as _;

use super::analysis::{
    by_queues, first_world_share, lanes_of, matches_per_world, ratio_of, summarize, wait_text,
    Summary, SINGLES_VS_BASELINE, THREE_VS_ONE,
};
use super::{LaneResult, Outcome};
use crate::oracle::trim_float;
use crate::report::{checks_table, Check, TICK_SECONDS};

/// Facts about the run for the report's header.
#[derive(Debug, Clone)]
pub struct Context {
    pub title: String,
    pub seed: u64,
    pub drain: f64,
    pub speed: f64,
    pub measured_speed: f64,
    pub clock_error: Option<f64>,
    pub wall_seconds: f64,
    pub command: String,
    pub core: Option<String>,
    /// The charts, as file names next to the report.
    pub charts: Vec<String>,
}

fn ratio(a: Option<f64>, b: Option<f64>) -> String {
    ratio_of(a, b).map_or_else(|| "–".into(), |r| format!("{r:.2}x"))
}

fn pct(v: Option<f64>) -> String {
    v.map_or_else(|| "–".into(), |v| format!("{:.0} %", 100.0 * v))
}

fn header(out: &mut String, ctx: &Context, outcome: &Outcome) {
    let trace = &outcome.trace;
    let counts = trace.counts();
    let _ = writeln!(out, "# {}\n", ctx.title);
    let mix: Vec<String> = counts
        .iter()
        .enumerate()
        .map(|(k, n)| {
            format!(
                "{n} in {} ({:.0} % asked)",
                if k == 0 {
                    "1 world".to_owned()
                } else {
                    format!("{} worlds", k + 1)
                },
                100.0 * trace.mix[k]
            )
        })
        .collect();
    let _ = writeln!(
        out,
        "- **Trace:** Poisson arrivals at {}/s for {} min, every arrival a new player who joins once, solo: {} arrivals, {}; each player's worlds drawn one after the other among the group's {} not drawn yet, {} (the first is the one the player queues in alone in the comparison lanes); seed {}",
        trim_float(trace.rate),
        trim_float(trace.seconds / 60.0),
        trace.arrivals.len(),
        mix.join(", "),
        trace.worlds,
        if trace.popularity.windows(2).all(|w| (w[0] - w[1]).abs() < 1e-9) {
            "uniformly".to_owned()
        } else {
            let shares: Vec<String> = trace
                .popularity
                .iter()
                .map(|p| format!("{:.0} %", 100.0 * p))
                .collect();
            format!("by popularity {} (the worlds in the group's order)", shares.join(" / "))
        },
        ctx.seed
    );
    let _ = writeln!(
        out,
        "- **Matching:** matcher tick every {} s (simulated; it visits every world), instant match on, drain {} s after the last arrival",
        trim_float(TICK_SECONDS),
        trim_float(ctx.drain)
    );
    let _ = writeln!(
        out,
        "- **Time compression:** one redis-server per lane under libfaketime at x{} (measured x{:.2} through `redis.call('TIME')`{}); wall time {:.1} s",
        trim_float(ctx.speed),
        ctx.measured_speed,
        ctx.clock_error.map_or_else(String::new, |e| format!(
            ", clock model off by {e:+.3} s simulated at the end"
        )),
        ctx.wall_seconds
    );
    let _ = writeln!(out, "- **Command:** `{}`", ctx.command);
    if let Some(core) = &ctx.core {
        let _ = writeln!(out, "- **Core:** git {core}");
    }
    for l in &outcome.lanes {
        let _ = writeln!(
            out,
            "- **{}** (`{}`): {} ({})",
            l.label,
            l.file,
            l.description,
            l.worlds.join(", ")
        );
    }
    out.push('\n');
    for l in &outcome.lanes {
        if let Some(why) = &l.lagging {
            let _ = writeln!(
                out,
                "> **TOO SLOW:** {} did not keep up with x{}: {why}. Its numbers are distorted; rerun with a lower `--speed`.\n",
                l.label,
                trim_float(ctx.speed)
            );
        }
        if l.failures > 0 {
            let _ = writeln!(
                out,
                "> **ERRORS:** {} calls of {} failed (see *Run diagnostics*).\n",
                l.failures, l.label
            );
        }
    }
}

const HOW: &str = "Each rule set is played three times on the same trace, each on its own server: **several queues** (each player's one ticket joins all its worlds in one call, `JoinInput::also`; the first match in any of them takes it out of all), **one queue each** (the same players, each in the first of its worlds only: every world gets a third of the arrivals, all single-queue; the baseline of (Q2)) and **single-queue players only** (the same trace without the players who queue in more than one world: fewer players, shown for the other reading of \"the run without multi-queue players\"). Waits are simulated seconds from the join to the match. *p50* and *p95* count the players never matched (still waiting at the end) as waiting longer than anyone matched (`unmatched` when the percentile falls among them); *mean* is over the matched. The groups are the trace's: *k queues* are the players who queue in k worlds in the lane with several queues, the same players (each in one world) in the others.";

fn cells(s: &Summary) -> String {
    format!(
        "{} | {} ({}) | {} | {} | {}",
        s.arrivals,
        s.matched,
        s.unmatched + s.refused,
        wait_text(s.p50_all),
        wait_text(s.p95_all),
        wait_text(s.wait.map(|d| d.mean)),
    )
}

fn queues_table(out: &mut String, [s, o, _]: [&LaneResult; 3], outcome: &Outcome) {
    let trace = &outcome.trace;
    let (rs, ro) = (by_queues(s, trace), by_queues(o, trace));
    let one = rs.first().and_then(|r| r.1.p50_all);
    out.push_str("| players | several queues: arrivals | matched (unmatched) | p50 | p95 | mean | p50 vs 1 queue | one queue each: arrivals | matched (unmatched) | p50 | p95 | mean |\n");
    out.push_str("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    for ((k, a), (_, b)) in rs.iter().zip(&ro) {
        let _ = writeln!(
            out,
            "| {k} queue{} | {} | {} | {} |",
            if *k == 1 { "" } else { "s" },
            cells(a),
            ratio(a.p50_all, one),
            cells(b)
        );
    }
    let all = |l| summarize(l, trace, |_| true);
    let _ = writeln!(
        out,
        "| everyone | {} | | {} |\n",
        cells(&all(s)),
        cells(&all(o))
    );
}

fn singles_table(out: &mut String, lanes: [&LaneResult; 3], outcome: &Outcome) {
    let trace = &outcome.trace;
    let rows: Vec<Summary> = lanes
        .iter()
        .map(|l| summarize(l, trace, |a| a.queues() == 1))
        .collect();
    let base = rows[1].p50_all;
    out.push_str(
        "| lane | arrivals | matched (unmatched) | p50 | p95 | mean | p50 vs one queue each |\n",
    );
    out.push_str("|---|---:|---:|---:|---:|---:|---:|\n");
    for (l, s) in lanes.iter().zip(&rows) {
        let _ = writeln!(
            out,
            "| {} | {} | {} |",
            l.variant.describe(),
            cells(s),
            ratio(s.p50_all, base)
        );
    }
    out.push('\n');
}

fn singles_by_world(out: &mut String, lanes: [&LaneResult; 3], outcome: &Outcome) {
    let trace = &outcome.trace;
    out.push_str("| world | single-queue arrivals | several queues: p50 | p95 | one queue each: p50 | p95 | p50 several / one each |\n");
    out.push_str("|---|---:|---:|---:|---:|---:|---:|\n");
    for (w, name) in lanes[0].worlds.iter().enumerate() {
        let of = |l| summarize(l, trace, |a| a.queues() == 1 && a.worlds[0] == w);
        let (s, o) = (of(lanes[0]), of(lanes[1]));
        let _ = writeln!(
            out,
            "| {name} | {} | {} | {} | {} | {} | {} |",
            s.arrivals,
            wait_text(s.p50_all),
            wait_text(s.p95_all),
            wait_text(o.p50_all),
            wait_text(o.p95_all),
            ratio(s.p50_all, o.p50_all)
        );
    }
    out.push('\n');
}

fn worlds_table(out: &mut String, lanes: [&LaneResult; 3], outcome: &Outcome) {
    let worlds = &lanes[0].worlds;
    let _ = writeln!(
        out,
        "| lane | matches | {} | multi-queue players matched in their first world ({}) |",
        worlds.join(" | "),
        (2..=outcome.trace.mix.len())
            .map(|k| format!("{k} queues"))
            .collect::<Vec<_>>()
            .join(" / ")
    );
    let _ = writeln!(out, "|---|---:|{}---:|", "---:|".repeat(worlds.len()));
    for l in lanes {
        let per: Vec<String> = matches_per_world(l)
            .iter()
            .map(ToString::to_string)
            .collect();
        let shares: Vec<String> = (2..=outcome.trace.mix.len())
            .map(|k| pct(first_world_share(l, &outcome.trace, k)))
            .collect();
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} |",
            l.variant.describe(),
            l.records.len(),
            per.join(" | "),
            shares.join(" / ")
        );
    }
    out.push('\n');
}

/// The whole report; `images` adds the chart links (the file).
pub fn render(ctx: &Context, outcome: &Outcome, checks: &[Check], images: bool) -> String {
    let mut out = String::new();
    header(&mut out, ctx, outcome);
    out.push_str("## Done criteria\n\n");
    let _ = writeln!(
        out,
        "(Q1) the issue's: players in 3 queues wait at most {}x (p50) players in 1. (Q2) the issue's: single-queue players' p50 no worse than {}x the run without multi-queue players, read as the lane *one queue each* (the same arrivals, every world the same arrival rate, nobody in more than one queue). (Q3) every match record and the queues at the end of every lane re-checked offline against the trace.\n",
        trim_float(THREE_VS_ONE),
        trim_float(SINGLES_VS_BASELINE)
    );
    out.push_str(&checks_table(checks));
    out.push_str("\n## How it is played\n\n");
    out.push_str(HOW);
    out.push_str("\n\n");
    for lanes in lanes_of(&outcome.lanes) {
        let s = lanes[0];
        let _ = writeln!(out, "## {}\n", s.rule_set);
        let _ = writeln!(out, "`{}`: {}.\n", s.file, s.description);
        out.push_str("### Wait by number of queues\n\n");
        queues_table(&mut out, lanes, outcome);
        out.push_str("### Single-queue players in each lane\n\n");
        singles_table(&mut out, lanes, outcome);
        out.push_str("### Single-queue players by world\n\n");
        singles_by_world(&mut out, lanes, outcome);
        out.push_str("### Matches per world\n\n");
        worlds_table(&mut out, lanes, outcome);
        if images {
            for chart in ctx
                .charts
                .iter()
                .filter(|c| c.starts_with(&format!("{}-", s.rule_set)))
            {
                let _ = writeln!(out, "![{chart}]({chart})\n");
            }
        }
    }
    out.push_str("## Run diagnostics\n\n");
    for l in &outcome.lanes {
        let _ = writeln!(out, "**{}**\n", l.label);
        for n in &l.notes {
            let _ = writeln!(out, "- {n}");
        }
        if !l.refused.is_empty() {
            let refused: Vec<String> = l.refused.iter().map(|(k, n)| format!("{n} {k}")).collect();
            let _ = writeln!(out, "- joins refused: {}", refused.join(", "));
        }
        let waiting: usize = l.waiting.iter().map(Vec::len).sum();
        let _ = writeln!(
            out,
            "- {} match records; {} queue entries at the end",
            l.records.len(),
            waiting
        );
        if let Some(e) = &l.first_error {
            let _ = writeln!(out, "- first error: {e}");
        }
        out.push('\n');
    }
    out
}
