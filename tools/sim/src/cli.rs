//! Command-line flags (see `--help` and docs/simulator.md).

use std::path::PathBuf;

use crate::engine::Refusal;
use crate::scenario::{AttrSpec, LevelDist, ModeSpec, PartySizes};

mod usage;
pub use usage::USAGE;

/// `--modes` unless given: the issue's four modes by popularity.
pub const DEFAULT_MODES: &str = "ctf:50,koth:25,dm:15,tdm:10";
/// `--levels` unless given (the attributes scenario).
pub const DEFAULT_LEVELS: &str = "uniform:1,100";
/// The attributes scenario's arrival rate unless `--rate`.
pub const ATTRIBUTES_RATE: f64 = 2.0;
/// The attributes scenario's trace length unless `--minutes`.
pub const ATTRIBUTES_MINUTES: f64 = 10.0;

/// Parsed flags.
#[derive(Debug, Clone, PartialEq)]
pub struct Options {
    pub rate: f64,
    pub minutes: f64,
    pub mean: f64,
    pub sd: f64,
    pub seed: u64,
    pub parties: PartySizes,
    pub party_sd: f64,
    pub trace: Option<PathBuf>,
    pub rules: Vec<PathBuf>,
    pub world: Option<String>,
    pub team_size: Option<u32>,
    pub ticket_ttl: u64,
    pub instant_match: bool,
    pub oracle_periods: Vec<f64>,
    pub speed: f64,
    pub drain: f64,
    pub in_flight: usize,
    pub redis_server: String,
    pub out: Option<PathBuf>,
    pub fail_on_miss: bool,
    pub help: bool,
    /// Empty: rule sets with a ready check run with probability 1.
    pub accept_probabilities: Vec<f64>,
    pub refusal: Refusal,
    pub answer_delay: (f64, f64),
    /// The regions scenario.
    pub regions: bool,
    /// `None`: `tools/sim/geography/world.json` (built in).
    pub geography: Option<PathBuf>,
    pub write_trace: Option<PathBuf>,
    /// The ratings scenario.
    pub ratings: bool,
    pub players: usize,
    pub games: f64,
    pub initial_rating: f64,
    pub noise: f64,
    /// `None`: the scenario's default.
    pub game_seconds: Option<(f64, f64)>,
    pub rest: (f64, f64),
    /// The backfill scenario.
    pub backfill: bool,
    pub leave_probability: f64,
    pub renew: f64,
    /// The attributes scenario.
    pub attributes: bool,
    /// The attributes the generator draws (empty: none).
    pub attr_spec: AttrSpec,
    /// The block-list scenario.
    pub blocks: bool,
    /// How many others each player avoids (uniform, inclusive).
    pub avoid: (usize, usize),
    /// How long a player who arrived is not drawn again (uniform).
    pub away: (f64, f64),
    /// The role-queue scenario.
    pub roles: bool,
    /// The share of its players who offer two roles.
    pub two_roles: f64,
    /// The several-queues scenario.
    pub several_queues: bool,
    /// Shares of its players queuing in 1, 2, … worlds.
    pub queue_mix: Vec<f64>,
    /// Its worlds' popularity (empty: alike).
    pub world_weights: Vec<f64>,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            rate: 50.0,
            minutes: 10.0,
            mean: 1500.0,
            sd: 300.0,
            seed: 7,
            parties: PartySizes::solo(),
            party_sd: 100.0,
            trace: None,
            rules: Vec::new(),
            world: None,
            team_size: None,
            ticket_ttl: 900,
            instant_match: true,
            oracle_periods: vec![1.0, 2.0, 5.0, 10.0, 20.0, 30.0, 60.0],
            speed: 20.0,
            drain: 120.0,
            in_flight: 32,
            redis_server: "redis-server".into(),
            out: None,
            fail_on_miss: false,
            help: false,
            accept_probabilities: Vec::new(),
            refusal: Refusal::Decline,
            answer_delay: (1.0, 5.0),
            regions: false,
            geography: None,
            write_trace: None,
            ratings: false,
            players: 1000,
            games: 30.0,
            initial_rating: 1500.0,
            noise: 150.0,
            game_seconds: None,
            rest: (1.0, 5.0),
            backfill: false,
            leave_probability: 0.1,
            renew: 5.0,
            attributes: false,
            attr_spec: AttrSpec {
                modes: None,
                levels: None,
            },
            blocks: false,
            avoid: crate::blocks::LIST_SIZES,
            away: crate::blocks::AWAY,
            roles: false,
            two_roles: crate::roles::Mix::issue().two_roles,
            several_queues: false,
            queue_mix: crate::queues::MIX.to_vec(),
            world_weights: Vec::new(),
        }
    }
}

fn number<T: std::str::FromStr>(flag: &str, v: &str) -> Result<T, String> {
    v.parse()
        .map_err(|_| format!("{flag}: expected a number, got {v:?}"))
}

fn at_least_zero(flag: &str, v: &str) -> Result<f64, String> {
    let x: f64 = number(flag, v)?;
    if x.is_finite() && x >= 0.0 {
        Ok(x)
    } else {
        Err(format!("{flag}: must be >= 0, got {v}"))
    }
}

/// `LO,HI` (or one value for both) with 0 <= LO <= HI.
fn range(flag: &str, v: &str) -> Result<(f64, f64), String> {
    let (lo, hi) = v.split_once(',').unwrap_or((v, v));
    let (lo, hi) = (
        at_least_zero(flag, lo.trim())?,
        at_least_zero(flag, hi.trim())?,
    );
    if lo > hi {
        return Err(format!("{flag}: LO,HI with LO <= HI, got {v}"));
    }
    Ok((lo, hi))
}

fn positive(flag: &str, v: &str) -> Result<f64, String> {
    let x: f64 = number(flag, v)?;
    if x.is_finite() && x > 0.0 {
        Ok(x)
    } else {
        Err(format!("{flag}: must be > 0, got {v}"))
    }
}

/// Parses the flags after the program name.
pub fn parse(args: &[String]) -> Result<Options, String> {
    let mut o = Options::default();
    let mut generator_flags = Vec::new();
    let (mut modes, mut modes_listed) = (None::<String>, None::<String>);
    let (mut players_given, mut block_flags, mut role_flags) = (false, false, false);
    let mut mix_given = false;
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        let (flag, inline) = match arg.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f, Some(v.to_owned())),
            _ => (arg.as_str(), None),
        };
        let mut value = || -> Result<String, String> {
            inline
                .clone()
                .or_else(|| it.next().cloned())
                .ok_or_else(|| format!("{flag}: expects a value"))
        };
        match flag {
            "-h" | "--help" => o.help = true,
            "--fail-on-miss" => o.fail_on_miss = true,
            "--regions" => o.regions = true,
            "--ratings" => o.ratings = true,
            "--backfill" => o.backfill = true,
            "--attributes" => o.attributes = true,
            "--blocks" => o.blocks = true,
            "--roles" => o.roles = true,
            "--several-queues" => o.several_queues = true,
            "--queue-mix" => {
                o.queue_mix = crate::queues::arrivals::parse_mix(&value()?)
                    .map_err(|e| format!("{flag}: {e}"))?;
                mix_given = true;
            }
            "--world-weights" => {
                let v = value()?;
                o.world_weights = v
                    .split(',')
                    .map(|w| positive(flag, w.trim()))
                    .collect::<Result<Vec<f64>, String>>()?;
                mix_given = true;
            }
            "--two-roles" => {
                let p = at_least_zero(flag, &value()?)?;
                if p > 1.0 {
                    return Err(format!("{flag}: a share is 0..=1, got {p}"));
                }
                o.two_roles = p;
                role_flags = true;
            }
            "--avoid" => {
                let v = value()?;
                let (lo, hi) = v.split_once(',').unwrap_or((&v, &v));
                let (lo, hi): (usize, usize) = (number(flag, lo.trim())?, number(flag, hi.trim())?);
                if lo > hi {
                    return Err(format!("{flag}: LO,HI with LO <= HI, got {v}"));
                }
                o.avoid = (lo, hi);
                block_flags = true;
            }
            "--away" => {
                o.away = range(flag, &value()?)?;
                block_flags = true;
            }
            "--modes" => {
                modes = Some(value()?);
                generator_flags.push(flag);
            }
            "--modes-listed" => {
                modes_listed = Some(value()?);
                generator_flags.push(flag);
            }
            "--levels" => {
                o.attr_spec.levels =
                    Some(LevelDist::parse(&value()?).map_err(|e| format!("{flag}: {e}"))?);
                generator_flags.push(flag);
            }
            "--players" => {
                let n: usize = number(flag, &value()?)?;
                if n < 2 {
                    return Err(format!("{flag}: must be >= 2, got {n}"));
                }
                o.players = n;
                players_given = true;
            }
            "--games" => o.games = positive(flag, &value()?)?,
            "--initial-rating" => o.initial_rating = number(flag, &value()?)?,
            "--noise" => o.noise = at_least_zero(flag, &value()?)?,
            "--game-seconds" => {
                let r = range(flag, &value()?)?;
                if r.0 <= 0.0 {
                    return Err(format!("{flag}: a game lasts > 0 s"));
                }
                o.game_seconds = Some(r);
            }
            "--rest" => o.rest = range(flag, &value()?)?,
            "--leave-probability" => {
                let p = at_least_zero(flag, &value()?)?;
                if p > 1.0 {
                    return Err(format!("{flag}: a probability is 0..=1, got {p}"));
                }
                o.leave_probability = p;
            }
            "--renew" => o.renew = positive(flag, &value()?)?,
            "--write-trace" => o.write_trace = Some(PathBuf::from(value()?)),
            "--geography" => o.geography = Some(PathBuf::from(value()?)),
            "--rate" => {
                o.rate = positive(flag, &value()?)?;
                generator_flags.push(flag);
            }
            "--minutes" => {
                o.minutes = positive(flag, &value()?)?;
                generator_flags.push(flag);
            }
            "--mean" => {
                o.mean = number(flag, &value()?)?;
                generator_flags.push(flag);
            }
            "--sd" => {
                o.sd = positive(flag, &value()?)?;
                generator_flags.push(flag);
            }
            "--seed" => {
                o.seed = number(flag, &value()?)?;
                generator_flags.push(flag);
            }
            "--party-sizes" | "--parties" => {
                o.parties = PartySizes::parse(&value()?).map_err(|e| format!("{flag}: {e}"))?;
                generator_flags.push(flag);
            }
            "--party-sd" => {
                o.party_sd = at_least_zero(flag, &value()?)?;
                generator_flags.push(flag);
            }
            "--accept-probability" => {
                let v = value()?;
                let mut ps = Vec::new();
                for p in v.split(',') {
                    let x = at_least_zero(flag, p.trim())?;
                    if x > 1.0 {
                        return Err(format!("{flag}: a probability is 0..=1, got {x}"));
                    }
                    if !ps.contains(&x) {
                        ps.push(x);
                    }
                }
                ps.sort_by(|a: &f64, b| b.total_cmp(a));
                o.accept_probabilities = ps;
            }
            "--refusal" => {
                o.refusal = match value()?.to_ascii_lowercase().as_str() {
                    "decline" => Refusal::Decline,
                    "silent" => Refusal::Silent,
                    v => return Err(format!("{flag}: expected decline or silent, got {v:?}")),
                }
            }
            "--answer-delay" => {
                let v = value()?;
                let (lo, hi) = v.split_once(',').unwrap_or((&v, &v));
                let (lo, hi) = (
                    at_least_zero(flag, lo.trim())?,
                    at_least_zero(flag, hi.trim())?,
                );
                if lo > hi {
                    return Err(format!("{flag}: LO,HI with LO <= HI, got {v}"));
                }
                o.answer_delay = (lo, hi);
            }
            "--trace" => o.trace = Some(PathBuf::from(value()?)),
            "--rules" => o.rules.push(PathBuf::from(value()?)),
            "--world" => o.world = Some(value()?),
            "--team-size" => {
                let n: u32 = number(flag, &value()?)?;
                if !(2..=100).contains(&n) {
                    return Err(format!("{flag}: must be 2..=100, got {n}"));
                }
                o.team_size = Some(n);
            }
            "--ticket-ttl" => {
                let n: u64 = number(flag, &value()?)?;
                if n == 0 {
                    return Err(format!("{flag}: must be > 0"));
                }
                o.ticket_ttl = n;
            }
            "--instant-match" => {
                o.instant_match = match value()?.to_ascii_lowercase().as_str() {
                    "1" | "true" | "yes" | "on" => true,
                    "0" | "false" | "no" | "off" => false,
                    v => return Err(format!("{flag}: expected true or false, got {v:?}")),
                }
            }
            "--oracle-periods" => {
                let v = value()?;
                let mut periods = v
                    .split(',')
                    .map(|p| positive(flag, p.trim()))
                    .collect::<Result<Vec<f64>, String>>()?;
                periods.sort_by(f64::total_cmp);
                periods.dedup();
                o.oracle_periods = periods;
            }
            "--speed" => {
                let x = positive(flag, &value()?)?;
                if x < 1.0 {
                    return Err(format!("{flag}: must be >= 1, got {x}"));
                }
                o.speed = x;
            }
            "--drain" => {
                let x: f64 = number(flag, &value()?)?;
                if !(x.is_finite() && x >= 0.0) {
                    return Err(format!("{flag}: must be >= 0, got {x}"));
                }
                o.drain = x;
            }
            "--in-flight" => {
                let n: usize = number(flag, &value()?)?;
                if n == 0 {
                    return Err(format!("{flag}: must be > 0"));
                }
                o.in_flight = n;
            }
            "--redis-server" => o.redis_server = value()?,
            "--out" => o.out = Some(PathBuf::from(value()?)),
            other => return Err(format!("unknown flag {other:?}; see --help")),
        }
    }
    if [
        o.regions,
        o.ratings,
        o.backfill,
        o.attributes,
        o.blocks,
        o.roles,
        o.several_queues,
    ]
    .iter()
    .filter(|x| **x)
    .count()
        > 1
    {
        return Err(
            "--regions, --ratings, --backfill, --attributes, --blocks, --roles and --several-queues are separate scenarios: give one"
                .into(),
        );
    }
    // A --trace brings its own attributes (attr:<name> columns).
    let drawn = o.attributes && o.trace.is_none();
    if modes.is_some() || modes_listed.is_some() || drawn {
        let modes = modes.as_deref().unwrap_or(DEFAULT_MODES);
        o.attr_spec.modes = Some(
            match modes_listed.as_deref() {
                Some(listed) => ModeSpec::parse(modes, listed),
                None => ModeSpec::parse_default_listing(modes),
            }
            .map_err(|e| format!("--modes: {e}"))?,
        );
    }
    if drawn && o.attr_spec.levels.is_none() {
        o.attr_spec.levels = LevelDist::parse(DEFAULT_LEVELS).ok();
    }
    if o.attributes {
        if !generator_flags.contains(&"--rate") {
            o.rate = ATTRIBUTES_RATE;
        }
        if !generator_flags.contains(&"--minutes") {
            o.minutes = ATTRIBUTES_MINUTES;
        }
    }
    if (o.ratings || o.backfill || o.blocks || o.roles || o.several_queues)
        && !o.attr_spec.is_empty()
    {
        return Err("--modes, --modes-listed and --levels shape the arrival trace of the main run or --attributes".into());
    }
    if (o.regions || o.backfill) && !generator_flags.contains(&"--rate") {
        // The regions (issue 21) and backfill (issue 23) scenarios' rate.
        o.rate = 20.0;
    }
    if o.backfill && !generator_flags.contains(&"--minutes") {
        o.minutes = 5.0;
    }
    if o.geography.is_some() && !o.regions {
        return Err("--geography shapes the regions scenario: add --regions".into());
    }
    if o.geography.is_some() && o.trace.is_some() {
        return Err("--geography draws latencies; a --trace brings its own".into());
    }
    if o.ratings && o.trace.is_some() {
        return Err("--ratings draws its own population; --trace does not apply".into());
    }
    if block_flags && !o.blocks {
        return Err("--avoid and --away shape the block-list scenario: add --blocks".into());
    }
    if o.blocks {
        if o.trace.is_some() {
            return Err("--blocks draws its own population; --trace does not apply".into());
        }
        if !players_given {
            o.players = crate::blocks::PLAYERS;
        }
        if o.avoid.1 >= o.players {
            return Err(format!(
                "--avoid: a player avoids at most the {} others, got {}",
                o.players - 1,
                o.avoid.1
            ));
        }
        if !generator_flags.contains(&"--rate") {
            o.rate = crate::blocks::RATE;
        }
        if !generator_flags.contains(&"--minutes") {
            o.minutes = crate::blocks::MINUTES;
        }
    }
    if role_flags && !o.roles {
        return Err("--two-roles shapes the role-queue scenario: add --roles".into());
    }
    if o.roles {
        if o.trace.is_some() {
            return Err("--roles draws its own arrivals; --trace does not apply".into());
        }
        if players_given {
            return Err("--roles: every arrival is a new player; --players does not apply".into());
        }
        if !generator_flags.contains(&"--rate") {
            o.rate = crate::roles::RATE;
        }
        if !generator_flags.contains(&"--minutes") {
            o.minutes = crate::roles::MINUTES;
        }
    }
    if mix_given && !o.several_queues {
        return Err("--queue-mix and --world-weights shape the several-queues scenario: add --several-queues".into());
    }
    if o.several_queues {
        if o.trace.is_some() || players_given {
            return Err("--several-queues: every arrival is a new player; --trace and --players do not apply".into());
        }
        if !generator_flags.contains(&"--rate") {
            o.rate = crate::queues::RATE;
        }
        if !generator_flags.contains(&"--minutes") {
            o.minutes = crate::queues::MINUTES;
        }
    }
    if o.trace.is_some() && !generator_flags.is_empty() {
        return Err(format!(
            "--trace replays a file; {} only shape a generated trace",
            generator_flags.join(", ")
        ));
    }
    Ok(o)
}

#[cfg(test)]
mod tests;
