//! Server-side times: which of our scripts is which SHA1, and SLOWLOG
//! entries attributed to their (implementation, operation, size) cell.

use std::collections::BTreeMap;

use redis::aio::MultiplexedConnection;
use redis::Value;

use super::{player, Bench, Impl, Op, WARM};
use crate::common::{Ctx, Res};

/// Finds the SHA1 of our join, leave and player_status scripts: calls each
/// once on an empty namespace and reads SLOWLOG.
pub(super) async fn learn_our_shas(b: &mut Bench) -> Res<()> {
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
            Op::Join => drop(s.store.join(&s.world, &p, None, None).await.ctx("join")?),
            Op::LeaveBack => drop(s.store.leave(&s.world, &p).await.ctx("leave")?),
            _ => drop(s.store.player_status(&p).await.ctx("player_status")?),
        }
        let entries = slowlog(&mut b.conn).await?;
        let sha = entries
            .iter()
            .filter(|e| {
                e.args.first().is_some_and(|c| {
                    c.eq_ignore_ascii_case("fcall") || c.eq_ignore_ascii_case("evalsha")
                })
            })
            .find_map(|e| e.args.get(1).cloned())
            .ok_or("no FCALL or EVALSHA in SLOWLOG: cannot attribute server times")?;
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

/// One SLOWLOG entry: execution time, the command's arguments (Redis keeps
/// the first 32) and the client's address (`?:0` for a script's commands).
pub(crate) struct SlowEntry {
    pub micros: u64,
    pub args: Vec<String>,
    pub client: String,
}

/// Every SLOWLOG entry so far (newest first), and resets the log.
pub(crate) async fn slowlog(conn: &mut MultiplexedConnection) -> Res<Vec<SlowEntry>> {
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
pub(super) async fn collect_slowlog(b: &mut Bench, block: Op) -> Res<()> {
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
            "fcall" | "evalsha" | "eval" => {
                // args[1]: our function's name, or the seed script's SHA1.
                let Some(&(imp, op)) = e.args.get(1).and_then(|id| b.shas.get(id)) else {
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
