-- housekeeping.lua: delete expired match records (with their lifecycles and
-- the players' states that still point at them), WebSocket connections whose registration
-- lapsed (no heartbeat within the presence timeout: treated as a
-- disconnect), parties whose assembly ran out of time (PARTY_CANCELLED,
-- reason EXPIRED) and match proposals nobody finished answering in time
-- (MATCH_CANCELLED, reason TIMEOUT: see _proposals.lua), and backfills
-- whose keep-alive lapsed (or whose match's record expired). Hashes cannot
-- expire field by field on every Redis we support, so expiry is a ZSET swept
-- in batches.
--
-- KEYS   players matches match_expiry match_lifecycle outbox notes counters parties
-- KEYS   party_expiry proposals proposal_expiry conns conn_expiry player_conns presence
-- KEYS   matcher_asleep backfills backfill_expiry
-- WORLDS every configured world
-- ARGV   limit          most records of each kind to remove in this call (> 0)
-- ARGV   remove_ticket  remove the ticket of a player whose last connection
--                       expired: "1" or "0"
--
-- Reply: { matches_removed, connections_removed, tickets_removed, parties_expired,
--          proposals_expired, backfills_lapsed }

local limit = int_arg(args.limit)
local remove_ticket = args.remove_ticket
if limit == nil or limit == 0 then return fail('limit must be an integer > 0') end
if remove_ticket ~= '0' and remove_ticket ~= '1' then return fail('remove_ticket must be 0 or 1') end

local now = now_ms()
local matches = redis.call('ZRANGEBYSCORE', k.match_expiry, '-inf', now, 'LIMIT', 0, limit)
for _, id in ipairs(matches) do
  local record = redis.call('HGET', k.matches, id)
  if record then
    local ok, decoded = pcall(cjson.decode, record)
    if ok and type(decoded) == 'table' and type(decoded.participants) == 'table' then
      for _, p in ipairs(Lifecycle.match_players(decoded, Lifecycle.load_lifecycle(k, id))) do
        -- Only clear the state if the player has done nothing since.
        if redis.call('HGET', k.players, p) == id then
          redis.call('HDEL', k.players, p)
        end
      end
    end
  end
  local backfill = BackfillStore.load_backfill(k, id)
  if backfill then
    Backfill.end_backfill({ k = world_of(backfill.world), world = backfill.world, now = now, world_of = world_of }, k, backfill)
  end
end
if #matches > 0 then
  chunked('HDEL', k.matches, matches, 1)
  chunked('HDEL', k.match_lifecycle, matches, 1)
  chunked('ZREM', k.match_expiry, matches, 1)
end

local nctx = { k = k, now = now, world_of = world_of }
local conns = redis.call('ZRANGEBYSCORE', k.conn_expiry, '-inf', now, 'LIMIT', 0, limit)
local tickets_removed = 0
for _, id in ipairs(conns) do
  local _, _, removed = Presence.drop_connection(nctx, id, remove_ticket == '1')
  if removed ~= '' then tickets_removed = tickets_removed + 1 end
end
local parties_expired = Departures.sweep_parties(nctx, limit)
local proposals_expired = Proposals.sweep_proposals(nctx, limit)
-- Backfills whose server stopped renewing them.
local lapsed = redis.call('ZRANGEBYSCORE', k.backfill_expiry, '-inf', now, 'LIMIT', 0, limit)
for _, member in ipairs(lapsed) do
  local world, id = string.match(member, '^([^|]+)|(.+)$')
  local backfill = world and BackfillStore.load_backfill(k, id)
  if backfill then
    Backfill.end_backfill({ k = world_of(world), world = world, now = now, world_of = world_of }, k, backfill)
    -- Its server hears it through the match events (BackfillExpired).
    outbox_add(k.outbox, { 'V|' .. id .. '|' .. now }, 1, now)
  elseif world then
    BackfillStore.drop_backfill(k, world_of(world), world, id)
  else
    redis.call('ZREM', k.backfill_expiry, member)
  end
end
return { #matches, #conns, tickets_removed, parties_expired, proposals_expired, #lapsed }
