-- party_create.lua: a player (the leader) creates a party for a world and
-- invites others. The leader is a member at once; the invited join with
-- party_join.lua before the assembly deadline, and the party enters the
-- queue as one ticket when the last one has joined. The invited are told
-- (PARTY_UPDATE). Nothing is written unless every check passes.
--
-- KEYS   players matches match_expiry match_lifecycle outbox notes counters parties
-- KEYS   party_expiry proposals player_ratings player_attributes presence matcher_asleep
-- WORLDS the party's world, then the world of the leader's ticket when it is
--        another (the store learns it from a STALE answer)
-- ARGV   leader   the leader's player id
-- ARGV   data     the leader's ticket data JSON, "" for none
-- ARGV   claimed  the rating from the leader's verified token claim, a plain
--                 decimal ("" for none)
-- ARGV   latencies the leader's latency to each region, "name=ms,..." ("" for none)
-- ARGV   attributes the leader's client attributes as the store encodes them ("" for none)
-- ARGV   config   the world's configuration (see _config.lua)
-- REST   invited  the invited players (distinct, not the leader, at least one)
--
-- Reply: a status, then exactly that status's fields:
--   CREATED, party_json (see _parties.lua party_view)
--   BUSY, player          an invited player holds a live ticket, belongs to
--                         a party, is in a proposal, cools down or plays
--   STALE, world          the leader holds a ticket of `world`, whose keys
--                         were not given (see join.lua); nothing was written
--   or a refusal of the leader's admission (_admission.lua admit; no
--   QUEUE_FULL: a party enters the queue when complete)

local leader, data, claimed = args.leader, args.data, args.claimed
local cfg, bad_config = Config.world_config(args.config)
local world = worlds[1]
if leader == '' then return fail('leader is empty') end
if not cfg then return fail(bad_config) end
local bad_claimed = Lifecycle.bad_claim(claimed)
if bad_claimed then return fail(bad_claimed) end
local lat, bad_latencies = Regions.joining_latencies(cfg, args.latencies)
if bad_latencies then return fail(bad_latencies) end
if args.attributes ~= '' then
  local bad_attributes = MatchRules.bad_argument(cfg, args.attributes)
  if bad_attributes then return fail(bad_attributes) end
end
local seen = { [leader] = true }
for _, p in ipairs(rest) do
  if p == '' or seen[p] then return fail('invited players must be distinct, non-empty and not the leader') end
  seen[p] = true
end
if #rest == 0 then return fail('a party needs at least one invited player') end
if #rest + 1 > cfg.max_party then return fail('party larger than the world accepts') end

local now = now_ms()
local ctx = { k = k, world = world, now = now, cfg = cfg, world_of = world_of, attributes = args.attributes }
local refusal, r, _, expired, attrs = Admission.admit(ctx, leader, lat, claimed, nil)
if refusal then return refusal end
local states = redis.call('HMGET', k.players, unpack(rest))
for i, p in ipairs(rest) do
  if Admission.member_busy(ctx, states[i] or nil) then return { 'BUSY', p } end
end
local rating = r and num(r) or ''

-- All checks passed: from here on the script only writes.
if expired then
  -- Past its deadline but not swept yet: it expires now, as the sweep would.
  Tickets.remove_tickets({ k = expired.k, world = expired.world, now = now, world_of = world_of }, { leader }, 'X')
end
local seq = redis.call('HINCRBY', k.counters, 'party', 1)
local id = string.format('%s.%x-%x', world, now, seq)
local members = {
  { p = leader, j = 1, r = rating, d = data, l = lat and Regions.encode_latencies(lat) or nil, a = cfg.attributes and attrs or nil },
}
for i, p in ipairs(rest) do
  members[i + 1] = { p = p, j = 0, r = '', d = '' }
end
local party = {
  id = id, world = world, leader = leader, state = 'ASSEMBLING', expires = now + cfg.party_ttl,
  members = members,
}
Parties.save_party(k, party)
redis.call('ZADD', k.party_expiry, party.expires, id)
redis.call('HSET', k.players, leader, Parties.party_state(id))
add_note(k, rest, Parties.party_update(party), now)
return { 'CREATED', cjson.encode(Parties.party_view(party)) }
