//! The acceptance checks: (a)–(c) of the rated-matching issue, (d) parties
//! never split and (e) team balance against a FIFO-filled baseline.

use super::{
    parties_split, summarize, team_differences, OUTLIER_TICKS, OUTLIER_Z, SPREAD_VS_FIFO,
    SPREAD_VS_FRONTIER, TEAM_DIFFERENCE_VS_FIFO, TICK_SECONDS,
};
use crate::frontier::{Frontier, Position};
use crate::oracle::trim_float;
use crate::outcome::{Fate, Kind, Run, Shape};
use crate::scenario::Scenario;
use crate::stats::Dist;

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
