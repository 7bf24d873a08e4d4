//! Row 2: joins per second through the shared crate at 1, 16 and 64
//! concurrent clients (tokio tasks sharing one `MatchStore`), next to
//! EVALSHA of `return 1` and a write floor (a script writing only what a
//! queued join writes, `floor.rs`) through the same redis crate client in the
//! same run.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use integration_tests::{settings_for, RedisServer};
use redis::aio::ConnectionManager;
use redis::Script;
use shared::{JoinOutcome, MatchStore, PlayerId, Rating, World};

use crate::common::{
    calls_between, commandstats, configured_world, cpu_micros, raw_connection, redis_pid,
    script_breakdown, Config, Ctx, Res, SCRIPT_CALLS,
};
use crate::floor::{run_floor, Floor, RatingFn};
use crate::report::{count, dur, Report, Table, Verdict};
use crate::stats::summarize;

const CONCURRENCY: [usize; 3] = [1, 16, 64];
/// Where the queued join is held to its floors (Redis at its core's limit).
const QUEUED_TARGET_C: usize = 64;
const MODES: [Mode; 5] = [
    Mode::Raw,
    Mode::WriteFloor,
    Mode::JoinCalls,
    Mode::JoinInstant,
    Mode::JoinQueued,
];

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Mode {
    /// EVALSHA of `return 1`: the client + server floor for one script call.
    Raw,
    /// A script writing only what a queued FIFO join writes (`floor.rs`).
    WriteFloor,
    /// A queued FIFO join's own Redis calls with its KEYS and ARGV, no
    /// logic (`Floor::join_calls`).
    JoinCalls,
    /// `MatchStore::join`, instant match on (N = 3: every third join forms a match).
    JoinInstant,
    /// `MatchStore::join`, instant match off (the queue only grows).
    JoinQueued,
}

impl Mode {
    fn label(self) -> &'static str {
        match self {
            Mode::Raw => "EVALSHA `return 1` (raw floor)",
            Mode::WriteFloor => {
                "write floor: INCR, ZADD queue, ZADD deadlines, HSET ticket (one EVALSHA)"
            }
            Mode::JoinCalls => "join calls: a queued join's 10 Redis calls, its KEYS and ARGV, no logic (one EVALSHA)",
            Mode::JoinInstant => "join, instant match on (N=3, forms matches)",
            Mode::JoinQueued => "join, instant match off (queue grows)",
        }
    }
}

#[derive(Default)]
struct Sample {
    rate: Vec<f64>,
    /// Server time per EVALSHA (INFO commandstats), µs.
    server_us: Vec<f64>,
    /// Share of wall time the server spent in EVALSHA.
    server_busy: Vec<f64>,
    /// redis-server process CPU (user + system) per operation, µs.
    server_cpu: Vec<f64>,
    /// redis-server process CPU over wall time (1.0 = one core, its limit).
    server_cpu_share: Vec<f64>,
    /// This (client) process's CPU per operation, µs.
    client_cpu: Vec<f64>,
}

pub async fn run(cfg: &Config, report: &mut Report) -> Res<()> {
    let server = RedisServer::start();
    let url = server.url();
    let store_with = |instant: &str| {
        MatchStore::new(settings_for(
            &url,
            false,
            "bench",
            "world1:3,world2:3,world3:3",
            &[("MM_INSTANT_MATCH", instant), ("MM_QUEUE_CAPACITY", "0")],
        ))
        .ctx("build the store")
    };
    let instant = store_with("true")?;
    let queued = store_with("false")?;
    let world = configured_world(&instant, "world1")?;
    let raw = redis::Client::open(url.as_str())
        .ctx("Redis URL")?
        .get_connection_manager()
        .await
        .ctx("connect the raw client")?;
    let mut admin = raw_connection(&url).await?;
    let floor = Script::new("return 1");
    let writes = Floor::fifo(instant.keys(), "world1", 600_000)?;
    let queued_world = configured_world(&queued, "world1")?;
    let calls = Floor::join_calls(&queued, &queued_world)?;
    let queue_key = queued.keys().world(&queued_world.name).queue;
    let redis_pid = redis_pid(&mut admin).await?;
    let own_pid = std::process::id();

    let window = if cfg.quick {
        Duration::from_millis(300)
    } else {
        Duration::from_secs(2)
    };
    let reps = if cfg.quick { cfg.reps.min(2) } else { cfg.reps };
    let mut results: BTreeMap<(Mode, usize), Sample> = BTreeMap::new();
    let mut ratios: BTreeMap<usize, Vec<f64>> = BTreeMap::new();
    // Per (mode, C): each repetition's ops/s ÷ the write floor's.
    let mut write_ratios: BTreeMap<(Mode, usize), Vec<f64>> = BTreeMap::new();
    // Per C: each repetition's queued joins/s ÷ those of the join's own calls.
    let mut calls_ratios: BTreeMap<usize, Vec<f64>> = BTreeMap::new();
    let mut breakdowns = Vec::new();
    // Warm-up: load the scripts, open the connections.
    let warm = Duration::from_millis(100);
    run_joins(&instant, &world, "warm-a", 4, warm, None).await?;
    run_joins(&queued, &world, "warm-b", 4, warm, None).await?;
    run_raw(&raw, &floor, 4, warm).await?;
    run_floor(&raw, &writes, "warm-c", 4, warm).await?;
    run_floor(&raw, &calls, "warm-d", 4, warm).await?;

    for rep in 0..reps {
        eprintln!("  [2] repetition {}/{reps}", rep + 1);
        for &c in &CONCURRENCY {
            let (mut raw_rate, mut write_rate, mut calls_rate) = (f64::NAN, f64::NAN, f64::NAN);
            for mode in MODES {
                redis::cmd("FLUSHALL")
                    .query_async::<()>(&mut admin)
                    .await
                    .ctx("FLUSHALL")?;
                let before = commandstats(&mut admin).await?;
                let (srv0, cli0) = (cpu_micros(redis_pid)?, cpu_micros(own_pid)?);
                let prefix = format!("r{rep}c{c}{mode:?}");
                let (ops, elapsed) = match mode {
                    Mode::Raw => run_raw(&raw, &floor, c, window).await?,
                    Mode::WriteFloor => run_floor(&raw, &writes, &prefix, c, window).await?,
                    Mode::JoinCalls => run_floor(&raw, &calls, &prefix, c, window).await?,
                    Mode::JoinInstant => {
                        run_joins(&instant, &world, &prefix, c, window, None).await?
                    }
                    Mode::JoinQueued => {
                        run_joins(&queued, &world, &prefix, c, window, None).await?
                    }
                };
                let (srv1, cli1) = (cpu_micros(redis_pid)?, cpu_micros(own_pid)?);
                if matches!(mode, Mode::JoinCalls | Mode::JoinQueued) {
                    // The floor files what the join files: a ticket per call.
                    let waiting: u64 = redis::cmd("ZCARD")
                        .arg(&queue_key)
                        .query_async(&mut admin)
                        .await
                        .ctx("ZCARD queue")?;
                    if waiting != ops {
                        return Err(format!(
                            "{}: {ops} calls left {waiting} tickets",
                            mode.label()
                        ));
                    }
                }
                let after = commandstats(&mut admin).await?;
                let (calls, usec) = calls_between(&before, &after, SCRIPT_CALLS);
                if rep == 0 && c == 16 && matches!(mode, Mode::JoinInstant | Mode::JoinQueued) {
                    let (text, _, _) = script_breakdown(&before, &after, calls as f64);
                    breakdowns.push(format!("{}: {text}", mode.label()));
                }
                let rate = ops as f64 / elapsed.as_secs_f64();
                let s = results.entry((mode, c)).or_default();
                s.rate.push(rate);
                s.server_us.push(usec as f64 / calls.max(1) as f64);
                s.server_busy
                    .push(usec as f64 / (elapsed.as_secs_f64() * 1e6));
                s.server_cpu.push((srv1 - srv0) / ops.max(1) as f64);
                s.server_cpu_share
                    .push((srv1 - srv0) / (elapsed.as_secs_f64() * 1e6));
                s.client_cpu.push((cli1 - cli0) / ops.max(1) as f64);
                match mode {
                    Mode::Raw => raw_rate = rate,
                    Mode::WriteFloor => write_rate = rate,
                    Mode::JoinCalls => calls_rate = rate,
                    Mode::JoinInstant => ratios.entry(c).or_default().push(rate / raw_rate),
                    Mode::JoinQueued => calls_ratios.entry(c).or_default().push(rate / calls_rate),
                }
                if matches!(mode, Mode::JoinCalls | Mode::JoinInstant | Mode::JoinQueued) {
                    write_ratios
                        .entry((mode, c))
                        .or_default()
                        .push(rate / write_rate);
                }
            }
        }
    }

    let mut table = Table::new(
        "2. Throughput: operations per second",
        &format!(
            "Median (min–max) over {reps} repetitions of a {:.1} s run each; C tokio tasks share one client \
             (`MatchStore`, or one redis `ConnectionManager` for the floors), every join a distinct player; the \
             five modes alternate within each repetition. \"÷ write floor\": joins/s ÷ a script that \
             writes only the entries a queued join writes (INCR ticket-seq, ZADD queue, ZADD deadlines, HSET \
             ticket, with TIME), median of the per-repetition ratios. \"÷ join calls\": queued joins/s ÷ a \
             script making exactly a queued join's Redis calls with its KEYS, ARGV and reply shape and none \
             of its logic (what the Lua around the calls costs; issue 20's target as measured, see \
             docs/benchmark.md). \"script µs/call\": time inside the script call (FCALL for joins, EVALSHA for the floors) \
             (`INFO commandstats`); \"redis CPU\": the redis-server process's CPU (user + system, \
             /proc) per operation and as a share of one core, its single-thread limit; \"client CPU\": \
             this process's CPU per operation (the machine has 2 cores for both).",
            window.as_secs_f64()
        ),
        &[
            "operation",
            "C",
            "ops/s",
            "÷ raw floor",
            "÷ write floor",
            "÷ join calls",
            "script µs/call",
            "redis CPU µs/op",
            "redis CPU",
            "client CPU µs/op",
            "target",
            "result",
        ],
    );
    for &c in &CONCURRENCY {
        for mode in MODES {
            let s = &results[&(mode, c)];
            let rate = summarize(&s.rate);
            let us = summarize(&s.server_us);
            let cpu = summarize(&s.server_cpu);
            let share = summarize(&s.server_cpu_share);
            let client = summarize(&s.client_cpu);
            let raw_median = summarize(&results[&(Mode::Raw, c)].rate).median;
            let write_cell = match mode {
                Mode::Raw => String::new(),
                Mode::WriteFloor => "1.00".into(),
                _ => {
                    let r = summarize(&write_ratios[&(mode, c)]);
                    format!("{:.2} ({:.2}–{:.2})", r.median, r.min, r.max)
                }
            };
            let (ratio_cell, target, verdict) = match mode {
                Mode::Raw => ("1.00".to_owned(), "".to_owned(), "".to_owned()),
                Mode::WriteFloor => (
                    format!("{:.2}", rate.median / raw_median),
                    "".into(),
                    "".into(),
                ),
                Mode::JoinInstant => {
                    let r = summarize(&ratios[&c]);
                    let v = Verdict::of(r.median >= 0.7);
                    report.check(
                        &format!("2. joins/s at C={c} (instant match on) ÷ EVALSHA `return 1`"),
                        format!(
                            "{:.2}x ({}/s vs {}/s)",
                            r.median,
                            count(rate.median),
                            count(raw_median)
                        ),
                        ">= 0.7x",
                        v,
                    );
                    (
                        format!("{:.2} ({:.2}–{:.2})", r.median, r.min, r.max),
                        ">= 0.7x".into(),
                        v.label().into(),
                    )
                }
                Mode::JoinCalls => (
                    format!("{:.2}", rate.median / raw_median),
                    "".into(),
                    "".into(),
                ),
                Mode::JoinQueued if c == QUEUED_TARGET_C => {
                    let w = summarize(&write_ratios[&(mode, c)]);
                    let r = summarize(&calls_ratios[&c]);
                    let calls_median = summarize(&results[&(Mode::JoinCalls, c)].rate).median;
                    report.check(
                        &format!("2. queued FIFO joins/s at C={c} ÷ the write floor (issue 20; its own calls reach less, see docs/benchmark.md)"),
                        format!("{:.2}x", w.median),
                        ">= 0.7x",
                        Verdict::of(w.median >= 0.7),
                    );
                    let v = Verdict::of(r.median >= 0.7);
                    report.check(
                        &format!("2. queued FIFO joins/s at C={c} ÷ the join's own Redis calls without its logic"),
                        format!(
                            "{:.2}x ({}/s vs {}/s)",
                            r.median,
                            count(rate.median),
                            count(calls_median)
                        ),
                        ">= 0.7x",
                        v,
                    );
                    (
                        format!("{:.2}", rate.median / raw_median),
                        ">= 0.7x ÷ join calls".into(),
                        v.label().into(),
                    )
                }
                Mode::JoinQueued => (
                    format!("{:.2}", rate.median / raw_median),
                    "".into(),
                    "info".into(),
                ),
            };
            let calls_cell = match mode {
                Mode::JoinCalls => "1.00".to_owned(),
                Mode::JoinQueued => {
                    let r = summarize(&calls_ratios[&c]);
                    format!("{:.2} ({:.2}–{:.2})", r.median, r.min, r.max)
                }
                _ => String::new(),
            };
            table.row(vec![
                mode.label().into(),
                c.to_string(),
                format!(
                    "{} ({}–{})",
                    count(rate.median),
                    count(rate.min),
                    count(rate.max)
                ),
                ratio_cell,
                write_cell,
                calls_cell,
                dur(us.median),
                dur(cpu.median),
                format!("{:.0}%", share.median * 100.0),
                dur(client.median),
                target,
                verdict,
            ]);
        }
    }
    report.tables.push(table);
    for b in breakdowns {
        report.note(format!(
            "Throughput, per join at C=16 (`INFO commandstats` delta, first repetition), {b}."
        ));
    }
    drop(server);
    Ok(())
}

/// `c` tasks joining distinct players (`<prefix>t<task>-<i>`) through one
/// store for `window`; in a rated world each with the rating `rating` gives
/// it (passed as the trusted claim).
pub async fn run_joins(
    store: &MatchStore,
    world: &World,
    prefix: &str,
    c: usize,
    window: Duration,
    rating: Option<RatingFn>,
) -> Res<(u64, Duration)> {
    let start = Instant::now();
    let deadline = start + window;
    let mut tasks = Vec::with_capacity(c);
    for t in 0..c {
        let store = store.clone();
        let world = world.clone();
        let prefix = format!("{prefix}t{t}-");
        tasks.push(tokio::spawn(async move {
            let mut done = 0u64;
            while Instant::now() < deadline {
                let p = PlayerId::parse(&format!("{prefix}{done}")).ctx("player id")?;
                let claimed = match rating {
                    Some(r) => Some(Rating::new(r(t, done)).ctx("rating")?),
                    None => None,
                };
                match store.join(&world, &p, None, claimed).await.ctx("join")? {
                    JoinOutcome::Queued(_) | JoinOutcome::Matched { .. } => done += 1,
                    other => return Err(format!("unexpected join outcome {other:?}")),
                }
            }
            Ok::<u64, String>(done)
        }));
    }
    let mut total = 0;
    for t in tasks {
        total += t.await.ctx("join task")??;
    }
    Ok((total, start.elapsed()))
}

/// `c` tasks sending EVALSHA of `return 1` through one connection manager.
async fn run_raw(
    conn: &ConnectionManager,
    script: &Script,
    c: usize,
    window: Duration,
) -> Res<(u64, Duration)> {
    let start = Instant::now();
    let deadline = start + window;
    let mut tasks = Vec::with_capacity(c);
    for _ in 0..c {
        let mut conn = conn.clone();
        let script = script.clone();
        tasks.push(tokio::spawn(async move {
            let mut done = 0u64;
            while Instant::now() < deadline {
                let v: i64 = script
                    .prepare_invoke()
                    .invoke_async(&mut conn)
                    .await
                    .ctx("EVALSHA return 1")?;
                if v != 1 {
                    return Err(format!("`return 1` returned {v}"));
                }
                done += 1;
            }
            Ok::<u64, String>(done)
        }));
    }
    let mut total = 0;
    for t in tasks {
        total += t.await.ctx("raw task")??;
    }
    Ok((total, start.elapsed()))
}
