-- player_status.lua: where a player stands: queued (alone or with a party),
-- assembling a party, in a match proposal, matched or idle. One read of the
-- player's state (_players.lua) decides which.
--
-- KEYS   players matches match_expiry match_lifecycle parties proposals
-- WORLDS every configured world
-- ARGV   player   the player id
-- ARGV   window   statistics window ms
--
-- Reply: a status, then exactly that status's fields:
--   QUEUED, world, position, queue_size, window_players, window_span_ms,
--           rating ("" in FIFO worlds; a party's aggregate), wait_ms,
--           party_json ("" for a solo ticket), also (the other worlds a
--           ticket shared by a queueGroup's worlds waits in, comma-separated;
--           "" for none)
--   PARTY, party_json          assembling (see _parties.lua party_view)
--   PROPOSED, proposal_json    a ready check awaits answers (see
--                              _proposals.lua proposal_view)
--   MATCHED, match_json, lifecycle   the player's latest match, while it
--                              lives, and what happened to it since
--                              (see _lifecycle.lua)
--   IDLE
-- A ticket past its deadline is not waiting any more.

local player = args.player
local window = int_arg(args.window)
if player == '' then return fail('player id is empty') end
if window == nil then return fail('window must be an integer >= 0') end
local now = now_ms()

-- The ticket `id` if it waits in a configured world: its status reply.
local function queued(id, party)
  local world, seq, joined, deadline, all = Players.waiting_ticket(k, id)
  if not world or deadline <= now then return nil end
  local wk = world_of(world)
  if not wk then return nil end
  local rank = redis.call('ZRANK', wk.queue, id)
  if not rank then return nil end
  local wp, ws = wait_stats(wk.stats, now, window)
  local rating = redis.call('ZSCORE', wk.ratings, Players.rating_member(seq, id)) or ''
  local also = all ~= world and string.sub(all, #world + 2) or ''
  return { 'QUEUED', world, rank + 1, redis.call('ZCARD', wk.queue), wp, ws, rating, now - joined, party, also }
end

local kind, value = Players.player_state(redis.call('HGET', k.players, player))
local proposal = Proposals.proposal_of(k, kind, value)
if proposal then return { 'PROPOSED', Proposals.proposal_view(proposal) } end
if kind == 'ticket' then
  return queued(player, '') or { 'IDLE' }
end
if kind == 'party' then
  local party = Parties.load_party(k, value)
  if not party then return { 'IDLE' } end
  local view = cjson.encode(Parties.party_view(party))
  if party.state == 'ASSEMBLING' then return { 'PARTY', view } end
  return queued(Players.PARTY_MARK .. value, view) or { 'IDLE' }
end
if kind == 'match' then
  local record = Lifecycle.live_record(k, value, now)
  if record then return { 'MATCHED', record, Lifecycle.encode_lifecycle(Lifecycle.load_lifecycle(k, value)) } end
end
return { 'IDLE' }
