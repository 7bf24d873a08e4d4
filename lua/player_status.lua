-- player_status.lua: where a player stands: queued, matched or idle.
--
-- KEYS[1]  tickets        HASH player -> ticket
-- KEYS[2]  player_match   HASH player -> id of the player's latest match
-- KEYS[3]  matches        HASH match id -> match record JSON
-- KEYS[4]  match_expiry   ZSET match id -> expiry ms
-- KEYS[5..] for every configured world, in ARGV order: queue, rate and
--           ratings (three keys per world)
--
-- ARGV[1]  player id
-- ARGV[2]  statistics window ms
-- ARGV[3..] configured world names
--
-- Reply: { "QUEUED", world, position, queue_size, window_players, window_span_ms,
--            rating, wait_ms }   (rating "" in FIFO worlds)
--      | { "MATCHED", match_json }
--      | { "IDLE" }
-- A waiting ticket wins over an older match (the player joined again); a
-- ticket past its deadline is not waiting any more.

local player = ARGV[1]
local window = int_arg(ARGV[2])
local worlds = #ARGV - 2
if player == nil or player == '' then return fail('player id is empty') end
if window == nil then return fail('window must be an integer >= 0') end
if worlds < 1 or #KEYS ~= 4 + 3 * worlds then return fail('world keys do not match world names') end
local now = now_ms()

local ticket = redis.call('HGET', KEYS[1], player)
local world, seq, joined, deadline = decode_ticket(ticket or '')
if ticket and deadline and deadline > now then
  for i = 1, worlds do
    if ARGV[2 + i] == world then
      local base = 4 + 3 * (i - 1)
      local queue, rate, ratings = KEYS[base + 1], KEYS[base + 2], KEYS[base + 3]
      local rank = redis.call('ZRANK', queue, player)
      if rank then
        local wp, ws = wait_stats(rate, now, window)
        local rating = redis.call('ZSCORE', ratings, rating_member(seq, player)) or ''
        return { 'QUEUED', world, rank + 1, redis.call('ZCARD', queue), wp, ws, rating, now - joined }
      end
    end
  end
end

local match_id = redis.call('HGET', KEYS[2], player)
if match_id then
  -- The sweep deletes expired records in batches; never show one past its time.
  local expires = tonumber(redis.call('ZSCORE', KEYS[4], match_id))
  local record = redis.call('HGET', KEYS[3], match_id)
  if record and expires and expires > now then
    return { 'MATCHED', record }
  end
end
return { 'IDLE' }
