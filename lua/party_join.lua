-- party_join.lua: an invited player joins a party. When the last one has
-- joined, the party enters its world's queue as ONE ticket (one FIFO
-- position; in a rated world its rating is the members' average or
-- maximum) and, with instant matching, is tried at once like a join. The
-- other members are told (PARTY_UPDATE). Nothing is written unless every
-- check passes. A party queuing in several worlds of a queueGroup
-- (party_create.lua) admits each member by every one of them, and its
-- ticket is filed and tried in each, as a shared solo ticket is (join.lua).
--
-- KEYS   players ticket_seq match_seq matches match_expiry match_lifecycle outbox
-- KEYS   outbox_meta notes counters parties party_expiry proposals proposal_expiry
-- KEYS   player_ratings player_attributes conns player_conns presence matcher_asleep
-- KEYS   block_pairs block_counts
-- WORLDS the party's world (the world part of the party id), the other worlds
--        it queues in (as many as `also` describes), then the worlds of the
--        player's ticket when they are others (see STALE) and, in a grouped
--        world, the rest of its group
-- ARGV   player   the player id
-- ARGV   party    the party id
-- ARGV   data     the player's ticket data JSON, "" for none
-- ARGV   claimed  the rating from the player's verified token claim, a plain
--                 decimal ("" for none)
-- ARGV   latencies the player's latency to each region, "name=ms,..." ("" for none)
-- ARGV   attributes the player's client attributes as the store encodes them ("" for none)
-- ARGV   config   the world's configuration (see _config.lua)
-- ARGV   claim    "1": claim the outbox entries of matches formed, for the
--                 caller to deliver at once; "0": leave them to the matcher
-- REST   also     per other world the party queues in (world blocks 2, 3,
--                 ..., in the party's order): its configuration, then the
--                 player's client attributes there
--
-- Reply: a status, then exactly that status's fields:
--   JOINED, party_json     joined; the party still waits for others
--   ALREADY, party_json, position, queue_size   the player had already
--                          joined (position 0 while assembling); nothing written
--   QUEUED, party_json, position, queue_size, rating   the party now waits
--                          at `position` (1-based) with its `rating` ("" in
--                          FIFO worlds)
--   MATCHED, party_json, queue_size, rating, match_count, match_json...,
--            claimed_entry...   the party was matched at once; with
--                          `claim`, the matches' outbox entries follow,
--                          claimed for delivery at once (_outbox.lua)
--   PROPOSED, proposal_json   the party's match is a proposal (a ready
--                          check; see _proposals.lua proposal_view)
--   NOT_FOUND              no such party, or the player is not invited
--   WORLDS, worlds         the party queues in other worlds than `also`
--                          describes: these (comma-separated, "" for none);
--                          nothing written (the store calls again)
--   ATTRIBUTES_CONFLICT, world, name   the player's value of `name` differs
--                          from a member's, and a rule of the world needs
--                          it equal across the match
--   STALE, world           the player holds a ticket of `world`, whose keys
--                          were not given (see join.lua); nothing was written
--   or a refusal of the player's admission (_admission.lua admit;
--   QUEUE_FULL only when the player completes the party)

local player, party_id, data, claimed = args.player, args.party, args.data, args.claimed
local cfg, bad_config = Config.world_config(args.config)
local world = worlds[1]
if player == '' then return fail('player id is empty') end
if party_id == '' then return fail('party id is empty') end
if not cfg then return fail(bad_config) end
local bad_claimed = Lifecycle.bad_claim(claimed)
if bad_claimed then return fail(bad_claimed) end
if args.claim ~= '0' and args.claim ~= '1' then return fail('claim must be 0 or 1') end
if #rest % 2 ~= 0 then return fail('also must be a configuration and attributes per world') end
local n = #rest / 2
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
local party = Parties.load_party(k, party_id)
if not party or party.world ~= world then return { 'NOT_FOUND' } end
-- The store reads the party's worlds before it calls (they never change).
if #(party.also or {}) ~= n then return { 'WORLDS', table.concat(party.also or {}, ',') } end
for i = 1, n do
  if party.also[i] ~= also[i].world then return { 'WORLDS', table.concat(party.also, ',') } end
end
local me, joined = nil, 0
for _, m in ipairs(party.members) do
  if m.p == player then me = m end
  if m.j == 1 then joined = joined + 1 end
end
if not me then return { 'NOT_FOUND' } end
if me.j == 1 then
  local rank = redis.call('ZRANK', k.queue, Players.PARTY_MARK .. party_id)
  return { 'ALREADY', cjson.encode(Parties.party_view(party)), rank and rank + 1 or 0, redis.call('ZCARD', k.queue) }
end
local complete = joined + 1 == #party.members

-- Admitted by every world the party queues in; in each, the party's members
-- must agree on the attributes a rule needs equal.
local function admit_in(c, c_lat, size)
  local refusal, r, _, expired, attrs = Admission.admit(c, player, c_lat, claimed, size)
  if refusal then return refusal end
  if c.cfg.attributes then
    local joined_members = {}
    for _, m in ipairs(party.members) do
      if m.j == 1 then joined_members[#joined_members + 1] = { a = select(2, Parties.member_in(party, m, c.world)) } end
    end
    joined_members[#joined_members + 1] = { a = attrs }
    local _, conflict = MatchRules.party_attributes(c.cfg, joined_members)
    if conflict then return { 'ATTRIBUTES_CONFLICT', c.world, conflict } end
  end
  return nil, r, attrs, expired
end
local size = redis.call('ZCARD', k.queue)
local refusal, r, attrs, expired = admit_in(ctx, lat, complete and size or nil)
if refusal then return refusal end
local x = nil
if also then
  x = {}
  for i, a in ipairs(also) do
    a.size = redis.call('ZCARD', a.k.queue)
    local ar, aattrs
    refusal, ar, aattrs = admit_in(a, a.lat, complete and a.size or nil)
    if refusal then return refusal end
    x[i] = {
      r = a.cfg.rules and num(ar) or '', a = a.cfg.attributes and aattrs or nil,
      l = a.lat and Regions.encode_latencies(a.lat) or nil,
    }
  end
end

-- All checks passed: from here on the script only writes.
if expired then
  -- Past its deadline but not swept yet: it expires now, as the sweep would.
  Tickets.remove_tickets({ k = expired.k, world = expired.world, now = now, world_of = world_of }, { player }, 'X')
  size = redis.call('ZCARD', k.queue)
  if also then
    for _, a in ipairs(also) do a.size = redis.call('ZCARD', a.k.queue) end
  end
end
me.j = 1
me.d = data
if lat then me.l = Regions.encode_latencies(lat) end
if cfg.attributes then me.a = attrs end
if cfg.rules then me.r = num(r) end
me.x = x
redis.call('HSET', k.players, player, Parties.party_state(party_id))
if not complete then
  Parties.save_party(k, party)
  add_note(k, Parties.party_players(party, player), Parties.party_update(party), now)
  return { 'JOINED', cjson.encode(Parties.party_view(party)) }
end

-- The last member: the party becomes one ticket, in every world it queues in.
local ticket_id = Players.PARTY_MARK .. party_id
local seq = redis.call('INCR', k.ticket_seq)
local deadline = now + cfg.ticket_ttl
party.state = 'QUEUED'
party.expires = deadline
Parties.save_party(k, party)
redis.call('ZREM', k.party_expiry, party_id)

-- Files the party's ticket in world `c` (its rating there from its members'
-- ratings there); returns the rating shown ("" unrated).
local function file_party(c)
  local ck, ccfg = c.k, c.cfg
  Parties.count_queued_party(ck, 1)
  redis.call('ZADD', ck.queue, seq, ticket_id)
  -- A shared ticket lives as long as the first world's tickets do.
  redis.call('ZADD', ck.deadlines, deadline, ticket_id)
  local rating, lats, stored = nil, {}, {}
  for i, m in ipairs(party.members) do
    local mr, ma, ml = Parties.member_in(party, m, c.world)
    lats[i], stored[i] = { l = ml }, { a = ma }
    if ccfg.rules then
      local v = tonumber(mr)
      if not rating then
        rating = { sum = 0, top = -math.huge }
      end
      rating.sum = rating.sum + v
      if v > rating.top then rating.top = v end
    end
  end
  if rating then
    rating = ccfg.party_rating == 'max' and rating.top or rating.sum / #party.members
    redis.call('ZADD', ck.ratings, num(rating), Players.rating_member(seq, ticket_id))
  end
  c.rating = rating
  if ccfg.regions then Regions.add_regional(c, ticket_id, seq, Regions.party_latencies({ members = lats }), rating) end
  if ccfg.attributes then RuleIndex.add(c, ticket_id, MatchRules.party_attributes(ccfg, stored), seq) end
  if ccfg.anchored then redis.call('ZADD', ck.due, Rated.next_due(ccfg, now), ticket_id) end
  return rating and num(rating) or ''
end

-- Tries the party's ticket in world `c` at once (instant matching): the
-- matches formed and their outbox ids.
local function try_party(c)
  local ccfg = c.cfg
  if not ccfg.instant then return {}, {} end
  if ccfg.anchored then
    local _, more_expired = Tickets.sweep_expired(c, Matching.MATCH_SWEEP_LIMIT)
    if more_expired then return {}, {} end
    local items = Rated.anchored_attempt(c, ticket_id)
    if not items then return {}, {} end
    return Rated.record_rated(c, { items })
  end
  return Fifo.form_matches(c, {
    max_groups = 0, scan = Fifo.INSTANT_SCAN * ccfg.seats, only = ticket_id, parties_queued = 1,
  })
end

local shown_rating = file_party(ctx)
local field = world
if also then
  for _, a in ipairs(also) do
    file_party(a)
    field = field .. ',' .. a.world
  end
end
redis.call('HSET', k.players, ticket_id, Players.encode_ticket(field, seq, now, deadline))

local records, ids = try_party(ctx)
local waiting = Players.waiting_ticket(k, ticket_id) ~= nil
if waiting and also then
  -- Tried in each world in turn; whichever forms a match first takes it
  -- from all.
  for _, a in ipairs(also) do
    records, ids = try_party(a)
    waiting = Players.waiting_ticket(k, ticket_id) ~= nil
    if not waiting then break end
  end
end
local view = cjson.encode(Parties.party_view(party))
if not waiting then
  -- A ready check in any of the party's worlds.
  local p = Proposals.proposal_of(k, 'party', party_id)
  if p then return { 'PROPOSED', Proposals.proposal_view(p) } end
end
if not waiting then
  local reply = { 'MATCHED', view, redis.call('ZCARD', k.queue), shown_rating, #records }
  for _, rec in ipairs(records) do reply[#reply + 1] = rec end
  if args.claim == '1' then
    Outbox.claim_entries(k, ids, { now = now, lease = cfg.claim.lease, young = cfg.claim.young }, reply, #reply)
  end
  return reply
end
add_note(k, Parties.party_players(party, player), Parties.party_update(party), now)
return { 'QUEUED', view, redis.call('ZRANK', k.queue, ticket_id) + 1, redis.call('ZCARD', k.queue), shown_rating }
