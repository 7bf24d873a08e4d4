//! The attributes scenario's Markdown report.

use std::fmt::Write as _;
use std::path::Path;

use super::tables::{group_table, num, opt, overall_table, window_table};
use super::{
    by_file, distance_in_force, distance_rule, find, first_choice_rows, intersection_rule,
    listed_rows, modes_played, over_rule, player_spread, spread_edges, spread_points, spread_rows,
    variant_of, window_cost, GroupRow, MANY,
};
use crate::oracle::trim_float;
use crate::outcome::{AttrVariant, Run};
use crate::report::{checks_table, ticking, write_header, Check, Context};
use crate::scenario::Scenario;
use crate::stats::Dist;

/// The file stem of a rule set file: the charts' prefix.
pub fn stem(file: &str) -> String {
    Path::new(file)
        .file_stem()
        .map_or_else(|| "rules".into(), |s| s.to_string_lossy().into_owned())
}

/// The charts of rule set `file`: (waits by modes listed, spread against
/// wait).
pub fn chart_names(file: &str) -> (String, String) {
    let s = stem(file);
    (
        format!("{s}-waits-by-modes-listed.svg"),
        format!("{s}-spread-vs-wait.svg"),
    )
}

/// The p50 of each number listed against those listing 1, per matcher, and
/// the world as written against first choice only for the same players.
fn ratios(scenario: &Scenario, runs: &[&Run], attribute: &str) -> String {
    let mut out = String::new();
    let rows: Vec<(&Run, Vec<GroupRow>)> = runs
        .iter()
        .map(|r| (*r, listed_rows(scenario, r, attribute)))
        .collect();
    out.push_str(
        "| matcher | modes listed | p50 vs those listing 1 (same matcher) |\n|---|---:|---:|\n",
    );
    for (run, rows) in &rows {
        let one = rows.iter().find(|r| r.key == "1").and_then(|r| r.p50_all);
        for r in rows.iter().filter(|r| r.key != "1") {
            let ratio = match (r.p50_all, one) {
                (Some(a), Some(b)) if a.is_finite() && b.is_finite() && b > 0.0 => {
                    format!("{:.2}x", a / b)
                }
                _ => "–".into(),
            };
            let _ = writeln!(out, "| {} | {} | {ratio} |", run.label, r.key);
        }
    }
    let written = rows
        .iter()
        .find(|(r, _)| variant_of(r).is_some_and(|(v, _, _)| v == AttrVariant::AsWritten));
    let first = rows
        .iter()
        .find(|(r, _)| variant_of(r).is_some_and(|(v, _, _)| v == AttrVariant::FirstChoiceOnly));
    if let (Some((w, wrows)), Some((f, frows))) = (written, first) {
        let _ = writeln!(
            out,
            "\nThe same players, {} against {} (p50, the unmatched counted as the longest):\n",
            w.label, f.label
        );
        out.push_str(
            "| modes listed | as written | first choice only | ratio |\n|---:|---:|---:|---:|\n",
        );
        for (a, b) in wrows.iter().zip(frows.iter()) {
            let ratio = match (a.p50_all, b.p50_all) {
                (Some(x), Some(y)) if x.is_finite() && y.is_finite() && y > 0.0 => {
                    format!("{:.2}x", x / y)
                }
                _ => "–".into(),
            };
            let _ = writeln!(
                out,
                "| {} | {} | {} | {ratio} |",
                a.key,
                a.p50_all.map_or_else(|| "–".into(), num),
                b.p50_all.map_or_else(|| "–".into(), num)
            );
        }
    }
    out
}

/// The modes played, per matcher.
fn modes_table(scenario: &Scenario, runs: &[&Run], rule: &str, attribute: &str) -> String {
    let first = super::first_choices(scenario, attribute);
    let n = scenario.arrivals.len().max(1) as f64;
    let listing = |mode: &str| {
        (0..scenario.arrivals.len())
            .filter(|&p| {
                scenario
                    .attrs
                    .as_ref()
                    .and_then(|a| a.list(p, attribute))
                    .is_some_and(|l| l.contains(&mode))
            })
            .count()
    };
    let played: Vec<(&Run, super::ModesPlayed)> = runs
        .iter()
        .map(|r| (*r, modes_played(scenario, r, rule, attribute)))
        .collect();
    let mut out = String::new();
    out.push_str("| mode | first choice of | listed by |");
    for (run, _) in &played {
        let _ = write!(out, " {}: share of matches |", run.label);
    }
    out.push('\n');
    out.push_str("|---|---:|---:|");
    for _ in &played {
        out.push_str("---:|");
    }
    out.push('\n');
    for (i, (mode, firsts)) in first.iter().enumerate() {
        let _ = write!(
            out,
            "| {mode} | {:.1} % | {:.1} % |",
            *firsts as f64 * 100.0 / n,
            listing(mode) as f64 * 100.0 / n
        );
        for (_, p) in &played {
            match p.modes.get(i) {
                Some((_, _, share)) if p.recorded > 0 => {
                    let _ = write!(out, " {:.1} % |", share * 100.0);
                }
                _ => out.push_str(" – |"),
            }
        }
        out.push('\n');
    }
    out.push_str("| matches with several modes in common | | |");
    for (_, p) in &played {
        if p.recorded > 0 {
            let _ = write!(
                out,
                " {} ({:.1} %) |",
                p.several,
                p.several as f64 * 100.0 / p.recorded as f64
            );
        } else {
            out.push_str(" – |");
        }
    }
    out.push('\n');
    out.push_str("| matches whose players list no mode in common (from the trace) | | |");
    for (_, p) in &played {
        let _ = write!(
            out,
            " {} ({:.1} %) |",
            p.none_in_common,
            p.none_in_common as f64 * 100.0 / p.matches.max(1) as f64
        );
    }
    out.push('\n');
    out
}

/// Spread buckets of the world as written, and the spread with and without
/// the rule.
fn spread_section(scenario: &Scenario, runs: &[&Run], rule: &shared::config::MatchRule) -> String {
    let mut out = String::new();
    let attribute = rule.kind.attribute().unwrap_or_default();
    out.push_str(
        "| matcher | matches | spread mean | p50 | p95 | max |\n|---|---:|---:|---:|---:|---:|\n",
    );
    for run in runs {
        let spreads: Vec<f64> = run
            .matches
            .iter()
            .filter_map(|m| player_spread(scenario, m, attribute))
            .collect();
        let d = Dist::of(&spreads);
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} |",
            run.label,
            spreads.len(),
            opt(d, |d| d.mean),
            opt(d, |d| d.p50),
            opt(d, |d| d.p95),
            opt(d, |d| d.max)
        );
    }
    out.push('\n');
    let Some(written) = find(runs, AttrVariant::AsWritten) else {
        return out;
    };
    let points = spread_points(scenario, written, rule);
    let edges = spread_edges(rule);
    let _ = writeln!(
        out,
        "{}, by the spread of `{attribute}` in the match (what the rule measures, from the trace). The anchor's wait decides the number in force (the record's `anchorWaitMs`); the players' mean wait is over the match's players. {} of {} matches have a spread over the number in force their record states.\n",
        written.label,
        over_rule(&points),
        points.len()
    );
    out.push_str("| spread | matches | share | anchor's wait mean | p50 | p95 | max | players' mean wait, mean | p95 | max allowed at the anchor's p50 wait |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    let total = points.len().max(1) as f64;
    for row in spread_rows(&points, &edges) {
        let range = if row.range.1.is_finite() {
            format!("{}–{}", trim_float(row.range.0), trim_float(row.range.1))
        } else {
            format!("over {}", trim_float(row.range.0))
        };
        let allowed = row
            .anchor_wait
            .and_then(|d| distance_in_force(rule, d.p50))
            .map_or_else(|| "off".into(), num);
        let _ = writeln!(
            out,
            "| {range} | {} | {:.1} % | {} | {} | {} | {} | {} | {} | {} |",
            row.matches,
            row.matches as f64 * 100.0 / total,
            opt(row.anchor_wait, |d| d.mean),
            opt(row.anchor_wait, |d| d.p50),
            opt(row.anchor_wait, |d| d.p95),
            opt(row.anchor_wait, |d| d.max),
            opt(row.mean_wait, |d| d.mean),
            opt(row.mean_wait, |d| d.p95),
            if row.matches > 0 {
                allowed
            } else {
                "–".into()
            },
        );
    }
    out
}

/// A rule for the report: its name, type and numbers.
pub fn describe_rule(rule: &shared::config::MatchRule) -> String {
    use shared::config::{Relax, RuleKind};
    let what = match &rule.kind {
        RuleKind::Intersection {
            attribute,
            min_count,
            party,
        } => format!(
            "intersection of `{attribute}`, at least {min_count} in common (parties: {})",
            party.as_str()
        ),
        RuleKind::Distance {
            attribute,
            max,
            from_anchor,
            party,
        } => format!(
            "distance of `{attribute}`, {} at most {} (parties: {})",
            if *from_anchor {
                "each from the anchor's"
            } else {
                "highest minus lowest"
            },
            trim_float(*max),
            party.as_str()
        ),
        other => format!(
            "{} of `{}`",
            other.as_str(),
            other.attribute().unwrap_or("")
        ),
    };
    let relax = match &rule.relax {
        Some(Relax::Linear { per_second, limit }) => format!(
            ", relaxing {}/s toward {}",
            trim_float(*per_second),
            trim_float(*limit)
        ),
        Some(Relax::Steps(steps)) => format!(
            ", relaxing in {} steps ({})",
            steps.len(),
            steps
                .iter()
                .map(|(at, v)| format!(
                    "{} s: {}",
                    trim_float(at.as_secs_f64()),
                    v.map_or_else(|| "off".into(), trim_float)
                ))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        None => String::new(),
    };
    let optional = rule.optional_after.map_or_else(String::new, |d| {
        format!(", off after {} s", trim_float(d.as_secs_f64()))
    });
    format!("**{}**: {what}{relax}{optional}", rule.name)
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

    out.push_str("## Done criteria\n\n");
    let _ = writeln!(
        out,
        "(A1) a world with an intersection rule, as written: the p50 wait of the players listing {MANY} modes against those listing 1, each group's unmatched players (expired, still waiting or refused) counted as waiting longer than anyone matched. (A2) every match record of every run with rules re-checked offline by the rules oracle (`shared::rules::recheck`: each rule in force at the anchor's recorded wait holds for the recorded attributes, and the record states what was in force), every participant's recorded attributes the ones it sent, and for a distance rule every match's distance, recomputed from the trace, within the number in force its record states.\n"
    );
    if checks.is_empty() {
        out.push_str("Nothing to check: no world with rules was simulated.\n\n");
    } else {
        out.push_str(&checks_table(checks));
        out.push('\n');
    }

    out.push_str("## How it is played\n\n");
    out.push_str("Each rule set's world is played on the same trace, each way on its own server: **as written** (every player sends every attribute the trace gives them), **first choice only** (a world with an intersection rule: every player sends only the first item of that list, their first choice, so that only players with the same first choice can meet: one queue per mode, in one world), **without rules** (the world without its `rules`: nobody's attributes matter, a plain queue) and **window 4096** (as written, with `candidateWindow` 4 096 instead of the default 256: what the bounded candidate window costs, against attempts that read up to 4 096 waiting tickets). Waits are in simulated seconds, from each join to its match. Players are grouped by what the trace gives them (the number of modes they list, their first choice), whatever the variant sent.\n\n");

    for (file, list) in by_file(runs) {
        let _ = writeln!(out, "## {}\n", stem(&file));
        let rules = list
            .first()
            .and_then(|r| variant_of(r))
            .map_or(&[][..], |(_, _, r)| r);
        if let Some(written) = find(&list, AttrVariant::AsWritten) {
            if let Some((_, _, world)) = ctx.rule_sets.iter().find(|(l, _, _)| *l == written.label)
            {
                let _ = writeln!(out, "`{file}`: {world}.\n");
            }
        }
        for rule in rules.iter().filter(|r| r.top) {
            let _ = writeln!(out, "- {}", describe_rule(rule));
        }
        out.push('\n');
        out.push_str("### All players\n\n");
        out.push_str(&overall_table(&list));
        out.push('\n');
        if let Some(cost) = window_cost(&list) {
            out.push_str("### What the candidate window costs\n\nThe same world as written, with attempts reading at most 256 candidates (the default `candidateWindow`) and at most 4 096:\n\n");
            out.push_str(&window_table(&cost));
            out.push('\n');
        }
        let total = scenario.arrivals.len();
        if let Some((rule, attribute)) = intersection_rule(rules) {
            let _ = writeln!(out, "### Wait by the number of modes listed\n");
            if images {
                let (waits, _) = chart_names(&file);
                let _ = writeln!(out, "![wait by the number of modes listed]({waits})\n");
            }
            out.push_str(&group_table(
                &format!("`{attribute}` listed"),
                &list,
                |r| listed_rows(scenario, r, attribute),
                total,
            ));
            out.push('\n');
            out.push_str(&ratios(scenario, &list, attribute));
            out.push('\n');
            let _ = writeln!(out, "### Wait by first choice\n");
            out.push_str(&group_table(
                "first choice",
                &list,
                |r| first_choice_rows(scenario, r, attribute),
                total,
            ));
            out.push('\n');
            let _ = writeln!(
                out,
                "### Modes played\n\nThe modes each match's players have in common, from its record (`rules[].shared` of `{rule}`); a match with k modes in common counts 1/k to each. *First choice of* and *listed by* are shares of the players (the trace).\n"
            );
            out.push_str(&modes_table(scenario, &list, rule, attribute));
            out.push('\n');
        }
        if let Some(rule) = distance_rule(rules) {
            let attribute = rule.kind.attribute().unwrap_or_default();
            let _ = writeln!(
                out,
                "### `{attribute}` spread against wait\n\nThe spread of `{attribute}` per match (highest minus lowest of its players, from the trace), with and without the rule:\n"
            );
            if images {
                let (_, spread) = chart_names(&file);
                let _ = writeln!(out, "![spread against the anchor's wait]({spread})\n");
            }
            out.push_str(&spread_section(scenario, &list, rule));
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
