//! The block-list study's Markdown report.

use std::fmt::Write as _;

use super::analysis::{pairs_of, ratio, summarize, violations, Grouping, Summary};
use super::{LaneResult, Outcome};
use crate::oracle::trim_float;
use crate::report::{checks_table, Check, TICK_SECONDS};
use crate::stats::Dist;

/// Facts about the run for the report's header.
#[derive(Debug, Clone)]
pub struct Context {
    pub title: String,
    pub mean: f64,
    pub sd: f64,
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

fn secs(v: f64) -> String {
    if v >= 100.0 {
        format!("{v:.0}")
    } else if v >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

fn dist(d: Option<Dist>, f: impl Fn(&Dist) -> f64) -> String {
    d.map_or_else(|| "–".into(), |d| secs(f(&d)))
}

fn pct(part: usize, whole: usize) -> String {
    if whole == 0 {
        "–".into()
    } else {
        format!("{:.1} %", 100.0 * part as f64 / whole as f64)
    }
}

/// The header: population, trace, matching, time compression, command,
/// core and the lanes' worlds; then warnings for lanes that lagged or
/// failed.
fn header(out: &mut String, ctx: &Context, outcome: &Outcome) {
    let pop = &outcome.population;
    let trace = &outcome.trace;
    let n = pop.len();
    let seats = outcome.lanes.first().map_or(10, |l| l.seats);
    let lists: usize = pop.avoids.iter().map(Vec::len).sum();
    let all_pairs = n * (n - 1) / 2;
    let (distinct, again) = trace.distinct();
    let _ = writeln!(out, "# {}\n", ctx.title);
    let _ = writeln!(
        out,
        "- **Population:** {n} players; each avoids a uniform {}–{} distinct others of the population, drawn uniformly (mean {:.2}); {} pairs where either avoids the other ({} both ways), {:.3} % of all pairs; {} random players hold such a pair {:.1} % of the time; ratings N({}, {}) (the verified claim; FIFO ignores them); seed {}",
        pop.sizes.0,
        pop.sizes.1,
        lists as f64 / n as f64,
        pop.pairs.len(),
        pop.mutual(),
        100.0 * pop.pairs.len() as f64 / all_pairs.max(1) as f64,
        seats,
        100.0 * pop.blocked_share(seats, 20_000, ctx.seed),
        trim_float(ctx.mean),
        trim_float(ctx.sd),
        ctx.seed
    );
    let _ = writeln!(
        out,
        "- **Trace:** Poisson arrivals at {}/s for {} min: {} arrivals of {distinct} distinct players, {again} of whom arrive more than once; each arrival draws a player uniformly among those not away, and a player who arrives stays away U({}, {}) s (their wait, a game, a break){}",
        trim_float(trace.rate),
        trim_float(trace.seconds / 60.0),
        trace.arrivals.len(),
        trim_float(trace.away.0),
        trim_float(trace.away.1),
        if trace.dropped > 0 {
            format!("; {} arrivals found every player away and were dropped", trace.dropped)
        } else {
            String::new()
        }
    );
    let _ = writeln!(
        out,
        "- **Matching:** every player joins solo; matcher tick every {} s (simulated), instant match on, drain {} s after the last arrival",
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
        let _ = writeln!(out, "- **{}** (`{}`): {}", l.label, l.file, l.description);
    }
    out.push('\n');
    for l in &outcome.lanes {
        if let Some(why) = &l.lagging {
            let _ = writeln!(
                out,
                "> **TOO SLOW:** {} did not keep up with x{}: {why}. Its numbers are distorted; rerun with a lower `--speed` (or on a quieter machine).\n",
                l.label,
                trim_float(ctx.speed)
            );
        }
        if l.failures > 0 {
            let _ = writeln!(
                out,
                "> **ERRORS:** {} calls of {} failed (see *Run diagnostics*): its numbers do not show what the lists do.\n",
                l.failures, l.label
            );
        }
    }
}

const HOW: &str = "Each rule set's world is played twice on the same trace, each on its own server: **with lists** (the rule set with `blockLists`; every non-empty avoid list written through `MatchStore::set_avoid_list`, what `PUT /v1/avoid/{playerId}` runs, before the first arrival, and read back) and **without lists** (the same rule set without `blockLists`). Without game servers (`servers` is left out) a formed match holds nobody, so a player who comes back joins again; one who comes back while still waiting would be refused (`ALREADY_QUEUED`, counted as refused). Waits are in simulated seconds, from each join to its match; an arrival counts once per join. Players are grouped by their own list (how many others they avoid) and by how many lists name them, the same groups in both lanes.";

fn summary_row(out: &mut String, label: &str, s: &Summary, blocked: String) {
    let _ = writeln!(
        out,
        "| {label} | {} | {} | {} | {} ({} / {} / {}) | {} | {} | {} | {} | {blocked} |",
        s.arrivals,
        s.matches,
        s.matched,
        s.unmatched(),
        s.expired,
        s.waiting,
        s.refused,
        dist(s.wait, |d| d.mean),
        dist(s.wait, |d| d.p50),
        dist(s.wait, |d| d.p95),
        dist(s.wait, |d| d.max),
    );
}

/// The table of all arrivals of one rule set's two lanes.
fn all_table(out: &mut String, with: &LaneResult, without: &LaneResult, outcome: &Outcome) {
    let trace = &outcome.trace;
    let pop = &outcome.population;
    let (sw, sn) = (
        summarize(with, trace, |_| true),
        summarize(without, trace, |_| true),
    );
    out.push_str("| lane | arrivals | matches | matched | unmatched (expired / waiting / refused) | wait mean | wait p50 | wait p95 | wait max | matches with a blocked pair (offline) |\n");
    out.push_str("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    for (lane, s) in [(with, &sw), (without, &sn)] {
        let v = violations(&lane.records, pop, lane.seats);
        summary_row(
            out,
            &lane.label,
            s,
            format!("{} ({})", v.records, pct(v.records, v.checked)),
        );
    }
    let w = |s: &Summary, f: fn(&Dist) -> f64| s.wait.map(|d| f(&d));
    let _ = writeln!(
        out,
        "| with against without | | {} | {} | | {} | {} | {} | {} | |\n",
        ratio(Some(sw.matches as f64), Some(sn.matches as f64)),
        ratio(Some(sw.matched as f64), Some(sn.matched as f64)),
        ratio(w(&sw, |d| d.mean), w(&sn, |d| d.mean)),
        ratio(w(&sw, |d| d.p50), w(&sn, |d| d.p50)),
        ratio(w(&sw, |d| d.p95), w(&sn, |d| d.p95)),
        ratio(w(&sw, |d| d.max), w(&sn, |d| d.max)),
    );
}

/// The waits of one rule set's two lanes by group of players.
fn group_table(
    out: &mut String,
    g: &Grouping,
    with: &LaneResult,
    without: &LaneResult,
    outcome: &Outcome,
) {
    let trace = &outcome.trace;
    let (rw, rn) = (g.rows(with, trace), g.rows(without, trace));
    let players = g.players();
    let _ = writeln!(
        out,
        "| {} | players | arrivals | with lists: matched (unmatched) | p50 | p95 | mean | without lists: matched (unmatched) | p50 | p95 | mean | p50 with/without | p95 with/without |",
        g.title
    );
    out.push_str("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    let w = |s: &Summary, f: fn(&Dist) -> f64| s.wait.map(|d| f(&d));
    for (b, band) in g.bands.iter().enumerate() {
        let (a, n) = (&rw[b], &rn[b]);
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} ({}) | {} | {} | {} | {} ({}) | {} | {} | {} | {} | {} |",
            band.label(),
            players[b],
            a.arrivals,
            a.matched,
            a.unmatched(),
            dist(a.wait, |d| d.p50),
            dist(a.wait, |d| d.p95),
            dist(a.wait, |d| d.mean),
            n.matched,
            n.unmatched(),
            dist(n.wait, |d| d.p50),
            dist(n.wait, |d| d.p95),
            dist(n.wait, |d| d.mean),
            ratio(w(a, |d| d.p50), w(n, |d| d.p50)),
            ratio(w(a, |d| d.p95), w(n, |d| d.p95)),
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
        "(B1) the issue's: matches formed with block lists at least {}x those formed without, at the same arrival rate (the same trace). (B2) every match record of the lane with lists re-checked offline against the lists as generated: {} distinct players of the population in each, no two of them where either avoids the other.\n",
        trim_float(super::analysis::MATCHES_VS_WITHOUT),
        outcome.lanes.first().map_or(10, |l| l.seats)
    );
    out.push_str(&checks_table(checks));
    out.push_str("\n## How it is played\n\n");
    out.push_str(HOW);
    out.push_str("\n\n");
    for (with, without) in pairs_of(&outcome.lanes) {
        let _ = writeln!(out, "## {}\n", with.rule_set);
        let _ = writeln!(out, "`{}`: {}.\n", with.file, with.description);
        out.push_str("### All arrivals\n\n");
        all_table(&mut out, with, without, outcome);
        out.push_str("### Wait by how many others a player avoids\n\n");
        group_table(
            &mut out,
            &Grouping::by_list_size(&outcome.population),
            with,
            without,
            outcome,
        );
        out.push_str("### Wait by how many others avoid a player\n\n");
        group_table(
            &mut out,
            &Grouping::by_avoided_by(&outcome.population),
            with,
            without,
            outcome,
        );
        if images {
            for chart in ctx
                .charts
                .iter()
                .filter(|c| c.starts_with(&format!("{}-", with.rule_set)))
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
        let _ = writeln!(
            out,
            "- {} match records; {} participants tied to no pending arrival of theirs{}",
            l.records.len(),
            l.unaccounted,
            if l.unaccounted > 0 {
                " (UNACCOUNTED)"
            } else {
                ""
            }
        );
        if let Some(e) = &l.first_error {
            let _ = writeln!(out, "- first error: {e}");
        }
        out.push('\n');
    }
    out
}
