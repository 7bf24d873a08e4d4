//! The attributes report's tables shared by its sections: all players per
//! variant, the candidate window's cost and groups of players side by side.

use std::fmt::Write as _;

use super::{overall, GroupRow, Overall, WindowCost};
use crate::outcome::Run;
use crate::stats::Dist;

pub(super) fn num(v: f64) -> String {
    if !v.is_finite() {
        "∞".into()
    } else if v >= 100.0 {
        format!("{v:.0}")
    } else if v >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

pub(super) fn opt(d: Option<Dist>, f: impl Fn(Dist) -> f64) -> String {
    d.map_or_else(|| "–".into(), |d| num(f(d)))
}

/// The world as written against the widest candidate window, side by side.
pub(super) fn window_table(c: &WindowCost) -> String {
    let ratio = |a: Option<f64>, b: Option<f64>| match (a, b) {
        (Some(a), Some(b)) if a.is_finite() && b.is_finite() && b > 0.0 => {
            format!("{:.2}x", a / b)
        }
        _ => "–".into(),
    };
    let cell = |v: Option<f64>| v.map_or_else(|| "–".into(), num);
    let mut out = String::new();
    out.push_str(
        "| | window 256 (as written) | window 4096 | 256 against 4096 |\n|---|---:|---:|---:|\n",
    );
    let _ = writeln!(
        out,
        "| matches | {} | {} | |",
        c.written.matches, c.wide.matches
    );
    let unmatched = |o: &Overall| o.expired + o.waiting + o.refused;
    let _ = writeln!(
        out,
        "| unmatched (expired / waiting / refused) | {} | {} | |",
        unmatched(&c.written),
        unmatched(&c.wide)
    );
    let matched = |f: fn(Dist) -> f64| (c.written.wait.map(f), c.wide.wait.map(f));
    for (label, (a, b)) in [
        ("wait p50 of the matched", matched(|d| d.p50)),
        ("wait p95 of the matched", matched(|d| d.p95)),
        ("wait mean of the matched", matched(|d| d.mean)),
        ("wait p50, the unmatched as the longest", c.p50_all),
        ("wait p95, the unmatched as the longest", c.p95_all),
    ] {
        let _ = writeln!(
            out,
            "| {label} | {} | {} | {} |",
            cell(a),
            cell(b),
            ratio(a, b)
        );
    }
    out
}

/// All players, one row per variant.
pub(super) fn overall_table(runs: &[&Run]) -> String {
    let mut out = String::new();
    out.push_str("| matcher | matches | matched | unmatched (expired / waiting / refused) | wait mean | wait p50 | wait p95 | wait max | records re-checked | violations |\n");
    out.push_str("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    for run in runs {
        let o = overall(run);
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} ({} / {} / {}) | {} | {} | {} | {} | {} | {} |",
            run.label,
            o.matches,
            o.matched,
            o.expired + o.waiting + o.refused,
            o.expired,
            o.waiting,
            o.refused,
            opt(o.wait, |d| d.mean),
            opt(o.wait, |d| d.p50),
            opt(o.wait, |d| d.p95),
            opt(o.wait, |d| d.max),
            if o.records > 0 {
                o.records.to_string()
            } else {
                "–".into()
            },
            if o.records > 0 {
                (o.violations + o.misrecorded).to_string()
            } else {
                "–".into()
            },
        );
    }
    out
}

/// Rows of several matchers side by side, grouped by key.
pub(super) fn group_table(
    header: &str,
    runs: &[&Run],
    rows_of: impl Fn(&Run) -> Vec<GroupRow>,
    total: usize,
) -> String {
    let rows: Vec<(&Run, Vec<GroupRow>)> = runs.iter().map(|r| (*r, rows_of(r))).collect();
    let groups = rows.first().map_or(0, |(_, r)| r.len());
    let mut out = String::new();
    let _ = writeln!(
        out,
        "| {header} | players | matcher | unmatched | wait p50 | wait p95 | wait mean | p50 with the unmatched (as the longest) |"
    );
    out.push_str("|---|---:|---|---:|---:|---:|---:|---:|\n");
    for g in 0..groups {
        for (i, (run, rows)) in rows.iter().enumerate() {
            let r = &rows[g];
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} | {} | {} | {} |",
                if i == 0 { r.key.as_str() } else { "" },
                if i == 0 {
                    format!(
                        "{} ({:.1} %)",
                        r.players,
                        r.players as f64 * 100.0 / total.max(1) as f64
                    )
                } else {
                    String::new()
                },
                run.label,
                r.unmatched,
                opt(r.wait, |d| d.p50),
                opt(r.wait, |d| d.p95),
                opt(r.wait, |d| d.mean),
                r.p50_all.map_or_else(|| "–".into(), num),
            );
        }
    }
    out
}
