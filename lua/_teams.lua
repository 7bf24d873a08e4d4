-- _teams.lua: packing the tickets of one match into teams.
--
-- items[i] = { size = seats the ticket takes, sum = its players' rating sum
-- (0 in unrated worlds) }. A packing puts every ticket whole into one of
-- `teams` teams of `cap` seats. Its quality is the spread of the teams'
-- rating sums (highest - lowest): teams are equally big, so that is `cap`
-- times the difference of the team averages.
-- @include _lib

local Teams = {}
do

-- Steps the exact search may take before it gives up (it only runs for the
-- rare sets the greedy orders cannot pack, and must stay well under a
-- millisecond).
local PACK_SEARCH_BUDGET = 2000
-- Passes of improving swaps.
local PACK_SWAP_PASSES = 8

local function sums_spread(sums)
  local lo, hi = math.huge, -math.huge
  for _, s in ipairs(sums) do
    if s < lo then lo = s end
    if s > hi then hi = s end
  end
  return hi - lo
end

-- The rating sums of `teams` teams, ticket i in team assign[i].
local function team_sums(items, assign, teams)
  local sums = {}
  for t = 1, teams do sums[t] = 0 end
  for i, it in ipairs(items) do sums[assign[i]] = sums[assign[i]] + it.sum end
  return sums
end

-- Items in `order`, each into the team with the lowest rating sum that still
-- has room (ties: the first such team). In arrival order this is the simple
-- greedy baseline; unrated it fills team 1, then team 2, ... (FIFO-filled).
-- Returns the team of each item and the teams' sums, or nil.
local function pack_greedy(items, order, teams, cap)
  local sums, room, assign = {}, {}, {}
  for t = 1, teams do
    sums[t] = 0
    room[t] = cap
  end
  for _, i in ipairs(order) do
    local it = items[i]
    local best = nil
    for t = 1, teams do
      if room[t] >= it.size and (best == nil or sums[t] < sums[best]) then best = t end
    end
    if not best then return nil end
    assign[i] = best
    sums[best] = sums[best] + it.sum
    room[best] = room[best] - it.size
  end
  return assign, sums
end

-- Any packing, by a bounded depth-first search, largest tickets first
-- (rescues sets like 5+3+2 | 4+3+3 that greedy orders miss). Returns the
-- team of each item and the sums, or nil (none, or out of budget).
local function pack_search(items, teams, cap)
  local order = {}
  for i = 1, #items do order[i] = i end
  table.sort(order, function(a, b)
    if items[a].size ~= items[b].size then return items[a].size > items[b].size end
    return a < b
  end)
  local room, assign, steps = {}, {}, 0
  for t = 1, teams do room[t] = cap end
  local function place(pos)
    if pos > #order then return true end
    steps = steps + 1
    if steps > PACK_SEARCH_BUDGET then return false end
    local i = order[pos]
    local size = items[i].size
    local tried_empty = false
    for t = 1, teams do
      -- Empty teams are interchangeable: trying one is enough.
      local empty = room[t] == cap
      if room[t] >= size and not (empty and tried_empty) then
        if empty then tried_empty = true end
        room[t] = room[t] - size
        assign[i] = t
        if place(pos + 1) then return true end
        room[t] = room[t] + size
      end
    end
    return false
  end
  if not place(1) then return nil end
  local sums = {}
  for t = 1, teams do sums[t] = 0 end
  for i = 1, #items do
    sums[assign[i]] = sums[assign[i]] + items[i].sum
  end
  return assign, sums
end

-- Whether `items` fit into the teams (not necessarily filling them).
local function can_pack(items, teams, cap)
  local order = {}
  for i = 1, #items do order[i] = i end
  table.sort(order, function(a, b)
    if items[a].size ~= items[b].size then return items[a].size > items[b].size end
    return a < b
  end)
  local room = {}
  for t = 1, teams do room[t] = cap end
  local fits = true
  -- First fit, largest first: almost always enough.
  for _, i in ipairs(order) do
    local placed = false
    for t = 1, teams do
      if room[t] >= items[i].size then
        room[t] = room[t] - items[i].size
        placed = true
        break
      end
    end
    if not placed then
      fits = false
      break
    end
  end
  return fits or pack_search(items, teams, cap) ~= nil
end

-- Work fill_exactly may do per call, in tickets looked at (each candidate
-- tried costs the tickets chosen so far, for the packing check): it runs
-- only when filling a match oldest or nearest first failed, and a miss
-- only means the match waits for the next try.
local FILL_SEARCH_WORK = 2000

-- Taking tickets in order (nearest first, or oldest first) can strand a
-- match that exists: an anchor trio takes the two solos next to it and then
-- no trio fits the seat left, though the other trio would have filled the
-- match; or duo, duo and solo fill five of six seats and no later ticket
-- fits, though duo, solo and a trio behind them make a match. Searches
-- `pool` (ticket infos in order of preference) for tickets that fill
-- exactly `opts.need` seats next to the anchor `a` and still pack into
-- `opts.teams` teams of `opts.cap`, preferring earlier ones, within
-- `opts.budget` tickets looked at (FILL_SEARCH_WORK when nil). Returns the
-- chosen positions in `pool`, ascending, or nil; and the work spent.
local function fill_exactly(a, pool, opts)
  local need, teams, cap = opts.need, opts.teams, opts.cap
  local budget = opts.budget or FILL_SEARCH_WORK
  local seats = 0
  for _, it in ipairs(pool) do seats = seats + it.size end
  if seats < need then return nil, 0 end
  local items, chosen, work = { a }, {}, 0
  local function search(start, left)
    if left == 0 then return true end
    for i = start, #pool do
      work = work + #items
      if work > budget then return false end
      local it = pool[i]
      if it.size <= left then
        items[#items + 1] = it
        if teams == 1 or can_pack(items, teams, cap) then
          chosen[#chosen + 1] = i
          if search(i + 1, left - it.size) then return true end
          chosen[#chosen] = nil
        end
        items[#items] = nil
      end
    end
    return false
  end
  if search(1, need) then return chosen, work end
  return nil, work
end

-- Swaps two equally big tickets between teams while that brings the two
-- teams' sums closer without widening the overall spread.
local function improve_packing(items, assign, sums)
  for _ = 1, PACK_SWAP_PASSES do
    local improved = false
    for a = 1, #items do
      for b = a + 1, #items do
        local ta, tb = assign[a], assign[b]
        if ta ~= tb and items[a].size == items[b].size then
          local d = items[a].sum - items[b].sum
          local before = math.abs(sums[ta] - sums[tb])
          local after = math.abs((sums[ta] - d) - (sums[tb] + d))
          if after < before - 1e-9 then
            local spread = sums_spread(sums)
            sums[ta], sums[tb] = sums[ta] - d, sums[tb] + d
            if sums_spread(sums) <= spread + 1e-9 then
              assign[a], assign[b] = tb, ta
              improved = true
            else
              sums[ta], sums[tb] = sums[ta] + d, sums[tb] - d
            end
          end
        end
      end
    end
    if not improved then break end
  end
end

-- The best packing found: the greedy baseline in arrival order, and the
-- largest-first greedy (parties first, then solos from the highest rated;
-- an exact search when that cannot pack), each improved by swaps. Never
-- worse than the baseline. Returns the team of each item and the teams'
-- sums, or nil when the tickets cannot be packed.
local function pack_teams(items, teams, cap)
  local n = #items
  local arrival, largest = {}, {}
  for i = 1, n do
    arrival[i] = i
    largest[i] = i
  end
  table.sort(largest, function(a, b)
    local x, y = items[a], items[b]
    if x.size ~= y.size then return x.size > y.size end
    local rx, ry = x.sum / x.size, y.sum / y.size
    if rx ~= ry then return rx > ry end
    return a < b
  end)
  local best, best_sums = pack_greedy(items, arrival, teams, cap)
  if best then improve_packing(items, best, best_sums) end
  local other, other_sums = pack_greedy(items, largest, teams, cap)
  if not other then other, other_sums = pack_search(items, teams, cap) end
  if other then
    improve_packing(items, other, other_sums)
    if not best or sums_spread(other_sums) < sums_spread(best_sums) then
      best, best_sums = other, other_sums
    end
  end
  return best, best_sums
end

-- The module's face: what other files reach as Teams.<name>.
Teams.sums_spread = sums_spread
Teams.team_sums = team_sums
Teams.pack_greedy = pack_greedy
Teams.pack_search = pack_search
Teams.can_pack = can_pack
Teams.fill_exactly = fill_exactly
Teams.improve_packing = improve_packing
Teams.pack_teams = pack_teams
Teams.PACK_SEARCH_BUDGET = PACK_SEARCH_BUDGET
Teams.PACK_SWAP_PASSES = PACK_SWAP_PASSES
Teams.FILL_SEARCH_WORK = FILL_SEARCH_WORK
end
