-- drop_stale_ticket.lua: remove a player's ticket that belongs to a world
-- which is no longer configured (join.lua answers STALE for it), so the
-- player is not stuck behind a queue nobody matches or sweeps any more.
--
-- KEYS[1]  tickets        HASH ticket -> ticket
-- KEYS[2]  queue          ZSET ticket -> seq (the retired world)
-- KEYS[3]  deadlines      ZSET ticket -> ticket deadline ms (the retired world)
-- KEYS[4]  ratings        ZSET "<seq>:<ticket>" -> rating (the retired world)
-- KEYS[5]  due            ZSET ticket -> next attempt as an anchor (the retired world)
--
-- ARGV[1]  player id
-- ARGV[2]  the retired world's name
--
-- Reply: 1 when the ticket was removed, 0 when the player holds no ticket of
-- that world (any more).
if #KEYS ~= 5 then return fail('expected 5 keys') end
local player, world = ARGV[1], ARGV[2]
if player == nil or player == '' then return fail('player id is empty') end
if world == nil or world == '' then return fail('world is empty') end
local ticket = redis.call('HGET', KEYS[1], player)
if not ticket or decode_ticket(ticket) ~= world then
  return 0
end
drop_rated({ queue = KEYS[2], ratings = KEYS[4], due = KEYS[5] }, { player })
redis.call('ZREM', KEYS[2], player)
redis.call('ZREM', KEYS[3], player)
redis.call('HDEL', KEYS[1], player)
return 1
