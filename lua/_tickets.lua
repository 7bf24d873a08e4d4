-- _tickets.lua: removing tickets, solo or party, and the parties themselves.
--
-- Key tables (`k`) carry the key names a helper needs: a world's queue,
-- deadlines, ratings and due; the namespace's tickets, outbox and the party
-- keys parties, party_expiry, player_party, notes and counters.

-- Removes `tickets` (ticket ids) from a rated world's ratings and due ZSETs.
-- The ratings member needs each ticket's sequence, read from the queue, so
-- this runs before the tickets leave the queue.
local function drop_rated(k, tickets)
  if not k.ratings or #tickets == 0 then return end
  if redis.call('EXISTS', k.due) == 0 then return end
  local members = {}
  for _, t in ipairs(tickets) do
    local seq = tonumber(redis.call('ZSCORE', k.queue, t))
    if seq then members[#members + 1] = rating_member(seq, t) end
  end
  chunked('ZREM', k.due, tickets, 1)
  if #members > 0 then chunked('ZREM', k.ratings, members, 1) end
end

-- Parties. The parties hash holds each party as JSON (cjson):
--   { id, world, leader, state = "ASSEMBLING" | "QUEUED", expires (ms: the
--     assembly deadline, then the ticket's deadline), members = [ { p = player,
--     j = 1 once joined else 0, r = rating ("" in FIFO worlds), d = ticket
--     data JSON ("" for none) } ] }   (leader first, then in invitation order)
-- party_expiry holds assembling parties by assembly deadline; player_party
-- maps every member who has joined to the party id. A queued party waits as
-- the ticket PARTY_MARK .. id in its world, like a solo ticket.
local function load_party(k, id)
  local raw = redis.call('HGET', k.parties, id)
  if not raw then return nil end
  return cjson.decode(raw)
end

local function save_party(k, party)
  redis.call('HSET', k.parties, party.id, cjson.encode(party))
end

local function party_players(party, except)
  local out = {}
  for _, m in ipairs(party.members) do
    if m.p ~= except then out[#out + 1] = m.p end
  end
  return out
end

-- The party as clients see it (PARTY_UPDATE, the party routes, my-status).
local function party_view(party)
  local members = {}
  for i, m in ipairs(party.members) do
    members[i] = { playerId = m.p, joined = m.j == 1 }
  end
  return {
    partyId = party.id, worldType = party.world, leader = party.leader,
    state = party.state, expiresAt = party.expires, members = members,
  }
end

local function party_update(party)
  return cjson.encode({ type = 'PARTY_UPDATE', party = party_view(party) })
end

-- Party tickets waiting in a world (a counters field): while there are
-- none, a one-team FIFO world takes its fast path.
local function queued_parties_field(world)
  return 'queued|' .. world
end

-- k.no_parties: the caller saw no party member anywhere in the namespace
-- (a queued party's members keep their pointers), so none can be queued.
local function queued_parties(k, world)
  if k.no_parties then return 0 end
  return tonumber(redis.call('HGET', k.counters, queued_parties_field(world))) or 0
end

-- Deletes a party and its members' pointers (not its ticket). Returns the
-- party, or nil when there was none.
local function dissolve_party(k, id)
  local party = load_party(k, id)
  if not party then return nil end
  if party.state == 'QUEUED' then
    local field = queued_parties_field(party.world)
    if redis.call('HINCRBY', k.counters, field, -1) <= 0 then
      redis.call('HDEL', k.counters, field)
    end
  end
  redis.call('HDEL', k.parties, id)
  redis.call('ZREM', k.party_expiry, id)
  for _, m in ipairs(party.members) do
    if redis.call('HGET', k.player_party, m.p) == id then
      redis.call('HDEL', k.player_party, m.p)
    end
  end
  return party
end

-- What removing a ticket tells its players, by outbox kind.
local REMOVAL_NOTES = {
  X = function(world) return cjson.encode({ type = 'TICKET_EXPIRED', worldType = world }) end,
  G = function(world)
    return cjson.encode({ type = 'TICKET_REMOVED', worldType = world, reason = 'NO_CONNECTION' })
  end,
}

-- Removes tickets (solo and party) from a world: queue, deadlines, rated
-- structures, the tickets hash and, for parties, the party. `notify` is nil
-- (matched or left: nobody is told here), "X" (expired) or "G" (no live
-- connection): solo players get an "X|"/"G|" outbox entry, a party's
-- members one note.
local function remove_tickets(k, world, tickets, notify, now)
  local n = #tickets
  if n == 0 then return end
  drop_rated(k, tickets)
  chunked('ZREM', k.queue, tickets, 1)
  chunked('ZREM', k.deadlines, tickets, 1)
  chunked('HDEL', k.tickets, tickets, 1)
  local ids, m = {}, 0
  for i = 1, n do
    local t = tickets[i]
    if is_party_ticket(t) then
      local party = dissolve_party(k, string.sub(t, 2))
      if party and notify then
        add_note(k, party_players(party), REMOVAL_NOTES[notify](world), now)
      end
    elseif notify then
      m = m + 1
      ids[m] = notify .. '|' .. world .. '|' .. t
    end
  end
  outbox_add(k.outbox, ids, m, now)
end

-- Ready checks (_proposals.lua, later in the library) are reached from
-- here too: a party in a proposal is cancelled through its proposal.
local load_proposal, cancel_proposal

-- Cancels a party, assembling, queued or in a proposal: its ticket leaves
-- the queue (`world_of(name)` gives the key table of a configured world,
-- nil for others), the party is deleted and every member but `by` is told
-- PARTY_CANCELLED with `reason`. A party in a match proposal leaves it (the
-- proposal is cancelled, reason LEFT: the others are requeued); `k` then
-- needs the proposal keys. Returns the party, or nil.
local function cancel_party(k, id, reason, by, now, world_of)
  local party = load_party(k, id)
  if not party then return nil end
  if party.state == 'PROPOSED' then
    local member = by or party.members[1].p
    local p = load_proposal(k, redis.call('HGET', k.player_proposal, member) or '')
    if p then
      -- The party's ticket goes whole; only `by` counts as having left.
      cancel_proposal(k, world_of(p.world), p, 'LEFT', { [member] = true }, now)
    end
  end
  if party.state == 'QUEUED' then
    local wk = world_of(party.world)
    if wk then
      local ticket = PARTY_MARK .. id
      drop_rated(wk, { ticket })
      redis.call('ZREM', wk.queue, ticket)
      redis.call('ZREM', wk.deadlines, ticket)
    end
    redis.call('HDEL', k.tickets, PARTY_MARK .. id)
  end
  dissolve_party(k, id)
  local message = { type = 'PARTY_CANCELLED', partyId = id, worldType = party.world, reason = reason }
  if by then message.by = by end
  add_note(k, party_players(party, by), cjson.encode(message), now)
  return party
end

-- Removes a player's solo ticket from whichever configured world it waits
-- in. Returns the world the ticket was in, or '' when there was none.
local function drop_ticket(k, player, world_of)
  local ticket = redis.call('HGET', k.tickets, player)
  if not ticket then
    return ''
  end
  local world = decode_ticket(ticket)
  local wk = world and world_of(world)
  if wk then
    drop_rated(wk, { player })
    redis.call('ZREM', wk.queue, player)
    redis.call('ZREM', wk.deadlines, player)
  end
  redis.call('HDEL', k.tickets, player)
  return world or ''
end

-- Removes up to `limit` of a world's expired tickets and tells their
-- players (TICKET_EXPIRED). Returns the expired tickets and whether the
-- limit was reached (more may remain).
local function sweep_expired(k, world, limit, now)
  local expired = redis.call('ZRANGEBYSCORE', k.deadlines, '-inf', now, 'LIMIT', 0, limit)
  local n = #expired
  if n == 0 then
    return expired, false
  end
  remove_tickets(k, world, expired, 'X', now)
  return expired, n >= limit
end

-- Cancels up to `limit` parties whose assembly ran out of time. Returns how
-- many.
local function sweep_parties(k, limit, now, world_of)
  local ids = redis.call('ZRANGEBYSCORE', k.party_expiry, '-inf', now, 'LIMIT', 0, limit)
  for _, id in ipairs(ids) do
    if not cancel_party(k, id, 'EXPIRED', nil, now, world_of) then
      redis.call('ZREM', k.party_expiry, id)
    end
  end
  return #ids
end

-- A world lookup over the configured worlds: `world_keys(i)` returns the key
-- table of the i-th of `names`.
local function world_lookup(names, world_keys)
  return function(name)
    for i, n in ipairs(names) do
      if n == name then return world_keys(i) end
    end
    return nil
  end
end
