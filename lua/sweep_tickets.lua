-- sweep_tickets.lua: remove a world's tickets whose deadline has passed and
-- queue a TICKET_EXPIRED notification for each (an expired party ticket's
-- members are each told). Every ticket has its own deadline; no EXPIRE is
-- ever put on a whole queue. Deadline entries of tickets that left are
-- dropped on the way.
--
-- KEYS   players outbox notes counters parties party_expiry matcher_asleep
-- WORLDS the world to sweep
-- ARGV   limit    most deadline entries to look at in this call (> 0)
--
-- Reply: { expired_ticket... } in deadline order (a party's ticket id is
-- "\1<party id>")

local limit = int_arg(args.limit)
if limit == nil or limit == 0 then return fail('limit must be an integer > 0') end
local expired = Tickets.sweep_expired({ k = k, world = worlds[1], now = now_ms(), world_of = world_of }, limit)
return expired
