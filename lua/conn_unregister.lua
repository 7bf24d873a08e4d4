-- conn_unregister.lua: forget a WebSocket connection ($disconnect, or a push
-- that API Gateway answered 410 Gone). When it was the player's last
-- connection and ARGV[2] is "1", the player's ticket is removed too and a
-- party the player belongs to is cancelled (the others are told).
--
-- KEYS[1]  conns          HASH conn id -> "<registered_ms> <player>"
-- KEYS[2]  conn_expiry    ZSET conn id -> expiry ms
-- KEYS[3]  player_conns   HASH player -> space-separated conn ids
-- KEYS[4]  presence       ZSET player -> latest expiry among their connections
-- KEYS[5]  tickets        HASH ticket -> ticket
-- KEYS[6]  outbox         ZSET notification id -> due ms
-- KEYS[7..11] the party block: parties, party_expiry, player_party, notes,
--          counters (see _tickets.lua)
-- KEYS[12..15] the proposal block: proposals, proposal_expiry,
--          player_proposal, cooldowns (a party in a match proposal leaves it)
-- KEYS[16..] for every configured world, in ARGV order: queue, deadlines,
--           ratings and due (four keys per world)
--
-- ARGV[1]  connection id
-- ARGV[2]  remove the ticket on the last disconnect: "1" or "0"
-- ARGV[3..] configured world names
--
-- Reply: { player_or_empty, remaining_connections, removed_ticket_world_or_empty }
local FIXED_KEYS = 15
local conn_id, remove_ticket = ARGV[1], ARGV[2]
local worlds = {}
for i = 3, #ARGV do worlds[#worlds + 1] = ARGV[i] end
if conn_id == nil or conn_id == '' then return fail('connection id is empty') end
if remove_ticket ~= '0' and remove_ticket ~= '1' then return fail('remove_ticket must be 0 or 1') end
if #KEYS ~= FIXED_KEYS + 4 * #worlds then return fail('world keys do not match world names') end
local k = {
  conns = KEYS[1], conn_expiry = KEYS[2], player_conns = KEYS[3], presence = KEYS[4],
  tickets = KEYS[5], outbox = KEYS[6], parties = KEYS[7], party_expiry = KEYS[8],
  player_party = KEYS[9], notes = KEYS[10], counters = KEYS[11], proposals = KEYS[12],
  proposal_expiry = KEYS[13], player_proposal = KEYS[14], cooldowns = KEYS[15],
}
local world_of = world_lookup(worlds, function(i)
  local base = FIXED_KEYS + 4 * (i - 1)
  return { queue = KEYS[base + 1], deadlines = KEYS[base + 2], ratings = KEYS[base + 3], due = KEYS[base + 4] }
end)
local player, remaining, removed = drop_connection(k, conn_id, remove_ticket == '1', world_of, now_ms())
return { player, remaining, removed }
