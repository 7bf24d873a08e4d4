-- drop_stale_ticket.lua: remove a player's ticket that belongs to a world
-- which is no longer configured (join.lua answers STALE for it), so the
-- player is not stuck behind a queue nobody matches or sweeps any more.
--
-- KEYS   players outbox notes counters parties party_expiry matcher_asleep
-- WORLDS the retired world
-- ARGV   player   the player id
--
-- Reply: 1 when the ticket was removed, 0 when the player holds no ticket of
-- that world (any more).
local player = args.player
if player == '' then return fail('player id is empty') end
local _, _, _, _, ticket_worlds = Players.waiting_ticket(k, player)
if not Players.waits_in(ticket_worlds, worlds[1]) then return 0 end
local world = worlds[1]
Tickets.remove_tickets({ k = k, world = world, now = now_ms(), world_of = world_of }, { player }, nil)
-- No sweep visits a retired world: its deadline entry goes now.
redis.call('ZREM', k.deadlines, player)
return 1
