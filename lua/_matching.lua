-- _matching.lua: recording matches (FIFO matching: _fifo.lua).
--
-- ctx: { k = the world's keys with the namespace's (queue, deadlines, data,
-- rate, ratings, due; players, matches, match_expiry, match_seq, outbox,
-- presence and the party and proposal keys), world, now, cfg = the world's
-- configuration, proposed = matches made proposals so far (ready checks) }.
-- @include _lib _parties _players _proposals _regions _teams _tickets

local Matching = {}
do

-- Expired tickets a match-forming call removes first, at most.
local MATCH_SWEEP_LIMIT = 1000

-- A waiting ticket's players: { ticket, size, players, data (ticket data JSON
-- per player, '' for none), ratings (per player; nil when unrated), sum (of
-- the ratings, 0 unrated), party (the party id or nil), rating (the
-- ticket's own: a party's aggregate) }. `rating` is the ticket's rating
-- (rated worlds). nil when a party ticket's party is gone.
local function ticket_info(ctx, t, rating)
  if Players.is_party_ticket(t) then
    local id = string.sub(t, 2)
    local party = Parties.load_party(ctx.k, id)
    if not party then return nil end
    local info = {
      ticket = t, size = #party.members, players = {}, data = {}, sum = 0, party = id, rating = rating,
    }
    local ratings = {}
    for i, m in ipairs(party.members) do
      info.players[i] = m.p
      info.data[i] = m.d or ''
      if m.l then
        info.member_lats = info.member_lats or {}
        info.member_lats[i] = Regions.decode_latencies(m.l)
      end
      -- A party queuing in several worlds has each member's rating there.
      local r = tonumber(party.also and (Parties.member_in(party, m, ctx.world)) or m.r)
      if r then
        ratings[i] = r
        info.sum = info.sum + r
      end
    end
    if #ratings == #party.members then info.ratings = ratings end
    return info
  end
  return {
    ticket = t, size = 1, players = { t }, data = { Players.ticket_data(ctx, t) },
    ratings = rating and { rating } or nil, sum = rating or 0, rating = rating,
  }
end

local function all_present(presence_key, players, now)
  for _, p in ipairs(players) do
    if not is_present(presence_key, p, now) then return false end
  end
  return true
end

-- Records `groups` matches of `seats` players each from `players` durably
-- before anyone is told: writes each match record, every player's state
-- (the match id, written over the ticket), its expiry, ONE outbox entry per
-- match and the world's recent-match statistics. With `opts.ratings`
-- (player -> rating, rated worlds), each record also carries the
-- participants' ratings and the match's spread (max - min); with
-- `opts.regions` (one per group, worlds with regions: { name, players =
-- player -> ms, worst }), the region it plays in and the latencies there;
-- with `opts.tails` (one per group, worlds with attributes: see
-- _match_rules.lua record_fields), the fields the match was formed under.
--
-- Without `opts.extra` (the fast path: solo tickets, one team) the players
-- are the tickets: their data is read (in worlds where tickets carry any)
-- and they leave the queue here, each group in queue order. With
-- `opts.extra` the caller has removed the tickets and gives extra.data
-- (ticket data per player position, '' for none) and extra.layouts[g] for
-- each group: { teams = { {position...}... } or nil, parties = {
-- {position...}... } } (positions 1..seats within the group). With
-- extra.propose the records are only built, not written (a ready check: see
-- _proposals.lua). `opts.front`: the players are exactly the first groups *
-- seats of the queue (removed by rank, cheaper than by member). Returns the
-- records as JSON strings and the outbox ids ("M|<match id>").
--
-- This runs for every instant match and for up to tens of thousands of
-- players per matcher tick, so it avoids per-player Redis calls and pattern
-- matching, and fills arrays with explicit indexes (# is O(log n) in Lua 5.1).
local function record_matches(ctx, players, groups, opts)
  local k, now, world, team = ctx.k, ctx.now, ctx.world, ctx.cfg.seats
  local ratings, extra, regions, tails = opts.ratings, opts.extra, opts.regions, opts.tails
  local taken = groups * team
  local data
  if extra then
    data = extra.data
  else
    data = Players.tickets_data(ctx, players, taken)
    Tickets.leave_other_worlds(ctx, players)
    if opts.front then
      redis.call('ZREMRANGEBYRANK', k.queue, 0, taken - 1)
    else
      chunked('ZREM', k.queue, players, 1)
    end
    if ctx.has_data then chunked('HDEL', k.data, players, 1) end
  end

  local last_seq = redis.call('INCRBY', k.match_seq, groups)
  local first_seq = last_seq - groups + 1
  local records, ids, match_fields, expiry_args, state_args, outbox_args = {}, {}, {}, {}, {}, {}
  -- Scores as strings: Redis formats a Lua number argument with
  -- snprintf("%.17g") each time, 20 000 times for 10 000 matches.
  local expires = string.format('%d', now + ctx.cfg.match_ttl)
  local matched_at = string.format('%d', now)
  local id_prefix = string.format('%x-', now)
  local prefix = '","worldType":"' .. world .. '","participants":['
  -- Every new Lua string costs an allocation and interning, and this loop
  -- runs for tens of thousands of matches per call: a match in the common
  -- case (ids JSON takes between plain quotes, no data, ratings or layout)
  -- makes four strings (id, participant list, record, outbox id). Whether
  -- any id needs escaping is checked once for the whole batch, in C.
  local plain = not string.find(table.concat(players, '', 1, taken), NEEDS_ESCAPE)
  -- Reused for every group: allocating tables per match shows up at tens of
  -- thousands of matches per call.
  local names, extras, rated = {}, {}, {}
  for g = 0, groups - 1 do
    local id = string.format('%s%x', id_prefix, first_seq + g)
    local base = g * team
    local layout = extra and extra.layouts[g + 1]
    local region = regions and regions[g + 1]
    local with_data = false
    for idx = base + 1, base + team do
      local d = data[idx]
      if d and d ~= '' then with_data = true end
      state_args[2 * idx - 1] = players[idx]
      state_args[2 * idx] = id
    end
    -- The participants, quoted and comma-separated; `open` is the quote
    -- the list still needs around it.
    local list, open
    if plain and not (with_data or ratings or layout or region) then
      list, open = table.concat(players, '","', base + 1, base + team), '"'
    else
      for m = 1, team do
        local p = players[base + m]
        names[m] = plain and '"' .. p .. '"' or quote(p)
      end
      list, open = table.concat(names, ',', 1, team), ''
    end
    -- Optional sections, built by hand so ticket data (already valid JSON)
    -- is embedded verbatim instead of round-tripping through cjson, which
    -- would lose precision of large numbers and turn empty arrays into
    -- objects.
    local data_part, ratings_part, teams_part, parties_part, region_part = '', '', '', '', ''
    if region then
      local lat = {}
      for m = 1, team do lat[m] = names[m] .. ':' .. num(region.players[players[base + m]]) end
      region_part = ',"region":"' .. region.name .. '","latencies":{' .. table.concat(lat, ',', 1, team)
        .. '},"worstLatency":' .. num(region.worst)
    end
    if with_data then
      local n_extras = 0
      for m = 1, team do
        local d = data[base + m]
        if d and d ~= '' then
          n_extras = n_extras + 1
          extras[n_extras] = names[m] .. ':' .. d
        end
      end
      data_part = ',"playerData":{' .. table.concat(extras, ',', 1, n_extras) .. '}'
    end
    if ratings then
      local lo, hi = math.huge, -math.huge
      for m = 1, team do
        local r = ratings[players[base + m]]
        rated[m] = names[m] .. ':' .. num(r)
        if r < lo then lo = r end
        if r > hi then hi = r end
      end
      ratings_part = ',"ratings":{' .. table.concat(rated, ',', 1, team) .. '},"spread":' .. num(hi - lo)
    end
    if layout and layout.teams then
      local parts, lo, hi = {}, math.huge, -math.huge
      for t, members in ipairs(layout.teams) do
        local quoted, sum = {}, 0
        for i, pos in ipairs(members) do
          quoted[i] = names[pos]
          if ratings then sum = sum + ratings[players[base + pos]] end
        end
        parts[t] = '[' .. table.concat(quoted, ',') .. ']'
        local avg = sum / #members
        if avg < lo then lo = avg end
        if avg > hi then hi = avg end
      end
      teams_part = ',"teams":[' .. table.concat(parts, ',') .. ']'
      if ratings then
        teams_part = teams_part .. ',"teamDifference":' .. num(hi - lo)
      end
    end
    if layout and layout.parties and #layout.parties > 0 then
      local parts = {}
      for t, members in ipairs(layout.parties) do
        local quoted = {}
        for i, pos in ipairs(members) do quoted[i] = names[pos] end
        parts[t] = '[' .. table.concat(quoted, ',') .. ']'
      end
      parties_part = ',"parties":[' .. table.concat(parts, ',') .. ']'
    end
    local record = '{"matchId":"' .. id .. prefix .. open .. list .. open .. '],"matchedAt":' .. matched_at
      .. data_part .. ratings_part .. teams_part .. parties_part .. region_part .. (tails and tails[g + 1] or '') .. '}'
    local outbox_id = 'M|' .. id
    records[g + 1] = record
    ids[g + 1] = outbox_id
    match_fields[2 * g + 1] = id
    match_fields[2 * g + 2] = record
    expiry_args[2 * g + 1] = expires
    expiry_args[2 * g + 2] = id
    outbox_args[2 * g + 1] = matched_at
    outbox_args[2 * g + 2] = outbox_id
  end
  if extra and extra.propose then
    return records, ids
  end
  chunked('HSET', k.matches, match_fields, 2)
  chunked('ZADD', k.match_expiry, expiry_args, 2)
  chunked('HSET', k.players, state_args, 2)
  chunked('ZADD', k.outbox, outbox_args, 2)
  record_rate(k.stats, now, ctx.cfg.window, taken)
  return records, ids
end

-- Records matches whose tickets may be parties and whose players form
-- teams: `groups` is a list of ticket lists (each exactly `seats` seats).
-- Each group is packed into `teams` teams (balanced by rating when the
-- tickets are rated); a group that cannot be packed is left waiting.
-- Removes the tickets (and parties), then records; in a world with a ready
-- check (cfg.accept) it makes proposals instead (counted in ctx.proposed).
-- opts: rated (tickets carry ratings), regions (per group, see
-- record_matches). Returns the records and outbox ids of final matches.
local function record_groups(ctx, groups, opts)
  local rated = opts.rated
  local cfg = ctx.cfg
  local seats, teams = cfg.seats, cfg.teams
  local cap = seats / teams
  -- Solo tickets picked from their ratings entry alone carry no data yet.
  local unread, n_unread = {}, 0
  for _, items in ipairs(groups) do
    for _, it in ipairs(items) do
      if not it.data then
        n_unread = n_unread + 1
        unread[n_unread] = it.ticket
      end
    end
  end
  local read = Players.tickets_data(ctx, unread, n_unread)
  local at = 0
  for _, items in ipairs(groups) do
    for _, it in ipairs(items) do
      if not it.data then
        at = at + 1
        it.data = { read[at] or '' }
      end
    end
  end
  local players, data, ratings, layouts, tickets = {}, {}, rated and {} or nil, {}, {}
  local packed = {}
  local n = 0
  for _, items in ipairs(groups) do
    local assign = nil
    -- A quota or total per team decided the teams (MatchRules.check).
    if teams > 1 then assign = items.assign or Teams.pack_teams(items, teams, cap) end
    if teams == 1 or assign then
      packed[#packed + 1] = items
      local layout = { parties = {} }
      local base = n
      -- Players team by team; within a team, in queue order.
      local team_members = {}
      for t = 1, teams do team_members[t] = {} end
      for i, it in ipairs(items) do
        local t = assign and assign[i] or 1
        local list = team_members[t]
        list[#list + 1] = it
      end
      if teams > 1 then layout.teams = {} end
      for t = 1, teams do
        local positions = {}
        for _, it in ipairs(team_members[t]) do
          local party_positions = {}
          for j, p in ipairs(it.players) do
            n = n + 1
            players[n] = p
            data[n] = it.data[j]
            if ratings then ratings[p] = it.ratings[j] end
            positions[#positions + 1] = n - base
            party_positions[j] = n - base
          end
          if it.party then layout.parties[#layout.parties + 1] = party_positions end
          tickets[#tickets + 1] = it.ticket
        end
        if layout.teams then layout.teams[t] = positions end
      end
      layouts[#packed] = layout
    end
  end
  local formed = #packed
  if formed == 0 then return {}, {} end
  local extra = { data = data, layouts = layouts, propose = cfg.accept ~= nil }
  local regions, tails = nil, nil
  if opts.regions then
    regions = {}
    for g, items in ipairs(packed) do regions[g] = items.region end
  end
  if cfg.attributes then
    tails = {}
    for g, items in ipairs(packed) do tails[g] = items.tail end
  end
  local record_opts = { ratings = ratings, extra = extra, regions = regions, tails = tails }
  if not cfg.accept then
    Tickets.remove_tickets(ctx, tickets, nil, true)
    return record_matches(ctx, players, formed, record_opts)
  end
  local records, ids = record_matches(ctx, players, formed, record_opts)
  local match_ids, per_match, entries = {}, {}, {}
  for g = 1, formed do
    match_ids[g] = string.sub(ids[g], 3)
    local list = {}
    for m = 1, seats do list[m] = players[(g - 1) * seats + m] end
    per_match[g] = list
    entries[g] = Proposals.lift_tickets(ctx, match_ids[g], packed[g])
  end
  Proposals.create_proposals(ctx, match_ids, records, per_match, entries)
  ctx.proposed = (ctx.proposed or 0) + formed
  return {}, {}
end

-- The module's face: what other files reach as Matching.<name>.
Matching.ticket_info = ticket_info
Matching.all_present = all_present
Matching.record_matches = record_matches
Matching.record_groups = record_groups
Matching.MATCH_SWEEP_LIMIT = MATCH_SWEEP_LIMIT
end
