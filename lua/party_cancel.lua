-- party_cancel.lua: a member (joined or only invited) cancels a party,
-- assembling or queued: its ticket leaves the queue, the party is deleted
-- and the other members are told (PARTY_CANCELLED: reason LEFT from a
-- member who had joined, DECLINED from one who had not).
--
-- KEYS[1]  tickets        HASH ticket -> ticket
-- KEYS[2]  outbox         ZSET notification id -> due ms
-- KEYS[3..7] the party block: parties, party_expiry, player_party, notes,
--          counters (see _tickets.lua)
-- KEYS[8..11] the party's world: queue, deadlines, ratings, due
-- KEYS[12..15] the proposal block: proposals, proposal_expiry,
--          player_proposal, cooldowns (a party in a match proposal leaves it)
--
-- ARGV[1]  player id
-- ARGV[2]  party id
-- ARGV[3]  the party's world (the world part of the party id)
--
-- Reply: { "CANCELLED", party JSON as it was } | { "NOT_FOUND", "" } (no such
-- party, or the player is not a member; nothing written)

if #KEYS ~= 15 then return fail('expected 15 keys') end
local player, party_id, world = ARGV[1], ARGV[2], ARGV[3]
if player == nil or player == '' then return fail('player id is empty') end
if party_id == nil or party_id == '' then return fail('party id is empty') end
if world == nil or world == '' then return fail('world is empty') end
local k = {
  tickets = KEYS[1], outbox = KEYS[2], parties = KEYS[3], party_expiry = KEYS[4],
  player_party = KEYS[5], notes = KEYS[6], counters = KEYS[7], proposals = KEYS[12],
  proposal_expiry = KEYS[13], player_proposal = KEYS[14], cooldowns = KEYS[15],
}
local wk = { queue = KEYS[8], deadlines = KEYS[9], ratings = KEYS[10], due = KEYS[11] }
local party = load_party(k, party_id)
if not party or party.world ~= world then return { 'NOT_FOUND', '' } end
local me = nil
for _, m in ipairs(party.members) do
  if m.p == player then me = m end
end
if not me then return { 'NOT_FOUND', '' } end
cancel_party(k, party_id, me.j == 1 and 'LEFT' or 'DECLINED', player, now_ms(), function(name)
  if name == world then return wk end
  return nil
end)
return { 'CANCELLED', cjson.encode(party_view(party)) }
