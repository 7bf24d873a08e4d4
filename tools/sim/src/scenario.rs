//! Arrival traces: who arrives when, with which rating. Either generated
//! (Poisson arrivals at a rate, ratings from a normal distribution) or read
//! from a CSV file with the header `time,player,rating`.
//!
//! Every arrival is one ticket. `party_size` is always 1 today; it is the
//! place where a party-size distribution (`--parties`) slots in later, as an
//! acceptance probability (ready checks) would be a field of [`Scenario`].

use std::fmt;
use std::path::Path;

use rand::rngs::StdRng;
use rand::SeedableRng;
use rand_distr::{Distribution, Exp, Normal};

/// One ticket arriving in the queue.
#[derive(Debug, Clone, PartialEq)]
pub struct Arrival {
    /// Simulated seconds since the start of the trace.
    pub time: f64,
    pub player: String,
    pub rating: f64,
    /// Players on the ticket (1 = solo). Only 1 is simulated so far.
    pub party_size: u32,
}

/// Where a trace came from, for the report.
#[derive(Debug, Clone, PartialEq)]
pub enum Source {
    Poisson {
        rate: f64,
        seconds: f64,
        mean: f64,
        sd: f64,
        seed: u64,
    },
    Csv {
        path: String,
    },
}

/// An arrival trace, sorted by time.
#[derive(Debug, Clone)]
pub struct Scenario {
    pub source: Source,
    pub arrivals: Vec<Arrival>,
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

impl Scenario {
    /// Poisson arrivals at `rate` per second for `seconds` (exponential
    /// inter-arrival times), ratings from N(`mean`, `sd`); the same seed
    /// always gives the same trace. Players are `p000001`, `p000002`, ...
    pub fn poisson(
        rate: f64,
        seconds: f64,
        mean: f64,
        sd: f64,
        seed: u64,
    ) -> Result<Self, TraceError> {
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
        let ratings = Normal::new(mean, sd)
            .map_err(|e| TraceError(format!("rating distribution N({mean}, {sd}): {e}")))?;
        let gaps = Exp::new(rate).map_err(|e| TraceError(format!("rate {rate}: {e}")))?;
        let mut rng = StdRng::seed_from_u64(seed);
        let mut arrivals = Vec::with_capacity((rate * seconds * 1.1) as usize + 16);
        let mut t = 0.0;
        loop {
            t += gaps.sample(&mut rng);
            if t >= seconds {
                break;
            }
            arrivals.push(Arrival {
                time: t,
                player: format!("p{:06}", arrivals.len() + 1),
                rating: ratings.sample(&mut rng),
                party_size: 1,
            });
        }
        Ok(Self {
            source: Source::Poisson {
                rate,
                seconds,
                mean,
                sd,
                seed,
            },
            arrivals,
        })
    }

    /// Reads a CSV file with the header `time,player,rating` (seconds since
    /// the start, a player id, a finite rating). Rows may come in any order;
    /// players must be unique.
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
        let (_, header) = lines.next().ok_or_else(|| {
            TraceError("empty trace: expected the header time,player,rating".into())
        })?;
        let columns: Vec<&str> = header.split(',').map(str::trim).collect();
        if columns != ["time", "player", "rating"] {
            return Err(TraceError(format!(
                "line 1: expected the header time,player,rating, got {header:?}"
            )));
        }
        let mut arrivals = Vec::new();
        let mut seen = std::collections::HashMap::new();
        for (line, row) in lines {
            let fields: Vec<&str> = row.split(',').map(str::trim).collect();
            if fields.len() != 3 {
                return Err(TraceError(format!(
                    "line {line}: expected 3 fields (time,player,rating), got {}: {row:?}",
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
            if let Some(first) = seen.insert(player.to_owned(), line) {
                return Err(TraceError(format!(
                    "line {line}: player {player:?} already arrives on line {first} (one ticket per player)"
                )));
            }
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
            arrivals.push(Arrival {
                time,
                player: player.to_owned(),
                rating,
                party_size: 1,
            });
        }
        if arrivals.is_empty() {
            return Err(TraceError("the trace has a header but no arrivals".into()));
        }
        arrivals.sort_by(|a, b| a.time.total_cmp(&b.time));
        Ok(Self {
            source: Source::Csv {
                path: String::new(),
            },
            arrivals,
        })
    }

    /// Time of the last arrival (0 for an empty trace).
    pub fn last_arrival(&self) -> f64 {
        self.arrivals.last().map_or(0.0, |a| a.time)
    }

    /// Mean and standard deviation the z-scores are taken against: the
    /// generator's parameters, or the trace's own for a CSV file.
    pub fn rating_moments(&self) -> (f64, f64) {
        match self.source {
            Source::Poisson { mean, sd, .. } => (mean, sd),
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

    /// A one-line description for the report.
    pub fn describe(&self) -> String {
        match &self.source {
            Source::Poisson {
                rate,
                seconds,
                mean,
                sd,
                seed,
            } => format!(
                "Poisson arrivals at {rate}/s for {} ({} arrivals), ratings N({mean}, {sd}), seed {seed}",
                human_seconds(*seconds),
                self.arrivals.len()
            ),
            Source::Csv { path } => format!(
                "trace {path} ({} arrivals over {})",
                self.arrivals.len(),
                human_seconds(self.last_arrival())
            ),
        }
    }

    /// Whether this is the scenario the acceptance checks are defined for
    /// (50 arrivals/s, N(1500, 300), 10 minutes); `None` if it is, else why not.
    pub fn differs_from_acceptance(&self) -> Option<String> {
        match self.source {
            Source::Poisson {
                rate,
                seconds,
                mean,
                sd,
                ..
            } if rate == 50.0 && seconds == 600.0 && mean == 1500.0 && sd == 300.0 => None,
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
}
