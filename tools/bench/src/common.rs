//! What every row shares: configuration, error context, raw Redis helpers
//! that write exactly the state `lua/join.lua` writes, and server statistics.

use std::collections::HashMap;
use std::fmt::Display;
use std::path::PathBuf;

use integration_tests::settings_for;
use redis::aio::MultiplexedConnection;
use shared::{KeyLayout, MatchStore, World};

pub type Res<T> = Result<T, String>;

/// Adds what was being done to an error.
pub trait Ctx<T> {
    fn ctx(self, what: &str) -> Res<T>;
}

impl<T, E: Display> Ctx<T> for Result<T, E> {
    fn ctx(self, what: &str) -> Res<T> {
        self.map_err(|e| format!("{what}: {e}"))
    }
}

/// How the benchmark runs (environment variables, see docs/benchmark.md).
#[derive(Debug, Clone)]
pub struct Config {
    /// `BENCH_QUICK=1`: smaller sizes and shorter runs (a smoke run).
    pub quick: bool,
    /// Repetitions of every timed run (`BENCH_REPS`, default 5).
    pub reps: usize,
    /// Which rows to run (`BENCH_ROWS=1,3,6`; default 1 to 11 and 14: rows
    /// 12 and 13, whose populations of a million take minutes, run only
    /// when named).
    pub rows: Vec<u8>,
    /// Offered-load duration of one end-to-end run (`BENCH_E2E_SECS`).
    pub e2e_secs: u64,
    /// Where the release binaries are (`BENCH_BIN_DIR`, default: next to this one).
    pub bin_dir: PathBuf,
    /// Markdown output (`BENCH_OUT`).
    pub out: PathBuf,
}

impl Config {
    pub fn from_env() -> Res<Self> {
        let var = |k: &str| std::env::var(k).ok().filter(|v| !v.trim().is_empty());
        let quick = matches!(var("BENCH_QUICK").as_deref(), Some("1" | "true" | "yes"));
        let reps = match var("BENCH_REPS") {
            Some(v) => v
                .trim()
                .parse::<usize>()
                .ok()
                .filter(|n| *n >= 1)
                .ok_or_else(|| format!("BENCH_REPS must be a whole number >= 1, got {v:?}"))?,
            None => 5,
        };
        let rows = match var("BENCH_ROWS") {
            Some(v) => v
                .split(',')
                .map(|s| {
                    s.trim()
                        .parse::<u8>()
                        .ok()
                        .filter(|n| (1..=14).contains(n))
                        .ok_or_else(|| format!("BENCH_ROWS takes numbers 1..=14, got {s:?}"))
                })
                .collect::<Res<Vec<u8>>>()?,
            None => vec![1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 14],
        };
        let e2e_secs = match var("BENCH_E2E_SECS") {
            Some(v) => v
                .trim()
                .parse::<u64>()
                .ok()
                .filter(|n| *n >= 1)
                .ok_or_else(|| format!("BENCH_E2E_SECS must be >= 1, got {v:?}"))?,
            None if quick => 5,
            None => 30,
        };
        let bin_dir = match var("BENCH_BIN_DIR") {
            Some(v) => PathBuf::from(v),
            None => std::env::current_exe()
                .ctx("locate the bench binary")?
                .parent()
                .map(PathBuf::from)
                .ok_or("the bench binary has no parent directory")?,
        };
        let out =
            PathBuf::from(var("BENCH_OUT").unwrap_or_else(|| "bench-results/latest.md".into()));
        Ok(Self {
            quick,
            reps,
            rows,
            e2e_secs,
            bin_dir,
            out,
        })
    }

    pub fn runs(&self, row: u8) -> bool {
        self.rows.contains(&row)
    }
}

/// A raw connection for filling and inspecting state. Its replies may be
/// large (SLOWLOG, big pipelines), so it waits up to a minute for one
/// instead of the redis crate's default 500 ms.
pub async fn raw_connection(url: &str) -> Res<MultiplexedConnection> {
    let config = redis::AsyncConnectionConfig::new()
        .set_response_timeout(Some(std::time::Duration::from_secs(60)));
    redis::Client::open(url)
        .ctx("Redis URL")?
        .get_multiplexed_async_connection_with_config(&config)
        .await
        .ctx("connect to the benchmark redis-server")
}

/// Redis server time in milliseconds (what the scripts use).
pub async fn redis_now_ms(conn: &mut MultiplexedConnection) -> Res<u64> {
    let (secs, micros): (u64, u64) = redis::cmd("TIME").query_async(conn).await.ctx("TIME")?;
    Ok(secs * 1000 + micros / 1000)
}

/// The waiting state `lua/join.lua` stores in `players`: `<world> <seq>
/// <joined> <deadline>` (`encode_ticket` in `lua/_players.lua`).
pub fn ticket(world: &str, seq: u64, joined_ms: u64, deadline_ms: u64) -> String {
    format!("{world} {seq} {joined_ms} {deadline_ms}")
}

/// Players `name(i)` for `i` in `range` waiting in `world`'s queue with
/// ticket sequence `i + 1`: exactly the state that many joins in that order
/// write (ZADD queue, ZADD deadlines, HSET players, and the ticket-seq
/// counter), written with pipelined variadic commands.
pub async fn fill_queue(
    conn: &mut MultiplexedConnection,
    keys: &KeyLayout,
    world: &str,
    range: std::ops::Range<usize>,
    name: impl Fn(usize) -> String,
    ttl_ms: u64,
) -> Res<()> {
    const CHUNK: usize = 1_000;
    const PER_PIPELINE: usize = 30;
    let now = redis_now_ms(conn).await?;
    let deadline = now + ttl_ms;
    let wk = keys.world(&shared::WorldName::parse(world).ctx("world name")?);
    let end = range.end;
    let mut pipe = redis::pipe();
    let mut queued = 0;
    let mut start = range.start;
    while start < end {
        let stop = (start + CHUNK).min(end);
        let mut zq = redis::cmd("ZADD");
        let mut zd = redis::cmd("ZADD");
        let mut hs = redis::cmd("HSET");
        zq.arg(&wk.queue);
        zd.arg(&wk.deadlines);
        hs.arg(keys.players());
        for i in start..stop {
            let p = name(i);
            let seq = i as u64 + 1;
            zq.arg(seq).arg(&p);
            zd.arg(deadline).arg(&p);
            hs.arg(&p).arg(ticket(world, seq, now, deadline));
        }
        pipe.add_command(zq).ignore();
        pipe.add_command(zd).ignore();
        pipe.add_command(hs).ignore();
        queued += 3;
        if queued >= PER_PIPELINE {
            pipe.query_async::<()>(conn).await.ctx("fill the queue")?;
            pipe = redis::pipe();
            queued = 0;
        }
        start = stop;
    }
    pipe.cmd("SET")
        .arg(keys.ticket_seq())
        .arg(end as u64)
        .ignore();
    pipe.query_async::<()>(conn).await.ctx("fill the queue")?;
    Ok(())
}

/// Puts one player back exactly as [`fill_queue`] wrote it (untimed restore).
pub async fn restore_ticket(
    conn: &mut MultiplexedConnection,
    keys: &KeyLayout,
    world: &str,
    player: &str,
    seq: u64,
    ttl_ms: u64,
) -> Res<()> {
    let now = redis_now_ms(conn).await?;
    let deadline = now + ttl_ms;
    let wk = keys.world(&shared::WorldName::parse(world).ctx("world name")?);
    redis::pipe()
        .atomic()
        .cmd("ZADD")
        .arg(&wk.queue)
        .arg(seq)
        .arg(player)
        .ignore()
        .cmd("ZADD")
        .arg(&wk.deadlines)
        .arg(deadline)
        .arg(player)
        .ignore()
        .cmd("HSET")
        .arg(keys.players())
        .arg(player)
        .arg(ticket(world, seq, now, deadline))
        .ignore()
        .query_async::<()>(conn)
        .await
        .ctx("restore a ticket")
}

/// `INFO commandstats` as command -> (calls, usec).
pub async fn commandstats(conn: &mut MultiplexedConnection) -> Res<HashMap<String, (u64, u64)>> {
    let text: String = redis::cmd("INFO")
        .arg("commandstats")
        .query_async(conn)
        .await
        .ctx("INFO commandstats")?;
    let mut out = HashMap::new();
    for line in text.lines() {
        let Some(rest) = line.strip_prefix("cmdstat_") else {
            continue;
        };
        let Some((name, fields)) = rest.split_once(':') else {
            continue;
        };
        let mut calls = 0;
        let mut usec = 0;
        for kv in fields.split(',') {
            match kv.split_once('=') {
                Some(("calls", v)) => calls = v.parse().unwrap_or(0),
                Some(("usec", v)) => usec = v.parse().unwrap_or(0),
                _ => {}
            }
        }
        out.insert(name.to_owned(), (calls, usec));
    }
    Ok(out)
}

/// The commands that run one of our operations: FCALL (the function
/// library), or EVALSHA/EVAL (the fallback, and the seed's and floors' scripts).
pub const SCRIPT_CALLS: &[&str] = &["fcall", "evalsha", "eval"];

/// Commands only a client can send (what a round trip carries): everything a
/// script runs inside itself (ZADD, HSET, ...) is counted by Redis as well,
/// so round trips are counted from these alone.
pub const CLIENT_COMMANDS: &[&str] = &[
    "evalsha",
    "eval",
    "evalsha_ro",
    "eval_ro",
    "script|load",
    "script",
    "fcall",
    "function|load",
    "ping",
    "multi",
    "exec",
];

/// Calls of `commands` between two `commandstats` snapshots.
pub fn calls_between(
    before: &HashMap<String, (u64, u64)>,
    after: &HashMap<String, (u64, u64)>,
    commands: &[&str],
) -> (u64, u64) {
    let mut calls = 0;
    let mut usec = 0;
    for c in commands {
        let (a_calls, a_usec) = after.get(*c).copied().unwrap_or((0, 0));
        let (b_calls, b_usec) = before.get(*c).copied().unwrap_or((0, 0));
        calls += a_calls.saturating_sub(b_calls);
        usec += a_usec.saturating_sub(b_usec);
    }
    (calls, usec)
}

/// One field of `INFO <section>`.
pub async fn info_field(
    conn: &mut MultiplexedConnection,
    section: &str,
    field: &str,
) -> Res<String> {
    let text: String = redis::cmd("INFO")
        .arg(section)
        .query_async(conn)
        .await
        .ctx("INFO")?;
    text.lines()
        .find_map(|l| l.strip_prefix(&format!("{field}:")))
        .map(|v| v.trim().to_owned())
        .ok_or_else(|| format!("INFO {section} has no {field}"))
}

/// Microseconds since `start`.
pub fn micros_since(start: std::time::Instant) -> f64 {
    start.elapsed().as_secs_f64() * 1e6
}

/// CPU time (user + system) a process has used so far, in microseconds,
/// from `/proc/<pid>/stat` (clock-tick resolution).
pub fn cpu_micros(pid: u32) -> Res<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ctx("read /proc/<pid>/stat")?;
    // The command name (field 2) may contain spaces: count from after ')'.
    let rest = stat
        .rsplit_once(')')
        .map(|(_, r)| r)
        .ok_or("malformed /proc/<pid>/stat")?;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // After ')' the fields start at 3 (state): utime is field 14, stime 15.
    let ticks = |i: usize| -> Res<f64> {
        fields
            .get(i - 3)
            .and_then(|v| v.parse::<f64>().ok())
            .ok_or_else(|| format!("no field {i} in /proc/{pid}/stat"))
    };
    Ok((ticks(14)? + ticks(15)?) * 1e6 / clock_ticks())
}

fn clock_ticks() -> f64 {
    static TICKS: std::sync::OnceLock<f64> = std::sync::OnceLock::new();
    *TICKS.get_or_init(|| {
        std::process::Command::new("getconf")
            .arg("CLK_TCK")
            .output()
            .ok()
            .and_then(|o| {
                String::from_utf8_lossy(&o.stdout)
                    .trim()
                    .parse::<f64>()
                    .ok()
            })
            .filter(|t| *t > 0.0)
            .unwrap_or(100.0)
    })
}

/// The pid of the redis-server behind `conn` (INFO server process_id).
pub async fn redis_pid(conn: &mut MultiplexedConnection) -> Res<u32> {
    info_field(conn, "server", "process_id")
        .await?
        .parse()
        .ctx("INFO server process_id")
}

/// Where a script's time went: the commands it ran inside Redis between two
/// `commandstats` snapshots, each as total µs divided by `per` (calls of the
/// script), largest first, and the rest of the script's own time (the Lua
/// work between the commands). Returns (text, inner µs, Lua µs).
pub fn script_breakdown(
    before: &HashMap<String, (u64, u64)>,
    after: &HashMap<String, (u64, u64)>,
    per: f64,
) -> (String, f64, f64) {
    let mut inner: Vec<(String, u64, u64)> = after
        .iter()
        .filter(|(name, _)| !CLIENT_COMMANDS.contains(&name.as_str()) && name.as_str() != "info")
        .filter_map(|(name, (calls, usec))| {
            let (b_calls, b_usec) = before.get(name).copied().unwrap_or((0, 0));
            let calls = calls.saturating_sub(b_calls);
            (calls > 0).then(|| (name.to_uppercase(), calls, usec.saturating_sub(b_usec)))
        })
        .collect();
    inner.sort_by_key(|entry| std::cmp::Reverse(entry.2));
    let (_, script_us) = calls_between(before, after, SCRIPT_CALLS);
    let inner_us: u64 = inner.iter().map(|(_, _, us)| us).sum();
    let per = per.max(1.0);
    let lua = script_us.saturating_sub(inner_us) as f64 / per;
    let parts: Vec<String> = inner
        .iter()
        .take(8)
        .map(|(name, calls, us)| {
            format!(
                "{name} {} ({:.1} calls)",
                crate::report::dur(*us as f64 / per),
                *calls as f64 / per
            )
        })
        .collect();
    (
        format!(
            "{} in {:.1} commands [{}]; Lua between them {}",
            crate::report::dur(inner_us as f64 / per),
            inner.iter().map(|(_, c, _)| *c).sum::<u64>() as f64 / per,
            parts.join(", "),
            crate::report::dur(lua)
        ),
        inner_us as f64 / per,
        lua,
    )
}

/// The world `name` of `store`'s configuration.
pub fn configured_world(store: &MatchStore, name: &str) -> Res<World> {
    store
        .settings()
        .worlds
        .get(name)
        .cloned()
        .ok_or_else(|| format!("{name} is not configured"))
}

/// A store of namespace `ns` with one FIFO world, `world1` (1 x 3), no
/// queue capacity, instant matching on or off; and that world.
pub fn fifo_store(url: &str, ns: &str, instant: bool) -> Res<(MatchStore, World)> {
    let store = MatchStore::new(settings_for(
        url,
        false,
        ns,
        "world1:3",
        &[
            ("MM_INSTANT_MATCH", if instant { "true" } else { "false" }),
            ("MM_QUEUE_CAPACITY", "0"),
        ],
    ))
    .ctx("build the FIFO store")?;
    let world = configured_world(&store, "world1")?;
    Ok((store, world))
}
