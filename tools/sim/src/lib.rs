//! The matchmaking simulator: replays an arrival trace through the real core
//! (`shared`: the Lua scripts, the store, the matcher tick) on private
//! `redis-server`s whose clocks libfaketime runs `speed` times faster, so a
//! 10-minute trace takes seconds. Each rule set runs on its own server on
//! the same trace, next to a FIFO baseline of the same team size; an
//! offline oracle batches the same trace for several periods to trace the
//! quality/wait frontier. See docs/simulator.md.

pub mod attributes;
pub mod backfill;
pub mod blocks;
pub mod cli;
pub mod clock;
mod command;
pub mod engine;
pub mod frontier;
mod lanes;
pub mod oracle;
pub mod outcome;
pub mod play;
pub mod plot;
pub mod queues;
pub mod ratings;
pub mod regional;
pub mod report;
pub mod roles;
pub mod rules;
pub mod scenario;
pub mod server;
pub mod stats;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use redis::aio::MultiplexedConnection;
use shared::MatchStore;

use crate::clock::SimClock;
pub use crate::command::{run_cli, utc_stamp};
use crate::engine::{Answering, Drive, Lane};
use crate::lanes::{lanes_of, Spec};
use crate::outcome::{Kind, Run, Shape};
use crate::rules::{Environment, RuleSet};
use crate::scenario::Scenario;
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
    /// The regions scenario (`--regions`): each rule set's world (which has
    /// a `regions` rule) is played three ways on a trace with latencies
    /// (see [`outcome::Variant`]); no FIFO baseline, no oracle.
    pub regions: bool,
    /// The attributes scenario (`--attributes`): each rule set's world
    /// (which has match rules) is played as written, with every player
    /// listing only their first choice (a world with an intersection rule)
    /// and without its rules (see [`outcome::AttrVariant`]); no FIFO
    /// baseline, no oracle.
    pub attributes: bool,
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
pub(crate) struct Server {
    pub(crate) redis: FakeRedis,
    pub(crate) control: MultiplexedConnection,
    pub(crate) measured_speed: f64,
}

impl Server {
    /// Starts the server and measures its clock's speed.
    async fn start(config: &Config, name: &str) -> Result<Self, String> {
        Self::start_at(&config.redis_server, config.speed, &config.work_dir, name).await
    }

    /// Starts `redis_server` at `speed`, logging to `<work_dir>/redis-<name>.log`,
    /// and measures its clock's speed.
    pub(crate) async fn start_at(
        redis_server: &str,
        speed: f64,
        work_dir: &std::path::Path,
        name: &str,
    ) -> Result<Self, String> {
        let log = work_dir.join(format!("redis-{name}.log"));
        let redis = FakeRedis::start(redis_server, speed, &log).await?;
        let mut control = redis::Client::open(redis.url())
            .map_err(|e| e.to_string())?
            .get_multiplexed_async_connection()
            .await
            .map_err(|e| format!("cannot connect to redis-server: {e}"))?;
        let (measured_speed, _) = clock::verify_speed(
            &mut control,
            speed,
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
            variant,
            route,
            attr,
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
        let kind = if let Some((variant, rules)) = attr.clone() {
            Kind::Attributes {
                file: rs.file.clone(),
                variant,
                rules,
            }
        } else if let Some((variant, cap)) = variant {
            Kind::Regional {
                file: rs.file.clone(),
                variant,
                cap,
            }
        } else if fifo {
            Kind::Fifo
        } else {
            Kind::RuleSet {
                file: rs.file.clone(),
                relax: rules::relax_seconds(&world),
            }
        };
        let label = if fifo || variant.is_some() || attr.is_some() {
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
            route,
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
            |((label, kind, shape, store, matcher, world, notes, answering, route), clock)| {
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
                    route,
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
pub(crate) async fn server_usage(control: &mut MultiplexedConnection) -> Option<String> {
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
                "cmdstat_fcall" | "cmdstat_evalsha" | "cmdstat_eval" => {
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
