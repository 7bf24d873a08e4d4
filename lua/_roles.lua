-- _roles.lua: a world's quota rule (docs/rules.md, "Role queues"): each
-- player gets exactly one role among those they offered, and every team
-- (or the match) holds between `min` and `max` players of each role; and
-- its total rules: each team's (or the match's) sum of a number attribute
-- within `min..max` (rule: { attr, min?, max?, adds = { least, most } one
-- player adds, teams, seats }).
--
-- rule (see _config.lua): { attr, quotas = { { value, min, max } ... },
-- role_of = value -> index, teams (1 when the quotas are per match),
-- seats }. Role index #quotas + 1 is "other": a value the quotas do not
-- list, unbounded. A player without a value (missing: any) may take any
-- role.
--
-- Roles are assigned by augmenting paths (capacitated bipartite matching):
-- first as many of the minimums as the players can cover, then every
-- player within the maximums. An augmenting path from a player never
-- lowers a role's count, so the minimums covered in the first pass stay
-- covered: the result covers every player if any assignment does, and
-- leaves the fewest minimums uncovered that any assignment can.
-- @include _lib

local Roles = {}
do

-- Most placements the search for a team split of a match with parties
-- tries (each checks the teams' roles; solo tickets need no search).
local SPLIT_SEARCH_BUDGET = 500

-- The roles a player with attributes `m` offers: role indices, and the
-- first value the quotas do not list (recorded when "other" is taken).
local function offered_roles(rule, m)
  local n = #rule.quotas
  local x = m[rule.attr]
  local out = {}
  if x == nil then
    for r = 1, n + 1 do out[r] = r end
    return out, nil
  end
  local other = nil
  for _, v in ipairs(type(x) == 'table' and x or { x }) do
    local r = rule.role_of[v]
    if r then
      out[#out + 1] = r
    elseif not other then
      other = v
    end
  end
  if other then out[#out + 1] = n + 1 end
  return out, other
end

-- The bounds of `teams` teams together: need[r] and cap[r] per role.
local function role_bounds(rule, teams)
  local need, cap = {}, {}
  for r, q in ipairs(rule.quotas) do
    need[r], cap[r] = q.min * teams, q.max * teams
  end
  local n = #rule.quotas + 1
  need[n], cap[n] = 0, math.huge
  return need, cap
end

-- Assigns each of `offers` (per player, the role indices offered) a role
-- within `cap`, covering as much of `need` as possible. Returns the role
-- of each player (nil when some player cannot have one) and the minimums
-- left uncovered.
local function assign_roles(offers, need, cap)
  local holders, role = {}, {}
  for r = 1, #cap do holders[r] = {} end
  local limit = need
  local function augment(p, seen)
    for _, r in ipairs(offers[p]) do
      if not seen[r] then
        seen[r] = true
        local hs = holders[r]
        if #hs < limit[r] then
          hs[#hs + 1] = p
          role[p] = r
          return true
        end
        for i, q in ipairs(hs) do
          if augment(q, seen) then
            hs[i] = p
            role[p] = r
            return true
          end
        end
      end
    end
    return false
  end
  for p = 1, #offers do augment(p, {}) end
  limit = cap
  for p = 1, #offers do
    if not role[p] and not augment(p, {}) then return nil, 0 end
  end
  local short = 0
  for r = 1, #need do
    if #holders[r] < need[r] then short = short + need[r] - #holders[r] end
  end
  return role, short
end

-- The offers of every player of `items` (ticket infos with .attrs), in
-- order, and each player's unlisted value.
local function item_offers(rule, items)
  local offers, others = {}, {}
  for _, it in ipairs(items) do
    for j = 1, #it.players do
      local n = #offers + 1
      offers[n], others[n] = offered_roles(rule, it.attrs[j] or {})
    end
  end
  return offers, others
end

-- Whether `items` (a match being filled) can still meet the quotas once
-- the seats left are taken: every player has a role within the maximums
-- and the minimums left uncovered fit in the seats left.
local function roles_fit(rule, items)
  local offers = item_offers(rule, items)
  local need, cap = role_bounds(rule, rule.teams)
  local role, short = assign_roles(offers, need, cap)
  return role ~= nil and short <= rule.seats - #offers
end

-- Splits solo players with roles `role` (per player index) into `teams`
-- teams: each role's players dealt as evenly as the teams allow (a role of
-- c players gives each team floor(c / teams), the remainders dealt in
-- turn), then, in each role, to the team with the lowest rating sum that
-- still lacks one. `ratings`: per player (nil unrated). Returns the team
-- of each player.
local function deal_teams(role, n_roles, teams, ratings)
  local by_role = {}
  for r = 1, n_roles do by_role[r] = {} end
  for p, r in ipairs(role) do by_role[r][#by_role[r] + 1] = p end
  local want, turn = {}, 0
  for r = 1, n_roles do
    want[r] = {}
    local c = #by_role[r]
    for t = 1, teams do want[r][t] = math.floor(c / teams) end
    for _ = 1, c % teams do
      want[r][turn % teams + 1] = want[r][turn % teams + 1] + 1
      turn = turn + 1
    end
  end
  local team, sums = {}, {}
  for t = 1, teams do sums[t] = 0 end
  for r = 1, n_roles do
    local list = by_role[r]
    if ratings then
      table.sort(list, function(a, b)
        if ratings[a] ~= ratings[b] then return ratings[a] > ratings[b] end
        return a < b
      end)
    end
    for _, p in ipairs(list) do
      local best = nil
      for t = 1, teams do
        if want[r][t] > 0 and (not best or sums[t] < sums[best]) then best = t end
      end
      want[r][best] = want[r][best] - 1
      team[p] = best
      sums[best] = sums[best] + (ratings and ratings[p] or 0)
    end
  end
  return team
end

-- The team of each ticket of `items` such that every team meets the
-- quotas (a party whole on one team), found by a bounded search; nil
-- when none is found.
local function search_split(rule, items, offers, cap)
  local teams = rule.teams
  local need1, cap1 = role_bounds(rule, 1)
  local first, order = {}, {}
  local at = 1
  for i, it in ipairs(items) do
    first[i] = at
    at = at + #it.players
    order[i] = i
  end
  table.sort(order, function(a, b)
    if items[a].size ~= items[b].size then return items[a].size > items[b].size end
    return a < b
  end)
  local assign, room, steps = {}, {}, 0
  for t = 1, teams do room[t] = cap end
  local function team_offers(t)
    local list = {}
    for i, it in ipairs(items) do
      if assign[i] == t then
        for j = 0, #it.players - 1 do list[#list + 1] = offers[first[i] + j] end
      end
    end
    return list
  end
  local function place(d)
    if d > #order then
      for t = 1, teams do
        local role, short = assign_roles(team_offers(t), need1, cap1)
        if not role or short > 0 then return false end
      end
      return true
    end
    local i = order[d]
    for t = 1, teams do
      steps = steps + 1
      if steps > SPLIT_SEARCH_BUDGET then return false end
      if room[t] >= items[i].size then
        assign[i], room[t] = t, room[t] - items[i].size
        local role, short = assign_roles(team_offers(t), need1, cap1)
        if role and short <= room[t] and place(d + 1) then return true end
        assign[i], room[t] = nil, room[t] + items[i].size
      end
    end
    return false
  end
  if not place(1) then return nil end
  return assign
end

-- The roles (and, with quotas per team, the teams) of a full match
-- `items`: { roles = value per player (nil: a player without a value who
-- took "other"), assign = team per ticket or nil } or nil when the quotas
-- cannot be met. `ratings` (rated worlds): per player, for the team split.
local function solve_roles(rule, items, ratings)
  local offers, others = item_offers(rule, items)
  local n_roles = #rule.quotas + 1
  local need, cap = role_bounds(rule, rule.teams)
  local role, short = assign_roles(offers, need, cap)
  if not role or short > 0 then return nil end
  local assign = nil
  if rule.teams > 1 then
    local cap_team = rule.seats / rule.teams
    local solo = true
    for _, it in ipairs(items) do
      if #it.players > 1 then solo = false end
    end
    if solo then
      assign = deal_teams(role, n_roles, rule.teams, ratings)
    else
      assign = search_split(rule, items, offers, cap_team)
      if not assign then return nil end
      -- Each team's roles, assigned within the team's own bounds.
      local need1, cap1 = role_bounds(rule, 1)
      local at = 0
      local index = {}
      for i, it in ipairs(items) do
        for j = 1, #it.players do index[#index + 1] = { i, at + j } end
        at = at + #it.players
      end
      for t = 1, rule.teams do
        local list, who = {}, {}
        for _, e in ipairs(index) do
          if assign[e[1]] == t then
            list[#list + 1] = offers[e[2]]
            who[#who + 1] = e[2]
          end
        end
        local team_role = assign_roles(list, need1, cap1)
        for x, p in ipairs(who) do role[p] = team_role[x] end
      end
    end
  end
  local values = {}
  for p, r in ipairs(role) do
    values[p] = r <= #rule.quotas and rule.quotas[r].value or others[p]
  end
  return { roles = values, assign = assign }
end

-- The roles the players of ticket `it` (an info with .attrs) would play in
-- team `t` of backfill `b` (b.team_roles: per team, the roles of its
-- players now, '' for none; b.open: its open seats), keeping the team (the
-- match, with quotas per match) able to meet the quotas once its open
-- seats are filled: the seat of a tank who left is a tank's. Returns a role
-- per player ('' for a player without a value who takes a role no quota
-- lists), or nil.
local function backfill_roles(rule, b, it, t)
  local n = #rule.quotas
  local offers, open = {}, 0
  for u, list in ipairs(b.team_roles) do
    if rule.teams == 1 or u == t then
      for _, v in ipairs(list) do offers[#offers + 1] = { rule.role_of[v] or n + 1 } end
      open = open + b.open[u]
    end
  end
  local first, others = #offers + 1, {}
  for j = 1, #it.players do
    offers[first + j - 1], others[j] = offered_roles(rule, it.attrs[j] or {})
  end
  local need, cap = role_bounds(rule, 1)
  local role, short = assign_roles(offers, need, cap)
  if not role or short > open - it.size then return nil end
  local values = {}
  for j = 1, #it.players do
    local r = role[first + j - 1]
    values[j] = r <= n and rule.quotas[r].value or others[j] or ''
  end
  return values
end

-- The sum of the total rule's attribute over ticket `it`'s players (0 for
-- a player without a value).
local function ticket_total(rule, it)
  local s = 0
  for j = 1, #it.players do
    local x = (it.attrs[j] or {})[rule.attr]
    if type(x) == 'number' then s = s + x end
  end
  return s
end

-- Whether a sum `sum` with `left` seats still to fill can end within the
-- bounds `lo`..`hi` (`teams` teams' worth).
local function sum_reachable(rule, sum, left, teams)
  local lo, hi = rule.min, rule.max
  if hi and sum + left * rule.adds[1] > hi * teams then return false end
  if lo and sum + left * rule.adds[2] < lo * teams then return false end
  return true
end

-- Whether `items` (a match being filled) can still meet the total rule
-- once the seats left are taken.
local function totals_fit(rule, items)
  local sum, n = 0, 0
  for _, it in ipairs(items) do
    sum = sum + ticket_total(rule, it)
    n = n + #it.players
  end
  return sum_reachable(rule, sum, rule.seats - n, rule.teams)
end

-- The team of each ticket of a full match `items` such that every team's
-- sum lies within the total rule's bounds (a party whole on one team),
-- found by a bounded search; nil when none is found. One team: whether
-- the match's sum does ({} or nil).
local function split_totals(rule, items)
  local teams, cap = rule.teams, rule.seats / rule.teams
  local value, order = {}, {}
  for i, it in ipairs(items) do
    value[i] = ticket_total(rule, it)
    order[i] = i
  end
  table.sort(order, function(a, b)
    if items[a].size ~= items[b].size then return items[a].size > items[b].size end
    return a < b
  end)
  local assign, room, sums, steps = {}, {}, {}, 0
  for t = 1, teams do room[t], sums[t] = cap, 0 end
  local function place(d)
    if d > #order then
      for t = 1, teams do
        if not sum_reachable(rule, sums[t], 0, 1) then return false end
      end
      return true
    end
    local i = order[d]
    for t = 1, teams do
      steps = steps + 1
      if steps > SPLIT_SEARCH_BUDGET then return false end
      if room[t] >= items[i].size then
        assign[i], room[t], sums[t] = t, room[t] - items[i].size, sums[t] + value[i]
        if sum_reachable(rule, sums[t], room[t], 1) and place(d + 1) then return true end
        assign[i], room[t], sums[t] = nil, room[t] + items[i].size, sums[t] - value[i]
      end
    end
    return false
  end
  if not place(1) then return nil end
  return assign
end

-- Whether ticket `it` may take seats in team `t` of backfill `b` under
-- every total rule of `rules` (b.totals[i]: per team, the sum of rule i's
-- attribute over the players there now): the team's (per match, the
-- match's) sum can still end within the bounds once its open seats are
-- filled.
local function backfill_totals(rules, b, it, t)
  for i, rule in ipairs(rules) do
    local sum, open = ticket_total(rule, it), -it.size
    for u, s in ipairs(b.totals[i]) do
      if rule.teams == 1 or u == t then sum, open = sum + s, open + b.open[u] end
    end
    if not sum_reachable(rule, sum, open, 1) then return false end
  end
  return true
end

-- The module's face: what other files reach as Roles.<name>.
Roles.offered_roles = offered_roles
Roles.role_bounds = role_bounds
Roles.assign_roles = assign_roles
Roles.item_offers = item_offers
Roles.roles_fit = roles_fit
Roles.deal_teams = deal_teams
Roles.search_split = search_split
Roles.solve_roles = solve_roles
Roles.backfill_roles = backfill_roles
Roles.ticket_total = ticket_total
Roles.sum_reachable = sum_reachable
Roles.totals_fit = totals_fit
Roles.split_totals = split_totals
Roles.backfill_totals = backfill_totals
Roles.SPLIT_SEARCH_BUDGET = SPLIT_SEARCH_BUDGET
end
