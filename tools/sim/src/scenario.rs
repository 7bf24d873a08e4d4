//! Arrival traces: who arrives when, with which rating, alone or in a party.
//! Either generated (Poisson arrivals of groups at a rate, group sizes from a
//! party-size distribution, ratings from a normal distribution) or read from
//! a CSV file with the header `time,player,rating` or
//! `time,player,rating,party`.
//!
//! `arrivals` holds one entry per **player** (every per-player statistic is
//! indexed like it); `groups` holds what arrives together: a solo player or
//! a party, whose members are adjacent in `arrivals`, the leader first.

use std::collections::HashMap;
use std::fmt;
use std::path::Path;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rand_distr::{Distribution, Exp, Normal};

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

/// How many players arrive together: `(size, probability)` pairs, sizes
/// ascending, probabilities summing to 1.
#[derive(Debug, Clone, PartialEq)]
pub struct PartySizes {
    weights: Vec<(u32, f64)>,
}

/// The largest party a trace may hold (a match holds at most 100 players).
pub const MAX_PARTY: u32 = 100;

impl PartySizes {
    /// Everyone arrives alone.
    pub fn solo() -> Self {
        Self {
            weights: vec![(1, 1.0)],
        }
    }

    /// Parses `1:0.6,2:0.25,3:0.15` (size:probability) or the positional
    /// `0.6,0.25,0.15` (the probabilities of sizes 1, 2, 3, ...). The
    /// probabilities must sum to 1 (within 0.001; they are then
    /// normalised).
    pub fn parse(spec: &str) -> Result<Self, String> {
        let items: Vec<&str> = spec.split(',').map(str::trim).collect();
        if items.iter().any(|i| i.is_empty()) {
            return Err(format!("party sizes {spec:?}: an empty item"));
        }
        let keyed = items.iter().filter(|i| i.contains(':')).count();
        if keyed != 0 && keyed != items.len() {
            return Err(format!(
                "party sizes {spec:?}: write every item as size:probability, or only probabilities (of sizes 1, 2, 3, ...)"
            ));
        }
        let mut weights: Vec<(u32, f64)> = Vec::new();
        for (i, item) in items.iter().enumerate() {
            let (size, p) = match item.split_once(':') {
                Some((s, p)) => (
                    s.trim().parse::<u32>().map_err(|_| {
                        format!("party sizes {spec:?}: size {s:?} is not a whole number")
                    })?,
                    p.trim(),
                ),
                None => (i as u32 + 1, *item),
            };
            let p: f64 = p
                .parse()
                .map_err(|_| format!("party sizes {spec:?}: probability {p:?} is not a number"))?;
            if !(1..=MAX_PARTY).contains(&size) {
                return Err(format!(
                    "party sizes {spec:?}: size {size} is outside 1..={MAX_PARTY}"
                ));
            }
            if !(p.is_finite() && (0.0..=1.0).contains(&p)) {
                return Err(format!(
                    "party sizes {spec:?}: probability {p} of size {size} is outside 0..=1"
                ));
            }
            if weights.iter().any(|(s, _)| *s == size) {
                return Err(format!("party sizes {spec:?}: size {size} is listed twice"));
            }
            weights.push((size, p));
        }
        let sum: f64 = weights.iter().map(|(_, p)| p).sum();
        if (sum - 1.0).abs() > 0.001 {
            return Err(format!(
                "party sizes {spec:?}: the probabilities sum to {sum}, not 1"
            ));
        }
        weights.retain(|(_, p)| *p > 0.0);
        weights.sort_by_key(|(s, _)| *s);
        for w in weights.iter_mut() {
            w.1 /= sum;
        }
        Ok(Self { weights })
    }

    /// `(size, probability)` pairs, sizes ascending.
    pub fn weights(&self) -> &[(u32, f64)] {
        &self.weights
    }

    pub fn is_solo(&self) -> bool {
        self.weights.iter().all(|(s, _)| *s == 1)
    }

    pub fn largest(&self) -> u32 {
        self.weights.last().map_or(1, |w| w.0)
    }

    /// Expected players per arrival.
    pub fn mean(&self) -> f64 {
        self.weights.iter().map(|(s, p)| f64::from(*s) * p).sum()
    }

    /// Draws one group size (no random number is drawn for solo-only
    /// distributions, so their traces equal the solo generator's).
    pub fn sample(&self, rng: &mut impl Rng) -> u32 {
        if self.weights.len() == 1 {
            return self.weights[0].0;
        }
        let u: f64 = rng.random();
        let mut acc = 0.0;
        for (size, p) in &self.weights {
            acc += p;
            if u < acc {
                return *size;
            }
        }
        self.largest()
    }
}

impl fmt::Display for PartySizes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> = self
            .weights
            .iter()
            .map(|(s, p)| format!("{s}:{}", crate::oracle::trim_float((p * 1e6).round() / 1e6)))
            .collect();
        f.write_str(&parts.join(","))
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
        })
    }

    /// Reads a CSV file with the header `time,player,rating` or
    /// `time,player,rating,party` (seconds since the start, a player id, a
    /// finite rating, a party label: rows with the same label arrive
    /// together as one party, led by the first of them; empty for a solo
    /// player). Rows may come in any order; players must be unique.
    pub fn from_csv_file(path: &Path) -> Result<Self, TraceError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| TraceError(format!("cannot read {}: {e}", path.display())))?;
        let mut scenario = Self::from_csv(&text)
            .map_err(|e| TraceError(format!("{}: {}", path.display(), e.0)))?;
        scenario.source = Source::Csv {
            path: path.display().to_string(),
        };
        Ok(scenario)
    }

    /// Parses CSV text (see [`Scenario::from_csv_file`]).
    pub fn from_csv(text: &str) -> Result<Self, TraceError> {
        let mut lines = text
            .lines()
            .enumerate()
            .map(|(i, l)| (i + 1, l.trim()))
            .filter(|(_, l)| !l.is_empty());
        const HEADERS: &str = "time,player,rating (or time,player,rating,party)";
        let (_, header) = lines
            .next()
            .ok_or_else(|| TraceError(format!("empty trace: expected the header {HEADERS}")))?;
        let columns: Vec<&str> = header.split(',').map(str::trim).collect();
        let with_party = match columns.as_slice() {
            ["time", "player", "rating"] => false,
            ["time", "player", "rating", "party"] => true,
            _ => {
                return Err(TraceError(format!(
                    "line 1: expected the header {HEADERS}, got {header:?}"
                )))
            }
        };
        let width = if with_party { 4 } else { 3 };
        let mut rows = Vec::new();
        for (line, row) in lines {
            let fields: Vec<&str> = row.split(',').map(str::trim).collect();
            if fields.len() != width {
                return Err(TraceError(format!(
                    "line {line}: expected {width} fields ({}), got {}: {row:?}",
                    columns.join(","),
                    fields.len()
                )));
            }
            let time: f64 = fields[0].parse().map_err(|_| {
                TraceError(format!("line {line}: time {:?} is not a number", fields[0]))
            })?;
            if !(time.is_finite() && time >= 0.0) {
                return Err(TraceError(format!(
                    "line {line}: time must be a finite number of seconds >= 0, got {time}"
                )));
            }
            let player = fields[1];
            shared::PlayerId::parse(player)
                .map_err(|e| TraceError(format!("line {line}: player {player:?}: {e}")))?;
            let rating: f64 = fields[2].parse().map_err(|_| {
                TraceError(format!(
                    "line {line}: rating {:?} is not a number",
                    fields[2]
                ))
            })?;
            if !rating.is_finite() {
                return Err(TraceError(format!(
                    "line {line}: rating must be finite, got {rating}"
                )));
            }
            let party = fields
                .get(3)
                .filter(|p| !p.is_empty())
                .map(|p| (*p).to_owned());
            rows.push(Row {
                time,
                player: player.to_owned(),
                rating,
                party,
                line,
            });
        }
        if rows.is_empty() {
            return Err(TraceError("the trace has a header but no arrivals".into()));
        }
        Self::assemble(
            Source::Csv {
                path: String::new(),
            },
            rows,
        )
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn poisson_traces_have_the_rate_and_the_distribution() {
        let s = Scenario::poisson(50.0, 600.0, 1500.0, 300.0, 7).unwrap();
        let n = s.arrivals.len() as f64;
        // 30 000 expected; a Poisson count's sd is ~173, so 3 % is > 5 sd.
        assert!((n - 30_000.0).abs() < 900.0, "{n} arrivals");
        let (mean, sd) = {
            let m = s.arrivals.iter().map(|a| a.rating).sum::<f64>() / n;
            let v = s
                .arrivals
                .iter()
                .map(|a| (a.rating - m).powi(2))
                .sum::<f64>()
                / n;
            (m, v.sqrt())
        };
        assert!((mean - 1500.0).abs() < 10.0, "mean {mean}");
        assert!((sd - 300.0).abs() < 10.0, "sd {sd}");
        // Sorted, inside the window, unique players, solo tickets.
        assert!(s.arrivals.windows(2).all(|w| w[0].time <= w[1].time));
        assert!(s.arrivals.iter().all(|a| a.time > 0.0 && a.time < 600.0));
        let unique: std::collections::HashSet<_> = s.arrivals.iter().map(|a| &a.player).collect();
        assert_eq!(unique.len(), s.arrivals.len());
        assert!(s.arrivals.iter().all(|a| a.party_size == 1));
        // Inter-arrival gaps are exponential: mean 1/rate, and about e^-1 of
        // them are longer than the mean.
        let gaps: Vec<f64> = s
            .arrivals
            .windows(2)
            .map(|w| w[1].time - w[0].time)
            .collect();
        let mean_gap = gaps.iter().sum::<f64>() / gaps.len() as f64;
        assert!((mean_gap - 0.02).abs() < 0.001, "mean gap {mean_gap}");
        let longer = gaps.iter().filter(|g| **g > 0.02).count() as f64 / gaps.len() as f64;
        assert!((longer - (-1f64).exp()).abs() < 0.02, "{longer}");
        // About 0.27 % beyond 3 sd.
        let tails = s
            .arrivals
            .iter()
            .filter(|a| ((a.rating - 1500.0) / 300.0).abs() >= 3.0)
            .count();
        assert!((30..=140).contains(&tails), "{tails} beyond 3 sd");
    }

    #[test]
    fn the_same_seed_gives_the_same_trace() {
        let a = Scenario::poisson(5.0, 60.0, 1500.0, 300.0, 1).unwrap();
        let b = Scenario::poisson(5.0, 60.0, 1500.0, 300.0, 1).unwrap();
        let c = Scenario::poisson(5.0, 60.0, 1500.0, 300.0, 2).unwrap();
        assert_eq!(a.arrivals, b.arrivals);
        assert_ne!(a.arrivals, c.arrivals);
        assert!(a.differs_from_acceptance().is_some());
        let acceptance = Scenario::poisson(50.0, 600.0, 1500.0, 300.0, 9).unwrap();
        assert_eq!(acceptance.differs_from_acceptance(), None);
    }

    #[test]
    fn bad_generator_parameters_are_refused() {
        assert!(Scenario::poisson(0.0, 60.0, 1500.0, 300.0, 1).is_err());
        assert!(Scenario::poisson(5.0, -1.0, 1500.0, 300.0, 1).is_err());
        assert!(Scenario::poisson(5.0, 60.0, 1500.0, -3.0, 1).is_err());
    }

    #[test]
    fn csv_traces_are_read_and_sorted() {
        let s = Scenario::from_csv(
            "time,player,rating\n2.5,bob,1400\n\n0.5, alice ,1600.5\n1,carol,-20\n",
        )
        .unwrap();
        let got: Vec<(f64, &str, f64)> = s
            .arrivals
            .iter()
            .map(|a| (a.time, a.player.as_str(), a.rating))
            .collect();
        assert_eq!(
            got,
            [
                (0.5, "alice", 1600.5),
                (1.0, "carol", -20.0),
                (2.5, "bob", 1400.0)
            ]
        );
        assert_eq!(s.last_arrival(), 2.5);
        let (mean, _) = s.rating_moments();
        assert!((mean - (1600.5 - 20.0 + 1400.0) / 3.0).abs() < 1e-9);
    }

    #[test]
    fn csv_errors_name_the_line_and_the_problem() {
        for (text, says) in [
            ("", "empty trace"),
            (
                "t,player,rating\n1,a,1",
                "line 1: expected the header time,player,rating",
            ),
            ("time,player,rating\n", "no arrivals"),
            ("time,player,rating\n1,a", "line 2: expected 3 fields"),
            ("time,player,rating\n1,a,1,2", "line 2: expected 3 fields"),
            (
                "time,player,rating\nsoon,a,1",
                "line 2: time \"soon\" is not a number",
            ),
            ("time,player,rating\n-1,a,1", "line 2: time must be"),
            (
                "time,player,rating\n1,a,high",
                "line 2: rating \"high\" is not a number",
            ),
            (
                "time,player,rating\n1,a,NaN",
                "line 2: rating must be finite",
            ),
            ("time,player,rating\n1,,5", "line 2: player \"\""),
            (
                "time,player,rating\n1,a,5\n\n2,a,6",
                "line 4: player \"a\" already arrives on line 2",
            ),
        ] {
            let err = Scenario::from_csv(text).expect_err(text);
            assert!(err.0.contains(says), "{text:?}: {err}");
        }
        let missing = Scenario::from_csv_file(Path::new("/nonexistent/trace.csv")).unwrap_err();
        assert!(
            missing.0.contains("cannot read /nonexistent/trace.csv"),
            "{missing}"
        );
    }

    #[test]
    fn party_size_distributions_parse() {
        let p = PartySizes::parse("1:0.6, 2:0.25,3:0.15").unwrap();
        assert_eq!(p.weights(), [(1, 0.6), (2, 0.25), (3, 0.15)]);
        assert_eq!(p.largest(), 3);
        assert!(!p.is_solo());
        assert!((p.mean() - 1.55).abs() < 1e-12);
        assert_eq!(p.to_string(), "1:0.6,2:0.25,3:0.15");
        // Positional: sizes 1, 2, 3; any order of keyed items; zero weights dropped.
        assert_eq!(PartySizes::parse("0.6,0.25,0.15").unwrap(), p);
        assert_eq!(PartySizes::parse("3:0.15,1:0.6,2:0.25,4:0").unwrap(), p);
        assert_eq!(PartySizes::parse("5:1").unwrap().weights(), [(5, 1.0)]);
        assert!(PartySizes::solo().is_solo());
        for (spec, says) in [
            ("1:0.6,2:0.3", "sum to"),
            ("1:0.6,0.4", "size:probability"),
            ("0:1", "outside 1..=100"),
            ("101:1", "outside 1..=100"),
            ("1:1.5,2:-0.5", "outside 0..=1"),
            ("1:0.5,1:0.5", "listed twice"),
            ("a:1", "not a whole number"),
            ("1:x", "not a number"),
            ("1:0.5,,2:0.5", "empty item"),
        ] {
            let err = PartySizes::parse(spec).expect_err(spec);
            assert!(err.contains(says), "{spec}: {err}");
        }
    }

    #[test]
    fn party_sizes_are_sampled_as_specified() {
        let p = PartySizes::parse("1:0.6,2:0.25,3:0.15").unwrap();
        let mut rng = StdRng::seed_from_u64(5);
        let n = 100_000;
        let mut counts = [0usize; 4];
        for _ in 0..n {
            counts[p.sample(&mut rng) as usize] += 1;
        }
        assert_eq!(counts[0], 0);
        // Binomial sd at n = 100 000 is at most 0.0016: 0.01 is > 6 sd.
        for (size, want) in [(1, 0.6), (2, 0.25), (3, 0.15)] {
            let got = counts[size] as f64 / n as f64;
            assert!((got - want).abs() < 0.01, "size {size}: {got}");
        }
    }

    #[test]
    fn generated_parties_arrive_together_with_the_distribution() {
        let g = Generator {
            rate: 50.0,
            seconds: 600.0,
            mean: 1500.0,
            sd: 300.0,
            seed: 7,
            parties: PartySizes::parse("1:0.6,2:0.25,3:0.15").unwrap(),
            party_sd: 100.0,
        };
        let s = Scenario::generate(g.clone()).unwrap();
        let groups = s.groups.len() as f64;
        // Arrivals (groups) at the rate, players at rate x mean size.
        assert!((groups - 30_000.0).abs() < 900.0, "{groups} groups");
        let players = s.arrivals.len() as f64;
        assert!((players / groups - 1.55).abs() < 0.02, "{players} players");
        for (size, want) in [(1, 0.6), (2, 0.25), (3, 0.15)] {
            let got = s.groups.iter().filter(|g| g.members.len() == size).count() as f64 / groups;
            assert!((got - want).abs() < 0.015, "size {size}: {got}");
        }
        // Members are adjacent, share the time and the group, know its size.
        let mut next = 0;
        for (gi, grp) in s.groups.iter().enumerate() {
            assert_eq!(grp.members[0], next);
            next += grp.members.len();
            assert_eq!(grp.is_party(), grp.label.is_some());
            for &m in &grp.members {
                let a = &s.arrivals[m];
                assert_eq!((a.time, a.group), (grp.time, gi));
                assert_eq!(a.party_size as usize, grp.members.len());
            }
        }
        assert_eq!(next, s.arrivals.len());
        assert!(s.groups.windows(2).all(|w| w[0].time <= w[1].time));
        // Every rating is still N(1500, 300); within a party the sd is ~100.
        let n = s.arrivals.len() as f64;
        let mean = s.arrivals.iter().map(|a| a.rating).sum::<f64>() / n;
        let sd = (s
            .arrivals
            .iter()
            .map(|a| (a.rating - mean).powi(2))
            .sum::<f64>()
            / n)
            .sqrt();
        assert!(
            (mean - 1500.0).abs() < 10.0 && (sd - 300.0).abs() < 10.0,
            "{mean} {sd}"
        );
        let pairs: Vec<f64> = s
            .groups
            .iter()
            .filter(|g| g.members.len() == 2)
            .map(|g| s.arrivals[g.members[0]].rating - s.arrivals[g.members[1]].rating)
            .collect();
        // The difference of two members is N(0, sqrt(2) x 100).
        let d = (pairs.iter().map(|x| x * x).sum::<f64>() / pairs.len() as f64).sqrt();
        assert!((d - 141.4).abs() < 8.0, "{d}");
        assert_eq!(s.largest_party(), 3);
        assert_eq!(s.party_sizes(), [1, 2, 3]);
        assert!(
            s.describe().contains("party sizes 1:0.6,2:0.25,3:0.15"),
            "{}",
            s.describe()
        );
        // Deterministic; and a solo distribution gives the solo generator's trace.
        assert_eq!(Scenario::generate(g).unwrap().arrivals, s.arrivals);
        let solo = Scenario::poisson(5.0, 60.0, 1500.0, 300.0, 1).unwrap();
        let solo_too = Scenario::generate(Generator {
            rate: 5.0,
            seconds: 60.0,
            mean: 1500.0,
            sd: 300.0,
            seed: 1,
            parties: PartySizes::solo(),
            party_sd: 40.0,
        })
        .unwrap();
        assert_eq!(solo.arrivals, solo_too.arrivals);
        assert!(!solo.has_parties());
    }

    #[test]
    fn csv_traces_carry_parties() {
        let s = Scenario::from_csv(
            "time,player,rating,party\n3,solo2,1500,\n1,b,1400,x\n0.5,solo1,1,\n1,a,1600,x\n1,c,1450,x\n2,d,10,lonely\n",
        )
        .unwrap();
        let order: Vec<&str> = s.arrivals.iter().map(|a| a.player.as_str()).collect();
        // The party leader is its first row in the file: b.
        assert_eq!(order, ["solo1", "b", "a", "c", "d", "solo2"]);
        assert_eq!(s.groups.len(), 4);
        assert_eq!(s.groups[1].members, [1, 2, 3]);
        assert_eq!(s.groups[1].label.as_deref(), Some("x"));
        // A label on one row alone is a solo player.
        assert!(!s.groups[2].is_party());
        assert_eq!(s.arrivals[2].party_size, 3);
        for (text, says) in [
            (
                "time,player,rating,party\n1,a,1,x\n2,b,1,x",
                "line 3: party \"x\" arrives at 1 on line 2, here at 2",
            ),
            (
                "time,player,rating,party\n1,a,1",
                "line 2: expected 4 fields",
            ),
            (
                "time,player,rating,team\n1,a,1,x",
                "line 1: expected the header",
            ),
        ] {
            let err = Scenario::from_csv(text).expect_err(text);
            assert!(err.0.contains(says), "{text:?}: {err}");
        }
    }
}
