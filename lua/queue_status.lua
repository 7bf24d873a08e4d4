-- queue_status.lua: a world's queue depth, oldest ticket age, wait
-- statistics and, for rated worlds, how the waiting tickets' ratings are
-- spread (a few equal-width buckets between the lowest and highest).
--
-- KEYS[1]  queue          ZSET player -> seq (this world)
-- KEYS[2]  rate           HASH match rate statistics (this world)
-- KEYS[3]  tickets        HASH player -> ticket
-- KEYS[4]  ratings        ZSET "<seq>:<player>" -> rating (rated worlds; this world)
--
-- ARGV[1]  statistics window ms
-- ARGV[2]  rating buckets (>= 1; ignored when no ticket is rated)
--
-- Reply: { waiting, window_players, window_span_ms, oldest_wait_ms,
--          lowest_rating, highest_rating, bucket_count... }
--   lowest/highest are "" (and no counts follow) when no waiting ticket is
--   rated; otherwise `buckets` counts follow, lowest bucket first.

if #KEYS ~= 4 then return fail('expected 4 keys') end
local window = int_arg(ARGV[1])
local buckets = int_arg(ARGV[2])
if window == nil then return fail('window must be an integer >= 0') end
if buckets == nil or buckets == 0 then return fail('buckets must be an integer > 0') end
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
local reply = { waiting, wp, ws, oldest_wait }
local lowest = redis.call('ZRANGE', KEYS[4], 0, 0, 'WITHSCORES')[2]
local highest = redis.call('ZRANGE', KEYS[4], -1, -1, 'WITHSCORES')[2]
if not lowest then
  reply[5], reply[6] = '', ''
  return reply
end
reply[5], reply[6] = lowest, highest
local lo, hi = tonumber(lowest), tonumber(highest)
local width = (hi - lo) / buckets
for b = 1, buckets do
  local from = lo + (b - 1) * width
  local min_arg = num(from)
  if b > 1 then min_arg = '(' .. min_arg end
  local max_arg = b == buckets and num(hi) or num(lo + b * width)
  reply[6 + b] = redis.call('ZCOUNT', KEYS[4], min_arg, max_arg)
end
return reply
