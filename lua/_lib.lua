-- _lib.lua: basic helpers shared by the operation scripts.
--
-- The library files are not scripts of their own: the Rust crate loads them,
-- in this order, once as a Redis function library with one function per
-- operation script (and, for servers without functions, prepends them to
-- every operation script), so each operation stays a single FCALL (or
-- EVALSHA) with no cross-script calls (see shared/src/scripts.rs):
--   _lib.lua       arguments, chunking, tickets' encoding, statistics, outbox
--   _tickets.lua   removing tickets (solo and party), sweeps, parties, notes
--   _presence.lua  the connection registry and presence
--   _teams.lua     packing tickets into teams
--   _proposals.lua ready checks: match proposals, accepted or cancelled
--   _matching.lua  recording matches; FIFO matching
--   _rated.lua     rated matching (windows, anchors)
--   _config.lua    a world's configuration (one argument, parsed once)
--
-- Conventions every script follows:
--   * All keys arrive in KEYS and share the namespace hash tag, so a script runs
--     unchanged on a single node, on Redis Cluster and on ElastiCache Serverless.
--   * Every input is validated before the first write: Redis does not roll back a
--     script that fails half-way, so a late error would leave a partial write.
--   * Replies are flat arrays of strings and integers (never string-keyed tables,
--     which Redis turns into empty replies). Match records travel as JSON.
--   * Time is Redis server time (TIME), so Lambdas with skewed clocks agree.

-- unpack() of more than ~8000 values fails ("too many results to unpack"), so
-- variadic commands are issued in chunks of this many arguments.
local CHUNK = 4000

local function fail(msg)
  return redis.error_reply('ERR_ARG ' .. msg)
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

-- A ticket is stored as "<world> <seq> <joined_ms> <deadline_ms> <data>" in
-- the tickets hash: world names contain no spaces (validated in Rust) and the
-- optional data JSON is everything after the fourth space.
local function encode_ticket(world, seq, joined, deadline, data)
  return world .. ' ' .. seq .. ' ' .. joined .. ' ' .. deadline .. ' ' .. data
end

local function decode_ticket(s)
  local world, seq, joined, deadline, data = string.match(s, '^(%S+) (%d+) (%d+) (%d+) (.*)$')
  return world, tonumber(seq), tonumber(joined), tonumber(deadline), data
end

-- A number as Redis and JSON should see it: integers without a fraction,
-- others with enough digits to round-trip.
local function num(x)
  if x == math.floor(x) and math.abs(x) < 1e15 then
    return string.format('%d', x)
  end
  return string.format('%.17g', x)
end

-- Rated worlds keep two more ZSETs next to the queue: `ratings` holds
-- "<seq, 12 digits>:<ticket>" -> rating (the zero-padded sequence makes
-- equally rated tickets sort oldest first), and `due` holds ticket -> when it
-- is next tried as an anchor (ms). FIFO worlds leave both empty.
local SEQ_DIGITS = 12

local function rating_member(seq, ticket)
  return string.format('%012d', seq) .. ':' .. ticket
end

local function member_ticket(member)
  return string.sub(member, SEQ_DIGITS + 2)
end

-- Match-rate statistics of one world, for wait estimates, in O(1): a HASH
-- with a two-bucket sliding window (as rate limiters use) of `window` ms.
-- Fields: start (ms the current bucket began), cur and prev (players matched
-- in the current and previous bucket) and first (ms of the first match
-- counted, so a young history is not averaged over the whole window).
-- Returns players matched within the last `window` ms (prev weighted by its
-- overlap) and the span they were matched over.
local function wait_stats(rate_key, now, window)
  local v = redis.call('HMGET', rate_key, 'start', 'cur', 'prev', 'first')
  local start, cur, prev, first = tonumber(v[1]), tonumber(v[2]) or 0, tonumber(v[3]) or 0, tonumber(v[4])
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

-- Adds `players` matched now to a world's rate statistics.
local function record_rate(rate_key, now, window, players)
  local v = redis.call('HMGET', rate_key, 'start', 'cur', 'prev', 'first')
  local start, cur, prev, first = tonumber(v[1]), tonumber(v[2]) or 0, tonumber(v[3]) or 0, tonumber(v[4])
  if start == nil or window == 0 or now >= start + 2 * window then
    start, cur, prev, first = now, 0, 0, now
  elseif now >= start + window then
    prev, cur, start = cur, 0, start + window
  end
  if first == nil or first < now - 2 * window then first = now end
  redis.call('HSET', rate_key, 'start', start, 'cur', cur + players, 'prev', prev, 'first', first)
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
local function outbox_add(outbox_key, ids, count, now)
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

-- Ticket ids: a solo ticket's id is its player's id; a party's ticket id is
-- PARTY_MARK followed by the party id. Player ids never contain control
-- characters, so the two never collide.
local PARTY_MARK = '\1'

local function is_party_ticket(t)
  return string.byte(t, 1) == 1
end
