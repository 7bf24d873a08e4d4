//! The block-list study's players and arrivals: a fixed population, every
//! player's avoid list (a uniform number of distinct others, drawn
//! uniformly), and a Poisson arrival trace drawing its players from those
//! of the population who are not away (waiting or playing since their last
//! arrival). Everything is seeded: the same seed, the same lists and trace.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, HashSet};

use rand::Rng;
use rand_distr::{Distribution, Exp, Normal};
use shared::PlayerId;

use crate::play::{stream, uniform};

/// Random streams of the study (distinct from every other scenario's).
const LISTS: u64 = 0xB10C_0001;
const RATINGS: u64 = 0xB10C_0002;
const ARRIVALS: u64 = 0xB10C_0003;

/// The players, their ratings and avoid lists.
#[derive(Debug, Clone)]
pub struct Population {
    pub ids: Vec<PlayerId>,
    /// Player id → index.
    pub index: HashMap<String, usize>,
    /// Each player's rating (sent as the verified claim; FIFO ignores it).
    pub ratings: Vec<f64>,
    /// Each player's avoid list: indices of distinct others.
    pub avoids: Vec<Vec<usize>>,
    /// How many avoid lists name each player.
    pub avoided_by: Vec<usize>,
    /// Every pair where either avoids the other, as (lower, higher) index.
    pub pairs: HashSet<(usize, usize)>,
    /// The range list sizes were drawn from.
    pub sizes: (usize, usize),
}

/// The pair of `a` and `b` in [`Population::pairs`]' order.
pub fn pair(a: usize, b: usize) -> (usize, usize) {
    (a.min(b), a.max(b))
}

impl Population {
    /// `n` players `p00001`, `p00002`, …; each avoids a uniform
    /// `sizes.0..=sizes.1` distinct others of the population (never
    /// themselves), drawn uniformly; ratings from N(`mean`, `sd`).
    pub fn generate(
        n: usize,
        sizes: (usize, usize),
        mean: f64,
        sd: f64,
        seed: u64,
    ) -> Result<Self, String> {
        let (lo, hi) = sizes;
        if n < 2 {
            return Err(format!("the population needs at least 2 players, got {n}"));
        }
        if lo > hi || hi > n - 1 {
            return Err(format!(
                "avoid lists of {lo}..={hi} others do not fit a population of {n}"
            ));
        }
        let width = n.to_string().len().max(5);
        let ids = (0..n)
            .map(|i| PlayerId::parse(&format!("p{:0width$}", i + 1)).map_err(|e| e.to_string()))
            .collect::<Result<Vec<_>, String>>()?;
        let index = ids
            .iter()
            .enumerate()
            .map(|(i, p)| (p.as_str().to_owned(), i))
            .collect();
        let normal = Normal::new(mean, sd).map_err(|e| format!("ratings N({mean}, {sd}): {e}"))?;
        let mut rng = stream(seed, RATINGS, 0);
        let ratings = (0..n).map(|_| normal.sample(&mut rng)).collect();
        let mut rng = stream(seed, LISTS, 0);
        let mut avoids = Vec::with_capacity(n);
        let mut avoided_by = vec![0; n];
        let mut pairs = HashSet::new();
        for i in 0..n {
            let k = rng.random_range(lo..=hi);
            // k of the n − 1 others: index j stands for j, or j + 1 from i on.
            let list: Vec<usize> = rand::seq::index::sample(&mut rng, n - 1, k)
                .into_iter()
                .map(|j| if j >= i { j + 1 } else { j })
                .collect();
            for &j in &list {
                avoided_by[j] += 1;
                pairs.insert(pair(i, j));
            }
            avoids.push(list);
        }
        Ok(Self {
            ids,
            index,
            ratings,
            avoids,
            avoided_by,
            pairs,
            sizes,
        })
    }

    pub fn len(&self) -> usize {
        self.ids.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    /// Whether `a` and `b` may not meet (either avoids the other).
    pub fn blocked(&self, a: usize, b: usize) -> bool {
        self.pairs.contains(&pair(a, b))
    }

    /// Pairs where both avoid each other.
    pub fn mutual(&self) -> usize {
        self.avoids
            .iter()
            .enumerate()
            .map(|(i, list)| {
                list.iter()
                    .filter(|&&j| j > i && self.avoids[j].contains(&i))
                    .count()
            })
            .sum()
    }

    /// The share of all groups of `seats` distinct players of the population
    /// holding at least one blocked pair, estimated from `samples` random
    /// groups: what a matcher ignoring the lists would run into.
    pub fn blocked_share(&self, seats: usize, samples: usize, seed: u64) -> f64 {
        let n = self.len();
        if seats < 2 || seats > n || samples == 0 {
            return 0.0;
        }
        let mut rng = stream(seed, LISTS, 1);
        let hit = (0..samples)
            .filter(|_| {
                let g = rand::seq::index::sample(&mut rng, n, seats).into_vec();
                g.iter()
                    .enumerate()
                    .any(|(x, &a)| g[x + 1..].iter().any(|&b| self.blocked(a, b)))
            })
            .count();
        hit as f64 / samples as f64
    }
}

/// A band of counts for grouping players: `lo..=hi` (`hi` `None`: and more).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Band {
    pub lo: usize,
    pub hi: Option<usize>,
}

impl Band {
    pub fn contains(&self, v: usize) -> bool {
        v >= self.lo && self.hi.is_none_or(|h| v <= h)
    }

    pub fn label(&self) -> String {
        match self.hi {
            Some(h) if h == self.lo => h.to_string(),
            Some(h) => format!("{}–{h}", self.lo),
            None => format!("{}+", self.lo),
        }
    }
}

/// The bands of list sizes `0..=hi`: none, the lower half, the upper half
/// (0, 1–10 and 11–20 for lists of up to 20); empty bands left out.
pub fn list_bands(hi: usize) -> Vec<Band> {
    let half = hi.div_ceil(2);
    [(0, 0), (1, half), (half + 1, hi)]
        .into_iter()
        .filter(|(lo, h)| lo <= h)
        .map(|(lo, h)| Band { lo, hi: Some(h) })
        .collect()
}

/// The bands of how many lists name a player, around the mean list size
/// `mean` (which is also the mean number of lists naming a player), in
/// steps of half of it: 0–5, 6–10, 11–15 and 16+ for a mean of 10.
pub fn avoided_by_bands(mean: f64) -> Vec<Band> {
    let q = ((mean / 2.0).round() as usize).max(1);
    vec![
        Band { lo: 0, hi: Some(q) },
        Band {
            lo: q + 1,
            hi: Some(2 * q),
        },
        Band {
            lo: 2 * q + 1,
            hi: Some(3 * q),
        },
        Band {
            lo: 3 * q + 1,
            hi: None,
        },
    ]
}

/// The index of the band holding `v` (the last one if none does).
pub fn band_of(bands: &[Band], v: usize) -> usize {
    bands
        .iter()
        .position(|b| b.contains(v))
        .unwrap_or(bands.len().saturating_sub(1))
}

/// Who arrives when: the same for every lane.
#[derive(Debug, Clone)]
pub struct Trace {
    /// (simulated seconds since the start, player index), in time order.
    pub arrivals: Vec<(f64, usize)>,
    /// Arrivals of the Poisson process when every player was away (none
    /// joined).
    pub dropped: usize,
    pub rate: f64,
    pub seconds: f64,
    /// After each arrival its player stays away for U(away) seconds.
    pub away: (f64, f64),
}

impl Trace {
    /// Poisson arrivals at `rate` per second for `seconds`; each draws a
    /// player uniformly among those not away. A player who arrives is away
    /// for U(`away`) simulated seconds from then on (their wait, a game and
    /// a break), so nobody arrives while the trace still counts them
    /// waiting or playing; after that they may arrive again.
    pub fn generate(
        population: &Population,
        rate: f64,
        seconds: f64,
        away: (f64, f64),
        seed: u64,
    ) -> Result<Self, String> {
        let gaps = Exp::new(rate).map_err(|e| format!("rate {rate}: {e}"))?;
        let mut rng = stream(seed, ARRIVALS, 0);
        let mut available: Vec<usize> = (0..population.len()).collect();
        // (back at, in µs; player).
        let mut returning: BinaryHeap<Reverse<(u64, usize)>> = BinaryHeap::new();
        let mut arrivals = Vec::new();
        let mut dropped = 0;
        let mut t = 0.0;
        loop {
            t += gaps.sample(&mut rng);
            if t >= seconds {
                break;
            }
            let now_us = (t * 1e6) as u64;
            while let Some(Reverse((back, p))) = returning.peek().copied() {
                if back > now_us {
                    break;
                }
                returning.pop();
                available.push(p);
            }
            if available.is_empty() {
                dropped += 1;
                continue;
            }
            let p = available.swap_remove(rng.random_range(0..available.len()));
            arrivals.push((t, p));
            let back = t + uniform(&mut rng, away);
            returning.push(Reverse(((back * 1e6) as u64, p)));
        }
        Ok(Self {
            arrivals,
            dropped,
            rate,
            seconds,
            away,
        })
    }

    /// The time of the last arrival (0 without any).
    pub fn last(&self) -> f64 {
        self.arrivals.last().map_or(0.0, |a| a.0)
    }

    /// How many distinct players arrive, and how many arrive more than once.
    pub fn distinct(&self) -> (usize, usize) {
        let mut count: HashMap<usize, usize> = HashMap::new();
        for &(_, p) in &self.arrivals {
            *count.entry(p).or_default() += 1;
        }
        (count.len(), count.values().filter(|c| **c > 1).count())
    }
}
