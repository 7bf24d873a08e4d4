-- _tickets.lua: taking tickets, solo or party, out of a world.
--
-- ctx: { k = the world's keys with the namespace's (queue, deadlines, data,
-- ratings, due; players, outbox, notes, counters, parties), world = its
-- name, now }. Deadlines are not removed with their tickets: an entry of a
-- ticket that left stays until it is due, when the sweep drops it (a
-- matcher taking thousands of tickets spares as many ZREMs).
--
-- A ticket, solo or a party's, may wait in several worlds of a queueGroup at
-- once (its state names them: _players.lua). Whatever takes it out of one world
-- takes it out of all (leave_other_worlds), in the same call: ctx.world_of
-- (the operation's accessor) gives the other worlds' keys, which every call
-- of a grouped world carries.
-- @include _lib _parties _players _regions _rule_index

local Tickets = {}
do

-- Removes `tickets` (ids) from a rated world's ratings and due ZSETs. The
-- ratings member needs each ticket's sequence, read from the queue, so this
-- runs before the tickets leave the queue. Unrated worlds have neither
-- key; either may exist without the other (a join files its ticket in
-- ratings and, when its own attempt fails, in due: one seated by a backfill
-- in between has only the ratings entry), so both are asked about. A call
-- in a world without either is not given them (worlds with regions have
-- due only).
local function drop_rated(ctx, tickets)
  local k = ctx.k
  if #tickets == 0 or not has(k, 'due') then return end
  local rated = has(k, 'ratings')
  if redis.call('EXISTS', k.due, rated and k.ratings or k.due) == 0 then return end
  local members = {}
  for _, t in ipairs(tickets) do
    local seq = tonumber(redis.call('ZSCORE', k.queue, t))
    if seq then members[#members + 1] = Players.rating_member(seq, t) end
  end
  chunked('ZREM', k.due, tickets, 1)
  if rated and #members > 0 then chunked('ZREM', k.ratings, members, 1) end
end

-- Deletes the states of players whose tickets left the world, unless a
-- state is no longer that ticket (a player whose expired ticket waited to be
-- swept may have gone on to a party meanwhile).
local function forget_tickets(ctx, players)
  local n = #players
  if n == 0 then return end
  local gone = {}
  for i = 1, n, CHUNK do
    local last = math.min(i + CHUNK - 1, n)
    local states = redis.call('HMGET', ctx.k.players, unpack(players, i, last))
    for j = i, last do
      local kind, value = Players.player_state(states[j - i + 1] or nil)
      if kind == 'ticket' and Players.waits_in(select(5, Players.decode_ticket(value)), ctx.world) then
        gone[#gone + 1] = players[j]
      end
    end
  end
  chunked('HDEL', ctx.k.players, gone, 1)
end

-- Takes `tickets` out of one world's queue and what goes with them there
-- (rated and regional entries, attributes and their index, data); their
-- players' states are the caller's.
local function unqueue(ctx, tickets)
  local k = ctx.k
  drop_rated(ctx, tickets)
  Regions.drop_regional(ctx, tickets)
  RuleIndex.drop(ctx, tickets)
  chunked('ZREM', k.queue, tickets, 1)
  if Players.world_has_data(ctx) then chunked('HDEL', k.data, tickets, 1) end
end

-- The other worlds the `tickets` (solo or party) leaving ctx.world also wait in:
-- world -> its tickets, or nil when none waits elsewhere. Reads the states
-- only where tickets may be shared: ctx.world_of is given, and the world
-- belongs to a group (a call without the world's configuration, such as a
-- leave, gives world_of only for a shared ticket).
local function shared_worlds(ctx, tickets)
  if not ctx.world_of or (ctx.cfg and not ctx.cfg.group) then return nil end
  local out, n = nil, #tickets
  for i = 1, n, CHUNK do
    local last = math.min(i + CHUNK - 1, n)
    local states = redis.call('HMGET', ctx.k.players, unpack(tickets, i, last))
    for j = i, last do
      local v = states[j - i + 1]
      if v and string.find(v, ',', 1, true) and Players.player_state(v) == 'ticket' then
        for _, w in ipairs(Players.ticket_worlds(select(5, Players.decode_ticket(v)))) do
          if w ~= ctx.world then
            out = out or {}
            out[w] = out[w] or {}
            out[w][#out[w] + 1] = tickets[j]
          end
        end
      end
    end
  end
  return out
end

-- Takes the `tickets` leaving ctx.world out of the other worlds they wait
-- in (before their states are written over); a party's ticket is counted
-- out of each. A world whose keys the call lacks (taken out of the group
-- since) is skipped.
local function leave_other_worlds(ctx, tickets)
  local others = shared_worlds(ctx, tickets)
  if not others then return end
  for w, list in pairs(others) do
    local wk = ctx.world_of(w)
    if wk then
      unqueue({ k = wk, world = w, now = ctx.now }, list)
      for _, t in ipairs(list) do
        if Players.is_party_ticket(t) then Parties.count_queued_party(wk, -1) end
      end
    end
  end
end

-- What removing a ticket tells its players, by outbox kind.
local REMOVAL_NOTES = {
  X = function(world) return cjson.encode({ type = 'TICKET_EXPIRED', worldType = world }) end,
  G = function(world)
    return cjson.encode({ type = 'TICKET_REMOVED', worldType = world, reason = 'NO_CONNECTION' })
  end,
}

-- Removes waiting tickets (solo and party) from a world: queue, rated
-- structures, data, the players' states and, for parties, the party.
-- `notify` is nil (left: nobody is told), "X" (expired) or "G" (no live
-- connection): solo players get an "X|"/"G|" outbox entry, a party's
-- members one note. `keep_states`: the caller writes the players' new
-- states itself (a match writes its id over them).
local function remove_tickets(ctx, tickets, notify, keep_states)
  local n = #tickets
  if n == 0 then return end
  local k = ctx.k
  unqueue(ctx, tickets)
  leave_other_worlds(ctx, tickets)
  local solo, ids, m = {}, {}, 0
  for i = 1, n do
    local t = tickets[i]
    if Players.is_party_ticket(t) then
      redis.call('HDEL', k.players, t)
      local party = Parties.dissolve_party(k, string.sub(t, 2), k)
      if party and notify then
        add_note(k, Parties.party_players(party), REMOVAL_NOTES[notify](ctx.world), ctx.now)
      end
    else
      solo[#solo + 1] = t
      if notify then
        m = m + 1
        ids[m] = notify .. '|' .. ctx.world .. '|' .. t
      end
    end
  end
  if not keep_states then forget_tickets(ctx, solo) end
  if m > 0 then outbox_add(k.outbox, ids, m, ctx.now) end
end

-- Removes up to `limit` of a world's expired tickets and tells their
-- players (TICKET_EXPIRED); deadline entries of tickets that already left
-- are dropped on the way. Returns the expired tickets and whether the limit
-- was reached (more may remain).
local function sweep_expired(ctx, limit)
  local k = ctx.k
  local due = redis.call('ZRANGEBYSCORE', k.deadlines, '-inf', ctx.now, 'LIMIT', 0, limit)
  local n = #due
  if n == 0 then return due, false end
  local expired, stale = {}, {}
  for i = 1, n, CHUNK do
    local last = math.min(i + CHUNK - 1, n)
    local seqs = redis.call('ZMSCORE', k.queue, unpack(due, i, last))
    for j = i, last do
      if seqs[j - i + 1] then expired[#expired + 1] = due[j] else stale[#stale + 1] = due[j] end
    end
  end
  remove_tickets(ctx, expired, 'X')
  chunked('ZREM', k.deadlines, due, 1)
  return expired, n >= limit
end

-- Removes a player's solo ticket from whichever worlds it waits in
-- (nctx: { k, now, world_of }; world_of(name) gives a configured world's
-- keys, nil for others). Returns the (first) world the ticket was in, or
-- '' when there was none.
local function drop_ticket(nctx, player)
  local k = nctx.k
  local world = Players.waiting_ticket(k, player)
  if not world then return '' end
  local wk = nctx.world_of(world)
  if wk then
    remove_tickets({ k = wk, world = world, now = nctx.now, world_of = nctx.world_of }, { player }, nil)
  else
    redis.call('HDEL', k.players, player)
  end
  return world
end

-- The module's face: what other files reach as Tickets.<name>.
Tickets.drop_rated = drop_rated
Tickets.unqueue = unqueue
Tickets.shared_worlds = shared_worlds
Tickets.leave_other_worlds = leave_other_worlds
Tickets.forget_tickets = forget_tickets
Tickets.remove_tickets = remove_tickets
Tickets.sweep_expired = sweep_expired
Tickets.drop_ticket = drop_ticket
Tickets.REMOVAL_NOTES = REMOVAL_NOTES
end
