-- outbox_claim.lua: claim due notifications for delivery. A claimed entry is
-- hidden for `lease` ms (like a queue's visibility timeout): if the claimer
-- dies before settling it, the entry becomes due again and another matcher
-- delivers it (at-least-once; clients dedupe by match id).
--
-- KEYS   matches outbox outbox_meta notes conns player_conns
-- ARGV   lease    ms (> 0) a claimed entry stays hidden
-- ARGV   limit    most entries to claim (> 0)
-- ARGV   young    ms: connections registered this recently are listed apart
--                 (a 410 from one of them may only mean its $connect is finishing)
-- REST   only     optional: claim exactly these ids (if due) instead of the oldest due
-- (outbox_meta: notification id -> "<attempts>:<first_attempt_ms>:<in_flight>:<pending>",
-- from the first claim on; see _lib.lua outbox ids)
--
-- Reply: flat, per claimed entry:
--   { id, attempts (including this one), age_ms, payload, target_count,
--     (target_index, player, connections, young_connections) x target_count, ... }
--   age_ms: how long ago the first attempt was, by this server's clock (so
--   callers never compare their own clock with a Redis timestamp).
--   payload: the match record JSON for "M|" and "C|" entries ("" when the
--   record has expired), the message JSON for "N|" entries ("" when the note
--   is gone), "" otherwise.
--   targets: the players still to tell (1-based index among the entry's
--   targets, for settling), each with their space-separated connection ids
--   and the young ones among them. A "C|" entry targets exactly its one
--   connection (none once that connection is gone).

local lease = int_arg(args.lease)
local limit = int_arg(args.limit)
local young = int_arg(args.young)
if lease == nil or lease == 0 then return fail('lease must be an integer > 0') end
if limit == nil or limit == 0 then return fail('limit must be an integer > 0') end
if young == nil then return fail('young must be an integer >= 0') end

local now = now_ms()
local ids
if #rest > 0 then
  ids = {}
  for _, id in ipairs(rest) do
    local due = tonumber(redis.call('ZSCORE', k.outbox, id))
    if due and due <= now and #ids < limit then ids[#ids + 1] = id end
  end
else
  ids = redis.call('ZRANGEBYSCORE', k.outbox, '-inf', now, 'LIMIT', 0, limit)
end

-- A player's connections, and the young ones among them.
local function connections_of(player, only)
  local all, fresh = {}, {}
  for id in string.gmatch(redis.call('HGET', k.player_conns, player) or '', '%S+') do
    if only == nil or id == only then
      all[#all + 1] = id
      local _, born = decode_conn(redis.call('HGET', k.conns, id))
      if born and born > now - young then fresh[#fresh + 1] = id end
    end
  end
  return table.concat(all, ' '), table.concat(fresh, ' ')
end

local reply, n = {}, 0
local function put(v)
  n = n + 1
  reply[n] = v
end

for _, id in ipairs(ids) do
  local meta = redis.call('HGET', k.outbox_meta, id) or ('0:' .. now .. ':0:')
  local attempts, first, pending = string.match(meta, '^(%d+):(%d+):%d:([%d,]*)$')
  attempts = (tonumber(attempts) or 0) + 1
  first = tonumber(first) or now
  pending = pending or ''
  redis.call('ZADD', k.outbox, now + lease, id)
  redis.call('HSET', k.outbox_meta, id, attempts .. ':' .. first .. ':1:' .. pending)

  local wanted = nil
  if pending ~= '' then
    wanted = {}
    for i in string.gmatch(pending, '%d+') do wanted[tonumber(i)] = true end
  end
  local kind, ref, tail = string.match(id, '^(%u)|([^|]+)|?(.*)$')
  local payload, targets = '', {}
  if kind == 'M' or kind == 'C' then
    payload = redis.call('HGET', k.matches, ref) or ''
  end
  if kind == 'M' and payload ~= '' then
    local ok, record = pcall(cjson.decode, payload)
    if ok and type(record) == 'table' and type(record.participants) == 'table' then
      for i, p in ipairs(record.participants) do
        if wanted == nil or wanted[i] then targets[#targets + 1] = { i, p } end
      end
    end
  elseif kind == 'C' then
    local player = decode_conn(redis.call('HGET', k.conns, tail))
    if player then targets[1] = { 1, player, tail } end
  elseif (kind == 'X' or kind == 'G') and tail ~= '' then
    targets[1] = { 1, tail }
  elseif kind == 'N' then
    local note = redis.call('HGET', k.notes, ref)
    if note then
      local i = 0
      for line in string.gmatch(note, '[^\n]+') do
        if i == 0 then
          payload = line
        elseif wanted == nil or wanted[i] then
          targets[#targets + 1] = { i, line }
        end
        i = i + 1
      end
    end
  end

  put(id)
  put(attempts)
  put(math.max(0, now - first))
  put(payload)
  put(#targets)
  for _, t in ipairs(targets) do
    local all, fresh = connections_of(t[2], t[3])
    put(t[1])
    put(t[2])
    put(all)
    put(fresh)
  end
end
return reply
