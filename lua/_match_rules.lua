-- _match_rules.lua: player attributes and match rules (docs/rules.md,
-- "Attributes and match rules"). A ticket's attributes are stored in the
-- world's `attrs` hash as the store encodes them (shared/src/domain/
-- attributes.rs): `name=value;...` per player, a party's members joined
-- by '|'; a string is a token, a number its decimal, a list its sorted
-- items joined by ',', a map `key:number` pairs joined by ','.
--
-- cfg.attributes (see _config.lua): { list = { { name, type, trusted,
-- default (encoded text or nil), refuse } ... }, by_name, trusted (any
-- trusted) }; cfg.match_rules: { { name, kind, attr, op, value, from_anchor,
-- party, of, top, optional_ms, linear, steps, monotone } ... }.
--
-- Every rule is checked on the anchor's own wait (never reset by others
-- joining): a rule whose number relaxes takes the value in force then, and
-- a rule that is off holds. Only top-level rules (those no compound names)
-- must hold; a compound's operands are checked as its parts.
-- @include _lib _roles

local MatchRules = {}
do

-- Most candidates an anchor of a world with rules looks at (pages growing
-- fourfold from a few per seat) unless its `candidateWindow` says
-- otherwise (cfg.scan_limit): a rule that no index serves is checked on
-- this bounded window (docs/rules.md; the simulator measures what it costs).
local SCAN_LIMIT = 256

-- One player's attributes, decoded: name -> string | number | list (array,
-- sorted) | map (key -> number). `types`: the world's name -> type.
local function decode_player(s, by_name)
  local out = {}
  if not s or s == '' then return out end
  for name, text in string.gmatch(s, '([^;=]+)=([^;]*)') do
    local decl = by_name[name]
    if decl then
      local t = decl.type
      if t == 'string' then
        out[name] = text
      elseif t == 'number' then
        out[name] = tonumber(text)
      elseif t == 'stringList' then
        local list, n = {}, 0
        for item in string.gmatch(text, '[^,]+') do
          n = n + 1
          list[n] = item
        end
        out[name] = list
      else
        local map = {}
        -- A key may hold ':': the number follows the last one.
        for key, v in string.gmatch(text, '([^,]+):([^,]+)') do map[key] = tonumber(v) end
        out[name] = map
      end
    end
  end
  return out
end

-- A ticket's stored attributes: one decoded table per player, in member
-- order (a solo ticket has one).
local function decode_stored(s, by_name)
  local members, n = {}, 0
  for part in string.gmatch((s or '') .. '|', '([^|]*)|') do
    n = n + 1
    members[n] = decode_player(part, by_name)
  end
  if n == 0 then members[1] = {} end
  return members
end

-- The pairs of an encoded player text, name -> value text.
local function pairs_of(s)
  local out = {}
  for name, text in string.gmatch(s or '', '([^;=]+)=([^;]*)') do out[name] = text end
  return out
end

-- What is wrong with a join's `attributes` argument (the store's encoding
-- of the client attributes), or nil: a world without attributes takes
-- none; others take `name=value` pairs of client attributes they declare.
local function bad_argument(cfg, client)
  local attrs = cfg.attributes
  if client == '' then return nil end
  if not attrs then return 'attributes given for a world without attributes' end
  for pair in string.gmatch(client .. ';', '([^;]*);') do
    local name = string.match(pair, '^([a-z][A-Za-z0-9_]*)=[^|=]+$')
    local decl = name and attrs.by_name[name]
    if not decl or decl.trusted then return 'bad attributes: ' .. pair end
  end
  return nil
end

-- A joining player's attributes as stored, from the store's encoding of
-- the body's client attributes (`client`, defaults filled in) and the
-- trusted store (read here): nil and the name of an attribute that must
-- be set and is not, or nil, nil and an error for a malformed argument.
-- Worlds without attributes: '' (and an argument must be empty).
local function joining(ctx, player, client)
  local attrs = ctx.cfg.attributes
  local bad = bad_argument(ctx.cfg, client)
  if bad then return nil, nil, bad end
  if not attrs then return '' end
  local given = pairs_of(client)
  local stored = attrs.trusted and pairs_of(redis.call('HGET', ctx.k.player_attributes, player)) or nil
  local parts, n = {}, 0
  for _, decl in ipairs(attrs.list) do
    local text
    if decl.trusted then
      text = stored[decl.name] or decl.default
    else
      text = given[decl.name]
    end
    if text then
      n = n + 1
      parts[n] = decl.name .. '=' .. text
    elseif decl.refuse then
      return nil, decl.name
    end
  end
  return table.concat(parts, ';', 1, n)
end

-- Loads the attributes of ticket infos that have none yet (`info.attrs`:
-- one table per player; `info.attrs_text`: as stored).
-- A call decodes a ticket's attributes once (ctx.loaded_attrs: ticket ->
-- { text, decoded }): a matcher call's anchors read the same oldest
-- tickets again and again. The decoded tables are only read.
local function load(ctx, infos)
  local loaded = ctx.loaded_attrs
  if not loaded then
    loaded = {}
    ctx.loaded_attrs = loaded
  end
  local todo, n = {}, 0
  for _, it in ipairs(infos) do
    if not it.attrs then
      local known = loaded[it.ticket]
      if known then
        it.attrs_text, it.attrs = known[1], known[2]
      else
        n = n + 1
        todo[n] = it
      end
    end
  end
  if n == 0 then return end
  local tickets = {}
  for i = 1, n do tickets[i] = todo[i].ticket end
  local by_name = ctx.cfg.attributes.by_name
  for i = 1, n, CHUNK do
    local last = math.min(i + CHUNK - 1, n)
    local stored = redis.call('HMGET', ctx.k.attrs, unpack(tickets, i, last))
    for j = i, last do
      local s = stored[j - i + 1] or ''
      local it = todo[j]
      it.attrs_text = s
      it.attrs = decode_stored(s, by_name)
      loaded[it.ticket] = { s, it.attrs }
    end
  end
end

-- A rule's number in force after the anchor waited `wait_ms`: on (false:
-- the rule is off and holds) and the value.
local function in_force(rule, wait_ms)
  if rule.optional_ms and wait_ms >= rule.optional_ms then return false end
  local v = rule.value
  if rule.linear then
    local l = rule.linear
    local moved = l.per_sec * (wait_ms / 1000)
    if l.limit >= v then v = math.min(v + moved, l.limit) else v = math.max(v - moved, l.limit) end
    -- A count relaxes toward its base: from 2 toward 1 it is 1 only once
    -- the line has reached 1.
    if rule.kind == 'intersection' then
      if v < rule.value then v = math.ceil(v) else v = math.floor(v) end
    end
  elseif rule.steps then
    for _, step in ipairs(rule.steps) do
      if wait_ms >= step[1] then
        if step[2] == false then return false end
        v = step[2]
      end
    end
  end
  return true, v
end

-- A ticket's value of a number attribute, its members' aggregated by
-- `party` (avg, min, max); nil when no member has one.
local function ticket_number(members, attr, party)
  local sum, n, lo, hi = 0, 0, math.huge, -math.huge
  for _, m in ipairs(members) do
    local v = m[attr]
    if v then
      sum, n = sum + v, n + 1
      if v < lo then lo = v end
      if v > hi then hi = v end
    end
  end
  if n == 0 then return nil end
  if party == 'min' then return lo elseif party == 'max' then return hi end
  return sum / n
end

-- A ticket's list of a stringList attribute as a set (value -> true), its
-- members' joined by `party` (intersection or union); nil when no member
-- has one.
local function ticket_set(members, attr, party)
  local set = nil
  for _, m in ipairs(members) do
    local list = m[attr]
    if list then
      if not set then
        set = {}
        for _, v in ipairs(list) do set[v] = true end
      elseif party == 'union' then
        for _, v in ipairs(list) do set[v] = true end
      else
        local keep = {}
        for _, v in ipairs(list) do
          if set[v] then keep[v] = true end
        end
        set = keep
      end
    end
  end
  return set
end

local COMPARE = {
  ['>='] = function(a, b) return a >= b end,
  ['<='] = function(a, b) return a <= b end,
  ['>'] = function(a, b) return a > b end,
  ['<'] = function(a, b) return a < b end,
  ['='] = function(a, b) return a == b end,
  ['!='] = function(a, b) return a ~= b end,
}

-- Whether rule `i` holds for a match `m`: { items = ticket infos with
-- .attrs, a = the anchor's info, wait = how long the anchor waited (ms),
-- backfill = true for a newcomer checked against a running match's
-- players (a quota rule is checked by Roles.backfill_roles instead),
-- out = nil, or a table collecting each rule's outcome by index: { on,
-- value, shared (sorted list), held (operand names) } }.
local function check(rules, i, m)
  local rule = rules[i]
  local items, a, wait_ms, out = m.items, m.a, m.wait, m.out
  local on, v = in_force(rule, wait_ms)
  local kind, attr = rule.kind, rule.attr
  local ok, shared, held = true, nil, nil
  if on then
    if kind == 'equality' then
      local first = nil
      for _, it in ipairs(items) do
        for _, m in ipairs(it.attrs) do
          local x = m[attr]
          if x ~= nil then
            if first == nil then first = x elseif x ~= first then ok = false end
          end
        end
      end
    elseif kind == 'compare' then
      local cmp = COMPARE[rule.op]
      for _, it in ipairs(items) do
        if type(v) == 'number' then
          local x = ticket_number(it.attrs, attr, rule.party)
          if x ~= nil and not cmp(x, v) then ok = false end
        else
          for _, m in ipairs(it.attrs) do
            local x = m[attr]
            if x ~= nil and not cmp(x, v) then ok = false end
          end
        end
      end
    elseif kind == 'all_equal' or kind == 'all_different' then
      local seen, first = {}, nil
      for _, it in ipairs(items) do
        for _, m in ipairs(it.attrs) do
          local x = m[attr]
          if x ~= nil then
            if kind == 'all_different' then
              if seen[x] then ok = false end
              seen[x] = true
            elseif first == nil then
              first = x
            elseif x ~= first then
              ok = false
            end
          end
        end
      end
    elseif kind == 'distance' then
      if rule.from_anchor then
        local ref = ticket_number(a.attrs, attr, rule.party)
        if ref ~= nil then
          for _, it in ipairs(items) do
            local x = ticket_number(it.attrs, attr, rule.party)
            if x ~= nil and math.abs(x - ref) > v then ok = false end
          end
        end
      else
        local lo, hi = math.huge, -math.huge
        for _, it in ipairs(items) do
          local x = ticket_number(it.attrs, attr, rule.party)
          if x ~= nil then
            if x < lo then lo = x end
            if x > hi then hi = x end
          end
        end
        if hi - lo > v then ok = false end
      end
    elseif kind == 'intersection' then
      local common = nil
      for _, it in ipairs(items) do
        local set = ticket_set(it.attrs, attr, rule.party)
        if set then
          if not common then
            common = set
          else
            local keep = {}
            for x in pairs(common) do
              if set[x] then keep[x] = true end
            end
            common = keep
          end
        end
      end
      shared = {}
      if common then
        for x in pairs(common) do shared[#shared + 1] = x end
        table.sort(shared)
        ok = #shared >= v
      end
    elseif kind == 'quota' and m.backfill then
      ok = true
    elseif kind == 'quota' then
      -- The whole match: its roles (and, per team, its teams) are kept on
      -- the items for the record (see record_fields, Matching.record_groups).
      local ratings = nil
      if items[1] and items[1].ratings then
        ratings = {}
        for _, it in ipairs(items) do
          for j = 1, #it.players do ratings[#ratings + 1] = it.ratings[j] end
        end
      end
      local solved = Roles.solve_roles(rule, items, ratings)
      items.quota = solved
      if rule.teams > 1 then items.assign = solved and solved.assign end
      ok = solved ~= nil
    elseif kind == 'total' and m.backfill then
      -- Checked against the teams' sums (Roles.backfill_totals).
      ok = true
    elseif kind == 'total' then
      -- Per team, the split is the match's teams (as a quota's).
      local assign = Roles.split_totals(rule, items)
      if rule.teams > 1 then items.assign = assign end
      ok = assign ~= nil
    elseif kind == 'not' then
      ok = not check(rules, rule.of[1], m)
    else
      -- and / or: every operand is evaluated, so the record tells each.
      local any, all = false, true
      held = {}
      for _, j in ipairs(rule.of) do
        if check(rules, j, m) then
          any = true
          held[#held + 1] = rules[j].name
        else
          all = false
        end
      end
      if kind == 'and' then ok = all else ok = any end
    end
  end
  if out then out[i] = { on = on, value = on and v or nil, shared = on and shared or nil, held = on and held or nil, ok = ok } end
  return ok
end

-- Whether every top-level rule holds for the match `m` (see check).
-- `partial`: the items are a match still being filled, so rules that a
-- later ticket could still satisfy (non-monotone: those with a `not`) are
-- not checked yet.
local function holds(cfg, m, partial)
  local rules = cfg.match_rules
  local ok = true
  for i, rule in ipairs(rules) do
    if rule.top and (not partial or rule.monotone) then
      if not check(rules, i, m) then
        ok = false
        if not m.out then return false end
      end
    end
  end
  return ok
end

-- The distinct items of `list` that `set` holds (all of them: set nil).
local function count_in(list, set)
  local n, seen = 0, {}
  for _, x in ipairs(list) do
    if not seen[x] and (set == nil or set[x]) then
      seen[x] = true
      n = n + 1
    end
  end
  return n
end

-- Rule `r`'s summary after taking ticket `it` (see fitter); false when
-- the tickets taken break the rule.
local function summarize(r, it)
  local rule, v = r.rule, r.v
  local kind, attr = rule.kind, rule.attr
  if kind == 'equality' or kind == 'all_equal' then
    for _, m in ipairs(it.attrs) do
      local x = m[attr]
      if x ~= nil then
        if r.first == nil then r.first = x elseif x ~= r.first then return false end
      end
    end
  elseif kind == 'all_different' then
    for _, m in ipairs(it.attrs) do
      local x = m[attr]
      if x ~= nil then
        if r.seen[x] then return false end
        r.seen[x] = true
      end
    end
  elseif kind == 'compare' then
    local cmp = COMPARE[rule.op]
    if type(v) == 'number' then
      local x = ticket_number(it.attrs, attr, rule.party)
      if x ~= nil and not cmp(x, v) then return false end
    else
      for _, m in ipairs(it.attrs) do
        local x = m[attr]
        if x ~= nil and not cmp(x, v) then return false end
      end
    end
  elseif kind == 'distance' then
    local x = ticket_number(it.attrs, attr, rule.party)
    if x ~= nil then
      if rule.from_anchor then
        if r.ref ~= nil and math.abs(x - r.ref) > v then return false end
      else
        if x < r.lo then r.lo = x end
        if x > r.hi then r.hi = x end
        if r.hi - r.lo > v then return false end
      end
    end
  else
    local set = ticket_set(it.attrs, attr, rule.party)
    if set then
      if r.common then
        local keep = {}
        for x in pairs(r.common) do
          if set[x] then keep[x] = true end
        end
        set = keep
      end
      r.common = set
      local n = 0
      for _ in pairs(set) do n = n + 1 end
      if n < v then return false end
    end
  end
  return true
end

-- Whether rule `r` (summarized over the tickets taken) still holds with
-- ticket `it` too, without changing the summary.
local function still_holds(r, it)
  local rule, v = r.rule, r.v
  local kind, attr = rule.kind, rule.attr
  local members = it.attrs
  if kind == 'intersection' then
    -- A solo ticket's list is counted in place (no set is built).
    local list = #members == 1 and members[1][attr]
    if #members == 1 and list == nil then return true end
    if list then return count_in(list, r.common) >= v end
    local set = ticket_set(members, attr, rule.party)
    if not set then return true end
    local n = 0
    for x in pairs(set) do
      if r.common == nil or r.common[x] then n = n + 1 end
    end
    return n >= v
  elseif kind == 'distance' and not rule.from_anchor then
    local x = ticket_number(members, attr, rule.party)
    if x == nil then return true end
    return math.max(r.hi, x) - math.min(r.lo, x) <= v
  elseif kind == 'compare' or kind == 'distance' then
    return summarize(r, it)
  elseif #members == 1 then
    -- equality, all_equal, all_different: one value against the summary.
    local x = members[1][attr]
    if x == nil then return true end
    if kind == 'all_different' then return not r.seen[x] end
    return r.first == nil or x == r.first
  end
  -- A party: its members against the summary and each other, on a copy.
  local copy = { rule = rule, v = v, first = r.first, seen = {} }
  if kind == 'all_different' then
    for x in pairs(r.seen) do copy.seen[x] = true end
  end
  return summarize(copy, it)
end

-- The rules `holds` checks on a partial match, one candidate at a time:
-- `fits(info, chosen)` answers as holds(cfg, { items = chosen + info, a =
-- a, wait = wait_ms }, true) does, from a summary of `chosen` (a match
-- being filled around the anchor `a`, chosen[1] == a) that follows it as
-- it grows: a candidate costs a few comparisons per rule instead of a pass
-- over the whole match and a set per ticket. Compound rules are checked
-- whole.
local function fitter(cfg, a, wait_ms)
  local rules = cfg.match_rules
  local simple, compound = {}, {}
  for i, rule in ipairs(rules) do
    if rule.top and rule.monotone then
      local on, v = in_force(rule, wait_ms)
      if on then
        local kind = rule.kind
        if kind == 'not' or kind == 'and' or kind == 'or' then
          compound[#compound + 1] = i
        else
          simple[#simple + 1] = { rule = rule, v = v }
        end
      end
    end
  end
  -- The summary covers chosen[1..summarized], the last of them `last`.
  local summarized, last, broken
  local function reset()
    summarized, last, broken = 0, nil, false
    for _, r in ipairs(simple) do
      r.first, r.common, r.lo, r.hi = nil, nil, math.huge, -math.huge
      r.seen = r.rule.kind == 'all_different' and {} or nil
      r.ref = r.rule.from_anchor and ticket_number(a.attrs, r.rule.attr, r.rule.party) or nil
    end
  end
  reset()
  local function take(chosen)
    if summarized > #chosen or (summarized > 0 and chosen[summarized] ~= last) then reset() end
    for j = summarized + 1, #chosen do
      for _, r in ipairs(simple) do
        if not summarize(r, chosen[j]) then broken = true end
      end
    end
    summarized, last = #chosen, chosen[#chosen]
  end
  local m = { a = a, wait = wait_ms }
  local quota, totals = cfg.quota, cfg.totals
  return function(info, chosen)
    take(chosen)
    if broken then return false end
    for _, r in ipairs(simple) do
      if not still_holds(r, info) then return false end
    end
    if quota or totals then
      local n = #chosen
      chosen[n + 1] = info
      local ok = not quota or Roles.roles_fit(quota, chosen)
      for _, rule in ipairs(ok and totals or {}) do
        if not Roles.totals_fit(rule, chosen) then ok = false end
      end
      chosen[n + 1] = nil
      if not ok then return false end
    end
    if #compound > 0 then
      local n = #chosen
      chosen[n + 1] = info
      m.items = chosen
      local ok = true
      for _, i in ipairs(compound) do
        if not check(rules, i, m) then
          ok = false
          break
        end
      end
      chosen[n + 1] = nil
      return ok
    end
    return true
  end
end

-- A value as JSON (numbers exactly, lists and maps sorted).
local function value_json(decl_type, x)
  if decl_type == 'string' then return quote(x) end
  if decl_type == 'number' then return num(x) end
  if decl_type == 'stringList' then
    local parts = {}
    for i, v in ipairs(x) do parts[i] = quote(v) end
    return '[' .. table.concat(parts, ',') .. ']'
  end
  local keys = {}
  for key in pairs(x) do keys[#keys + 1] = key end
  table.sort(keys)
  for i, key in ipairs(keys) do keys[i] = quote(key) .. ':' .. num(x[key]) end
  return '{' .. table.concat(keys, ',') .. '}'
end

-- One player's attributes (`m`, decoded) as a JSON object, in
-- declaration order.
local function player_json(attrs, m)
  local fields = {}
  for _, decl in ipairs(attrs.list) do
    local x = m[decl.name]
    if x ~= nil then fields[#fields + 1] = quote(decl.name) .. ':' .. value_json(decl.type, x) end
  end
  return '{' .. table.concat(fields, ',') .. '}', #fields
end

-- A ticket info's players' attributes, one JSON object each (a backfill's
-- addition records them).
local function players_json(cfg, it)
  local out = {}
  for j in ipairs(it.players) do out[j] = player_json(cfg.attributes, it.attrs and it.attrs[j] or {}) end
  return out
end

-- The record's fields for a match formed under the world's attributes:
-- `,"attributes":{...},"rules":[...],"anchor":"...","anchorWaitMs":n`.
-- `items`: the match's ticket infos (with .attrs), `a` the anchor's.
local function record_fields(cfg, items, a, wait_ms)
  local attrs = cfg.attributes
  local players = {}
  for _, it in ipairs(items) do
    for j, p in ipairs(it.players) do
      local json, n = player_json(attrs, it.attrs[j] or {})
      if n > 0 then players[#players + 1] = quote(p) .. ':' .. json end
    end
  end
  local rules = cfg.match_rules
  local parts = {}
  if rules then
    local out = {}
    holds(cfg, { items = items, a = a, wait = wait_ms, out = out }, false)
    for i, rule in ipairs(rules) do
      local o = out[i]
      if o then
        local s = '{"name":' .. quote(rule.name) .. ',"inForce":' .. (o.on and 'true' or 'false')
        if o.value ~= nil then
          s = s .. ',"value":' .. (type(o.value) == 'number' and num(o.value) or quote(o.value))
        end
        if o.shared then s = s .. ',"shared":' .. value_json('stringList', o.shared) end
        if o.held then s = s .. ',"held":' .. value_json('stringList', o.held) end
        parts[#parts + 1] = s .. '}'
      end
    end
  end
  local roles = ''
  local solved = items.quota
  if cfg.quota and solved then
    local list, at = {}, 0
    for _, it in ipairs(items) do
      for _, p in ipairs(it.players) do
        at = at + 1
        if solved.roles[at] then list[#list + 1] = quote(p) .. ':' .. quote(solved.roles[at]) end
      end
    end
    roles = ',"roles":{' .. table.concat(list, ',') .. '}'
  end
  return ',"attributes":{' .. table.concat(players, ',') .. '},"rules":[' .. table.concat(parts, ',')
    .. ']' .. roles .. ',"anchor":' .. quote(a.players[1]) .. ',"anchorWaitMs":' .. string.format('%d', wait_ms)
end

-- A party's stored attributes: its members', '|'-joined in member order;
-- or nil and the name of an equality attribute on which two members differ.
local function party_attributes(cfg, members)
  local texts, given = {}, {}
  for i, m in ipairs(members) do
    texts[i] = m.a or ''
    given[i] = pairs_of(m.a)
  end
  for _, rule in ipairs(cfg.match_rules or {}) do
    if rule.kind == 'equality' then
      local first = nil
      for i = 1, #members do
        local text = given[i][rule.attr]
        if text then
          if first == nil then first = text elseif text ~= first then return nil, rule.attr end
        end
      end
    end
  end
  return table.concat(texts, '|')
end

-- The module's face: what other files reach as MatchRules.<name>.
MatchRules.SCAN_LIMIT = SCAN_LIMIT
MatchRules.decode_player = decode_player
MatchRules.decode_stored = decode_stored
MatchRules.bad_argument = bad_argument
MatchRules.joining = joining
MatchRules.load = load
MatchRules.in_force = in_force
MatchRules.ticket_number = ticket_number
MatchRules.ticket_set = ticket_set
MatchRules.holds = holds
MatchRules.fitter = fitter
MatchRules.record_fields = record_fields
MatchRules.player_json = player_json
MatchRules.players_json = players_json
MatchRules.party_attributes = party_attributes
end
