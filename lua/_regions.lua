-- _regions.lua: worlds whose rule set names regions (docs/rules.md). Each
-- ticket carries the latency its player measured to each region (a party's:
-- the worst of its members'); a match forms only in a region where every
-- member's latency is within the cap of the anchor's own wait, cap = min(
-- base + per_sec * wait, max), and (optionally) the best and worst member
-- are within `spread` of each other; among the regions that qualify, the
-- one with the lowest worst latency is chosen (ties: the lower average).
--
-- cfg.regions (see _config.lua): { names = { name... }, index = { name ->
-- i }, base, per_sec, cap (ms), spread (ms or nil) }.
-- Keys (ctx.k): latencies (HASH ticket -> "name=ms,name=ms", the regions
-- within the cap only), region_queue (ZSET "<region>|<ticket>" -> band(i) +
-- seq: each region's tickets in FIFO order), region_ratings (rated worlds:
-- ZSET "<region>|<seq, 12 digits>:<ticket>" -> band(i) + rating - min: each
-- region's tickets by rating).
-- @include _lib _players

local Regions = {}
do

-- Region i's band of scores: a FIFO queue entry is BAND * i + seq
-- (sequences stay far below 2^40; i * 2^40 stays exact in a double).
local QUEUE_BAND = 1099511627776

-- A ticket's latencies as stored: "name=ms,...".
local function encode_latencies(lat)
  local parts = {}
  for name, ms in pairs(lat) do parts[#parts + 1] = name .. '=' .. ms end
  table.sort(parts)
  return table.concat(parts, ',')
end

local function decode_latencies(s)
  local lat = {}
  for name, ms in string.gmatch(s or '', '([^=,]+)=(%d+)') do lat[name] = tonumber(ms) end
  return lat
end

-- The anchor's latency cap after waiting `wait_ms`.
local function latency_cap(regions, wait_ms)
  local cap = regions.base + regions.per_sec * wait_ms / 1000
  if cap > regions.cap then cap = regions.cap end
  return cap
end

-- The rating band's width: every rating of the world, and a window around
-- it, fit in one band.
local function rating_band(cfg)
  return 2 * (cfg.max_rating - cfg.min_rating) + 2
end

-- The region entries of one ticket: for each region within the cap, its
-- queue member and score (and, rated, its ratings member and score).
local function region_entries(cfg, ticket, seq, lat, rating)
  local out = {}
  for i, name in ipairs(cfg.regions.names) do
    local ms = lat[name]
    if ms and ms <= cfg.regions.cap then
      local e = { name = name, member = name .. '|' .. ticket, score = QUEUE_BAND * i + seq }
      if rating then
        e.rated_member = name .. '|' .. Players.rating_member(seq, ticket)
        e.rated_score = rating_band(cfg) * i + (rating - cfg.min_rating)
      end
      out[#out + 1] = e
    end
  end
  return out
end

-- Adds a waiting ticket to its regions' structures.
local function add_regional(ctx, ticket, seq, lat, rating)
  local k = ctx.k
  local stored = {}
  for name, ms in pairs(lat) do
    if ms <= ctx.cfg.regions.cap then stored[name] = ms end
  end
  redis.call('HSET', k.latencies, ticket, encode_latencies(stored))
  for _, e in ipairs(region_entries(ctx.cfg, ticket, seq, stored, rating)) do
    redis.call('ZADD', k.region_queue, string.format('%d', e.score), e.member)
    if e.rated_member then
      redis.call('ZADD', k.region_ratings, num(e.rated_score), e.rated_member)
    end
  end
end

-- Removes `tickets` from their regions' structures (worlds with regions
-- only; one EXISTS in others). Runs before the tickets leave the queue
-- (their sequence is read from it). Needs no configuration: the members
-- are rebuilt from the stored latencies.
local function drop_regional(ctx, tickets)
  local k = ctx.k
  if #tickets == 0 or not has(k, 'latencies') or redis.call('EXISTS', k.latencies) == 0 then return end
  local stored = redis.call('HMGET', k.latencies, unpack(tickets))
  local queue_members, rated_members = {}, {}
  for i, t in ipairs(tickets) do
    local s = stored[i]
    if s then
      local seq = tonumber(redis.call('ZSCORE', k.queue, t))
      for name in string.gmatch(s, '([^=,]+)=%d+') do
        queue_members[#queue_members + 1] = name .. '|' .. t
        if seq then rated_members[#rated_members + 1] = name .. '|' .. Players.rating_member(seq, t) end
      end
    end
  end
  chunked('HDEL', k.latencies, tickets, 1)
  if #queue_members > 0 then chunked('ZREM', k.region_queue, queue_members, 1) end
  if #rated_members > 0 and has(k, 'region_ratings') and redis.call('EXISTS', k.region_ratings) == 1 then
    chunked('ZREM', k.region_ratings, rated_members, 1)
  end
end

-- The latencies of `tickets` (ids), each a table name -> ms.
local function latencies_of(ctx, tickets)
  local out = {}
  if #tickets == 0 then return out end
  if not has(ctx.k, 'latencies') then
    -- A world without regions: nobody has latencies.
    for i = 1, #tickets do out[i] = {} end
    return out
  end
  local stored = redis.call('HMGET', ctx.k.latencies, unpack(tickets))
  for i = 1, #tickets do out[i] = decode_latencies(stored[i] or '') end
  return out
end

-- Up to `fetch` candidates for region `i` around the anchor, after the
-- first `skip_n` (paging): the oldest tickets queued there (FIFO worlds),
-- or the nearest rated within the window `w` of rating `r` (nil: no limit)
-- on either side, nearest first, equally near ones oldest first. Returns
-- { ticket, seq (FIFO), rating and member (the ratings member, rated) } in
-- order of preference, and whether more may follow.
local function region_candidates(ctx, i, rated, fetch, skip_n)
  local k, cfg = ctx.k, ctx.cfg
  local name = cfg.regions.names[i]
  local skip = #name + 2
  local out = {}
  if not rated then
    local lo = string.format('%d', QUEUE_BAND * i)
    local hi = '(' .. string.format('%d', QUEUE_BAND * (i + 1))
    local found = redis.call('ZRANGEBYSCORE', k.region_queue, lo, hi, 'WITHSCORES', 'LIMIT', skip_n, fetch)
    for j = 1, #found, 2 do
      out[#out + 1] = { ticket = string.sub(found[j], skip), seq = tonumber(found[j + 1]) - QUEUE_BAND * i }
    end
    return out, #found == 2 * fetch
  end
  local band = rating_band(cfg)
  local base = band * i - cfg.min_rating
  local r, w = rated.rating, rated.window
  local lo = w and math.max(r - w, cfg.min_rating) or cfg.min_rating
  local hi = w and math.min(r + w, cfg.max_rating) or cfg.max_rating
  local at = num(base + r)
  local below = redis.call('ZREVRANGEBYSCORE', k.region_ratings, '(' .. at, num(base + lo),
    'WITHSCORES', 'LIMIT', skip_n, fetch)
  local above = redis.call('ZRANGEBYSCORE', k.region_ratings, at, num(base + hi),
    'WITHSCORES', 'LIMIT', skip_n, fetch)
  for _, list in ipairs({ below, above }) do
    for j = 1, #list, 2 do
      local rating = tonumber(list[j + 1]) - base
      local member = string.sub(list[j], skip)
      out[#out + 1] = { ticket = Players.member_ticket(member), rating = rating, member = member, d = math.abs(rating - r) }
    end
  end
  table.sort(out, function(a, b)
    if a.d ~= b.d then return a.d < b.d end
    return a.member < b.member
  end)
  return out, #below == 2 * fetch or #above == 2 * fetch
end

-- What a ticket holds in its regions' structures, to put back as it was (a
-- cancelled ready check requeues tickets at their place): { l = stored
-- latencies, q = { member, score, ... }, r = { member, score, ... } }, or
-- nil in a world without regions. Runs while the ticket still waits.
local function capture_regional(k, ticket, seq)
  if not has(k, 'latencies') then return nil end
  local l = redis.call('HGET', k.latencies, ticket)
  if not l then return nil end
  local out = { l = l, q = {}, r = {} }
  for name in string.gmatch(l, '([^=,]+)=%d+') do
    local m = name .. '|' .. ticket
    local s = redis.call('ZSCORE', k.region_queue, m)
    if s then
      out.q[#out.q + 1] = m
      out.q[#out.q + 1] = s
    end
    local rm = name .. '|' .. Players.rating_member(seq, ticket)
    local rs = redis.call('ZSCORE', k.region_ratings, rm)
    if rs then
      out.r[#out.r + 1] = rm
      out.r[#out.r + 1] = rs
    end
  end
  return out
end

local function restore_regional(k, ticket, c)
  if not c then return end
  redis.call('HSET', k.latencies, ticket, c.l)
  for i = 1, #c.q, 2 do redis.call('ZADD', k.region_queue, c.q[i + 1], c.q[i]) end
  for i = 1, #c.r, 2 do redis.call('ZADD', k.region_ratings, c.r[i + 1], c.r[i]) end
end

-- Most milliseconds a reported latency may be (as the HTTP API documents).
local MAX_LATENCY_MS = 10000

-- A joining player's latencies, as the store passes them ("name=ms,...",
-- validated there too): a table name -> ms, or nil and what is wrong. An
-- empty string in a world with a default region means that region at the
-- base cap; in one without, no latencies (the caller answers
-- LATENCY_REQUIRED).
local function joining_latencies(cfg, s)
  if not cfg.regions then
    if s ~= '' then return nil, 'latencies given for a world without regions' end
    return nil
  end
  if s == '' then
    if cfg.regions.default then return { [cfg.regions.default] = cfg.regions.base } end
    return nil
  end
  local lat, n = {}, 0
  for part in string.gmatch(s, '[^,]+') do
    local name, ms = string.match(part, '^([a-z0-9-]+)=(%d+)$')
    ms = tonumber(ms)
    if not name or not cfg.regions.index[name] or lat[name] or not ms or ms < 1 or ms > MAX_LATENCY_MS then
      return nil, 'bad latencies: ' .. part
    end
    lat[name], n = ms, n + 1
  end
  if n == 0 then return nil, 'bad latencies' end
  return lat
end

-- A party's latency to each region: the worst of its members' (a region
-- counts only when every member reported it).
local function party_latencies(party)
  local out = nil
  for _, m in ipairs(party.members) do
    local lat = decode_latencies(m.l)
    if out == nil then
      out = lat
    else
      for name, ms in pairs(out) do
        local other = lat[name]
        if not other then out[name] = nil elseif other > ms then out[name] = other end
      end
    end
  end
  return out or {}
end

-- The module's face: what other files reach as Regions.<name>.
Regions.encode_latencies = encode_latencies
Regions.decode_latencies = decode_latencies
Regions.latency_cap = latency_cap
Regions.rating_band = rating_band
Regions.region_entries = region_entries
Regions.add_regional = add_regional
Regions.drop_regional = drop_regional
Regions.latencies_of = latencies_of
Regions.region_candidates = region_candidates
Regions.capture_regional = capture_regional
Regions.restore_regional = restore_regional
Regions.joining_latencies = joining_latencies
Regions.party_latencies = party_latencies
Regions.QUEUE_BAND = QUEUE_BAND
Regions.MAX_LATENCY_MS = MAX_LATENCY_MS
end
