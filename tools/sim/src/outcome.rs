//! What one matcher made of a trace: every player's fate and every match.
//! Rule sets, FIFO and the oracle all produce this, so one report reads
//! them all.

use crate::scenario::Scenario;

/// What happened to one arrival.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Fate {
    /// Matched after `wait` simulated seconds, in `matches[index]`.
    Matched { wait: f64, index: usize },
    /// The ticket outlived its lifetime (TICKET_EXPIRED).
    Expired,
    /// Still waiting when the run ended.
    Waiting,
    /// The join was refused or failed (see the run's notes).
    Refused,
}

/// One formed match.
#[derive(Debug, Clone, PartialEq)]
pub struct FormedMatch {
    /// Simulated seconds since the start of the trace.
    pub time: f64,
    /// Arrival indices of the participants.
    pub players: Vec<usize>,
    /// Highest minus lowest rating (from the trace's ratings).
    pub spread: f64,
}

/// Which kind of matcher produced a run.
#[derive(Debug, Clone, PartialEq)]
pub enum Kind {
    /// A rule set through the real scripts. `relax` is the world's relax time
    /// in seconds (0 for a FIFO world), the bound of acceptance check (c).
    RuleSet { file: String, relax: f64 },
    /// The FIFO baseline through the real scripts.
    Fifo,
    /// The offline oracle, batching every `period` seconds.
    Oracle { period: f64 },
}

/// One matcher's result on the trace.
#[derive(Debug, Clone)]
pub struct Run {
    pub label: String,
    pub kind: Kind,
    /// Indexed like the trace's arrivals.
    pub fates: Vec<Fate>,
    pub matches: Vec<FormedMatch>,
    /// Diagnostics worth a line in the report (driver lag, errors, checks).
    pub notes: Vec<String>,
    /// Joins and ticks that failed with an error (not a refusal): a run
    /// with failures does not show what the rule set does.
    pub failures: usize,
    /// Why the run did not keep up with the compressed clock, if it did
    /// not: its waits and ticks then do not reflect the rules.
    pub lagging: Option<String>,
}

impl Run {
    pub fn is_rule_set(&self) -> bool {
        matches!(self.kind, Kind::RuleSet { .. })
    }
}

/// Highest minus lowest rating among `players` (arrival indices).
pub fn spread(scenario: &Scenario, players: &[usize]) -> f64 {
    let mut lo = f64::INFINITY;
    let mut hi = f64::NEG_INFINITY;
    for &p in players {
        let r = scenario.arrivals[p].rating;
        lo = lo.min(r);
        hi = hi.max(r);
    }
    if players.is_empty() {
        0.0
    } else {
        hi - lo
    }
}
