-- avoid_set.lua: replace a player's avoid list (PUT /v1/avoid/{playerId},
-- for the server scope only). From then on the player and each player on
-- the list are never put in one match or backfill, in any world; a match
-- already formed stands. The list is kept as pairs (see _blocks.lua).
--
-- KEYS   avoid block_pairs block_counts
-- ARGV   player   the player id
-- ARGV   players  the new list, `\n`-joined, no duplicates (validated by
--                 the store); "" clears it
-- ARGV   max      the most ids a list may hold
--
-- Reply: { previous_list_or_empty }

local player, max = args.player, int_arg(args.max)
if player == '' then return fail('player id is empty') end
if not max then return fail('max must be a non-negative integer') end
local wanted, listed = {}, {}
if args.players ~= '' then
  for q in string.gmatch(args.players .. '\n', '([^\n]*)\n') do
    if q == '' then return fail('an avoided player id is empty') end
    if q == player then return fail('a player cannot avoid themselves') end
    if wanted[q] then return fail('an avoided player is listed twice') end
    wanted[q] = true
    listed[#listed + 1] = q
  end
end
if #listed > max then return fail('the list holds more than ' .. max .. ' players') end

local previous = redis.call('HGET', k.avoid, player) or ''
local had, before = {}, {}
if previous ~= '' then
  for q in string.gmatch(previous .. '\n', '([^\n]*)\n') do
    had[q] = true
    before[#before + 1] = q
  end
end

-- A pair's counts move only when its field appears or disappears.
local function count(q, by)
  for _, p in ipairs({ player, q }) do
    if redis.call('HINCRBY', k.block_counts, p, by) <= 0 then redis.call('HDEL', k.block_counts, p) end
  end
end

for _, q in ipairs(before) do
  if not wanted[q] then
    local field, bit = Blocks.pair_field(player, q)
    local bits = tonumber(redis.call('HGET', k.block_pairs, field) or '0')
    if bits % (2 * bit) >= bit then
      bits = bits - bit
      if bits == 0 then
        redis.call('HDEL', k.block_pairs, field)
        count(q, -1)
      else
        redis.call('HSET', k.block_pairs, field, bits)
      end
    end
  end
end
for _, q in ipairs(listed) do
  if not had[q] then
    local field, bit = Blocks.pair_field(player, q)
    local bits = tonumber(redis.call('HGET', k.block_pairs, field) or '0')
    if bits == 0 then count(q, 1) end
    if bits % (2 * bit) < bit then redis.call('HSET', k.block_pairs, field, bits + bit) end
  end
end
if #listed == 0 then
  redis.call('HDEL', k.avoid, player)
else
  redis.call('HSET', k.avoid, player, args.players)
end
return { previous }
