//! Statistics of each run, the acceptance checks and the Markdown report.

use std::fmt::Write as _;

use crate::frontier::{Frontier, Point, Position};
use crate::oracle::trim_float;
use crate::outcome::{Fate, Kind, Run, Shape};
use crate::scenario::Scenario;
use crate::stats::{deciles, Dist};

/// Acceptance limits (the numbers).
pub const SPREAD_VS_FIFO: f64 = 0.25;
pub const SPREAD_VS_FRONTIER: f64 = 1.25;
pub const OUTLIER_Z: f64 = 3.0;
/// Check (e): a team world's mean team-average difference against its
/// FIFO-filled baseline's.
pub const TEAM_DIFFERENCE_VS_FIFO: f64 = 0.25;
pub const OUTLIER_TICKS: f64 = 2.0;
/// The matcher's tick, in simulated seconds.
pub const TICK_SECONDS: f64 = 1.0;

/// One matcher's numbers.
#[derive(Debug, Clone, PartialEq)]
pub struct Summary {
    pub label: String,
    pub matches: usize,
    pub matched: usize,
    pub expired: usize,
    /// Removed by a ready check (declined, or did not answer in time).
    pub removed: usize,
    pub waiting: usize,
    pub refused: usize,
    /// Waits of matched players, simulated seconds.
    pub wait: Option<Dist>,
    /// Spreads of matches.
    pub spread: Option<Dist>,
}

impl Summary {
    pub fn unmatched(&self) -> usize {
        self.expired + self.removed + self.waiting + self.refused
    }
}

pub fn waits(run: &Run) -> Vec<f64> {
    run.fates
        .iter()
        .filter_map(|f| match f {
            Fate::Matched { wait, .. } => Some(*wait),
            _ => None,
        })
        .collect()
}

pub fn summarize(run: &Run) -> Summary {
    let count = |want: fn(&Fate) -> bool| run.fates.iter().filter(|f| want(f)).count();
    let spreads: Vec<f64> = run.matches.iter().map(|m| m.spread).collect();
    Summary {
        label: run.label.clone(),
        matches: run.matches.len(),
        matched: count(|f| matches!(f, Fate::Matched { .. })),
        expired: count(|f| matches!(f, Fate::Expired)),
        removed: count(|f| matches!(f, Fate::Removed)),
        waiting: count(|f| matches!(f, Fate::Waiting)),
        refused: count(|f| matches!(f, Fate::Refused)),
        wait: Dist::of(&waits(run)),
        spread: Dist::of(&spreads),
    }
}

/// Parties whose members did not all share one fate: matched into
/// different matches or teams, or some matched and others not.
pub fn parties_split(scenario: &Scenario, run: &Run) -> usize {
    let mut split = 0;
    for g in scenario.groups.iter().filter(|g| g.is_party()) {
        let first = run.fates[g.members[0]];
        let whole = match first {
            Fate::Matched { index, .. } => {
                let m = &run.matches[index];
                let team_of = |p: usize| {
                    m.teams
                        .as_ref()
                        .map(|teams| teams.iter().position(|t| t.contains(&p)))
                };
                let team = team_of(g.members[0]);
                g.members.iter().all(|&p| {
                    matches!(run.fates[p], Fate::Matched { index: i, .. } if i == index)
                        && team_of(p) == team
                })
            }
            _ => g
                .members
                .iter()
                .all(|&p| std::mem::discriminant(&run.fates[p]) == std::mem::discriminant(&first)),
        };
        if !whole {
            split += 1;
        }
    }
    split
}

/// The team-average differences of a run's matches (matches with teams).
pub fn team_differences(run: &Run) -> Vec<f64> {
    run.matches
        .iter()
        .filter_map(|m| m.team_difference)
        .collect()
}

/// Waits of the players of one party size.
#[derive(Debug, Clone, PartialEq)]
pub struct PartyRow {
    pub size: u32,
    pub groups: usize,
    pub players: usize,
    pub unmatched: usize,
    pub wait: Option<Dist>,
}

/// One row per party size of the trace (1 = solo).
pub fn party_rows(scenario: &Scenario, run: &Run) -> Vec<PartyRow> {
    scenario
        .party_sizes()
        .into_iter()
        .map(|size| {
            let groups: Vec<_> = scenario
                .groups
                .iter()
                .filter(|g| g.members.len() as u32 == size)
                .collect();
            let mut waits = Vec::new();
            let mut unmatched = 0;
            for g in &groups {
                for &p in &g.members {
                    match run.fates[p] {
                        Fate::Matched { wait, .. } => waits.push(wait),
                        _ => unmatched += 1,
                    }
                }
            }
            PartyRow {
                size,
                groups: groups.len(),
                players: groups.len() * size as usize,
                unmatched,
                wait: Dist::of(&waits),
            }
        })
        .collect()
}

/// Waits of one rating decile.
#[derive(Debug, Clone, PartialEq)]
pub struct DecileRow {
    /// Rating range of the decile.
    pub lo: f64,
    pub hi: f64,
    pub players: usize,
    pub unmatched: usize,
    pub wait: Option<Dist>,
}

/// Deciles of the trace's ratings (the same for every run).
pub struct Deciles {
    of: Vec<usize>,
    ranges: Vec<(f64, f64)>,
}

impl Deciles {
    pub fn new(scenario: &Scenario) -> Self {
        let ratings: Vec<f64> = scenario.arrivals.iter().map(|a| a.rating).collect();
        let (of, ranges) = deciles(&ratings);
        Self { of, ranges }
    }

    pub fn rows(&self, run: &Run) -> Vec<DecileRow> {
        let mut waits = vec![Vec::new(); 10];
        let mut players = [0usize; 10];
        let mut unmatched = [0usize; 10];
        for (i, fate) in run.fates.iter().enumerate() {
            let d = self.of[i];
            players[d] += 1;
            match fate {
                Fate::Matched { wait, .. } => waits[d].push(*wait),
                _ => unmatched[d] += 1,
            }
        }
        (0..10)
            .map(|d| DecileRow {
                lo: self.ranges[d].0,
                hi: self.ranges[d].1,
                players: players[d],
                unmatched: unmatched[d],
                wait: Dist::of(&waits[d]),
            })
            .collect()
    }
}

/// The oracle frontier of a run set.
pub fn frontier(runs: &[Run]) -> Frontier {
    Frontier::new(
        runs.iter()
            .filter_map(|r| match r.kind {
                Kind::Oracle { period } => {
                    let s = summarize(r);
                    Some(Point {
                        period,
                        mean_wait: s.wait?.mean,
                        mean_spread: s.spread?.mean,
                    })
                }
                _ => None,
            })
            .collect(),
    )
}

/// One acceptance check's verdict.
#[derive(Debug, Clone, PartialEq)]
pub struct Check {
    pub rule_set: String,
    /// "a", "b" or "c".
    pub id: &'static str,
    pub what: String,
    pub pass: bool,
    pub detail: String,
}

/// The acceptance checks of every rule set run against FIFO and the oracle.
pub fn acceptance(scenario: &Scenario, runs: &[Run], frontier: &Frontier) -> Vec<Check> {
    let fifo_of = |shape: Shape| {
        runs.iter()
            .find(|r| r.kind == Kind::Fifo && r.shape == shape)
            .or_else(|| runs.iter().find(|r| r.kind == Kind::Fifo))
    };
    let mut checks = Vec::new();
    for run in runs.iter().filter(|r| r.is_rule_set()) {
        let Kind::RuleSet { relax, .. } = run.kind else {
            continue;
        };
        let fifo_run = fifo_of(run.shape);
        let fifo = fifo_run.map(summarize);
        let s = summarize(run);
        let check = |id, what: String, pass, detail| Check {
            rule_set: run.label.clone(),
            id,
            what,
            pass,
            detail,
        };
        // (a) against FIFO
        let what = format!("mean spread <= {:.0} % of FIFO's", SPREAD_VS_FIFO * 100.0);
        checks.push(match (&s.spread, fifo.as_ref().and_then(|f| f.spread)) {
            (Some(ours), Some(theirs)) => {
                let ratio = ours.mean / theirs.mean;
                check(
                    "a",
                    what,
                    ratio <= SPREAD_VS_FIFO,
                    format!(
                        "{:.1} vs FIFO {:.1}: {:.1} %",
                        ours.mean,
                        theirs.mean,
                        ratio * 100.0
                    ),
                )
            }
            _ => check("a", what, false, "no matches to compare".into()),
        });
        // (b) against the oracle frontier at the same mean wait
        let what = format!(
            "mean spread <= {SPREAD_VS_FRONTIER}x the oracle frontier's at the same mean wait"
        );
        checks.push(
            match (&s.spread, &s.wait, s.wait.and_then(|w| frontier.spread_at(w.mean))) {
                (Some(ours), Some(wait), Some((oracle, position))) => {
                    let ratio = ours.mean / oracle;
                    let note = match position {
                        Position::Inside => "",
                        Position::BelowRange => {
                            " (mean wait below the shortest oracle wait: its spread used)"
                        }
                        Position::AboveRange => {
                            " (mean wait beyond the longest oracle wait: its spread used; add a longer --oracle-periods)"
                        }
                    };
                    check(
                        "b",
                        what,
                        ratio <= SPREAD_VS_FRONTIER,
                        format!(
                            "{:.1} at mean wait {:.2} s; frontier {:.1}: {:.2}x{note}",
                            ours.mean, wait.mean, oracle, ratio
                        ),
                    )
                }
                _ => check("b", what, false, "no matches or no oracle points".into()),
            },
        );
        // (c) outliers within the relax time plus two ticks
        let bound = relax + OUTLIER_TICKS * TICK_SECONDS;
        let (mean, sd) = scenario.rating_moments();
        let cutoff = scenario.last_arrival() - bound;
        let mut eligible = 0;
        let mut excluded = 0;
        let mut late = 0;
        let mut unmatched = 0;
        let mut worst: f64 = 0.0;
        for (i, a) in scenario.arrivals.iter().enumerate() {
            if sd <= 0.0 || ((a.rating - mean) / sd).abs() < OUTLIER_Z {
                continue;
            }
            if a.time > cutoff {
                excluded += 1;
                continue;
            }
            eligible += 1;
            match run.fates[i] {
                Fate::Matched { wait, .. } => {
                    worst = worst.max(wait);
                    if wait > bound {
                        late += 1;
                    }
                }
                _ => unmatched += 1,
            }
        }
        checks.push(check(
            "c",
            format!(
                "every player with |z| >= {OUTLIER_Z} matched within relax + {OUTLIER_TICKS} ticks ({} s)",
                trim_float(bound)
            ),
            late == 0 && unmatched == 0,
            format!(
                "{}{eligible} such players, worst wait {worst:.2} s, {late} late, {unmatched} unmatched{}",
                if eligible == 0 { "vacuous: " } else { "" },
                if excluded > 0 {
                    format!(" ({excluded} arriving in the last {} s not counted)", trim_float(bound))
                } else {
                    String::new()
                }
            ),
        ));
        // (d) parties whole
        if scenario.has_parties() {
            let split = parties_split(scenario, run);
            let parties = scenario.groups.iter().filter(|g| g.is_party()).count();
            checks.push(check(
                "d",
                "no party split (members in different matches or teams, or not all matched)".into(),
                split == 0,
                format!("{split} of {parties} parties split"),
            ));
        }
        // (e) team balance against the FIFO-filled baseline of the same shape
        if run.shape.teams > 1 {
            let what = format!(
                "mean team-average difference <= {:.0} % of a FIFO-filled {}'s",
                TEAM_DIFFERENCE_VS_FIFO * 100.0,
                run.shape
            );
            let ours = Dist::of(&team_differences(run));
            let theirs = fifo_run
                .filter(|f| f.shape == run.shape)
                .and_then(|f| Dist::of(&team_differences(f)));
            checks.push(match (ours, theirs) {
                (Some(ours), Some(theirs)) => {
                    let ratio = ours.mean / theirs.mean;
                    check(
                        "e",
                        what,
                        ratio <= TEAM_DIFFERENCE_VS_FIFO,
                        format!(
                            "{:.1} vs FIFO {:.1}: {:.1} %",
                            ours.mean,
                            theirs.mean,
                            ratio * 100.0
                        ),
                    )
                }
                _ => check("e", what, false, "no team matches to compare".into()),
            });
        }
    }
    checks
}

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
    let _ = writeln!(out, "# {}\n", ctx.title);
    let _ = writeln!(out, "- **Trace:** {}", ctx.scenario);
    let _ = writeln!(
        out,
        "- **Matching:** {} players per match (the oracle: {}), matcher tick every {} s (simulated), instant match {}, drain {} s after the last arrival",
        ctx.team_size,
        if ctx.oracle_shape.teams > 1 {
            format!("{} teams of {}", ctx.oracle_shape.teams, ctx.oracle_shape.team_size)
        } else {
            "one team".to_owned()
        },
        trim_float(TICK_SECONDS),
        if ctx.instant_match { "on" } else { "off" },
        trim_float(ctx.drain)
    );
    let _ = writeln!(
        out,
        "- **Time compression:** one redis-server per rule set under libfaketime at x{} (measured x{:.2} through `redis.call('TIME')`{}); wall time {:.1} s",
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::outcome::FormedMatch;
    use crate::outcome::ReadyStats;
    use crate::scenario::{Generator, PartySizes, Row, Source};

    fn scenario(ratings: &[f64]) -> Scenario {
        Scenario::assemble(
            Source::Poisson(Generator {
                rate: 1.0,
                seconds: 100.0,
                mean: 0.0,
                sd: 1.0,
                seed: 0,
                parties: PartySizes::solo(),
                party_sd: 1.0,
            }),
            ratings
                .iter()
                .enumerate()
                .map(|(i, r)| Row::solo(i as f64, format!("p{i}"), *r))
                .collect(),
        )
        .unwrap()
    }

    fn run(label: &str, kind: Kind, fates: Vec<Fate>, spreads: &[f64]) -> Run {
        Run {
            label: label.into(),
            kind,
            shape: Shape::solo_team(10),
            fates,
            matches: spreads
                .iter()
                .map(|s| FormedMatch {
                    time: 0.0,
                    players: vec![],
                    spread: *s,
                    teams: None,
                    team_difference: None,
                })
                .collect(),
            notes: vec![],
            failures: 0,
            lagging: None,
            ready: None,
        }
    }

    fn matched(wait: f64) -> Fate {
        Fate::Matched { wait, index: 0 }
    }

    #[test]
    fn summaries_count_fates() {
        let r = run(
            "x",
            Kind::Fifo,
            vec![
                matched(1.0),
                matched(3.0),
                Fate::Expired,
                Fate::Waiting,
                Fate::Refused,
            ],
            &[10.0, 30.0],
        );
        let s = summarize(&r);
        assert_eq!(
            (s.matched, s.expired, s.waiting, s.refused, s.unmatched()),
            (2, 1, 1, 1, 3)
        );
        assert_eq!(s.wait.unwrap().mean, 2.0);
        assert_eq!(s.spread.unwrap().mean, 20.0);
        let table = summary_table(&[r]);
        assert!(
            table.contains("| x | 2 | 2 | 3 (1 / 0 / 1 / 1) | 2.00 |"),
            "{table}"
        );
    }

    #[test]
    fn checks_compare_with_fifo_the_frontier_and_outliers() {
        // 20 players: two outliers at |z| >= 3 (indices 0 and 5).
        let mut ratings = vec![0.0; 20];
        ratings[0] = 3.5;
        ratings[5] = -4.0;
        ratings[19] = 5.0; // arrives last: not counted
        let s = scenario(&ratings);
        let mut fates = vec![matched(1.0); 20];
        fates[0] = matched(12.0);
        fates[19] = Fate::Waiting;
        let runs = vec![
            run("fifo", Kind::Fifo, vec![matched(0.1); 20], &[100.0]),
            run(
                "rated",
                Kind::RuleSet {
                    file: "r.json".into(),
                    relax: 10.0,
                },
                fates.clone(),
                &[20.0],
            ),
            run(
                "o1",
                Kind::Oracle { period: 1.0 },
                vec![matched(0.5); 20],
                &[40.0],
            ),
            run(
                "o4",
                Kind::Oracle { period: 4.0 },
                vec![matched(2.0); 20],
                &[10.0],
            ),
        ];
        let f = frontier(&runs);
        assert_eq!(f.points().len(), 2);
        let checks = acceptance(&s, &runs, &f);
        assert_eq!(checks.len(), 3);
        // (a) 20 / 100 = 20 % <= 25 %
        assert!(checks[0].pass, "{checks:?}");
        // (b) mean wait (1.0*18 + 12 + ... ) / 19 matched; frontier between
        // (0.5, 40) and (2, 10) is 20/wait^1 -> at ~1.58 about 12.6; 20 / 12.6 > 1.25
        assert!(!checks[1].pass, "{checks:?}");
        // (c) bound 12 s: player 0 waited exactly 12 -> on time; 19 excluded
        assert!(checks[2].pass, "{checks:?}");
        assert!(
            checks[2].detail.contains("2 such players"),
            "{}",
            checks[2].detail
        );
        assert!(
            checks[2].detail.contains("1 arriving in the last 12 s"),
            "{}",
            checks[2].detail
        );
        // One more second and it is late.
        let mut late = runs.clone();
        late[1].fates[0] = matched(12.5);
        let checks = acceptance(&s, &late, &f);
        assert!(!checks[2].pass);
        assert!(checks[2].detail.contains("1 late"), "{}", checks[2].detail);
        let text = checks_table(&checks);
        assert!(text.contains("with \\|z\\| >= 3"), "{text}");
        assert!(
            text.contains("**MISS**") && text.contains("**PASS**"),
            "{text}"
        );
    }

    #[test]
    fn decile_rows_split_waits_by_rating() {
        let ratings: Vec<f64> = (0..20).map(f64::from).collect();
        let s = scenario(&ratings);
        let fates: Vec<Fate> = (0..20)
            .map(|i| {
                if i == 19 {
                    Fate::Waiting
                } else {
                    matched(f64::from(i))
                }
            })
            .collect();
        let r = run("x", Kind::Fifo, fates, &[]);
        let rows = Deciles::new(&s).rows(&r);
        assert_eq!(rows.len(), 10);
        assert_eq!((rows[0].lo, rows[0].hi, rows[0].players), (0.0, 1.0, 2));
        assert_eq!(rows[0].wait.unwrap().max, 1.0);
        assert_eq!(rows[9].unmatched, 1);
        assert_eq!(rows[9].wait.unwrap().n, 1);
        assert!(decile_table(&rows).contains("| 10 | 18 – 19 | 2 | 1 |"));
    }

    /// Two teams of two: p0 + p1 a party, p2, p3, p4, p5 solos.
    fn party_scenario() -> Scenario {
        let mut rows: Vec<Row> = [10.0, 20.0, 30.0, 40.0, 50.0, 60.0]
            .iter()
            .enumerate()
            .map(|(i, r)| Row::solo(i as f64, format!("p{i}"), *r))
            .collect();
        rows[1].time = 0.0;
        rows[0].party = Some("x".into());
        rows[1].party = Some("x".into());
        Scenario::assemble(Source::Csv { path: "t".into() }, rows).unwrap()
    }

    fn team_match(s: &Scenario, teams: Vec<Vec<usize>>) -> FormedMatch {
        FormedMatch::new(s, 1.0, teams.concat(), Some(teams))
    }

    #[test]
    fn parties_split_and_team_differences_come_from_the_trace() {
        let s = party_scenario();
        let shape = Shape {
            teams: 2,
            team_size: 2,
        };
        let m = |i| Fate::Matched {
            wait: 1.0,
            index: i,
        };
        // The party together: 10 + 20 against 30 + 40 -> averages 15, 35.
        let whole = Run {
            shape,
            matches: vec![team_match(&s, vec![vec![0, 1], vec![2, 3]])],
            ..run(
                "whole",
                Kind::Fifo,
                vec![m(0), m(0), m(0), m(0), Fate::Waiting, Fate::Waiting],
                &[],
            )
        };
        assert_eq!(parties_split(&s, &whole), 0);
        assert_eq!(team_differences(&whole), [20.0]);
        // The party across two teams of one match.
        let across = Run {
            matches: vec![team_match(&s, vec![vec![0, 2], vec![1, 3]])],
            ..whole.clone()
        };
        assert_eq!(parties_split(&s, &across), 1);
        // One member matched, the other waiting.
        let apart = Run {
            fates: vec![m(0), Fate::Waiting, m(0), m(0), m(0), Fate::Waiting],
            matches: vec![team_match(&s, vec![vec![0, 2], vec![3, 4]])],
            ..whole.clone()
        };
        assert_eq!(parties_split(&s, &apart), 1);
        // Both waiting: whole.
        let waiting = Run {
            fates: vec![Fate::Waiting; 6],
            matches: vec![],
            ..whole.clone()
        };
        assert_eq!(parties_split(&s, &waiting), 0);
        // Waits by party size: the duo and the four solos.
        let rows = party_rows(&s, &whole);
        assert_eq!(rows.len(), 2);
        assert_eq!(
            (
                rows[0].size,
                rows[0].groups,
                rows[0].players,
                rows[0].unmatched
            ),
            (1, 4, 4, 2)
        );
        assert_eq!(
            (
                rows[1].size,
                rows[1].groups,
                rows[1].players,
                rows[1].unmatched
            ),
            (2, 1, 2, 0)
        );
        assert_eq!(rows[1].wait.unwrap().p90, 1.0);
        assert!(party_table(&s, std::slice::from_ref(&whole))
            .contains("| whole | 2 | 1 | 2 | 0 | 1.00 |"));
        assert!(teams_table(&s, &[across]).contains("| whole | 2x2 | 1 | 1 | 10.0 |"));
    }

    #[test]
    fn team_worlds_are_checked_for_splits_and_balance_against_their_fifo() {
        let s = party_scenario();
        let shape = Shape {
            teams: 2,
            team_size: 2,
        };
        let m = |i| Fate::Matched {
            wait: 1.0,
            index: i,
        };
        let fates = vec![m(0), m(0), m(0), m(0), m(1), m(1)];
        // FIFO: 10 + 20 | 30 + 40 -> 20; nobody else for the second match's teams.
        let fifo = Run {
            shape,
            matches: vec![team_match(&s, vec![vec![0, 1], vec![2, 3]])],
            ..run("FIFO", Kind::Fifo, fates.clone(), &[])
        };
        // Rated: 10 + 20 | 30 + 4? -- here 10 + 40 is impossible (the party), so
        // the difference is 20 too; a second match 50 | 60 differs by 10.
        let mut rated = Run {
            shape,
            matches: vec![
                team_match(&s, vec![vec![0, 1], vec![2, 3]]),
                team_match(&s, vec![vec![4], vec![5]]),
            ],
            ..run(
                "rated",
                Kind::RuleSet {
                    file: "r.json".into(),
                    relax: 10.0,
                },
                fates,
                &[],
            )
        };
        let checks = acceptance(&s, &[rated.clone(), fifo.clone()], &frontier(&[]));
        let ids: Vec<&str> = checks.iter().map(|c| c.id).collect();
        assert_eq!(ids, ["a", "b", "c", "d", "e"]);
        assert!(checks[3].pass, "{:?}", checks[3]);
        assert_eq!(checks[3].detail, "0 of 1 parties split");
        // (e): mean 15 vs 20 = 75 % > 25 %.
        assert!(!checks[4].pass);
        assert!(
            checks[4].detail.contains("15.0 vs FIFO 20.0: 75.0 %"),
            "{}",
            checks[4].detail
        );
        // Balanced enough: 0 and 1 -> 0.5 / 20.
        rated.matches[0].team_difference = Some(0.0);
        rated.matches[1].team_difference = Some(1.0);
        let checks = acceptance(&s, &[rated, fifo], &frontier(&[]));
        assert!(checks[4].pass, "{:?}", checks[4]);
    }

    #[test]
    fn the_ready_table_puts_each_probability_next_to_the_run_without() {
        let kind = Kind::RuleSet {
            file: "ready.json".into(),
            relax: 10.0,
        };
        let with = Run {
            ready: Some(ReadyStats {
                accept_probability: 0.9,
                refusal: "declines".into(),
                proposals: 12,
                accepted: 8,
                declined: 3,
                timed_out: 1,
                pending: 0,
                removed_by_declines: 3,
                removed_by_timeouts: 2,
                requeued: 40,
                answers: 100,
            }),
            ..run(
                "ready accept 0.9 (w)",
                kind.clone(),
                vec![matched(2.0), Fate::Removed],
                &[],
            )
        };
        let without = run(
            "ready without ready check (w)",
            kind,
            vec![matched(1.0); 2],
            &[],
        );
        let other = run(
            "other (w)",
            Kind::RuleSet {
                file: "other.json".into(),
                relax: 1.0,
            },
            vec![],
            &[],
        );
        let table = ready_table(&[with.clone(), without, other]);
        assert!(
            table.contains("| ready accept 0.9 (w) | 0.9 (else declines) | 12 | 8 | 3 / 1 | 0 | 3 / 2 | 40 | 2.00 |"),
            "{table}"
        );
        assert!(
            table.contains("| ready without ready check (w) | no ready check |"),
            "{table}"
        );
        assert!(!table.contains("other"), "{table}");
        let s = summarize(&with);
        assert_eq!((s.removed, s.unmatched()), (1, 1));
    }
}
