-- _config.lua: a world's configuration, one JSON argument of the scripts
-- that act on a world (built once per world by the store:
-- shared/src/store/config.rs), decoded and validated once and kept for the
-- next call with the same string (in the function library, whose state
-- lives as long as the library is loaded; the EVALSHA fallback decodes it
-- every call). The parsed table is shared between calls: scripts only read
-- it. Fields (ms are milliseconds):
--   seats (>= 2), teams (>= 1, divides seats), ticket_ttl, match_ttl (> 0),
--   instant (bool), capacity (0 = unbounded), window (statistics, >= 0),
--   presence (bool), formed_holds? (bool, default false: game servers are configured, so a
--   formed match holds its players until its result, see _lifecycle.lua),
--   max_party (>= 1), party_ttl (> 0),
--   ratings = { min, max, default? }, party_rating ("average" or "max"),
--   claim = { lease_ms (> 0), young_ms }: how a call that formed matches
--           claims their outbox entries for delivery at once (_outbox.lua),
--   rating? = { base, per_sec, max, relax_ms, retry_ms (> 0),
--               balance? = { base, per_sec, max },
--               backfill_balance? = { base, per_sec, max, relax_ms? (absent:
--                 never lifted) } }   (rated worlds; balance: with teams)
--   ready_check? = { accept_ms (> 0), cooldown_ms }    (ready checks)
--   attributes? = [ { name, type (string | number | stringList | numberMap),
--                   trusted (bool), default? (encoded text), refuse? (bool) } ]
--   match_rules? = [ { name, kind (equality | compare | all_equal |
--                    all_different | distance | intersection | and | or | not),
--                    attr?, op?, value?, from_anchor?, party?, of? = [index],
--                    top? (bool, absent: false), optional_ms?, linear? = { per_sec, limit },
--                    steps? = [ [after_ms, value or null] ],
--                    quotas? = [ [value, min, max] ], per_team? (quota rules),
--                    min?, max?, adds = [least, most] one player adds (total rules) } ]
--                  (worlds with attributes; see _match_rules.lua)
--   retry_ms? (> 0)  worlds with attributes: how long a failed anchor waits
--   group? [names]  a queueGroup's worlds (2 to 4, this one among them):
--                   tickets may wait in several, and every call of the
--                   world carries their keys (_tickets.lua)
--   candidate_window? (16..4096)  worlds with match rules: most candidates
--                    an attempt reads (absent: 256; see _match_rules.lua)
--   regions? = { names = [name...] (1..16, distinct), max_latency, widen_per_second,
--                latency_cap (ms, >= max_latency), max_spread? (ms), retry_ms (> 0),
--                default_region? (a join without latencies plays there) }
-- A world is matched around anchors (_rated.lua) when it is rated, has
-- regions or has match rules (cfg.anchored): cfg.retry_ms is then how long a
-- failed anchor waits.
-- @include _lib

local Config = {}
do

-- A deployment has a handful of worlds; the cap only bounds memory should
-- configurations ever change often (each deployment's strings differ).
local CONFIG_CACHE_MAX = 64
local config_cache, config_cached = {}, 0

local function is_int(v, min)
  return type(v) == 'number' and v == math.floor(v) and v >= min
end

-- A widening window { base, per_sec, max } (ratings or team balance), or nil.
local function window_rules(w)
  if type(w) ~= 'table' then return nil end
  if type(w.base) ~= 'number' or w.base < 0 or type(w.per_sec) ~= 'number' or w.per_sec < 0
      or type(w.max) ~= 'number' or w.max < w.base then
    return nil
  end
  return { base = w.base, per_sec = w.per_sec, max = w.max }
end

-- A rated world's rules: { base, per_sec, max, relax_ms, retry_ms,
-- balance = { base, per_sec, max, relax_ms } or nil, backfill_balance = the
-- same or nil (a backfill's fills keep it instead of balance) }, or nil when
-- malformed.
local function rated_rules(r)
  local rules = window_rules(r)
  if not rules or not is_int(r.relax_ms, 0) or not is_int(r.retry_ms, 1) then return nil end
  rules.relax_ms, rules.retry_ms = r.relax_ms, r.retry_ms
  if r.balance ~= nil then
    rules.balance = window_rules(r.balance)
    if not rules.balance then return nil end
    rules.balance.relax_ms = r.relax_ms
  end
  if r.backfill_balance ~= nil then
    local b = r.backfill_balance
    rules.backfill_balance = window_rules(b)
    if not rules.backfill_balance or (b.relax_ms ~= nil and not is_int(b.relax_ms, 1)) then return nil end
    rules.backfill_balance.relax_ms = b.relax_ms or math.huge
  end
  return rules
end

local ATTRIBUTE_TYPES = { string = true, number = true, stringList = true, numberMap = true }
local RULE_KINDS = {
  equality = 'attr', compare = 'attr', all_equal = 'attr', all_different = 'attr', distance = 'attr',
  intersection = 'attr', quota = 'attr', total = 'attr', ['and'] = 'of', ['or'] = 'of', ['not'] = 'of',
}
local PARTY = { avg = true, min = true, max = true, union = true, intersection = true }
local OPS = { ['>='] = true, ['<='] = true, ['>'] = true, ['<'] = true, ['='] = true, ['!='] = true }

-- The world's attributes: { list, by_name, trusted }, or nil and what is wrong.
local function attribute_rules(list)
  if type(list) ~= 'table' or #list == 0 then return nil, 'attributes must list the world\'s attributes' end
  local out = { list = {}, by_name = {}, trusted = false }
  for i, a in ipairs(list) do
    if type(a) ~= 'table' or type(a.name) ~= 'string' or not string.match(a.name, '^[a-z][A-Za-z0-9_]*$')
        or out.by_name[a.name] or not ATTRIBUTE_TYPES[a.type] or type(a.trusted) ~= 'boolean'
        or (a.default ~= nil and type(a.default) ~= 'string') or (a.refuse ~= nil and type(a.refuse) ~= 'boolean') then
      return nil, 'attributes[' .. i .. '] is malformed'
    end
    local decl = { name = a.name, type = a.type, trusted = a.trusted, default = a.default, refuse = a.refuse == true }
    out.list[i], out.by_name[a.name] = decl, decl
    if a.trusted then out.trusted = true end
  end
  return out
end

-- Whether rule `i` (and every rule it names) has no `not`: such a rule,
-- once broken by some tickets, stays broken whatever tickets join them.
local function monotone(rules, i, depth)
  local r = rules[i]
  if depth > #rules then return false end
  if r.kind == 'not' then return false end
  for _, j in ipairs(r.of or {}) do
    if not monotone(rules, j, depth + 1) then return false end
  end
  return true
end

-- The world's match rules (see _match_rules.lua), or nil and what is wrong.
local function match_rules(list, attrs)
  if type(list) ~= 'table' or #list == 0 or #list > 20 then return nil, 'match_rules must list 1 to 20 rules' end
  local out = {}
  for i, r in ipairs(list) do
    local bad = 'match_rules[' .. i .. '] is malformed'
    if type(r) ~= 'table' or type(r.name) ~= 'string' or not RULE_KINDS[r.kind]
        or (r.top ~= nil and type(r.top) ~= 'boolean') then
      return nil, bad
    end
    local rule = { name = r.name, kind = r.kind, top = r.top == true }
    if RULE_KINDS[r.kind] == 'attr' then
      local decl = attrs.by_name[r.attr or '']
      if not decl then return nil, bad .. ': unknown attribute' end
      rule.attr = r.attr
    else
      if type(r.of) ~= 'table' or #r.of == 0 then return nil, bad .. ': of' end
      rule.of = {}
      for j, idx in ipairs(r.of) do
        if not is_int(idx, 1) or idx > #list or idx == i then return nil, bad .. ': of' end
        rule.of[j] = idx
      end
    end
    if r.kind == 'compare' then
      if not OPS[r.op] or (type(r.value) ~= 'number' and type(r.value) ~= 'string') then return nil, bad .. ': op' end
      rule.op = r.op
    end
    if r.kind == 'distance' or r.kind == 'intersection' or r.kind == 'compare' then
      if r.kind ~= 'compare' and type(r.value) ~= 'number' then return nil, bad .. ': value' end
      rule.value = r.value
    end
    if r.kind == 'quota' then
      if type(r.quotas) ~= 'table' or #r.quotas == 0 or (r.per_team ~= nil and type(r.per_team) ~= 'boolean') then
        return nil, bad .. ': quotas'
      end
      rule.quotas, rule.role_of, rule.per_team = {}, {}, r.per_team == true
      for j, q in ipairs(r.quotas) do
        if type(q) ~= 'table' or type(q[1]) ~= 'string' or rule.role_of[q[1]] or not is_int(q[2], 0)
            or not is_int(q[3], q[2]) then
          return nil, bad .. ': quotas'
        end
        rule.quotas[j] = { value = q[1], min = q[2], max = q[3] }
        rule.role_of[q[1]] = j
      end
    end
    if r.kind == 'total' then
      local adds = r.adds
      if (r.min ~= nil and type(r.min) ~= 'number') or (r.max ~= nil and type(r.max) ~= 'number')
          or (r.min == nil and r.max == nil) or type(adds) ~= 'table' or type(adds[1]) ~= 'number'
          or type(adds[2]) ~= 'number' or (r.per_team ~= nil and type(r.per_team) ~= 'boolean') then
        return nil, bad .. ': total'
      end
      rule.min, rule.max, rule.per_team, rule.adds = r.min, r.max, r.per_team == true, { adds[1], adds[2] }
    end
    if r.party ~= nil and not PARTY[r.party] then return nil, bad .. ': party' end
    rule.party = r.party
    rule.from_anchor = r.from_anchor == true
    if r.optional_ms ~= nil then
      if not is_int(r.optional_ms, 1) then return nil, bad .. ': optional_ms' end
      rule.optional_ms = r.optional_ms
    end
    if r.linear ~= nil then
      local l = r.linear
      if type(l) ~= 'table' or type(l.per_sec) ~= 'number' or l.per_sec <= 0 or type(l.limit) ~= 'number'
          or type(rule.value) ~= 'number' then
        return nil, bad .. ': linear'
      end
      rule.linear = { per_sec = l.per_sec, limit = l.limit }
    end
    if r.steps ~= nil then
      if type(r.steps) ~= 'table' or #r.steps == 0 or type(rule.value) ~= 'number' then return nil, bad .. ': steps' end
      rule.steps = {}
      for j, step in ipairs(r.steps) do
        -- cjson decodes null as cjson.null: the step switches the rule off.
        local v = step[2]
        if type(step) ~= 'table' or not is_int(step[1], 1) or (v ~= cjson.null and type(v) ~= 'number') then
          return nil, bad .. ': steps'
        end
        rule.steps[j] = { step[1], v ~= cjson.null and v or false }
      end
    end
    out[i] = rule
  end
  for i, rule in ipairs(out) do
    -- A quota's or total's minimums are met only once the match is full:
    -- the fitter checks them apart (_roles.lua).
    rule.monotone = rule.kind ~= 'quota' and rule.kind ~= 'total' and monotone(out, i, 0)
  end
  return out
end

local function parse_world_config(s)
  local ok, c = pcall(cjson.decode, s)
  if not ok or type(c) ~= 'table' then return nil, 'world config is not a JSON object' end
  if not is_int(c.seats, 2) then return nil, 'seats must be an integer >= 2' end
  if not is_int(c.teams, 1) or c.seats % c.teams ~= 0 then return nil, 'teams must divide the seats' end
  if not is_int(c.ticket_ttl, 1) then return nil, 'ticket lifetime must be > 0' end
  if not is_int(c.match_ttl, 1) then return nil, 'match lifetime must be > 0' end
  if type(c.instant) ~= 'boolean' then return nil, 'instant must be true or false' end
  if not is_int(c.capacity, 0) then return nil, 'capacity must be an integer >= 0' end
  if not is_int(c.window, 0) then return nil, 'window must be an integer >= 0' end
  if type(c.presence) ~= 'boolean' then return nil, 'presence must be true or false' end
  if c.formed_holds ~= nil and type(c.formed_holds) ~= 'boolean' then
    return nil, 'formed_holds must be true or false'
  end
  if not is_int(c.max_party, 1) then return nil, 'max_party must be an integer >= 1' end
  if not is_int(c.party_ttl, 1) then return nil, 'party lifetime must be > 0' end
  local r = c.ratings
  if type(r) ~= 'table' or type(r.min) ~= 'number' or type(r.max) ~= 'number' or r.min > r.max then
    return nil, 'bad rating range'
  end
  if r.default ~= nil and type(r.default) ~= 'number' then return nil, 'default rating is not a number' end
  if c.party_rating ~= 'average' and c.party_rating ~= 'max' then
    return nil, 'party_rating must be average or max'
  end
  local claim = c.claim
  if type(claim) ~= 'table' or not is_int(claim.lease_ms, 1) or not is_int(claim.young_ms, 0) then
    return nil, 'claim must hold lease_ms > 0 and young_ms >= 0'
  end
  local parsed = {
    seats = c.seats, teams = c.teams, ticket_ttl = c.ticket_ttl, match_ttl = c.match_ttl,
    instant = c.instant, capacity = c.capacity, window = c.window, presence = c.presence,
    formed_holds = c.formed_holds == true,
    max_party = c.max_party, party_ttl = c.party_ttl, party_rating = c.party_rating,
    min_rating = r.min, max_rating = r.max, default_rating = r.default,
    default_rating_text = r.default and num(r.default),
    claim = { lease = claim.lease_ms, young = claim.young_ms },
  }
  if c.group ~= nil then
    if type(c.group) ~= 'table' or #c.group < 2 or #c.group > 4 then
      return nil, 'group must list the 2 to 4 worlds of a queueGroup'
    end
    for _, w in ipairs(c.group) do
      if type(w) ~= 'string' or w == '' then return nil, 'group must list world names' end
    end
    parsed.group = c.group
  end
  if c.rating ~= nil then
    parsed.rules = rated_rules(c.rating)
    if not parsed.rules then return nil, 'bad rating rules' end
  end
  if c.regions ~= nil then
    local g = c.regions
    if type(g) ~= 'table' or type(g.names) ~= 'table' or #g.names == 0 or #g.names > 16 then
      return nil, 'regions.names must list 1 to 16 regions'
    end
    local regions = { names = {}, index = {} }
    for i, name in ipairs(g.names) do
      if type(name) ~= 'string' or not string.match(name, '^[a-z0-9][a-z0-9-]*$') or #name > 32
          or regions.index[name] then
        return nil, 'regions.names must be distinct names of [a-z0-9-]'
      end
      regions.names[i], regions.index[name] = name, i
    end
    if type(g.max_latency) ~= 'number' or g.max_latency <= 0 or type(g.widen_per_second) ~= 'number'
        or g.widen_per_second < 0 or type(g.latency_cap) ~= 'number' or g.latency_cap < g.max_latency then
      return nil, 'regions: max_latency > 0, widen_per_second >= 0 and latency_cap >= max_latency'
    end
    if g.max_spread ~= nil and (type(g.max_spread) ~= 'number' or g.max_spread < 0) then
      return nil, 'regions.max_spread must be a number >= 0'
    end
    if not is_int(g.retry_ms, 1) then return nil, 'regions.retry_ms must be an integer > 0' end
    regions.base, regions.per_sec, regions.cap = g.max_latency, g.widen_per_second, g.latency_cap
    regions.spread = g.max_spread
    if g.default_region ~= nil then
      if not regions.index[g.default_region] then return nil, 'regions.default_region must be one of names' end
      regions.default = g.default_region
    end
    parsed.regions = regions
  end
  if c.attributes ~= nil then
    local err
    parsed.attributes, err = attribute_rules(c.attributes)
    if not parsed.attributes then return nil, err end
    if not is_int(c.retry_ms, 1) then return nil, 'retry_ms must be an integer > 0 in a world with attributes' end
  end
  if c.match_rules ~= nil then
    if not parsed.attributes then return nil, 'match_rules need attributes' end
    local err
    parsed.match_rules, err = match_rules(c.match_rules, parsed.attributes)
    if not parsed.match_rules then return nil, err end
    for _, rule in ipairs(parsed.match_rules) do
      if rule.kind == 'quota' or rule.kind == 'total' then
        rule.seats, rule.teams = c.seats, rule.per_team and c.teams or 1
      end
      if rule.kind == 'quota' then parsed.quota = rule end
      if rule.kind == 'total' then
        parsed.totals = parsed.totals or {}
        parsed.totals[#parsed.totals + 1] = rule
      end
    end
  end
  if c.candidate_window ~= nil then
    if not parsed.match_rules or not is_int(c.candidate_window, 16) or c.candidate_window > 4096 then
      return nil, 'candidate_window must be an integer 16..4096 in a world with match rules'
    end
    parsed.scan_limit = c.candidate_window
  end
  parsed.retry_ms = (parsed.rules and parsed.rules.retry_ms) or (parsed.regions and c.regions.retry_ms)
    or (parsed.attributes and c.retry_ms)
  -- A world with attributes is matched around anchors too: its records tell
  -- the values each match was formed under.
  parsed.anchored = parsed.rules ~= nil or parsed.regions ~= nil or parsed.attributes ~= nil
  if c.ready_check ~= nil then
    local rc = c.ready_check
    if type(rc) ~= 'table' or not is_int(rc.accept_ms, 1) or not is_int(rc.cooldown_ms, 0) then
      return nil, 'ready check times must be integers (accept_ms > 0)'
    end
    parsed.accept = { ms = rc.accept_ms, cooldown = rc.cooldown_ms }
  end
  return parsed
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

-- The module's face: what other files reach as Config.<name>.
Config.is_int = is_int
Config.window_rules = window_rules
Config.rated_rules = rated_rules
Config.parse_world_config = parse_world_config
Config.world_config = world_config
Config.CONFIG_CACHE_MAX = CONFIG_CACHE_MAX
Config.config_cache = config_cache
Config.config_cached = config_cached
end
