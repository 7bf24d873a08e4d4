-- outbox_claim.lua: claim due notifications for delivery. A claimed entry is
-- hidden for `lease` ms (like a queue's visibility timeout): if the claimer
-- dies before settling it, the entry becomes due again and another matcher
-- delivers it (at-least-once; clients dedupe by match id).
--
-- KEYS[1]  outbox         ZSET notification id -> due ms
-- KEYS[2]  outbox_meta    HASH notification id -> "<attempts>:<first_attempt_ms>:<in_flight>:<pending>"
--                         (from the first claim on; see _lib.lua outbox ids)
-- KEYS[3]  matches        HASH match id -> match record JSON
-- KEYS[4]  player_conns   HASH player -> space-separated conn ids
-- KEYS[5]  conns          HASH conn id -> "<registered_ms> <player>"
-- KEYS[6]  notes          HASH note id -> "<message JSON>\n<player>\n..." (see _lib.lua)
--
-- ARGV[1]  lease ms (> 0)
-- ARGV[2]  most entries to claim (> 0)
-- ARGV[3]  young ms: connections registered this recently are listed apart
--          (a 410 from one of them may only mean its $connect is finishing)
-- ARGV[4..] optional: claim exactly these ids (if due) instead of the oldest due
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

if #KEYS ~= 6 then return fail('expected 6 keys') end
local lease = int_arg(ARGV[1])
local limit = int_arg(ARGV[2])
local young = int_arg(ARGV[3])
if lease == nil or lease == 0 then return fail('lease must be an integer > 0') end
if limit == nil or limit == 0 then return fail('limit must be an integer > 0') end
if young == nil then return fail('young must be an integer >= 0') end

local now = now_ms()
local ids
if #ARGV > 3 then
  ids = {}
  for i = 4, #ARGV do
    local due = tonumber(redis.call('ZSCORE', KEYS[1], ARGV[i]))
    if due and due <= now and #ids < limit then ids[#ids + 1] = ARGV[i] end
  end
else
  ids = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'LIMIT', 0, limit)
end

-- A player's connections, and the young ones among them.
local function connections_of(player, only)
  local all, fresh = {}, {}
  for id in string.gmatch(redis.call('HGET', KEYS[4], player) or '', '%S+') do
    if only == nil or id == only then
      all[#all + 1] = id
      local _, born = decode_conn(redis.call('HGET', KEYS[5], id))
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
  local meta = redis.call('HGET', KEYS[2], id) or ('0:' .. now .. ':0:')
  local attempts, first, pending = string.match(meta, '^(%d+):(%d+):%d:([%d,]*)$')
  attempts = (tonumber(attempts) or 0) + 1
  first = tonumber(first) or now
  pending = pending or ''
  redis.call('ZADD', KEYS[1], now + lease, id)
  redis.call('HSET', KEYS[2], id, attempts .. ':' .. first .. ':1:' .. pending)

  local wanted = nil
  if pending ~= '' then
    wanted = {}
    for i in string.gmatch(pending, '%d+') do wanted[tonumber(i)] = true end
  end
  local kind, ref, rest = string.match(id, '^(%u)|([^|]+)|?(.*)$')
  local payload, targets = '', {}
  if kind == 'M' or kind == 'C' then
    payload = redis.call('HGET', KEYS[3], ref) or ''
  end
  if kind == 'M' and payload ~= '' then
    local ok, record = pcall(cjson.decode, payload)
    if ok and type(record) == 'table' and type(record.participants) == 'table' then
      for i, p in ipairs(record.participants) do
        if wanted == nil or wanted[i] then targets[#targets + 1] = { i, p } end
      end
    end
  elseif kind == 'C' then
    local player = decode_conn(redis.call('HGET', KEYS[5], rest))
    if player then targets[1] = { 1, player, rest } end
  elseif (kind == 'X' or kind == 'G') and rest ~= '' then
    targets[1] = { 1, rest }
  elseif kind == 'N' then
    local note = redis.call('HGET', KEYS[6], ref)
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
