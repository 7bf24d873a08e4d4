//! What one matcher made of a trace: every player's fate and every match.
//! Rule sets, FIFO and the oracle all produce this, so one report reads
//! them all.

use std::fmt;

use crate::scenario::Scenario;

/// What happened to one player.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Fate {
    /// Matched after `wait` simulated seconds, in `matches[index]`.
    Matched { wait: f64, index: usize },
    /// The ticket outlived its lifetime (TICKET_EXPIRED).
    Expired,
    /// Removed by a ready check: the player (or a member of their party)
    /// declined a proposal, or did not answer it in time.
    Removed,
    /// Still waiting when the run ended (in the queue, or in a proposal).
    Waiting,
    /// The join was refused or failed (see the run's notes).
    Refused,
}

/// How a match is made up: `teams` teams of `team_size` players.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Shape {
    pub teams: u32,
    pub team_size: u32,
}

impl Shape {
    pub fn solo_team(team_size: u32) -> Self {
        Self {
            teams: 1,
            team_size,
        }
    }

    /// Players per match.
    pub fn seats(&self) -> u32 {
        self.teams * self.team_size
    }
}

impl fmt::Display for Shape {
    /// `10` for one team of 10, `2x5` for two teams of 5.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.teams == 1 {
            write!(f, "{}", self.team_size)
        } else {
            write!(f, "{}x{}", self.teams, self.team_size)
        }
    }
}

/// One formed match.
#[derive(Debug, Clone, PartialEq)]
pub struct FormedMatch {
    /// Simulated seconds since the start of the trace (when it became
    /// final: the last accept of a ready check).
    pub time: f64,
    /// Arrival indices of the participants.
    pub players: Vec<usize>,
    /// Highest minus lowest rating (from the trace's ratings).
    pub spread: f64,
    /// Who plays in which team (arrival indices), with two teams or more.
    pub teams: Option<Vec<Vec<usize>>>,
    /// Highest minus lowest team average rating (from the trace's ratings),
    /// with two teams or more.
    pub team_difference: Option<f64>,
    /// A trace with latencies: where the match plays and its members'
    /// worst latency there (from the trace).
    pub place: Option<Place>,
    /// A world with attributes: the rules as its record states them, and
    /// the offline oracle's verdict on the record.
    pub rules: Option<Box<MatchRules>>,
}

/// What a match record of a world with attributes says about its rules.
#[derive(Debug, Clone, PartialEq)]
pub struct MatchRules {
    /// The arrival index of the anchor (the record's `anchor`).
    pub anchor: Option<usize>,
    /// How long the anchor had waited, simulated seconds (`anchorWaitMs`).
    pub anchor_wait: Option<f64>,
    /// The record's `rules`.
    pub outcomes: Vec<shared::RuleOutcome>,
    /// `shared::rules::recheck`'s objection, if any: a rule in force that
    /// did not hold, or the record misstating what was in force.
    pub violation: Option<String>,
    /// Participants whose recorded attributes differ from what they sent.
    pub misrecorded: usize,
}

impl MatchRules {
    /// The record's outcome of rule `name`.
    pub fn outcome(&self, name: &str) -> Option<&shared::RuleOutcome> {
        self.outcomes.iter().find(|o| o.name == name)
    }
}

/// Where a match plays, and how well for its worst-placed member.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Place {
    /// An index into the trace's regions.
    pub region: usize,
    /// The highest latency of its members there, ms (from the trace).
    pub worst: u32,
}

impl FormedMatch {
    /// A match of `players`, its spread and (given teams) team difference
    /// computed from the trace.
    pub fn new(
        scenario: &Scenario,
        time: f64,
        players: Vec<usize>,
        teams: Option<Vec<Vec<usize>>>,
    ) -> Self {
        let teams = teams.filter(|t| t.len() > 1);
        Self {
            time,
            spread: spread(scenario, &players),
            team_difference: teams.as_deref().map(|t| team_difference(scenario, t)),
            players,
            teams,
            place: None,
            rules: None,
        }
    }
}

/// Which kind of matcher produced a run.
#[derive(Debug, Clone, PartialEq)]
pub enum Kind {
    /// A rule set through the real scripts. `relax` is the world's relax time
    /// in seconds (0 for a FIFO world), the bound of acceptance check (c).
    RuleSet { file: String, relax: f64 },
    /// A FIFO baseline through the real scripts (one per match shape).
    Fifo,
    /// The offline oracle, batching every `period` seconds.
    Oracle { period: f64 },
    /// The regions scenario (`--regions`): one of the three ways of playing
    /// a rule set's world on a trace with latencies.
    /// `cap` is the world's `maxLatencyCapMs` (every variant's: the one
    /// the regions variant must respect).
    Regional {
        file: String,
        variant: Variant,
        cap: f64,
    },
    /// The attributes scenario (`--attributes`): one of the ways of playing
    /// a rule set's world with attributes. `rules` are the world's rules as
    /// written (every variant's: the report groups by them).
    Attributes {
        file: String,
        variant: AttrVariant,
        rules: Vec<shared::config::MatchRule>,
    },
}

/// How the attributes scenario plays a rule set's world.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AttrVariant {
    /// The world as written: players send every value they have.
    AsWritten,
    /// Every player lists only the first item of the list the world's
    /// intersection rule reads (their first choice): one queue per value.
    FirstChoiceOnly,
    /// The world without its rules: nobody's attributes matter.
    WithoutRules,
    /// The world as written with the widest `candidateWindow`: what the
    /// default window costs, against attempts that see (nearly) the whole
    /// queue.
    WideWindow,
}

impl AttrVariant {
    pub fn name(self) -> &'static str {
        match self {
            AttrVariant::AsWritten => "as written",
            AttrVariant::FirstChoiceOnly => "first choice only",
            AttrVariant::WithoutRules => "without rules",
            AttrVariant::WideWindow => "window 4096",
        }
    }
}

/// How the regions scenario plays a rule set's world.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Variant {
    /// The world as written, with its `regions` rule: players send their
    /// latencies.
    Regions,
    /// One world per region without the `regions` rule; each player (each
    /// party) joins the world of its lowest-latency region.
    BestRegionOnly,
    /// One world without the `regions` rule; a match's latency is that of
    /// its best region, computed offline.
    LatencyIgnored,
}

impl Variant {
    pub const ALL: [Variant; 3] = [
        Variant::Regions,
        Variant::BestRegionOnly,
        Variant::LatencyIgnored,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Variant::Regions => "regions",
            Variant::BestRegionOnly => "best region only",
            Variant::LatencyIgnored => "latency ignored",
        }
    }
}

/// How a rule set's ready check went (the simulated players' answers).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ReadyStats {
    /// The probability each participant accepted with.
    pub accept_probability: f64,
    /// What a participant who does not accept does: "declines" or "stays
    /// silent".
    pub refusal: String,
    /// Proposals seen (each answered by every participant).
    pub proposals: usize,
    /// Of which: every participant accepted (a match).
    pub accepted: usize,
    /// Cancelled by a decline.
    pub declined: usize,
    /// Cancelled because not everyone answered in time.
    pub timed_out: usize,
    /// Still open at the end.
    pub pending: usize,
    /// Players removed by a decline (the decliners and their parties).
    pub removed_by_declines: usize,
    /// Players removed by a timeout (who did not answer, and their parties).
    pub removed_by_timeouts: usize,
    /// Tickets put back in the queue by cancelled proposals.
    pub requeued: u64,
    /// Answers sent.
    pub answers: usize,
}

/// One matcher's result on the trace.
#[derive(Debug, Clone)]
pub struct Run {
    pub label: String,
    pub kind: Kind,
    /// How its matches are made up.
    pub shape: Shape,
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
    /// Rule sets with a ready check: how it went.
    pub ready: Option<ReadyStats>,
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

/// Highest minus lowest team average rating (arrival indices per team).
pub fn team_difference(scenario: &Scenario, teams: &[Vec<usize>]) -> f64 {
    let averages: Vec<f64> = teams
        .iter()
        .filter(|t| !t.is_empty())
        .map(|t| t.iter().map(|&p| scenario.arrivals[p].rating).sum::<f64>() / t.len() as f64)
        .collect();
    let hi = averages.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let lo = averages.iter().copied().fold(f64::INFINITY, f64::min);
    if averages.is_empty() {
        0.0
    } else {
        hi - lo
    }
}
