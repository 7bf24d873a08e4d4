-- _rule_index.lua: the queue of a world with match rules, indexed by its
-- rules (docs/rules.md, "How candidates are found"), so that an anchor
-- reads only the tickets that can fit it: which rules are filed, each
-- waiting ticket's entries (filed with its attributes, dropped, captured
-- and restored around a ready check), and where an anchor's candidates
-- are read from.
-- @include _lib _match_rules _players

local RuleIndex = {}
do

-- The queue's indexes (docs/rules.md, "Indexed, not scanned"): the first
-- top-level rule of each indexed kind files every waiting ticket, so that
-- an anchor reads only tickets that can fit it:
--   attr-queue (equality): ticket -> band(its value) * BAND + seq;
--   attr-values (intersection, FIFO worlds): `<value>|<ticket>` ->
--     band(value) * BAND + seq for each value of its list;
--   attr-numbers (distance, FIFO worlds): `<seq>:<ticket>` -> its number.
-- A band is a hash of the value into 1..BANDS (two values sharing one are
-- told apart by the rule itself) and lists its tickets oldest first; band
-- 0 (and +inf) holds the tickets without a value, which fit any. A rated
-- world's candidates come by rating: only its equality rule is filed.
local BAND = 1099511627776
local BANDS = 4095

-- Whether rule `rule` drives every anchor's read: its attribute always
-- has a value (refused when missing, or a default) and it is never off
-- (an intersection's count never below 1).
local function always_drives(cfg, rule)
  local decl = cfg.attributes.by_name[rule.attr]
  if not (decl and (decl.refuse or decl.default ~= nil)) or rule.optional_ms then return false end
  local floor = rule.kind == 'intersection' and 1 or nil
  if rule.linear and floor and rule.linear.limit < floor then return false end
  for _, step in ipairs(rule.steps or {}) do
    if step[2] == false or (floor and step[2] < floor) then return false end
  end
  return true
end

-- The index of the world's first top-level rule of each indexed kind
-- (false: none, or no anchor would read it: an earlier kind always
-- drives).
local function indexed_rules(cfg)
  local found = cfg.indexed_rules
  if found then return found end
  found = { equality = false, intersection = false, distance = false }
  for i, rule in ipairs(cfg.match_rules or {}) do
    local kind = rule.kind
    if rule.top and found[kind] == false and (kind == 'equality' or not cfg.rules) then found[kind] = i end
  end
  local rules = cfg.match_rules
  if found.equality and always_drives(cfg, rules[found.equality]) then
    found.intersection, found.distance = false, false
  elseif found.intersection and always_drives(cfg, rules[found.intersection]) then
    found.distance = false
  end
  -- A FIFO role queue without either is read role by role (its quota
  -- always holds, so it always drives).
  found.quota = false
  if cfg.quota and not cfg.rules and not found.equality and not found.intersection then
    for i, rule in ipairs(rules) do
      if rule == cfg.quota then found.quota = i end
    end
    found.distance = false
  end
  found.any = (found.equality or found.intersection or found.distance or found.quota) and true or false
  cfg.indexed_rules = found
  return found
end

local function band_of(value)
  local text, h = tostring(value), 0
  for i = 1, #text do h = (h * 31 + string.byte(text, i)) % BANDS end
  return h + 1
end

-- A ticket's value of an equality attribute: its first member's that has
-- one (a party's agree, or some have none), or nil.
local function first_value(members, attr)
  for _, m in ipairs(members) do
    if m[attr] ~= nil then return m[attr] end
  end
  return nil
end

local function band_score(band, seq)
  return string.format('%d', band * BAND + seq)
end

-- A waiting ticket's index entries, flat: key name, score, member, ...
-- (`members`: its decoded attributes; `seq`: its queue sequence).
local function index_entries(cfg, ticket, members, seq)
  local found, rules = indexed_rules(cfg), cfg.match_rules
  local out, n = {}, 0
  local function put(key, score, member)
    out[n + 1], out[n + 2], out[n + 3] = key, score, member
    n = n + 3
  end
  if found.equality then
    local x = first_value(members, rules[found.equality].attr)
    put('attr_queue', band_score(x ~= nil and band_of(x) or 0, seq), ticket)
  end
  if found.intersection then
    local rule = rules[found.intersection]
    local set = MatchRules.ticket_set(members, rule.attr, rule.party)
    if set then
      for v in pairs(set) do put('attr_values', band_score(band_of(v), seq), v .. '|' .. ticket) end
    else
      put('attr_values', band_score(0, seq), '|' .. ticket)
    end
  end
  if found.distance then
    local rule = rules[found.distance]
    local x = MatchRules.ticket_number(members, rule.attr, rule.party)
    put('attr_numbers', x and num(x) or '+inf', Players.rating_member(seq, ticket))
  end
  if found.quota then
    -- In the band of each role a member offers; in band 0 when a member
    -- may play any role or one no quota lists.
    local rule = rules[found.quota]
    local filed, any = {}, false
    for _, m in ipairs(members) do
      local x = m[rule.attr]
      if x == nil then any = true end
      for _, v in ipairs(type(x) == 'table' and x or { x }) do
        if not rule.role_of[v] then
          any = true
        elseif not filed[v] then
          filed[v] = true
          put('attr_values', band_score(band_of(v), seq), v .. '|' .. ticket)
        end
      end
    end
    if any then put('attr_values', band_score(0, seq), '|' .. ticket) end
  end
  return out
end

local function file_entries(k, entries)
  for i = 1, #entries, 3 do redis.call('ZADD', k[entries[i]], entries[i + 1], entries[i + 2]) end
end

-- Files a waiting ticket's attributes (a world with attributes) and its
-- index entries (`seq`: its queue sequence).
local function add(ctx, ticket, encoded, seq)
  redis.call('HSET', ctx.k.attrs, ticket, encoded)
  if ctx.loaded_attrs then ctx.loaded_attrs[ticket] = nil end
  local cfg = ctx.cfg
  if indexed_rules(cfg).any then
    file_entries(ctx.k, index_entries(cfg, ticket, MatchRules.decode_stored(encoded, cfg.attributes.by_name), seq))
  end
end

-- Removes `tickets`' attributes and index entries (one EXISTS in worlds
-- without). Leaves and sweeps have no configuration, so the entries are
-- named from what is stored: a list entry for every item of every value
-- (a superset), a number entry from the queue's sequence (a dropped
-- ticket is still queued).
local function drop(ctx, tickets)
  local k = ctx.k
  if #tickets == 0 or not has(k, 'attrs') or redis.call('EXISTS', k.attrs) == 0 then return end
  if has(k, 'attr_values') and redis.call('EXISTS', k.attr_values) == 1 then
    local members = {}
    for i = 1, #tickets, CHUNK do
      local last = math.min(i + CHUNK - 1, #tickets)
      local stored = redis.call('HMGET', k.attrs, unpack(tickets, i, last))
      for j = i, last do
        local t = tickets[j]
        members[#members + 1] = '|' .. t
        for text in string.gmatch(stored[j - i + 1] or '', '=([^;|]*)') do
          for item in string.gmatch(text, '[^,]+') do members[#members + 1] = item .. '|' .. t end
        end
      end
    end
    chunked('ZREM', k.attr_values, members, 1)
  end
  if has(k, 'attr_numbers') and redis.call('EXISTS', k.attr_numbers) == 1 then
    local members = {}
    for _, t in ipairs(tickets) do
      local seq = redis.call('ZSCORE', k.queue, t)
      if seq then members[#members + 1] = Players.rating_member(tonumber(seq), t) end
    end
    if #members > 0 then chunked('ZREM', k.attr_numbers, members, 1) end
  end
  chunked('HDEL', k.attrs, tickets, 1)
  if has(k, 'attr_queue') then chunked('ZREM', k.attr_queue, tickets, 1) end
  local loaded = ctx.loaded_attrs
  if loaded then
    for _, t in ipairs(tickets) do loaded[t] = nil end
  end
end

-- A waiting ticket's stored attributes, to file back with it (a cancelled
-- ready check requeues its tickets), or nil.
local function capture(k, ticket)
  if not has(k, 'attrs') then return nil end
  return redis.call('HGET', k.attrs, ticket) or nil
end

-- A waiting ticket's index entries, to file back with it (the requeue has
-- no configuration), or nil.
local function capture_index(cfg, ticket, stored, seq)
  if not stored or not cfg.attributes or not indexed_rules(cfg).any then return nil end
  return index_entries(cfg, ticket, MatchRules.decode_stored(stored, cfg.attributes.by_name), seq)
end

-- A waiting ticket's index entries as filed, read back from the keys (a
-- call without the world's configuration: a ticket shared with another
-- world of its group lifted there), or nil.
local function capture_filed(k, ticket, seq)
  if not has(k, 'attrs') then return nil end
  local stored = redis.call('HGET', k.attrs, ticket)
  if not stored then return nil end
  local out = {}
  local function keep(key, member)
    if not has(k, key) then return end
    local score = redis.call('ZSCORE', k[key], member)
    if score then
      out[#out + 1] = key
      out[#out + 1] = score
      out[#out + 1] = member
    end
  end
  keep('attr_queue', ticket)
  keep('attr_values', '|' .. ticket)
  for text in string.gmatch(stored, '=([^;|]*)') do
    for item in string.gmatch(text, '[^,]+') do keep('attr_values', item .. '|' .. ticket) end
  end
  keep('attr_numbers', Players.rating_member(seq, ticket))
  return out
end

-- Files a requeued ticket back: its stored attributes and its captured
-- index entries (a proposal stored before attr-values and attr-numbers
-- holds its attr-queue score alone).
local function restore(k, ticket, stored, entries)
  if stored then redis.call('HSET', k.attrs, ticket, stored) end
  if type(entries) == 'table' then
    file_entries(k, entries)
  elseif entries then
    redis.call('ZADD', k.attr_queue, entries, ticket)
  end
end

-- The bands of `values` (each once, in order), then band 0.
local function value_bands(values)
  local bands, seen = {}, {}
  for _, x in ipairs(values) do
    local b = band_of(x)
    if not seen[b] then
      seen[b] = true
      bands[#bands + 1] = b
    end
  end
  table.sort(bands)
  bands[#bands + 1] = 0
  return bands
end

-- Where an anchor's candidates are read from while an indexed rule is in
-- force at its wait and the anchor has a value: { key, bands } (equality:
-- its value's band and band 0; intersection: its values' bands and band
-- 0) or { near = its number, within = the distance in force }; nil: the
-- whole queue. The equality index is preferred, then the intersection's.
local function anchor_source(cfg, a, wait_ms)
  local found, rules = indexed_rules(cfg), cfg.match_rules
  if not found.any then return nil end
  local i = found.equality
  if i and MatchRules.in_force(rules[i], wait_ms) then
    local x = first_value(a.attrs, rules[i].attr)
    if x ~= nil then return { key = 'attr_queue', bands = { band_of(x), 0 } } end
  end
  i = found.intersection
  if i then
    local rule = rules[i]
    local on, v = MatchRules.in_force(rule, wait_ms)
    local set = on and v >= 1 and MatchRules.ticket_set(a.attrs, rule.attr, rule.party)
    if set then
      local values = {}
      for x in pairs(set) do values[#values + 1] = x end
      return { key = 'attr_values', bands = value_bands(values) }
    end
  end
  i = found.quota
  if i then
    -- Every role's oldest tickets, whatever the anchor offers: the roles
    -- it lacks may lie behind any number of another's.
    local values = {}
    for j, q in ipairs(rules[i].quotas) do values[j] = q.value end
    return { key = 'attr_values', bands = value_bands(values) }
  end
  i = found.distance
  if i then
    local rule = rules[i]
    local on, v = MatchRules.in_force(rule, wait_ms)
    local x = on and MatchRules.ticket_number(a.attrs, rule.attr, rule.party)
    if x then return { near = x, within = v } end
  end
  return nil
end

-- Up to `count` tickets of each of `source`'s bands after the first `from`
-- of each, merged oldest first: { { ticket, seq } ... }, each ticket once
-- per attempt (source.seen), and whether no band had more.
local function band_candidates(k, source, from, count)
  local key = source.key
  local seen = source.seen or {}
  source.seen = seen
  local out, whole = {}, true
  for _, b in ipairs(source.bands) do
    local list = redis.call('ZRANGEBYSCORE', k[key], string.format('%d', b * BAND),
      '(' .. string.format('%d', (b + 1) * BAND), 'WITHSCORES', 'LIMIT', from, count)
    for i = 1, #list, 2 do
      local ticket = list[i]
      if key == 'attr_values' then ticket = string.match(ticket, '^[^|]*|(.*)$') end
      if not seen[ticket] then
        seen[ticket] = true
        out[#out + 1] = { ticket = ticket, seq = tonumber(list[i + 1]) - b * BAND }
      end
    end
    if #list == 2 * count then whole = false end
  end
  table.sort(out, function(x, y) return x.seq < y.seq end)
  return out, whole
end

-- The module's face: what other files reach as RuleIndex.<name>.
RuleIndex.always_drives = always_drives
RuleIndex.indexed_rules = indexed_rules
RuleIndex.band_of = band_of
RuleIndex.first_value = first_value
RuleIndex.band_score = band_score
RuleIndex.index_entries = index_entries
RuleIndex.file_entries = file_entries
RuleIndex.add = add
RuleIndex.drop = drop
RuleIndex.capture = capture
RuleIndex.capture_index = capture_index
RuleIndex.capture_filed = capture_filed
RuleIndex.restore = restore
RuleIndex.value_bands = value_bands
RuleIndex.anchor_source = anchor_source
RuleIndex.band_candidates = band_candidates
RuleIndex.BAND = BAND
RuleIndex.BANDS = BANDS
end
