//! Rated queues written raw, with pipelined variadic commands: exactly the
//! entries `lua/join.lua` writes for a queued rated ticket (ZADD queue,
//! ZADD deadlines, HSET players, ZADD ratings `<seq, 12 digits>:<player>`,
//! ZADD due = joined + the next-due delay, and the ticket-seq counter). The
//! format is checked against one real rated join first, key by key, and a
//! filled queue is checked through the real API (`player_status` shows each
//! sampled player's position and rating).

use std::collections::BTreeMap;

use redis::aio::MultiplexedConnection;
use redis::Value;
use shared::{JoinOutcome, MatchStore, PlayerId, PlayerStatus, Rating, World};

use super::{name, rating_of, retry_ms, store, JOINED_AGO_MS};
use crate::common::{redis_now_ms, ticket, Ctx, Res};

/// One namespace holding `n` waiting players `name(0..n)` in the rated world,
/// ticket sequence `i + 1`, rating `rating_of(i)`, all joined at `joined_ms`.
pub(super) struct Filled {
    pub store: MatchStore,
    pub world: World,
    pub n: usize,
    joined_ms: u64,
}

fn millis(d: std::time::Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

impl Filled {
    pub fn new(store: MatchStore, world: World, n: usize) -> Self {
        Self {
            store,
            world,
            n,
            joined_ms: 0,
        }
    }

    /// Writes the whole queue; the tickets joined `JOINED_AGO_MS` ago, so
    /// every one of them is due as an anchor.
    pub async fn fill(&mut self, conn: &mut MultiplexedConnection) -> Res<()> {
        self.joined_ms = redis_now_ms(conn).await? - JOINED_AGO_MS;
        let all: Vec<usize> = (0..self.n).collect();
        self.write(conn, &all).await?;
        redis::cmd("SET")
            .arg(self.store.keys().ticket_seq())
            .arg(self.n as u64)
            .query_async::<()>(conn)
            .await
            .ctx("SET ticket-seq")
    }

    /// Writes the tickets of players `indexes` exactly as the fill did.
    async fn write(&self, conn: &mut MultiplexedConnection, indexes: &[usize]) -> Res<()> {
        write_tickets(
            conn,
            self.store.keys(),
            &self.world,
            indexes,
            self.joined_ms,
        )
        .await
    }

    /// Puts the state back as filled after matcher calls (untimed): the
    /// matched players' tickets, the first `anchors` players' due times (the
    /// anchors tried; one that found no group was pushed back), and no match
    /// records, pointers, outbox entries or statistics.
    pub async fn restore(
        &self,
        conn: &mut MultiplexedConnection,
        matched: &[usize],
        anchors: usize,
    ) -> Res<()> {
        self.write(conn, matched).await?;
        let k = self.store.keys();
        let wk = k.world(&self.world.name);
        let due = self.joined_ms + millis(rating_rules(&self.world)?.next_due_after());
        let mut pipe = redis::pipe();
        for chunk in (0..anchors.min(self.n)).collect::<Vec<_>>().chunks(1_000) {
            let mut z = redis::cmd("ZADD");
            z.arg(&wk.due);
            for &i in chunk {
                z.arg(due).arg(name(i));
            }
            pipe.add_command(z).ignore();
        }
        pipe.cmd("DEL")
            .arg(k.matches())
            .arg(k.match_expiry())
            .arg(k.outbox())
            .arg(k.outbox_meta())
            .arg(k.match_seq())
            .arg(&wk.stats)
            .ignore();
        pipe.query_async::<()>(conn)
            .await
            .ctx("restore the rated queue")
    }

    /// Removes `players`' entries from the deadlines (untimed).
    pub async fn forget_deadlines(
        &self,
        conn: &mut MultiplexedConnection,
        players: &[String],
    ) -> Res<()> {
        let wk = self.store.keys().world(&self.world.name);
        for chunk in players.chunks(1_000) {
            redis::cmd("ZREM")
                .arg(&wk.deadlines)
                .arg(chunk)
                .query_async::<()>(conn)
                .await
                .ctx("ZREM deadlines")?;
        }
        Ok(())
    }

    /// Checks the filled state: every structure holds `n` entries, all due,
    /// and sampled players stand where they should with their rating
    /// through the real API.
    pub async fn verify(&self, conn: &mut MultiplexedConnection) -> Res<()> {
        let k = self.store.keys();
        let wk = k.world(&self.world.name);
        let now = redis_now_ms(conn).await?;
        let (q, d, r, due, t, due_now): (u64, u64, u64, u64, u64, u64) = redis::pipe()
            .cmd("ZCARD")
            .arg(&wk.queue)
            .cmd("ZCARD")
            .arg(&wk.deadlines)
            .cmd("ZCARD")
            .arg(&wk.ratings)
            .cmd("ZCARD")
            .arg(&wk.due)
            .cmd("HLEN")
            .arg(k.players())
            .cmd("ZCOUNT")
            .arg(&wk.due)
            .arg("-inf")
            .arg(now)
            .query_async(conn)
            .await
            .ctx("count the rated structures")?;
        let n = self.n as u64;
        if [q, d, r, due, t, due_now] != [n; 6] {
            return Err(format!(
                "rated fill of {n}: queue {q}, deadlines {d}, ratings {r}, due {due} ({due_now} due now), \
                 tickets {t}; expected {n} each, all due"
            ));
        }
        for i in [0, self.n / 2, self.n - 1] {
            let p = PlayerId::parse(&name(i)).ctx("player id")?;
            match self.store.player_status(&p).await.ctx("player_status")? {
                PlayerStatus::Queued(pos)
                    if pos.position == i as u64 + 1
                        && pos.queue_size == n
                        && pos.rated.map(|t| t.rating.value()) == Some(rating_of(i)) => {}
                other => {
                    return Err(format!(
                        "rated fill check: {} should be at {} of {n} rated {}, player_status says {other:?}",
                        name(i),
                        i + 1,
                        rating_of(i)
                    ))
                }
            }
        }
        Ok(())
    }
}

fn rating_rules(world: &World) -> Res<&shared::RatingRules> {
    world
        .rating()
        .ok_or_else(|| format!("world {} is not rated", world.name))
}

/// The raw writes: per 1 000 players one variadic ZADD queue, ZADD
/// deadlines, HSET players, ZADD ratings and ZADD due, pipelined.
async fn write_tickets(
    conn: &mut MultiplexedConnection,
    keys: &shared::KeyLayout,
    world: &World,
    indexes: &[usize],
    joined: u64,
) -> Res<()> {
    const CHUNK: usize = 1_000;
    const PER_PIPELINE: usize = 30;
    let wk = keys.world(&world.name);
    let deadline = joined + millis(world.ticket_ttl);
    let due = joined + millis(rating_rules(world)?.next_due_after());
    if millis(rating_rules(world)?.retry) != retry_ms() {
        return Err("the world's anchor retry is not the core's ANCHOR_RETRY".into());
    }
    let mut pipe = redis::pipe();
    let mut queued = 0;
    for chunk in indexes.chunks(CHUNK) {
        let mut zq = redis::cmd("ZADD");
        let mut zd = redis::cmd("ZADD");
        let mut hs = redis::cmd("HSET");
        let mut zr = redis::cmd("ZADD");
        let mut zu = redis::cmd("ZADD");
        zq.arg(&wk.queue);
        zd.arg(&wk.deadlines);
        hs.arg(keys.players());
        zr.arg(&wk.ratings);
        zu.arg(&wk.due);
        for &i in chunk {
            let p = name(i);
            let seq = i as u64 + 1;
            zq.arg(seq).arg(&p);
            zd.arg(deadline).arg(&p);
            hs.arg(&p)
                .arg(ticket(world.name.as_str(), seq, joined, deadline));
            zr.arg(rating_of(i).to_string())
                .arg(format!("{seq:012}:{p}"));
            zu.arg(due).arg(&p);
        }
        for c in [zq, zd, hs, zr, zu] {
            pipe.add_command(c).ignore();
        }
        queued += 5;
        if queued >= PER_PIPELINE {
            pipe.query_async::<()>(conn)
                .await
                .ctx("fill the rated queue")?;
            pipe = redis::pipe();
            queued = 0;
        }
    }
    pipe.query_async::<()>(conn)
        .await
        .ctx("fill the rated queue")
}

/// Everything under `prefix` (a small namespace), key by key, as text.
async fn snapshot(conn: &mut MultiplexedConnection, prefix: &str) -> Res<BTreeMap<String, String>> {
    let keys: Vec<String> = redis::cmd("KEYS")
        .arg(format!("{prefix}*"))
        .query_async(conn)
        .await
        .ctx("KEYS")?;
    let mut out = BTreeMap::new();
    for key in keys {
        let kind: String = redis::cmd("TYPE")
            .arg(&key)
            .query_async(conn)
            .await
            .ctx("TYPE")?;
        let content: Value = match kind.as_str() {
            "string" => redis::cmd("GET").arg(&key).query_async(conn).await,
            "hash" => redis::cmd("HGETALL").arg(&key).query_async(conn).await,
            "zset" => {
                redis::cmd("ZRANGE")
                    .arg(&key)
                    .arg(0)
                    .arg(-1)
                    .arg("WITHSCORES")
                    .query_async(conn)
                    .await
            }
            other => return Err(format!("{key}: unexpected type {other}")),
        }
        .ctx("read a key")?;
        out.insert(key, format!("{kind} {content:?}"));
    }
    Ok(out)
}

async fn delete_prefix(conn: &mut MultiplexedConnection, prefix: &str) -> Res<()> {
    let keys: Vec<String> = redis::cmd("KEYS")
        .arg(format!("{prefix}*"))
        .query_async(conn)
        .await
        .ctx("KEYS")?;
    if !keys.is_empty() {
        redis::cmd("DEL")
            .arg(keys)
            .query_async::<()>(conn)
            .await
            .ctx("DEL")?;
    }
    Ok(())
}

/// The raw fill must write what a real rated join writes: one real join of
/// `name(0)` rated `rating_of(0)` in a scratch namespace, then the fill of
/// the same player with the same join time; every key must match exactly.
pub(super) async fn check_fill_matches_join(
    conn: &mut MultiplexedConnection,
    url: &str,
    rules: &str,
) -> Res<()> {
    let (store, world) = store(url, "rcheck", rules, true)?;
    let prefix = store.keys().prefix().to_owned();
    delete_prefix(conn, &prefix).await?;
    let p = PlayerId::parse(&name(0)).ctx("player id")?;
    let rating = Rating::new(rating_of(0)).ctx("rating")?;
    match store
        .join(&world, &p, None, Some(rating))
        .await
        .ctx("rated probe join")?
    {
        JoinOutcome::Queued(pos) if pos.rated.map(|t| t.rating) == Some(rating) => {}
        other => return Err(format!("rated probe join: got {other:?}")),
    }
    let real = snapshot(conn, &prefix).await?;
    let stored: String = redis::cmd("HGET")
        .arg(store.keys().players())
        .arg(name(0))
        .query_async(conn)
        .await
        .ctx("read the probe ticket")?;
    let joined = stored
        .split(' ')
        .nth(2)
        .and_then(|v| v.parse::<u64>().ok())
        .ok_or_else(|| format!("a real rated join stored the ticket {stored:?}"))?;
    delete_prefix(conn, &prefix).await?;
    write_tickets(conn, store.keys(), &world, &[0], joined).await?;
    redis::cmd("SET")
        .arg(store.keys().ticket_seq())
        .arg(1)
        .query_async::<()>(conn)
        .await
        .ctx("SET ticket-seq")?;
    let filled = snapshot(conn, &prefix).await?;
    delete_prefix(conn, &prefix).await?;
    if real != filled {
        return Err(format!(
            "the rated fill does not write what lua/join.lua writes; update tools/bench/src/rated/fill.rs.\n  \
             real join: {real:?}\n  fill:      {filled:?}"
        ));
    }
    Ok(())
}
