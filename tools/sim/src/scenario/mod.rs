//! Arrival traces: who arrives when, with which rating, alone or in a party.
//! Either generated (Poisson arrivals of groups at a rate, group sizes from a
//! party-size distribution, ratings from a normal distribution) or read from
//! a CSV file with the header `time,player,rating` or
//! `time,player,rating,party`.
//!
//! `arrivals` holds one entry per **player** (every per-player statistic is
//! indexed like it); `groups` holds what arrives together: a solo player or
//! a party, whose members are adjacent in `arrivals`, the leader first.

mod attrs;
mod csv;
mod geo;
mod parties;
#[cfg(test)]
mod tests;

use std::collections::HashMap;
use std::fmt;

use rand::rngs::StdRng;
use rand::SeedableRng;
use rand_distr::{Distribution, Exp, Normal};

pub use attrs::{AttrSpec, Attrs, LevelDist, ModeSpec, ITEM_SEPARATOR, LEVEL, MODES};
pub use geo::{Geo, LatencyModel, MAX_LATENCY_MS};
pub use parties::{PartySizes, MAX_PARTY};

/// One player arriving in the queue (alone or with a party).
#[derive(Debug, Clone, PartialEq)]
pub struct Arrival {
    /// Simulated seconds since the start of the trace.
    pub time: f64,
    pub player: String,
    pub rating: f64,
    /// Players in the player's group (1 = solo).
    pub party_size: u32,
    /// The player's group: an index into [`Scenario::groups`].
    pub group: usize,
}

/// What arrives together: one solo player or one party.
#[derive(Debug, Clone, PartialEq)]
pub struct Group {
    pub time: f64,
    /// Arrival indices of the members, the leader (who creates the party)
    /// first. Contiguous.
    pub members: Vec<usize>,
    /// The party's label in the trace (`None` for a solo player).
    pub label: Option<String>,
}

impl Group {
    pub fn is_party(&self) -> bool {
        self.members.len() > 1
    }
}

/// What the trace generator draws.
#[derive(Debug, Clone, PartialEq)]
pub struct Generator {
    /// Arrivals (groups: a solo player or a party) per second.
    pub rate: f64,
    pub seconds: f64,
    /// Every player's rating is N(mean, sd).
    pub mean: f64,
    pub sd: f64,
    pub seed: u64,
    pub parties: PartySizes,
    /// How far a party's members' ratings lie from their party's centre
    /// (the sd within a party, at most `sd`): the centre is N(mean,
    /// sqrt(sd² − party_sd²)) and each member centre + N(0, party_sd), so
    /// each rating is still N(mean, sd). `party_sd = sd`: independent.
    pub party_sd: f64,
}

/// Where a trace came from, for the report.
#[derive(Debug, Clone, PartialEq)]
pub enum Source {
    Poisson(Generator),
    Csv { path: String },
}

/// An arrival trace, sorted by time.
#[derive(Debug, Clone)]
pub struct Scenario {
    pub source: Source,
    /// One per player, in arrival order (a party's members adjacent).
    pub arrivals: Vec<Arrival>,
    /// Solo players and parties, in arrival order.
    pub groups: Vec<Group>,
    /// Each player's home region and latencies (the regions scenario, or a
    /// trace with `latency:<region>` columns).
    pub geo: Option<Geo>,
    /// Each player's attributes (generated with `--modes` / `--levels` or
    /// the attributes scenario, or a trace's `attr:<name>` columns).
    pub attrs: Option<Attrs>,
}

/// A trace that cannot be used, with the line at fault.
#[derive(Debug, Clone, PartialEq)]
pub struct TraceError(pub String);

impl fmt::Display for TraceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for TraceError {}

/// One player of a trace before grouping.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub time: f64,
    pub player: String,
    pub rating: f64,
    /// Rows with the same label arrive together as one party (the first in
    /// file order leads it); `None` arrives alone.
    pub party: Option<String>,
    /// Where the row came from (a CSV line), for errors; 0 if generated.
    pub line: usize,
}

impl Row {
    pub fn solo(time: f64, player: impl Into<String>, rating: f64) -> Self {
        Self {
            time,
            player: player.into(),
            rating,
            party: None,
            line: 0,
        }
    }
}

impl Scenario {
    /// Solo Poisson arrivals at `rate` per second for `seconds`
    /// (exponential inter-arrival times), ratings from N(`mean`, `sd`); the
    /// same seed always gives the same trace. Players are `p000001`, ...
    pub fn poisson(
        rate: f64,
        seconds: f64,
        mean: f64,
        sd: f64,
        seed: u64,
    ) -> Result<Self, TraceError> {
        Self::generate(Generator {
            rate,
            seconds,
            mean,
            sd,
            seed,
            parties: PartySizes::solo(),
            party_sd: sd,
        })
    }

    /// Poisson arrivals of groups (see [`Generator`]): each arrival draws
    /// its size from the party-size distribution; a party's members are
    /// consecutive players (`p000001`, ...) and the party is labelled
    /// `g<arrival number>`.
    pub fn generate(g: Generator) -> Result<Self, TraceError> {
        let Generator {
            rate,
            seconds,
            mean,
            sd,
            seed,
            ..
        } = g;
        if !(rate.is_finite() && rate > 0.0) {
            return Err(TraceError(format!("rate must be > 0, got {rate}")));
        }
        if !(seconds.is_finite() && seconds > 0.0) {
            return Err(TraceError(format!("duration must be > 0, got {seconds}")));
        }
        if !(mean.is_finite() && sd.is_finite() && sd >= 0.0) {
            return Err(TraceError(format!(
                "ratings N({mean}, {sd}): the mean must be finite and the sd finite and >= 0"
            )));
        }
        if !(g.party_sd.is_finite() && g.party_sd >= 0.0 && g.party_sd <= sd) {
            return Err(TraceError(format!(
                "the rating sd within a party must be 0..={sd} (the ratings' sd), got {}",
                g.party_sd
            )));
        }
        let ratings = Normal::new(mean, sd)
            .map_err(|e| TraceError(format!("rating distribution N({mean}, {sd}): {e}")))?;
        let centres = Normal::new(mean, (sd * sd - g.party_sd * g.party_sd).max(0.0).sqrt())
            .map_err(|e| TraceError(format!("party centres: {e}")))?;
        let within = Normal::new(0.0, g.party_sd)
            .map_err(|e| TraceError(format!("ratings within a party: {e}")))?;
        let gaps = Exp::new(rate).map_err(|e| TraceError(format!("rate {rate}: {e}")))?;
        let mut rng = StdRng::seed_from_u64(seed);
        let mut rows = Vec::with_capacity((rate * seconds * g.parties.mean() * 1.1) as usize + 16);
        let mut t = 0.0;
        let mut arrivals = 0usize;
        loop {
            t += gaps.sample(&mut rng);
            if t >= seconds {
                break;
            }
            arrivals += 1;
            let size = g.parties.sample(&mut rng);
            let label = (size > 1).then(|| format!("g{arrivals:06}"));
            let centre = if size > 1 {
                centres.sample(&mut rng)
            } else {
                0.0
            };
            for _ in 0..size {
                let rating = if size > 1 {
                    centre + within.sample(&mut rng)
                } else {
                    ratings.sample(&mut rng)
                };
                rows.push(Row {
                    time: t,
                    player: format!("p{:06}", rows.len() + 1),
                    rating,
                    party: label.clone(),
                    line: 0,
                });
            }
        }
        Self::assemble(Source::Poisson(g), rows)
    }

    /// Groups `rows` into solo players and parties and sorts them by time
    /// (a party's members keep their order: the first leads). Players must
    /// be unique and a party's members must arrive at the same time.
    pub fn assemble(source: Source, mut rows: Vec<Row>) -> Result<Self, TraceError> {
        let at = |line: usize| {
            if line > 0 {
                format!("line {line}: ")
            } else {
                String::new()
            }
        };
        let mut seen: HashMap<&str, usize> = HashMap::new();
        for row in &rows {
            if let Some(first) = seen.insert(row.player.as_str(), row.line) {
                return Err(TraceError(format!(
                    "{}player {:?} already arrives{} (one row per player)",
                    at(row.line),
                    row.player,
                    if first > 0 {
                        format!(" on line {first}")
                    } else {
                        String::new()
                    }
                )));
            }
        }
        rows.sort_by(|a, b| a.time.total_cmp(&b.time));
        let mut members: Vec<Vec<usize>> = Vec::new();
        let mut labels: Vec<Option<String>> = Vec::new();
        let mut by_label: HashMap<String, usize> = HashMap::new();
        for (i, row) in rows.iter().enumerate() {
            match &row.party {
                Some(label) => match by_label.get(label) {
                    Some(&g) => {
                        let first = &rows[members[g][0]];
                        if first.time != row.time {
                            return Err(TraceError(format!(
                                "{}party {label:?} arrives at {} on line {}, here at {}: a party's members arrive together",
                                at(row.line),
                                first.time,
                                first.line,
                                row.time
                            )));
                        }
                        members[g].push(i);
                        if members[g].len() > MAX_PARTY as usize {
                            return Err(TraceError(format!(
                                "{}party {label:?} has more than {MAX_PARTY} players",
                                at(row.line)
                            )));
                        }
                    }
                    None => {
                        by_label.insert(label.clone(), members.len());
                        members.push(vec![i]);
                        labels.push(Some(label.clone()));
                    }
                },
                None => {
                    members.push(vec![i]);
                    labels.push(None);
                }
            }
        }
        let mut arrivals = Vec::with_capacity(rows.len());
        let mut groups = Vec::with_capacity(members.len());
        for (g, (rows_of, label)) in members.into_iter().zip(labels).enumerate() {
            let size = rows_of.len() as u32;
            let start = arrivals.len();
            for i in &rows_of {
                let r = &rows[*i];
                arrivals.push(Arrival {
                    time: r.time,
                    player: r.player.clone(),
                    rating: r.rating,
                    party_size: size,
                    group: g,
                });
            }
            groups.push(Group {
                time: rows[rows_of[0]].time,
                members: (start..arrivals.len()).collect(),
                // A label on one row alone is a solo player.
                label: label.filter(|_| size > 1),
            });
        }
        Ok(Self {
            source,
            arrivals,
            groups,
            geo: None,
            attrs: None,
        })
    }
    /// Time of the last arrival (0 for an empty trace).
    pub fn last_arrival(&self) -> f64 {
        self.arrivals.last().map_or(0.0, |a| a.time)
    }

    /// Whether any group is a party.
    pub fn has_parties(&self) -> bool {
        self.groups.iter().any(Group::is_party)
    }

    /// The largest group.
    pub fn largest_party(&self) -> u32 {
        self.groups
            .iter()
            .map(|g| g.members.len() as u32)
            .max()
            .unwrap_or(1)
    }

    /// The group sizes that occur, ascending.
    pub fn party_sizes(&self) -> Vec<u32> {
        let mut sizes: Vec<u32> = self.groups.iter().map(|g| g.members.len() as u32).collect();
        sizes.sort_unstable();
        sizes.dedup();
        sizes
    }

    /// Mean and standard deviation the z-scores are taken against: the
    /// generator's parameters, or the trace's own for a CSV file.
    pub fn rating_moments(&self) -> (f64, f64) {
        match &self.source {
            Source::Poisson(g) => (g.mean, g.sd),
            Source::Csv { .. } => {
                let n = self.arrivals.len().max(1) as f64;
                let mean = self.arrivals.iter().map(|a| a.rating).sum::<f64>() / n;
                let var = self
                    .arrivals
                    .iter()
                    .map(|a| (a.rating - mean).powi(2))
                    .sum::<f64>()
                    / n;
                (mean, var.sqrt())
            }
        }
    }

    /// How the players are grouped, for the report ("" when all are solo).
    fn describe_parties(&self) -> String {
        if !self.has_parties() {
            return String::new();
        }
        let mut counts: Vec<(u32, usize)> = Vec::new();
        for size in self.party_sizes() {
            let n = self
                .groups
                .iter()
                .filter(|g| g.members.len() as u32 == size)
                .count();
            counts.push((size, n));
        }
        let listed: Vec<String> = counts.iter().map(|(s, n)| format!("{n} of {s}")).collect();
        format!(
            "; {} players in {} groups ({})",
            self.arrivals.len(),
            self.groups.len(),
            listed.join(", ")
        )
    }

    /// A one-line description for the report.
    pub fn describe(&self) -> String {
        let mut out = self.describe_arrivals();
        if let Some(geo) = &self.geo {
            let sizes = geo.cluster_sizes();
            let clusters: Vec<String> = geo
                .regions
                .iter()
                .zip(&sizes)
                .map(|(r, n)| format!("{r} {n}"))
                .collect();
            out.push_str(&format!(
                "; homes in {} regions ({}), latencies {}",
                geo.regions.len(),
                clusters.join(", "),
                if geo.model.is_some() {
                    "from the latency model"
                } else {
                    "from the trace"
                }
            ));
        }
        if let Some(attrs) = self.describe_attributes() {
            out.push_str(&attrs);
        }
        out
    }

    fn describe_arrivals(&self) -> String {
        match &self.source {
            Source::Poisson(g) => {
                let parties = if g.parties.is_solo() {
                    String::new()
                } else {
                    format!(
                        ", party sizes {} (ratings within a party: sd {})",
                        g.parties,
                        crate::oracle::trim_float(g.party_sd)
                    )
                };
                format!(
                    "Poisson arrivals at {}/s for {} ({} arrivals{}), ratings N({}, {}){parties}, seed {}",
                    g.rate,
                    human_seconds(g.seconds),
                    self.groups.len(),
                    self.describe_parties(),
                    g.mean,
                    g.sd,
                    g.seed
                )
            }
            Source::Csv { path } => format!(
                "trace {path} ({} arrivals{} over {})",
                self.groups.len(),
                self.describe_parties(),
                human_seconds(self.last_arrival())
            ),
        }
    }

    /// Whether this is the scenario the acceptance checks are defined for
    /// (50 arrivals/s, N(1500, 300), 10 minutes, any party sizes); `None` if
    /// it is, else why not.
    pub fn differs_from_acceptance(&self) -> Option<String> {
        match &self.source {
            Source::Poisson(g)
                if g.rate == 50.0 && g.seconds == 600.0 && g.mean == 1500.0 && g.sd == 300.0 =>
            {
                None
            }
            _ => Some(format!(
                "the acceptance scenario is 50 arrivals/s, N(1500, 300), 10 minutes; this run: {}",
                self.describe()
            )),
        }
    }
}

fn human_seconds(s: f64) -> String {
    if s >= 120.0 && (s / 60.0).fract() == 0.0 {
        format!("{} min", s / 60.0)
    } else {
        format!("{s:.0} s")
    }
}
