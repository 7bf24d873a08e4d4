-- outbox_settle.lua: settle claimed notifications: delete delivered (or
-- abandoned) ones, reschedule the ones to retry with the targets still to
-- tell, and give a MATCH_FOUND of its own to each connection that answered
-- 410 only because its $connect was still finishing (its player was told on
-- another connection, so the match's entry itself is done for them).
--
-- KEYS   outbox outbox_meta notes
-- REST   settlements  quadruples: id, delay ms ("-1" = done: remove; otherwise
--                     retry after delay), pending (comma-separated 1-based
--                     targets still to tell; "" = all of them), replay
--                     connections (space-separated connection ids to send the
--                     match again, "C|<match>|<conn>" due after the delay, or
--                     after 250 ms when done; "" = none; only for "M|"/"C|"
--                     entries)
--
-- Reply: { removed, rescheduled }

local q = rest
if #q % 4 ~= 0 then return fail('arguments must be id/delay/pending/replay quadruples') end
for i = 1, #q, 4 do
  local d = tonumber(q[i + 1])
  if d == nil or (d < 0 and d ~= -1) or d ~= math.floor(d) then
    return fail('delay must be -1 or an integer >= 0')
  end
  if not string.match(q[i + 2], '^[%d,]*$') then
    return fail('pending must be comma-separated integers')
  end
  if q[i + 3] ~= '' and (string.find(q[i + 3], '|', 1, true)
      or not string.match(q[i], '^[MC]|[^|]+')) then
    return fail('replays need connection ids and a match entry')
  end
end

local now = now_ms()
local removed, rescheduled = 0, 0
local REPLAY_AFTER_DONE = 250
for i = 1, #q, 4 do
  local id, delay, pending, replays = q[i], tonumber(q[i + 1]), q[i + 2], q[i + 3]
  if replays ~= '' then
    local match_id = string.match(id, '^[MC]|([^|]+)')
    local due = now + (delay == -1 and REPLAY_AFTER_DONE or delay)
    for conn in string.gmatch(replays, '%S+') do
      redis.call('ZADD', k.outbox, 'NX', due, 'C|' .. match_id .. '|' .. conn)
    end
  end
  if delay == -1 then
    removed = removed + redis.call('ZREM', k.outbox, id)
    redis.call('HDEL', k.outbox_meta, id)
    local note = string.match(id, '^N|(%d+)$')
    if note then redis.call('HDEL', k.notes, note) end
  elseif redis.call('ZSCORE', k.outbox, id) then
    redis.call('ZADD', k.outbox, now + delay, id)
    rescheduled = rescheduled + 1
    local meta = redis.call('HGET', k.outbox_meta, id)
    local attempts, first = string.match(meta or '', '^(%d+):(%d+)')
    if attempts then
      redis.call('HSET', k.outbox_meta, id, attempts .. ':' .. first .. ':0:' .. pending)
    end
  end
end
return { removed, rescheduled }
