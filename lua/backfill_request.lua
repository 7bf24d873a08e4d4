-- backfill_request.lua: a running match asks for players (POST
-- /v1/matching/matches/{matchId}/backfill) with its current players per
-- team; the seats they leave open are filled before new matches form (see
-- _backfill.lua). A request replaces the match's backfill, if it has one,
-- in the same step; the new one's wait starts now. Nothing is written
-- unless every check passes.
--
-- KEYS   players matches match_expiry match_lifecycle outbox notes counters parties
-- KEYS   party_expiry proposals proposal_expiry matcher_asleep backfills
-- KEYS   backfill_expiry
-- WORLDS the match's world (the store reads it from the record)
-- ARGV   match_id   the match id
-- ARGV   teams      JSON: the players the match has now, a list per team
-- ARGV   keepalive  ms the backfill lives unless renewed (> 0)
-- ARGV   config     the world's configuration (see _config.lua)
-- ARGV   seen       the match's fills the server had heard of when it listed
--                    `teams` ("" = it lists everyone): players later fills
--                    added keep their seats though not listed
--
-- Reply: a status, then exactly that status's fields:
--   CREATED, backfill_json     (see _backfill.lua for the backfill)
--   REPLACED, backfill_json    the match's previous backfill was replaced
--   NOT_FOUND                  no such match, or its record expired
--   OTHER_WORLD, world         the match is of `world` (the store asks again)
--   NOT_ASSIGNED               the match has no server yet
--   FINISHED                   the match has its result
--   INVALID, reason            teams that do not fit the match or its world

local id = args.match_id
local cfg, bad_config = Config.world_config(args.config)
local keepalive = int_arg(args.keepalive)
if id == '' then return fail('match id is empty') end
if not cfg then return fail(bad_config) end
if not keepalive or keepalive < 1 then return fail('keepalive must be an integer > 0') end
local ok_t, teams = pcall(cjson.decode, args.teams)
if not ok_t or type(teams) ~= 'table' then return fail('teams must be a JSON array of arrays') end
local seen = nil
if args.seen ~= '' then
  seen = int_arg(args.seen)
  if not seen or seen < 0 then return fail('seen must be "" or an integer >= 0') end
end
local world = worlds[1]
local now = now_ms()
local raw = Lifecycle.live_record(k, id, now)
if not raw then return { 'NOT_FOUND' } end
local record = cjson.decode(raw)
if record.worldType ~= world then return { 'OTHER_WORLD', record.worldType } end
local life = Lifecycle.load_lifecycle(k, id)
if life.state == 'FINISHED' then return { 'FINISHED' } end
if life.state ~= 'ASSIGNED' then return { 'NOT_ASSIGNED' } end

-- Who is in the match, their ratings and parties (the record's and the
-- additions').
local ratings, parties = {}, {}
for p, r in pairs(type(record.ratings) == 'table' and record.ratings or {}) do ratings[p] = r end
for _, party in ipairs(type(record.parties) == 'table' and record.parties or {}) do parties[#parties + 1] = party end
local member = {}
for _, p in ipairs(Lifecycle.match_players(record, life)) do member[p] = true end
-- Fills are numbered over all of the match's backfills (outbox entries
-- B|<match>|<fill> and the additions name them): the next one counts on
-- from the last fill any earlier backfill made.
local filled = 0
local additions = life.additions ~= '' and cjson.decode(life.additions) or {}
for _, a in ipairs(additions) do
  for j, p in ipairs(a.players) do
    if a.ratings then ratings[p] = a.ratings[j] end
  end
  if #a.players > 1 then parties[#parties + 1] = a.players end
  if a.fill > filled then filled = a.fill end
end

local team_size = cfg.seats / cfg.teams
if #teams ~= cfg.teams then
  return { 'INVALID', 'the world has ' .. cfg.teams .. ' team(s), got ' .. #teams }
end
local team_of, open, counts, sums = {}, {}, {}, cfg.rules and {} or nil
for t, list in ipairs(teams) do
  if type(list) ~= 'table' then return { 'INVALID', 'team ' .. t .. ' is not a list of players' } end
  if #list > team_size then
    return { 'INVALID', 'team ' .. t .. ' has ' .. #list .. ' players; a team has ' .. team_size .. ' seats' }
  end
  counts[t], open[t] = #list, team_size - #list
  if sums then sums[t] = 0 end
  for _, p in ipairs(list) do
    if type(p) ~= 'string' or not member[p] then
      return { 'INVALID', 'a player who is not in the match: ' .. tostring(p) }
    end
    if team_of[p] then return { 'INVALID', 'a player listed twice: ' .. p } end
    team_of[p] = t
    if sums then sums[t] = sums[t] + (tonumber(ratings[p]) or 0) end
  end
end
-- Players seated by fills the server had not heard of (after `seen`): it
-- cannot have seen them leave, so they keep their seats, in their teams.
if seen then
  for _, a in ipairs(additions) do
    if a.fill > seen then
      for _, p in ipairs(a.players) do
        if not team_of[p] then
          local t = a.team
          if counts[t] == team_size then
            return { 'INVALID', 'team ' .. t .. ' has ' .. team_size .. ' players and ' .. p ..
              ' of fill ' .. a.fill .. ' (after the ' .. seen .. ' you have seen) is not listed; a team has '
              .. team_size .. ' seats' }
          end
          team_of[p] = t
          counts[t], open[t] = counts[t] + 1, open[t] - 1
          if sums then sums[t] = sums[t] + (tonumber(ratings[p]) or 0) end
        end
      end
    end
  end
end
for _, party in ipairs(parties) do
  local party_team = nil
  for _, p in ipairs(party) do
    local t = team_of[p]
    if t then
      if party_team and party_team ~= t then return { 'INVALID', 'a party split over teams: ' .. p } end
      party_team = t
    end
  end
end
local any_open = false
for _, n in ipairs(open) do
  if n > 0 then any_open = true end
end
if not any_open then return { 'INVALID', 'every seat is taken: nothing to fill' } end

-- All checks passed: from here on the script only writes.
local previous = BackfillStore.load_backfill(k, id)
if previous then Backfill.end_backfill({ k = k, world = world, now = now, world_of = world_of }, k, previous) end
local everyone = {}
for p in pairs(member) do everyone[#everyone + 1] = p end
table.sort(everyone)
-- Who left (the match's players the server no longer lists): the first
-- fill records them, so the match's spread and team difference count the
-- players it has now (shared/src/domain/lifecycle merged).
local left = {}
for _, p in ipairs(everyone) do
  if not team_of[p] then left[#left + 1] = p end
end
local b = {
  match = id, world = world, created = now, expires = now + keepalive, members = everyone,
  left = #left > 0 and left or nil,
  fills = math.max(previous and previous.fills or 0, filled),
  open = open, counts = counts, sums = sums, region = record.region,
}
if cfg.attributes then
  -- What a newcomer's rules are checked against: the players who stay.
  local known = type(record.attributes) == 'table' and record.attributes or {}
  for _, a in ipairs(additions) do
    if type(a.attributes) == 'table' then
      for j, p in ipairs(a.players) do known[p] = a.attributes[j] end
    end
  end
  b.attrs = {}
  for p in pairs(team_of) do b.attrs[p] = type(known[p]) == 'table' and known[p] or {} end
  b.anchor_attrs = record.anchor and known[record.anchor] or nil
end
if cfg.quota then
  -- The roles of the players who stay, per team (the record's and the
  -- fills'): a newcomer takes a role the team still needs.
  local role_of = type(record.roles) == 'table' and record.roles or {}
  for _, a in ipairs(additions) do
    for j, p in ipairs(a.players) do
      local r = type(a.roles) == 'table' and a.roles[j]
      if type(r) == 'string' then role_of[p] = r end
    end
  end
  b.team_roles = {}
  for t = 1, cfg.teams do b.team_roles[t] = {} end
  local stay = {}
  for p in pairs(team_of) do stay[#stay + 1] = p end
  table.sort(stay)
  for _, p in ipairs(stay) do
    local list = b.team_roles[team_of[p]]
    list[#list + 1] = type(role_of[p]) == 'string' and role_of[p] or ''
  end
end
if cfg.totals then
  -- Each total rule's sum per team over the players who stay.
  b.totals = {}
  for i, rule in ipairs(cfg.totals) do
    local sums = {}
    for t = 1, cfg.teams do sums[t] = 0 end
    for p, t in pairs(team_of) do
      local x = b.attrs[p] and b.attrs[p][rule.attr]
      if type(x) == 'number' then sums[t] = sums[t] + x end
    end
    b.totals[i] = sums
  end
end
BackfillStore.save_backfill(k, k, b)
wake_matcher()
return { previous and 'REPLACED' or 'CREATED', cjson.encode(b) }
