-- outbox_settle.lua: settle claimed notifications: delete delivered (or
-- abandoned) ones, reschedule the ones to retry.
--
-- KEYS[1]  outbox         ZSET notification id -> due ms
-- KEYS[2]  outbox_meta    HASH notification id -> "<attempts>:<first_attempt_ms>" (from the first claim on)
--
-- ARGV     pairs: id, delay ms ("-1" = done: remove; otherwise retry after delay)
--
-- Reply: { removed, rescheduled }

if #KEYS ~= 2 then return fail('expected 2 keys') end
if #ARGV % 2 ~= 0 then return fail('arguments must be id/delay pairs') end
for i = 2, #ARGV, 2 do
  local d = tonumber(ARGV[i])
  if d == nil or (d < 0 and d ~= -1) or d ~= math.floor(d) then
    return fail('delay must be -1 or an integer >= 0')
  end
end

local now = now_ms()
local removed, rescheduled = 0, 0
for i = 1, #ARGV, 2 do
  local id, delay = ARGV[i], tonumber(ARGV[i + 1])
  if delay == -1 then
    removed = removed + redis.call('ZREM', KEYS[1], id)
    redis.call('HDEL', KEYS[2], id)
  elseif redis.call('ZADD', KEYS[1], 'XX', 'CH', now + delay, id) == 1 then
    rescheduled = rescheduled + 1
  end
end
return { removed, rescheduled }
