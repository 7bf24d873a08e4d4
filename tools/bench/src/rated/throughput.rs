//! 6c: rated joins per second at C = 64 concurrent tasks (row 2's harness:
//! tokio tasks sharing one `MatchStore`, every join a distinct player) ÷ a
//! floor script writing the same entries a queued rated join writes
//! (`floor.rs`: INCR ticket-seq, ZADD queue, ZADD deadlines, HSET tickets,
//! ZADD ratings, ZADD due; one EVALSHA per join, every key in KEYS) through
//! one redis `ConnectionManager`, alternating within every repetition. The
//! world's window is 0 and never widens or relaxes, and ratings are
//! continuous, so joins (almost) never match: both sides write the same.

use std::time::Duration;

use integration_tests::RedisServer;

use super::{normal, store, TEAM, WORLD};
use crate::common::{
    calls_between, commandstats, cpu_micros, raw_connection, redis_pid, script_breakdown, Config,
    Ctx, Res, SCRIPT_CALLS,
};
use crate::floor::{run_floor, Floor};
use crate::report::{count, dur, Report, Table, Verdict};
use crate::stats::summarize;
use crate::throughput::run_joins;

const C: usize = 64;

/// The rating of task `t`'s `i`-th join: N(1500, 300), not rounded, so no
/// two joins share one and a window of 0 never forms a group.
fn continuous(t: usize, i: u64) -> f64 {
    1_500.0 + 300.0 * normal(((t as u64) << 40) ^ i ^ 0xC0FF_EE00_0000_0000)
}

#[derive(Default)]
struct Runs {
    rate: Vec<f64>,
    script_us: Vec<f64>,
    redis_cpu_share: Vec<f64>,
}

pub(super) async fn run(cfg: &Config, report: &mut Report) -> Res<()> {
    let server = RedisServer::start();
    let url = server.url();
    let rules = super::rules(0.0, 0.0, super::TTL_SECS, 600);
    let (store, world) = store(&url, "bench", &rules, true)?;
    let retry = world
        .rating()
        .map(|r| u64::try_from(r.retry.as_millis()).unwrap_or(u64::MAX))
        .ok_or("the world is not rated")?;
    let ttl = u64::try_from(world.ticket_ttl.as_millis()).unwrap_or(u64::MAX);
    let floor = Floor::rated(store.keys(), WORLD, ttl, retry, continuous)?;
    let raw = redis::Client::open(url.as_str())
        .ctx("Redis URL")?
        .get_connection_manager()
        .await
        .ctx("connect the raw client")?;
    let mut admin = raw_connection(&url).await?;
    let pid = redis_pid(&mut admin).await?;
    let window = if cfg.quick {
        Duration::from_millis(300)
    } else {
        Duration::from_secs(2)
    };
    let reps = if cfg.quick { cfg.reps.min(2) } else { cfg.reps };
    let warm = Duration::from_millis(100);
    run_joins(&store, &world, "warm-a", 4, warm, Some(continuous)).await?;
    run_floor(&raw, &floor, "warm-b", 4, warm).await?;

    let (mut joins, mut floors, mut ratios) = (Runs::default(), Runs::default(), vec![]);
    let (mut matches, mut breakdown) = (0u64, String::new());
    let wk = store.keys().world(&world.name);
    for rep in 0..reps {
        eprintln!("  [6c] repetition {}/{reps}", rep + 1);
        let mut floor_rate = f64::NAN;
        for is_join in [false, true] {
            redis::cmd("FLUSHALL")
                .query_async::<()>(&mut admin)
                .await
                .ctx("FLUSHALL")?;
            let before = commandstats(&mut admin).await?;
            let cpu0 = cpu_micros(pid)?;
            let prefix = format!("r{rep}{}", if is_join { "j" } else { "f" });
            let (ops, elapsed) = if is_join {
                run_joins(&store, &world, &prefix, C, window, Some(continuous)).await?
            } else {
                run_floor(&raw, &floor, &prefix, C, window).await?
            };
            let cpu1 = cpu_micros(pid)?;
            let after = commandstats(&mut admin).await?;
            // Both sides must have written the same entries: one per op in
            // each structure, less the players a join matched.
            let formed: u64 = redis::cmd("HLEN")
                .arg(store.keys().matches())
                .query_async(&mut admin)
                .await
                .ctx("HLEN matches")?;
            let waiting = ops - formed * u64::from(TEAM);
            let (q, d, r, u, t): (u64, u64, u64, u64, u64) = redis::pipe()
                .cmd("ZCARD")
                .arg(&wk.queue)
                .cmd("ZCARD")
                .arg(&wk.deadlines)
                .cmd("ZCARD")
                .arg(&wk.ratings)
                .cmd("ZCARD")
                .arg(&wk.due)
                .cmd("HLEN")
                .arg(store.keys().players())
                .query_async(&mut admin)
                .await
                .ctx("count the written entries")?;
            // Matched players' deadline entries stay until due (the sweep
            // drops them) and their state becomes the match id: deadlines
            // and player states count every join.
            if [q, r, u] != [waiting; 3] || [d, t] != [ops; 2] {
                return Err(format!(
                    "6c {}: {ops} joins, {formed} matches: queue {q}, deadlines {d}, ratings {r}, due {u}, \
                     player states {t}; expected {waiting} queued, rated and due, {ops} deadlines and states",
                    if is_join { "rated join" } else { "floor" }
                ));
            }
            let (calls, usec) = calls_between(&before, &after, SCRIPT_CALLS);
            if rep == 0 && is_join {
                breakdown = script_breakdown(&before, &after, calls as f64).0;
            }
            let rate = ops as f64 / elapsed.as_secs_f64();
            let runs = if is_join { &mut joins } else { &mut floors };
            runs.rate.push(rate);
            runs.script_us.push(usec as f64 / calls.max(1) as f64);
            runs.redis_cpu_share
                .push((cpu1 - cpu0) / (elapsed.as_secs_f64() * 1e6));
            if is_join {
                ratios.push(rate / floor_rate);
                matches += formed;
            } else {
                floor_rate = rate;
            }
        }
    }
    drop(server);

    let ratio = summarize(&ratios);
    let (j, f) = (summarize(&joins.rate), summarize(&floors.rate));
    let verdict = Verdict::of(ratio.median >= 0.5);
    report.check(
        &format!("6c. rated joins/s at C={C} ÷ a floor script writing the same entries"),
        format!(
            "{:.2}x ({}/s vs {}/s)",
            ratio.median,
            count(j.median),
            count(f.median)
        ),
        ">= 0.5x",
        verdict,
    );
    let mut table = Table::new(
        "6c. Rated join throughput",
        &format!(
            "Median (min–max) over {reps} repetitions of a {:.1} s run each, C = {C} tokio tasks sharing one \
             client (`MatchStore` with a rated world, N = {TEAM}, window 0, instant match on; or one redis \
             `ConnectionManager` for the floor), every join a distinct player with a continuous N(1500, 300) \
             rating. The floor is one EVALSHA writing exactly what a queued rated join writes (TIME, INCR \
             ticket-seq, ZADD queue, ZADD deadlines, HSET ticket, ZADD ratings, ZADD due); both runs are \
             checked to leave the same number of entries in every structure. Matches formed by the joins \
             over all runs: {}. \"script µs/call\": time inside the script call (FCALL for joins, EVALSHA for the floor; `INFO commandstats`); \"redis CPU\": \
             the redis-server process's share of one core.",
            window.as_secs_f64(),
            count(matches as f64)
        ),
        &[
            "operation",
            "C",
            "ops/s",
            "÷ floor",
            "script µs/call",
            "redis CPU",
            "target",
            "result",
        ],
    );
    for (label, runs, ratio_cell, target, result) in [
        (
            "floor: the rated join's writes in one EVALSHA",
            &floors,
            "1.00".to_owned(),
            String::new(),
            String::new(),
        ),
        (
            "rated join (`MatchStore::join`, no match)",
            &joins,
            format!("{:.2} ({:.2}–{:.2})", ratio.median, ratio.min, ratio.max),
            ">= 0.5x".to_owned(),
            verdict.label().to_owned(),
        ),
    ] {
        let rate = summarize(&runs.rate);
        table.row(vec![
            label.into(),
            C.to_string(),
            format!(
                "{} ({}–{})",
                count(rate.median),
                count(rate.min),
                count(rate.max)
            ),
            ratio_cell,
            dur(summarize(&runs.script_us).median),
            format!("{:.0}%", summarize(&runs.redis_cpu_share).median * 100.0),
            target,
            result,
        ]);
    }
    report.tables.push(table);
    report.note(format!(
        "Rated join throughput, per join at C={C} (`INFO commandstats` delta, first repetition): {breakdown}."
    ));
    Ok(())
}
