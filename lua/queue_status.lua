-- queue_status.lua: a world's queue depth, oldest ticket age and wait statistics.
--
-- KEYS[1]  queue          ZSET player -> seq (this world)
-- KEYS[2]  rate           HASH match rate statistics (this world)
-- KEYS[3]  tickets        HASH player -> ticket
--
-- ARGV[1]  statistics window ms
--
-- Reply: { waiting, window_players, window_span_ms, oldest_wait_ms }

if #KEYS ~= 3 then return fail('expected 3 keys') end
local window = int_arg(ARGV[1])
if window == nil then return fail('window must be an integer >= 0') end
local now = now_ms()
local waiting = redis.call('ZCARD', KEYS[1])
local oldest_wait = 0
if waiting > 0 then
  local front = redis.call('ZRANGE', KEYS[1], 0, 0)[1]
  local ticket = redis.call('HGET', KEYS[3], front)
  if ticket then
    local _, _, joined = decode_ticket(ticket)
    if joined then oldest_wait = math.max(0, now - joined) end
  end
end
local wp, ws = wait_stats(KEYS[2], now, window)
return { waiting, wp, ws, oldest_wait }
