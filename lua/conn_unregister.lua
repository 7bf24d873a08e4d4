-- conn_unregister.lua: forget a WebSocket connection ($disconnect, or a push
-- that API Gateway answered 410 Gone). When it was the player's last
-- connection and `remove_ticket` is "1", the player's ticket is removed too
-- and a party the player belongs to is cancelled (the others are told; a
-- party in a match proposal leaves it).
--
-- KEYS   players outbox notes counters parties party_expiry proposals
-- KEYS   proposal_expiry conns conn_expiry player_conns presence matcher_asleep
-- KEYS   backfills backfill_expiry
-- WORLDS every configured world
-- ARGV   conn           the connection id
-- ARGV   remove_ticket  remove the ticket on the last disconnect: "1" or "0"
--
-- Reply: { player_or_empty, remaining_connections, removed_ticket_world_or_empty }

local conn_id, remove_ticket = args.conn, args.remove_ticket
if conn_id == '' then return fail('connection id is empty') end
if remove_ticket ~= '0' and remove_ticket ~= '1' then return fail('remove_ticket must be 0 or 1') end
local nctx = { k = k, now = now_ms(), world_of = world_of }
local player, remaining, removed = Presence.drop_connection(nctx, conn_id, remove_ticket == '1')
return { player, remaining, removed }
