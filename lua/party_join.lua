-- party_join.lua: an invited player joins a party. When the last one has
-- joined, the party enters its world's queue as ONE ticket (one FIFO
-- position; in a rated world its rating is the members' average or
-- maximum) and, with instant matching, is tried at once like a join. The
-- other members are told (PARTY_UPDATE). Nothing is written unless every
-- check passes.
--
-- KEYS[1]  tickets        HASH ticket -> ticket
-- KEYS[2]  ticket_seq     STRING counter giving every ticket its FIFO order
-- KEYS[3]  matches        HASH match id -> match record JSON
-- KEYS[4]  match_expiry   ZSET match id -> expiry ms
-- KEYS[5]  player_match   HASH player -> id of the player's latest match
-- KEYS[6]  outbox         ZSET notification id -> due ms
-- KEYS[7]  match_seq      STRING counter for match ids
-- KEYS[8]  presence       ZSET player -> until when they have a live connection (ms)
-- KEYS[9]  player_ratings HASH "<world>|<player>" or "*|<player>" -> rating
-- KEYS[10..14] the party block: parties, party_expiry, player_party, notes,
--          counters (see _tickets.lua)
-- KEYS[15..19] the party's world: queue, deadlines, rate, ratings, due
-- KEYS[20..23] the proposal block: proposals, proposal_expiry,
--          player_proposal, cooldowns (see _proposals.lua)
--
-- ARGV[1]  player id
-- ARGV[2]  party id
-- ARGV[3]  the party's world (the world part of the party id)
-- ARGV[4]  the player's ticket data JSON, "" for none
-- ARGV[5]  the rating from the player's verified token claim, "" for none
-- ARGV[6]  the world's configuration (see _config.lua)
--
-- Reply: { status, detail, position, queue_size, rating } and, for MATCHED
--          only, { match_count, match_json..., notification_id... }
--   "JOINED", party JSON   joined; the party still waits for others
--   "ALREADY", party JSON  the player had already joined; nothing written
--   "QUEUED", party JSON   the party now waits at `position` (1-based) with
--                          its `rating` ("" in FIFO worlds)
--   "MATCHED", party JSON  the party was matched at once (records follow)
--   "PROPOSED", proposal JSON  the party's match is a proposal (a ready
--                          check; see _proposals.lua proposal_view)
--   "NOT_FOUND", ""        no such party, or the player is not invited
--   "BUSY", world          the player holds a live ticket or is in a proposal
--   "COOLING_DOWN", ms     the player may not join for this many more ms
--   "IN_PARTY", party id   the player belongs to another party
--   "ABSENT", ""           presence required and the player has no live connection
--   "NO_RATING", ""        a rated world and no rating for the player
--   "BAD_RATING", rating   the player's rating is outside [min, max]
--   "FULL", ""             the party was complete but the queue is at
--                          capacity; the player has not joined

if #KEYS ~= 23 then return fail('expected 23 keys') end
local player, party_id, world = ARGV[1], ARGV[2], ARGV[3]
local data, claimed = ARGV[4], ARGV[5]
local cfg, bad_config = world_config(ARGV[6])
if player == nil or player == '' then return fail('player id is empty') end
if party_id == nil or party_id == '' then return fail('party id is empty') end
if world == nil or world == '' then return fail('world is empty') end
if not cfg then return fail(bad_config) end
if claimed ~= '' and not tonumber(claimed) then return fail('claimed rating is not a number') end
local seats, teams, ticket_ttl, match_ttl = cfg.seats, cfg.teams, cfg.ticket_ttl, cfg.match_ttl
local capacity, window, rules, aggregate = cfg.capacity, cfg.window, cfg.rules, cfg.aggregate

local k = {
  tickets = KEYS[1], matches = KEYS[3], match_expiry = KEYS[4], player_match = KEYS[5],
  outbox = KEYS[6], match_seq = KEYS[7], presence = KEYS[8], parties = KEYS[10],
  party_expiry = KEYS[11], player_party = KEYS[12], notes = KEYS[13], counters = KEYS[14],
  queue = KEYS[15], deadlines = KEYS[16], rate = KEYS[17], ratings = KEYS[18], due = KEYS[19],
  proposals = KEYS[20], proposal_expiry = KEYS[21], player_proposal = KEYS[22], cooldowns = KEYS[23],
  accept = cfg.accept,
}
local now = now_ms()
local party = load_party(k, party_id)
if not party or party.world ~= world then return { 'NOT_FOUND', '', 0, 0, '' } end
local me, joined = nil, 0
for _, m in ipairs(party.members) do
  if m.p == player then me = m end
  if m.j == 1 then joined = joined + 1 end
end
if not me then return { 'NOT_FOUND', '', 0, 0, '' } end
if me.j == 1 then
  local rank = redis.call('ZRANK', k.queue, PARTY_MARK .. party_id)
  return { 'ALREADY', cjson.encode(party_view(party)), rank and rank + 1 or 0, redis.call('ZCARD', k.queue), '' }
end
local ticket = redis.call('HGET', k.tickets, player)
if ticket then
  local w, _, _, deadline = decode_ticket(ticket)
  if deadline and deadline > now then return { 'BUSY', w or '', 0, 0, '' } end
end
local other = redis.call('HGET', k.player_party, player)
if other then return { 'IN_PARTY', other, 0, 0, '' } end
local pending = redis.call('HGET', k.player_proposal, player)
if pending then
  local p = load_proposal(k, pending)
  return { 'BUSY', p and p.world or world, 0, 0, '' }
end
local cooling = cooling_until(k, player, now)
if cooling then return { 'COOLING_DOWN', tostring(cooling - now), 0, 0, '' } end
if cfg.presence and not is_present(k.presence, player, now) then
  return { 'ABSENT', '', 0, 0, '' }
end
if rules then
  local stored = redis.call('HMGET', KEYS[9], world .. '|' .. player, '*|' .. player)
  local r = tonumber(stored[1]) or tonumber(stored[2]) or tonumber(claimed) or cfg.default_rating
  if not r then return { 'NO_RATING', '', 0, 0, '' } end
  if r < cfg.min_rating or r > cfg.max_rating then return { 'BAD_RATING', num(r), 0, 0, '' } end
  me.r = num(r)
end
local complete = joined + 1 == #party.members
local size = redis.call('ZCARD', k.queue)
if complete and capacity > 0 and size >= capacity then
  return { 'FULL', '', 0, size, '' }
end

-- All checks passed: from here on the script only writes.
me.j = 1
me.d = data
redis.call('HSET', k.player_party, player, party_id)
if not complete then
  save_party(k, party)
  local view = party_update(party)
  add_note(k, party_players(party, player), view, now)
  return { 'JOINED', cjson.encode(party_view(party)), 0, size, '' }
end

-- The last member: the party becomes one ticket.
local ticket_id = PARTY_MARK .. party_id
local seq = redis.call('INCR', KEYS[2])
local deadline = now + ticket_ttl
party.state = 'QUEUED'
party.expires = deadline
save_party(k, party)
redis.call('ZREM', k.party_expiry, party_id)
redis.call('HINCRBY', k.counters, queued_parties_field(world), 1)
redis.call('ZADD', k.queue, seq, ticket_id)
redis.call('ZADD', k.deadlines, deadline, ticket_id)
redis.call('HSET', k.tickets, ticket_id, encode_ticket(world, seq, now, deadline, ''))
local shown_rating = ''
if rules then
  local sum, top = 0, -math.huge
  for _, m in ipairs(party.members) do
    local r = tonumber(m.r)
    sum = sum + r
    if r > top then top = r end
  end
  local rating = aggregate == 'max' and top or sum / #party.members
  redis.call('ZADD', k.ratings, num(rating), rating_member(seq, ticket_id))
  redis.call('ZADD', k.due, next_due(rules, now), ticket_id)
  shown_rating = num(rating)
end

local records, ids = {}, {}
if cfg.instant then
  if rules then
    local _, more_expired = sweep_expired(k, world, MATCH_SWEEP_LIMIT, now)
    if not more_expired then
      local items = rated_attempt(k, world, seats, teams, rules, ticket_id, now, cfg.presence, { removed = 0 })
      if items then
        records, ids = record_rated(k, world, seats, teams, { items }, match_ttl, now, window)
      end
    end
  else
    records, ids = form_matches(k, world, seats, teams, 0, match_ttl, now, window, cfg.presence, INSTANT_SCAN * seats, ticket_id)
  end
end
local view = cjson.encode(party_view(party))
if redis.call('HEXISTS', k.tickets, ticket_id) == 0 and k.accept then
  local p = load_proposal(k, redis.call('HGET', k.player_proposal, player) or '')
  if p then return { 'PROPOSED', proposal_view(p), 0, redis.call('ZCARD', k.queue), shown_rating } end
end
if redis.call('HEXISTS', k.tickets, ticket_id) == 0 then
  local reply = { 'MATCHED', view, 0, redis.call('ZCARD', k.queue), shown_rating, #records }
  for _, r in ipairs(records) do reply[#reply + 1] = r end
  for _, id in ipairs(ids) do reply[#reply + 1] = id end
  return reply
end
add_note(k, party_players(party, player), party_update(party), now)
return { 'QUEUED', view, redis.call('ZRANK', k.queue, ticket_id) + 1, redis.call('ZCARD', k.queue), shown_rating }
