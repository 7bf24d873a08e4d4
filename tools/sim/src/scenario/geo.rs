//! Where players are: each player's home region (the cluster they are
//! reported by) and the round-trip latency they measure to each region.
//! Either drawn from a [`LatencyModel`] (the regions scenario's default:
//! five real-world-like regions) or read from a CSV trace's `home` and
//! `latency:<region>` columns.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use super::{Scenario, TraceError};

/// The default geography, declared once as data (`--geography` reads the
/// same format).
const STANDARD_JSON: &str = include_str!("../../geography/world.json");

/// Most milliseconds a client may report (the core's `MAX_LATENCY_MS`).
pub const MAX_LATENCY_MS: u32 = shared::domain::MAX_LATENCY_MS;

/// How latencies are generated. A player's latency to region `r` is
///
/// ```text
/// access + backbone[home][r] + jitter_r
/// ```
///
/// `access` ~ U(`access.0`, `access.1`) once per player (the last mile to
/// its home datacentre, paid to every region), `backbone` the round trip
/// between the datacentres (0 on the diagonal) and `jitter_r` ~ U(0,
/// `jitter`) per player and region; rounded up to whole milliseconds, as
/// the core rounds. The home region is drawn from `shares`, once per
/// arrival (a party plays from one place: its members share it).
#[derive(Debug, Clone, PartialEq)]
pub struct LatencyModel {
    pub regions: Vec<String>,
    /// Probability of each home region (sums to 1).
    pub shares: Vec<f64>,
    /// Round trip between the regions' datacentres, ms (symmetric).
    pub backbone: Vec<Vec<f64>>,
    pub access: (f64, f64),
    pub jitter: f64,
}

impl LatencyModel {
    /// The regions scenario's model, `tools/sim/geography/world.json`:
    /// na-east (North Virginia), na-west (Oregon / North California), eu
    /// (Frankfurt / Ireland), asia (Tokyo) and oceania (Sydney), with home
    /// shares 40/25/20/10/5 % and round trips rounded from public
    /// inter-region measurements.
    pub fn standard() -> Self {
        Self::from_json(STANDARD_JSON).unwrap_or_else(|e| panic!("geography/world.json: {e}"))
    }

    /// A model from a geography file (`--geography`, docs/simulator.md):
    /// `{"regions", "shares", "backboneMs", "accessMs": [lo, hi],
    /// "jitterMs"}`, plus an optional `"about"` text; validated.
    pub fn from_json(text: &str) -> Result<Self, String> {
        #[derive(serde::Deserialize)]
        #[serde(rename_all = "camelCase", deny_unknown_fields)]
        struct File {
            #[serde(default)]
            #[allow(dead_code)]
            about: Option<String>,
            regions: Vec<String>,
            shares: Vec<f64>,
            backbone_ms: Vec<Vec<f64>>,
            access_ms: (f64, f64),
            jitter_ms: f64,
        }
        let f: File = serde_json::from_str(text).map_err(|e| e.to_string())?;
        let model = Self {
            regions: f.regions,
            shares: f.shares,
            backbone: f.backbone_ms,
            access: f.access_ms,
            jitter: f.jitter_ms,
        };
        model.validate()?;
        Ok(model)
    }

    /// The model's problems, if any.
    pub fn validate(&self) -> Result<(), String> {
        let n = self.regions.len();
        if n == 0 || self.shares.len() != n || self.backbone.len() != n {
            return Err("a latency model needs one share and one backbone row per region".into());
        }
        for (i, r) in self.regions.iter().enumerate() {
            if r.is_empty() || self.regions[..i].contains(r) {
                return Err(format!(
                    "region names must be distinct and non-empty, got {r:?}"
                ));
            }
        }
        let sum: f64 = self.shares.iter().sum();
        if self.shares.iter().any(|s| !(s.is_finite() && *s >= 0.0)) || (sum - 1.0).abs() > 1e-6 {
            return Err(format!(
                "region shares must be >= 0 and sum to 1, got {sum}"
            ));
        }
        for (i, row) in self.backbone.iter().enumerate() {
            if row.len() != n || row[i] != 0.0 {
                return Err(format!("backbone row {i}: {n} values, 0 on the diagonal"));
            }
            for (j, v) in row.iter().enumerate() {
                if !(v.is_finite() && *v >= 0.0) || *v != self.backbone[j][i] {
                    return Err(format!("backbone {i},{j}: finite, >= 0 and symmetric"));
                }
            }
        }
        let (lo, hi) = self.access;
        let access_ok = lo.is_finite() && hi.is_finite() && lo > 0.0 && lo <= hi;
        if !(access_ok && self.jitter.is_finite() && self.jitter >= 0.0) {
            return Err("access LO..HI with 0 < LO <= HI, jitter >= 0".into());
        }
        Ok(())
    }

    /// Draws every arrival's home and latencies: one home per group (a
    /// party's members share it), access and jitter per player. The same
    /// trace and seed give the same latencies; the arrival times and
    /// ratings are left as they are.
    pub fn draw(&self, scenario: &Scenario, seed: u64) -> Result<Geo, TraceError> {
        self.validate().map_err(TraceError)?;
        // A stream of its own: the trace itself does not change.
        let mut rng = StdRng::seed_from_u64(seed ^ 0x6e65_7477_6f72_6b21);
        let n = scenario.arrivals.len();
        let mut home = vec![0; n];
        let mut latency = vec![Vec::new(); n];
        for group in &scenario.groups {
            let u: f64 = rng.random();
            let mut acc = 0.0;
            let mut h = self.regions.len() - 1;
            for (i, s) in self.shares.iter().enumerate() {
                acc += s;
                if u < acc {
                    h = i;
                    break;
                }
            }
            for &m in &group.members {
                home[m] = h;
                let access = rng.random_range(self.access.0..=self.access.1);
                latency[m] = self.backbone[h]
                    .iter()
                    .map(|b| {
                        let jitter = if self.jitter > 0.0 {
                            rng.random_range(0.0..=self.jitter)
                        } else {
                            0.0
                        };
                        let ms = (access + b + jitter).ceil().max(1.0);
                        Some((ms as u32).min(MAX_LATENCY_MS))
                    })
                    .collect();
            }
        }
        Ok(Geo {
            regions: self.regions.clone(),
            home,
            latency,
            model: Some(self.clone()),
        })
    }

    /// The model as Markdown: the formula, the shares and the matrix.
    pub fn markdown(&self) -> String {
        let mut out = format!(
            "A player's latency to region *r* = access + backbone(home, *r*) + jitter(*r*): access ~ U({}, {}) ms once per player (its last mile, paid to every region), backbone the round trip between the datacentres below (ms), jitter ~ U(0, {}) ms per player and region; rounded up to whole ms. Homes are drawn per arrival with the shares below (a party's members share one).\n\n",
            trim(self.access.0),
            trim(self.access.1),
            trim(self.jitter)
        );
        out.push_str("| home \\ region | share |");
        for r in &self.regions {
            out.push_str(&format!(" {r} |"));
        }
        out.push_str("\n|---|---:|");
        out.push_str(&"---:|".repeat(self.regions.len()));
        out.push('\n');
        for (i, r) in self.regions.iter().enumerate() {
            out.push_str(&format!("| {r} | {:.0} % |", self.shares[i] * 100.0));
            for b in &self.backbone[i] {
                out.push_str(&format!(" {} |", trim(*b)));
            }
            out.push('\n');
        }
        out
    }
}

fn trim(v: f64) -> String {
    crate::oracle::trim_float(v)
}

/// Every player's home region and measured latencies, indexed like the
/// trace's arrivals.
#[derive(Debug, Clone, PartialEq)]
pub struct Geo {
    pub regions: Vec<String>,
    /// Each player's home region (an index into `regions`): the cluster
    /// the report counts them in.
    pub home: Vec<usize>,
    /// Each player's latency to each region, ms (`None`: not measured).
    pub latency: Vec<Vec<Option<u32>>>,
    /// The model they were drawn from (`None`: read from a trace).
    pub model: Option<LatencyModel>,
}

impl Geo {
    /// Region `name`'s index.
    pub fn index(&self, name: &str) -> Option<usize> {
        self.regions.iter().position(|r| r == name)
    }

    /// The worst (highest) latency of `players` to region `r` and their
    /// mean there; `None` when one of them did not measure it.
    pub fn worst_in(&self, players: &[usize], r: usize) -> Option<(u32, f64)> {
        let mut worst = 0;
        let mut sum = 0.0;
        for &p in players {
            let ms = self.latency[p][r]?;
            worst = worst.max(ms);
            sum += f64::from(ms);
        }
        (!players.is_empty()).then(|| (worst, sum / players.len() as f64))
    }

    /// Among `allowed` regions, the one where the worst latency of
    /// `players` is lowest (ties: the lower mean, then the earlier region),
    /// as the core chooses among qualifying regions: `(region, worst)`.
    pub fn best_region(&self, players: &[usize], allowed: &[usize]) -> Option<(usize, u32)> {
        let mut best: Option<(usize, u32, f64)> = None;
        for &r in allowed {
            if let Some((worst, mean)) = self.worst_in(players, r) {
                if best.is_none_or(|(_, w, m)| worst < w || (worst == w && mean < m)) {
                    best = Some((r, worst, mean));
                }
            }
        }
        best.map(|(r, w, _)| (r, w))
    }

    /// How many players have each home region.
    pub fn cluster_sizes(&self) -> Vec<usize> {
        let mut sizes = vec![0; self.regions.len()];
        for &h in &self.home {
            sizes[h] += 1;
        }
        sizes
    }
}

impl Scenario {
    /// The trace with homes and latencies drawn from `model`.
    pub fn with_latencies(mut self, model: &LatencyModel, seed: u64) -> Result<Self, TraceError> {
        self.geo = Some(model.draw(&self, seed)?);
        Ok(self)
    }

    /// The trace as CSV, as `--trace` reads it: `time,player,rating,party`
    /// and, with latencies, `home` and one `latency:<region>` column per
    /// region; with attributes, one `attr:<name>` column per attribute.
    pub fn to_csv(&self) -> String {
        let mut out = String::from("time,player,rating,party");
        if let Some(geo) = &self.geo {
            out.push_str(",home");
            for r in &geo.regions {
                out.push_str(&format!(",latency:{r}"));
            }
        }
        if let Some(attrs) = &self.attrs {
            for name in &attrs.names {
                out.push_str(&format!(",attr:{name}"));
            }
        }
        out.push('\n');
        for (i, a) in self.arrivals.iter().enumerate() {
            let label = self.groups[a.group].label.clone().unwrap_or_default();
            out.push_str(&format!("{},{},{},{label}", a.time, a.player, a.rating));
            if let Some(geo) = &self.geo {
                out.push_str(&format!(",{}", geo.regions[geo.home[i]]));
                for ms in &geo.latency[i] {
                    out.push(',');
                    if let Some(ms) = ms {
                        out.push_str(&ms.to_string());
                    }
                }
            }
            if let Some(attrs) = &self.attrs {
                for v in &attrs.values[i] {
                    out.push(',');
                    out.push_str(v.as_deref().unwrap_or(""));
                }
            }
            out.push('\n');
        }
        out
    }
}
