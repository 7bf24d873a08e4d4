//! The Markdown report and its tables.

use std::fmt::Write as _;

use super::{
    frontier, parties_split, party_rows, summarize, team_differences, Check, DecileRow, Deciles,
    TICK_SECONDS,
};
use crate::oracle::trim_float;
use crate::outcome::{Kind, Run, Shape};
use crate::scenario::Scenario;
use crate::stats::Dist;

/// Facts about the run for the report's header.
#[derive(Debug, Clone)]
pub struct Context {
    pub title: String,
    pub scenario: String,
    pub acceptance_note: Option<String>,
    /// Players per match.
    pub team_size: u32,
    /// How the oracle makes up its matches.
    pub oracle_shape: Shape,
    pub drain: f64,
    pub speed: f64,
    pub measured_speed: f64,
    pub clock_error: Option<f64>,
    pub wall_seconds: f64,
    pub instant_match: bool,
    /// (label, source file, world description) per rule set, FIFO included.
    pub rule_sets: Vec<(String, String, String)>,
    pub command: String,
    /// The core's commit, when known.
    pub core: Option<String>,
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

fn opt(d: Option<Dist>, f: impl Fn(Dist) -> f64) -> String {
    d.map_or_else(|| "–".into(), |d| secs(f(d)))
}

/// The summary table (one row per run).
pub fn summary_table(runs: &[Run]) -> String {
    let mut out = String::new();
    out.push_str("| matcher | matches | matched | unmatched (expired / removed / waiting / refused) | wait mean | wait p50 | wait p95 | wait max | spread mean | spread p95 |\n");
    out.push_str("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    for run in runs {
        let s = summarize(run);
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} ({} / {} / {} / {}) | {} | {} | {} | {} | {} | {} |",
            s.label,
            s.matches,
            s.matched,
            s.unmatched(),
            s.expired,
            s.removed,
            s.waiting,
            s.refused,
            opt(s.wait, |d| d.mean),
            opt(s.wait, |d| d.p50),
            opt(s.wait, |d| d.p95),
            opt(s.wait, |d| d.max),
            opt(s.spread, |d| d.mean),
            opt(s.spread, |d| d.p95),
        );
    }
    out
}

/// The per-decile wait table of one run.
pub fn decile_table(rows: &[DecileRow]) -> String {
    let mut out = String::new();
    out.push_str("| decile | ratings | players | unmatched | wait p50 | wait p95 | wait max |\n");
    out.push_str("|---:|---|---:|---:|---:|---:|---:|\n");
    for (d, r) in rows.iter().enumerate() {
        let _ = writeln!(
            out,
            "| {} | {:.0} – {:.0} | {} | {} | {} | {} | {} |",
            d + 1,
            r.lo,
            r.hi,
            r.players,
            r.unmatched,
            opt(r.wait, |d| d.p50),
            opt(r.wait, |d| d.p95),
            opt(r.wait, |d| d.max),
        );
    }
    out
}

/// Parties split and team balance, one row per run.
pub fn teams_table(scenario: &Scenario, runs: &[Run]) -> String {
    let mut out = String::new();
    out.push_str("| matcher | match | matches | parties split | team-average difference mean | p50 | p95 | max |\n");
    out.push_str("|---|---|---:|---:|---:|---:|---:|---:|\n");
    for run in runs {
        let d = Dist::of(&team_differences(run));
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} | {} |",
            run.label,
            run.shape,
            run.matches.len(),
            if scenario.has_parties() {
                parties_split(scenario, run).to_string()
            } else {
                "–".into()
            },
            opt(d, |d| d.mean),
            opt(d, |d| d.p50),
            opt(d, |d| d.p95),
            opt(d, |d| d.max),
        );
    }
    out
}

/// Waits by party size, one row per run and size.
pub fn party_table(scenario: &Scenario, runs: &[Run]) -> String {
    let mut out = String::new();
    out.push_str("| matcher | party size | arrivals | players | unmatched | wait mean | wait p50 | wait p90 | wait p95 |\n");
    out.push_str("|---|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    for run in runs {
        for r in party_rows(scenario, run) {
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} | {} | {} | {} | {} |",
                run.label,
                if r.size == 1 {
                    "1 (solo)".to_owned()
                } else {
                    r.size.to_string()
                },
                r.groups,
                r.players,
                r.unmatched,
                opt(r.wait, |d| d.mean),
                opt(r.wait, |d| d.p50),
                opt(r.wait, |d| d.p90),
                opt(r.wait, |d| d.p95),
            );
        }
    }
    out
}

/// Ready checks: each run of a rule set with one, and its run without it.
pub fn ready_table(runs: &[Run]) -> String {
    let files: Vec<&str> = runs
        .iter()
        .filter(|r| r.ready.is_some())
        .filter_map(|r| match &r.kind {
            Kind::RuleSet { file, .. } => Some(file.as_str()),
            _ => None,
        })
        .collect();
    let mut out = String::new();
    out.push_str("| matcher | accept probability | proposals | accepted by all | failed: declined / timed out | open at the end | players removed: by declines / by timeouts | tickets requeued | wait mean | wait p50 | wait p95 |\n");
    out.push_str("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    for run in runs.iter().filter(|r| match &r.kind {
        Kind::RuleSet { file, .. } => files.contains(&file.as_str()),
        _ => false,
    }) {
        let w = summarize(run).wait;
        let tail = format!(
            "{} | {} | {}",
            opt(w, |d| d.mean),
            opt(w, |d| d.p50),
            opt(w, |d| d.p95)
        );
        let _ = match &run.ready {
            Some(r) => writeln!(
                out,
                "| {} | {} (else {}) | {} | {} | {} / {} | {} | {} / {} | {} | {tail} |",
                run.label,
                trim_float(r.accept_probability),
                r.refusal,
                r.proposals,
                r.accepted,
                r.declined,
                r.timed_out,
                r.pending,
                r.removed_by_declines,
                r.removed_by_timeouts,
                r.requeued,
            ),
            None => writeln!(
                out,
                "| {} | no ready check | – | – | – | – | – | – | {tail} |",
                run.label
            ),
        };
    }
    out
}

/// Text made safe for a Markdown table cell.
fn cell(text: &str) -> String {
    text.replace('|', "\\|")
}

pub fn checks_table(checks: &[Check]) -> String {
    let mut out = String::new();
    out.push_str("| rule set | check | result | numbers |\n|---|---|---|---|\n");
    for c in checks {
        let _ = writeln!(
            out,
            "| {} | ({}) {} | **{}** | {} |",
            cell(&c.rule_set),
            c.id,
            cell(&c.what),
            if c.pass { "PASS" } else { "MISS" },
            cell(&c.detail)
        );
    }
    out
}

/// The head every study's report starts with: the title, the trace, how
/// it was matched (`matching`), the time compression (one redis-server per
/// `per`), the command, the core and the rule sets; then a warning for each
/// run that lagged or had failures.
/// How every run was ticked: the header's matching line, after what a
/// report puts before it.
pub fn ticking(ctx: &Context) -> String {
    format!(
        "matcher tick every {} s (simulated), instant match {}, drain {} s after the last arrival",
        trim_float(TICK_SECONDS),
        if ctx.instant_match { "on" } else { "off" },
        trim_float(ctx.drain)
    )
}

pub fn write_header(out: &mut String, ctx: &Context, runs: &[Run], matching: &str, per: &str) {
    let _ = writeln!(out, "# {}\n", ctx.title);
    let _ = writeln!(out, "- **Trace:** {}", ctx.scenario);
    let _ = writeln!(out, "- **Matching:** {matching}");
    let _ = writeln!(
        out,
        "- **Time compression:** one redis-server per {per} under libfaketime at x{} (measured x{:.2} through `redis.call('TIME')`{}); wall time {:.1} s",
        trim_float(ctx.speed),
        ctx.measured_speed,
        ctx.clock_error
            .map_or_else(String::new, |e| format!(", clock model off by {e:+.3} s simulated at the end")),
        ctx.wall_seconds
    );
    let _ = writeln!(out, "- **Command:** `{}`", ctx.command);
    if let Some(core) = &ctx.core {
        let _ = writeln!(out, "- **Core:** git {core}");
    }
    for (label, file, world) in &ctx.rule_sets {
        let _ = writeln!(out, "- **{label}** (`{file}`): {world}");
    }
    out.push('\n');
    for run in runs.iter() {
        if let Some(why) = &run.lagging {
            let _ = writeln!(
                out,
                "> **TOO SLOW:** {} did not keep up with x{}: {why}. Its numbers are distorted; rerun with a lower `--speed` (or on a quieter machine).\n",
                run.label,
                trim_float(ctx.speed)
            );
        }
    }
    for run in runs.iter().filter(|r| r.failures > 0) {
        let _ = writeln!(
            out,
            "> **ERRORS:** {} joins or ticks of {} failed (see *Run diagnostics*): its numbers do not show what the rules do.\n",
            run.failures, run.label
        );
    }
}

/// The whole report. `images` adds the chart links and the oracle's
/// per-decile tables (the file); without it, it is the terminal version.
pub fn render(
    ctx: &Context,
    scenario: &Scenario,
    runs: &[Run],
    checks: &[Check],
    images: bool,
) -> String {
    let frontier = frontier(runs);
    let deciles = Deciles::new(scenario);
    let mut out = String::new();
    write_header(
        &mut out,
        ctx,
        runs,
        &format!(
            "{} players per match (the oracle: {}), {}",
            ctx.team_size,
            if ctx.oracle_shape.teams > 1 {
                format!(
                    "{} teams of {}",
                    ctx.oracle_shape.teams, ctx.oracle_shape.team_size
                )
            } else {
                "one team".to_owned()
            },
            ticking(ctx)
        ),
        "rule set",
    );

    out.push_str("## Acceptance checks\n\n");
    if let Some(note) = &ctx.acceptance_note {
        let _ = writeln!(
            out,
            "> Not the acceptance scenario: {note}. The checks are computed all the same.\n"
        );
    }
    if checks.is_empty() {
        out.push_str("No rule set was simulated (pass `--rules`): nothing to check.\n\n");
    } else {
        out.push_str(&checks_table(checks));
        out.push('\n');
    }

    out.push_str("## Summary\n\n");
    out.push_str("Waits in simulated seconds (matched players); spread = highest minus lowest rating in a match.\n\n");
    out.push_str(&summary_table(runs));
    out.push('\n');

    let team_runs = runs.iter().any(|r| r.shape.teams > 1);
    if scenario.has_parties() || team_runs {
        out.push_str("## Parties and teams\n\n");
        out.push_str("A party is split when its members are not all in one match and one team (or not all matched); it must be 0 everywhere. ");
        out.push_str("The team-average difference (highest minus lowest team's mean rating) is computed from the trace's ratings for every matcher with teams, FIFO included.\n\n");
        out.push_str(&teams_table(scenario, runs));
        out.push('\n');
    }
    if scenario.has_parties() {
        out.push_str("### Waits by party size\n\n");
        if images {
            out.push_str("![waits by party size](waits-by-party-size.svg)\n\n");
        }
        out.push_str("An arrival is a solo player or a whole party; a party's wait runs from its creation to its match (every member waits as long).\n\n");
        let shown: Vec<Run> = runs
            .iter()
            .filter(|r| images || !matches!(r.kind, Kind::Oracle { .. }))
            .cloned()
            .collect();
        out.push_str(&party_table(scenario, &shown));
        out.push('\n');
    }
    if runs.iter().any(|r| r.ready.is_some()) {
        out.push_str("## Ready checks\n\n");
        if images {
            out.push_str("![waits by acceptance probability](waits-by-acceptance.svg)\n\n");
        }
        out.push_str("Each participant of a proposal accepts with the given probability after a random delay, else declines (or stays silent until the time runs out). ");
        out.push_str("A failed proposal removes who declined or did not answer (with their party) and requeues everyone else at their place; waits run to the last accept. ");
        out.push_str("The same rule set without its ready check is the comparison.\n\n");
        out.push_str(&ready_table(runs));
        out.push('\n');
    }

    out.push_str("## Quality/wait frontier\n\n");
    if images {
        out.push_str("![frontier](frontier.svg)\n\n");
    }
    out.push_str("The oracle batches everyone waiting every T seconds, sorts by rating and groups neighbours. ");
    out.push_str("Between its points the frontier is interpolated on log–log axes.\n\n");
    out.push_str("| T | mean wait | mean spread |\n|---:|---:|---:|\n");
    for p in frontier.points() {
        let _ = writeln!(
            out,
            "| {} s | {} | {} |",
            trim_float(p.period),
            secs(p.mean_wait),
            secs(p.mean_spread)
        );
    }
    out.push('\n');

    out.push_str("## Wait by rating decile\n\n");
    if images {
        out.push_str("![waits by rating decile](waits-by-decile.svg)\n\n");
    }
    for run in runs
        .iter()
        .filter(|r| !matches!(r.kind, Kind::Oracle { .. }))
    {
        let _ = writeln!(out, "### {}\n", run.label);
        out.push_str(&decile_table(&deciles.rows(run)));
        out.push('\n');
    }
    if images {
        out.push_str("<details><summary>Oracle waits by rating decile</summary>\n\n");
        for run in runs
            .iter()
            .filter(|r| matches!(r.kind, Kind::Oracle { .. }))
        {
            let _ = writeln!(out, "### {}\n", run.label);
            out.push_str(&decile_table(&deciles.rows(run)));
            out.push('\n');
        }
        out.push_str("</details>\n\n");
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
