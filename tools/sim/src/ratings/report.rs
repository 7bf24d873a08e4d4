//! The ratings scenario's statistics, done criteria and Markdown report.

use std::fmt::Write as _;

use super::{LaneResult, Outcome, Played, Variant};
use crate::oracle::trim_float;
use crate::report::{checks_table, Check};
use crate::stats::Dist;

/// (Q1): the MAE after the target games per player on average, as a
/// fraction of its starting value (configured updates).
pub const MAE_VS_START: f64 = 0.25;
/// (Q2): the mean true-skill spread of the last matches against the same
/// world with ratings known exactly.
pub const SPREAD_VS_KNOWN: f64 = 1.3;
/// The last matches: those formed after this fraction of the target games.
pub const END_FROM: f64 = 5.0 / 6.0;

/// The MAE at the first checkpoint at or after `games` per player.
pub fn mae_at(curve: &[(f64, f64)], games: f64) -> Option<f64> {
    curve
        .iter()
        .find(|(g, _)| *g >= games - 1e-9)
        .map(|(_, m)| *m)
}

/// (Q1) of one lane, the one definition: the MAE between the rating
/// matching uses and the true skill over the whole population, at the
/// first checkpoint at or after `games` per player on average, against its
/// value at 0 games ([`mae_at`] of the lane's curve).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MaeRatio {
    pub start: f64,
    pub end: f64,
    pub ratio: f64,
    /// `ratio <= MAE_VS_START`.
    pub pass: bool,
}

/// (Q1); `None` when the curve lacks either end or starts at 0.
pub fn q1(lane: &LaneResult, games: f64) -> Option<MaeRatio> {
    let (start, end) = (mae_at(&lane.curve, 0.0)?, mae_at(&lane.curve, games)?);
    (start > 0.0).then(|| {
        let ratio = end / start;
        MaeRatio {
            start,
            end,
            ratio,
            pass: ratio <= MAE_VS_START,
        }
    })
}

/// (Q2)'s statistic of one lane: the true-skill spread (highest minus
/// lowest true skill) of the matches formed in [`end_window`]`(games)`.
pub fn end_spread(lane: &LaneResult, games: f64) -> Option<Dist> {
    quality(&formed_within(&lane.matches, end_window(games))).spread
}

/// (Q2) of a rule set, the one definition: the mean [`end_spread`] with
/// updates against the same world's with ratings known exactly.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SpreadRatio {
    pub ours: Dist,
    pub known: Dist,
    pub ratio: f64,
    /// `ratio <= SPREAD_VS_KNOWN`.
    pub pass: bool,
}

/// (Q2); `None` without matches in the window or with a zero known spread.
pub fn q2(updates: &LaneResult, known: &LaneResult, games: f64) -> Option<SpreadRatio> {
    let (ours, known) = (end_spread(updates, games)?, end_spread(known, games)?);
    (known.mean > 0.0).then(|| {
        let ratio = ours.mean / known.mean;
        SpreadRatio {
            ours,
            known,
            ratio,
            pass: ratio <= SPREAD_VS_KNOWN,
        }
    })
}

/// A number of games per player as the report prints it: one decimal at
/// most (a sixth of 100 games is 16.7, not 16.666666666666668).
fn games_label(v: f64) -> String {
    trim_float((v * 10.0).round() / 10.0)
}

/// The games-per-player range whose matches count as "at the end".
pub fn end_window(games: f64) -> (f64, f64) {
    (games * END_FROM, games)
}

/// Matches formed while the mean games per player was within `(lo, hi)`
/// (`lo` included; `hi` included too, so a run that overshoots by one match
/// still counts it).
pub fn formed_within(matches: &[Played], (lo, hi): (f64, f64)) -> Vec<&Played> {
    matches
        .iter()
        .filter(|m| m.games_at >= lo - 1e-9 && m.games_at <= hi + 1e-9)
        .collect()
}

/// Mean true-skill spread, team difference and rating error of `matches`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Quality {
    pub matches: usize,
    pub spread: Option<Dist>,
    pub team_difference: Option<Dist>,
    pub rating_spread: Option<Dist>,
    pub error: Option<Dist>,
}

pub fn quality(matches: &[&Played]) -> Quality {
    let of = |f: &dyn Fn(&Played) -> Option<f64>| -> Option<Dist> {
        Dist::of(&matches.iter().filter_map(|m| f(m)).collect::<Vec<_>>())
    };
    Quality {
        matches: matches.len(),
        spread: of(&|m| Some(m.true_spread)),
        team_difference: of(&|m| m.true_team_difference),
        rating_spread: of(&|m| Some(m.rating_spread)),
        error: of(&|m| Some(m.error)),
    }
}

/// The lanes of each rule set, in order: (file, label, lanes).
pub fn by_rule_set(lanes: &[LaneResult]) -> Vec<(String, String, Vec<&LaneResult>)> {
    let mut out: Vec<(String, String, Vec<&LaneResult>)> = Vec::new();
    for l in lanes {
        match out.iter_mut().find(|(f, _, _)| *f == l.file) {
            Some((_, _, v)) => v.push(l),
            None => out.push((l.file.clone(), l.rule_set.clone(), vec![l])),
        }
    }
    out
}

pub fn variant<'a>(lanes: &[&'a LaneResult], v: Variant) -> Option<&'a LaneResult> {
    lanes.iter().copied().find(|l| l.variant == v)
}

/// The done criteria per rule set: (Q1) MAE after `games` per player ≤
/// 25 % of the start, (Q2) spread of the last matches ≤ 1.3 × known.
pub fn criteria(lanes: &[LaneResult], games: f64) -> Vec<Check> {
    let mut out = Vec::new();
    for (_, label, runs) in by_rule_set(lanes) {
        let check = |id, what: String, pass, detail| Check {
            rule_set: label.clone(),
            id,
            what,
            pass,
            detail,
        };
        let updates = variant(&runs, Variant::Updates);
        let none = variant(&runs, Variant::NoUpdates);
        let known = variant(&runs, Variant::Known);
        let what = format!(
            "MAE after {} games per player ≤ {:.0} % of the start",
            trim_float(games),
            MAE_VS_START * 100.0
        );
        let ends = updates.map(|u| {
            let (start, end) = (mae_at(&u.curve, 0.0), mae_at(&u.curve, games));
            (q1(u, games), start, end)
        });
        out.push(match ends {
            Some((Some(q), _, _)) => {
                let none_end = none.and_then(|n| mae_at(&n.curve, games));
                check(
                    "Q1",
                    what,
                    q.pass,
                    format!(
                        "{:.1} → {:.1} ({:.1} %){}",
                        q.start,
                        q.end,
                        q.ratio * 100.0,
                        none_end.map_or_else(String::new, |n| format!("; without updates {n:.1}"))
                    ),
                )
            }
            Some((None, Some(start), None)) => check(
                "Q1",
                what,
                false,
                format!(
                    "the run stopped before {} games per player (start {start:.1})",
                    trim_float(games)
                ),
            ),
            _ => check("Q1", what, false, "no run with updates".into()),
        });
        let what = format!(
            "mean spread of the last matches ≤ {} × with ratings known exactly",
            trim_float(SPREAD_VS_KNOWN)
        );
        let window = end_window(games);
        out.push(match updates.zip(known).and_then(|(u, k)| q2(u, k, games)) {
            Some(q) => check(
                "Q2",
                what,
                q.pass,
                format!(
                    "{:.1} vs {:.1} known: {:.2}× (matches formed at {}–{} games per player; {} and {}){}",
                    q.ours.mean,
                    q.known.mean,
                    q.ratio,
                    games_label(window.0),
                    games_label(window.1),
                    q.ours.n,
                    q.known.n,
                    none.and_then(|n| end_spread(n, games))
                        .map_or_else(String::new, |n| format!("; without updates {:.1}", n.mean))
                ),
            ),
            _ => check("Q2", what, false, "no matches in the window".into()),
        });
    }
    out
}

/// Mean quality per bin of `width` games per player: (bin start, quality).
pub fn over_time(matches: &[Played], width: f64, until: f64) -> Vec<(f64, Quality)> {
    let mut out = Vec::new();
    let mut lo = 0.0;
    while lo < until - 1e-9 {
        let hi = (lo + width).min(until);
        let within: Vec<&Played> = matches
            .iter()
            .filter(|m| m.games_at >= lo - 1e-9 && (m.games_at < hi - 1e-9 || hi >= until - 1e-9))
            .collect();
        out.push((lo, quality(&within)));
        lo = hi;
    }
    out
}

/// Facts about the run for the header.
#[derive(Debug, Clone)]
pub struct Context {
    pub title: String,
    pub games: f64,
    pub mean: f64,
    pub sd: f64,
    pub seed: u64,
    pub initial: f64,
    pub noise: f64,
    pub game_seconds: (f64, f64),
    pub rest: (f64, f64),
    pub ramp: f64,
    pub speed: f64,
    pub wall_seconds: f64,
    pub command: String,
    pub core: Option<String>,
}

fn num(v: Option<f64>, digits: usize) -> String {
    v.map_or_else(|| "–".into(), |v| format!("{v:.digits$}"))
}

/// The whole report; `images` adds the chart links (the file version).
pub fn render(ctx: &Context, outcome: &Outcome, checks: &[Check], images: bool) -> String {
    let mut out = String::new();
    let n = outcome.population.skills.len();
    let _ = writeln!(out, "# {}\n", ctx.title);
    let _ = writeln!(
        out,
        "- **Population:** {n} players, hidden true skills N({}, {}) (seed {}; drawn skills: mean {:.1}, sd {:.1}); everyone's rating starts at {} (the claim of its first join)",
        trim_float(ctx.mean),
        trim_float(ctx.sd),
        ctx.seed,
        crate::stats::mean(&outcome.population.skills).unwrap_or(0.0),
        sd(&outcome.population.skills),
        trim_float(ctx.initial)
    );
    let _ = writeln!(
        out,
        "- **Outcome model:** in every game each player performs at its true skill + N(0, {}²); a team's performance is the sum of its players', a match without teams ranks every player; higher places first. Results go through `use_cases::report_result` (the result route)",
        trim_float(ctx.noise)
    );
    let _ = writeln!(
        out,
        "- **Play:** every match is assigned (`assign_match`) and lasts U({}, {}) s; its players rest U({}, {}) s after the result and join again; first joins spread over {} s; the run stops at {} games per player on average (each variant on its own count), games under way are finished and whoever waits leaves",
        trim_float(ctx.game_seconds.0),
        trim_float(ctx.game_seconds.1),
        trim_float(ctx.rest.0),
        trim_float(ctx.rest.1),
        trim_float(ctx.ramp),
        trim_float(ctx.games)
    );
    let _ = writeln!(
        out,
        "- **Time compression:** one redis-server per variant under libfaketime at x{} (measured x{:.2}{}); wall time {:.1} s",
        trim_float(ctx.speed),
        outcome.measured_speed,
        outcome.clock_error.map_or_else(String::new, |e| format!(
            "; clock model off by {:.1} ms at the end",
            e * 1000.0
        )),
        ctx.wall_seconds
    );
    let _ = writeln!(out, "- **Command:** `{}`", ctx.command);
    if let Some(core) = &ctx.core {
        let _ = writeln!(out, "- **Core:** git {core}");
    }
    for (label, file, world, system) in &outcome.rule_sets {
        let _ = writeln!(out, "- **{label}** (`{file}`): {world}; updates: {system}");
    }
    let _ = writeln!(
        out,
        "\nEach rule set is played three ways on the same population: **{}**, **{}** (`rating.updates` `{{\"system\": \"none\"}}`: everyone stays at {}) and **{}** (no updates, every join claims the player's true skill).\n",
        Variant::Updates.describe(),
        Variant::NoUpdates.describe(),
        trim_float(ctx.initial),
        Variant::Known.describe()
    );

    let _ = writeln!(out, "## Done criteria\n");
    out.push_str(&checks_table(checks));
    let lagging: Vec<String> = outcome
        .lanes
        .iter()
        .filter_map(|l| l.lagging.as_ref().map(|w| format!("{}: {w}", l.label)))
        .collect();
    if !lagging.is_empty() {
        let _ = writeln!(
            out,
            "\n**TOO SLOW:** {} — rerun with a lower --speed.",
            lagging.join("; ")
        );
    }
    let failed: Vec<String> = outcome
        .lanes
        .iter()
        .filter(|l| l.failures > 0)
        .map(|l| format!("{} ({})", l.label, l.failures))
        .collect();
    if !failed.is_empty() {
        let _ = writeln!(
            out,
            "\n**ERRORS** in {}: see the diagnostics.",
            failed.join(", ")
        );
    }

    let window = end_window(ctx.games);
    let _ = writeln!(out, "\n## Summary\n");
    let _ = writeln!(
        out,
        "Spreads and team differences are of **true skills** (what players feel); *rating spread* is the record's (what the matcher saw). *End*: matches formed at {}–{} games per player on average.\n",
        games_label(window.0),
        games_label(window.1)
    );
    out.push_str("| variant | matches | games per player mean (min–max) | wait mean | wait p95 | MAE start | MAE at target | spread mean (all) | spread mean (end) | spread p95 (end) | team diff mean (end) | rating spread mean (end) |\n");
    out.push_str("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    for l in &outcome.lanes {
        let all = quality(&l.matches.iter().collect::<Vec<_>>());
        let end = quality(&formed_within(&l.matches, window));
        // (Q2)'s statistic, from its one definition.
        let spread_end = end_spread(l, ctx.games);
        let games: Vec<f64> = l.games.iter().map(|g| f64::from(*g)).collect();
        let wait = Dist::of(&l.waits);
        let _ = writeln!(
            out,
            "| {} | {} | {:.1} ({}–{}) | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            l.label,
            l.matches.len(),
            crate::stats::mean(&games).unwrap_or(0.0),
            l.games.iter().min().unwrap_or(&0),
            l.games.iter().max().unwrap_or(&0),
            num(wait.map(|w| w.mean), 2),
            num(wait.map(|w| w.p95), 2),
            num(mae_at(&l.curve, 0.0), 1),
            num(mae_at(&l.curve, ctx.games), 1),
            num(all.spread.map(|d| d.mean), 1),
            num(spread_end.map(|d| d.mean), 1),
            num(spread_end.map(|d| d.p95), 1),
            num(end.team_difference.map(|d| d.mean), 1),
            num(end.rating_spread.map(|d| d.mean), 1),
        );
    }

    for (file, label, runs) in by_rule_set(&outcome.lanes) {
        let _ = writeln!(out, "\n## {label} (`{file}`)\n");
        if images {
            let _ = writeln!(
                out,
                "![mean absolute rating error over games played]({label}-error.svg)\n\n![match quality over games played]({label}-quality.svg)\n"
            );
        }
        let _ = writeln!(
            out,
            "**Mean absolute error** between the rating matching uses and the true skill, over all {n} players, at each number of games per player on average:\n"
        );
        let mut header = "| games per player |".to_owned();
        let mut rule = "|---:|".to_owned();
        for r in &runs {
            let _ = write!(header, " {} |", r.variant.describe());
            rule.push_str("---:|");
        }
        let _ = writeln!(out, "{header}\n{rule}");
        for g in table_points(ctx.games) {
            let mut row = format!("| {} |", trim_float(g));
            for r in &runs {
                let _ = write!(row, " {} |", num(mae_at(&r.curve, g), 1));
            }
            let _ = writeln!(out, "{row}");
        }
        let width = (ctx.games / 6.0).max(CHECK_BIN);
        let _ = writeln!(
            out,
            "\n**Match quality over time**: mean true-skill spread (and team-average difference, with teams) of the matches formed in each range of games per player:\n"
        );
        let mut header = "| games per player |".to_owned();
        let mut rule = "|---|".to_owned();
        for r in &runs {
            let _ = write!(header, " {} |", r.variant.describe());
            rule.push_str("---:|");
        }
        let _ = writeln!(out, "{header}\n{rule}");
        let bins: Vec<Vec<(f64, Quality)>> = runs
            .iter()
            .map(|r| over_time(&r.matches, width, ctx.games))
            .collect();
        for (k, (lo, _)) in bins.first().map_or(&Vec::new(), |b| b).iter().enumerate() {
            let hi = (lo + width).min(ctx.games);
            let mut row = format!("| {}–{} |", games_label(*lo), games_label(hi));
            for b in &bins {
                let q = b.get(k).map(|(_, q)| *q);
                let cell = match q {
                    Some(q) if q.matches > 0 => format!(
                        "{}{}",
                        num(q.spread.map(|d| d.mean), 0),
                        q.team_difference
                            .map_or_else(String::new, |t| format!(" / {:.0}", t.mean))
                    ),
                    _ => "–".into(),
                };
                let _ = write!(row, " {cell} |");
            }
            let _ = writeln!(out, "{row}");
        }
    }

    let _ = writeln!(out, "\n## Run diagnostics\n");
    for l in &outcome.lanes {
        let _ = writeln!(out, "- **{}**:", l.label);
        let _ = writeln!(
            out,
            "  - {} matches, {} results; reached the target at {} s, ended at {:.0} s (simulated)",
            l.matches.len(),
            l.results,
            l.stopped_at
                .map_or_else(|| "–".into(), |t| format!("{t:.0}")),
            l.ended_at
        );
        let _ = writeln!(
            out,
            "  - ratings matching used: {} of the records' ratings differ from the player's latest result (or claim), {} results read a different rating before; the ratings store holds {} entries, {} disagreeing with the results{}",
            l.used_mismatches,
            l.before_mismatches,
            l.store_entries,
            l.store_mismatches,
            if l.variant == Variant::Updates { "" } else { " (a world without updates must have none)" }
        );
        if l.anomalies.count > 0 {
            let _ = writeln!(
                out,
                "  - **{} anomalies**, e.g. {}",
                l.anomalies.count,
                l.anomalies.examples.join("; ")
            );
        }
        if l.failures > 0 {
            let _ = writeln!(
                out,
                "  - **{} failures**, first: {}",
                l.failures,
                l.first_error.as_deref().unwrap_or("?")
            );
        }
        for note in &l.notes {
            let _ = writeln!(out, "  - {note}");
        }
    }
    out
}

/// Smallest bin of the quality table, in games per player.
const CHECK_BIN: f64 = 0.5;

/// The rows of the MAE table: 0, 1, 2, 3, 5, then every 5 up to the
/// target, and the target.
pub fn table_points(games: f64) -> Vec<f64> {
    let mut out: Vec<f64> = [0.0, 1.0, 2.0, 3.0]
        .into_iter()
        .chain((1..).map(|k| f64::from(k) * 5.0).take_while(|g| *g < games))
        .filter(|g| *g < games - 1e-9)
        .collect();
    out.push(games);
    out
}

fn sd(values: &[f64]) -> f64 {
    let Some(m) = crate::stats::mean(values) else {
        return 0.0;
    };
    (values.iter().map(|v| (v - m).powi(2)).sum::<f64>() / values.len() as f64).sqrt()
}
