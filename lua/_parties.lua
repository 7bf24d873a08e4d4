-- _parties.lua: parties. The parties hash holds each party as JSON (cjson):
--   { id, world, leader, state = "ASSEMBLING" | "QUEUED" | "PROPOSED",
--     expires (ms: the assembly deadline, then the ticket's deadline),
--     proposal (the match id while PROPOSED),
--     members = [ { p = player, j = 1 once joined else 0, r = rating ("" in
--     FIFO worlds), d = ticket data JSON ("" for none), l = latencies, a =
--     stored attributes, x = per world of `also`: { r, a, l } there } ],
--     also = the other worlds of its queueGroup it queues in (absent: none) }
--   (leader first, then in invitation order)
-- party_expiry holds assembling parties by assembly deadline; every member
-- who has joined is in state "P <party id>" (_players.lua). A queued party
-- waits as the ticket PARTY_MARK .. id in its world, like a solo ticket.
-- k: parties, party_expiry (assembling parties only), players.
-- @include _lib

local Parties = {}
do

local function load_party(k, id)
  local raw = redis.call('HGET', k.parties, id)
  if not raw then return nil end
  return cjson.decode(raw)
end

local function save_party(k, party)
  redis.call('HSET', k.parties, party.id, cjson.encode(party))
end

local function party_state(id)
  return 'P ' .. id
end

local function party_players(party, except)
  local out = {}
  for _, m in ipairs(party.members) do
    if m.p ~= except then out[#out + 1] = m.p end
  end
  return out
end

-- The party as clients see it (PARTY_UPDATE, the party routes, my-status).
local function party_view(party)
  local members = {}
  for i, m in ipairs(party.members) do
    members[i] = { playerId = m.p, joined = m.j == 1 }
  end
  return {
    partyId = party.id, worldType = party.world, leader = party.leader,
    state = party.state, expiresAt = party.expires, members = members, alsoQueuedIn = party.also,
  }
end

-- The position of `world` among the party's other worlds (party.also), or
-- nil: its own world, or one it does not queue in.
local function other_world_index(party, world)
  for i, w in ipairs(party.also or {}) do
    if w == world then return i end
  end
  return nil
end

-- Whether the party queues (or will queue) in `world`.
local function queues_in(party, world)
  return party.world == world or other_world_index(party, world) ~= nil
end

-- Member `m`'s rating, stored attributes and latencies in `world`, one of
-- the party's.
local function member_in(party, m, world)
  local i = world ~= party.world and other_world_index(party, world)
  if i and m.x and m.x[i] then return m.x[i].r, m.x[i].a, m.x[i].l end
  return m.r, m.a, m.l
end

local function party_update(party)
  return cjson.encode({ type = 'PARTY_UPDATE', party = party_view(party) })
end

-- Party tickets waiting in a world: the `parties` field of its stats
-- (see world_stats). `wk`: the world's keys.
local function queued_parties(wk)
  return tonumber(redis.call('HGET', wk.stats, 'parties')) or 0
end

local function count_queued_party(wk, delta)
  if redis.call('HINCRBY', wk.stats, 'parties', delta) <= 0 then
    redis.call('HDEL', wk.stats, 'parties')
  end
end

-- Deletes a party and its members' states (not its ticket). `wk`: the
-- party's world's keys, nil when the world is no longer configured (a
-- queued party is counted there). Returns the party, or nil when there was
-- none.
local function dissolve_party(k, id, wk)
  local party = load_party(k, id)
  if not party then return nil end
  if party.state == 'QUEUED' and wk then count_queued_party(wk, -1) end
  redis.call('HDEL', k.parties, id)
  if party.state == 'ASSEMBLING' then redis.call('ZREM', k.party_expiry, id) end
  local mine = party_state(id)
  for _, m in ipairs(party.members) do
    if redis.call('HGET', k.players, m.p) == mine then
      redis.call('HDEL', k.players, m.p)
    end
  end
  return party
end

-- The module's face: what other files reach as Parties.<name>.
Parties.load_party = load_party
Parties.save_party = save_party
Parties.party_state = party_state
Parties.party_players = party_players
Parties.party_view = party_view
Parties.other_world_index = other_world_index
Parties.queues_in = queues_in
Parties.member_in = member_in
Parties.party_update = party_update
Parties.queued_parties = queued_parties
Parties.count_queued_party = count_queued_party
Parties.dissolve_party = dissolve_party
end
