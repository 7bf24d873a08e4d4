-- queue_status.lua: a world's queue depth, oldest ticket age, wait
-- statistics and, for rated worlds, how the waiting tickets' ratings are
-- spread (a few equal-width buckets between the lowest and highest).
--
-- KEYS   players
-- WORLDS the world
-- ARGV   window   statistics window ms
-- ARGV   buckets  rating buckets (>= 1; ignored when no ticket is rated)
-- ARGV   regions  the world's regions, space-separated, in band order ("" for none)
--
-- Reply: { waiting, window_players, window_span_ms, oldest_wait_ms,
--          lowest_rating, highest_rating, bucket_count... }
--   lowest/highest are "" (and no counts follow) when no waiting ticket is
--   rated; otherwise `buckets` counts follow, lowest bucket first. Then,
--   one per region named, the waiting tickets that can play there; last,
--   the world's open backfills (not counted in `waiting`).

local window = int_arg(args.window)
local buckets = int_arg(args.buckets)
if window == nil then return fail('window must be an integer >= 0') end
if buckets == nil or buckets == 0 then return fail('buckets must be an integer > 0') end
local now = now_ms()
local waiting = redis.call('ZCARD', k.queue)
local oldest_wait = 0
if waiting > 0 then
  local _, _, joined = Players.waiting_ticket(k, redis.call('ZRANGE', k.queue, 0, 0)[1])
  if joined then oldest_wait = math.max(0, now - joined) end
end
local wp, ws = wait_stats(k.stats, now, window)
local reply = { waiting, wp, ws, oldest_wait }
-- A world's call has the keys of its features only (has: _lib.lua).
local rated = has(k, 'ratings')
local lowest = rated and redis.call('ZRANGE', k.ratings, 0, 0, 'WITHSCORES')[2]
local highest = rated and redis.call('ZRANGE', k.ratings, -1, -1, 'WITHSCORES')[2]
if not lowest then
  reply[5], reply[6] = '', ''
else
  reply[5], reply[6] = lowest, highest
  local lo, hi = tonumber(lowest), tonumber(highest)
  local width = (hi - lo) / buckets
  for b = 1, buckets do
    local from = lo + (b - 1) * width
    local min_arg = num(from)
    if b > 1 then min_arg = '(' .. min_arg end
    local max_arg = b == buckets and num(hi) or num(lo + b * width)
    reply[6 + b] = redis.call('ZCOUNT', k.ratings, min_arg, max_arg)
  end
end
local i = 0
for _ in string.gmatch(args.regions, '%S+') do
  i = i + 1
  reply[#reply + 1] = redis.call('ZCOUNT', k.region_queue, string.format('%d', Regions.QUEUE_BAND * i),
    '(' .. string.format('%d', Regions.QUEUE_BAND * (i + 1)))
end
-- Running matches' open backfills, apart from the waiting tickets.
reply[#reply + 1] = has(k, 'backfill_queue') and redis.call('ZCARD', k.backfill_queue) or 0
return reply
