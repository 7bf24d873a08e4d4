-- leave.lua: remove a player's ticket from a world's queue.
--
-- KEYS[1]  queue          ZSET player -> seq (this world)
-- KEYS[2]  deadlines      ZSET player -> ticket deadline ms (this world)
-- KEYS[3]  tickets        HASH player -> ticket
-- KEYS[4]  ratings        ZSET "<seq>:<player>" -> rating (rated worlds; this world)
-- KEYS[5]  due            ZSET player -> next attempt as an anchor (rated worlds)
--
-- ARGV[1]  player id
-- ARGV[2]  world name
--
-- Reply: { "LEFT", previous_position, remaining_queue_size }
--      | { "NOT_QUEUED", world_the_player_waits_in_or_empty, 0 }
-- A ticket past its deadline is not queued any more (the sweep removes it
-- and tells the player); leaving it answers NOT_QUEUED and writes nothing.

if #KEYS ~= 5 then return fail('expected 5 keys') end
local player, world = ARGV[1], ARGV[2]
if player == nil or player == '' then return fail('player id is empty') end
if world == nil or world == '' then return fail('world is empty') end

local ticket = redis.call('HGET', KEYS[3], player)
if not ticket then
  return { 'NOT_QUEUED', '', 0 }
end
local ticket_world, _, _, deadline = decode_ticket(ticket)
if deadline == nil or deadline <= now_ms() then
  return { 'NOT_QUEUED', '', 0 }
end
if ticket_world ~= world then
  return { 'NOT_QUEUED', ticket_world or '', 0 }
end
local rank = redis.call('ZRANK', KEYS[1], player)
drop_rated({ queue = KEYS[1], ratings = KEYS[4], due = KEYS[5] }, { player })
redis.call('ZREM', KEYS[1], player)
redis.call('ZREM', KEYS[2], player)
redis.call('HDEL', KEYS[3], player)
return { 'LEFT', (rank or 0) + 1, redis.call('ZCARD', KEYS[1]) }
