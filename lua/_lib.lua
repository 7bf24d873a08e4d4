-- _lib.lua: basic helpers shared by the operation scripts.
--
-- The library files are not scripts of their own: the Rust crate loads them
-- (this file first, then each module after the modules its `-- @include`
-- line names: library_order in shared/src/scripts/mod.rs) once as a Redis
-- function library with one function per operation script, and, for servers
-- without functions, prepends them to every operation script. Each
-- operation stays a single FCALL (or EVALSHA) with no cross-script calls.
-- This file's helpers are plain locals every file uses; every other
-- library file is a module, one table (Players for _players.lua) whose own
-- locals live in a do block, reached as Players.name: Lua 5.1 allows 200
-- locals in one function, and the library is one chunk.
--
-- Conventions every script follows:
--   * Keys and arguments are reached by name: `k.players`, `k.queue`,
--     `args.player`. The accessors are generated in front of each script
--     from its declaration in shared/src/scripts/mod.rs (the key names come from
--     shared/src/keys.rs); no script indexes its keys or arguments by number, and a
--     name that was not declared is an error, not a nil.
--   * All keys are declared to Redis and share the namespace hash tag, so a script runs
--     unchanged on a single node, on Redis Cluster and on ElastiCache Serverless.
--     A call is given only the keys its worlds' features reach (the first
--     argument names the features; shared/src/keys.rs Features): a path that
--     may run in any world asks has(k, name) first.
--   * Every input is validated before the first write: Redis does not roll back a
--     script that fails half-way, so a late error would leave a partial write.
--   * Replies are flat arrays of strings and integers (never string-keyed tables,
--     which Redis turns into empty replies), a status first and then exactly
--     that status's fields. Match records travel as JSON.
--   * Time is Redis server time (TIME), so Lambdas with skewed clocks agree.
--   * Helpers that need more than a few values take a table: `ctx` (a world's
--     call: k = its keys, world = its name, now, cfg = its configuration when
--     the caller has it) and named options.

-- unpack() of more than ~8000 values fails ("too many results to unpack"), so
-- variadic commands are issued in chunks of this many arguments.
local CHUNK = 4000

local function fail(msg)
  return redis.error_reply('ERR_ARG ' .. msg)
end

-- Tables of keys and arguments: reading a name that is not there is a bug
-- (an undeclared key would silently be nil), so it raises.
local STRICT = {
  __index = function(_, name)
    error('no key or argument named ' .. tostring(name) .. ' was declared for this script')
  end,
  -- Key tables are kept across calls (shared/src/scripts/declaration.rs, accessors): read only.
  __newindex = function(_, name)
    error('keys and arguments are read only: ' .. tostring(name))
  end,
}

local function strict(t)
  return setmetatable(t, STRICT)
end

-- Whether the call was given key `name`: a call passes only the keys its
-- worlds' features reach (shared/src/keys.rs Features), so a path that
-- may run in any world asks before it touches a feature's key.
local function has(k, name)
  return rawget(k, name) ~= nil
end

local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- Parses a non-negative integer argument; nil when it is not one.
local function int_arg(v)
  local n = tonumber(v)
  if n == nil or n < 0 or n ~= math.floor(n) then
    return nil
  end
  return n
end

-- Runs `cmd key args...` in chunks. `args` is a flat array; `stride` keeps
-- field/value (or score/member) pairs together across chunk borders.
local function chunked(cmd, key, args, stride)
  local per = CHUNK - (CHUNK % stride)
  local n = #args
  local i = 1
  while i <= n do
    local last = math.min(i + per - 1, n)
    redis.call(cmd, key, unpack(args, i, last))
    i = last + 1
  end
end

-- A number as Redis and JSON should see it: integers without a fraction,
-- others with enough digits to round-trip.
local function num(x)
  if x == math.floor(x) and math.abs(x) < 1e15 then
    return string.format('%d', x)
  end
  return string.format('%.17g', x)
end

-- A world's statistics (its `stats` HASH), read in one HMGET: the match
-- rate for wait estimates, in O(1), as a two-bucket sliding window (as rate
-- limiters use) of `window` ms -- start (ms the current bucket began), cur
-- and prev (players matched in the current and previous bucket), first (ms
-- of the first match counted, so a young history is not averaged over the
-- whole window) -- parties (party tickets waiting: while there are
-- none, a one-team FIFO world takes its fast path) and backfills (open
-- backfills: while there are none, a join tries none).
local function world_stats(stats_key)
  local v = redis.call('HMGET', stats_key, 'start', 'cur', 'prev', 'first', 'parties', 'backfills')
  return {
    start = tonumber(v[1]), cur = tonumber(v[2]) or 0, prev = tonumber(v[3]) or 0,
    first = tonumber(v[4]), parties = tonumber(v[5]) or 0, backfills = tonumber(v[6]) or 0,
  }
end

-- Players matched within the last `window` ms (prev weighted by its
-- overlap) and the span they were matched over, from world_stats.
local function wait_estimate(s, now, window)
  local start, cur, prev, first = s.start, s.cur, s.prev, s.first
  if start == nil or first == nil or window == 0 then
    return 0, 0
  end
  if now >= start + 2 * window then
    return 0, 0
  end
  if now >= start + window then
    -- The current bucket has become the previous one.
    prev, cur, start = cur, 0, start + window
  end
  local overlap = 1 - (now - start) / window
  local players = math.floor(prev * overlap + cur)
  return players, math.min(window, now - math.max(first, now - window))
end

local function wait_stats(stats_key, now, window)
  return wait_estimate(world_stats(stats_key), now, window)
end

-- Adds `players` matched now to a world's rate statistics.
local function record_rate(stats_key, now, window, players)
  local v = redis.call('HMGET', stats_key, 'start', 'cur', 'prev', 'first')
  local start, cur, prev, first = tonumber(v[1]), tonumber(v[2]) or 0, tonumber(v[3]) or 0, tonumber(v[4])
  if start == nil or window == 0 or now >= start + 2 * window then
    start, cur, prev, first = now, 0, 0, now
  elseif now >= start + window then
    prev, cur, start = cur, 0, start + window
  end
  if first == nil or first < now - 2 * window then first = now end
  redis.call('HSET', stats_key, 'start', start, 'cur', cur + players, 'prev', prev, 'first', first)
end

-- Outbox entry ids. Only the scripts make them; Rust parses them
-- (shared/src/domain/notification.rs). Match ids and world names never
-- contain '|'; a player id is always last, so it may.
--   "M|<matchId>"           MATCH_FOUND to every participant of a match
--   "C|<matchId>|<conn>"    MATCH_FOUND again, to one connection that opened
--                           just after the match formed (the connect race)
--   "X|<world>|<player>"    TICKET_EXPIRED: the ticket outlived its lifetime
--   "G|<world>|<player>"    TICKET_REMOVED: the player had no live connection
--                           in a world that requires presence
--   "N|<note>"              any other message, stored with its recipients in
--                           the notes hash (see add_note): party updates and
--                           cancellations, a party ticket's expiry or removal
-- The meta hash holds "<attempts>:<first_attempt_ms>:<in_flight>:<pending>",
-- written by the first claim (a new entry is only a ZADD, which keeps forming
-- matches cheap): <in_flight> is 1 from a claim until its settlement, and
-- <pending> lists the 1-based targets still to tell ("" = all).
-- The matcher sleeps while nothing is to be done (matcher_sleep.lua): a
-- script that makes work for it (a waiting ticket, an outbox entry, an
-- open party or backfill) calls wake_matcher(), and the first to find it
-- asleep takes the flag and has its caller wake it (the trailing value of
-- its reply: see shared/src/scripts/mod.rs). CALL is reset by every script's
-- prelude: `asleep` is its matcher_asleep key when it declares one.
local CALL = { wake = false, asleep = nil }

local function wake_matcher()
  if CALL.asleep and not CALL.wake and redis.call('DEL', CALL.asleep) == 1 then
    CALL.wake = true
  end
end

local function outbox_add(outbox_key, ids, count, now)
  wake_matcher()
  local zargs = {}
  for i = 1, count do
    zargs[2 * i - 1] = now
    zargs[2 * i] = ids[i]
  end
  if count > 0 then
    chunked('ZADD', outbox_key, zargs, 2)
  end
end

-- Notes: a message (JSON, built with cjson so it has no raw newline) and its
-- recipients, stored as "<message>\n<player>\n<player>..." (player ids never
-- contain control characters) under a counter id, and announced by one
-- "N|<id>" outbox entry; settling that entry deletes the note.
-- k: counters, notes, outbox.
local function add_note(k, players, message, now)
  if #players == 0 then return end
  local id = redis.call('HINCRBY', k.counters, 'note', 1)
  redis.call('HSET', k.notes, id, message .. '\n' .. table.concat(players, '\n'))
  outbox_add(k.outbox, { 'N|' .. id }, 1, now)
end

local function is_present(presence_key, player, now)
  local until_ms = tonumber(redis.call('ZSCORE', presence_key, player))
  return until_ms ~= nil and until_ms > now
end

-- Characters a player id may not carry between plain JSON quotes.
local NEEDS_ESCAPE = '[%c"\\/\128-\255]'

-- A player id as a JSON string. Most ids need no escaping; cjson (which
-- also escapes '/') only for the rest.
local function quote(p)
  if string.find(p, NEEDS_ESCAPE) then
    return cjson.encode(p)
  end
  return '"' .. p .. '"'
end
