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
local world = Players.waiting_ticket(k, player)
if world ~= worlds[1] then return 0 end
Tickets.remove_tickets({ k = k, world = world, now = now_ms() }, { player }, nil)
-- No sweep visits a retired world: its deadline entry goes now.
redis.call('ZREM', k.deadlines, player)
return 1
