//! The several-queues study's arrivals: a Poisson trace in which every
//! arrival is a new player who queues in 1, 2 or 3 (up to the group's
//! size) of the group's worlds. How many is drawn by the mix's shares (a
//! third each unless `--queue-mix`); which ones by the worlds' popularity
//! (uniformly unless `--world-weights`), one after the other without
//! replacement: the first is the one the player queues in alone in the
//! comparison lanes (so each world gets its popularity's share of the
//! players there).
//! Everything is seeded: the same seed, the same trace.

use rand::Rng;
use rand_distr::{Distribution, Exp};
use shared::PlayerId;

use crate::play::stream;

/// Random streams of the study (distinct from every other scenario's).
const ARRIVALS: u64 = 0x0C0E_0001;
const CHOICES: u64 = 0x0C0E_0002;

/// One arrival: a new player and the worlds it queues in (indices into
/// the group's worlds; the first is its "home" world).
#[derive(Debug, Clone, PartialEq)]
pub struct Arrival {
    /// Simulated seconds since the start.
    pub time: f64,
    pub player: PlayerId,
    pub worlds: Vec<usize>,
}

impl Arrival {
    /// How many worlds it queues in.
    pub fn queues(&self) -> usize {
        self.worlds.len()
    }
}

/// Who arrives when, and where they queue: the same for every lane.
#[derive(Debug, Clone)]
pub struct Trace {
    pub arrivals: Vec<Arrival>,
    pub rate: f64,
    pub seconds: f64,
    /// The shares of players queuing in 1, 2, … worlds (summing to 1).
    pub mix: Vec<f64>,
    /// The group's worlds.
    pub worlds: usize,
    /// Each world's popularity (shares summing to 1).
    pub popularity: Vec<f64>,
}

/// Parses `--queue-mix A,B,C`: the weights of queuing in 1, 2, 3 worlds,
/// normalised to shares.
pub fn parse_mix(v: &str) -> Result<Vec<f64>, String> {
    let weights = v
        .split(',')
        .map(|w| {
            w.trim()
                .parse::<f64>()
                .ok()
                .filter(|x| x.is_finite() && *x >= 0.0)
                .ok_or_else(|| format!("expected weights >= 0 like 1,1,1, got {v:?}"))
        })
        .collect::<Result<Vec<f64>, String>>()?;
    normalise(&weights)
}

/// The index `draw` (uniform in 0..1) falls on among `shares` (summing to
/// 1; the last one if rounding leaves it past them).
fn pick(shares: &[f64], draw: f64) -> usize {
    let mut acc = 0.0;
    for (i, share) in shares.iter().enumerate() {
        acc += share;
        if draw < acc {
            return i;
        }
    }
    shares.len() - 1
}

/// `weights` as shares summing to 1 (at least one positive).
pub fn normalise(weights: &[f64]) -> Result<Vec<f64>, String> {
    let total: f64 = weights.iter().sum();
    if weights.is_empty() || total <= 0.0 || weights.len() > shared::MAX_QUEUE_GROUP_WORLDS {
        return Err(format!(
            "1..={} weights, not all 0, got {weights:?}",
            shared::MAX_QUEUE_GROUP_WORLDS
        ));
    }
    Ok(weights.iter().map(|w| w / total).collect())
}

impl Trace {
    /// Poisson arrivals at `rate` per second for `seconds`, players
    /// `q000001`, `q000002`, …; each queues in `k` of the worlds with
    /// probability `mix[k - 1]`, the `k` drawn one after the other by
    /// `popularity` (one weight per world) among those not drawn yet.
    pub fn generate(
        rate: f64,
        seconds: f64,
        mix: &[f64],
        popularity: &[f64],
        seed: u64,
    ) -> Result<Self, String> {
        let worlds = popularity.len();
        if popularity.iter().any(|w| !(w.is_finite() && *w > 0.0)) {
            return Err(format!(
                "every world's weight must be > 0, got {popularity:?}"
            ));
        }
        if mix.len() > worlds {
            return Err(format!(
                "players queue in up to {} worlds, but the group has {worlds}",
                mix.len()
            ));
        }
        let mix = normalise(mix)?;
        let popularity = normalise(popularity)?;
        let gaps = Exp::new(rate).map_err(|e| format!("rate {rate}: {e}"))?;
        let mut times = stream(seed, ARRIVALS, 0);
        let mut choices = stream(seed, CHOICES, 0);
        let mut arrivals = Vec::new();
        let mut t = 0.0;
        loop {
            t += gaps.sample(&mut times);
            if t >= seconds {
                break;
            }
            let k = pick(&mix, choices.random()) + 1;
            let mut left: Vec<usize> = (0..worlds).collect();
            let mut order = Vec::with_capacity(k);
            for _ in 0..k {
                let total: f64 = left.iter().map(|&w| popularity[w]).sum();
                let shares: Vec<f64> = left.iter().map(|&w| popularity[w] / total).collect();
                order.push(left.remove(pick(&shares, choices.random())));
            }
            let player = PlayerId::parse(&format!("q{:06}", arrivals.len() + 1))
                .map_err(|e| e.to_string())?;
            arrivals.push(Arrival {
                time: t,
                player,
                worlds: order,
            });
        }
        Ok(Self {
            arrivals,
            rate,
            seconds,
            mix,
            worlds,
            popularity,
        })
    }

    /// The time of the last arrival (0 without any).
    pub fn last(&self) -> f64 {
        self.arrivals.last().map_or(0.0, |a| a.time)
    }

    /// How many arrivals queue in 1, 2, … worlds.
    pub fn counts(&self) -> Vec<usize> {
        let mut n = vec![0; self.mix.len()];
        for a in &self.arrivals {
            n[a.queues() - 1] += 1;
        }
        n
    }
}
