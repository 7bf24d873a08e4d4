-- admin_remove_ticket.lua: an operator removes a player's waiting ticket from
-- a world's queue (POST /v1/admin/worlds/{worldType}/tickets/{playerId}/remove).
-- A solo ticket goes as a leave would take it; the ticket of a queued party
-- goes whole (the party is dissolved). Everyone on the ticket is told
-- (TICKET_REMOVED, reason OPERATOR). Anything else (no ticket, a ticket of
-- another world or past its deadline, an assembling party, a ready check, a
-- match) is left alone: a repeat finds nothing to remove.
--
-- KEYS   players outbox notes counters parties party_expiry matcher_asleep
-- WORLDS the world
-- ARGV   player   the player id
--
-- Reply: a status, then exactly that status's fields:
--   REMOVED, previous_position, remaining_queue_size, players_told
--   NOT_QUEUED, state, world: nothing was written; state is the player's
--     ("idle", "ticket", "party", "proposal", "match", "cooldown"), world
--     the one their ticket or party is of ("" for none)

local player = args.player
if player == '' then return fail('player id is empty') end
local world = worlds[1]
local now = now_ms()
local kind, value = Players.player_state(redis.call('HGET', k.players, player))
local ticket, told
if kind == 'ticket' then
  local ticket_world, _, _, deadline, ticket_worlds = Players.decode_ticket(value)
  if not Players.waits_in(ticket_worlds, world) or deadline == nil or deadline <= now then
    return { 'NOT_QUEUED', kind, ticket_world or '' }
  end
  ticket, told = player, { player }
elseif kind == 'party' and has(k, 'parties') then
  local party = Parties.load_party(k, value)
  if not party then return { 'NOT_QUEUED', 'idle', '' } end
  if party.state ~= 'QUEUED' or not Parties.queues_in(party, world) then return { 'NOT_QUEUED', kind, party.world } end
  ticket, told = Players.PARTY_MARK .. value, Parties.party_players(party)
else
  return { 'NOT_QUEUED', kind or 'idle', '' }
end
local rank = redis.call('ZRANK', k.queue, ticket)
if not rank then return { 'NOT_QUEUED', kind, world } end
Tickets.remove_tickets({ k = k, world = world, now = now, world_of = world_of }, { ticket }, nil)
add_note(k, told, cjson.encode({ type = 'TICKET_REMOVED', worldType = world, reason = 'OPERATOR' }), now)
return { 'REMOVED', rank + 1, redis.call('ZCARD', k.queue), #told }
