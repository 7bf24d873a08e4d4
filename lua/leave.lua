-- leave.lua: remove a player's ticket from a world's queue. A party member
-- leaving cancels the whole party, assembling or queued, and the other
-- members are told (PARTY_CANCELLED, reason LEFT). A player in a match
-- proposal of that world leaving cancels the proposal (MATCH_CANCELLED,
-- reason LEFT): their ticket goes, everyone else's is requeued.
--
-- KEYS[1]  queue          ZSET ticket -> seq (this world)
-- KEYS[2]  deadlines      ZSET ticket -> ticket deadline ms (this world)
-- KEYS[3]  tickets        HASH ticket -> ticket
-- KEYS[4]  ratings        ZSET "<seq>:<ticket>" -> rating (rated worlds; this world)
-- KEYS[5]  due            ZSET ticket -> next attempt as an anchor (rated worlds)
-- KEYS[6]  outbox         ZSET notification id -> due ms
-- KEYS[7..11] the party block: parties, party_expiry, player_party, notes,
--          counters (see _tickets.lua)
-- KEYS[12..15] the proposal block: proposals, proposal_expiry,
--          player_proposal, cooldowns (see _proposals.lua)
--
-- ARGV[1]  player id
-- ARGV[2]  world name
--
-- Reply: { "LEFT", previous_position (0 for an assembling party or a
--          proposal), remaining_queue_size }
--      | { "NOT_QUEUED", world_the_player_waits_in_or_empty, 0 }
-- A ticket past its deadline is not queued any more (the sweep removes it
-- and tells the player); leaving it answers NOT_QUEUED and writes nothing.
if #KEYS ~= 15 then return fail('expected 15 keys') end
local player, world = ARGV[1], ARGV[2]
if player == nil or player == '' then return fail('player id is empty') end
if world == nil or world == '' then return fail('world is empty') end
local k = {
  queue = KEYS[1], deadlines = KEYS[2], tickets = KEYS[3], ratings = KEYS[4], due = KEYS[5],
  outbox = KEYS[6], parties = KEYS[7], party_expiry = KEYS[8], player_party = KEYS[9],
  notes = KEYS[10], counters = KEYS[11], proposals = KEYS[12], proposal_expiry = KEYS[13],
  player_proposal = KEYS[14], cooldowns = KEYS[15],
}
local now = now_ms()
local pending = redis.call('HGET', k.player_proposal, player)
local proposal = pending and load_proposal(k, pending)
if proposal then
  if proposal.world ~= world then
    return { 'NOT_QUEUED', proposal.world, 0 }
  end
  cancel_proposal(k, k, proposal, 'LEFT', { [player] = true }, now)
  return { 'LEFT', 0, redis.call('ZCARD', k.queue) }
end
local ticket = redis.call('HGET', KEYS[3], player)
if not ticket then
  local party_id = redis.call('HGET', k.player_party, player)
  local party = party_id and load_party(k, party_id)
  if not party then
    return { 'NOT_QUEUED', '', 0 }
  end
  if party.world ~= world then
    return { 'NOT_QUEUED', party.world, 0 }
  end
  local rank = redis.call('ZRANK', k.queue, PARTY_MARK .. party_id)
  cancel_party(k, party_id, 'LEFT', player, now, function(name)
    if name == world then return k end
    return nil
  end)
  return { 'LEFT', rank and rank + 1 or 0, redis.call('ZCARD', k.queue) }
end
local ticket_world, _, _, deadline = decode_ticket(ticket)
if deadline == nil or deadline <= now then
  return { 'NOT_QUEUED', '', 0 }
end
if ticket_world ~= world then
  return { 'NOT_QUEUED', ticket_world or '', 0 }
end
local rank = redis.call('ZRANK', k.queue, player)
remove_tickets(k, world, { player }, nil, now)
return { 'LEFT', (rank or 0) + 1, redis.call('ZCARD', k.queue) }
