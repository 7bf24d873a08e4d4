-- _backfill.lua: backfills. A running match (ASSIGNED) whose players left
-- asks for new ones (backfill_request.lua): its open seats per team are
-- filled from the world's waiting tickets before any new match forms, by
-- joins (the joiner, when it fits) and by the matcher (the oldest waiting
-- tickets that fit, per backfill, oldest backfill first), with the match's
-- rules: a party whole and in one team with room for it; rated worlds: a
-- ticket's rating within the world's window around the match's reference
-- (the average of its current players), the window widening with the
-- backfill's own wait, and the team averages afterwards within the balance
-- window; worlds with regions: every new player's latency in the match's
-- region within the cap of the backfill's wait. A backfill lives while the
-- server renews it (keep-alive) and until its seats are filled, the match
-- finishes or its record expires.
--
-- Filled players are the match's "additions" (_lifecycle.lua): their
-- states point at the match, and one "B|<match>|<fill>" outbox entry tells
-- them (MATCH_FOUND marked backfill, then MATCH_ASSIGNED).
--
-- Keys: k.backfills (HASH match id -> backfill JSON), k.backfill_expiry
-- (ZSET "<world>|<match>" -> keep-alive deadline); the world's
-- backfill_queue (ZSET match id -> created ms: backfills with open seats,
-- oldest first) and backfill_ratings (ZSET match id -> reference rating,
-- rated worlds); its stats field `backfills` counts its backfills.
-- A backfill (cjson): { match, world, created, expires, fills (so far),
-- open = { seats per team }, counts = { players per team }, sums = {
-- rating sum per team } (rated), ref (reference rating, rated), region }.

-- Backfills a joiner is tried against.
local BACKFILLS_PER_JOIN = 8
-- Backfills one matcher call serves (bounds the call's time).
local BACKFILLS_PER_CALL = 1000

local function load_backfill(k, id)
  local raw = redis.call('HGET', k.backfills, id)
  if not raw then return nil end
  return cjson.decode(raw)
end

local function open_seats(b)
  local n = 0
  for _, seats in ipairs(b.open) do n = n + seats end
  return n
end

-- The average rating of the players the backfill's match has now.
local function backfill_ref(b)
  if not b.sums then return nil end
  local sum, n = 0, 0
  for t, s in ipairs(b.sums) do
    sum, n = sum + s, n + b.counts[t]
  end
  if n == 0 then return nil end
  return sum / n
end

-- Stores `b` and files it in its world's indices (`wk`).
local function save_backfill(k, wk, b)
  b.ref = backfill_ref(b)
  redis.call('HSET', k.backfills, b.match, cjson.encode(b))
  redis.call('ZADD', k.backfill_expiry, b.expires, b.world .. '|' .. b.match)
  if redis.call('ZADD', wk.backfill_queue, b.created, b.match) == 1 then
    redis.call('HINCRBY', wk.stats, 'backfills', 1)
  end
  if b.ref then redis.call('ZADD', wk.backfill_ratings, b.ref, b.match) end
end

-- Takes backfill `id` out of its world's indices (`wk`), counted out of
-- the world's backfills (stats field `backfills`: entries of
-- backfill_queue) when it was there.
local function unindex_backfill(wk, id)
  if redis.call('ZREM', wk.backfill_queue, id) == 1 then
    redis.call('HINCRBY', wk.stats, 'backfills', -1)
  end
  redis.call('ZREM', wk.backfill_ratings, id)
end

-- Deletes backfill `id` of `world` (its world keys `wk`; nil: the index
-- entries are dropped lazily when met, see serve_backfills).
local function drop_backfill(k, wk, world, id)
  redis.call('HDEL', k.backfills, id)
  redis.call('ZREM', k.backfill_expiry, world .. '|' .. id)
  if wk then unindex_backfill(wk, id) end
end

-- The team of backfill `b` the ticket `it` (a ticket info with .lat, its
-- latencies, in worlds with regions) may take seats in, or nil (see the
-- header for the rules). Of the teams that qualify: rated with balance,
-- the one whose averages end up closest; else the one with most open seats.
local function backfill_team(ctx, b, it)
  local cfg = ctx.cfg
  local wait = ctx.now - b.created
  if b.region then
    local cap = latency_cap(cfg.regions, wait)
    for j in ipairs(it.players) do
      local own = it.member_lats and it.member_lats[j] and it.member_lats[j][b.region]
      local ms = own or (it.lat and it.lat[b.region])
      if not ms or ms > cap then return nil end
    end
  end
  local rules = cfg.rules
  if rules and b.ref then
    local w = rated_window(rules, wait)
    if w and math.abs(it.rating - b.ref) > w then return nil end
  end
  local bw = rules and rules.balance and b.sums and rated_window(rules.balance, wait)
  local best, best_key = nil, nil
  for t, seats in ipairs(b.open) do
    if seats >= it.size then
      local key = -seats
      if rules and rules.balance and b.sums then
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
  return best
end

-- Seats ticket `it` in team `t` of `b` (in memory; fill_backfill writes).
local function take_seats(b, it, t)
  it.team = t
  b.open[t] = b.open[t] - it.size
  b.counts[t] = b.counts[t] + it.size
  if b.sums then b.sums[t] = b.sums[t] + it.sum end
end

-- One addition (see _lifecycle.lua): the ticket's players, team, fill,
-- ratings, data (verbatim JSON) and latencies in the match's region.
local function addition_json(it, b)
  local players, ratings, data, lats = {}, {}, {}, {}
  for j, p in ipairs(it.players) do
    players[j] = quote(p)
    if it.ratings then ratings[j] = num(it.ratings[j]) end
    local d = it.data and it.data[j] or ''
    data[j] = d ~= '' and d or 'null'
    if b.region then
      local own = it.member_lats and it.member_lats[j] and it.member_lats[j][b.region]
      lats[j] = num(own or it.lat[b.region])
    end
  end
  local s = '{"players":[' .. table.concat(players, ',') .. '],"team":' .. it.team .. ',"fill":' .. b.fills
    .. ',"data":[' .. table.concat(data, ',') .. ']'
  if it.ratings then s = s .. ',"ratings":[' .. table.concat(ratings, ',') .. ']' end
  if b.region then s = s .. ',"latencies":[' .. table.concat(lats, ',') .. ']' end
  return s .. '}'
end

-- Puts the tickets `items` (infos seated by take_seats) into backfill
-- `b`'s match: out of the queue, their players pointed at the match,
-- appended to its additions, one "B|<match>|<fill>" entry for them; a
-- backfill left without open seats is done. Returns the outbox id.
local function fill_backfill(ctx, b, items)
  local k, now = ctx.k, ctx.now
  local tickets, states, parts, n = {}, {}, {}, 0
  b.fills = b.fills + 1
  for i, it in ipairs(items) do
    tickets[i] = it.ticket
    if not it.data then it.data = { ticket_data(ctx, it.ticket) } end
    if ctx.cfg.regions and not it.lat then it.lat = latencies_of(ctx, { it.ticket })[1] end
    parts[i] = addition_json(it, b)
    for _, p in ipairs(it.players) do
      states[#states + 1] = p
      states[#states + 1] = b.match
      n = n + 1
    end
  end
  remove_tickets(ctx, tickets, nil, true)
  chunked('HSET', k.players, states, 2)
  local life = load_lifecycle(k, b.match)
  local joined = table.concat(parts, ',')
  life.additions = life.additions == '' and ('[' .. joined .. ']')
    or (string.sub(life.additions, 1, -2) .. ',' .. joined .. ']')
  save_lifecycle(k, b.match, life)
  if open_seats(b) == 0 then
    drop_backfill(k, k, b.world, b.match)
  else
    save_backfill(k, k, b)
  end
  record_rate(k.stats, now, ctx.cfg.window, n)
  local id = 'B|' .. b.match .. '|' .. b.fills
  outbox_add(k.outbox, { id }, 1, now)
  return id
end

-- A waiting ticket's info for backfilling (ticket_info, with its latencies
-- in worlds with regions), or nil when its party is gone.
local function backfill_info(ctx, ticket, rating)
  local it = ticket_info(ctx, ticket, rating)
  if it and ctx.cfg.regions and not is_party_ticket(ticket) then
    it.lat = latencies_of(ctx, { ticket })[1]
  end
  return it
end

-- Tries to seat the joining ticket `it` in one of the world's open
-- backfills (the nearest by reference in rated worlds, else the oldest; at
-- most BACKFILLS_PER_JOIN looked at). Returns the outbox id and the match
-- id, or nil.
local function backfill_joiner(ctx, it)
  local k = ctx.k
  local ids
  if ctx.cfg.rules then
    local w = ctx.cfg.rules.max
    ids = redis.call('ZRANGEBYSCORE', k.backfill_ratings, num(it.rating - w), num(it.rating + w),
      'LIMIT', 0, BACKFILLS_PER_JOIN)
  else
    ids = redis.call('ZRANGE', k.backfill_queue, 0, BACKFILLS_PER_JOIN - 1)
  end
  for _, id in ipairs(ids) do
    local b = load_backfill(k, id)
    if b and b.expires > ctx.now then
      local t = backfill_team(ctx, b, it)
      if t then
        take_seats(b, it, t)
        return fill_backfill(ctx, b, { it }), b.match
      end
    end
  end
  return nil
end

-- Candidates for backfill `b` among the waiting tickets, best first: in
-- its region (worlds with regions), the nearest to its reference (rated)
-- or the oldest; `fetch` of them.
local function backfill_candidates(ctx, b, fetch)
  local k, cfg = ctx.k, ctx.cfg
  local w = cfg.rules and b.ref and rated_window(cfg.rules, ctx.now - b.created)
  local out = {}
  if b.region then
    local index = nil
    for i, name in ipairs(cfg.regions.names) do
      if name == b.region then index = i end
    end
    if not index then return out end
    local found = region_candidates(ctx, index, cfg.rules and b.ref and { rating = b.ref, window = w }, fetch, 0)
    for _, c in ipairs(found) do out[#out + 1] = { ticket = c.ticket, rating = c.rating } end
  elseif cfg.rules and b.ref then
    for _, c in ipairs(nearest(k.ratings, b.ref, w, fetch)) do
      out[#out + 1] = { ticket = member_ticket(c[1]), rating = c[2] }
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
  local ids = redis.call('ZRANGE', k.backfill_queue, 0, limit - 1)
  local out = {}
  if #ids == 0 then return out end
  local stored = redis.call('HMGET', k.backfills, unpack(ids))
  for i, id in ipairs(ids) do
    local b = stored[i] and cjson.decode(stored[i])
    if not b then
      -- Dropped by a result, which has no world keys: its index entries.
      unindex_backfill(k, id)
    elseif b.expires > ctx.now then
      local gone, items = {}, {}
      for _, c in ipairs(backfill_candidates(ctx, b, open_seats(b) + 8)) do
        if open_seats(b) == 0 then break end
        local it = backfill_info(ctx, c.ticket, c.rating)
        if it and ctx.cfg.presence and not all_present(k.presence, it.players, ctx.now) then
          gone[#gone + 1] = c.ticket
        elseif it then
          local t = backfill_team(ctx, b, it)
          if t then
            take_seats(b, it, t)
            items[#items + 1] = it
          end
        end
      end
      if #gone > 0 then
        remove_tickets(ctx, gone, 'G')
        ctx.removed = (ctx.removed or 0) + #gone
      end
      if #items > 0 then out[#out + 1] = fill_backfill(ctx, b, items) end
    end
  end
  return out
end
