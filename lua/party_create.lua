-- party_create.lua: a player (the leader) creates a party for a world and
-- invites others. The leader is a member at once; the invited join with
-- party_join.lua before the assembly deadline, and the party enters the
-- queue as one ticket when the last one has joined. The invited are told
-- (PARTY_UPDATE). Nothing is written unless every check passes. A party may
-- queue in several worlds of a queueGroup, as a solo ticket may (join.lua):
-- the leader is admitted by each, and so is every member who joins.
--
-- KEYS   players matches match_expiry match_lifecycle outbox notes counters parties
-- KEYS   party_expiry proposals player_ratings player_attributes presence matcher_asleep
-- WORLDS the party's world, the other worlds it queues in (as many as `also`
--        counts), then the worlds of the leader's ticket when they are
--        others (the store learns them from a STALE answer) and, in a
--        grouped world, the rest of its group
-- ARGV   leader   the leader's player id
-- ARGV   data     the leader's ticket data JSON, "" for none
-- ARGV   claimed  the rating from the leader's verified token claim, a plain
--                 decimal ("" for none)
-- ARGV   latencies the leader's latency to each region, "name=ms,..." ("" for none)
-- ARGV   attributes the leader's client attributes as the store encodes them ("" for none)
-- ARGV   config   the world's configuration (see _config.lua)
-- ARGV   also     how many other worlds of its queueGroup the party queues in
--                 (world blocks 2 .. also + 1), "0" for none
-- REST   invited  per other world (also of them): its configuration, then
--                 the leader's client attributes there; then the invited
--                 players (distinct, not the leader, at least one)
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
local n = int_arg(args.also)
if not n or 2 * n > #rest then return fail('also must count the worlds rest describes') end
-- Latencies of a party queuing in several worlds are for those with regions.
local lat, bad_latencies = Regions.joining_latencies(cfg, (n == 0 or cfg.regions) and args.latencies or '')
if bad_latencies then return fail(bad_latencies) end
if args.attributes ~= '' then
  local bad_attributes = MatchRules.bad_argument(cfg, args.attributes)
  if bad_attributes then return fail(bad_attributes) end
end
local now = now_ms()
local ctx = { k = k, world = world, now = now, cfg = cfg, world_of = world_of, attributes = args.attributes }
local also, bad_also = Admission.other_worlds(ctx, worlds, rest, n, args.latencies)
if bad_also then return fail(bad_also) end
local invited = {}
local seen = { [leader] = true }
for i = 2 * n + 1, #rest do
  local p = rest[i]
  if p == '' or seen[p] then return fail('invited players must be distinct, non-empty and not the leader') end
  seen[p] = true
  invited[#invited + 1] = p
end
if #invited == 0 then return fail('a party needs at least one invited player') end
if #invited + 1 > cfg.max_party then return fail('party larger than the world accepts') end

local refusal, r, _, expired, attrs = Admission.admit(ctx, leader, lat, claimed, nil)
if refusal then return refusal end
local names, x = nil, nil
if also then
  names, x = {}, {}
  for i, a in ipairs(also) do
    if #invited + 1 > a.cfg.max_party then return fail('party larger than world ' .. a.world .. ' accepts') end
    local ar, aattrs
    refusal, ar, _, _, aattrs = Admission.admit(a, leader, a.lat, claimed, nil)
    if refusal then return refusal end
    names[i] = a.world
    x[i] = {
      r = ar and num(ar) or '', a = a.cfg.attributes and aattrs or nil,
      l = a.lat and Regions.encode_latencies(a.lat) or nil,
    }
  end
end
local states = redis.call('HMGET', k.players, unpack(invited))
for i, p in ipairs(invited) do
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
  { p = leader, j = 1, r = rating, d = data, l = lat and Regions.encode_latencies(lat) or nil, a = cfg.attributes and attrs or nil, x = x },
}
for i, p in ipairs(invited) do
  members[i + 1] = { p = p, j = 0, r = '', d = '' }
end
local party = {
  id = id, world = world, leader = leader, state = 'ASSEMBLING', expires = now + cfg.party_ttl,
  members = members, also = names,
}
Parties.save_party(k, party)
redis.call('ZADD', k.party_expiry, party.expires, id)
redis.call('HSET', k.players, leader, Parties.party_state(id))
add_note(k, invited, Parties.party_update(party), now)
return { 'CREATED', cjson.encode(Parties.party_view(party)) }
