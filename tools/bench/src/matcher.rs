//! Row 3: one `form_matches(world, 0)` call forming 10 000 matches from
//! 30 000 waiting players (N = 3): time and round trips. The seed's
//! extractUsers (one group per call) is run on the same queue in the same
//! repetition, and ours must be at least 10x faster than it. A write floor
//! (`MATCHER_FLOOR`) shows what any one-call matcher that records its
//! matches durably costs on the same machine.

use std::time::Instant;

use integration_tests::RedisServer;
use redis::aio::MultiplexedConnection;
use redis::Script;
use shared::KeyLayout;

use crate::common::{
    calls_between, commandstats, fifo_store, fill_queue, micros_since, raw_connection, Config, Ctx,
    Res, CLIENT_COMMANDS, SCRIPT_CALLS,
};
use crate::report::{count, dur_range, Report, Table, Verdict};
use crate::stats::summarize;

pub(crate) const PLAYERS: usize = 30_000;
pub(crate) const TEAM: usize = 3;

/// The least a one-call matcher must do to record 10 000 matches of 3
/// durably, with no checks and no ticket data in the records: read the
/// tickets (for their data), take the players off the queue by rank, write
/// one record (`{"matchId":…}`), one expiry and one outbox entry per match,
/// and one pointer per player written over its ticket (no deletions, no
/// deadlines removed). KEYS: queue, tickets, matches, match_expiry, outbox.
const MATCHER_FLOOR: &str = r#"
local CHUNK = 4000
local function chunked(cmd, key, args)
  local i = 1
  while i <= #args do
    local last = math.min(i + CHUNK - 1, #args)
    redis.call(cmd, key, unpack(args, i, last))
    i = last + 1
  end
end
local players = redis.call('ZRANGE', KEYS[1], 0, -1)
local i = 1
while i <= #players do
  local last = math.min(i + CHUNK - 1, #players)
  redis.call('HMGET', KEYS[2], unpack(players, i, last))
  i = last + 1
end
redis.call('ZREMRANGEBYRANK', KEYS[1], 0, -1)
local groups = math.floor(#players / 3)
local records, entries, pointers = {}, {}, {}
for g = 0, groups - 1 do
  local id = 'm' .. g
  records[2 * g + 1] = id
  records[2 * g + 2] = '{"matchId":"' .. id .. '"}'
  entries[2 * g + 1] = 1
  entries[2 * g + 2] = id
  for m = 1, 3 do
    local idx = 3 * g + m
    pointers[2 * idx - 1] = players[idx]
    pointers[2 * idx] = id
  end
end
chunked('HSET', KEYS[3], records)
chunked('ZADD', KEYS[4], entries)
chunked('ZADD', KEYS[5], entries)
chunked('HSET', KEYS[2], pointers)
return groups
"#;

/// An empty server but for `world1`'s queue of `PLAYERS` tickets, as a join
/// writes them (ours and the floor start from the same state).
pub(crate) async fn fresh_queue(conn: &mut MultiplexedConnection, keys: &KeyLayout) -> Res<()> {
    redis::cmd("FLUSHALL")
        .query_async::<()>(conn)
        .await
        .ctx("FLUSHALL")?;
    fill_queue(
        conn,
        keys,
        "world1",
        0..PLAYERS,
        |i| format!("p{i}"),
        600_000,
    )
    .await
}

pub async fn run(cfg: &Config, report: &mut Report) -> Res<()> {
    let server = RedisServer::start();
    let (store, world) = fifo_store(&server.url(), "bench", false)?;
    let mut conn = raw_connection(&server.url()).await?;
    let extract = Script::new(include_str!("../../../bench/baseline/extractUsers.lua"));
    let floor = Script::new(MATCHER_FLOOR);
    // Load the script (the first call would add a SCRIPT LOAD round trip).
    store.form_matches(&world, 0).await.ctx("warm-up")?;

    let mut times = Vec::new();
    let mut trips = Vec::new();
    let mut inner = Vec::new();
    let mut seed_times = Vec::new();
    let mut speedups = Vec::new();
    let mut server_times = Vec::new();
    let mut floor_times = Vec::new();
    let mut floor_speedups = Vec::new();
    let mut breakdown = String::new();
    let keys = store.keys().clone();
    let reps = if cfg.quick { cfg.reps.min(3) } else { cfg.reps };
    for rep in 0..reps {
        eprintln!("  [3] repetition {}/{reps}", rep + 1);
        fresh_queue(&mut conn, &keys).await?;
        let before = commandstats(&mut conn).await?;
        let t = Instant::now();
        let batch = store.form_matches(&world, 0).await.ctx("form_matches")?;
        let us = micros_since(t);
        let after = commandstats(&mut conn).await?;
        if batch.matches.len() != PLAYERS / TEAM
            || batch.queue_size != 0
            || batch.matches.iter().any(|m| m.participants.len() != TEAM)
        {
            return Err(format!(
                "form_matches formed {} matches leaving {}; expected {} groups of {TEAM} and an empty queue",
                batch.matches.len(),
                batch.queue_size,
                PLAYERS / TEAM
            ));
        }
        let (client, _) = calls_between(&before, &after, CLIENT_COMMANDS);
        let (_, script_us) = calls_between(&before, &after, SCRIPT_CALLS);
        server_times.push(script_us as f64);
        let all: u64 = after
            .iter()
            .map(|(k, (calls, _))| calls.saturating_sub(before.get(k).map_or(0, |v| v.0)))
            .sum();
        let (info, _) = calls_between(&before, &after, &["info"]);
        if rep == 0 {
            let (text, _, _) = crate::common::script_breakdown(&before, &after, 1.0);
            breakdown = text;
        }
        times.push(us);
        trips.push(client as f64);
        inner.push(all.saturating_sub(client + info) as f64);

        // The seed: extractUsers pops one group per call.
        redis::cmd("FLUSHALL")
            .query_async::<()>(&mut conn)
            .await
            .ctx("FLUSHALL")?;
        let mut pipe = redis::pipe();
        for chunk in (0..PLAYERS).collect::<Vec<_>>().chunks(1_000) {
            let mut push = redis::cmd("LPUSH");
            push.arg("seed:queue:world1");
            for i in chunk {
                push.arg(format!("p{i}"));
            }
            pipe.add_command(push).ignore();
        }
        pipe.query_async::<()>(&mut conn)
            .await
            .ctx("fill the seed list")?;
        let t = Instant::now();
        for _ in 0..PLAYERS / TEAM {
            extract
                .key("seed:queue:world1")
                .arg(TEAM)
                .invoke_async::<redis::Value>(&mut conn)
                .await
                .ctx("seed extractUsers")?;
        }
        let seed_us = micros_since(t);
        seed_times.push(seed_us);
        speedups.push(seed_us / us);
        let left: u64 = redis::cmd("LLEN")
            .arg("seed:queue:world1")
            .query_async(&mut conn)
            .await
            .ctx("LLEN")?;
        if left != 0 {
            return Err(format!("seed extractUsers left {left} players"));
        }

        // The write floor, on the same queue as ours.
        fresh_queue(&mut conn, &keys).await?;
        let wk = keys.world(&world.name);
        floor
            .prepare_invoke()
            .load_async(&mut conn)
            .await
            .ctx("load the floor")?;
        let before = commandstats(&mut conn).await?;
        let groups: u64 = floor
            .key(&wk.queue)
            .key(keys.players())
            .key(keys.matches())
            .key(keys.match_expiry())
            .key(keys.outbox())
            .invoke_async(&mut conn)
            .await
            .ctx("matcher floor")?;
        let after = commandstats(&mut conn).await?;
        let records: u64 = redis::cmd("HLEN")
            .arg(keys.matches())
            .query_async(&mut conn)
            .await
            .ctx("HLEN")?;
        if groups != (PLAYERS / TEAM) as u64 || records != groups {
            return Err(format!(
                "the matcher floor recorded {records} of {groups} groups; expected {}",
                PLAYERS / TEAM
            ));
        }
        let (_, floor_us) = calls_between(&before, &after, SCRIPT_CALLS);
        floor_times.push(floor_us as f64);
        floor_speedups.push(seed_us / floor_us.max(1) as f64);
    }

    let time = summarize(&times);
    let rt = summarize(&trips);
    let inside = summarize(&inner);
    let seed = summarize(&seed_times);
    let script = summarize(&server_times);
    let time_ok = Verdict::of(time.max < 100_000.0 && time.median < 100_000.0);
    let rt_ok = Verdict::of(rt.max <= 1.0);
    let speedup = summarize(&speedups);
    let speed_ok = Verdict::of(speedup.median >= 10.0);
    report.check(
        "3. matcher: time to form 10 000 matches from 30 000 (one call)",
        dur_range(&time),
        "< 100 ms",
        time_ok,
    );
    report.check(
        "3. matcher: round trips for one world's tick",
        format!("{}", rt.median),
        "<= 1 per world",
        rt_ok,
    );
    report.check(
        "3. matcher: one call vs the seed's extractUsers x 10 000 (one call per group), same run",
        format!(
            "{:.1}x faster ({:.1}x–{:.1}x; {} vs {})",
            speedup.median,
            speedup.min,
            speedup.max,
            crate::report::dur(time.median),
            crate::report::dur(seed.median)
        ),
        ">= 10x",
        speed_ok,
    );
    let mut table = Table::new(
        "3. Matcher: 10 000 matches from 30 000 waiting players (N = 3), one tick",
        &format!(
            "Median (min–max) over {reps} repetitions. Round trips = commands the client sent (FCALL/FUNCTION LOAD/EVALSHA/EVAL/SCRIPT/PING \
             calls in the `INFO commandstats` delta); commands the script ran inside Redis are counted separately. \
             \"inside the script\": FCALL (or the seed's EVALSHA) execution time (`INFO commandstats` usec); the rest of the client time is \
             the reply transfer and decoding 10 000 match records in Rust. The script writes one outbox entry per \
             match (not per player). \"vs seed\": the seed's time for the same 10 000 groups ÷ ours, median of \
             the per-repetition ratios (both run in every repetition)."
        ),
        &[
            "what",
            "time (client)",
            "of which inside the script",
            "round trips",
            "commands inside Redis",
            "vs seed",
            "target",
            "result",
        ],
    );
    table.row(vec![
        "ours: `form_matches(world1, 0)` (records, pointers, one outbox entry per match, in the same script)"
            .into(),
        dur_range(&time),
        dur_range(&script),
        format!("{} ({}–{})", rt.median, rt.min, rt.max),
        count(inside.median),
        format!("{:.1}x faster", speedup.median),
        "< 100 ms, <= 1 round trip, >= 10x the seed".into(),
        if [time_ok, rt_ok, speed_ok].iter().all(|v| *v == Verdict::Pass) {
            "PASS".into()
        } else {
            "MISS".into()
        },
    ]);
    table.row(vec![
        "seed: `extractUsers` x 10 000 back to back (one group per call; it runs once per world per 1 s tick)"
            .into(),
        dur_range(&seed),
        "".into(),
        count((PLAYERS / TEAM) as f64),
        "".into(),
        "1x".into(),
        "".into(),
        "info".into(),
    ]);
    let floor_time = summarize(&floor_times);
    let floor_speedup = summarize(&floor_speedups);
    table.row(vec![
        "write floor: one script recording the same 10 000 matches with the least writes (no checks, records of ids only, pointers over the tickets; see `MATCHER_FLOOR`)"
            .into(),
        "".into(),
        dur_range(&floor_time),
        "1".into(),
        "".into(),
        format!("{:.1}x faster (inside Redis only)", floor_speedup.median),
        "".into(),
        "info".into(),
    ]);
    report.tables.push(table);
    report.note(format!(
        "Matcher: inside the one `form_matches` script call (first repetition, `INFO commandstats` delta): {breakdown}."
    ));
    drop(server);
    Ok(())
}
