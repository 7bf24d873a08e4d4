//! Command-line flags (see `--help` and docs/simulator.md).

use std::path::PathBuf;

use crate::engine::Refusal;
use crate::scenario::{AttrSpec, LevelDist, ModeSpec, PartySizes};

/// `--modes` unless given: the issue's four modes by popularity.
pub const DEFAULT_MODES: &str = "ctf:50,koth:25,dm:15,tdm:10";
/// `--levels` unless given (the attributes scenario).
pub const DEFAULT_LEVELS: &str = "uniform:1,100";
/// The attributes scenario's arrival rate unless `--rate`.
pub const ATTRIBUTES_RATE: f64 = 2.0;
/// The attributes scenario's trace length unless `--minutes`.
pub const ATTRIBUTES_MINUTES: f64 = 10.0;

pub const USAGE: &str = "\
mm-sim: replay an arrival trace through the real matchmaking scripts on a
time-compressed redis-server and compare rule sets with FIFO and an oracle.

USAGE: scripts/sim.sh [FLAGS]        (or cargo run --release -p sim -- [FLAGS])

Trace (generated, the default, or read from a file):
  --rate R              arrivals per simulated second            [50]
  --minutes M           length of the trace                      [10]
  --mean X --sd Y       ratings ~ N(X, Y)                        [1500, 300]
  --seed N              random seed                              [7]
  --party-sizes LIST    how many players arrive together, e.g.
                        1:0.6,2:0.25,3:0.15 (size:probability; or
                        0.6,0.25,0.15 for sizes 1, 2, 3); an arrival is
                        a solo join or a whole party    [1:1, solo only]
  --party-sd D          rating sd within a party (each rating stays
                        N(mean, sd); D = sd: independent)        [100]
  --trace FILE.csv      read the trace instead: header time,player,rating
                        or time,player,rating,party (seconds since the
                        start, player id, rating, party label: rows with
                        one label arrive as one party, the first leads),
                        then optionally home, latency:<region> and
                        attr:<name> columns

Attributes (player attributes and match rules, docs/simulator.md#attributes):
  --attributes          the attributes scenario: every player lists game
                        modes (--modes, --modes-listed) and has a level
                        (--levels); each rule set's world runs as written,
                        with every player listing only their first mode
                        (one queue per mode; worlds with an intersection
                        rule) and without its rules; rate 2/s and
                        tools/sim/rules/attributes/ unless given; no
                        FIFO baseline, no oracle
  --modes LIST          give players a stringList attribute `modes`:
                        name:popularity pairs, a player's first choice
                        drawn by popularity, each further one likewise
                        among the rest      [ctf:50,koth:25,dm:15,tdm:10]
  --modes-listed LIST   how many modes a player lists, count:probability
                                               [1:0.4,2:0.3,3:0.3]
  --levels DIST         give players a number attribute `level`:
                        uniform:LO,HI (whole numbers) or normal:MEAN,SD
                        (rounded)                        [uniform:1,100]
  (a --trace brings its own: attr:<name> columns, a|b|c for lists)

Regions (players in geographic clusters, docs/simulator.md#regions):
  --regions             the regions scenario: each player gets a home
                        region (na-east 40 %, na-west 25 %, eu 20 %,
                        asia 10 %, oceania 5 %) and a latency to every
                        region (or the trace's latency:<region> columns);
                        each rule set's world (with a regions rule) runs
                        as written, as one world per region (each player
                        in its lowest-latency region's) and without the
                        rule; rate 20/s and tools/sim/rules/regions/
                        unless given; no FIFO baseline, no oracle
  --geography FILE.json draw the latencies from this model instead
                        (regions, shares, backboneMs, accessMs,
                        jitterMs; tools/sim/geography/)
  --write-trace FILE    also write the trace as CSV (with home and
                        latency:<region> columns when it has latencies)

Ratings (matches played out, docs/simulator.md#ratings):
  --ratings             a population plays match after match: results
                        from hidden true skills (N(--mean, --sd)) go
                        through the result route and move ratings; each
                        rule set's world runs with its rating updates,
                        without (system none) and with ratings known
                        exactly; tools/sim/rules/ratings/ unless given
  --players N           the population                          [1000]
  --games G             stop at G games per player on average     [30]
  --initial-rating X    everyone's rating before any result     [1500]
  --noise B             performance noise per player and game (sd) [150]
  --game-seconds LO,HI  how long a game lasts (uniform)        [20,40]
  --rest LO,HI          rest between a game and the next join    [1,5]

Backfill (running matches ask for players, docs/simulator.md#backfill):
  --backfill            every match is assigned and played; players
                        leave early, the game server requests backfill
                        and renews it; the same trace without backfill
                        (short-handed matches) beside it; rate 20/s,
                        5 minutes and tools/sim/rules/backfill/ unless
                        given
  --leave-probability P each player leaves its match early with P  [0.1]
  --game-seconds LO,HI  (backfill: how long a game lasts)    [[120,240]]
  --renew S             keep-alive renewal every S simulated s      [5]

Matchers:
  --rules PATH          a rule set file (MM_RULES JSON) or a directory of
                        *.json files; repeatable     [tools/sim/rules/]
  --world NAME          the world of each rule set to drive  [its first]
  --team-size N         players per match of every driven world, the
                        FIFO baseline and the oracle
                        [the first rule set's, else 10]
  --ticket-ttl S        ticket lifetime of worlds that set none  [900]
  --instant-match BOOL  MM_INSTANT_MATCH for every rule set      [true]
  --oracle-periods LIST oracle batch periods in seconds [1,2,5,10,20,30,60]

Ready checks (rule sets whose world has a readyCheck):
  --accept-probability LIST  each participant accepts with this probability;
                        one run per value (e.g. 1,0.9,0.7), plus one run
                        of the rule set without its ready check      [1]
  --refusal MODE        who does not accept: decline (at once) or silent
                        (the proposal times out)              [decline]
  --answer-delay LO,HI  each answer comes LO..HI simulated seconds after
                        the proposal (uniform)                     [1,5]

Run:
  --speed X             how much faster than real time redis-server's
                        clock runs (libfaketime)                 [20]
  --drain S             keep ticking S simulated seconds after the last
                        arrival; who is left then is unmatched   [120]
  --in-flight N         joins in flight per rule set             [32]
  --redis-server PATH   the redis-server binary           [redis-server]
  --out DIR             where the report goes [sim-results/<UTC time>]
  --fail-on-miss        exit with status 3 if an acceptance check misses
  -h, --help            this text
";

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
    if [o.regions, o.ratings, o.backfill, o.attributes]
        .iter()
        .filter(|x| **x)
        .count()
        > 1
    {
        return Err(
            "--regions, --ratings, --backfill and --attributes are separate scenarios: give one"
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
    if (o.ratings || o.backfill) && !o.attr_spec.is_empty() {
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
    if o.trace.is_some() && !generator_flags.is_empty() {
        return Err(format!(
            "--trace replays a file; {} only shape a generated trace",
            generator_flags.join(", ")
        ));
    }
    Ok(o)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn defaults_are_the_acceptance_scenario() {
        let o = parse(&[]).unwrap();
        assert_eq!(
            (o.rate, o.minutes, o.mean, o.sd, o.seed),
            (50.0, 10.0, 1500.0, 300.0, 7)
        );
        assert_eq!(o.team_size, None);
        assert!(o.rules.is_empty() && o.trace.is_none());
    }

    #[test]
    fn flags_are_read() {
        let o = parse(&args(
            "--rate 20 --minutes=0.5 --rules a.json --rules dir --world ranked --team-size 5 \
             --oracle-periods 10,1,5,1 --speed 25 --drain 0 --instant-match off --fail-on-miss",
        ))
        .unwrap();
        assert_eq!(o.rate, 20.0);
        assert_eq!(o.minutes, 0.5);
        assert_eq!(o.rules, [PathBuf::from("a.json"), PathBuf::from("dir")]);
        assert_eq!(o.world.as_deref(), Some("ranked"));
        assert_eq!(o.team_size, Some(5));
        assert_eq!(o.oracle_periods, [1.0, 5.0, 10.0]);
        assert_eq!(
            (o.speed, o.drain, o.instant_match, o.fail_on_miss),
            (25.0, 0.0, false, true)
        );
    }

    #[test]
    fn bad_flags_say_what_is_wrong() {
        for (line, says) in [
            ("--rate", "--rate: expects a value"),
            ("--rate x", "expected a number"),
            ("--rate -1", "must be > 0"),
            ("--team-size 1", "2..=100"),
            ("--speed 0.5", ">= 1"),
            ("--bogus", "unknown flag"),
            ("--trace t.csv --rate 5", "--trace replays a file; --rate"),
            ("--party-sizes 1:0.6,2:0.3", "--party-sizes: party sizes"),
            ("--party-sd -1", "must be >= 0"),
            (
                "--trace t.csv --party-sizes 0.5,0.5",
                "--trace replays a file; --party-sizes",
            ),
            ("--accept-probability 0.9,1.1", "0..=1"),
            ("--refusal maybe", "decline or silent"),
            ("--answer-delay 5,1", "LO <= HI"),
            ("--instant-match maybe", "true or false"),
            ("--ratings --regions", "separate scenarios"),
            ("--attributes --backfill", "separate scenarios"),
            ("--modes ctf", "name:popularity"),
            ("--modes ctf:1,ctf:2", "listed twice"),
            ("--modes-listed 1:0.5,5:0.5", "1 to 4 modes"),
            ("--modes-listed 1:0.5,2:0.4", "sum to"),
            ("--levels uniform:9,1", "LO <= HI"),
            ("--levels poisson:3,4", "neither uniform nor normal"),
            (
                "--trace t.csv --levels uniform:1,5",
                "--trace replays a file; --levels",
            ),
            ("--ratings --modes ctf:1", "shape the arrival trace"),
            ("--backfill --levels uniform:1,2", "shape the arrival trace"),
            ("--geography g.json", "add --regions"),
            (
                "--regions --trace t.csv --geography g.json",
                "brings its own",
            ),
            ("--players 1", ">= 2"),
            ("--game-seconds 5,2", "LO <= HI"),
            ("--game-seconds 0", "> 0 s"),
            ("--leave-probability 2", "0..=1"),
            ("--ratings --trace t.csv", "--trace does not apply"),
        ] {
            let err = parse(&args(line)).unwrap_err();
            assert!(err.contains(says), "{line}: {err}");
        }
    }

    #[test]
    fn party_and_ready_check_flags_are_read() {
        let o = parse(&args(
            "--party-sizes 1:0.6,2:0.25,3:0.15 --party-sd 300 --accept-probability 0.9,1,0.7,0.9 \
             --refusal silent --answer-delay 0.5,3",
        ))
        .unwrap();
        assert_eq!(o.parties, PartySizes::parse("0.6,0.25,0.15").unwrap());
        assert_eq!(o.party_sd, 300.0);
        assert_eq!(o.accept_probabilities, [1.0, 0.9, 0.7]);
        assert_eq!(o.refusal, Refusal::Silent);
        assert_eq!(o.answer_delay, (0.5, 3.0));
        let o = parse(&args("--parties 0.5,0.5 --answer-delay 2")).unwrap();
        assert_eq!(o.parties.weights(), [(1, 0.5), (2, 0.5)]);
        assert_eq!(o.answer_delay, (2.0, 2.0));
        let d = parse(&[]).unwrap();
        assert!(!d.regions && d.write_trace.is_none());
        assert!(d.parties.is_solo() && d.accept_probabilities.is_empty());
        assert_eq!((d.refusal, d.answer_delay), (Refusal::Decline, (1.0, 5.0)));
    }

    #[test]
    fn ratings_and_backfill_flags_are_read() {
        let o = parse(&args(
            "--ratings --players 200 --games 12 --initial-rating 1400 --noise 100 \
             --game-seconds 10,20 --rest 0.5,2",
        ))
        .unwrap();
        assert!(o.ratings && !o.backfill);
        assert_eq!(
            (o.players, o.games, o.initial_rating, o.noise),
            (200, 12.0, 1400.0, 100.0)
        );
        assert_eq!((o.game_seconds, o.rest), (Some((10.0, 20.0)), (0.5, 2.0)));
        assert_eq!(o.rate, 50.0);
        let o = parse(&args("--backfill --leave-probability 0.2 --renew 3")).unwrap();
        assert!(o.backfill);
        assert_eq!((o.rate, o.minutes), (20.0, 5.0));
        assert_eq!((o.leave_probability, o.renew), (0.2, 3.0));
        assert_eq!(o.game_seconds, None);
        let o = parse(&args("--backfill --rate 10 --minutes 2")).unwrap();
        assert_eq!((o.rate, o.minutes), (10.0, 2.0));
    }

    #[test]
    fn the_attributes_scenario_draws_modes_and_levels_unless_a_trace_is_given() {
        let o = parse(&args("--attributes")).unwrap();
        assert!(o.attributes);
        assert_eq!((o.rate, o.minutes), (ATTRIBUTES_RATE, ATTRIBUTES_MINUTES));
        let spec = &o.attr_spec;
        assert_eq!(spec.modes, Some(ModeSpec::issue_default()));
        assert_eq!(spec.levels, Some(LevelDist::Uniform(1, 100)));
        let o = parse(&args(
            "--attributes --rate 9 --modes a:3,b:1 --modes-listed 1:0.5,2:0.5 --levels normal:50,10",
        ))
        .unwrap();
        assert_eq!(o.rate, 9.0);
        let modes = o.attr_spec.modes.unwrap();
        assert_eq!(modes.popularity, [("a".into(), 0.75), ("b".into(), 0.25)]);
        assert_eq!(modes.listed, [(1, 0.5), (2, 0.5)]);
        assert_eq!(o.attr_spec.levels, Some(LevelDist::Normal(50.0, 10.0)));
        // A trace brings its own.
        let o = parse(&args("--attributes --trace t.csv")).unwrap();
        assert!(o.attr_spec.is_empty());
        // Fewer modes than the default listing: it folds.
        let o = parse(&args("--modes a:1,b:1")).unwrap();
        assert_eq!(o.attr_spec.modes.unwrap().listed, [(1, 0.4), (2, 0.6)]);
        // Without the scenario, only what is asked for.
        let o = parse(&args("--modes-listed 1:1")).unwrap();
        assert!(!o.attributes && o.attr_spec.levels.is_none());
        assert_eq!(o.attr_spec.modes.unwrap().listed, [(1, 1.0)]);
        assert!(parse(&[]).unwrap().attr_spec.is_empty());
    }

    #[test]
    fn the_regions_scenario_runs_at_20_per_second_unless_told() {
        let o = parse(&args("--regions --write-trace t.csv")).unwrap();
        assert!(o.regions);
        assert_eq!(o.rate, 20.0);
        assert_eq!(o.write_trace, Some(PathBuf::from("t.csv")));
        assert_eq!(o.geography, None);
        let o = parse(&args("--regions --geography g.json")).unwrap();
        assert_eq!(o.geography, Some(PathBuf::from("g.json")));
        let o = parse(&args("--rate 5 --regions")).unwrap();
        assert_eq!(o.rate, 5.0);
        let o = parse(&args("--regions --trace t.csv")).unwrap();
        assert!(o.regions && o.trace.is_some());
    }
}
