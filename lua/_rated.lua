-- _rated.lua: rated worlds (see docs/rules.md). A match is formed around an
-- anchor ticket; every ticket's rating (a party's: its aggregate) lies
-- within the anchor's window min(base + per_sec * wait, max) of the
-- anchor's rating, where wait is the anchor's own wait (so the window never
-- resets when others join); past `relax_ms` the anchor takes the nearest
-- tickets, whatever their rating. With teams, the team averages may differ
-- by at most the balance window, which widens with the anchor's wait the
-- same way (and is lifted at `relax_ms` too).
-- rules (cfg.rules, see _config.lua): { base, per_sec, max, relax_ms,
-- retry_ms, balance = { base, per_sec, max, relax_ms } or nil }.
-- @include _lib _blocks _match_rules _matching _players _regions _rule_index _teams _tickets

local Rated = {}
do

-- The anchor's window after waiting `wait_ms`; nil means no limit (relaxed).
local function rated_window(rules, wait_ms)
  if wait_ms >= rules.relax_ms then return nil end
  local w = rules.base + rules.per_sec * wait_ms / 1000
  if w > rules.max then w = rules.max end
  return w
end

-- Up to `fetch` tickets on each side of rating `r` within `w` (nil = no
-- limit), merged nearest first; equally near ones oldest first. Returns an
-- array of { member, rating, distance }.
local function nearest(ratings_key, r, w, fetch)
  local lo = w and num(r - w) or '-inf'
  local hi = w and num(r + w) or '+inf'
  local at = num(r)
  local below = redis.call('ZREVRANGEBYSCORE', ratings_key, '(' .. at, lo, 'WITHSCORES', 'LIMIT', 0, fetch)
  local above = redis.call('ZRANGEBYSCORE', ratings_key, at, hi, 'WITHSCORES', 'LIMIT', 0, fetch)
  local out, n = {}, 0
  local function add(list, reversed_ties)
    local first = n + 1
    for i = 1, #list, 2 do
      local rating = tonumber(list[i + 1])
      n = n + 1
      out[n] = { list[i], rating, math.abs(rating - r) }
    end
    if reversed_ties and #list == 2 * fetch then
      -- The farthest group of equal ratings may be cut short, and a reverse
      -- range lists ties newest first: read that group again oldest first.
      local edge = out[n][2]
      while n >= first and out[n][2] == edge do
        out[n] = nil
        n = n - 1
      end
      local group = redis.call('ZRANGEBYSCORE', ratings_key, num(edge), num(edge), 'WITHSCORES', 'LIMIT', 0, fetch)
      for i = 1, #group, 2 do
        n = n + 1
        out[n] = { group[i], edge, math.abs(edge - r) }
      end
    end
  end
  add(below, true)
  add(above, false)
  -- Members start with the zero-padded sequence: comparing them compares age.
  table.sort(out, function(a, b)
    if a[3] ~= b[3] then return a[3] < b[3] end
    return a[1] < b[1]
  end)
  return out
end

-- A FIFO world's candidates near the anchor's number (a distance rule's
-- index, attr-numbers): the `page` nearest on each side within the
-- distance in force, and the `page` oldest without a number, oldest
-- first: { { ticket, seq } ... }, and whether that was all of them.
local function number_candidates(k, source, page)
  local near = nearest(k.attr_numbers, source.near, source.within, page)
  local missing = redis.call('ZRANGEBYSCORE', k.attr_numbers, '+inf', '+inf', 'LIMIT', 0, page)
  local members = {}
  for i, c in ipairs(near) do members[i] = c[1] end
  for _, m in ipairs(missing) do members[#members + 1] = m end
  -- Members start with the zero-padded sequence: sorting them sorts by age.
  table.sort(members)
  local out = {}
  for i, m in ipairs(members) do
    out[i] = { ticket = Players.member_ticket(m), seq = tonumber(string.sub(m, 1, Players.SEQ_DIGITS)) }
  end
  return out, #near < page and #missing < page
end

-- Whether an anchor of rating `r` that has waited `wait_ms` can find
-- `seats_needed` more seats within its window at all, counting each other
-- ticket there as at most `ticket_seats` seats: one ZCOUNT (O(log N))
-- instead of an attempt's range reads, so a join into a sparse window
-- stays cheap. The anchor's own ratings entry is counted and taken off.
-- True only means a match may form (counted tickets may be expired, absent
-- or not fit).
local function rated_may_match(ctx, r, wait_ms, seats_needed, ticket_seats)
  local w = rated_window(ctx.cfg.rules, wait_ms)
  if not w then return true end
  -- Numbers, not num(): Redis formats a number argument with %.17g itself,
  -- exactly and for less than num's string.format.
  local others = redis.call('ZCOUNT', ctx.k.ratings, r - w, r + w) - 1
  return others * ticket_seats >= seats_needed
end

-- A solo ticket as ticket_info describes it, from its queue entry alone
-- (its ratings entry in rated worlds); its data is read when the match is
-- recorded (data = nil).
local function solo_info(t, rating, seq)
  return { ticket = t, size = 1, players = { t }, ratings = rating and { rating } or nil, sum = rating or 0, rating = rating, seq = seq }
end

-- When a ticket tried (or joined) at `now` is due again: a fifth early, so
-- a matcher tick that comes a little early (ticks are one retry apart) still
-- finds it due and it is tried every tick, never every other one.
local function next_due(cfg, now)
  return now + cfg.retry_ms - math.floor(cfg.retry_ms / 5)
end

-- Queues `ticket` to be tried as an anchor again after the retry delay.
local function retry_later(ctx, ticket)
  redis.call('ZADD', ctx.k.due, next_due(ctx.cfg, ctx.now), ticket)
end

-- The anchor's state: { seq, rating (rated worlds), joined } read from its
-- ticket (and ratings entry), or nil when it waits no more (its due entry
-- is dropped).
local function read_anchor(ctx, anchor)
  local k = ctx.k
  local _, seq, joined = Players.waiting_ticket(k, anchor)
  if not seq then
    redis.call('ZREM', k.due, anchor)
    return nil
  end
  local state = { seq = seq, joined = joined }
  if ctx.cfg.rules then
    state.rating = tonumber(redis.call('ZSCORE', k.ratings, Players.rating_member(seq, anchor)))
    if not state.rating then
      redis.call('ZREM', k.due, anchor)
      return nil
    end
  end
  return state
end

-- Fills a match around the anchor `a` from `candidates` (ticket infos in
-- order of preference, each with .seq): the first that fit whole (a party
-- is never split; the team packing must stay possible), or, when taking
-- them in order strands the match, the first set that fills it
-- (fill_exactly); then, with teams in a rated world, the balance check
-- (`balance_window`: nil = none). `accept(info)` may refuse a candidate
-- given those chosen so far; `final(items)` may refuse the whole match (see
-- with_rules). `opts.resume`, a table, keeps where the pass over the
-- candidates stopped: a call with the same candidates and more after them
-- goes on from there (what it would have chosen from them again).
-- Returns the tickets' infos, or nil.
local function fill_match(ctx, a, candidates, opts)
  local seats, teams = ctx.cfg.seats, ctx.cfg.teams
  local cap = seats / teams
  local need = seats - a.size
  local kept = opts.resume
  local remaining, items, pool, from = need, { a }, {}, 1
  if kept and kept.items then remaining, items, pool, from = kept.remaining, kept.items, kept.pool, kept.from end
  for i = from, #candidates do
    if remaining == 0 then break end
    local info = candidates[i]
    from = i + 1
    if info.size <= need and (not opts.accept or opts.accept(info, items)) and not Blocks.blocked_with(ctx, info, items) then
      pool[#pool + 1] = info
      if info.size <= remaining then
        items[#items + 1] = info
        if teams == 1 or Teams.can_pack(items, teams, cap) then
          remaining = remaining - info.size
        else
          items[#items] = nil
        end
      end
    end
  end
  if kept then kept.remaining, kept.items, kept.pool, kept.from = remaining, items, pool, from end
  if remaining > 0 then
    local picked = Teams.fill_exactly(a, pool, { need = need, teams = teams, cap = cap })
    if not picked then return nil end
    items = { a }
    for i, j in ipairs(picked) do items[i + 1] = pool[j] end
    if opts.check and not opts.check(items) then return nil end
    -- The pool's tickets were each kept clear of those chosen before them,
    -- not of one another.
    if Blocks.blocked_among(ctx, items) then return nil end
  end
  if opts.final and not opts.final(items) then return nil end
  if teams > 1 and ctx.cfg.rules then
    local assign, sums = Teams.pack_teams(items, teams, cap)
    -- A quota or total per team decided the teams (MatchRules.check).
    if items.assign then assign, sums = items.assign, Teams.team_sums(items, items.assign, teams) end
    local bw = ctx.cfg.rules.balance and rated_window(ctx.cfg.rules.balance, opts.wait)
    if not assign or (bw and Teams.sums_spread(sums) / cap > bw) then return nil end
  end
  return items
end

-- Infos for candidate tickets (ids, with ratings and sequences), parties
-- loaded, players without a live connection (presence worlds) collected in
-- `gone` instead.
local function candidate_infos(ctx, candidates, gone)
  local cfg, now = ctx.cfg, ctx.now
  local out = {}
  for _, c in ipairs(candidates) do
    local info
    if Players.is_party_ticket(c.ticket) then
      info = Matching.ticket_info(ctx, c.ticket, c.rating)
      if info then info.seq = c.seq end
    else
      info = solo_info(c.ticket, c.rating, c.seq)
    end
    if info and cfg.presence and not Matching.all_present(ctx.k.presence, info.players, now) then
      gone[#gone + 1] = c.ticket
    elseif info then
      out[#out + 1] = info
    end
  end
  if cfg.attributes then MatchRules.load(ctx, out) end
  return out
end

-- `opts` of fill_match with the world's match rules added (worlds with
-- attributes): a candidate is taken only when the rules that more tickets
-- cannot mend still hold with it, and the whole match must satisfy every
-- rule in force at the anchor's wait.
local function with_rules(ctx, a, wait, opts)
  local cfg = ctx.cfg
  if not cfg.match_rules then return opts end
  local accept = opts.accept
  local m = { a = a, wait = wait }
  local fits = MatchRules.fitter(cfg, a, wait)
  opts.accept = function(info, chosen)
    if accept and not accept(info, chosen) then return false end
    return fits(info, chosen)
  end
  opts.final = function(items)
    m.items = items
    return MatchRules.holds(cfg, m, false)
  end
  return opts
end

-- A match around the anchor `a` in a world with match rules, from
-- candidates read in pages (growing fourfold, at most MatchRules.SCAN_LIMIT
-- tickets): FIFO, the oldest tickets; rated, the nearest within the
-- window. opts: { wait (the anchor's, ms), rating and window (rated; nil
-- window: no limit), gone (collects absent players' tickets) }. Returns
-- the items, or nil.
local function rules_match(ctx, a, opts)
  local k, cfg = ctx.k, ctx.cfg
  local wait, r, w, gone = opts.wait, opts.rating, opts.window, opts.gone
  -- An anchor that alone breaks a rule no ticket can mend (a build below
  -- the reference) cannot be matched: no candidate is read for it.
  if cfg.match_rules and not MatchRules.holds(cfg, { items = { a }, a = a, wait = wait }, true) then return nil end
  -- FIFO: while an indexed rule is in force, only the tickets its index
  -- gives for the anchor's value can fit (RuleIndex.anchor_source).
  local source = not cfg.rules and RuleIndex.anchor_source(cfg, a, wait) or nil
  local near = source and source.near
  -- FIFO pages go on from the last (their infos are kept); rated pages and
  -- those nearest a number are read again, wider.
  local fill_opts = with_rules(ctx, a, wait, { wait = wait, resume = not cfg.rules and not near and {} or nil })
  local limit = cfg.scan_limit or MatchRules.SCAN_LIMIT
  local page = math.min((cfg.seats - a.size + 8) * 2, limit)
  local anchor_member = cfg.rules and Players.rating_member(a.seq, a.ticket)
  local infos, read = {}, 0
  while true do
    local found = {}
    if cfg.rules then
      for _, c in ipairs(nearest(k.ratings, r, w, page)) do
        if c[1] ~= anchor_member then
          found[#found + 1] = {
            ticket = Players.member_ticket(c[1]), rating = c[2], seq = tonumber(string.sub(c[1], 1, Players.SEQ_DIGITS)),
          }
        end
      end
      infos = candidate_infos(ctx, found, gone)
    else
      -- The queue still holds tickets an earlier attempt of this call took
      -- (they leave it when the call records its matches): ctx.taken.
      local taken = ctx.taken or {}
      local list, whole
      if near then
        list, whole = number_candidates(k, source, page)
      elseif source then
        -- Two bands' worth of candidates per page, shared by the bands.
        local per = math.ceil(2 * page / #source.bands)
        list, whole = RuleIndex.band_candidates(k, source, read, per - read)
        read = per
      else
        local range = redis.call('ZRANGE', k.queue, read, page - 1, 'WITHSCORES')
        list, whole = {}, #range < 2 * (page - read)
        for i = 1, #range, 2 do list[#list + 1] = { ticket = range[i], seq = tonumber(range[i + 1]) } end
        read = page
      end
      for _, c in ipairs(list) do
        if c.ticket ~= a.ticket and not taken[c.ticket] then found[#found + 1] = c end
      end
      if near then infos = {} end
      for _, info in ipairs(candidate_infos(ctx, found, gone)) do infos[#infos + 1] = info end
      found.whole = whole
    end
    local items = fill_match(ctx, a, infos, fill_opts)
    -- A short page was the whole window.
    local whole = found.whole or (cfg.rules and #found < page - 1)
    if items or whole or page >= limit then return items end
    page = math.min(page * 4, limit)
  end
end

-- Each player's latency in region `name` among `items` (a party's members
-- their own, as they reported it), the worst and the average.
local function region_latencies(items, lat_of, name)
  local players, worst, sum, n = {}, 0, 0, 0
  for _, it in ipairs(items) do
    for j, p in ipairs(it.players) do
      local own = it.member_lats and it.member_lats[j] and it.member_lats[j][name]
      local ms = own or lat_of[it.ticket][name]
      players[p] = ms
      if ms > worst then worst = ms end
      sum, n = sum + ms, n + 1
    end
  end
  return players, worst, sum / n
end

-- Most candidates one anchor looks at in one region.
local REGION_SCAN_LIMIT = 256

-- The best match around the anchor over the regions where the anchor's
-- latency is within its cap: in each, candidates from that region (the
-- oldest, or the nearest rated within the window) whose latency is within
-- the cap and the spread; the region whose match has the lowest worst
-- latency wins (ties: the lower average). Returns the items with
-- items.region = { name, players = player -> ms, worst }, or nil.
local function regional_match(ctx, a, opts)
  local cfg = ctx.cfg
  local regions = cfg.regions
  local cap = Regions.latency_cap(regions, opts.wait)
  local lat_of = { [a.ticket] = opts.anchor_lat }
  local best, best_worst, best_avg = nil, nil, nil
  for i, name in ipairs(regions.names) do
    local own = opts.anchor_lat[name]
    if own and own <= cap then
      -- Tickets are filed in every region within the widest cap, so while
      -- the anchor's cap is narrower some of them are over it: page on
      -- (pages doubling) until enough are within, or REGION_SCAN_LIMIT
      -- were looked at.
      local want = cfg.seats - a.size + 8
      local within, looked, page, more = {}, 0, want, true
      while more and #within < want and looked < REGION_SCAN_LIMIT do
        local found
        found, more = Regions.region_candidates(ctx, i, opts.rated, page, looked)
        looked = looked + page
        page = page * 2
        local tickets, kept = {}, {}
        for _, c in ipairs(found) do
          if c.ticket ~= a.ticket then
            if c.member then c.seq = tonumber(string.sub(c.member, 1, Players.SEQ_DIGITS)) end
            kept[#kept + 1] = c
            tickets[#tickets + 1] = c.ticket
          end
        end
        local lats = Regions.latencies_of(ctx, tickets)
        for j, c in ipairs(kept) do
          local ms = lats[j][name]
          if ms and ms <= cap then
            lat_of[c.ticket] = lats[j]
            within[#within + 1] = c
          end
        end
      end
      local spread = regions.spread
      local function fits(lo, hi) return not spread or hi - lo <= spread end
      local items = fill_match(ctx, a, candidate_infos(ctx, within, opts.gone), with_rules(ctx, a, opts.wait, {
        wait = opts.wait,
        accept = function(info, chosen)
          local lo, hi = own, own
          for _, it in ipairs(chosen) do
            local ms = lat_of[it.ticket][name]
            if ms < lo then lo = ms end
            if ms > hi then hi = ms end
          end
          local ms = lat_of[info.ticket][name]
          return fits(math.min(lo, ms), math.max(hi, ms))
        end,
        check = function(chosen)
          local lo, hi = math.huge, -math.huge
          for _, it in ipairs(chosen) do
            local ms = lat_of[it.ticket][name]
            if ms < lo then lo = ms end
            if ms > hi then hi = ms end
          end
          return fits(lo, hi)
        end,
      }))
      if items then
        local players, worst, avg = region_latencies(items, lat_of, name)
        if not best or worst < best_worst or (worst == best_worst and avg < best_avg) then
          best, best_worst, best_avg = items, worst, avg
          best.region = { name = name, players = players, worst = worst }
        end
      end
    end
  end
  return best
end

-- One attempt to form a match of cfg.seats seats in cfg.teams teams around
-- `anchor` (a ticket id) in a rated world or one with regions: rated, the
-- nearest tickets within the anchor's window; with regions, in the best
-- region where everyone's latency is within the anchor's cap (see
-- regional_match), the oldest there (FIFO) or the nearest within the window
-- (rated). Returns the tickets' infos, in queue order, after taking them out
-- of the ratings, due and region structures; or nil when no match can be
-- formed yet (the anchor is then due again after the retry). In a world
-- that requires presence, tickets with a player without a live connection
-- met on the way are removed (TICKET_REMOVED), counted in ctx.removed.
-- `known` ({ seq, rating, joined, data, lat }, optional): the anchor's
-- state when the caller has just written it (a join), which spares reading
-- it back.
local function anchored_attempt(ctx, anchor, known)
  local k, cfg, now = ctx.k, ctx.cfg, ctx.now
  local rules = cfg.rules
  local state = known or read_anchor(ctx, anchor)
  if not state then return nil end
  local r = state.rating
  local a
  if Players.is_party_ticket(anchor) then
    a = Matching.ticket_info(ctx, anchor, r)
    if not a then
      redis.call('ZREM', k.due, anchor)
      return nil
    end
  else
    a = solo_info(anchor, r)
    a.data = { state.data or Players.ticket_data(ctx, anchor) }
  end
  a.seq = state.seq
  if cfg.attributes then
    if state.attrs then
      a.attrs_text, a.attrs = state.attrs, MatchRules.decode_stored(state.attrs, cfg.attributes.by_name)
    else
      MatchRules.load(ctx, { a })
    end
  end
  if cfg.presence and not Matching.all_present(k.presence, a.players, now) then
    Tickets.remove_tickets(ctx, { anchor }, 'G')
    ctx.removed = (ctx.removed or 0) + 1
    return nil
  end
  local wait = now - (state.joined or now)
  local w = rules and rated_window(rules, wait)
  local gone = {}
  local items
  if cfg.regions then
    items = regional_match(ctx, a, {
      wait = wait, gone = gone, rated = rules and { rating = r, window = w },
      anchor_lat = state.lat or Regions.latencies_of(ctx, { anchor })[1],
    })
  elseif cfg.attributes then
    items = rules_match(ctx, a, { wait = wait, rating = r, window = w, gone = gone })
  else
    local anchor_member = Players.rating_member(state.seq, anchor)
    local found = {}
    for _, c in ipairs(nearest(k.ratings, r, w, cfg.seats - a.size + 8)) do
      if c[1] ~= anchor_member then
        found[#found + 1] = {
          ticket = Players.member_ticket(c[1]), rating = c[2], seq = tonumber(string.sub(c[1], 1, Players.SEQ_DIGITS)),
        }
      end
    end
    items = fill_match(ctx, a, candidate_infos(ctx, found, gone), { wait = wait })
  end
  if #gone > 0 then
    Tickets.remove_tickets(ctx, gone, 'G')
    ctx.removed = (ctx.removed or 0) + #gone
  end
  if not items then
    retry_later(ctx, anchor)
    return nil
  end
  -- Queue order.
  table.sort(items, function(x, y) return x.seq < y.seq end)
  if cfg.attributes then items.tail = MatchRules.record_fields(cfg, items, a, wait) end
  local tickets, members = {}, {}
  for i, it in ipairs(items) do
    tickets[i] = it.ticket
    members[i] = Players.rating_member(it.seq, it.ticket)
  end
  -- A proposal files them back where they were if it is cancelled.
  if cfg.accept and cfg.regions then
    for _, it in ipairs(items) do it.regional = Regions.capture_regional(k, it.ticket, it.seq) end
  end
  Regions.drop_regional(ctx, tickets)
  RuleIndex.drop(ctx, tickets)
  if cfg.attributes and not rules then
    ctx.taken = ctx.taken or {}
    for _, t in ipairs(tickets) do ctx.taken[t] = true end
  end
  if rules then redis.call('ZREM', k.ratings, unpack(members)) end
  redis.call('ZREM', k.due, unpack(tickets))
  return items
end

-- Records the groups anchored attempts formed (lists of ticket infos,
-- each with .region in worlds with regions): solo tickets in one team
-- without a ready check take the fast path, anything else record_groups.
local function record_rated(ctx, groups)
  if #groups == 0 then return {}, {} end
  local simple = ctx.cfg.teams == 1 and not ctx.cfg.accept
  for _, items in ipairs(groups) do
    for _, it in ipairs(items) do
      if it.party then simple = false end
    end
  end
  local regions, tails = nil, nil
  if ctx.cfg.regions then
    regions = {}
    for g, items in ipairs(groups) do regions[g] = items.region end
  end
  if ctx.cfg.attributes then
    tails = {}
    for g, items in ipairs(groups) do tails[g] = items.tail end
  end
  if not simple then
    return Matching.record_groups(ctx, groups, { rated = ctx.cfg.rules ~= nil, regions = regions })
  end
  local players, ratings, n = {}, ctx.cfg.rules and {} or nil, 0
  for _, items in ipairs(groups) do
    for _, it in ipairs(items) do
      n = n + 1
      players[n] = it.ticket
      if ratings then ratings[it.ticket] = it.ratings[1] end
    end
  end
  return Matching.record_matches(ctx, players, #groups, { ratings = ratings, regions = regions, tails = tails })
end

-- The matcher's step for a rated world: removes expired tickets first, then
-- tries up to `max_anchors` due anchors (oldest first) and records every
-- match formed. Returns the records (JSON), their outbox ids, expired and
-- absent counts, and whether more anchors are due right now.
local function form_rated(ctx, max_anchors)
  local k = ctx.k
  local expired, more_expired = Tickets.sweep_expired(ctx, Matching.MATCH_SWEEP_LIMIT)
  if more_expired then
    return {}, {}, #expired, 0, true
  end
  local due = redis.call('ZRANGEBYSCORE', k.due, '-inf', ctx.now, 'LIMIT', 0, max_anchors)
  local order = {}
  for i, t in ipairs(due) do
    order[i] = { tonumber(redis.call('ZSCORE', k.queue, t)) or 0, t }
  end
  table.sort(order, function(a, b) return a[1] < b[1] end)
  local groups = {}
  for _, entry in ipairs(order) do
    local anchor = entry[2]
    -- An anchor may already have been taken into an earlier group.
    if redis.call('ZSCORE', k.due, anchor) then
      local items = anchored_attempt(ctx, anchor)
      if items then groups[#groups + 1] = items end
    end
  end
  local records, ids = record_rated(ctx, groups)
  return records, ids, #expired, ctx.removed or 0, #due == max_anchors
end

-- The module's face: what other files reach as Rated.<name>.
Rated.rated_window = rated_window
Rated.nearest = nearest
Rated.rated_may_match = rated_may_match
Rated.solo_info = solo_info
Rated.next_due = next_due
Rated.retry_later = retry_later
Rated.read_anchor = read_anchor
Rated.fill_match = fill_match
Rated.candidate_infos = candidate_infos
Rated.with_rules = with_rules
Rated.rules_match = rules_match
Rated.region_latencies = region_latencies
Rated.regional_match = regional_match
Rated.anchored_attempt = anchored_attempt
Rated.record_rated = record_rated
Rated.form_rated = form_rated
Rated.REGION_SCAN_LIMIT = REGION_SCAN_LIMIT
end
