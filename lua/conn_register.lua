-- conn_register.lua: record a WebSocket connection for a player. A player may
-- hold several connections (tabs, devices), up to a cap; past it the oldest
-- is dropped from the registry (API Gateway closes idle ones on its own).
--
-- KEYS[1]  conns          HASH conn id -> player
-- KEYS[2]  conn_expiry    ZSET conn id -> expiry ms
-- KEYS[3]  player_conns   HASH player -> space-separated conn ids
--
-- ARGV[1]  connection id (no spaces)
-- ARGV[2]  player id
-- ARGV[3]  registry lifetime ms (> 0; at least API Gateway's 2 h maximum)
-- ARGV[4]  most connections per player (> 0)
--
-- Reply: { connection_count, evicted_conn_id_or_empty }

if #KEYS ~= 3 then return fail('expected 3 keys') end
local conn_id, player = ARGV[1], ARGV[2]
local ttl = int_arg(ARGV[3])
local cap = int_arg(ARGV[4])
if conn_id == nil or conn_id == '' or string.find(conn_id, '%s') then return fail('bad connection id') end
if player == nil or player == '' then return fail('player id is empty') end
if ttl == nil or ttl == 0 then return fail('lifetime must be an integer > 0') end
if cap == nil or cap == 0 then return fail('cap must be an integer > 0') end

local now = now_ms()
local previous = redis.call('HGET', KEYS[1], conn_id)
if previous and previous ~= player then
  -- A reused id (only in tests or local stacks): detach it from its old owner.
  local list = redis.call('HGET', KEYS[3], previous) or ''
  local kept = {}
  for id in string.gmatch(list, '%S+') do
    if id ~= conn_id then kept[#kept + 1] = id end
  end
  if #kept > 0 then
    redis.call('HSET', KEYS[3], previous, table.concat(kept, ' '))
  else
    redis.call('HDEL', KEYS[3], previous)
  end
end

local ids = {}
for id in string.gmatch(redis.call('HGET', KEYS[3], player) or '', '%S+') do
  if id ~= conn_id then ids[#ids + 1] = id end
end
local evicted = ''
if #ids >= cap then
  evicted = table.remove(ids, 1)
  redis.call('HDEL', KEYS[1], evicted)
  redis.call('ZREM', KEYS[2], evicted)
end
ids[#ids + 1] = conn_id
redis.call('HSET', KEYS[1], conn_id, player)
redis.call('ZADD', KEYS[2], now + ttl, conn_id)
redis.call('HSET', KEYS[3], player, table.concat(ids, ' '))
return { #ids, evicted }
