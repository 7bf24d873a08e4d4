-- party_cancel.lua: a member (joined or only invited) cancels a party,
-- assembling or queued: its ticket leaves the queue, the party is deleted
-- and the other members are told (PARTY_CANCELLED: reason LEFT from a
-- member who had joined, DECLINED from one who had not). A party in a match
-- proposal leaves it.
--
-- KEYS   players outbox notes counters parties party_expiry proposals
-- KEYS   proposal_expiry matcher_asleep backfills backfill_expiry
-- WORLDS the party's world (the world part of the party id)
-- ARGV   player   the player id
-- ARGV   party    the party id
--
-- Reply: { "CANCELLED", party JSON as it was } | { "NOT_FOUND" } (no such
-- party, or the player is not a member; nothing written)

local player, party_id = args.player, args.party
if player == '' then return fail('player id is empty') end
if party_id == '' then return fail('party id is empty') end
local party = Parties.load_party(k, party_id)
if not party or party.world ~= worlds[1] then return { 'NOT_FOUND' } end
local me = nil
for _, m in ipairs(party.members) do
  if m.p == player then me = m end
end
if not me then return { 'NOT_FOUND' } end
Departures.cancel_party({ k = k, now = now_ms(), world_of = world_of }, party_id, me.j == 1 and 'LEFT' or 'DECLINED', player)
return { 'CANCELLED', cjson.encode(Parties.party_view(party)) }
