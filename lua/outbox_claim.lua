-- outbox_claim.lua: claim due notifications for delivery. A claimed entry is
-- hidden for `lease` ms (like a queue's visibility timeout): if the claimer
-- dies before settling it, the entry becomes due again and another matcher
-- delivers it (at-least-once; clients dedupe by match id).
--
-- KEYS[1]  outbox         ZSET notification id -> due ms
-- KEYS[2]  outbox_meta    HASH notification id -> "<attempts>:<first_attempt_ms>" (from the first claim on)
-- KEYS[3]  matches        HASH match id -> match record JSON
-- KEYS[4]  player_conns   HASH player -> space-separated conn ids
--
-- ARGV[1]  lease ms (> 0)
-- ARGV[2]  most entries to claim (> 0)
-- ARGV[3..] optional: claim exactly these ids (if due) instead of the oldest due
--
-- Reply: flat, five values per claimed entry:
--   { id, attempts (including this one), age_ms, payload, connections, ... }
--   age_ms: how long ago the first attempt was, by this server's clock (so
--   callers never compare their own clock with a Redis timestamp).
--   payload: the match record JSON for "M|" entries ("" when the record has
--   expired), "" for "X|" entries; connections: space-separated conn ids.

if #KEYS ~= 4 then return fail('expected 4 keys') end
local lease = int_arg(ARGV[1])
local limit = int_arg(ARGV[2])
if lease == nil or lease == 0 then return fail('lease must be an integer > 0') end
if limit == nil or limit == 0 then return fail('limit must be an integer > 0') end

local now = now_ms()
local ids
if #ARGV > 2 then
  ids = {}
  for i = 3, #ARGV do
    local due = tonumber(redis.call('ZSCORE', KEYS[1], ARGV[i]))
    if due and due <= now and #ids < limit then ids[#ids + 1] = ARGV[i] end
  end
else
  ids = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'LIMIT', 0, limit)
end

local reply = {}
for _, id in ipairs(ids) do
  local meta = redis.call('HGET', KEYS[2], id) or ('0:' .. now)
  local attempts, first = string.match(meta, '^(%d+):(%d+)$')
  attempts = (tonumber(attempts) or 0) + 1
  first = tonumber(first) or now
  redis.call('ZADD', KEYS[1], now + lease, id)
  redis.call('HSET', KEYS[2], id, attempts .. ':' .. first)
  local kind, ref, player = string.match(id, '^(%u)|([^|]+)|(.*)$')
  local payload = ''
  if kind == 'M' then
    payload = redis.call('HGET', KEYS[3], ref) or ''
  end
  local conns = ''
  if player then
    conns = redis.call('HGET', KEYS[4], player) or ''
  end
  reply[#reply + 1] = id
  reply[#reply + 1] = attempts
  reply[#reply + 1] = math.max(0, now - first)
  reply[#reply + 1] = payload
  reply[#reply + 1] = conns
end
return reply
