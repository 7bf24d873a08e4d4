//! The backfill scenario's statistics, done criteria and Markdown report.

use std::fmt::Write as _;

use super::{Fill, LaneResult, Outcome, Seat, Variant};
use crate::oracle::trim_float;
use crate::report::{checks_table, Check};
use crate::stats::{percentile_sorted, Dist};

/// (B1): the median time an empty seat waits, simulated seconds.
pub const SEAT_WAIT_MEDIAN: f64 = 5.0;
/// (B3): team-average difference after backfill against fresh matches.
pub const DIFFERENCE_VS_FRESH: f64 = 1.5;

/// Seats emptied later than this before the last arrival are the tail:
/// nobody may come to fill them. The criteria count the others (seats
/// emptied while arrivals went on).
pub const TAIL_SECONDS: f64 = 10.0;

/// The seats emptied while arrivals went on (see [`TAIL_SECONDS`]).
pub fn steady(seats: &[Seat], last_arrival: f64) -> Vec<Seat> {
    seats
        .iter()
        .filter(|s| s.left_at <= last_arrival - TAIL_SECONDS)
        .cloned()
        .collect()
}

/// How long seats stayed empty: a seat never filled counts as waiting for
/// ever (it is only censored by its game's end), so the median and p95
/// are at least what a server saw.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SeatWaits {
    pub seats: usize,
    pub filled: usize,
    /// `None`: that percentile falls among the seats never filled.
    pub p50: Option<f64>,
    pub p95: Option<f64>,
    /// Of the filled seats.
    pub filled_mean: Option<f64>,
    /// How long seats stayed empty, filled or not (until the game ended).
    pub empty_mean: Option<f64>,
}

pub fn seat_waits(seats: &[Seat]) -> SeatWaits {
    let mut all: Vec<f64> = seats
        .iter()
        .map(|s| s.filled_at.map_or(f64::INFINITY, |f| f - s.left_at))
        .collect();
    all.sort_by(f64::total_cmp);
    let finite = |v: f64| v.is_finite().then_some(v);
    let filled: Vec<f64> = all.iter().copied().filter(|v| v.is_finite()).collect();
    let empty: Vec<f64> = seats.iter().map(Seat::empty_for).collect();
    SeatWaits {
        seats: seats.len(),
        filled: filled.len(),
        p50: (!all.is_empty())
            .then(|| percentile_sorted(&all, 50.0))
            .and_then(finite),
        p95: (!all.is_empty())
            .then(|| percentile_sorted(&all, 95.0))
            .and_then(finite),
        filled_mean: crate::stats::mean(&filled),
        empty_mean: crate::stats::mean(&empty),
    }
}

/// Backfilled players against the world's window.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Distances {
    pub fills: usize,
    pub distance: Option<Dist>,
    /// Fills (before relaxAfterSeconds) farther from the reference than the
    /// window at their wait.
    pub over_window: usize,
    /// Fills whose wait was past relaxAfterSeconds: the world's window is
    /// lifted then (as for a waiting ticket), so they are not held to one.
    pub relaxed: usize,
    /// The farthest of those.
    pub relaxed_max: Option<f64>,
    /// The window at the fills' waits (rated worlds).
    pub window: Option<Dist>,
}

pub fn distances(fills: &[Fill]) -> Distances {
    let d: Vec<f64> = fills.iter().filter_map(Fill::distance).collect();
    let w: Vec<f64> = fills.iter().filter_map(|f| f.window).collect();
    Distances {
        fills: fills.len(),
        distance: Dist::of(&d),
        over_window: fills.iter().filter(|f| f.over_window()).count(),
        relaxed: fills.iter().filter(|f| f.relaxed).count(),
        relaxed_max: fills
            .iter()
            .filter(|f| f.relaxed)
            .filter_map(Fill::distance)
            .max_by(f64::total_cmp),
        window: Dist::of(&w),
    }
}

/// Team-average differences: of fresh matches when they formed, after the
/// fills that left no seat open, after every fill, and of the matches that
/// lost players after their last leave (short-handed, without backfill).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Balance {
    pub fresh: Option<Dist>,
    pub after_backfill: Option<Dist>,
    pub after_any_fill: Option<Dist>,
    pub short_handed: Option<Dist>,
}

pub fn balance(lane: &LaneResult) -> Balance {
    let fresh: Vec<f64> = lane.games.iter().map(|g| g.team_difference).collect();
    let done: Vec<f64> = lane
        .fills
        .iter()
        .filter(|f| f.completes)
        .map(|f| f.team_difference)
        .collect();
    let any: Vec<f64> = lane.fills.iter().map(|f| f.team_difference).collect();
    let short: Vec<f64> = lane
        .games
        .iter()
        .filter_map(|g| g.after_leaves.last().copied())
        .collect();
    Balance {
        fresh: Dist::of(&fresh),
        after_backfill: Dist::of(&done),
        after_any_fill: Dist::of(&any),
        short_handed: Dist::of(&short),
    }
}

/// The share of seat-seconds played with a seat empty.
pub fn empty_share(lane: &LaneResult) -> f64 {
    let empty: f64 = lane.games.iter().map(|g| g.empty_seconds).sum();
    let total: f64 = lane
        .games
        .iter()
        .map(|g| g.seats as f64 * (g.ended_at - g.formed_at))
        .sum();
    if total > 0.0 {
        empty / total
    } else {
        0.0
    }
}

/// The lanes of each rule set: (label, lanes).
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

fn find<'a>(lanes: &[&'a LaneResult], v: Variant) -> Option<&'a LaneResult> {
    lanes.iter().copied().find(|l| l.variant == v)
}

fn secs(v: Option<f64>) -> String {
    v.map_or_else(|| "never".into(), |v| format!("{v:.2} s"))
}

/// The done criteria per rule set: (B1) median seat wait ≤ 5 s, (B2)
/// every backfilled player within the world's window of the match's
/// reference, (B3) team-average difference after backfill ≤ 1.5× fresh.
pub fn criteria(lanes: &[LaneResult], last_arrival: f64) -> Vec<Check> {
    let mut out = Vec::new();
    for (_, label, runs) in by_rule_set(lanes) {
        let check = |id, what: String, pass, detail| Check {
            rule_set: label.clone(),
            id,
            what,
            pass,
            detail,
        };
        let Some(with) = find(&runs, Variant::Backfill) else {
            continue;
        };
        let without = find(&runs, Variant::ShortHanded);
        let w = seat_waits(&steady(&with.seats, last_arrival));
        let tail = with.seats.len() - w.seats;
        let what = format!(
            "median time an empty seat waits ≤ {} s",
            trim_float(SEAT_WAIT_MEDIAN)
        );
        out.push(check(
            "B1",
            what,
            w.seats > 0 && w.p50.is_some_and(|m| m <= SEAT_WAIT_MEDIAN),
            format!(
                "median {}, p95 {} over the {} seats emptied while players arrived ({} filled; {} more emptied in the last {} s of arrivals or after){}",
                secs(w.p50),
                secs(w.p95),
                w.seats,
                w.filled,
                tail,
                trim_float(TAIL_SECONDS),
                without.map_or_else(String::new, |l| {
                    let s = seat_waits(&steady(&l.seats, last_arrival));
                    format!(
                        "; without backfill {} seats stay empty {:.0} s on average (until their game ends)",
                        s.seats,
                        s.empty_mean.unwrap_or(0.0)
                    )
                })
            ),
        ));
        let d = distances(&with.fills);
        let what =
            "every backfilled player within the world's window (at its backfill's wait) of the match's reference"
                .to_owned();
        out.push(match (d.distance, d.window) {
            (Some(dist), Some(win)) => check(
                "B2",
                what,
                d.over_window == 0,
                format!(
                    "{} of {} over; distance mean {:.1}, p95 {:.1}, max {:.1} against windows of {:.0}–{:.0} at their waits{}",
                    d.over_window,
                    d.fills,
                    dist.mean,
                    dist.p95,
                    dist.max,
                    win_min(&with.fills),
                    win.max,
                    if d.relaxed > 0 {
                        format!(
                            "; {} filled after relaxAfterSeconds, when the window is lifted (farthest {:.1})",
                            d.relaxed,
                            d.relaxed_max.unwrap_or(0.0)
                        )
                    } else {
                        String::new()
                    }
                ),
            ),
            (Some(dist), None) => check(
                "B2",
                what,
                true,
                format!(
                    "a FIFO world has no window (distance mean {:.1}, max {:.1})",
                    dist.mean, dist.max
                ),
            ),
            _ => check("B2", what, false, "no seat was backfilled".into()),
        });
        let b = balance(with);
        let what = format!(
            "mean team-average difference after backfill ≤ {}× that of fresh matches",
            trim_float(DIFFERENCE_VS_FRESH)
        );
        out.push(match (b.after_backfill, b.fresh) {
            (Some(after), Some(fresh)) if fresh.mean > 0.0 => check(
                "B3",
                what,
                after.mean <= DIFFERENCE_VS_FRESH * fresh.mean,
                format!(
                    "{:.1} after {} completing fills vs {:.1} fresh: {:.2}×{}",
                    after.mean,
                    after.n,
                    fresh.mean,
                    after.mean / fresh.mean,
                    without.and_then(|l| balance(l).short_handed).map_or_else(
                        String::new,
                        |s| format!("; short-handed without backfill {:.1}", s.mean)
                    )
                ),
            ),
            _ => check("B3", what, false, "no backfill completed".into()),
        });
    }
    out
}

fn win_min(fills: &[Fill]) -> f64 {
    fills
        .iter()
        .filter_map(|f| f.window)
        .fold(f64::INFINITY, f64::min)
}

/// Facts about the run for the header.
#[derive(Debug, Clone)]
pub struct Context {
    pub title: String,
    pub scenario: String,
    pub leave_probability: f64,
    pub game_seconds: (f64, f64),
    pub renew: f64,
    pub speed: f64,
    pub wall_seconds: f64,
    pub command: String,
    pub core: Option<String>,
    /// Differs from the scenario (20 arrivals/s, 10 % leaving).
    pub note: Option<String>,
}

fn opt(d: Option<Dist>, f: fn(Dist) -> f64) -> String {
    d.map_or_else(|| "–".into(), |d| format!("{:.1}", f(d)))
}

/// The whole report; `images` adds the chart links (the file version).
pub fn render(ctx: &Context, outcome: &Outcome, checks: &[Check], images: bool) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "# {}\n", ctx.title);
    let _ = writeln!(out, "- **Trace:** {}", ctx.scenario);
    let _ = writeln!(
        out,
        "- **Games:** every match is assigned (`assign_match`) and lasts U({}, {}) s; each of its players leaves it with probability {} at a uniform {:.0}–{:.0} % of its length; the game server then requests backfill with the players it has (`request_backfill`, replacing an open one), renews it every {} s (keep-alive {} s, checked by the core against Redis's compressed clock) until the seats are filled, and reports the result when the game ends (`use_cases::report_result`). Backfilled players stay to the end",
        trim_float(ctx.game_seconds.0),
        trim_float(ctx.game_seconds.1),
        trim_float(ctx.leave_probability),
        super::LEAVE_WITHIN.0 * 100.0,
        super::LEAVE_WITHIN.1 * 100.0,
        trim_float(ctx.renew),
        trim_float(outcome.keepalive)
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
    for (label, file, world) in &outcome.rule_sets {
        let _ = writeln!(out, "- **{label}** (`{file}`): {world}");
    }
    if let Some(note) = &ctx.note {
        let _ = writeln!(out, "\n*{note}*");
    }
    let _ = writeln!(out, "\n## Done criteria\n");
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

    let _ = writeln!(out, "\n## Summary\n");
    let _ = writeln!(
        out,
        "Seat waits: seats emptied while players arrived (up to {} s before the last arrival; the criteria's), then all seats.\n",
        trim_float(TAIL_SECONDS)
    );
    out.push_str("| variant | matches | players left | backfill requests | seats filled (by joins / by the matcher) | seat wait p50 | seat wait p95 | all seats: p50 / p95 | seats empty on average | seat-time empty | team diff fresh | after backfill | after any fill | short-handed | wait fresh p50 / p95 | wait of backfilled p50 / p95 |\n");
    out.push_str(
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    for l in &outcome.lanes {
        let w = seat_waits(&steady(&l.seats, outcome.last_arrival));
        let all = seat_waits(&l.seats);
        let b = balance(l);
        let fresh = Dist::of(&l.fresh_waits);
        let bf = Dist::of(&l.backfill_waits);
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} ({} / {}) | {} | {} | {} / {} | {} | {:.2} % | {} | {} | {} | {} | {} | {} |",
            l.label,
            l.games.len(),
            l.seats.len(),
            l.requests,
            all.filled,
            l.by_join,
            l.by_matcher,
            secs(w.p50),
            secs(w.p95),
            secs(all.p50),
            secs(all.p95),
            all.empty_mean.map_or_else(|| "–".into(), |m| format!("{m:.1} s")),
            empty_share(l) * 100.0,
            opt(b.fresh, |d| d.mean),
            opt(b.after_backfill, |d| d.mean),
            opt(b.after_any_fill, |d| d.mean),
            opt(b.short_handed, |d| d.mean),
            fresh.map_or_else(|| "–".into(), |d| format!("{:.2} / {:.2}", d.p50, d.p95)),
            bf.map_or_else(|| "–".into(), |d| format!("{:.2} / {:.2}", d.p50, d.p95)),
        );
    }
    let _ = writeln!(
        out,
        "\nA seat's wait runs from its player's leave to the fill that took it (the join reply for a joiner, the end of the tick that filled it for the matcher); a seat never filled counts as waiting for ever in the percentiles (*never*), and as empty until its game ended in *seats empty on average*. Team differences are highest minus lowest team average rating (the trace's ratings) per match: *fresh* when the match formed, *after backfill* after the fill that left no seat open, *short-handed* after the match's last leave without backfill.\n"
    );
    for (file, label, runs) in by_rule_set(&outcome.lanes) {
        let _ = writeln!(out, "## {label} (`{file}`)\n");
        if images {
            let _ = writeln!(
                out,
                "![how long empty seats waited]({label}-seat-waits.svg)\n\n![team-average differences]({label}-balance.svg)\n"
            );
        }
        if let Some(with) = find(&runs, Variant::Backfill) {
            let d = distances(&with.fills);
            let _ = writeln!(
                out,
                "**Backfilled players** ({}): rating distance to the match's reference (the average rating of the players it had) mean {}, p50 {}, p95 {}, max {}; the window at their backfill's wait: mean {}, max {}; over the window: {}; filled after relaxAfterSeconds: {}.\n",
                d.fills,
                opt(d.distance, |d| d.mean),
                opt(d.distance, |d| d.p50),
                opt(d.distance, |d| d.p95),
                opt(d.distance, |d| d.max),
                opt(d.window, |d| d.mean),
                opt(d.window, |d| d.max),
                d.over_window,
                d.relaxed
            );
            let _ = writeln!(out, "| seat wait up to | seats |\n|---|---:|");
            let waits: Vec<f64> = with
                .seats
                .iter()
                .filter_map(|s| s.filled_at.map(|f| f - s.left_at))
                .collect();
            let mut lo = 0.0;
            for hi in [1.0, 2.0, 5.0, 10.0, 20.0, 60.0, f64::INFINITY] {
                let n = waits.iter().filter(|w| **w >= lo && **w < hi).count();
                let label = if hi.is_finite() {
                    format!("{}–{} s", trim_float(lo), trim_float(hi))
                } else {
                    format!("≥ {} s", trim_float(lo))
                };
                let _ = writeln!(out, "| {label} | {n} |");
                lo = hi;
            }
            let _ = writeln!(
                out,
                "| never filled | {} |\n",
                with.seats.iter().filter(|s| s.filled_at.is_none()).count()
            );
        }
    }

    let _ = writeln!(out, "## Run diagnostics\n");
    for l in &outcome.lanes {
        let _ = writeln!(out, "- **{}**:", l.label);
        let _ = writeln!(
            out,
            "  - {} games, {} backfill requests, {} renewals, {} lapsed (found gone with seats open, requested again); {} arrivals never placed (still waiting at the end)",
            l.games.len(),
            l.requests,
            l.renewals,
            l.lapsed,
            l.waiting
        );
        let _ = writeln!(
            out,
            "  - {} cross-check mismatches (a fill without an open seat in its team, a record's teamDifference other than the trace's)",
            l.mismatches
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
