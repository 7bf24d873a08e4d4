-- conn_heartbeat.lua: a client's heartbeat on its WebSocket ($default route):
-- renews the connection's registration and the player's presence.
--
-- KEYS[1]  conns          HASH conn id -> "<registered_ms> <player>"
-- KEYS[2]  conn_expiry    ZSET conn id -> when the registration lapses (ms)
-- KEYS[3]  player_conns   HASH player -> space-separated conn ids
-- KEYS[4]  presence       ZSET player -> latest expiry among their connections
--
-- ARGV[1]  connection id
-- ARGV[2]  presence timeout ms (> 0)
--
-- Reply: { player_or_empty, expires_at_ms }
--   An empty player means the connection is not registered (it lapsed, or
--   was evicted): nothing was written, and the caller closes the socket so
--   the client reconnects with a token.

if #KEYS ~= 4 then return fail('expected 4 keys') end
local conn_id = ARGV[1]
local ttl = int_arg(ARGV[2])
if conn_id == nil or conn_id == '' then return fail('connection id is empty') end
if ttl == nil or ttl == 0 then return fail('lifetime must be an integer > 0') end

local player = decode_conn(redis.call('HGET', KEYS[1], conn_id))
if not player then
  return { '', 0 }
end
local now = now_ms()
local expires = now + ttl
redis.call('ZADD', KEYS[2], expires, conn_id)
-- GT: another connection may already keep the player present for longer.
redis.call('ZADD', KEYS[4], 'GT', expires, player)
return { player, expires }
