-- _players.lua: where each player stands, in one hash (k.players), so one
-- HGET answers "may this player join?" and "what is this player doing?".
-- A player is in exactly one state; the value says which:
--   "<world> <seq> <joined_ms> <deadline_ms>"  waiting: the player's solo
--                     ticket (world names start with [a-z0-9]); a party's
--                     ticket id (PARTY_MARK .. party id) holds its ticket
--                     the same way. A ticket waiting in several worlds of
--                     a queueGroup names them all, "<a>,<b> <seq> ..." (the
--                     first the one joined; the only states with a comma)
--   "<match id>"      matched: the player's latest match (the only value
--                     without a space; written over the ticket the match
--                     took, so matching a player is one write)
--   "P <party id>"    a member of a party (assembling, queued or in a
--                     proposal; see _parties.lua)
--   "R <match id>"    a solo player in a match proposal (a ready check)
--   "C <until_ms>"    cooling down after declining or missing a ready check
-- Ticket data lives apart, in the world's `data` hash (tickets with data
-- only), so matching reads it only in worlds where tickets carry any.
-- @include _lib

local Players = {}
do

-- Ticket ids: a solo ticket's id is its player's id; a party's ticket id is
-- PARTY_MARK followed by the party id. Player ids never contain control
-- characters, so the two never collide.
local PARTY_MARK = '\1'

local function is_party_ticket(t)
  return string.byte(t, 1) == 1
end

-- Integers become text by string.format's %d: concatenating a number
-- formats it as a float ("%.14g"), and Redis formats a number argument with
-- "%.17g", each costing about twice a %d (docs/benchmark.md, "Where a join's
-- instructions go"). A hot path formats an integer once and passes the
-- text on (to ZADD, HSET and the ticket).
local function int_text(n)
  return string.format('%d', n)
end

-- A ticket, "<world> <seq> <joined_ms> <deadline_ms>" (decode_ticket reads
-- it), from its fields as numbers or, on a hot path, as texts (int_text).
local function encode_ticket(world, seq, joined, deadline)
  return string.format('%s %d %d %d', world, seq, joined, deadline)
end

local function ticket_of_texts(world, seq, joined, deadline)
  return world .. ' ' .. seq .. ' ' .. joined .. ' ' .. deadline
end

-- A player's state: kind ('ticket', 'match', 'party', 'proposal',
-- 'cooldown'; nil for none) and its value (the ticket string, match id,
-- party id, proposal's match id or the cool-down's end in ms).
local function player_state(v)
  if not v then return nil, nil end
  local tag = string.byte(v, 1)
  if string.byte(v, 2) == 32 then
    if tag == 80 then return 'party', string.sub(v, 3) end -- 'P'
    if tag == 82 then return 'proposal', string.sub(v, 3) end -- 'R'
    if tag == 67 then return 'cooldown', tonumber(string.sub(v, 3)) end -- 'C'
  end
  if not string.find(v, ' ', 1, true) then return 'match', v end
  return 'ticket', v
end

-- A waiting ticket's fields: its (first) world, seq, joined_ms,
-- deadline_ms, and all its worlds as stored ("a" or "a,b,...").
local function decode_ticket(s)
  local worlds, seq, joined, deadline = string.match(s or '', '^(%S+) (%d+) (%d+) (%d+)$')
  if not worlds then return nil end
  local world = worlds
  local comma = string.find(worlds, ',', 1, true)
  if comma then world = string.sub(worlds, 1, comma - 1) end
  return world, tonumber(seq), tonumber(joined), tonumber(deadline), worlds
end

-- The worlds a ticket's state names ("a" or "a,b,..."), as an array.
local function ticket_worlds(worlds)
  local out = {}
  for w in string.gmatch(worlds or '', '[^,]+') do out[#out + 1] = w end
  return out
end

-- Whether a ticket's worlds ("a" or "a,b,...") include `world`.
local function waits_in(worlds, world)
  if worlds == world then return true end
  return worlds ~= nil and string.find(',' .. worlds .. ',', ',' .. world .. ',', 1, true) ~= nil
end

-- The waiting ticket stored under `id` (a player or a party's ticket id):
-- its world, seq, joined, deadline and worlds (decode_ticket), or nil when
-- `id` waits nowhere.
local function waiting_ticket(k, id)
  local kind, v = player_state(redis.call('HGET', k.players, id))
  if kind ~= 'ticket' then return nil end
  return decode_ticket(v)
end

-- When `player` may join again (ms) if cooling down now, else nil.
local function cooling_until(state_kind, state_value, now)
  if state_kind == 'cooldown' and state_value and state_value > now then return state_value end
  return nil
end

-- Rated worlds keep two more ZSETs next to the queue: `ratings` holds
-- "<seq, 12 digits>:<ticket>" -> rating (the zero-padded sequence makes
-- equally rated tickets sort oldest first), and `due` holds ticket -> when it
-- is next tried as an anchor (ms). FIFO worlds leave both empty.
local SEQ_DIGITS = 12

local function rating_member(seq, ticket)
  return string.format('%012d', seq) .. ':' .. ticket
end

local function member_ticket(member)
  return string.sub(member, SEQ_DIGITS + 2)
end

-- Whether any ticket of the world carries data (one HLEN per call; a call
-- that writes data sets ctx.has_data itself).
local function world_has_data(ctx)
  if ctx.has_data == nil then
    ctx.has_data = redis.call('HLEN', ctx.k.data) > 0
  end
  return ctx.has_data
end

-- The data of `tickets` (ids), '' for none, as an array in their order.
local function tickets_data(ctx, tickets, n)
  local out = {}
  if not world_has_data(ctx) then return out end
  local i = 1
  while i <= n do
    local last = math.min(i + CHUNK - 1, n)
    local part = redis.call('HMGET', ctx.k.data, unpack(tickets, i, last))
    for j = 1, last - i + 1 do
      out[i + j - 1] = part[j] or ''
    end
    i = last + 1
  end
  return out
end

local function ticket_data(ctx, ticket)
  if not world_has_data(ctx) then return '' end
  return redis.call('HGET', ctx.k.data, ticket) or ''
end

local function set_ticket_data(ctx, ticket, data)
  if data ~= nil and data ~= '' then
    redis.call('HSET', ctx.k.data, ticket, data)
    ctx.has_data = true
  end
end

-- The module's face: what other files reach as Players.<name>.
Players.is_party_ticket = is_party_ticket
Players.int_text = int_text
Players.encode_ticket = encode_ticket
Players.ticket_of_texts = ticket_of_texts
Players.player_state = player_state
Players.decode_ticket = decode_ticket
Players.ticket_worlds = ticket_worlds
Players.waits_in = waits_in
Players.waiting_ticket = waiting_ticket
Players.cooling_until = cooling_until
Players.rating_member = rating_member
Players.member_ticket = member_ticket
Players.world_has_data = world_has_data
Players.tickets_data = tickets_data
Players.ticket_data = ticket_data
Players.set_ticket_data = set_ticket_data
Players.PARTY_MARK = PARTY_MARK
Players.SEQ_DIGITS = SEQ_DIGITS
end
