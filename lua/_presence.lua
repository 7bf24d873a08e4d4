-- _presence.lua: the connection registry. conns: HASH conn id ->
-- "<registered_ms> <player>"; conn_expiry: ZSET conn id -> when the
-- registration lapses without a heartbeat; player_conns: HASH player ->
-- space-separated conn ids (oldest first; connection ids never contain
-- spaces); presence: ZSET player -> the latest expiry among the player's
-- connections (a player is present while it lies in the future).
-- @include _lib _departures _players _tickets

local Presence = {}
do

local function decode_conn(v)
  if not v then return nil, nil end
  local born, player = string.match(v, '^(%d+) (.*)$')
  return player, tonumber(born)
end

-- Recomputes a player's presence from their remaining connections.
local function refresh_presence(k, player, ids)
  local latest = nil
  for _, id in ipairs(ids) do
    local e = tonumber(redis.call('ZSCORE', k.conn_expiry, id))
    if e and (latest == nil or e > latest) then latest = e end
  end
  if latest then
    redis.call('ZADD', k.presence, latest, player)
  else
    redis.call('ZREM', k.presence, player)
  end
end

-- Removes one connection; when it was the player's last one and
-- `remove_ticket` is set, the player's ticket goes too, so nobody is matched
-- as a ghost, and a party the player belongs to is cancelled (the others are
-- told: DISCONNECTED). nctx: see _departures.lua. Returns player ('' if unknown), remaining connection
-- count and the world of a removed ticket or party ('' if none).
local function drop_connection(nctx, conn_id, remove_ticket)
  local k = nctx.k
  local player = decode_conn(redis.call('HGET', k.conns, conn_id))
  redis.call('HDEL', k.conns, conn_id)
  redis.call('ZREM', k.conn_expiry, conn_id)
  if not player then
    return '', 0, ''
  end
  local kept = {}
  local list = redis.call('HGET', k.player_conns, player)
  if list then
    for id in string.gmatch(list, '%S+') do
      if id ~= conn_id then kept[#kept + 1] = id end
    end
  end
  refresh_presence(k, player, kept)
  if #kept > 0 then
    redis.call('HSET', k.player_conns, player, table.concat(kept, ' '))
    return player, #kept, ''
  end
  redis.call('HDEL', k.player_conns, player)
  local removed = ''
  if remove_ticket then
    removed = Tickets.drop_ticket(nctx, player)
    local kind, party_id = Players.player_state(redis.call('HGET', k.players, player))
    if kind == 'party' then
      local party = Departures.cancel_party(nctx, party_id, 'DISCONNECTED', player)
      if party and removed == '' then removed = party.world end
    end
  end
  return player, 0, removed
end

-- The module's face: what other files reach as Presence.<name>.
Presence.decode_conn = decode_conn
Presence.refresh_presence = refresh_presence
Presence.drop_connection = drop_connection
end
