//! Row 1: the cost of one join, leave (front, middle, back) and position
//! look-up with N players waiting, ours (ZSET + tickets hash, `lua/`) next to
//! the seed's List + LPOS scripts (`bench/baseline/`) in the same Redis.
//!
//! Every size lives in the same redis-server at once (one namespace and one
//! seed list per size), and samples go round-robin over the sizes, so a
//! change in machine load during the run hits every size alike. Besides the
//! client-side round trip, the server's own execution time of each call is
//! read from SLOWLOG (threshold 0).

mod samples;
mod seed;
pub(crate) mod slowlog;

use std::collections::BTreeMap;

use integration_tests::{settings_for, RedisServer};
use redis::aio::MultiplexedConnection;
use shared::{MatchStore, PlayerId, PlayerStatus, World};

use crate::common::{fill_queue, raw_connection, Config, Ctx, Res};
use crate::report::{count, dur, dur_spread, Report, Table, Verdict};
use crate::stats::{summarize, Summary};
use samples::{ours_sample, seed_sample};
use seed::Seed;
use slowlog::{collect_slowlog, learn_our_shas};

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
        .join(&s.world, &probe, None, None)
        .await
        .ctx("probe join")?;
    let real: String = redis::cmd("HGET")
        .arg(s.store.keys().players())
        .arg("probe")
        .query_async(&mut b.conn)
        .await
        .ctx("read the probe ticket")?;
    let parts: Vec<&str> = real.split(' ').collect();
    let shaped = parts.len() == 4
        && parts[0] == WORLD
        && parts[1..4].iter().all(|p| p.parse::<u64>().is_ok());
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
