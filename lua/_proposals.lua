-- _proposals.lua: ready checks. In a world with an acceptance time limit a
-- formed match is first a PROPOSAL: its tickets leave the queue but keep
-- their sequence, join time, deadline and data in the proposal, and every
-- participant is asked (MATCH_PROPOSED). When all accept, the match record
-- is written and MATCH_FOUND goes out as for any match. When anyone
-- declines, leaves or does not answer in time, the proposal is cancelled:
-- the tickets of those who declined or did not answer are removed (a whole
-- party with them; the players may get a cool-down), every other ticket
-- goes back to its queue at its original sequence, its deadline extended by
-- the time it spent in the proposal, and is due as an anchor at once.
--
-- Keys (ctx.k): proposals (HASH match id -> proposal JSON), proposal_expiry
-- (ZSET match id -> accept-by ms), players (a solo player in a proposal is
-- in state "R <match id>"; a party's members stay "P <party id>" and the
-- party names the proposal). ctx.cfg.accept: { ms = time limit, cooldown =
-- ms } in a world with a ready check.
--
-- A proposal (cjson): { id, world, created, acceptBy, cooldown, record (the
-- match record JSON, written as is when all accept), players (participants
-- in record order), accepted (players who accepted), tickets = [ { t
-- (ticket id), seq, joined, deadline, d (ticket data, solo tickets), r
-- (rating, "" unrated), p (players), g (regional entries), a, b (stored
-- attributes, index entries), u (due as an anchor), w (a ticket shared by
-- several worlds of a group: its worlds as its state names them), o (its
-- entries in the other worlds: [ { w, d, r, g, a, b, u } ]) } ] }.
-- @include _lib _backfill_store _parties _players _regions _rule_index _tickets

local Proposals = {}
do

local function proposal_state(id)
  return 'R ' .. id
end

local function load_proposal(k, id)
  if not id then return nil end
  local raw = redis.call('HGET', k.proposals, id)
  if not raw then return nil end
  return cjson.decode(raw)
end

-- The proposal a player in state (`kind`, `value`) is in, or nil.
local function proposal_of(k, kind, value)
  if kind == 'proposal' then return load_proposal(k, value) end
  if kind == 'party' then
    local party = Parties.load_party(k, value)
    if party and party.state == 'PROPOSED' then return load_proposal(k, party.proposal) end
  end
  return nil
end

-- A ticket shared with other worlds of the group (`worlds`, as its state
-- names them) leaves them with the proposal: its entries there, to file
-- back if the proposal is cancelled (read from the keys: the call has
-- only its own world's configuration).
local function lift_elsewhere(ctx, t, seq, worlds)
  local out = {}
  for _, w in ipairs(Players.ticket_worlds(worlds)) do
    local wk = w ~= ctx.world and ctx.world_of(w)
    if wk then
      local wctx = { k = wk, world = w, now = ctx.now }
      local rated = has(wk, 'ratings') and redis.call('ZSCORE', wk.ratings, Players.rating_member(seq, t))
      out[#out + 1] = {
        w = w, d = Players.ticket_data(wctx, t), r = rated or '',
        g = Regions.capture_regional(wk, t, seq), a = RuleIndex.capture(wk, t),
        b = RuleIndex.capture_filed(wk, t, seq),
        u = has(wk, 'due') and redis.call('ZSCORE', wk.due, t) ~= false or nil,
      }
      Tickets.unqueue(wctx, { t })
      if Players.is_party_ticket(t) then Parties.count_queued_party(wk, -1) end
    end
  end
  return out
end

-- Files a lifted ticket's entry `e` (or one of its other worlds' `e.o`)
-- back into the world of keys `wk`, at `at` = { seq, deadline, now }.
local function file_back(wk, t, e, at)
  local seq, deadline, now = at.seq, at.deadline, at.now
  redis.call('ZADD', wk.queue, seq, t)
  redis.call('ZADD', wk.deadlines, deadline, t)
  if e.d and e.d ~= '' then redis.call('HSET', wk.data, t, e.d) end
  if e.r ~= '' then redis.call('ZADD', wk.ratings, e.r, Players.rating_member(seq, t)) end
  Regions.restore_regional(wk, t, e.g)
  RuleIndex.restore(wk, t, e.a, e.b)
  if e.r ~= '' or e.g or e.u then redis.call('ZADD', wk.due, now, t) end
end

-- Takes the tickets of one match out of the queue for proposal `id`,
-- keeping what requeueing needs; parties stay (state PROPOSED). Returns the
-- entries.
local function lift_tickets(ctx, id, items)
  local k = ctx.k
  local entries, ids = {}, {}
  for i, it in ipairs(items) do
    local _, seq, joined, deadline, worlds = Players.waiting_ticket(k, it.ticket)
    local attrs = it.attrs_text or RuleIndex.capture(k, it.ticket)
    entries[i] = {
      t = it.ticket, seq = seq, joined = joined, deadline = deadline,
      d = (it.data and not it.party and it.data[1]) or Players.ticket_data(ctx, it.ticket),
      r = it.rating and num(it.rating) or '', p = it.players,
      g = it.regional or Regions.capture_regional(k, it.ticket, seq),
      a = attrs,
      b = attrs and RuleIndex.capture_index(ctx.cfg, it.ticket, attrs, seq),
      u = ctx.cfg.anchored or nil,
    }
    if worlds and worlds ~= ctx.world and ctx.world_of then
      entries[i].w, entries[i].o = worlds, lift_elsewhere(ctx, it.ticket, seq, worlds)
    end
    ids[i] = it.ticket
    if it.party then
      local party = Parties.load_party(k, it.party)
      if party then
        Parties.count_queued_party(k, -1)
        party.state = 'PROPOSED'
        party.proposal = id
        Parties.save_party(k, party)
      end
      redis.call('HDEL', k.players, it.ticket)
    else
      redis.call('HSET', k.players, it.ticket, proposal_state(id))
    end
  end
  Tickets.drop_rated(ctx, ids)
  Regions.drop_regional(ctx, ids)
  RuleIndex.drop(ctx, ids)
  chunked('ZREM', k.queue, ids, 1)
  if Players.world_has_data(ctx) then chunked('HDEL', k.data, ids, 1) end
  return entries
end

-- Stores one proposal per formed match and asks its players. `ids`,
-- `records`, `players` (per match) and `entries` (the lifted tickets per
-- match).
local function create_proposals(ctx, ids, records, players, entries)
  local k, accept, now = ctx.k, ctx.cfg.accept, ctx.now
  for g, id in ipairs(ids) do
    local accept_by = now + accept.ms
    local proposal = {
      id = id, world = ctx.world, created = now, acceptBy = accept_by, cooldown = accept.cooldown,
      record = records[g], players = players[g], accepted = {}, tickets = entries[g],
    }
    -- cjson would write an empty `accepted` as {}; it is read back with
    -- ipairs, which treats both alike.
    redis.call('HSET', k.proposals, id, cjson.encode(proposal))
    redis.call('ZADD', k.proposal_expiry, accept_by, id)
    add_note(k, players[g], cjson.encode({
      type = 'MATCH_PROPOSED', matchId = id, worldType = ctx.world, acceptBy = accept_by,
      participants = players[g],
    }), now)
  end
end

-- The proposal as its players see it (my-status).
local function proposal_view(p)
  return cjson.encode({
    matchId = p.id, worldType = p.world, acceptBy = p.acceptBy, participants = p.players,
    accepted = #p.accepted > 0 and p.accepted or nil,
  })
end

local function drop_proposal(k, p)
  redis.call('HDEL', k.proposals, p.id)
  redis.call('ZREM', k.proposal_expiry, p.id)
end

-- Everyone accepted: the match becomes final, exactly as a match formed
-- without a ready check (record, the players' states, expiry, one outbox
-- entry, statistics). Returns the record and its outbox id.
local function finalize_proposal(ctx, p)
  local k, now = ctx.k, ctx.now
  drop_proposal(k, p)
  for _, e in ipairs(p.tickets) do
    if Players.is_party_ticket(e.t) then Parties.dissolve_party(k, string.sub(e.t, 2), k) end
  end
  redis.call('HSET', k.matches, p.id, p.record)
  redis.call('ZADD', k.match_expiry, now + ctx.cfg.match_ttl, p.id)
  local states = {}
  for i, player in ipairs(p.players) do
    states[2 * i - 1] = player
    states[2 * i] = p.id
  end
  chunked('HSET', k.players, states, 2)
  outbox_add(k.outbox, { 'M|' .. p.id }, 1, now)
  record_rate(k.stats, now, ctx.cfg.window, #p.players)
  return p.record, 'M|' .. p.id
end

-- Cancels a proposal (`reason`: DECLINED, LEFT, TIMEOUT or BACKFILL_ENDED;
-- a backfill proposal's seats open again, see _backfill_store.lua). The tickets
-- holding a player in `out` (a set) are removed, whole parties with them,
-- and those players cool down; every other ticket is requeued at its
-- original sequence with its deadline extended by the time spent in the
-- proposal, due as an anchor at once. `ctx.k` holds the proposal world's
-- keys, or is nil when the world is gone (nothing is requeued; `k` the
-- namespace's keys). Returns how many tickets were requeued.
local function cancel_proposal(ctx, k, p, reason, out)
  local now = ctx.now
  local wk = ctx.k
  drop_proposal(k, p)
  if p.backfill then BackfillStore.release_backfill_seats(k, wk, p) end
  local extension = now - p.created
  local requeued, removed, kept = {}, {}, 0
  for _, e in ipairs(p.tickets) do
    local leaving = wk == nil
    for _, player in ipairs(e.p) do
      if out[player] then leaving = true end
    end
    local party_id = Players.is_party_ticket(e.t) and string.sub(e.t, 2) or nil
    if leaving then
      if party_id then
        Parties.dissolve_party(k, party_id, wk)
      else
        redis.call('HDEL', k.players, e.t)
      end
      for _, player in ipairs(e.p) do removed[#removed + 1] = player end
    else
      kept = kept + 1
      local deadline = e.deadline + extension
      local at = { seq = e.seq, deadline = deadline, now = now }
      file_back(wk, e.t, e, at)
      if e.d and e.d ~= '' then ctx.has_data = true end
      -- A shared ticket goes back to every world of its group still
      -- configured, and its state names those.
      local worlds, back_keys = p.world, {}
      if e.o then
        local back = {}
        for _, o in ipairs(e.o) do
          local ok = ctx.world_of and ctx.world_of(o.w)
          if ok then
            file_back(ok, e.t, o, at)
            back[o.w] = true
            back_keys[#back_keys + 1] = ok
          end
        end
        local named = {}
        for _, w in ipairs(Players.ticket_worlds(e.w)) do
          if w == p.world or back[w] then named[#named + 1] = w end
        end
        worlds = table.concat(named, ',')
      end
      redis.call('HSET', k.players, e.t, Players.encode_ticket(worlds, e.seq, e.joined, deadline))
      if party_id then
        local party = Parties.load_party(k, party_id)
        if party then
          party.state = 'QUEUED'
          party.expires = deadline
          party.proposal = nil
          Parties.save_party(k, party)
          Parties.count_queued_party(wk, 1)
          for _, ok in ipairs(back_keys) do Parties.count_queued_party(ok, 1) end
        end
      end
      for _, player in ipairs(e.p) do requeued[#requeued + 1] = player end
    end
  end
  if p.cooldown > 0 then
    for player in pairs(out) do
      redis.call('HSET', k.players, player, 'C ' .. (now + p.cooldown))
    end
  end
  local function tell(players, back)
    add_note(k, players, cjson.encode({
      type = 'MATCH_CANCELLED', matchId = p.id, worldType = p.world, reason = reason, requeued = back,
    }), now)
  end
  tell(requeued, true)
  tell(removed, false)
  return kept
end

-- The players of a proposal who have not accepted, as a set.
local function not_accepted(p)
  local accepted, out = {}, {}
  for _, player in ipairs(p.accepted) do accepted[player] = true end
  for _, player in ipairs(p.players) do
    if not accepted[player] then out[player] = true end
  end
  return out
end

-- Cancels up to `limit` proposals whose time ran out (TIMEOUT: those who
-- did not answer are removed). nctx: { k, now, world_of } (see
-- _departures.lua). Returns how many.
local function sweep_proposals(nctx, limit)
  local k, now, world_of = nctx.k, nctx.now, nctx.world_of
  local ids = redis.call('ZRANGEBYSCORE', k.proposal_expiry, '-inf', now, 'LIMIT', 0, limit)
  for _, id in ipairs(ids) do
    local p = load_proposal(k, id)
    if p then
      cancel_proposal({ k = world_of(p.world), world = p.world, now = now, world_of = world_of }, k, p, 'TIMEOUT', not_accepted(p))
    else
      redis.call('ZREM', k.proposal_expiry, id)
    end
  end
  return #ids
end

-- The module's face: what other files reach as Proposals.<name>.
Proposals.proposal_state = proposal_state
Proposals.load_proposal = load_proposal
Proposals.proposal_of = proposal_of
Proposals.lift_tickets = lift_tickets
Proposals.create_proposals = create_proposals
Proposals.proposal_view = proposal_view
Proposals.drop_proposal = drop_proposal
Proposals.finalize_proposal = finalize_proposal
Proposals.cancel_proposal = cancel_proposal
Proposals.not_accepted = not_accepted
Proposals.sweep_proposals = sweep_proposals
end
