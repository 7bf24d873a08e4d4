-- _config.lua: a world's matching configuration, the one argument the
-- scripts that join and match take instead of ~20 (each argument costs
-- Redis ~0.1 µs to receive, and validating them all cost a join ~4 µs).
--
-- The configuration is one string of space-separated fields, "-" for none,
-- built once per world by the store (shared/src/store/config.rs):
--   1 seats per match N (>= 2)          2 teams per match (>= 1, divides N)
--   3 ticket lifetime ms (> 0)          4 match record lifetime ms (> 0)
--   5 instant match: 1 or 0             6 queue capacity (0 = unbounded)
--   7 statistics window ms (>= 0)       8 the world requires presence: 1 or 0
--   9 matching mode: fifo or rating
--   10..14 rated worlds: base window, widening per second, maximum window,
--          relax after ms, retry an anchor after ms ("-" each for fifo)
--   15..17 rated worlds with teams: balance window base, widening per
--          second and maximum ("-" each otherwise)
--   18 ready check: acceptance time limit ms (0 = none: matches are final)
--   19 ready check: cool-down ms for who declines or does not answer
--   20 the default rating for players without one ("-" for none)
--   21, 22 the lowest and highest rating accepted
--   23 a rated party's rating: average or max of its members'
--
-- A configuration is validated once and the parsed table kept for the next
-- call with the same string (in the function library, whose state lives as
-- long as the library is loaded; the EVALSHA fallback parses every call).
-- The parsed table is shared between calls: scripts only read it.

local CONFIG_FIELDS = 23
-- A deployment has a handful of worlds; the cap only bounds memory should
-- configurations ever change often (each deployment's strings differ).
local CONFIG_CACHE_MAX = 64
local config_cache, config_cached = {}, 0

local function parse_world_config(s)
  local f, n = {}, 0
  for v in string.gmatch(s, '%S+') do
    n = n + 1
    if v ~= '-' then f[n] = v end
  end
  if n ~= CONFIG_FIELDS then
    return nil, 'world config has ' .. n .. ' fields, expected ' .. CONFIG_FIELDS
  end
  local c = {
    seats = int_arg(f[1]), teams = int_arg(f[2]), ticket_ttl = int_arg(f[3]),
    match_ttl = int_arg(f[4]), capacity = int_arg(f[6]), window = int_arg(f[7]),
    min_rating = tonumber(f[21]), max_rating = tonumber(f[22]), aggregate = f[23],
  }
  if not c.seats or c.seats < 2 then return nil, 'seats must be an integer >= 2' end
  if not c.teams or c.teams < 1 or c.seats % c.teams ~= 0 then return nil, 'teams must divide the seats' end
  if not c.ticket_ttl or c.ticket_ttl == 0 then return nil, 'ticket lifetime must be > 0' end
  if not c.match_ttl or c.match_ttl == 0 then return nil, 'match lifetime must be > 0' end
  if f[5] ~= '0' and f[5] ~= '1' then return nil, 'instant must be 0 or 1' end
  if not c.capacity then return nil, 'capacity must be an integer >= 0' end
  if not c.window then return nil, 'window must be an integer >= 0' end
  if f[8] ~= '0' and f[8] ~= '1' then return nil, 'presence must be 0 or 1' end
  if f[9] ~= 'fifo' and f[9] ~= 'rating' then return nil, 'mode must be fifo or rating' end
  local accept_ms, cooldown_ms = int_arg(f[18]), int_arg(f[19])
  if not accept_ms or not cooldown_ms then return nil, 'ready check times must be integers >= 0' end
  if not c.min_rating or not c.max_rating or c.min_rating > c.max_rating then return nil, 'bad rating range' end
  if f[20] then
    c.default_rating = tonumber(f[20])
    if not c.default_rating then return nil, 'default rating is not a number' end
  end
  if c.aggregate ~= 'average' and c.aggregate ~= 'max' then return nil, 'aggregate must be average or max' end
  c.instant, c.presence = f[5] == '1', f[8] == '1'
  if f[9] == 'rating' then
    c.rules = rated_rules(f[10], f[11], f[12], f[13], f[14], f[15], f[16], f[17])
    if not c.rules then return nil, 'bad rating rules' end
  end
  if accept_ms > 0 then c.accept = { ms = accept_ms, cooldown = cooldown_ms } end
  return c
end

-- The parsed configuration, or nil and what is wrong with it.
local function world_config(s)
  local c = config_cache[s]
  if c then return c end
  local err
  c, err = parse_world_config(s or '')
  if not c then return nil, err end
  if config_cached >= CONFIG_CACHE_MAX then
    config_cache, config_cached = {}, 0
  end
  config_cache[s] = c
  config_cached = config_cached + 1
  return c
end
