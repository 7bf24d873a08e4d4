-- _fifo.lua: FIFO matching: the oldest tickets first, solo tickets in
-- bulk (pick_fifo), parties and teams one ticket at a time
-- (form_fifo_general), matches that ordered filling strands found again
-- (rescue_stranded); matches are recorded by _matching.lua. ctx as there.
-- @include _lib _blocks _matching _parties _teams _tickets

local Fifo = {}
do

-- Tickets one call examines in the general FIFO path (parties or teams);
-- half as many where players avoid others (each placement checks its
-- pairs): one call stays within ~50 ms at 1 M waiting (docs/benchmark.md
-- row 12b), and the matcher calls again while more are due.
local FIFO_SCAN = 2000
local BLOCKED_FIFO_SCAN = 1000
-- A join's instant match in the general FIFO path examines this many
-- tickets per seat of a match (the matcher's next tick does the rest).
local INSTANT_SCAN = 4
-- Incomplete matches the general FIFO path fills at once.
local OPEN_MATCHES = 8
-- Work the rescue of stranded FIFO matches may do per call, in tickets
-- looked at (see fill_exactly): it runs only on what ordered filling left.
local RESCUE_WORK = 8000

-- Picks up to `groups` groups of `team` players from the front of a FIFO
-- queue of solo tickets (oldest first). Without a presence requirement that
-- is simply the first groups * team members. With one, players without a
-- live connection are removed on the way (ticket dropped, TICKET_REMOVED
-- queued) and the next ones take their seats; the scan is bounded by
-- `scan_limit` removals. Returns the chosen players, in queue order, and how
-- many were removed.
local function pick_fifo(ctx, team, groups, scan_limit)
  local k = ctx.k
  local taken = groups * team
  if not ctx.cfg.presence then
    return redis.call('ZRANGE', k.queue, 0, taken - 1), 0
  end
  local chosen, n, removed, gone = {}, 0, 0, {}
  local offset = 0
  while n < taken do
    local batch = redis.call('ZRANGE', k.queue, offset, offset + (taken - n) - 1)
    if #batch == 0 then break end
    offset = offset + #batch
    for _, p in ipairs(batch) do
      if is_present(k.presence, p, ctx.now) then
        n = n + 1
        chosen[n] = p
      elseif removed < scan_limit then
        removed = removed + 1
        gone[removed] = p
      end
    end
    if removed >= scan_limit then break end
  end
  Tickets.remove_tickets(ctx, gone, 'G')
  -- Only whole groups are matched; the rest keep waiting.
  local whole = math.floor(n / team) * team
  for i = whole + 1, n do chosen[i] = nil end
  return chosen, removed
end

-- Filling matches oldest first can leave complete matches unformed: duo,
-- duo and solo fill five of six seats and no later ticket fits the sixth,
-- though duo, solo and a trio behind them make a match; or three duos hold
-- the open matches (none can be completed without solos) while two trios
-- behind them make a match on their own. `waiting` (ticket infos, oldest
-- first) is what ordered filling left. The oldest ticket that can take part
-- in a match filled exactly takes the oldest tickets that complete it
-- (fill_exactly prefers earlier ones), so an older ticket keeps its
-- precedence wherever it can take the seats, and one that cannot blocks
-- nobody. Unrated FIFO packs by sizes alone, so an anchor that cannot be
-- completed rules out every later ticket of its size (the pool only
-- shrinks). Bounded by RESCUE_WORK and `limit` matches (nil: no limit).
-- Returns the matches found, each a list of ticket infos.
local function rescue_stranded(ctx, waiting, limit)
  local cfg = ctx.cfg
  local seats, teams = cfg.seats, cfg.teams
  local found, failed, budget = {}, {}, RESCUE_WORK
  local i = 1
  while i <= #waiting and budget > 0 and (limit == nil or #found < limit) do
    local a = waiting[i]
    if failed[a.size] then
      i = i + 1
    else
      local pool, kept_apart = {}, false
      for j, it in ipairs(waiting) do
        if j ~= i then
          if Blocks.blocked_with(ctx, it, { a }) then
            kept_apart = true
          else
            pool[#pool + 1] = it
          end
        end
      end
      local picked, work = Teams.fill_exactly(a, pool, {
        need = seats - a.size, teams = teams, cap = seats / teams, budget = budget,
      })
      local cut_short = work > budget
      budget = budget - work
      local items = picked and { a }
      if picked then
        for n, j in ipairs(picked) do items[n + 1] = pool[j] end
      end
      if items and Blocks.blocked_among(ctx, items) then
        -- The exact fill holds a blocked pair: this anchor waits (rare;
        -- the next ticket is tried).
        i = i + 1
      elseif items then
        local taken = {}
        for _, it in ipairs(items) do taken[it] = true end
        found[#found + 1] = items
        local rest = {}
        for _, it in ipairs(waiting) do
          if not taken[it] then rest[#rest + 1] = it end
        end
        waiting = rest
      elseif cut_short then
        break
      else
        -- Without pairs kept from it, no later ticket of this size can be
        -- completed either.
        if not kept_apart then failed[a.size] = true end
        i = i + 1
      end
    end
  end
  return found
end

-- FIFO matching when tickets differ in size (parties) or matches have teams:
-- tickets in queue order, each into the oldest incomplete match where it
-- fits whole (its team packing still possible), so a party is never split
-- and an older ticket is never passed over by a newer one that fits the
-- same seats, except when that order strands matches that exist (then the
-- oldest ticket that can take part in an exact fill takes the oldest
-- tickets that complete it; see rescue_stranded).
-- opts: max_groups (0 = all), scan (tickets examined at most), only (a
-- ticket id: a join's instant match records only the match that ticket
-- completes; any other complete match is left to the matcher). Returns the
-- records, outbox ids, absent count and whether the scan was cut short.
local function form_fifo_general(ctx, opts)
  local k, cfg, max_groups = ctx.k, ctx.cfg, opts.max_groups
  local seats, teams = cfg.seats, cfg.teams
  local cap = seats / teams
  local tickets = redis.call('ZRANGE', k.queue, 0, opts.scan - 1)
  -- Whose players are in a block pair, for all solo tickets at once (a
  -- party's members are read when it is placed).
  if Blocks.any_blocks(ctx) then Blocks.flagged(ctx, tickets) end
  local open, done, gone, unplaced = {}, {}, {}, {}
  for pos, t in ipairs(tickets) do
    if max_groups > 0 and #done >= max_groups then break end
    local info = Matching.ticket_info(ctx, t, nil)
    if info then info.pos = pos end
    if info and cfg.presence and not Matching.all_present(k.presence, info.players, ctx.now) then
      gone[#gone + 1] = t
    elseif info and info.size <= cap then
      local placed = false
      for i, m in ipairs(open) do
        if m.seats + info.size <= seats and not Blocks.blocked_with(ctx, info, m.items) then
          m.items[#m.items + 1] = info
          if teams == 1 or Teams.can_pack(m.items, teams, cap) then
            m.seats = m.seats + info.size
            placed = true
            if m.seats == seats then
              done[#done + 1] = m.items
              table.remove(open, i)
            end
            break
          end
          m.items[#m.items] = nil
        end
      end
      if not placed then
        if info.size == seats then
          done[#done + 1] = { info }
        elseif #open < OPEN_MATCHES then
          open[#open + 1] = { items = { info }, seats = info.size }
        else
          unplaced[#unplaced + 1] = info
        end
      end
    end
  end
  -- Oldest first can strand matches that exist: when the whole queue was
  -- read, what is left is searched for exact fills (rescue_stranded).
  if #tickets < opts.scan and (max_groups == 0 or #done < max_groups) then
    local waiting = unplaced
    for _, m in ipairs(open) do
      for _, it in ipairs(m.items) do waiting[#waiting + 1] = it end
    end
    if #waiting > 0 then
      table.sort(waiting, function(a, b) return a.pos < b.pos end)
      local limit = max_groups > 0 and max_groups - #done or nil
      for _, items in ipairs(rescue_stranded(ctx, waiting, limit)) do
        done[#done + 1] = items
      end
    end
  end
  Tickets.remove_tickets(ctx, gone, 'G')
  if opts.only then
    local mine = {}
    for _, items in ipairs(done) do
      for _, it in ipairs(items) do
        if it.ticket == opts.only then mine[1] = items end
      end
    end
    done = mine
  end
  local records, ids = Matching.record_groups(ctx, done, {})
  return records, ids, #gone, #tickets == opts.scan and (#records > 0 or (ctx.proposed or 0) > 0)
end

-- form_matches' reply from the general FIFO path, after `expired` tickets
-- were swept and `absent` removed.
local function fifo_general_reply(ctx, opts, expired, absent)
  local most = Blocks.any_blocks(ctx) and BLOCKED_FIFO_SCAN or FIFO_SCAN
  local records, ids, removed, more = form_fifo_general(ctx, {
    max_groups = opts.max_groups, scan = math.min(opts.scan or most, most), only = opts.only,
  })
  return records, ids, expired, absent + removed, more
end

-- Forms up to `opts.max_groups` (0 = all) complete matches (cfg.seats
-- players in cfg.teams teams) from the front (oldest first) of a world's
-- queue. Expired tickets are removed first (TICKET_EXPIRED), so nobody is
-- matched past their deadline; in a world that requires presence, players
-- without a live connection are removed (TICKET_REMOVED) and never matched.
-- A partial match is never taken. `opts.scan` bounds the tickets the
-- general path examines (nil: FIFO_SCAN) and `opts.only` restricts it to
-- the match of that ticket (see form_fifo_general). Returns the match
-- records (JSON), their outbox ids, how many tickets were removed as expired
-- and as absent, and whether more may be matched right now.
local function form_matches(ctx, opts)
  local k, cfg = ctx.k, ctx.cfg
  local seats = cfg.seats
  local expired, more_expired = Tickets.sweep_expired(ctx, Matching.MATCH_SWEEP_LIMIT)
  if more_expired then
    -- A backlog of expired tickets: leave it to the sweep's next calls
    -- rather than risk matching one of them.
    return {}, {}, #expired, 0, true
  end
  if cfg.teams > 1 or cfg.accept or (opts.parties_queued or Parties.queued_parties(k)) > 0 then
    return fifo_general_reply(ctx, opts, #expired, 0)
  end
  local size = redis.call('ZCARD', k.queue)
  local groups = math.floor(size / seats)
  if opts.max_groups > 0 and groups > opts.max_groups then
    groups = opts.max_groups
  end
  if groups == 0 then
    return {}, {}, #expired, 0, false
  end
  local players, removed = pick_fifo(ctx, seats, groups, Matching.MATCH_SWEEP_LIMIT)
  groups = math.floor(#players / seats)
  if groups == 0 then
    return {}, {}, #expired, removed, false
  end
  -- A player in a block pair among them: matches are formed one ticket at
  -- a time (form_fifo_general), each kept clear of pairs.
  if Blocks.any_blocks(ctx) and #Blocks.flagged(ctx, players) > 0 then
    return fifo_general_reply(ctx, opts, #expired, removed)
  end
  -- Without presence removals the players are the queue's first ranks.
  local records, ids = Matching.record_matches(ctx, players, groups, { front = removed == 0 and not cfg.presence })
  return records, ids, #expired, removed, false
end

-- The module's face: what other files reach as Fifo.<name>.
Fifo.pick_fifo = pick_fifo
Fifo.rescue_stranded = rescue_stranded
Fifo.form_fifo_general = form_fifo_general
Fifo.form_matches = form_matches
Fifo.FIFO_SCAN = FIFO_SCAN
Fifo.INSTANT_SCAN = INSTANT_SCAN
Fifo.OPEN_MATCHES = OPEN_MATCHES
Fifo.RESCUE_WORK = RESCUE_WORK
end
