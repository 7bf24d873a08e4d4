//! The role-queue study's Markdown report.

use std::fmt::Write as _;

use super::analysis::{
    by_count, by_group, by_pair, left_waiting, pairs_of, queue_over_time, ratio_of, seat_shares,
    summarize, wait_text, Summary, SCARCEST_VS_AGNOSTIC, TWO_VS_ONE,
};
use super::arrivals::{Group, Role};
use super::{LaneResult, Outcome};
use crate::oracle::trim_float;
use crate::report::{checks_table, Check, TICK_SECONDS};
use crate::stats::Dist;

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

fn dist(d: Option<Dist>, f: impl Fn(&Dist) -> f64) -> String {
    wait_text(d.map(|d| f(&d)))
}

fn pct(part: usize, whole: usize) -> String {
    if whole == 0 {
        "–".into()
    } else {
        format!("{:.1} %", 100.0 * part as f64 / whole as f64)
    }
}

fn times(r: Option<f64>) -> String {
    r.map_or_else(|| "–".into(), |r| format!("{r:.2}x"))
}

/// The header: trace, supply against need, matching, time compression,
/// command, core and the lanes' worlds; then warnings for lanes that
/// lagged or failed.
fn header(out: &mut String, ctx: &Context, outcome: &Outcome) {
    let trace = &outcome.trace;
    let mix = &trace.mix;
    let n = trace.arrivals.len();
    let groups = trace.group_counts();
    let _ = writeln!(out, "# {}\n", ctx.title);
    let _ = writeln!(
        out,
        "- **Trace:** Poisson arrivals at {}/s for {} min: {n} arrivals, each a new player; primary role tank {} %, healer {} %, damage {} %; {} % also offer a second role, uniformly one of the other two. Drawn: {} tank only ({}), {} healer only ({}), {} damage only ({}), {} two roles ({}); seed {}",
        trim_float(trace.rate),
        trim_float(trace.seconds / 60.0),
        trim_float(100.0 * mix.shares[0]),
        trim_float(100.0 * mix.shares[1]),
        trim_float(100.0 * mix.shares[2]),
        trim_float(100.0 * mix.two_roles),
        groups[0],
        pct(groups[0], n),
        groups[1],
        pct(groups[1], n),
        groups[2],
        pct(groups[2], n),
        groups[3],
        pct(groups[3], n),
        ctx.seed
    );
    let _ = writeln!(
        out,
        "- **Matching:** every player joins solo with its roles; matcher tick every {} s (simulated), instant match on, drain {} s after the last arrival",
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
                "> **ERRORS:** {} calls of {} failed (see *Run diagnostics*): its numbers do not show what the role queue does.\n",
                l.failures, l.label
            );
        }
    }
}

/// Each role's supply against the seats the quotas reserve for it.
fn supply_table(out: &mut String, q: &LaneResult, outcome: &Outcome) {
    let trace = &outcome.trace;
    let mix = &trace.mix;
    let n = trace.arrivals.len().max(1) as f64;
    let Some(quotas) = &q.quotas else { return };
    let shares = seat_shares(quotas, q.seats, q.teams);
    let (primary, capable, groups) = (
        trace.primary_counts(),
        trace.capable_counts(),
        trace.group_counts(),
    );
    out.push_str("| role | share of the seats (quota) | primary role (expected / drawn) | only this role (expected / drawn) | may play it (expected / drawn) | primary / seats |\n");
    out.push_str("|---|---:|---:|---:|---:|---:|\n");
    for r in Role::ALL {
        let seat = shares[r.index()];
        let _ = writeln!(
            out,
            "| {} | {} | {:.1} % / {:.1} % | {:.1} % / {:.1} % | {:.1} % / {:.1} % | {} |",
            r.name(),
            seat.map_or_else(|| "–".into(), |s| format!("{:.1} %", 100.0 * s)),
            100.0 * mix.shares[r.index()],
            100.0 * primary[r.index()] as f64 / n,
            100.0 * mix.only(r),
            100.0 * groups[r.index()] as f64 / n,
            100.0 * mix.capable(r),
            100.0 * capable[r.index()] as f64 / n,
            times(seat.filter(|s| *s > 0.0).map(|s| mix.shares[r.index()] / s)),
        );
    }
    out.push('\n');
}

const HOW: &str = "Each rule set's world is played twice on the same trace, each on its own server: as a **role queue** (the rule set as written, its quota rule in force) and **role-agnostic** (the same world without the quota rule; the roles attribute is listed in the world's `attributes` instead, so every player still sends its roles, the records still carry them and the world is still matched around anchors). Every arrival is a new player who joins once, with its roles (`MatchStore::join_reply`, encoded as the join route does); nobody leaves. Without game servers (`servers` is left out) a formed match holds nobody. Waits are in simulated seconds, from each join to its match. *Unmatched* players are those still waiting when the run ends (or expired: tickets live the world's `ticketTtlSeconds`); the columns *p50 all* and *p95 all* count them as waiting longer than anyone matched (*unmatched* when the percentile falls among them), the others are the matched players' waits. Players are grouped by the role they offer when they offer one, and all players offering two roles together (*two roles*); the scarcest role is the one with the lowest share of primary roles against its share of the seats.";

fn summary_cells(s: &Summary) -> String {
    format!(
        "{} | {} ({} / {}) | {} | {} | {} | {}",
        s.matched,
        s.unmatched(),
        s.expired,
        s.waiting,
        dist(s.wait, |d| d.p50),
        dist(s.wait, |d| d.p95),
        wait_text(s.p50_all),
        wait_text(s.p95_all),
    )
}

/// The waits of both lanes, one row per group of players.
fn rows_table(out: &mut String, title: &str, rows: &[(String, Summary, Summary)]) {
    let _ = writeln!(
        out,
        "| {title} | arrivals | role queue: matched | unmatched (expired / waiting) | p50 | p95 | p50 all | p95 all | role-agnostic: matched | unmatched (expired / waiting) | p50 | p95 | p50 all | p95 all | p95 all queue / agnostic |"
    );
    out.push_str("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    for (label, q, a) in rows {
        let _ = writeln!(
            out,
            "| {label} | {} | {} | {} | {} |",
            q.arrivals,
            summary_cells(q),
            summary_cells(a),
            times(ratio_of(q.p95_all, a.p95_all)),
        );
    }
    out.push('\n');
}

/// All arrivals of one rule set's two lanes.
fn all_table(out: &mut String, q: &LaneResult, a: &LaneResult, outcome: &Outcome) {
    let trace = &outcome.trace;
    out.push_str("| lane | arrivals | matches | matched | unmatched (expired / waiting / refused) | wait mean | p50 | p95 | max | p50 all | p95 all | records re-checked | findings |\n");
    out.push_str("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    for lane in [q, a] {
        let s = summarize(lane, trace, |_| true);
        let v = &lane.verdict;
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} ({} / {} / {}) | {} | {} | {} | {} | {} | {} | {} | {} |",
            lane.label,
            s.arrivals,
            lane.records.len(),
            s.matched,
            s.unmatched(),
            s.expired,
            s.waiting,
            s.refused,
            dist(s.wait, |d| d.mean),
            dist(s.wait, |d| d.p50),
            dist(s.wait, |d| d.p95),
            dist(s.wait, |d| d.max),
            wait_text(s.p50_all),
            wait_text(s.p95_all),
            v.checked,
            v.objections + v.role_breaches + v.malformed + v.misrecorded,
        );
    }
    out.push('\n');
}

/// What the players offering two roles played, per pair.
fn two_roles_table(out: &mut String, q: &LaneResult, a: &LaneResult, outcome: &Outcome) {
    let trace = &outcome.trace;
    let (pq, pa) = (by_pair(q, trace), by_pair(a, trace));
    out.push_str("| roles offered | arrivals | role queue: matched | played tank / healer / damage | p50 | p95 | p50 all | role-agnostic: p50 | p95 |\n");
    out.push_str("|---|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    for (((x, y), s), (_, t)) in pq.iter().zip(&pa) {
        let _ = writeln!(
            out,
            "| {} + {} | {} | {} | {} / {} / {} | {} | {} | {} | {} | {} |",
            x.name(),
            y.name(),
            s.arrivals,
            s.matched,
            s.played[0],
            s.played[1],
            s.played[2],
            dist(s.wait, |d| d.p50),
            dist(s.wait, |d| d.p95),
            wait_text(s.p50_all),
            dist(t.wait, |d| d.p50),
            dist(t.wait, |d| d.p95),
        );
    }
    out.push('\n');
}

/// Per primary role: one role offered against two (role queue, p50 all).
fn primary_table(out: &mut String, q: &LaneResult, outcome: &Outcome) {
    let trace = &outcome.trace;
    out.push_str("| primary role | only it: arrivals | p50 all | with a second role: arrivals | p50 all | two / one |\n");
    out.push_str("|---|---:|---:|---:|---:|---:|\n");
    for r in Role::ALL {
        let one = summarize(q, trace, |o| o.primary == r && o.count() == 1);
        let two = summarize(q, trace, |o| o.primary == r && o.count() == 2);
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} |",
            r.name(),
            one.arrivals,
            wait_text(one.p50_all),
            two.arrivals,
            wait_text(two.p50_all),
            times(ratio_of(two.p50_all, one.p50_all)),
        );
    }
    out.push('\n');
}

/// Who waits over time, per group, both lanes: one row a minute.
fn queue_table(out: &mut String, q: &LaneResult, a: &LaneResult, outcome: &Outcome) {
    let trace = &outcome.trace;
    let (sq, sa) = (
        queue_over_time(q, trace, 60.0),
        queue_over_time(a, trace, 60.0),
    );
    out.push_str("Players waiting, on average over the minute before:\n\n");
    out.push_str("| simulated minute | role queue: tank only | healer only | damage only | two roles | role-agnostic: tank only | healer only | damage only | two roles |\n");
    out.push_str("|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    for ((t, nq), (_, na)) in sq.iter().zip(&sa).skip(1) {
        let _ = writeln!(
            out,
            "| {} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} |",
            trim_float(t / 60.0),
            nq[0],
            nq[1],
            nq[2],
            nq[3],
            na[0],
            na[1],
            na[2],
            na[3]
        );
    }
    out.push('\n');
    for lane in [q, a] {
        let left = left_waiting(lane, trace);
        let parts: Vec<String> = Group::ALL
            .iter()
            .zip(left)
            .map(|(g, (n, oldest))| {
                if n == 0 {
                    format!("{} 0", g.label())
                } else {
                    format!(
                        "{} {n} (the longest for {} s)",
                        g.label(),
                        wait_text(Some(oldest))
                    )
                }
            })
            .collect();
        let expired = lane
            .fates
            .iter()
            .filter(|f| matches!(f, crate::outcome::Fate::Expired))
            .count();
        let _ = writeln!(
            out,
            "- **{}**, still waiting at the end (simulated {} s): {}; expired: {expired} (tickets live {} s)",
            lane.label,
            trim_float(lane.end.round()),
            parts.join(", "),
            trim_float(lane.ttl)
        );
    }
    out.push('\n');
}

/// The measured figures behind the targets' definitions, beside them.
fn beside(out: &mut String, q: &LaneResult, a: &LaneResult, outcome: &Outcome) {
    let trace = &outcome.trace;
    let agnostic = summarize(a, trace, |_| true);
    let rows = by_group(q, trace);
    for (g, s) in rows.iter().filter(|(g, _)| *g != Group::Two) {
        if let (Some(x), Some(y)) = (s.p95_all, agnostic.p95_all) {
            if x.is_finite() && y.is_finite() {
                let _ = writeln!(
                    out,
                    "- {}: p95 all {} s in the role queue against the role-agnostic world's {} s, {:+.2} s ({}).",
                    g.label(),
                    wait_text(Some(x)),
                    wait_text(Some(y)),
                    x - y,
                    times(ratio_of(Some(x), Some(y)))
                );
            }
        }
    }
    if let Some((g, s)) = rows
        .iter()
        .filter(|(g, _)| *g != Group::Two)
        .max_by(|x, y| {
            let k = |s: &Summary| s.p95_all.unwrap_or(0.0);
            k(&x.1).total_cmp(&k(&y.1))
        })
    {
        let _ = writeln!(
            out,
            "- The single role that waits longest in the role queue (measured): **{}**, p95 all {} s against the role-agnostic world's {} s: {} (target {}x).",
            g.label(),
            wait_text(s.p95_all),
            wait_text(agnostic.p95_all),
            times(ratio_of(s.p95_all, agnostic.p95_all)),
            trim_float(SCARCEST_VS_AGNOSTIC)
        );
    }
    let counts = by_count(q, trace);
    let (one, two) = (&counts[0].1, &counts[1].1);
    let _ = writeln!(
        out,
        "- Two roles against one, matched players only: p50 {} s against {} s ({}; target {}x); p95 {} s against {} s.",
        dist(two.wait, |d| d.p50),
        dist(one.wait, |d| d.p50),
        times(ratio_of(two.wait.map(|d| d.p50), one.wait.map(|d| d.p50))),
        trim_float(TWO_VS_ONE),
        dist(two.wait, |d| d.p95),
        dist(one.wait, |d| d.p95),
    );
    out.push('\n');
}

/// The whole report; `images` adds the chart links (the file).
pub fn render(ctx: &Context, outcome: &Outcome, checks: &[Check], images: bool) -> String {
    let mut out = String::new();
    header(&mut out, ctx, outcome);
    out.push_str("## Targets\n\n");
    let _ = writeln!(
        out,
        "(R1) the issue's: the p95 wait of the scarcest role at most {}x the role-agnostic world's p95, on the same trace; the scarcest role is the one with the lowest share of primary roles against its share of the seats, its players those offering only it, and the role-agnostic p95 that of all its players. (R2) the issue's: players offering two roles wait at most {}x (p50) what players offering one wait, in the role queue. Both count the unmatched as waiting longer than anyone matched. (R3) every match record re-checked offline, by the rules oracle (`shared::rules::recheck`) and by recounting each team's roles from the trace.\n",
        trim_float(SCARCEST_VS_AGNOSTIC),
        trim_float(TWO_VS_ONE)
    );
    out.push_str(&checks_table(checks));
    out.push('\n');
    for (q, a) in pairs_of(&outcome.lanes) {
        beside(&mut out, q, a, outcome);
    }
    out.push_str("## How it is played\n\n");
    out.push_str(HOW);
    out.push_str("\n\n");
    let trace = &outcome.trace;
    for (q, a) in pairs_of(&outcome.lanes) {
        let _ = writeln!(out, "## {}\n", q.rule_set);
        let _ = writeln!(out, "`{}`: {}.\n", q.file, q.description);
        out.push_str("### Supply against the seats\n\n");
        supply_table(&mut out, q, outcome);
        out.push_str("### All arrivals\n\n");
        all_table(&mut out, q, a, outcome);
        out.push_str("### Wait by role offered\n\n");
        let (gq, ga) = (by_group(q, trace), by_group(a, trace));
        let rows: Vec<(String, Summary, Summary)> = gq
            .into_iter()
            .zip(ga)
            .map(|((g, x), (_, y))| (g.label(), x, y))
            .collect();
        rows_table(&mut out, "roles offered", &rows);
        out.push_str("### Wait by number of roles offered\n\n");
        let (cq, ca) = (by_count(q, trace), by_count(a, trace));
        let rows: Vec<(String, Summary, Summary)> = cq
            .into_iter()
            .zip(ca)
            .map(|((k, x), (_, y))| (k.to_string(), x, y))
            .collect();
        rows_table(&mut out, "roles offered", &rows);
        out.push_str("### Players offering two roles\n\n");
        two_roles_table(&mut out, q, a, outcome);
        out.push_str("### One role or two, by primary role (role queue)\n\n");
        primary_table(&mut out, q, outcome);
        out.push_str("### Who waits over time\n\n");
        queue_table(&mut out, q, a, outcome);
        if images {
            for chart in ctx
                .charts
                .iter()
                .filter(|c| c.starts_with(&format!("{}-", q.rule_set)))
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
            "- {} match records; {} participants tied to no pending arrival{}",
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
