-- sweep_tickets.lua: remove a world's tickets whose deadline has passed and
-- queue a TICKET_EXPIRED notification for each. Every ticket has its own
-- deadline; no EXPIRE is ever put on a whole queue.
--
-- KEYS[1]  queue          ZSET player -> seq (this world)
-- KEYS[2]  deadlines      ZSET player -> ticket deadline ms (this world)
-- KEYS[3]  tickets        HASH player -> ticket
-- KEYS[4]  outbox         ZSET notification id -> due ms
-- KEYS[5]  ratings        ZSET "<seq>:<player>" -> rating (rated worlds; this world)
-- KEYS[6]  due            ZSET player -> next attempt as an anchor (rated worlds)
--
-- ARGV[1]  world name
-- ARGV[2]  most tickets to remove in this call (> 0)
--
-- Reply: { expired_player... } in deadline order

if #KEYS ~= 6 then return fail('expected 6 keys') end
local world = ARGV[1]
local limit = int_arg(ARGV[2])
if world == nil or world == '' then return fail('world is empty') end
if limit == nil or limit == 0 then return fail('limit must be an integer > 0') end

local expired = sweep_expired({
  queue = KEYS[1], deadlines = KEYS[2], tickets = KEYS[3], outbox = KEYS[4],
  ratings = KEYS[5], due = KEYS[6],
}, world, limit, now_ms())
return expired
