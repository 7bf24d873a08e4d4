-- join.lua: put a player in a world's queue (at most one ticket per player in
-- the whole namespace) and, when instant matching is on and the queue holds a
-- full group, form the match in the same atomic step.
--
-- KEYS[1]  tickets        HASH player -> "<world> <seq> <joined_ms> <deadline_ms> <data>"
-- KEYS[2]  ticket_seq     STRING counter giving every ticket its FIFO order
-- KEYS[3]  matches        HASH match id -> match record JSON
-- KEYS[4]  match_expiry   ZSET match id -> expiry ms
-- KEYS[5]  player_match   HASH player -> id of the player's latest match
-- KEYS[6]  outbox         ZSET notification id -> due ms
-- KEYS[7]  match_seq      STRING counter for match ids
-- KEYS[8..] for every configured world, in ARGV order: queue (ZSET player ->
--           seq), deadlines (ZSET player -> deadline ms), rate (HASH of match
--           rate statistics, see _lib.lua): three keys per world.
--
-- ARGV[1]  player id
-- ARGV[2]  index (1-based) of the world to join among the configured worlds
-- ARGV[3]  team size N (>= 2)
-- ARGV[4]  ticket lifetime ms (> 0)
-- ARGV[5]  ticket data JSON, "" for none (already validated and size-capped)
-- ARGV[6]  instant match: "1" on, "0" off
-- ARGV[7]  match record lifetime ms (> 0)
-- ARGV[8]  queue capacity (0 = unbounded)
-- ARGV[9]  statistics window ms
-- ARGV[10..] configured world names, one per world key triple
--
-- Reply: { status, world, position, queue_size, window_players, window_span_ms }
--        and, for MATCHED only, { match_count, match_json..., notification_id... }
--   status "QUEUED"  : the ticket waits at `position` (1-based from the front)
--   status "MATCHED" : the join formed matches: the reply goes on with
--                      { match_count, match_json..., notification_id... },
--                      every record formed in this call (one holds the
--                      player) and the outbox ids announcing them
--   status "ALREADY" : the player already waits in `world` at `position`
--   status "STALE"   : the player holds a ticket of `world`, which is no longer
--                      configured; nothing was written (the caller drops that
--                      ticket with drop_stale_ticket.lua and joins again)
--   status "FULL"    : the queue is at capacity; nothing was written
-- window_* are the world's wait statistics (see _lib.lua wait_stats).

local player = ARGV[1]
local world_index = int_arg(ARGV[2])
local team = int_arg(ARGV[3])
local ticket_ttl = int_arg(ARGV[4])
local data = ARGV[5]
local instant = ARGV[6]
local match_ttl = int_arg(ARGV[7])
local capacity = int_arg(ARGV[8])
local window = int_arg(ARGV[9])
local worlds = #ARGV - 9

if player == nil or player == '' then return fail('player id is empty') end
if worlds < 1 or #KEYS ~= 7 + 3 * worlds then return fail('world keys do not match world names') end
if world_index == nil or world_index < 1 or world_index > worlds then return fail('world index out of range') end
if team == nil or team < 2 then return fail('team size must be an integer >= 2') end
if ticket_ttl == nil or ticket_ttl == 0 then return fail('ticket lifetime must be > 0') end
if match_ttl == nil or match_ttl == 0 then return fail('match lifetime must be > 0') end
if capacity == nil then return fail('capacity must be an integer >= 0') end
if window == nil then return fail('window must be an integer >= 0') end
if instant ~= '0' and instant ~= '1' then return fail('instant must be 0 or 1') end

local tickets = KEYS[1]
local function world_keys(i)
  local base = 7 + 3 * (i - 1)
  return KEYS[base + 1], KEYS[base + 2], KEYS[base + 3]
end
local world = ARGV[9 + world_index]
local queue, deadlines, rate = world_keys(world_index)
local now = now_ms()

-- One ticket per player in the whole namespace.
local existing = redis.call('HGET', tickets, player)
if existing then
  local other = decode_ticket(existing)
  local position, size = 0, 0
  for i = 1, worlds do
    if ARGV[9 + i] == other then
      local q, _, r = world_keys(i)
      local rank = redis.call('ZRANK', q, player)
      if rank then position = rank + 1 end
      size = redis.call('ZCARD', q)
      local wp, ws = wait_stats(r, now, window)
      return { 'ALREADY', other, position, size, wp, ws }
    end
  end
  -- The ticket belongs to a world that is no longer configured: its keys are
  -- not in KEYS, so the caller removes it with a script that declares them.
  return { 'STALE', other or '', 0, 0, 0, 0 }
end

local size = redis.call('ZCARD', queue)
if capacity > 0 and size >= capacity then
  local wp, ws = wait_stats(rate, now, window)
  return { 'FULL', world, 0, size, wp, ws }
end

-- All checks passed: from here on the script only writes.
local seq = redis.call('INCR', KEYS[2])
local deadline = now + ticket_ttl
redis.call('ZADD', queue, seq, player)
redis.call('ZADD', deadlines, deadline, player)
redis.call('HSET', tickets, player, encode_ticket(world, seq, now, deadline, data))

-- The new ticket has the highest sequence, so it is last: rank `size`. The
-- reply is computed rather than read back, to keep the hot path short.
local records, ids = {}, {}
if instant == '1' and size + 1 >= team then
  records, ids = form_matches({
    queue = queue, deadlines = deadlines, tickets = tickets, matches = KEYS[3],
    match_expiry = KEYS[4], player_match = KEYS[5], outbox = KEYS[6],
    rate = rate, match_seq = KEYS[7],
  }, world, team, 0, match_ttl, now, window, size + 1)
end
local taken = #records * team
if size < taken then
  -- A player's match carries its own wait; no statistics needed.
  local reply = { 'MATCHED', world, 0, size + 1 - taken, 0, 0, #records }
  local n = 7
  for _, r in ipairs(records) do
    n = n + 1
    reply[n] = r
  end
  for _, id in ipairs(ids) do
    n = n + 1
    reply[n] = id
  end
  return reply
end
local wp, ws = wait_stats(rate, now, window)
return { 'QUEUED', world, size - taken + 1, size + 1 - taken, wp, ws }
