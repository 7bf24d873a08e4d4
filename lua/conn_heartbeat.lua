-- conn_heartbeat.lua: a client's heartbeat on its WebSocket ($default route):
-- renews the connection's registration and the player's presence.
--
-- KEYS   conns conn_expiry presence
-- ARGV   conn     the connection id
-- ARGV   ttl      presence timeout ms (> 0)
--
-- Reply: { player_or_empty, expires_at_ms }
--   An empty player means the connection is not registered (it lapsed, or
--   was evicted): nothing was written, and the caller closes the socket so
--   the client reconnects with a token.

local conn_id = args.conn
local ttl = int_arg(args.ttl)
if conn_id == '' then return fail('connection id is empty') end
if ttl == nil or ttl == 0 then return fail('lifetime must be an integer > 0') end

local player = Presence.decode_conn(redis.call('HGET', k.conns, conn_id))
if not player then
  return { '', 0 }
end
local expires = now_ms() + ttl
redis.call('ZADD', k.conn_expiry, expires, conn_id)
-- GT: another connection may already keep the player present for longer.
redis.call('ZADD', k.presence, 'GT', expires, player)
return { player, expires }
