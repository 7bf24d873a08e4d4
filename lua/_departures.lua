-- _departures.lua: a party that ends before it is matched: cancelled by a
-- member, by a disconnect, or because it did not assemble in time.
--
-- nctx: a namespace call: { k = the namespace's keys (players, parties,
-- party_expiry, counters, notes, outbox, proposals, proposal_expiry), now,
-- world_of = function(name) giving a configured world's keys, nil for
-- others }.
-- @include _lib _parties _players _proposals _tickets

local Departures = {}
do

-- Cancels a party, assembling, queued or in a proposal: its ticket leaves
-- the queue, the party is deleted and every member but `by` is told
-- PARTY_CANCELLED with `reason`. A party in a match proposal leaves it (the
-- proposal is cancelled, reason LEFT: the others are requeued). Returns the
-- party, or nil.
local function cancel_party(nctx, id, reason, by)
  local k, now, world_of = nctx.k, nctx.now, nctx.world_of
  local party = Parties.load_party(k, id)
  if not party then return nil end
  if party.state == 'PROPOSED' then
    local p = Proposals.load_proposal(k, party.proposal)
    if p then
      -- The party's ticket goes whole; only `by` (or the leader) counts as
      -- having left.
      local member = by or party.members[1].p
      Proposals.cancel_proposal({ k = world_of(p.world), world = p.world, now = now, world_of = world_of }, k, p, 'LEFT',
        { [member] = true })
    end
  elseif party.state == 'QUEUED' then
    local wk = world_of(party.world)
    if wk then
      Tickets.remove_tickets({ k = wk, world = party.world, now = now, world_of = world_of }, { Players.PARTY_MARK .. id }, nil)
    else
      redis.call('HDEL', k.players, Players.PARTY_MARK .. id)
    end
  end
  Parties.dissolve_party(k, id, world_of(party.world))
  local message = { type = 'PARTY_CANCELLED', partyId = id, worldType = party.world, reason = reason }
  if by then message.by = by end
  add_note(k, Parties.party_players(party, by), cjson.encode(message), now)
  return party
end

-- Cancels up to `limit` parties whose assembly ran out of time. Returns how
-- many.
local function sweep_parties(nctx, limit)
  local k = nctx.k
  local ids = redis.call('ZRANGEBYSCORE', k.party_expiry, '-inf', nctx.now, 'LIMIT', 0, limit)
  for _, id in ipairs(ids) do
    if not cancel_party(nctx, id, 'EXPIRED', nil) then
      redis.call('ZREM', k.party_expiry, id)
    end
  end
  return #ids
end

-- The module's face: what other files reach as Departures.<name>.
Departures.cancel_party = cancel_party
Departures.sweep_parties = sweep_parties
end
