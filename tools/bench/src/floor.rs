//! Write floors: the least a join script can do, for the throughput rows to
//! compare against. One EVALSHA per join that writes exactly the entries a
//! queued join writes (`lua/join.lua`) and nothing else: no duplicate check,
//! no capacity, presence or rating look-up, no matching, no statistics, no
//! reply beyond the sequence. Row 2 uses the FIFO form (INCR ticket-seq, ZADD
//! queue, ZADD deadlines, HSET tickets), row 6c the rated form (the same plus
//! ZADD ratings and ZADD due). Every key is in KEYS, on the namespace's slot.

use std::time::{Duration, Instant};

use redis::aio::ConnectionManager;
use redis::Script;
use shared::scripts::SCRIPTS;
use shared::{KeyLayout, MatchStore, World};

use crate::common::{Ctx, Res};

/// The floor script. Timestamps come from Redis's clock (TIME), as the real
/// join's do. With six keys it also writes the rated entries.
const SCRIPT: &str = r"
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local player, world = ARGV[1], ARGV[2]
local seq = redis.call('INCR', KEYS[1])
local deadline = now + tonumber(ARGV[3])
redis.call('ZADD', KEYS[2], seq, player)
redis.call('ZADD', KEYS[3], deadline, player)
redis.call('HSET', KEYS[4], player, world .. ' ' .. seq .. ' ' .. now .. ' ' .. deadline .. ' ')
if KEYS[6] then
  redis.call('ZADD', KEYS[5], ARGV[4], string.format('%012d', seq) .. ':' .. player)
  redis.call('ZADD', KEYS[6], now + tonumber(ARGV[5]), player)
end
return seq
";

/// A rating for the `i`-th join of task `t` (distinct players, distinct
/// ratings), or none in a FIFO world.
pub type RatingFn = fn(usize, u64) -> f64;

/// One world's floor: the keys and fixed arguments of every call.
#[derive(Clone)]
pub struct Floor {
    script: Script,
    keys: Vec<String>,
    world: String,
    ttl_ms: u64,
    /// Rated: (the rating of each join, the anchor retry in ms).
    rated: Option<(RatingFn, u64)>,
    /// The join's own calls ([`Floor::join_calls`]): the join's arguments
    /// after the player, in place of the world and the lifetime.
    join_args: Option<Vec<String>>,
}

impl Floor {
    /// What a queued FIFO join writes.
    pub fn fifo(keys: &KeyLayout, world: &str, ttl_ms: u64) -> Res<Self> {
        let wk = keys.world(&shared::WorldName::parse(world).ctx("world name")?);
        Ok(Self {
            script: Script::new(SCRIPT),
            keys: vec![keys.ticket_seq(), wk.queue, wk.deadlines, keys.players()],
            world: world.to_owned(),
            ttl_ms,
            rated: None,
            join_args: None,
        })
    }

    /// A queued FIFO join's own Redis calls, in its order (TIME, HGET the
    /// player's state, HMGET the world's statistics as `lua/_lib.lua`
    /// world_stats reads them, ZCARD the queue, INCR, ZADD queue, ZADD
    /// deadlines, HSET the ticket, HGET the player's connections), with the
    /// join's own KEYS and ARGV (`SCRIPTS.join`'s invocation: every key a join
    /// declares) and a reply of its QUEUED shape, and none of its logic: what
    /// the Lua around the calls is measured against.
    pub fn join_calls(store: &MatchStore, world: &World) -> Res<Self> {
        let keys = store.keys();
        let wk = keys.world(&world.name);
        let mut inv = SCRIPTS.join.invocation(keys, &[&world.name]);
        let config = store.world_config_arg(world).ctx("world configuration")?;
        let tail = ["", "", "", config.as_str(), "0"];
        inv.arg("p");
        for a in tail {
            inv.arg(a);
        }
        let declared = inv.keys();
        let at = |key: &str| {
            declared
                .iter()
                .position(|k| k == key)
                .map(|i| i + 1)
                .ok_or_else(|| format!("the join does not declare {key}"))
        };
        let (players, seq, conns) = (
            at(&keys.players())?,
            at(&keys.ticket_seq())?,
            at(&keys.player_conns())?,
        );
        let (queue, deadlines, stats) = (at(&wk.queue)?, at(&wk.deadlines)?, at(&wk.stats)?);
        let ttl = u64::try_from(world.ticket_ttl.as_millis()).unwrap_or(u64::MAX);
        let script = format!(
            "local t = redis.call('TIME')\n\
             local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)\n\
             local player, world = ARGV[1], ARGV[#ARGV]\n\
             redis.call('HGET', KEYS[{players}], player)\n\
             redis.call('HMGET', KEYS[{stats}], 'start', 'cur', 'prev', 'first', 'parties', 'backfills')\n\
             local size = redis.call('ZCARD', KEYS[{queue}])\n\
             local seq = redis.call('INCR', KEYS[{seq}])\n\
             local deadline = now + {ttl}\n\
             redis.call('ZADD', KEYS[{queue}], seq, player)\n\
             redis.call('ZADD', KEYS[{deadlines}], deadline, player)\n\
             redis.call('HSET', KEYS[{players}], player, world .. ' ' .. seq .. ' ' .. now .. ' ' .. deadline)\n\
             local conns = redis.call('HGET', KEYS[{conns}], player) or ''\n\
             return {{ 'QUEUED', world, size + 1, size + 1, 0, 0, '', conns, 0 }}\n"
        );
        let mut args: Vec<String> = inv.argv();
        args.remove(0);
        Ok(Self {
            script: Script::new(&script),
            keys: declared,
            world: world.name.to_string(),
            ttl_ms: ttl,
            rated: None,
            join_args: Some(args),
        })
    }

    /// What a queued rated join writes.
    pub fn rated(
        keys: &KeyLayout,
        world: &str,
        ttl_ms: u64,
        retry_ms: u64,
        rating: RatingFn,
    ) -> Res<Self> {
        let mut floor = Self::fifo(keys, world, ttl_ms)?;
        let wk = keys.world(&shared::WorldName::parse(world).ctx("world name")?);
        floor.keys.extend([wk.ratings, wk.due]);
        floor.rated = Some((rating, retry_ms));
        Ok(floor)
    }

    /// One floor join of `player` (the `i`-th of task `t`).
    pub async fn call(
        &self,
        conn: &mut ConnectionManager,
        player: &str,
        t: usize,
        i: u64,
    ) -> Res<u64> {
        let mut inv = self.script.prepare_invoke();
        for k in &self.keys {
            inv.key(k);
        }
        inv.arg(player);
        if let Some(args) = &self.join_args {
            for a in args {
                inv.arg(a);
            }
            let _: redis::Value = inv.invoke_async(conn).await.ctx("EVALSHA join calls")?;
            return Ok(0);
        }
        inv.arg(&self.world).arg(self.ttl_ms);
        if let Some((rating, retry_ms)) = self.rated {
            inv.arg(rating(t, i).to_string()).arg(retry_ms);
        }
        inv.invoke_async(conn).await.ctx("EVALSHA write floor")
    }
}

/// `c` tasks sending floor joins of distinct players (`<prefix>t<task>-<i>`)
/// through one connection manager for `window`, as row 2 drives joins.
pub async fn run_floor(
    conn: &ConnectionManager,
    floor: &Floor,
    prefix: &str,
    c: usize,
    window: Duration,
) -> Res<(u64, Duration)> {
    let start = Instant::now();
    let deadline = start + window;
    let mut tasks = Vec::with_capacity(c);
    for t in 0..c {
        let mut conn = conn.clone();
        let floor = floor.clone();
        let prefix = format!("{prefix}t{t}-");
        tasks.push(tokio::spawn(async move {
            let mut done = 0u64;
            while Instant::now() < deadline {
                floor
                    .call(&mut conn, &format!("{prefix}{done}"), t, done)
                    .await?;
                done += 1;
            }
            Ok::<u64, String>(done)
        }));
    }
    let mut total = 0;
    for t in tasks {
        total += t.await.ctx("floor task")??;
    }
    Ok((total, start.elapsed()))
}
