-- outbox_settle.lua: settle claimed notifications: delete delivered (or
-- abandoned) ones, reschedule the ones to retry with the targets still to
-- tell, and give a MATCH_FOUND of its own to each connection that answered
-- 410 only because its $connect was still finishing (its player was told on
-- another connection, so the match's entry itself is done for them).
--
-- KEYS[1]  outbox         ZSET notification id -> due ms
-- KEYS[2]  outbox_meta    HASH notification id -> "<attempts>:<first_attempt_ms>:<in_flight>:<pending>"
-- KEYS[3]  notes          HASH note id -> note ("N|<id>" entries; deleted with them)
--
-- ARGV     quadruples: id, delay ms ("-1" = done: remove; otherwise retry
--          after delay), pending (comma-separated 1-based targets still to
--          tell; "" = all of them), replay connections (space-separated
--          connection ids to send the match again, "C|<match>|<conn>" due
--          after the delay, or after 250 ms when done; "" = none; only for
--          "M|"/"C|" entries)
--
-- Reply: { removed, rescheduled }

if #KEYS ~= 3 then return fail('expected 3 keys') end
if #ARGV % 4 ~= 0 then return fail('arguments must be id/delay/pending/replay quadruples') end
for i = 1, #ARGV, 4 do
  local d = tonumber(ARGV[i + 1])
  if d == nil or (d < 0 and d ~= -1) or d ~= math.floor(d) then
    return fail('delay must be -1 or an integer >= 0')
  end
  if not string.match(ARGV[i + 2], '^[%d,]*$') then
    return fail('pending must be comma-separated integers')
  end
  if ARGV[i + 3] ~= '' and (string.find(ARGV[i + 3], '|', 1, true)
      or not string.match(ARGV[i], '^[MC]|[^|]+')) then
    return fail('replays need connection ids and a match entry')
  end
end

local now = now_ms()
local removed, rescheduled = 0, 0
local REPLAY_AFTER_DONE = 250
for i = 1, #ARGV, 4 do
  local id, delay, pending, replays = ARGV[i], tonumber(ARGV[i + 1]), ARGV[i + 2], ARGV[i + 3]
  if replays ~= '' then
    local match_id = string.match(id, '^[MC]|([^|]+)')
    local due = now + (delay == -1 and REPLAY_AFTER_DONE or delay)
    for conn in string.gmatch(replays, '%S+') do
      redis.call('ZADD', KEYS[1], 'NX', due, 'C|' .. match_id .. '|' .. conn)
    end
  end
  if delay == -1 then
    removed = removed + redis.call('ZREM', KEYS[1], id)
    redis.call('HDEL', KEYS[2], id)
    local note = string.match(id, '^N|(%d+)$')
    if note then redis.call('HDEL', KEYS[3], note) end
  elseif redis.call('ZSCORE', KEYS[1], id) then
    redis.call('ZADD', KEYS[1], now + delay, id)
    rescheduled = rescheduled + 1
    local meta = redis.call('HGET', KEYS[2], id)
    local attempts, first = string.match(meta or '', '^(%d+):(%d+)')
    if attempts then
      redis.call('HSET', KEYS[2], id, attempts .. ':' .. first .. ':0:' .. pending)
    end
  end
end
return { removed, rescheduled }
