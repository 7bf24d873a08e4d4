-- party_create.lua: a player (the leader) creates a party for a world and
-- invites others. The leader is a member at once; the invited join with
-- party_join.lua before the assembly deadline, and the party enters the
-- queue as one ticket when the last one has joined. The invited are told
-- (PARTY_UPDATE). Nothing is written unless every check passes.
--
-- KEYS   players matches match_expiry match_lifecycle outbox notes counters parties
-- KEYS   party_expiry proposals player_ratings presence matcher_asleep backfills
-- KEYS   backfill_expiry
-- WORLDS the party's world
-- ARGV   leader   the leader's player id
-- ARGV   data     the leader's ticket data JSON, "" for none
-- ARGV   claimed  the rating from the leader's verified token claim, a plain
--                 decimal ("" for none)
-- ARGV   latencies the leader's latency to each region, "name=ms,..." ("" for none)
-- ARGV   config   the world's configuration (see _config.lua)
-- REST   invited  the invited players (distinct, not the leader, at least one)
--
-- Reply: a status, then exactly that status's fields:
--   CREATED, party_json (see _parties.lua party_view)
--   QUEUED, world         the leader holds a live ticket or is in a proposal
--   COOLING_DOWN, ms      the leader may not join for this many more ms
--   IN_PARTY, party_id    the leader already belongs to a party
--   IN_MATCH, match_id    the leader's match is being played (_lifecycle.lua)
--   BUSY, player          an invited player holds a live ticket, belongs to
--                         a party, is in a proposal, cools down or plays
--   ABSENT                presence required and the leader has no live connection
--   NO_RATING             a rated world and no rating for the leader
--   BAD_RATING, rating    the leader's rating is outside [min, max]
--   LATENCY_REQUIRED      a world with regions, no latencies and no default region

local leader, data, claimed = args.leader, args.data, args.claimed
local cfg, bad_config = world_config(args.config)
local world = worlds[1]
if leader == '' then return fail('leader is empty') end
if not cfg then return fail(bad_config) end
local bad_claimed = bad_claim(claimed)
if bad_claimed then return fail(bad_claimed) end
local lat, bad_latencies = joining_latencies(cfg, args.latencies)
if bad_latencies then return fail(bad_latencies) end
local seen = { [leader] = true }
for _, p in ipairs(rest) do
  if p == '' or seen[p] then return fail('invited players must be distinct, non-empty and not the leader') end
  seen[p] = true
end
if #rest == 0 then return fail('a party needs at least one invited player') end
if #rest + 1 > cfg.max_party then return fail('party larger than the world accepts') end

local now = now_ms()
-- What keeps a player from joining a party: the world of a live ticket or
-- proposal, a party, a cool-down (each as its reply), or nil.
local function busy(state)
  local kind, value = player_state(state)
  if kind == 'ticket' then
    local w, _, _, deadline = decode_ticket(value)
    if deadline > now then return { 'QUEUED', w } end
  elseif kind == 'party' then
    return { 'IN_PARTY', value }
  elseif kind == 'proposal' then
    local p = load_proposal(k, value)
    if p then return { 'QUEUED', p.world } end
  elseif cooling_until(kind, value, now) then
    return { 'COOLING_DOWN', tostring(value - now) }
  elseif kind == 'match' and game_in_progress(k, value, now) then
    return { 'IN_MATCH', value }
  end
  return nil
end

local states = redis.call('HMGET', k.players, leader, unpack(rest))
local reason = busy(states[1] or nil)
if reason then
  if reason[1] == 'IN_PARTY' then
    local p = proposal_of(k, 'party', reason[2])
    if p then return { 'QUEUED', p.world } end
  end
  return reason
end
for i, p in ipairs(rest) do
  if busy(states[i + 1] or nil) then return { 'BUSY', p } end
end
if cfg.presence and not is_present(k.presence, leader, now) then
  return { 'ABSENT' }
end
if cfg.regions and not lat then return { 'LATENCY_REQUIRED' } end
local rating = ''
if cfg.rules then
  local r = joining_rating(k, world, leader, claimed, cfg)
  if not r then return { 'NO_RATING' } end
  if r < cfg.min_rating or r > cfg.max_rating then return { 'BAD_RATING', num(r) } end
  rating = num(r)
end

-- All checks passed: from here on the script only writes.
local seq = redis.call('HINCRBY', k.counters, 'party', 1)
local id = string.format('%s.%x-%x', world, now, seq)
local members = { { p = leader, j = 1, r = rating, d = data, l = lat and encode_latencies(lat) or nil } }
for i, p in ipairs(rest) do
  members[i + 1] = { p = p, j = 0, r = '', d = '' }
end
local party = {
  id = id, world = world, leader = leader, state = 'ASSEMBLING', expires = now + cfg.party_ttl,
  members = members,
}
save_party(k, party)
redis.call('ZADD', k.party_expiry, party.expires, id)
redis.call('HSET', k.players, leader, party_state(id))
add_note(k, rest, party_update(party), now)
return { 'CREATED', cjson.encode(party_view(party)) }
