//! One timed sample of an operation at one queue size, ours and the seed's.

use std::time::Instant;

use shared::{JoinOutcome, LeaveOutcome, PlayerStatus};

use super::seed::Seed;
use super::{name, player, record, Bench, Impl, Op, TTL_MS, WORLD};
use crate::common::{micros_since, restore_ticket, Ctx, Res};

pub(super) async fn ours_sample(b: &mut Bench, i: usize, op: Op, k: usize) -> Res<()> {
    let s = &b.sizes[i];
    let (n, store, world) = (s.n, s.store.clone(), s.world.clone());
    match op {
        Op::Join | Op::LeaveBack => {
            let p = player(&format!("j{k}"))?;
            let t = Instant::now();
            let joined = store.join(&world, &p, None, None).await.ctx("join")?;
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

pub(super) async fn seed_sample(b: &mut Bench, i: usize, op: Op, k: usize) -> Res<()> {
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
