-- leave.lua: remove a player's ticket from a world's queue. A party member
-- leaving cancels the whole party, assembling or queued, and the other
-- members are told (PARTY_CANCELLED, reason LEFT). A player in a match
-- proposal of that world leaving cancels the proposal (MATCH_CANCELLED,
-- reason LEFT): their ticket goes, everyone else's is requeued.
--
-- KEYS   players outbox notes counters parties party_expiry proposals
-- KEYS   proposal_expiry matcher_asleep backfills backfill_expiry
-- WORLDS the world left
-- ARGV   player   the player id
--
-- Reply: a status, then exactly that status's fields:
--   LEFT, previous_position (0 for an assembling party or a proposal),
--         remaining_queue_size
--   NOT_QUEUED, world_waited_in ("" when none): nothing was written
-- A ticket past its deadline is not queued any more (the sweep removes it
-- and tells the player); leaving it answers NOT_QUEUED and writes nothing.

local player = args.player
if player == '' then return fail('player id is empty') end
local world = worlds[1]
local now = now_ms()
local ctx = { k = k, world = world, now = now }
local kind, value = Players.player_state(redis.call('HGET', k.players, player))
local proposal = Proposals.proposal_of(k, kind, value)
if proposal then
  if proposal.world ~= world then return { 'NOT_QUEUED', proposal.world } end
  -- Tickets shared with other worlds go back to all of them.
  ctx.world_of = world_of
  Proposals.cancel_proposal(ctx, k, proposal, 'LEFT', { [player] = true })
  return { 'LEFT', 0, redis.call('ZCARD', k.queue) }
end
if kind == 'party' then
  local party = Parties.load_party(k, value)
  if not party then return { 'NOT_QUEUED', '' } end
  if not Parties.queues_in(party, world) then return { 'NOT_QUEUED', party.world } end
  local rank = redis.call('ZRANK', k.queue, Players.PARTY_MARK .. value)
  Departures.cancel_party({ k = k, now = now, world_of = world_of }, value, 'LEFT', player)
  return { 'LEFT', rank and rank + 1 or 0, redis.call('ZCARD', k.queue) }
end
if kind ~= 'ticket' then return { 'NOT_QUEUED', '' } end
local ticket_world, _, _, deadline, ticket_worlds = Players.decode_ticket(value)
if deadline == nil or deadline <= now then return { 'NOT_QUEUED', '' } end
if not Players.waits_in(ticket_worlds, world) then return { 'NOT_QUEUED', ticket_world or '' } end
-- A ticket shared by several worlds leaves them all (only such a ticket
-- needs the other worlds' keys: a leave of one world reads nothing more).
if ticket_worlds ~= ticket_world then ctx.world_of = world_of end
local rank = redis.call('ZRANK', k.queue, player)
Tickets.remove_tickets(ctx, { player }, nil)
return { 'LEFT', (rank or 0) + 1, redis.call('ZCARD', k.queue) }
