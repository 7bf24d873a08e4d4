//! Row 1: the cost of one join, leave (front, middle, back) and position
//! look-up with N players waiting, ours (ZSET + tickets hash, `lua/`) next to
//! the seed's List + LPOS scripts (`bench/baseline/`) in the same Redis.
//!
//! Every size lives in the same redis-server at once (one namespace and one
//! seed list per size), and samples go round-robin over the sizes, so a
//! change in machine load during the run hits every size alike. Besides the
//! client-side round trip, the server's own execution time of each call is
//! read from SLOWLOG (threshold 0).

use std::collections::BTreeMap;
use std::time::Instant;

use integration_tests::{settings_for, RedisServer};
use redis::aio::MultiplexedConnection;
use redis::{Script, Value};
use shared::{JoinOutcome, LeaveOutcome, MatchStore, PlayerId, PlayerStatus, World};

use crate::common::{fill_queue, micros_since, raw_connection, restore_ticket, Config, Ctx, Res};
use crate::report::{count, dur, dur_spread, Report, Table, Verdict};
use crate::stats::{summarize, Summary};

const WORLD: &str = "world1";
/// Tickets that outlive the benchmark (no expiry while measuring).
const TTL_MS: u64 = 86_400_000;
const WARM: usize = 10;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Op {
    Join,
    LeaveFront,
    LeaveMiddle,
    LeaveBack,
    Position,
}

impl Op {
    const ALL: [Op; 5] = [
        Op::Join,
        Op::LeaveFront,
        Op::LeaveMiddle,
        Op::LeaveBack,
        Op::Position,
    ];

    fn ours(self) -> &'static str {
        match self {
            Op::Join => "join (new player, to the back)",
            Op::LeaveFront => "leave, front (oldest)",
            Op::LeaveMiddle => "leave, middle",
            Op::LeaveBack => "leave, back (newest)",
            Op::Position => "position (player_status, middle)",
        }
    }

    fn seed(self) -> &'static str {
        match self {
            Op::Join => "addToQueue (LPOS miss + LPUSH)",
            Op::LeaveFront => "removeFromQueue, front (list tail)",
            Op::LeaveMiddle => "removeFromQueue, middle",
            Op::LeaveBack => "removeFromQueue, back (list head)",
            Op::Position => "LPOS (middle)",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Impl {
    Ours,
    Seed,
}

fn name(i: usize) -> String {
    format!("p{i}")
}

fn player(s: &str) -> Res<PlayerId> {
    PlayerId::parse(s).ctx("player id")
}

fn short(n: usize) -> String {
    match n {
        n if n >= 1_000_000 && n % 1_000_000 == 0 => format!("{}M", n / 1_000_000),
        n if n >= 1_000 && n % 1_000 == 0 => format!("{}k", n / 1_000),
        n => n.to_string(),
    }
}

/// One queue size: our namespace and the seed's list for it.
struct Size {
    n: usize,
    store: MatchStore,
    world: World,
    seed_queue: String,
    seed_data: String,
}

/// The seed's scripts, verbatim from the post.
struct Seed {
    add: Script,
    remove: Script,
}

impl Seed {
    fn new() -> Self {
        Self {
            add: Script::new(include_str!("../../../bench/baseline/addToQueue.lua")),
            remove: Script::new(include_str!("../../../bench/baseline/removeFromQueue.lua")),
        }
    }

    fn data(user: &str) -> String {
        format!(r#"{{"memberId":"{user}","worldType":"WORLD1"}}"#)
    }

    async fn add(&self, conn: &mut MultiplexedConnection, s: &Size, user: &str) -> Res<()> {
        // The seed returns string-keyed Lua tables, which Redis turns into an
        // empty array: there is nothing to decode (one of its defects).
        self.add
            .key(&s.seed_queue)
            .key(&s.seed_data)
            .arg(user)
            .arg(Self::data(user))
            .arg("3600")
            .invoke_async::<Value>(conn)
            .await
            .ctx("seed addToQueue")?;
        Ok(())
    }

    async fn remove(&self, conn: &mut MultiplexedConnection, s: &Size, user: &str) -> Res<()> {
        self.remove
            .key(&s.seed_queue)
            .key(&s.seed_data)
            .arg(user)
            .invoke_async::<Value>(conn)
            .await
            .ctx("seed removeFromQueue")?;
        Ok(())
    }

    /// The seed's list after addToQueue of p0..p(n-1) in order: LPUSH puts
    /// the newest at the head, so p0 (the oldest, next to be matched) is the
    /// tail, which is where extractUsers RPOPs.
    async fn fill(conn: &mut MultiplexedConnection, s: &Size) -> Res<()> {
        const CHUNK: usize = 1_000;
        let mut pipe = redis::pipe();
        let mut queued = 0;
        let mut start = 0;
        while start < s.n {
            let stop = (start + CHUNK).min(s.n);
            let mut push = redis::cmd("LPUSH");
            let mut data = redis::cmd("HSET");
            push.arg(&s.seed_queue);
            data.arg(&s.seed_data);
            for i in start..stop {
                push.arg(name(i));
                data.arg(name(i)).arg(Self::data(&name(i)));
            }
            pipe.add_command(push).ignore();
            pipe.add_command(data).ignore();
            queued += 2;
            if queued >= 20 {
                pipe.query_async::<()>(conn)
                    .await
                    .ctx("fill the seed list")?;
                pipe = redis::pipe();
                queued = 0;
            }
            start = stop;
        }
        if queued > 0 {
            pipe.query_async::<()>(conn)
                .await
                .ctx("fill the seed list")?;
        }
        Ok(())
    }
}

/// Client-side samples (µs) and server-side times (µs, from SLOWLOG).
#[derive(Default)]
struct Cell {
    client: Vec<f64>,
    server: Vec<f64>,
}

struct Bench {
    conn: MultiplexedConnection,
    seed: Seed,
    sizes: Vec<Size>,
    cells: BTreeMap<(Impl, Op, usize), Cell>,
    /// Script SHA1 -> what it is, to attribute SLOWLOG entries.
    shas: BTreeMap<String, (Impl, Op)>,
}

pub async fn run(cfg: &Config, report: &mut Report) -> Res<()> {
    let server = RedisServer::start();
    let url = server.url();
    let ns: Vec<usize> = if cfg.quick {
        vec![1_000, 10_000, 100_000]
    } else {
        vec![1_000, 10_000, 100_000, 1_000_000]
    };
    let mut sizes = Vec::new();
    for &n in &ns {
        let store = MatchStore::new(settings_for(
            &url,
            false,
            &format!("n{n}"),
            &format!("{WORLD}:3"),
            &[
                ("MM_INSTANT_MATCH", "false"),
                ("MM_QUEUE_CAPACITY", "0"),
                ("MM_TICKET_TTL_SECS", "86400"),
            ],
        ))
        .ctx("build the store")?;
        let world = store
            .settings()
            .worlds
            .get(WORLD)
            .cloned()
            .ok_or("world1 is not configured")?;
        sizes.push(Size {
            n,
            store,
            world,
            seed_queue: format!("seed:n{n}:queue:world1"),
            seed_data: format!("seed:n{n}:queue_data:world1"),
        });
    }
    let seed = Seed::new();
    let shas = BTreeMap::from([
        (seed.add.get_hash().to_owned(), (Impl::Seed, Op::Join)),
        (
            seed.remove.get_hash().to_owned(),
            (Impl::Seed, Op::LeaveFront),
        ),
    ]);
    let mut b = Bench {
        conn: raw_connection(&url).await?,
        seed,
        sizes,
        cells: BTreeMap::new(),
        shas,
    };
    check_fill_matches_join(&mut b).await?;
    learn_our_shas(&mut b).await?;

    for i in 0..b.sizes.len() {
        let (n, keys) = (b.sizes[i].n, b.sizes[i].store.keys().clone());
        eprintln!(
            "  [1] filling {} players (ours and the seed's list)",
            count(n as f64)
        );
        fill_queue(&mut b.conn, &keys, WORLD, 0..n, name, TTL_MS).await?;
        Seed::fill(&mut b.conn, &b.sizes[i]).await?;
    }
    verify(&mut b).await?;

    let ours_samples = if cfg.quick { 200 } else { 2_000 };
    let seed_samples = |n: usize| {
        if cfg.quick {
            (20_000_000 / n).clamp(30, 200)
        } else {
            (200_000_000 / n).clamp(100, 2_000)
        }
    };
    redis::cmd("CONFIG")
        .arg("SET")
        .arg("slowlog-log-slower-than")
        .arg(0)
        .arg("slowlog-max-len")
        .arg(1_000_000)
        .query_async::<()>(&mut b.conn)
        .await
        .ctx("CONFIG SET slowlog")?;
    for op in [Op::Join, Op::LeaveFront, Op::LeaveMiddle, Op::Position] {
        eprintln!("  [1] ours: {} x{ours_samples} per size", op.ours());
        for k in 0..ours_samples + WARM {
            for i in 0..b.sizes.len() {
                ours_sample(&mut b, i, op, k).await?;
            }
        }
        collect_slowlog(&mut b, op).await?;
        let max = b.sizes.iter().map(|s| seed_samples(s.n)).max().unwrap_or(0);
        eprintln!("  [1] seed: {} (up to x{max} per size)", op.seed());
        for k in 0..max + WARM {
            for i in 0..b.sizes.len() {
                if k < seed_samples(b.sizes[i].n) + WARM {
                    seed_sample(&mut b, i, op, k).await?;
                }
            }
        }
        collect_slowlog(&mut b, op).await?;
    }
    verify(&mut b).await?;

    let small = ns[0];
    let large = ns[ns.len() - 1];
    let mut headers: Vec<String> = vec!["operation".into(), "impl".into()];
    headers.extend(ns.iter().map(|n| format!("N = {}", count(*n as f64))));
    headers.extend([
        format!("{} ÷ {}", short(large), short(small)),
        "target".into(),
        "result".into(),
    ]);
    let mut table = Table::new(
        "1. Scaling: one operation with N players waiting",
        &format!(
            "Round trip through the real client, median (p10–p90) of {ours_samples} samples per cell for ours \
             (`MatchStore` methods), {} for the seed's List + LPOS scripts (`bench/baseline/`, EVALSHA; its \
             position is a plain LPOS): each seed sample costs O(N). \"server\" rows: the median execution time \
             of the same calls inside redis-server (SLOWLOG), i.e. without the network and client. All sizes \
             are loaded in one redis-server at once and sampled round-robin. Front = oldest (next to be \
             matched); state is restored between samples (untimed).",
            ns.iter()
                .map(|n| format!("{} at {}", seed_samples(*n), short(*n)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        &[],
    );
    table.headers = headers;
    for op in Op::ALL {
        for imp in [Impl::Ours, Impl::Seed] {
            let label = if imp == Impl::Ours {
                op.ours()
            } else {
                op.seed()
            };
            let cell = |n: usize| b.cells.get(&(imp, op, n));
            let client = |n: usize| cell(n).map(|c| summarize(&c.client));
            let server = |n: usize| cell(n).map(|c| summarize(&c.server));
            let mut row = vec![
                label.to_owned(),
                if imp == Impl::Ours { "ours" } else { "seed" }.to_owned(),
            ];
            row.extend(
                ns.iter()
                    .map(|n| client(*n).as_ref().map_or("n/a".into(), dur_spread)),
            );
            let ratio = ratio_of(client(large), client(small));
            row.push(format!("{ratio:.2}x"));
            if imp == Impl::Ours {
                let verdict = Verdict::of(ratio <= 1.5);
                row.extend(["<= 1.5x".into(), verdict.label().into()]);
                report.check(
                    &format!(
                        "1. {}: cost at {} ÷ at {}",
                        op.ours(),
                        short(large),
                        short(small)
                    ),
                    format!(
                        "{ratio:.2}x ({} vs {})",
                        dur(client(large).map_or(f64::NAN, |s| s.median)),
                        dur(client(small).map_or(f64::NAN, |s| s.median))
                    ),
                    "<= 1.5x",
                    verdict,
                );
            } else {
                row.extend(["".into(), "info".into()]);
            }
            table.row(row);
            let mut srv = vec![
                "  ↳ server execution time".to_owned(),
                format!("{} server", if imp == Impl::Ours { "ours" } else { "seed" }),
            ];
            srv.extend(ns.iter().map(|n| {
                server(*n)
                    .filter(|s| s.n > 0)
                    .map_or("n/a".into(), |s| dur(s.median))
            }));
            srv.push(format!("{:.2}x", ratio_of(server(large), server(small))));
            srv.extend(["".into(), "info".into()]);
            table.row(srv);
        }
    }
    report.tables.push(table);
    drop(server);
    Ok(())
}

fn ratio_of(a: Option<Summary>, b: Option<Summary>) -> f64 {
    match (a, b) {
        (Some(a), Some(b)) => a.median / b.median,
        _ => f64::NAN,
    }
}

/// The raw fill must write what a real join writes: compare with one.
async fn check_fill_matches_join(b: &mut Bench) -> Res<()> {
    let s = &b.sizes[0];
    let probe = player("probe")?;
    s.store
        .join(&s.world, &probe, None)
        .await
        .ctx("probe join")?;
    let real: String = redis::cmd("HGET")
        .arg(s.store.keys().tickets())
        .arg("probe")
        .query_async(&mut b.conn)
        .await
        .ctx("read the probe ticket")?;
    let parts: Vec<&str> = real.split(' ').collect();
    let shaped = parts.len() == 5
        && parts[0] == WORLD
        && parts[1..4].iter().all(|p| p.parse::<u64>().is_ok())
        && parts[4].is_empty();
    if !shaped {
        return Err(format!(
            "a real join stored the ticket {real:?}; the benchmark's fill writes \
             \"<world> <seq> <joined> <deadline> \" and must be updated to match lua/join.lua"
        ));
    }
    redis::cmd("FLUSHALL")
        .query_async::<()>(&mut b.conn)
        .await
        .ctx("FLUSHALL")
}

/// Finds the SHA1 of our join, leave and player_status scripts: calls each
/// once on an empty namespace and reads SLOWLOG.
async fn learn_our_shas(b: &mut Bench) -> Res<()> {
    let s = &b.sizes[0];
    redis::cmd("CONFIG")
        .arg("SET")
        .arg("slowlog-log-slower-than")
        .arg(0)
        .query_async::<()>(&mut b.conn)
        .await
        .ctx("CONFIG SET")?;
    for op in [Op::Join, Op::LeaveBack, Op::Position] {
        redis::cmd("SLOWLOG")
            .arg("RESET")
            .query_async::<()>(&mut b.conn)
            .await
            .ctx("SLOWLOG RESET")?;
        let p = player("sha-probe")?;
        match op {
            Op::Join => drop(s.store.join(&s.world, &p, None).await.ctx("join")?),
            Op::LeaveBack => drop(s.store.leave(&s.world, &p).await.ctx("leave")?),
            _ => drop(s.store.player_status(&p).await.ctx("player_status")?),
        }
        let entries = slowlog(&mut b.conn).await?;
        let sha = entries
            .iter()
            .filter(|e| {
                e.args
                    .first()
                    .is_some_and(|c| c.eq_ignore_ascii_case("evalsha"))
            })
            .find_map(|e| e.args.get(1).cloned())
            .ok_or("no EVALSHA in SLOWLOG: cannot attribute server times")?;
        b.shas.insert(sha, (Impl::Ours, op));
    }
    redis::cmd("CONFIG")
        .arg("SET")
        .arg("slowlog-log-slower-than")
        .arg(10_000)
        .query_async::<()>(&mut b.conn)
        .await
        .ctx("CONFIG SET")?;
    redis::cmd("FLUSHALL")
        .query_async::<()>(&mut b.conn)
        .await
        .ctx("FLUSHALL")
}

struct SlowEntry {
    micros: u64,
    args: Vec<String>,
    client: String,
}

async fn slowlog(conn: &mut MultiplexedConnection) -> Res<Vec<SlowEntry>> {
    let v: Value = redis::cmd("SLOWLOG")
        .arg("GET")
        .arg(-1)
        .query_async(conn)
        .await
        .ctx("SLOWLOG GET")?;
    redis::cmd("SLOWLOG")
        .arg("RESET")
        .query_async::<()>(conn)
        .await
        .ctx("SLOWLOG RESET")?;
    let text = |v: &Value| match v {
        Value::BulkString(b) => String::from_utf8_lossy(b).into_owned(),
        Value::SimpleString(s) => s.clone(),
        _ => String::new(),
    };
    let Value::Array(entries) = v else {
        return Err("SLOWLOG GET: expected an array".into());
    };
    let mut out = Vec::with_capacity(entries.len());
    for e in entries {
        let Value::Array(fields) = e else { continue };
        let (Some(Value::Int(micros)), Some(Value::Array(args))) = (fields.get(2), fields.get(3))
        else {
            continue;
        };
        out.push(SlowEntry {
            micros: u64::try_from(*micros).unwrap_or(0),
            args: args.iter().map(text).collect(),
            client: fields.get(4).map(text).unwrap_or_default(),
        });
    }
    Ok(out)
}

/// Attributes the server time of every client call since the last read to
/// its cell. `block` tells which front/middle leave (or join/back pair) ran.
async fn collect_slowlog(b: &mut Bench, block: Op) -> Res<()> {
    let entries = slowlog(&mut b.conn).await?;
    let size_of_key = |key: &str| -> Option<usize> {
        // mm:{n1000}:... or seed:n1000:...
        let digits: String = key
            .split(['{', '}', ':'])
            .find_map(|part| {
                part.strip_prefix('n')
                    .filter(|d| d.parse::<usize>().is_ok())
            })?
            .to_owned();
        digits.parse().ok()
    };
    // Per cell, entries come newest first; the warm-up calls are the oldest.
    let mut grouped: BTreeMap<(Impl, Op, usize), Vec<f64>> = BTreeMap::new();
    for e in entries.iter().rev() {
        if e.client.starts_with('?') || e.args.is_empty() {
            continue; // a command run inside a script
        }
        let cmd = e.args[0].to_ascii_lowercase();
        let (imp, op, key) = match cmd.as_str() {
            "evalsha" | "eval" => {
                let Some(&(imp, op)) = e.args.get(1).and_then(|sha| b.shas.get(sha)) else {
                    continue;
                };
                let op = match (imp, op, block) {
                    // join and leave-of-the-newest run as pairs
                    (Impl::Ours, Op::LeaveBack, Op::Join)
                    | (Impl::Seed, Op::LeaveFront, Op::Join) => Op::LeaveBack,
                    (_, Op::LeaveBack, b) | (Impl::Seed, Op::LeaveFront, b) => b,
                    (_, op, _) => op,
                };
                (imp, op, e.args.get(3).cloned().unwrap_or_default())
            }
            "lpos" if block == Op::Position => (
                Impl::Seed,
                Op::Position,
                e.args.get(1).cloned().unwrap_or_default(),
            ),
            _ => continue,
        };
        if let Some(n) = size_of_key(&key) {
            grouped
                .entry((imp, op, n))
                .or_default()
                .push(e.micros as f64);
        }
    }
    for (k, times) in grouped {
        let kept = times.into_iter().skip(WARM).collect::<Vec<_>>();
        b.cells.entry(k).or_default().server.extend(kept);
    }
    Ok(())
}

/// Checks a sample of the filled state through the real API.
async fn verify(b: &mut Bench) -> Res<()> {
    for s in &b.sizes {
        let n = s.n;
        for i in [0, n / 2, n - 1] {
            match s
                .store
                .player_status(&player(&name(i))?)
                .await
                .ctx("player_status")?
            {
                PlayerStatus::Queued(pos)
                    if pos.position == i as u64 + 1 && pos.queue_size == n as u64 => {}
                other => {
                    return Err(format!(
                    "filled queue check: {} should be at {} of {n}, player_status says {other:?}",
                    name(i),
                    i + 1
                ))
                }
            }
        }
        let len: u64 = redis::cmd("LLEN")
            .arg(&s.seed_queue)
            .query_async(&mut b.conn)
            .await
            .ctx("LLEN")?;
        let tail: Option<u64> = redis::cmd("LPOS")
            .arg(&s.seed_queue)
            .arg(name(0))
            .query_async(&mut b.conn)
            .await
            .ctx("LPOS")?;
        if len != n as u64 || tail != Some(n as u64 - 1) {
            return Err(format!(
                "seed list check: expected {n} entries with p0 at the tail, got {len} and {tail:?}"
            ));
        }
    }
    Ok(())
}

fn record(b: &mut Bench, imp: Impl, op: Op, n: usize, k: usize, us: f64) {
    if k >= WARM {
        b.cells.entry((imp, op, n)).or_default().client.push(us);
    }
}

async fn ours_sample(b: &mut Bench, i: usize, op: Op, k: usize) -> Res<()> {
    let s = &b.sizes[i];
    let (n, store, world) = (s.n, s.store.clone(), s.world.clone());
    match op {
        Op::Join | Op::LeaveBack => {
            let p = player(&format!("j{k}"))?;
            let t = Instant::now();
            let joined = store.join(&world, &p, None).await.ctx("join")?;
            let join_us = micros_since(t);
            match joined {
                JoinOutcome::Queued(pos) if pos.position == n as u64 + 1 => {}
                other => {
                    return Err(format!(
                        "join with {n} waiting: expected position {}, got {other:?}",
                        n + 1
                    ))
                }
            }
            let t = Instant::now();
            let left = store.leave(&world, &p).await.ctx("leave")?;
            let leave_us = micros_since(t);
            match left {
                LeaveOutcome::Left {
                    previous_position, ..
                } if previous_position == n as u64 + 1 => {}
                other => return Err(format!("leave of the newest: got {other:?}")),
            }
            record(b, Impl::Ours, Op::Join, n, k, join_us);
            record(b, Impl::Ours, Op::LeaveBack, n, k, leave_us);
        }
        Op::LeaveFront | Op::LeaveMiddle => {
            let at = if op == Op::LeaveFront { 0 } else { n / 2 };
            let p = name(at);
            let t = Instant::now();
            let left = store.leave(&world, &player(&p)?).await.ctx("leave")?;
            let us = micros_since(t);
            match left {
                LeaveOutcome::Left {
                    previous_position, ..
                } if previous_position == at as u64 + 1 => {}
                other => {
                    return Err(format!(
                        "leave of {p}: expected position {}, got {other:?}",
                        at + 1
                    ))
                }
            }
            let keys = store.keys().clone();
            restore_ticket(&mut b.conn, &keys, WORLD, &p, at as u64 + 1, TTL_MS).await?;
            record(b, Impl::Ours, op, n, k, us);
        }
        Op::Position => {
            let m = n / 2;
            let p = player(&name(m))?;
            let t = Instant::now();
            let status = store.player_status(&p).await.ctx("player_status")?;
            let us = micros_since(t);
            match status {
                PlayerStatus::Queued(pos) if pos.position == m as u64 + 1 => {}
                other => return Err(format!("status of {}: got {other:?}", name(m))),
            }
            record(b, Impl::Ours, op, n, k, us);
        }
    }
    Ok(())
}

async fn seed_sample(b: &mut Bench, i: usize, op: Op, k: usize) -> Res<()> {
    let Bench {
        conn, seed, sizes, ..
    } = b;
    let s = &sizes[i];
    let n = s.n;
    let (client, pair): (f64, Option<f64>) = match op {
        Op::Join | Op::LeaveBack => {
            let user = format!("j{k}");
            let t = Instant::now();
            seed.add(conn, s, &user).await?;
            let add_us = micros_since(t);
            let t = Instant::now();
            seed.remove(conn, s, &user).await?;
            (add_us, Some(micros_since(t)))
        }
        Op::LeaveFront => {
            // p0 is the list's tail.
            let t = Instant::now();
            seed.remove(conn, s, &name(0)).await?;
            let us = micros_since(t);
            redis::pipe()
                .cmd("RPUSH")
                .arg(&s.seed_queue)
                .arg(name(0))
                .ignore()
                .cmd("HSET")
                .arg(&s.seed_data)
                .arg(name(0))
                .arg(Seed::data(&name(0)))
                .ignore()
                .query_async::<()>(conn)
                .await
                .ctx("restore the seed's front")?;
            (us, None)
        }
        Op::LeaveMiddle => {
            // p(m) sits just before p(m-1), nearer the head.
            let m = n / 2;
            let t = Instant::now();
            seed.remove(conn, s, &name(m)).await?;
            let us = micros_since(t);
            redis::pipe()
                .cmd("LINSERT")
                .arg(&s.seed_queue)
                .arg("BEFORE")
                .arg(name(m - 1))
                .arg(name(m))
                .ignore()
                .cmd("HSET")
                .arg(&s.seed_data)
                .arg(name(m))
                .arg(Seed::data(&name(m)))
                .ignore()
                .query_async::<()>(conn)
                .await
                .ctx("restore the seed's middle")?;
            (us, None)
        }
        Op::Position => {
            let m = n / 2;
            let t = Instant::now();
            let at: Option<u64> = redis::cmd("LPOS")
                .arg(&s.seed_queue)
                .arg(name(m))
                .query_async(conn)
                .await
                .ctx("LPOS")?;
            let us = micros_since(t);
            if at != Some((n - 1 - m) as u64) {
                return Err(format!(
                    "seed LPOS of {}: expected {}, got {at:?}",
                    name(m),
                    n - 1 - m
                ));
            }
            (us, None)
        }
    };
    let first = if op == Op::LeaveBack { Op::Join } else { op };
    record(b, Impl::Seed, first, n, k, client);
    if let Some(back) = pair {
        record(b, Impl::Seed, Op::LeaveBack, n, k, back);
    }
    Ok(())
}
