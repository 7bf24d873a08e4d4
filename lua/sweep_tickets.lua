-- sweep_tickets.lua: remove a world's tickets whose deadline has passed and
-- queue a TICKET_EXPIRED notification for each. Every ticket has its own
-- deadline; no EXPIRE is ever put on a whole queue.
--
-- KEYS[1]  queue          ZSET player -> seq (this world)
-- KEYS[2]  deadlines      ZSET player -> ticket deadline ms (this world)
-- KEYS[3]  tickets        HASH player -> ticket
-- KEYS[4]  outbox         ZSET notification id -> due ms
-- KEYS[5]  ratings        ZSET "<seq>:<player>" -> rating (rated worlds; this world)
-- KEYS[6]  due            ZSET ticket -> next attempt as an anchor (rated worlds)
-- KEYS[7..11] the party block: parties, party_expiry, player_party, notes,
--          counters (see _tickets.lua): an expired party ticket's members
--          are each told TICKET_EXPIRED
--
-- ARGV[1]  world name
-- ARGV[2]  most tickets to remove in this call (> 0)
--
-- Reply: { expired_ticket... } in deadline order (a party's ticket id is
-- "\1<party id>")

if #KEYS ~= 11 then return fail('expected 11 keys') end
local world = ARGV[1]
local limit = int_arg(ARGV[2])
if world == nil or world == '' then return fail('world is empty') end
if limit == nil or limit == 0 then return fail('limit must be an integer > 0') end

local expired = sweep_expired({
  queue = KEYS[1], deadlines = KEYS[2], tickets = KEYS[3], outbox = KEYS[4],
  ratings = KEYS[5], due = KEYS[6], parties = KEYS[7], party_expiry = KEYS[8],
  player_party = KEYS[9], notes = KEYS[10], counters = KEYS[11],
}, world, limit, now_ms())
return expired
