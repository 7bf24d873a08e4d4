-- housekeeping.lua: delete expired match records (and the players' pointers
-- to them), WebSocket connections whose registration lapsed (no heartbeat
-- within the presence timeout: treated as a disconnect), parties whose
-- assembly ran out of time (PARTY_CANCELLED, reason EXPIRED) and match
-- proposals nobody finished answering in time (MATCH_CANCELLED, reason
-- TIMEOUT: see _proposals.lua). Hashes cannot
-- expire field by field on every Redis we support, so expiry is a ZSET swept
-- in batches.
--
-- KEYS[1]  matches        HASH match id -> match record JSON
-- KEYS[2]  match_expiry   ZSET match id -> expiry ms
-- KEYS[3]  player_match   HASH player -> id of the player's latest match
-- KEYS[4]  conns          HASH conn id -> "<registered_ms> <player>"
-- KEYS[5]  conn_expiry    ZSET conn id -> when the registration lapses (ms)
-- KEYS[6]  player_conns   HASH player -> space-separated conn ids
-- KEYS[7]  presence       ZSET player -> latest expiry among their connections
-- KEYS[8]  tickets        HASH ticket -> ticket
-- KEYS[9]  outbox         ZSET notification id -> due ms
-- KEYS[10..14] the party block: parties, party_expiry, player_party, notes,
--          counters (see _tickets.lua)
-- KEYS[15..18] the proposal block: proposals, proposal_expiry,
--          player_proposal, cooldowns (see _proposals.lua)
-- KEYS[19..] for every configured world, in ARGV order: queue, deadlines,
--           ratings and due (four keys per world)
--
-- ARGV[1]  most records of each kind to remove in this call (> 0)
-- ARGV[2]  remove the ticket of a player whose last connection expired: "1"/"0"
-- ARGV[3..] configured world names
--
-- Reply: { matches_removed, connections_removed, tickets_removed, parties_expired,
--          proposals_expired }

local limit = int_arg(ARGV[1])
local remove_ticket = ARGV[2]
local worlds = {}
for i = 3, #ARGV do worlds[#worlds + 1] = ARGV[i] end
if limit == nil or limit == 0 then return fail('limit must be an integer > 0') end
if remove_ticket ~= '0' and remove_ticket ~= '1' then return fail('remove_ticket must be 0 or 1') end
local FIXED_KEYS = 18
if #KEYS ~= FIXED_KEYS + 4 * #worlds then return fail('world keys do not match world names') end

local now = now_ms()
local matches = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', now, 'LIMIT', 0, limit)
for _, id in ipairs(matches) do
  local record = redis.call('HGET', KEYS[1], id)
  if record then
    local ok, decoded = pcall(cjson.decode, record)
    if ok and type(decoded) == 'table' and type(decoded.participants) == 'table' then
      for _, p in ipairs(decoded.participants) do
        -- Only clear the pointer if the player has not been matched again since.
        if redis.call('HGET', KEYS[3], p) == id then
          redis.call('HDEL', KEYS[3], p)
        end
      end
    end
  end
end
if #matches > 0 then
  chunked('HDEL', KEYS[1], matches, 1)
  chunked('ZREM', KEYS[2], matches, 1)
end

local k = {
  conns = KEYS[4], conn_expiry = KEYS[5], player_conns = KEYS[6], presence = KEYS[7],
  tickets = KEYS[8], outbox = KEYS[9], parties = KEYS[10], party_expiry = KEYS[11],
  player_party = KEYS[12], notes = KEYS[13], counters = KEYS[14], proposals = KEYS[15],
  proposal_expiry = KEYS[16], player_proposal = KEYS[17], cooldowns = KEYS[18],
}
local world_of = world_lookup(worlds, function(i)
  local base = FIXED_KEYS + 4 * (i - 1)
  return { queue = KEYS[base + 1], deadlines = KEYS[base + 2], ratings = KEYS[base + 3], due = KEYS[base + 4] }
end)
local conns = redis.call('ZRANGEBYSCORE', KEYS[5], '-inf', now, 'LIMIT', 0, limit)
local tickets_removed = 0
for _, id in ipairs(conns) do
  local _, _, removed = drop_connection(k, id, remove_ticket == '1', world_of, now)
  if removed ~= '' then tickets_removed = tickets_removed + 1 end
end
local parties_expired = sweep_parties(k, limit, now, world_of)
local proposals_expired = sweep_proposals(k, limit, now, world_of)
return { #matches, #conns, tickets_removed, parties_expired, proposals_expired }
