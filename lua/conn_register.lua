-- conn_register.lua: record a WebSocket connection for a player ($connect,
-- token verified). A player may hold several connections (tabs, devices), up
-- to a cap; past it the oldest is dropped from the registry and returned so
-- the caller closes it (a registered socket is one that hears its matches).
-- The registration lapses unless a heartbeat renews it (conn_heartbeat.lua).
-- A connection that opens just after its player's match formed may have
-- missed the MATCH_FOUND push (the connect race): it gets its own copy,
-- unless the match's own notification will still reach it (not claimed yet,
-- or waiting to retry this player): no socket hears a match twice. A
-- connection that opens while its player's match is assigned and not
-- finished gets the match and its assignment (MATCH_ASSIGNED), whenever it
-- opens, unless the assignment's own notification will still reach it.
--
-- KEYS   players matches match_expiry match_lifecycle outbox outbox_meta conns
-- KEYS   conn_expiry player_conns presence matcher_asleep
-- ARGV   conn     connection id (no spaces)
-- ARGV   player   the player id
-- ARGV   ttl      presence timeout ms (> 0): the registration lapses this
--                 long after the last heartbeat
-- ARGV   cap      most connections per player (> 0)
-- ARGV   replay   replay window ms: a match formed this recently is pushed
--                 to the new connection too (0 = never)
--
-- Reply: { connection_count, evicted_conn_id_or_empty, replayed_match_id_or_empty }

local conn_id, player = args.conn, args.player
local ttl = int_arg(args.ttl)
local cap = int_arg(args.cap)
local replay = int_arg(args.replay)
if conn_id == '' or string.find(conn_id, '[%s|]') then return fail('bad connection id') end
if player == '' then return fail('player id is empty') end
if ttl == nil or ttl == 0 then return fail('lifetime must be an integer > 0') end
if cap == nil or cap == 0 then return fail('cap must be an integer > 0') end
if replay == nil then return fail('replay window must be an integer >= 0') end

-- Whether the match's own MATCH_FOUND entry will still push to every
-- connection `player` has now: it was not claimed yet, or it waits (not in
-- flight) to retry this player. A claim in flight took its connection list
-- before this one existed.
local function will_reach(entry, match_id)
  if not redis.call('ZSCORE', k.outbox, entry) then return false end
  local meta = redis.call('HGET', k.outbox_meta, entry)
  if not meta then return true end
  local in_flight, pending = string.match(meta, '^%d+:%d+:(%d):([%d,]*)$')
  if in_flight ~= '0' then return false end
  if pending == '' then return true end
  local ok, record = pcall(cjson.decode, redis.call('HGET', k.matches, match_id) or '')
  if not ok or type(record) ~= 'table' or type(record.participants) ~= 'table' then return false end
  for i, p in ipairs(record.participants) do
    if p == player then
      for n in string.gmatch(pending, '%d+') do
        if tonumber(n) == i then return true end
      end
    end
  end
  return false
end

local now = now_ms()
local previous = Presence.decode_conn(redis.call('HGET', k.conns, conn_id))
if previous and previous ~= player then
  -- A reused id (only in tests or local stacks): detach it from its old owner.
  local kept = {}
  for id in string.gmatch(redis.call('HGET', k.player_conns, previous) or '', '%S+') do
    if id ~= conn_id then kept[#kept + 1] = id end
  end
  if #kept > 0 then
    redis.call('HSET', k.player_conns, previous, table.concat(kept, ' '))
  else
    redis.call('HDEL', k.player_conns, previous)
  end
  redis.call('ZREM', k.conn_expiry, conn_id)
  Presence.refresh_presence(k, previous, kept)
end

local ids = {}
for id in string.gmatch(redis.call('HGET', k.player_conns, player) or '', '%S+') do
  if id ~= conn_id then ids[#ids + 1] = id end
end
local evicted = ''
if #ids >= cap then
  evicted = table.remove(ids, 1)
  redis.call('HDEL', k.conns, evicted)
  redis.call('ZREM', k.conn_expiry, evicted)
end
ids[#ids + 1] = conn_id
redis.call('HSET', k.conns, conn_id, now .. ' ' .. player)
redis.call('ZADD', k.conn_expiry, now + ttl, conn_id)
redis.call('HSET', k.player_conns, player, table.concat(ids, ' '))
Presence.refresh_presence(k, player, ids)

local replayed = ''
local kind, match_id = Players.player_state(redis.call('HGET', k.players, player))
if kind == 'match' and replay > 0 and Lifecycle.live_record(k, match_id, now) then
  -- Match ids start with the hex ms they were formed at.
  local formed = tonumber(string.match(match_id, '^(%x+)-'), 16)
  local recent = formed and formed >= now - replay and not will_reach('M|' .. match_id, match_id)
  local life = Lifecycle.load_lifecycle(k, match_id)
  local playing = life.state == 'ASSIGNED' and not will_reach('A|' .. match_id, match_id)
  if recent or playing then
    replayed = match_id
    outbox_add(k.outbox, { 'C|' .. match_id .. '|' .. conn_id }, 1, now)
  end
end
return { #ids, evicted, replayed }
