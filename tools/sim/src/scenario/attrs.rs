//! Player attributes of a trace (issue 37): each player's values, as raw
//! text, typed only when a world's declaration reads them at the join (a
//! `string` as it is, a `number` parsed, a `stringList` split at `|`, a
//! `numberMap` split at `|` into `key:number` pairs). Either drawn by the
//! generator ([`AttrSpec`]: the modes a player lists and a level) or read
//! from a CSV trace's `attr:<name>` columns.

use std::fmt;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rand_distr::{Distribution, Normal};

use super::{Scenario, TraceError};

/// The attribute the generator's modes go to.
pub const MODES: &str = "modes";
/// The attribute the generator's levels go to.
pub const LEVEL: &str = "level";
/// The separator of list items (and map entries) in a raw value.
pub const ITEM_SEPARATOR: char = '|';

/// Every player's attributes.
#[derive(Debug, Clone, PartialEq)]
pub struct Attrs {
    /// Attribute names, in column order.
    pub names: Vec<String>,
    /// Per player (indexed like the trace's arrivals), per name: the raw
    /// value (`a|b|c` for a list, its first item the player's first
    /// choice; `k:v|k:v` for a map); `None`: no value.
    pub values: Vec<Vec<Option<String>>>,
    /// How they were drawn (`None`: read from a trace).
    pub spec: Option<AttrSpec>,
}

impl Attrs {
    /// The column of attribute `name`.
    pub fn index(&self, name: &str) -> Option<usize> {
        self.names.iter().position(|n| n == name)
    }

    /// Player `player`'s raw value of `name`.
    pub fn raw(&self, player: usize, name: &str) -> Option<&str> {
        let i = self.index(name)?;
        self.values.get(player)?.get(i)?.as_deref()
    }

    /// Player `player`'s list `name`, in the trace's order (the first item
    /// is the first choice).
    pub fn list(&self, player: usize, name: &str) -> Option<Vec<&str>> {
        self.raw(player, name)
            .map(|v| v.split(ITEM_SEPARATOR).map(str::trim).collect())
    }

    /// Player `player`'s number `name`, if it reads as one.
    pub fn number(&self, player: usize, name: &str) -> Option<f64> {
        self.raw(player, name)?
            .trim()
            .parse::<f64>()
            .ok()
            .filter(|v| v.is_finite())
    }
}

/// What the generator draws (`--modes`, `--modes-listed`, `--levels`).
#[derive(Debug, Clone, PartialEq)]
pub struct AttrSpec {
    pub modes: Option<ModeSpec>,
    pub levels: Option<LevelDist>,
}

impl AttrSpec {
    /// The cross-mode and relaxation scenarios' defaults (issue 37): 4
    /// modes with popularity 50/25/15/10 %, 40 % of players listing 1,
    /// 30 % 2 and 30 % 3; levels uniform 1..=100.
    pub fn issue_default() -> Self {
        Self {
            modes: Some(ModeSpec::issue_default()),
            levels: Some(LevelDist::Uniform(1, 100)),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.modes.is_none() && self.levels.is_none()
    }
}

impl fmt::Display for AttrSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut parts = Vec::new();
        if let Some(m) = &self.modes {
            parts.push(format!("`{MODES}`: {m}"));
        }
        if let Some(l) = &self.levels {
            parts.push(format!("`{LEVEL}`: {l}"));
        }
        f.write_str(&parts.join("; "))
    }
}

/// The modes players list: a stringList attribute `modes`.
#[derive(Debug, Clone, PartialEq)]
pub struct ModeSpec {
    /// Each mode and its popularity (normalised to sum to 1): a player's
    /// first choice is drawn with these probabilities, each further one
    /// likewise among the modes not yet listed.
    pub popularity: Vec<(String, f64)>,
    /// How many modes a player lists: `(count, probability)`, counts
    /// ascending, probabilities summing to 1.
    pub listed: Vec<(usize, f64)>,
}

impl ModeSpec {
    pub fn issue_default() -> Self {
        Self {
            popularity: vec![
                ("ctf".into(), 0.5),
                ("koth".into(), 0.25),
                ("dm".into(), 0.15),
                ("tdm".into(), 0.1),
            ],
            listed: vec![(1, 0.4), (2, 0.3), (3, 0.3)],
        }
    }

    /// Parses `--modes` (`name:popularity,...`, e.g. `ctf:50,koth:25,dm:15,tdm:10`;
    /// popularities are weights > 0, normalised) and `--modes-listed`
    /// (`count:probability,...`, e.g. `1:0.4,2:0.3,3:0.3`, summing to 1,
    /// each count at most the number of modes).
    pub fn parse(modes: &str, listed: &str) -> Result<Self, String> {
        let mut popularity: Vec<(String, f64)> = Vec::new();
        for item in modes.split(',').map(str::trim) {
            let (name, weight) = item.rsplit_once(':').ok_or_else(|| {
                format!("modes {modes:?}: write each mode as name:popularity, got {item:?}")
            })?;
            let name = name.trim();
            if !shared::domain::is_token(name, 64) {
                return Err(format!(
                    "modes {modes:?}: {name:?} is not a token ([A-Za-z0-9._:-], 1 to 64)"
                ));
            }
            let w: f64 = weight.trim().parse().map_err(|_| {
                format!("modes {modes:?}: popularity {weight:?} of {name} is not a number")
            })?;
            if !(w.is_finite() && w > 0.0) {
                return Err(format!(
                    "modes {modes:?}: popularity of {name} must be > 0, got {w}"
                ));
            }
            if popularity.iter().any(|(n, _)| n == name) {
                return Err(format!("modes {modes:?}: {name} is listed twice"));
            }
            popularity.push((name.to_owned(), w));
        }
        let total: f64 = popularity.iter().map(|(_, w)| w).sum();
        for p in popularity.iter_mut() {
            p.1 /= total;
        }
        let mut counts: Vec<(usize, f64)> = Vec::new();
        for item in listed.split(',').map(str::trim) {
            let (count, p) = item.split_once(':').ok_or_else(|| {
                format!(
                    "modes listed {listed:?}: write each item as count:probability, got {item:?}"
                )
            })?;
            let count: usize = count.trim().parse().map_err(|_| {
                format!("modes listed {listed:?}: count {count:?} is not a whole number")
            })?;
            let p: f64 = p.trim().parse().map_err(|_| {
                format!("modes listed {listed:?}: probability {p:?} is not a number")
            })?;
            if count == 0 || count > popularity.len() {
                return Err(format!(
                    "modes listed {listed:?}: a player lists 1 to {} modes, got {count}",
                    popularity.len()
                ));
            }
            if !(p.is_finite() && (0.0..=1.0).contains(&p)) {
                return Err(format!(
                    "modes listed {listed:?}: probability {p} of {count} is outside 0..=1"
                ));
            }
            if counts.iter().any(|(c, _)| *c == count) {
                return Err(format!("modes listed {listed:?}: {count} is listed twice"));
            }
            counts.push((count, p));
        }
        let sum: f64 = counts.iter().map(|(_, p)| p).sum();
        if (sum - 1.0).abs() > 0.001 {
            return Err(format!(
                "modes listed {listed:?}: the probabilities sum to {sum}, not 1"
            ));
        }
        counts.retain(|(_, p)| *p > 0.0);
        counts.sort_by_key(|(c, _)| *c);
        for c in counts.iter_mut() {
            c.1 /= sum;
        }
        Ok(Self {
            popularity,
            listed: counts,
        })
    }

    /// `--modes` with the default listing (`1:0.4,2:0.3,3:0.3`), counts
    /// beyond the number of modes folded into the largest possible.
    pub fn parse_default_listing(modes: &str) -> Result<Self, String> {
        let mut spec = Self::parse(modes, "1:1")?;
        let n = spec.popularity.len();
        let mut listed: Vec<(usize, f64)> = Vec::new();
        for (count, p) in Self::issue_default().listed {
            let count = count.min(n);
            match listed.iter_mut().find(|(c, _)| *c == count) {
                Some(entry) => entry.1 += p,
                None => listed.push((count, p)),
            }
        }
        spec.listed = listed;
        Ok(spec)
    }

    /// Draws one player's modes, the first choice first.
    pub fn sample(&self, rng: &mut impl Rng) -> Vec<String> {
        let u: f64 = rng.random();
        let mut acc = 0.0;
        let mut count = self.listed.last().map_or(1, |c| c.0);
        for (c, p) in &self.listed {
            acc += p;
            if u < acc {
                count = *c;
                break;
            }
        }
        let mut left: Vec<(String, f64)> = self.popularity.clone();
        let mut out = Vec::with_capacity(count);
        while out.len() < count && !left.is_empty() {
            let total: f64 = left.iter().map(|(_, w)| w).sum();
            let u: f64 = rng.random::<f64>() * total;
            let mut acc = 0.0;
            let mut pick = left.len() - 1;
            for (i, (_, w)) in left.iter().enumerate() {
                acc += w;
                if u < acc {
                    pick = i;
                    break;
                }
            }
            out.push(left.remove(pick).0);
        }
        out
    }
}

fn percent(p: f64) -> String {
    crate::oracle::trim_float((p * 1000.0).round() / 10.0)
}

impl fmt::Display for ModeSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let modes: Vec<String> = self
            .popularity
            .iter()
            .map(|(m, p)| format!("{m} {} %", percent(*p)))
            .collect();
        let listed: Vec<String> = self
            .listed
            .iter()
            .map(|(c, p)| format!("{} % list {c}", percent(*p)))
            .collect();
        write!(
            f,
            "modes by popularity {} (first choice; each further one likewise among the rest), {}",
            modes.join(", "),
            listed.join(", ")
        )
    }
}

/// How levels are drawn: a number attribute `level`, whole numbers.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum LevelDist {
    /// Each whole number `lo..=hi` equally likely.
    Uniform(i64, i64),
    /// N(mean, sd) rounded to a whole number.
    Normal(f64, f64),
}

impl LevelDist {
    /// Parses `uniform:LO,HI` (whole numbers, LO <= HI) or
    /// `normal:MEAN,SD` (SD >= 0).
    pub fn parse(spec: &str) -> Result<Self, String> {
        let (kind, args) = spec
            .split_once(':')
            .ok_or_else(|| format!("levels {spec:?}: expected uniform:LO,HI or normal:MEAN,SD"))?;
        let (a, b) = args
            .split_once(',')
            .ok_or_else(|| format!("levels {spec:?}: expected two numbers after {kind}:"))?;
        match kind.trim() {
            "uniform" => {
                let lo: i64 = a
                    .trim()
                    .parse()
                    .map_err(|_| format!("levels {spec:?}: {a:?} is not a whole number"))?;
                let hi: i64 = b
                    .trim()
                    .parse()
                    .map_err(|_| format!("levels {spec:?}: {b:?} is not a whole number"))?;
                if lo > hi {
                    return Err(format!("levels {spec:?}: LO <= HI"));
                }
                Ok(Self::Uniform(lo, hi))
            }
            "normal" => {
                let mean: f64 = a
                    .trim()
                    .parse()
                    .map_err(|_| format!("levels {spec:?}: {a:?} is not a number"))?;
                let sd: f64 = b
                    .trim()
                    .parse()
                    .map_err(|_| format!("levels {spec:?}: {b:?} is not a number"))?;
                if !(mean.is_finite() && sd.is_finite() && sd >= 0.0) {
                    return Err(format!("levels {spec:?}: a finite mean and an sd >= 0"));
                }
                Ok(Self::Normal(mean, sd))
            }
            other => Err(format!(
                "levels {spec:?}: {other:?} is neither uniform nor normal"
            )),
        }
    }

    pub fn sample(&self, rng: &mut impl Rng) -> i64 {
        match *self {
            Self::Uniform(lo, hi) => rng.random_range(lo..=hi),
            Self::Normal(mean, sd) => Normal::new(mean, sd)
                .map(|n| n.sample(rng).round() as i64)
                .unwrap_or(mean.round() as i64),
        }
    }
}

impl fmt::Display for LevelDist {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Uniform(lo, hi) => write!(f, "whole numbers uniform in {lo}..={hi}"),
            Self::Normal(m, sd) => write!(
                f,
                "N({}, {}) rounded to whole numbers",
                crate::oracle::trim_float(*m),
                crate::oracle::trim_float(*sd)
            ),
        }
    }
}

impl Scenario {
    /// The trace with attributes drawn by `spec` from their own random
    /// stream (seeded by `seed`), so the arrival times, ratings and
    /// latencies stay as they are: one list of modes per arrival (a party
    /// chooses together: its members list the same), one level per player.
    pub fn with_attributes(mut self, spec: &AttrSpec, seed: u64) -> Self {
        let mut rng = StdRng::seed_from_u64(seed ^ 0x6174_7472_6962_7574);
        let mut names = Vec::new();
        if spec.modes.is_some() {
            names.push(MODES.to_owned());
        }
        if spec.levels.is_some() {
            names.push(LEVEL.to_owned());
        }
        let mut values = vec![Vec::with_capacity(names.len()); self.arrivals.len()];
        for group in &self.groups {
            let modes = spec
                .modes
                .as_ref()
                .map(|m| m.sample(&mut rng).join(&ITEM_SEPARATOR.to_string()));
            for &p in &group.members {
                if spec.modes.is_some() {
                    values[p].push(modes.clone());
                }
                if let Some(levels) = &spec.levels {
                    values[p].push(Some(levels.sample(&mut rng).to_string()));
                }
            }
        }
        self.attrs = Some(Attrs {
            names,
            values,
            spec: Some(spec.clone()),
        });
        self
    }

    /// A one-line description of the attributes, for the report.
    pub(super) fn describe_attributes(&self) -> Option<String> {
        let attrs = self.attrs.as_ref()?;
        Some(match &attrs.spec {
            Some(spec) => format!("; attributes drawn: {spec}"),
            None => format!(
                "; attributes from the trace: {}",
                attrs
                    .names
                    .iter()
                    .map(|n| format!("`{n}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        })
    }
}

/// A CSV header's `attr:<name>` column: the attribute's name, checked like
/// a declaration's (`^[a-z][A-Za-z0-9_]{0,31}$`).
pub(super) fn column_name(column: &str) -> Option<Result<String, TraceError>> {
    let name = column.strip_prefix("attr:")?;
    let mut chars = name.chars();
    let valid = name.len() <= 32
        && chars.next().is_some_and(|c| c.is_ascii_lowercase())
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_');
    Some(if valid {
        Ok(name.to_owned())
    } else {
        Err(TraceError(format!(
            "line 1: column {column:?}: an attribute is [a-z][A-Za-z0-9_]{{0,31}}"
        )))
    })
}
