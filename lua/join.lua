-- join.lua: put a player in a world's queue (at most one ticket per player in
-- the whole namespace) and, when instant matching is on and the queue holds a
-- full group, form the match in the same atomic step.
--
-- KEYS[1]  tickets        HASH player -> "<world> <seq> <joined_ms> <deadline_ms> <data>"
-- KEYS[2]  ticket_seq     STRING counter giving every ticket its FIFO order
-- KEYS[3]  matches        HASH match id -> match record JSON
-- KEYS[4]  match_expiry   ZSET match id -> expiry ms
-- KEYS[5]  player_match   HASH player -> id of the player's latest match
-- KEYS[6]  outbox         ZSET notification id -> due ms
-- KEYS[7]  match_seq      STRING counter for match ids
-- KEYS[8]  presence       ZSET player -> until when they have a live connection (ms)
-- KEYS[9]  player_ratings HASH "<world>|<player>" or "*|<player>" -> rating (the
--                         trusted ratings store, written by PUT /v1/ratings)
-- KEYS[10..14] the party block: parties (HASH party id -> party JSON),
--           party_expiry (ZSET), player_party (HASH player -> party id),
--           notes (HASH), counters (HASH); see _tickets.lua and _lib.lua
-- KEYS[15..18] the proposal block: proposals (HASH), proposal_expiry (ZSET),
--           player_proposal (HASH player -> match id), cooldowns (ZSET
--           player -> may join again from ms); see _proposals.lua
-- KEYS[19..] for every world named in ARGV[6..], in that order: queue (ZSET ticket
--           -> seq), deadlines (ZSET ticket -> deadline ms), rate (HASH of
--           match rate statistics, see _lib.lua), ratings and due (rated
--           worlds, see _rated.lua): five keys per world.
--
-- ARGV[1]  player id
-- ARGV[2]  index (1-based) of the world to join among the worlds named in ARGV[6..]
-- ARGV[3]  ticket data JSON, "" for none (already validated and size-capped)
-- ARGV[4]  the rating from the caller's verified token claim, "" for none
-- ARGV[5]  the joined world's configuration (see _config.lua)
-- ARGV[6..] world names, one per world key group: the store gives the joined
--          world, and the world of the player's ticket when it is another
--
-- A rated world's rating is, in this order: the ratings store's entry for
-- this world, its entry for every world ("*"), the token claim, the default.
--
-- Reply: { status, world, position, queue_size, window_players, window_span_ms,
--          rating } and, for MATCHED only, { match_count, match_json...,
--          notification_id... }
--   status "QUEUED"  : the ticket waits at `position` (1-based from the front)
--   status "MATCHED" : the join formed matches: the reply goes on with
--                      { match_count, match_json..., notification_id... },
--                      every record formed in this call (one holds the
--                      player) and the outbox ids announcing them
--   status "ALREADY" : the player already waits in `world` at `position`
--   status "STALE"   : the player holds a ticket of `world`, whose keys were
--                      not given; nothing was written (the caller joins again
--                      with that world's keys too, or, when the world is no
--                      longer configured, drops that ticket with
--                      drop_stale_ticket.lua first)
--   status "IN_PARTY": the player belongs to a party (assembling or queued) of
--                      `world`; nothing was written
--   status "PROPOSED": the join made a match proposal (a ready check) of
--                      `world` holding the player; an 8th value holds the
--                      proposal JSON (see _proposals.lua proposal_view)
--   status "PENDING" : the player is in a pending proposal already; nothing
--                      was written (8th value: the proposal JSON)
--   status "COOLING_DOWN": the player declined or missed a ready check and
--                      may not join for `position` more ms; nothing written
--   status "FULL"    : the queue is at capacity; nothing was written
--   status "ABSENT"  : the world requires presence and the player has no live
--                      connection; nothing was written
--   status "NO_RATING": a rated world and no rating from any source; nothing
--                      was written
--   status "BAD_RATING": the rating found is outside [min, max]; nothing was
--                      written (the 7th value is the rating)
-- The 7th value of every reply is the ticket's rating ("" in FIFO worlds).
-- window_* are the world's wait statistics (see _lib.lua wait_stats). A
-- ticket past its deadline counts as gone: it is swept (TICKET_EXPIRED) and
-- the join goes ahead.

local player = ARGV[1]
local world_index = int_arg(ARGV[2])
local data = ARGV[3]
local claimed = ARGV[4]
local cfg, bad_config = world_config(ARGV[5])
local FIXED_KEYS, FIXED_ARGS, PER_WORLD = 18, 5, 5
local worlds = #ARGV - FIXED_ARGS

if player == nil or player == '' then return fail('player id is empty') end
if not cfg then return fail(bad_config) end
if worlds < 1 or #KEYS ~= FIXED_KEYS + PER_WORLD * worlds then return fail('world keys do not match world names') end
if world_index == nil or world_index < 1 or world_index > worlds then return fail('world index out of range') end
if claimed ~= '' and not tonumber(claimed) then return fail('claimed rating is not a number') end
local seats, teams, ticket_ttl, match_ttl = cfg.seats, cfg.teams, cfg.ticket_ttl, cfg.match_ttl
local capacity, window, rules = cfg.capacity, cfg.window, cfg.rules

local tickets = KEYS[1]
local function world_keys(i)
  local base = FIXED_KEYS + PER_WORLD * (i - 1)
  return KEYS[base + 1], KEYS[base + 2], KEYS[base + 3], KEYS[base + 4], KEYS[base + 5]
end
local world = ARGV[FIXED_ARGS + world_index]
local queue, deadlines, rate, ratings, due = world_keys(world_index)
local now = now_ms()
local k = {
  queue = queue, deadlines = deadlines, tickets = tickets, matches = KEYS[3],
  match_expiry = KEYS[4], player_match = KEYS[5], outbox = KEYS[6],
  rate = rate, match_seq = KEYS[7], presence = KEYS[8], ratings = ratings, due = due,
  parties = KEYS[10], party_expiry = KEYS[11], player_party = KEYS[12], notes = KEYS[13],
  counters = KEYS[14], proposals = KEYS[15], proposal_expiry = KEYS[16],
  player_proposal = KEYS[17], cooldowns = KEYS[18], accept = cfg.accept,
}

-- A player in a pending proposal answers it first.
local function proposed_reply(id, status)
  local p = load_proposal(k, id)
  if not p then return nil end
  return { status, p.world, 0, 0, 0, 0, '', proposal_view(p) }
end


-- One ticket per player in the whole namespace.
local existing = redis.call('HGET', tickets, player)
-- A ticket past its deadline that the sweep has not removed yet.
local expired_ticket = nil
if existing then
  local other, _, _, other_deadline = decode_ticket(existing)
  for i = 1, worlds do
    if ARGV[FIXED_ARGS + i] == other then
      local q, d, r = world_keys(i)
      if other_deadline and other_deadline > now then
        local rank = redis.call('ZRANK', q, player)
        local wp, ws = wait_stats(r, now, window)
        return { 'ALREADY', other, (rank or -1) + 1, redis.call('ZCARD', q), wp, ws, '' }
      end
      expired_ticket, existing = existing, nil
    end
  end
  if existing then
    -- The ticket belongs to a world whose keys are not in KEYS: the caller
    -- calls again with them, or removes a ticket of a world no longer
    -- configured with a script that declares its keys.
    return { 'STALE', other or '', 0, 0, 0, 0, '' }
  end
end
-- Proposals, parties and cool-downs: one EXISTS spares the three lookups
-- in a namespace that has none of them (every solo FIFO world's hot path).
if redis.call('EXISTS', k.player_proposal, k.player_party, k.cooldowns) == 0 then
  k.no_parties = true
else
  local pending = redis.call('HGET', k.player_proposal, player)
  if pending then
    local reply = proposed_reply(pending, 'PENDING')
    if reply then return reply end
  end
  -- A party member waits with the party (one ticket per player).
  local party_id = redis.call('HGET', k.player_party, player)
  if party_id then
    local party = load_party(k, party_id)
    return { 'IN_PARTY', party and party.world or '', 0, 0, 0, 0, '' }
  end
  local cooling = cooling_until(k, player, now)
  if cooling then
    return { 'COOLING_DOWN', world, cooling - now, 0, 0, 0, '' }
  end
end
local size = redis.call('ZCARD', queue)
if capacity > 0 and size >= capacity then
  local wp, ws = wait_stats(rate, now, window)
  return { 'FULL', world, 0, size, wp, ws, '' }
end
if cfg.presence and not is_present(KEYS[8], player, now) then
  local wp, ws = wait_stats(rate, now, window)
  return { 'ABSENT', world, 0, size, wp, ws, '' }
end
local rating = nil
if rules then
  local stored = redis.call('HMGET', KEYS[9], world .. '|' .. player, '*|' .. player)
  rating = tonumber(stored[1]) or tonumber(stored[2]) or tonumber(claimed) or cfg.default_rating
  if not rating then
    return { 'NO_RATING', world, 0, size, 0, 0, '' }
  end
  if rating < cfg.min_rating or rating > cfg.max_rating then
    return { 'BAD_RATING', world, 0, size, 0, 0, num(rating) }
  end
end
local shown_rating = rating and num(rating) or ''

-- All checks passed: from here on the script only writes.
if expired_ticket then
  -- Past its deadline but not swept yet: it expires now, as the sweep would.
  local other = decode_ticket(expired_ticket)
  for i = 1, worlds do
    if ARGV[FIXED_ARGS + i] == other then
      local q, d, _, rt, du = world_keys(i)
      remove_tickets({
        queue = q, deadlines = d, ratings = rt, due = du, tickets = tickets, outbox = KEYS[6],
      }, other, { player }, 'X', now)
    end
  end
  size = redis.call('ZCARD', queue)
end
-- Parties (tickets of several seats) and teams need the general matching.
local parties_queued = queued_parties(k, world) > 0
local general = teams > 1 or k.accept ~= nil or parties_queued
local attempt = cfg.instant and (general or size + 1 >= seats)
local seq = redis.call('INCR', KEYS[2])
local deadline = now + ticket_ttl
redis.call('ZADD', queue, seq, player)
redis.call('ZADD', deadlines, deadline, player)
local ticket = encode_ticket(world, seq, now, deadline, data)
redis.call('HSET', tickets, player, ticket)
if rules then
  redis.call('ZADD', ratings, rating, rating_member(seq, player))
  -- An attempt that fails schedules the anchor itself (retry_later).
  if not attempt then
    redis.call('ZADD', due, next_due(rules, now), player)
  end
end

-- The new ticket has the highest sequence, so it is last: rank `size`. The
-- reply is computed rather than read back, to keep the hot path short.
if attempt then
  local records, ids, still_queued
  if rules then
    -- One attempt with the joiner as the anchor (window: the base), unless
    -- too few tickets lie in its window to fill the match at all.
    records, ids = {}, {}
    local items = nil
    local more_expired = false
    local fits = rated_may_match(k, rules, rating, 0, seats - 1, parties_queued and seats / teams or 1)
    if fits then
      local _
      _, more_expired = sweep_expired(k, world, MATCH_SWEEP_LIMIT, now)
    end
    if not fits or more_expired then
      retry_later(k, rules, player, now)
    else
      local known = { seq = seq, ticket = ticket, rating = rating, joined = now, data = data }
      items = rated_attempt(k, world, seats, teams, rules, player, now, cfg.presence, { removed = 0 }, known)
      if items then
        records, ids = record_rated(k, world, seats, teams, { items }, match_ttl, now, window)
      end
    end
    if items and (teams > 1 or k.accept) then
      -- Packed teams and proposals are recorded by the general path.
      still_queued = redis.call('HEXISTS', tickets, player) == 1
    else
      -- The joiner passed the presence check: only a match takes its ticket.
      still_queued = items == nil
    end
  else
    records, ids = form_matches(k, world, seats, teams, 0, match_ttl, now, window, cfg.presence, INSTANT_SCAN * seats, player)
    still_queued = redis.call('HEXISTS', tickets, player) == 1
  end
  if not still_queued and k.accept then
    local reply = proposed_reply(redis.call('HGET', k.player_proposal, player) or '', 'PROPOSED')
    if reply then return reply end
  end
  if not still_queued then
    -- A player's match carries its own wait; no statistics needed.
    local reply = { 'MATCHED', world, 0, redis.call('ZCARD', queue), 0, 0, shown_rating, #records }
    local n = 8
    for _, r in ipairs(records) do
      n = n + 1
      reply[n] = r
    end
    for _, id in ipairs(ids) do
      n = n + 1
      reply[n] = id
    end
    return reply
  end
  if #records > 0 or size + 1 ~= redis.call('ZCARD', queue) then
    -- Others were matched (or removed) ahead of the player: read back.
    local wp, ws = wait_stats(rate, now, window)
    return { 'QUEUED', world, redis.call('ZRANK', queue, player) + 1, redis.call('ZCARD', queue), wp, ws, shown_rating }
  end
end
local wp, ws = wait_stats(rate, now, window)
return { 'QUEUED', world, size + 1, size + 1, wp, ws, shown_rating }
