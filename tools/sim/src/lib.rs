//! The matchmaking simulator: replays an arrival trace through the real core
//! (`shared`: the Lua scripts, the store, the matcher tick) on private
//! `redis-server`s whose clocks libfaketime runs `speed` times faster, so a
//! 10-minute trace takes seconds. Each rule set runs on its own server on
//! the same trace, next to a FIFO baseline of the same team size; an
//! offline oracle batches the same trace for several periods to trace the
//! quality/wait frontier. See docs/simulator.md.

pub mod cli;
pub mod clock;
pub mod engine;
pub mod frontier;
pub mod oracle;
pub mod outcome;
pub mod plot;
pub mod report;
pub mod rules;
pub mod scenario;
pub mod server;
pub mod stats;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use redis::aio::MultiplexedConnection;
use shared::MatchStore;

use crate::clock::SimClock;
use crate::engine::{Answering, Drive, Lane};
use crate::outcome::{Kind, Run, Shape};
use crate::rules::{Environment, RuleSet};
use crate::scenario::{Generator, Scenario};
use crate::server::FakeRedis;

/// Everything one simulation needs.
#[derive(Debug, Clone)]
pub struct Config {
    pub scenario: Scenario,
    /// Rule sets to drive (FIFO baselines are added).
    pub rule_sets: Vec<RuleSet>,
    /// Players per match. Every driven world must have it; the FIFO
    /// baseline and the oracle use it (as one team) when no rule set is
    /// driven.
    pub team_size: u32,
    pub ticket_ttl_secs: u64,
    pub instant_match: bool,
    /// Simulated seconds of ticking after the last arrival.
    pub drain: f64,
    pub oracle_periods: Vec<f64>,
    pub speed: f64,
    pub in_flight: usize,
    pub redis_server: String,
    /// Where the redis-servers' logs go.
    pub work_dir: PathBuf,
    /// A rule set with a ready check runs once per probability (empty: 1)
    /// and once without its ready check.
    pub accept_probabilities: Vec<f64>,
    /// How proposals are answered (its probability is replaced by each of
    /// `accept_probabilities`).
    pub answering: Answering,
}

/// What a simulation produced.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// Rule sets (in order, a ready-check rule set once per acceptance
    /// probability and once without it), the FIFO baselines, then the
    /// oracle by period.
    pub runs: Vec<Run>,
    /// The measured speed furthest from the requested one (of all servers).
    pub measured_speed: f64,
    /// How far the clock model was from Redis's TIME at the end (simulated s).
    pub clock_error: Option<f64>,
    /// (label, file, world description) per driven rule set, FIFO included.
    pub rule_sets: Vec<(String, String, String)>,
    /// The shape of the oracle's matches.
    pub oracle_shape: Shape,
}

/// Tolerance of the start-up speed check.
const SPEED_TOLERANCE: f64 = 0.05;

/// One lane's private, time-compressed redis-server and a connection to
/// read its clock.
struct Server {
    redis: FakeRedis,
    control: MultiplexedConnection,
    measured_speed: f64,
}

impl Server {
    /// Starts the server and measures its clock's speed.
    async fn start(config: &Config, name: &str) -> Result<Self, String> {
        let log = config.work_dir.join(format!("redis-{name}.log"));
        let redis = FakeRedis::start(&config.redis_server, config.speed, &log).await?;
        let mut control = redis::Client::open(redis.url())
            .map_err(|e| e.to_string())?
            .get_multiplexed_async_connection()
            .await
            .map_err(|e| format!("cannot connect to redis-server: {e}"))?;
        let (measured_speed, _) = clock::verify_speed(
            &mut control,
            config.speed,
            Duration::from_millis(400),
            SPEED_TOLERANCE,
        )
        .await?;
        Ok(Self {
            redis,
            control,
            measured_speed,
        })
    }
}

/// One lane to run.
struct Spec {
    rs: RuleSet,
    namespace: String,
    fifo: bool,
    answering: Option<Answering>,
    shape: Shape,
}

/// The lanes of `config`: each rule set (a ready-check rule set once per
/// acceptance probability and once without its ready check), validated by
/// the core and checked against the trace, then one FIFO baseline per match
/// shape. Returns them and the oracle's shape.
fn lanes_of(config: &Config) -> Result<(Vec<Spec>, Shape), String> {
    let probe = Environment {
        redis_url: "redis://127.0.0.1:1".into(),
        ticket_ttl_secs: config.ticket_ttl_secs,
        instant_match: config.instant_match,
    };
    let mut variants: Vec<(RuleSet, Option<Answering>)> = Vec::new();
    for rs in &config.rule_sets {
        if rs.has_ready_check() {
            let probabilities = if config.accept_probabilities.is_empty() {
                vec![1.0]
            } else {
                config.accept_probabilities.clone()
            };
            for p in probabilities {
                let mut variant = rs.clone();
                variant.label = format!("{} accept {}", rs.label, oracle::trim_float(p));
                variants.push((
                    variant,
                    Some(Answering {
                        accept_probability: p,
                        ..config.answering
                    }),
                ));
            }
            variants.push((
                rs.without_ready_check(&format!("{} without ready check", rs.label)),
                None,
            ));
        } else {
            variants.push((rs.clone(), None));
        }
    }
    if !config.accept_probabilities.is_empty()
        && !config.rule_sets.is_empty()
        && variants.iter().all(|(_, a)| a.is_none())
    {
        return Err(
            "--accept-probability applies to rule sets whose world has a readyCheck, and none has one \
             (try --rules tools/sim/rules/ready)"
                .into(),
        );
    }
    let largest = config.scenario.largest_party();
    let mut specs = Vec::new();
    let mut shapes: Vec<Shape> = Vec::new();
    for (i, (rs, answering)) in variants.into_iter().enumerate() {
        let (_, world) = rs.settings(&probe, "probe")?;
        let shape = rules::shape_of(&world);
        if shape.seats() != config.team_size {
            return Err(format!(
                "rule set {} world {} has {} players per match, but the FIFO baseline and the oracle use {}: \
                 simulate rule sets of one match size per run (--team-size)",
                rs.file,
                world.name,
                shape.seats(),
                config.team_size
            ));
        }
        if largest > 1 && world.max_party_size < largest {
            return Err(format!(
                "rule set {} world {} takes parties of at most {} (maxPartySize; below 2: none), but the trace has parties of {largest}",
                rs.file, world.name, world.max_party_size
            ));
        }
        if !shapes.contains(&shape) {
            shapes.push(shape);
        }
        specs.push(Spec {
            rs,
            namespace: format!("sim{i}"),
            fifo: false,
            answering,
            shape,
        });
    }
    if shapes.is_empty() {
        shapes.push(Shape::solo_team(config.team_size));
    }
    for (i, shape) in shapes.iter().enumerate() {
        if largest > shape.team_size {
            return Err(format!(
                "the trace has parties of {largest}, larger than a team of {} (a party plays in one team)",
                shape.team_size
            ));
        }
        let label = if shapes.len() == 1 {
            "FIFO".to_owned()
        } else {
            format!("FIFO {shape}")
        };
        specs.push(Spec {
            rs: RuleSet::fifo(&label, *shape, config.ticket_ttl_secs),
            namespace: if i == 0 {
                "simfifo".into()
            } else {
                format!("simfifo{i}")
            },
            fifo: true,
            answering: None,
            shape: *shape,
        });
    }
    // The most teams is the most constrained packing: a match it forms is
    // also valid with fewer teams of the same size.
    let oracle_shape = shapes
        .iter()
        .copied()
        .max_by_key(|s| s.teams)
        .unwrap_or(Shape::solo_team(config.team_size));
    Ok((specs, oracle_shape))
}

/// Runs the rule sets and FIFO through time-compressed redis-servers (one
/// per lane, so that they use every core and never queue behind each
/// other) and the oracle offline, all on `config.scenario`.
pub async fn simulate(config: &Config) -> Result<Outcome, String> {
    std::fs::create_dir_all(&config.work_dir)
        .map_err(|e| format!("cannot create {}: {e}", config.work_dir.display()))?;
    let (specs, oracle_shape) = lanes_of(config)?;
    let servers = futures_util::future::join_all(
        specs
            .iter()
            .map(|spec| Server::start(config, &spec.namespace)),
    )
    .await
    .into_iter()
    .collect::<Result<Vec<Server>, String>>()?;

    let mut lanes = Vec::new();
    let mut controls = Vec::new();
    let mut redis_servers = Vec::new();
    let mut described = Vec::new();
    let mut speeds = Vec::new();
    for (spec, server) in specs.into_iter().zip(servers) {
        let Spec {
            rs,
            namespace,
            fifo,
            answering,
            shape,
        } = spec;
        let env = Environment {
            redis_url: server.redis.url(),
            ticket_ttl_secs: config.ticket_ttl_secs,
            instant_match: config.instant_match,
        };
        let (settings, world) = rs.settings(&env, &namespace)?;
        let store = MatchStore::new(settings.clone()).map_err(|e| e.to_string())?;
        let matcher = MatchStore::new(settings).map_err(|e| e.to_string())?;
        engine::warm_up(&store).await?;
        engine::warm_up(&matcher).await?;
        let mut description = rules::describe(&world);
        if let Some(a) = &answering {
            description.push_str(&format!(
                "; simulated players accept with probability {}, else {}, {}–{} s after the proposal",
                oracle::trim_float(a.accept_probability),
                a.refusal.describe(),
                oracle::trim_float(a.delay.0),
                oracle::trim_float(a.delay.1)
            ));
        }
        described.push((rs.label.clone(), rs.file.clone(), description));
        let kind = if fifo {
            Kind::Fifo
        } else {
            Kind::RuleSet {
                file: rs.file.clone(),
                relax: rules::relax_seconds(&world),
            }
        };
        let label = if fifo {
            rs.label.clone()
        } else {
            format!("{} ({})", rs.label, world.name)
        };
        speeds.push(server.measured_speed);
        lanes.push((
            label,
            kind,
            shape,
            store,
            matcher,
            world,
            rs.notes.clone(),
            answering,
        ));
        controls.push(server.control);
        redis_servers.push(server.redis);
    }

    // One real instant is simulated time 0 for every lane; each server's
    // fake clock is anchored by its own reading.
    let origin = Instant::now() + Duration::from_millis(300);
    let mut clocks = Vec::new();
    for control in controls.iter_mut() {
        let reading = clock::read(control, 7).await?;
        clocks.push(SimClock::new(origin, reading, config.speed));
    }
    let end = config.scenario.last_arrival() + config.drain;
    let drive = Drive::new(
        Arc::new(config.scenario.clone()),
        config.drain,
        config.in_flight,
    );
    let handles: Vec<_> = lanes
        .into_iter()
        .zip(clocks.iter())
        .map(
            |((label, kind, shape, store, matcher, world, notes, answering), clock)| {
                let lane = Lane {
                    label,
                    kind,
                    shape,
                    store,
                    matcher,
                    world,
                    clock: *clock,
                    notes,
                    answering,
                };
                tokio::spawn(engine::drive(lane, drive.clone()))
            },
        )
        .collect();
    let mut runs = Vec::new();
    for h in handles {
        runs.push(h.await.map_err(|e| format!("a lane failed: {e}"))?);
    }
    let mut clock_error: Option<f64> = None;
    for ((control, clock), run) in controls.iter_mut().zip(clocks.iter()).zip(runs.iter_mut()) {
        if let Some(usage) = server_usage(control).await {
            run.notes.push(usage);
        }
        if let Ok(reading) = clock::read(control, 5).await {
            let e = clock.error_of(&reading);
            if clock_error.is_none_or(|worst| e.abs() > worst.abs()) {
                clock_error = Some(e);
            }
        }
    }
    drop(redis_servers);

    for period in &config.oracle_periods {
        runs.push(oracle::run(&config.scenario, oracle_shape, *period, end));
    }
    let measured_speed = speeds
        .iter()
        .copied()
        .max_by(|a, b| {
            (a / config.speed - 1.0)
                .abs()
                .total_cmp(&(b / config.speed - 1.0).abs())
        })
        .unwrap_or(config.speed);
    Ok(Outcome {
        runs,
        measured_speed,
        clock_error,
        rule_sets: described,
        oracle_shape,
    })
}

/// How much CPU the lane's redis-server used, and on how many script calls.
async fn server_usage(control: &mut MultiplexedConnection) -> Option<String> {
    let info: String = redis::cmd("INFO")
        .arg("cpu")
        .arg("commandstats")
        .query_async(control)
        .await
        .ok()?;
    let mut cpu = 0.0;
    let mut scripts = 0u64;
    for line in info.lines() {
        if let Some((key, value)) = line.split_once(':') {
            match key {
                "used_cpu_user" | "used_cpu_sys" => cpu += value.trim().parse::<f64>().ok()?,
                "cmdstat_evalsha" | "cmdstat_eval" => {
                    scripts += value
                        .split(',')
                        .find_map(|kv| kv.strip_prefix("calls="))?
                        .parse::<u64>()
                        .ok()?;
                }
                _ => {}
            }
        }
    }
    Some(format!(
        "its redis-server used {cpu:.1} s of CPU for {scripts} script calls ({:.0} µs each on average)",
        cpu * 1e6 / scripts.max(1) as f64
    ))
}

/// UTC time as `YYYYMMDD-HHMMSS`.
pub fn utc_stamp(unix_secs: u64) -> String {
    let days = (unix_secs / 86_400) as i64;
    let rem = unix_secs % 86_400;
    // Days since 1970-01-01 to a civil date (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}{month:02}{day:02}-{:02}{:02}{:02}",
        rem / 3600,
        rem / 60 % 60,
        rem % 60
    )
}

/// The commit of the core this binary was built from, as far as the source
/// tree tells at run time: `abc1234`, with a mark when `shared/` or `lua/`
/// have uncommitted changes. `None` outside a git checkout.
fn core_version() -> Option<String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let git = |args: &[&str]| -> Option<String> {
        let out = std::process::Command::new("git")
            .arg("-C")
            .arg(&root)
            .args(args)
            .output()
            .ok()?;
        out.status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
    };
    let head = git(&["rev-parse", "--short", "HEAD"])?;
    let dirty = git(&["status", "--porcelain", "--", "shared", "lua"])?;
    Some(if dirty.is_empty() {
        head
    } else {
        format!("{head} + uncommitted changes to shared/ or lua/")
    })
}

/// The command line as it would be typed again.
fn command_line(args: &[String]) -> String {
    let mut parts = vec!["scripts/sim.sh".to_owned()];
    parts.extend(args.iter().map(|a| {
        if a.is_empty() || a.contains(char::is_whitespace) {
            format!("'{a}'")
        } else {
            a.clone()
        }
    }));
    parts.join(" ")
}

/// The whole command: parse, simulate, analyse, write the report and the
/// charts, print. Returns the process exit status.
pub async fn run_cli(args: &[String]) -> Result<i32, String> {
    let opts = cli::parse(args)?;
    if opts.help {
        print!("{}", cli::USAGE);
        return Ok(0);
    }
    let started = Instant::now();
    let scenario = match &opts.trace {
        Some(path) => Scenario::from_csv_file(path),
        None => Scenario::generate(Generator {
            rate: opts.rate,
            seconds: opts.minutes * 60.0,
            mean: opts.mean,
            sd: opts.sd,
            seed: opts.seed,
            parties: opts.parties.clone(),
            party_sd: opts.party_sd.min(opts.sd),
        }),
    }
    .map_err(|e| e.to_string())?;
    let rule_paths = if opts.rules.is_empty() {
        let dir = rules::default_dir();
        if dir.is_dir() {
            vec![dir]
        } else {
            Vec::new()
        }
    } else {
        opts.rules.clone()
    };
    let rule_sets = rules::expand(&rule_paths)?
        .iter()
        .map(|p| RuleSet::from_file(p, opts.world.as_deref()))
        .collect::<Result<Vec<_>, _>>()?;
    let team_size = match opts.team_size {
        Some(n) => n,
        None => first_match_size(&rule_sets).unwrap_or(10),
    };
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let stamp = utc_stamp(now);
    let out = opts
        .out
        .clone()
        .unwrap_or_else(|| Path::new("sim-results").join(&stamp));
    eprintln!(
        "simulating {} through {} rule set(s) + FIFO at x{} (about {:.0} s)...",
        scenario.describe(),
        rule_sets.len(),
        opts.speed,
        (scenario.last_arrival() + opts.drain) / opts.speed + 1.5
    );
    let config = Config {
        scenario,
        rule_sets,
        team_size,
        ticket_ttl_secs: opts.ticket_ttl,
        instant_match: opts.instant_match,
        drain: opts.drain,
        oracle_periods: opts.oracle_periods.clone(),
        speed: opts.speed,
        in_flight: opts.in_flight,
        redis_server: opts.redis_server.clone(),
        work_dir: out.clone(),
        accept_probabilities: opts.accept_probabilities.clone(),
        answering: Answering {
            accept_probability: 1.0,
            refusal: opts.refusal,
            delay: opts.answer_delay,
            seed: opts.seed,
        },
    };
    let outcome = simulate(&config).await?;
    let frontier = report::frontier(&outcome.runs);
    let checks = report::acceptance(&config.scenario, &outcome.runs, &frontier);
    plot::frontier_chart(&out.join("frontier.svg"), &outcome.runs)?;
    plot::decile_chart(
        &out.join("waits-by-decile.svg"),
        &config.scenario,
        &outcome.runs,
    )?;
    let mut ctx = report::Context {
        title: format!("Matchmaking simulation {stamp} UTC"),
        scenario: config.scenario.describe(),
        acceptance_note: config.scenario.differs_from_acceptance(),
        team_size,
        oracle_shape: outcome.oracle_shape,
        drain: config.drain,
        speed: config.speed,
        measured_speed: outcome.measured_speed,
        clock_error: outcome.clock_error,
        wall_seconds: 0.0,
        instant_match: config.instant_match,
        rule_sets: outcome.rule_sets.clone(),
        command: command_line(args),
        core: core_version(),
    };
    ctx.wall_seconds = started.elapsed().as_secs_f64();
    let markdown = report::render(&ctx, &config.scenario, &outcome.runs, &checks, true);
    let path = out.join("report.md");
    std::fs::write(&path, markdown).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    print!(
        "{}",
        report::render(&ctx, &config.scenario, &outcome.runs, &checks, false)
    );
    println!(
        "\nreport: {}\ncharts: {}, {}",
        path.display(),
        out.join("frontier.svg").display(),
        out.join("waits-by-decile.svg").display()
    );
    for run in outcome.runs.iter() {
        if let Some(why) = &run.lagging {
            eprintln!(
                "mm-sim: WARNING: {} did not keep up with x{}: {why}; rerun with a lower --speed",
                run.label, config.speed
            );
        }
    }
    let failed: Vec<String> = outcome
        .runs
        .iter()
        .filter(|r| r.failures > 0)
        .map(|r| format!("{} ({} failures)", r.label, r.failures))
        .collect();
    if !failed.is_empty() {
        eprintln!(
            "mm-sim: joins or ticks failed in {}: see the report's Run diagnostics",
            failed.join(", ")
        );
        return Ok(2);
    }
    let missed = checks.iter().filter(|c| !c.pass).count();
    Ok(if opts.fail_on_miss && missed > 0 {
        3
    } else {
        0
    })
}

/// Players per match of the first rule set's driven world.
fn first_match_size(rule_sets: &[RuleSet]) -> Option<u32> {
    let doc: serde_json::Value = serde_json::from_str(&rule_sets.first()?.text).ok()?;
    let world = &rule_sets.first()?.world;
    let w = doc
        .get("worlds")?
        .as_array()?
        .iter()
        .find(|w| w.get("name").and_then(|n| n.as_str()) == Some(world.as_str()))?;
    let teams = w.get("teams").map_or(Some(1), serde_json::Value::as_u64)?;
    w.get("teamSize")?
        .as_u64()
        .and_then(|n| u32::try_from(n * teams).ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utc_stamps() {
        assert_eq!(utc_stamp(0), "19700101-000000");
        assert_eq!(utc_stamp(951_782_400), "20000229-000000");
        assert_eq!(utc_stamp(1_796_070_801), "20261130-203321");
    }

    #[test]
    fn command_lines_quote_what_needs_it() {
        assert_eq!(
            command_line(&["--rules".into(), "my rules.json".into()]),
            "scripts/sim.sh --rules 'my rules.json'"
        );
    }

    #[test]
    fn the_match_size_comes_from_the_first_rule_set() {
        let rs = RuleSet::from_text(
            "r",
            "r.json",
            r#"{"worlds": [{"name": "a", "teamSize": 4}, {"name": "b", "teamSize": 6},
                {"name": "c", "teamSize": 5, "teams": 2}]}"#,
            Some("b"),
        )
        .unwrap();
        assert_eq!(first_match_size(std::slice::from_ref(&rs)), Some(6));
        let c = RuleSet {
            world: "c".into(),
            ..rs
        };
        assert_eq!(first_match_size(&[c]), Some(10));
        assert_eq!(first_match_size(&[]), None);
    }
}
