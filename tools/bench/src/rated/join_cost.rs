//! 6a: the cost of one rated join (and the leave that undoes it) with 1 k
//! and with 1 M players waiting (quick: 100 k). The probe is rated 100 000,
//! far outside the N(1500, 300) population and every window, so its join's
//! immediate attempt (instant match is on, as in production) looks for
//! neighbours and finds none: the join stays queued, and the leave after it
//! keeps the queue size fixed. Sizes are sampled round-robin in one
//! redis-server, as row 1 does; server times come from SLOWLOG.

use std::collections::BTreeMap;
use std::time::Instant;

use redis::aio::MultiplexedConnection;
use redis::Script;
use shared::{JoinOutcome, LeaveOutcome, PlayerId, Rating};

use super::fill::Filled;
use crate::common::{micros_since, Config, Ctx, Res};
use crate::report::{count, dur, dur_spread, Report, Table, Verdict};
use crate::scaling::slowlog::slowlog;
use crate::stats::summarize;

/// The probe's rating: no population player is within any window of it.
const PROBE_RATING: f64 = 100_000.0;
const WARM: usize = 10;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Op {
    Join,
    Leave,
}

#[derive(Default)]
struct Cell {
    client: Vec<f64>,
    server: Vec<f64>,
}

fn short(n: usize) -> String {
    match n {
        n if n >= 1_000_000 => format!("{}M", n / 1_000_000),
        n => format!("{}k", n / 1_000),
    }
}

/// The names a call of one of the core's scripts carries: its function in
/// the library (FCALL) and the SHA1 of its standalone script (EVALSHA).
fn ids_of(script: &str) -> Res<[String; 2]> {
    let sha = shared::scripts::SOURCES
        .iter()
        .find(|(name, _)| *name == script)
        .map(|(_, src)| Script::new(src).get_hash().to_owned())
        .ok_or_else(|| format!("no script {script} in shared::scripts::SOURCES"))?;
    let function = shared::scripts::FUNCTIONS
        .function(script)
        .ok_or_else(|| format!("no function for {script}"))?;
    Ok([function, sha])
}

pub(super) async fn run(
    cfg: &Config,
    report: &mut Report,
    conn: &mut MultiplexedConnection,
    sizes: &[Filled],
) -> Res<()> {
    let samples = if cfg.quick { 200 } else { 2_000 };
    let mut shas = BTreeMap::new();
    for (script, op) in [("join.lua", Op::Join), ("leave.lua", Op::Leave)] {
        for id in ids_of(script)? {
            shas.insert(id, op);
        }
    }
    redis::cmd("CONFIG")
        .arg("SET")
        .arg("slowlog-log-slower-than")
        .arg(0)
        .arg("slowlog-max-len")
        .arg(1_000_000)
        .query_async::<()>(conn)
        .await
        .ctx("CONFIG SET slowlog")?;
    slowlog(conn).await?;
    let rating = Rating::new(PROBE_RATING).ctx("rating")?;
    let mut cells: BTreeMap<(Op, usize), Cell> = BTreeMap::new();
    // SLOWLOG also lists the commands our scripts run (~15 per call): read
    // it every ROUND samples to keep each reply small. Oldest first.
    const ROUND: usize = 50;
    let mut log = Vec::new();
    eprintln!("  [6a] rated join + leave x{samples} per size");
    for k in 0..samples + WARM {
        for s in sizes {
            let n = s.n as u64;
            let p = PlayerId::parse(&format!("probe{k}")).ctx("player id")?;
            let t = Instant::now();
            let joined = s
                .store
                .join(&s.world, &p, None, Some(rating))
                .await
                .ctx("rated join")?;
            let join_us = micros_since(t);
            match joined {
                JoinOutcome::Queued(pos) if pos.position == n + 1 && pos.queue_size == n + 1 => {}
                other => {
                    return Err(format!(
                        "rated probe join with {n} waiting: expected to queue at {}, got {other:?}",
                        n + 1
                    ))
                }
            }
            let t = Instant::now();
            let left = s.store.leave(&s.world, &p).await.ctx("leave")?;
            let leave_us = micros_since(t);
            match left {
                LeaveOutcome::Left {
                    previous_position,
                    remaining_queue_size,
                } if previous_position == n + 1 && remaining_queue_size == n => {}
                other => return Err(format!("rated probe leave: got {other:?}")),
            }
            if k >= WARM {
                cells
                    .entry((Op::Join, s.n))
                    .or_default()
                    .client
                    .push(join_us);
                cells
                    .entry((Op::Leave, s.n))
                    .or_default()
                    .client
                    .push(leave_us);
            }
        }
        if k % ROUND == ROUND - 1 || k == samples + WARM - 1 {
            log.extend(slowlog(conn).await?.into_iter().rev());
        }
    }
    // Server times: our FCALLs (or EVALSHAs) by script and by namespace (`mm:{r<n>}:`).
    let mut server: BTreeMap<(Op, usize), Vec<f64>> = BTreeMap::new();
    for e in &log {
        let is_eval = e
            .args
            .first()
            .is_some_and(|c| c.eq_ignore_ascii_case("fcall") || c.eq_ignore_ascii_case("evalsha"));
        let Some(&op) = e.args.get(1).filter(|_| is_eval).and_then(|s| shas.get(s)) else {
            continue;
        };
        let n = e
            .args
            .get(3)
            .and_then(|k| k.split_once("{r"))
            .and_then(|(_, rest)| rest.split_once('}'))
            .and_then(|(digits, _)| digits.parse::<usize>().ok());
        if let Some(n) = n {
            server.entry((op, n)).or_default().push(e.micros as f64);
        }
    }
    for (key, times) in server {
        cells
            .entry(key)
            .or_default()
            .server
            .extend(times.into_iter().skip(WARM));
    }
    redis::cmd("CONFIG")
        .arg("SET")
        .arg("slowlog-log-slower-than")
        .arg(10_000)
        .query_async::<()>(conn)
        .await
        .ctx("CONFIG SET slowlog")?;
    // A leave keeps its ticket's deadline entry for the sweep to drop when
    // due (lua/leave.lua): drop the probes' here, untimed, so the sizes are
    // exactly as filled again.
    let probes: Vec<String> = (0..samples + WARM).map(|k| format!("probe{k}")).collect();
    for s in sizes {
        s.forget_deadlines(conn, &probes).await?;
        s.verify(conn).await?;
    }

    let (small, large) = (sizes[0].n, sizes[sizes.len() - 1].n);
    let ratio_label = format!("{} ÷ {}", short(large), short(small));
    let mut table = Table::new(
        "6a. Rated join: cost with N players waiting",
        &format!(
            "A rated world (N = 10, window 50, instant match on), its N players rated N(1500, 300) clamped to \
             [0, 3000]; the probe is rated 100 000, so its join's immediate attempt finds no neighbour and it \
             stays queued; it then leaves (the size stays N). Round trip through `MatchStore::join` / `leave`, \
             median (p10–p90) of {samples} samples per cell, sizes in one redis-server sampled round-robin. \
             \"server\": the median execution time inside redis-server (SLOWLOG).{}",
            if cfg.quick {
                " BENCH_QUICK: 100 k instead of 1 M."
            } else {
                ""
            }
        ),
        &[
            "operation",
            &format!("N = {}", count(small as f64)),
            &format!("N = {}", count(large as f64)),
            &ratio_label,
            "target",
            "result",
        ],
    );
    for op in [Op::Join, Op::Leave] {
        let label = match op {
            Op::Join => "rated join (probe outside every window)",
            Op::Leave => "leave of the probe",
        };
        let client =
            |n: usize| summarize(&cells.get(&(op, n)).map_or(vec![], |c| c.client.clone()));
        let server =
            |n: usize| summarize(&cells.get(&(op, n)).map_or(vec![], |c| c.server.clone()));
        let ratio = client(large).median / client(small).median;
        let (target, verdict) = if op == Op::Join {
            let v = Verdict::of(ratio <= 1.5);
            report.check(
                &format!("6a. rated join (probe outside every window): cost at {ratio_label}"),
                format!(
                    "{ratio:.2}x ({} vs {}; server {} vs {})",
                    dur(client(large).median),
                    dur(client(small).median),
                    dur(server(large).median),
                    dur(server(small).median)
                ),
                "<= 1.5x",
                v,
            );
            ("<= 1.5x".to_owned(), v.label().to_owned())
        } else {
            (String::new(), "info".to_owned())
        };
        table.row(vec![
            label.into(),
            dur_spread(&client(small)),
            dur_spread(&client(large)),
            format!("{ratio:.2}x"),
            target,
            verdict,
        ]);
        table.row(vec![
            "  ↳ server execution time".into(),
            dur(server(small).median),
            dur(server(large).median),
            format!("{:.2}x", server(large).median / server(small).median),
            String::new(),
            "info".into(),
        ]);
    }
    report.tables.push(table);
    Ok(())
}
