-- _backfill.lua: backfills. A running match (ASSIGNED) whose players left
-- asks for new ones (backfill_request.lua): its open seats per team are
-- filled from the world's waiting tickets before any new match forms, by
-- joins (the joiner, when it fits) and by the matcher (the oldest waiting
-- tickets that fit, per backfill, oldest backfill first), with the match's
-- rules: a party whole and in one team with room for it; rated worlds: a
-- ticket's rating within the world's window around the match's reference
-- (the average of its current players), the window widening with the
-- backfill's own wait, and the team averages afterwards within the balance
-- window of that wait (the world's backfill_balance when it sets one, else
-- its balance); worlds with regions: every new player's latency in the
-- match's region within the cap of the backfill's wait. A backfill lives
-- while the server renews it (keep-alive) and until its seats are filled,
-- the match finishes or its record expires.
--
-- Filled players are the match's "additions" (_lifecycle.lua): their
-- states point at the match, and one "B|<match>|<fill>" outbox entry tells
-- them (MATCH_FOUND marked backfill, then MATCH_ASSIGNED). In a world with
-- a ready check the new players (only they) are asked first: their seats
-- are held by a proposal (_backfill_store.lua).
--
-- Storage, filling and proposals: _backfill_store.lua. Keys: k.backfills (HASH match id -> backfill JSON), k.backfill_expiry
-- (ZSET "<world>|<match>" -> keep-alive deadline); the world's
-- backfill_queue (ZSET match id -> created ms: backfills with open seats,
-- oldest first) and backfill_ratings (ZSET match id -> reference rating,
-- rated worlds); its stats field `backfills` counts its backfills.
-- In a world with match rules a newcomer must keep every rule in force at
-- the backfill's own wait, checked against the match's current players one
-- by one (b.attrs: player -> attributes, b.anchor_attrs: the anchor's, for
-- rules measured from it).
-- A backfill (cjson): { match, world, created, expires, fills (so far),
-- members (every player the match has had: none is seated in it again),
-- left (the players the request did not list; nil once a fill recorded
-- them in its addition, or when none left),
-- open = { seats per team }, counts = { players per team }, sums = {
-- rating sum per team } (rated), ref (reference rating, rated), region }.
-- In a world with a quota rule (role queues) a newcomer takes a role
-- that keeps its team able to meet the quotas (b.team_roles: per team, the
-- roles of its players now; see _roles.lua backfill_roles); with total
-- rules, one that keeps each sum able to end within its bounds (b.totals:
-- per total rule, per team, the sum over its players now).
-- @include _lib _backfill_store _blocks _match_rules _matching _players _proposals _rated _regions _roles _tickets

local Backfill = {}
do

-- Backfills a joiner is tried against.
local BACKFILLS_PER_JOIN = 8
-- Backfills one matcher call serves (bounds the call's time).
local BACKFILLS_PER_CALL = 1000

-- Whether a player of ticket info `it` and one that backfill `b`'s match
-- has had (or that its pending proposals hold) are in a block pair.
local function blocked_from_backfill(ctx, b, it)
  if not Blocks.any_blocks(ctx) then return false end
  if not b.pending then return Blocks.blocked_between(ctx, it.players, b.members) end
  local players = {}
  for i, m in ipairs(b.members) do players[i] = m end
  for _, id in ipairs(b.pending) do
    local p = Proposals.load_proposal(ctx.k, id)
    for _, q in ipairs(p and p.players or {}) do players[#players + 1] = q end
  end
  return Blocks.blocked_between(ctx, it.players, players)
end

-- The team of backfill `b` the ticket `it` (a ticket info with .lat, its
-- latencies, in worlds with regions) may take seats in, or nil (see the
-- header for the rules; a player the match has had is not seated again). Of the teams that qualify: rated with balance,
-- the one whose averages end up closest; else the one with most open seats.
local function backfill_team(ctx, b, it)
  local cfg = ctx.cfg
  local wait = ctx.now - b.created
  for _, p in ipairs(it.players) do
    for _, m in ipairs(b.members) do
      if m == p then return nil end
    end
  end
  if blocked_from_backfill(ctx, b, it) then return nil end
  if b.region then
    local cap = Regions.latency_cap(cfg.regions, wait)
    for j in ipairs(it.players) do
      local own = it.member_lats and it.member_lats[j] and it.member_lats[j][b.region]
      local ms = own or (it.lat and it.lat[b.region])
      if not ms or ms > cap then return nil end
    end
  end
  if cfg.match_rules and b.attrs then
    local items = { it }
    for _, attrs in pairs(b.attrs) do items[#items + 1] = { attrs = { attrs } } end
    -- The roles are checked apart (Roles.backfill_roles): the players
    -- who stay keep theirs.
    local m = { items = items, a = { attrs = { b.anchor_attrs or {} } }, wait = wait, backfill = true }
    if not MatchRules.holds(cfg, m, false) then return nil end
  end
  local roles_in = nil
  if cfg.quota and b.team_roles then
    roles_in = {}
    for t, seats in ipairs(b.open) do
      if seats >= it.size then roles_in[t] = Roles.backfill_roles(cfg.quota, b, it, t) end
    end
  end
  local rules = cfg.rules
  if rules and b.ref then
    local w = Rated.rated_window(rules, wait)
    if w and math.abs(it.rating - b.ref) > w then return nil end
  end
  local balance = rules and (rules.backfill_balance or rules.balance)
  local bw = balance and b.sums and Rated.rated_window(balance, wait)
  local best, best_key = nil, nil
  for t, seats in ipairs(b.open) do
    if seats >= it.size and (not roles_in or roles_in[t])
        and (not (cfg.totals and b.totals) or Roles.backfill_totals(cfg.totals, b, it, t)) then
      local key = -seats
      if balance and b.sums then
        local lo, hi = math.huge, -math.huge
        for u, sum in ipairs(b.sums) do
          local n = b.counts[u] + (u == t and it.size or 0)
          if n > 0 then
            local avg = (sum + (u == t and it.sum or 0)) / n
            if avg < lo then lo = avg end
            if avg > hi then hi = avg end
          end
        end
        key = hi > lo and hi - lo or 0
        if bw and key > bw then key = nil end
      end
      if key and (not best or key < best_key) then best, best_key = t, key end
    end
  end
  if best and roles_in then it.roles = roles_in[best] end
  return best
end

-- Seats ticket `it` in team `t` of `b` (in memory; fill_backfill writes).
local function take_seats(ctx, b, it, t)
  it.team = t
  if b.attrs and it.attrs then
    for j, p in ipairs(it.players) do b.attrs[p] = it.attrs[j] or {} end
  end
  b.open[t] = b.open[t] - it.size
  b.counts[t] = b.counts[t] + it.size
  if b.sums then b.sums[t] = b.sums[t] + it.sum end
  if it.roles then
    local list = b.team_roles[t]
    for _, r in ipairs(it.roles) do list[#list + 1] = r end
  end
  if b.totals then
    it.totals = {}
    for i, rule in ipairs(ctx.cfg.totals) do
      it.totals[i] = Roles.ticket_total(rule, it)
      b.totals[i][t] = b.totals[i][t] + it.totals[i]
    end
  end
end

-- Holds `items` (seated by take_seats, with their addition `parts`) for a
-- proposal to their players: a world with a ready check asks the new
-- players (only them) before they take the seats (_backfill_store.lua).
local function propose_backfill(ctx, b, items, parts)
  local k, now, accept = ctx.k, ctx.now, ctx.cfg.accept
  local id = string.format('%x-%x', now, redis.call('INCR', k.match_seq))
  local entries = Proposals.lift_tickets(ctx, id, items)
  local players, seats = {}, {}
  for i, it in ipairs(items) do
    seats[i] = { team = it.team, size = it.size, sum = it.sum, roles = it.roles, totals = it.totals }
    for _, p in ipairs(it.players) do players[#players + 1] = p end
  end
  local accept_by = now + accept.ms
  redis.call('HSET', k.proposals, id, cjson.encode({
    id = id, world = ctx.world, created = now, acceptBy = accept_by, cooldown = accept.cooldown,
    record = '', players = players, accepted = {}, tickets = entries,
    backfill = b.match, parts = parts, seats = seats,
  }))
  redis.call('ZADD', k.proposal_expiry, accept_by, id)
  add_note(k, players, cjson.encode({
    type = 'MATCH_PROPOSED', matchId = id, worldType = ctx.world, acceptBy = accept_by,
    participants = players, backfillOf = b.match,
  }), now)
  local pending = b.pending or {}
  pending[#pending + 1] = id
  b.pending = pending
  BackfillStore.save_backfill(k, k, b)
  ctx.proposed = (ctx.proposed or 0) + 1
end

-- Ends backfill `b` (lapsed, cancelled or replaced): the proposals holding
-- its seats are cancelled, every ticket in them requeued at its place
-- (MATCH_CANCELLED, reason BACKFILL_ENDED). `ctx.k` holds its world's keys
-- (nil when the world is gone: nothing to requeue into).
local function end_backfill(ctx, k, b)
  for _, id in ipairs(b.pending or {}) do
    local p = Proposals.load_proposal(k, id)
    if p then Proposals.cancel_proposal(ctx, k, p, 'BACKFILL_ENDED', {}) end
  end
  BackfillStore.drop_backfill(k, ctx.k, b.world, b.match)
end

-- Puts the tickets `items` (infos seated by take_seats) into backfill
-- `b`'s match, or, in a world with a ready check, into a proposal to their
-- players (_backfill_store.lua). Returns the outbox id of the fill ("" for
-- a proposal).
local function fill_backfill(ctx, b, items)
  local tickets, parts = {}, {}
  for i, it in ipairs(items) do
    tickets[i] = it.ticket
    if not it.data then it.data = { Players.ticket_data(ctx, it.ticket) } end
    if ctx.cfg.regions and not it.lat then it.lat = Regions.latencies_of(ctx, { it.ticket })[1] end
    if ctx.cfg.attributes then it.attrs_json = MatchRules.players_json(ctx.cfg, it) end
    parts[i] = BackfillStore.addition_body(it, b)
  end
  if ctx.cfg.accept then
    propose_backfill(ctx, b, items, parts)
    return ''
  end
  Tickets.remove_tickets(ctx, tickets, nil, true)
  return BackfillStore.add_fill(ctx, b, items, parts)
end

-- A waiting ticket's info for backfilling (ticket_info, with its latencies
-- in worlds with regions), or nil when its party is gone.
local function backfill_info(ctx, ticket, rating)
  local it = Matching.ticket_info(ctx, ticket, rating)
  if it and ctx.cfg.regions and not Players.is_party_ticket(ticket) then
    it.lat = Regions.latencies_of(ctx, { ticket })[1]
  end
  if it and ctx.cfg.attributes then MatchRules.load(ctx, { it }) end
  return it
end

-- Tries to seat the joining ticket `it` in one of the world's open
-- backfills (the nearest by reference in rated worlds, else the oldest; at
-- most BACKFILLS_PER_JOIN looked at). Returns the outbox id ("" when a
-- ready check holds the seat by a proposal) and the match id, or nil.
local function backfill_joiner(ctx, it)
  local k = ctx.k
  if not has(k, 'backfill_queue') then return nil end
  local ids
  if ctx.cfg.rules then
    local w = ctx.cfg.rules.max
    ids = redis.call('ZRANGEBYSCORE', k.backfill_ratings, num(it.rating - w), num(it.rating + w),
      'LIMIT', 0, BACKFILLS_PER_JOIN)
  else
    ids = redis.call('ZRANGE', k.backfill_queue, 0, BACKFILLS_PER_JOIN - 1)
  end
  for _, id in ipairs(ids) do
    local b = BackfillStore.load_backfill(k, id)
    if b and b.expires > ctx.now then
      local t = backfill_team(ctx, b, it)
      if t then
        take_seats(ctx, b, it, t)
        return fill_backfill(ctx, b, { it }), b.match
      end
    end
  end
  return nil
end

-- The rating a newcomer of backfill `b` is best sought around (rated
-- worlds; `w` the window around its reference, nil once relaxed). With
-- balance: the rating that brings the team with the most open seats to the
-- other teams' average once those seats are filled, kept within the window
-- (backfill_team still checks both); else the reference.
local function backfill_target(cfg, b, w)
  if not (cfg.rules.balance and b.sums) then return b.ref end
  local team, most = nil, 0
  for t, seats in ipairs(b.open) do
    if seats > most then team, most = t, seats end
  end
  local sum, n = 0, 0
  for u, s in ipairs(b.sums) do
    if u ~= team then sum, n = sum + s, n + b.counts[u] end
  end
  if not team or n == 0 then return b.ref end
  local r = ((sum / n) * (b.counts[team] + most) - b.sums[team]) / most
  if w then r = math.max(b.ref - w, math.min(b.ref + w, r)) end
  return r
end

-- Candidates for backfill `b` among the waiting tickets, best first: in
-- its region (worlds with regions), the nearest to its target rating
-- (rated: backfill_target) or the oldest; `fetch` of them.
local function backfill_candidates(ctx, b, fetch)
  local k, cfg = ctx.k, ctx.cfg
  local w = cfg.rules and b.ref and Rated.rated_window(cfg.rules, ctx.now - b.created)
  local target = cfg.rules and b.ref and backfill_target(cfg, b, w)
  local out = {}
  if b.region then
    local index = nil
    for i, name in ipairs(cfg.regions.names) do
      if name == b.region then index = i end
    end
    if not index then return out end
    local found = Regions.region_candidates(ctx, index, target and { rating = target, window = w }, fetch, 0)
    for _, c in ipairs(found) do out[#out + 1] = { ticket = c.ticket, rating = c.rating } end
  elseif target then
    for _, c in ipairs(Rated.nearest(k.ratings, target, w, fetch)) do
      out[#out + 1] = { ticket = Players.member_ticket(c[1]), rating = c[2] }
    end
  else
    for _, t in ipairs(redis.call('ZRANGE', k.queue, 0, fetch - 1)) do out[#out + 1] = { ticket = t } end
  end
  return out
end

-- Serves up to `limit` of the world's open backfills, oldest first, before
-- any new match forms: each takes the best waiting tickets that fit its
-- open seats (partly, when not enough do). In a world that requires
-- presence, a candidate with a player absent is removed (TICKET_REMOVED).
-- Returns the outbox ids of the fills.
local function serve_backfills(ctx, limit)
  local k = ctx.k
  local out = {}
  if not has(k, 'backfill_queue') then return out end
  local ids = redis.call('ZRANGE', k.backfill_queue, 0, limit - 1)
  if #ids == 0 then return out end
  local stored = redis.call('HMGET', k.backfills, unpack(ids))
  for i, id in ipairs(ids) do
    local b = stored[i] and cjson.decode(stored[i])
    if not b then
      -- Dropped by a result, which has no world keys: its index entries.
      BackfillStore.unindex_backfill(k, id)
    elseif b.expires > ctx.now then
      local gone, items = {}, {}
      for _, c in ipairs(backfill_candidates(ctx, b, BackfillStore.open_seats(b) + 8)) do
        if BackfillStore.open_seats(b) == 0 then break end
        local it = backfill_info(ctx, c.ticket, c.rating)
        if it and ctx.cfg.presence and not Matching.all_present(k.presence, it.players, ctx.now) then
          gone[#gone + 1] = c.ticket
        elseif it and not Blocks.blocked_with(ctx, it, items) then
          local t = backfill_team(ctx, b, it)
          if t then
            take_seats(ctx, b, it, t)
            items[#items + 1] = it
          end
        end
      end
      if #gone > 0 then
        Tickets.remove_tickets(ctx, gone, 'G')
        ctx.removed = (ctx.removed or 0) + #gone
      end
      if #items > 0 then
        local id = fill_backfill(ctx, b, items)
        if id ~= '' then out[#out + 1] = id end
      end
    end
  end
  return out
end

-- The module's face: what other files reach as Backfill.<name>.
Backfill.backfill_team = backfill_team
Backfill.take_seats = take_seats
Backfill.propose_backfill = propose_backfill
Backfill.end_backfill = end_backfill
Backfill.fill_backfill = fill_backfill
Backfill.backfill_info = backfill_info
Backfill.backfill_joiner = backfill_joiner
Backfill.backfill_target = backfill_target
Backfill.backfill_candidates = backfill_candidates
Backfill.serve_backfills = serve_backfills
Backfill.BACKFILLS_PER_JOIN = BACKFILLS_PER_JOIN
Backfill.BACKFILLS_PER_CALL = BACKFILLS_PER_CALL
end
