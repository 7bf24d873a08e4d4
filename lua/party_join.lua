-- party_join.lua: an invited player joins a party. When the last one has
-- joined, the party enters its world's queue as ONE ticket (one FIFO
-- position; in a rated world its rating is the members' average or
-- maximum) and, with instant matching, is tried at once like a join. The
-- other members are told (PARTY_UPDATE). Nothing is written unless every
-- check passes.
--
-- KEYS   players ticket_seq match_seq matches match_expiry match_lifecycle outbox
-- KEYS   outbox_meta notes counters parties party_expiry proposals proposal_expiry
-- KEYS   player_ratings player_attributes conns player_conns presence matcher_asleep
-- KEYS   block_pairs block_counts
-- WORLDS the party's world (the world part of the party id), then the world
--        of the player's ticket when it is another (see STALE)
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
local lat, bad_latencies = Regions.joining_latencies(cfg, args.latencies)
if bad_latencies then return fail(bad_latencies) end
if args.attributes ~= '' then
  local bad_attributes = MatchRules.bad_argument(cfg, args.attributes)
  if bad_attributes then return fail(bad_attributes) end
end
local rules = cfg.rules
local now = now_ms()
local ctx = { k = k, world = world, now = now, cfg = cfg, world_of = world_of, attributes = args.attributes }
local party = Parties.load_party(k, party_id)
if not party or party.world ~= world then return { 'NOT_FOUND' } end
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
local size = redis.call('ZCARD', k.queue)
local refusal, r, _, expired, attrs = Admission.admit(ctx, player, lat, claimed, complete and size or nil)
if refusal then return refusal end
local party_attrs = nil
if cfg.attributes then
  local joined_members = {}
  for _, m in ipairs(party.members) do
    if m.j == 1 then joined_members[#joined_members + 1] = m end
  end
  joined_members[#joined_members + 1] = { a = attrs }
  local _, conflict = MatchRules.party_attributes(cfg, joined_members)
  if conflict then return { 'ATTRIBUTES_CONFLICT', world, conflict } end
  me.a = attrs
end
if rules then me.r = num(r) end

-- All checks passed: from here on the script only writes.
if expired then
  -- Past its deadline but not swept yet: it expires now, as the sweep would.
  Tickets.remove_tickets({ k = expired.k, world = expired.world, now = now, world_of = world_of }, { player }, 'X')
  if expired.world == world then size = size - 1 end
end
me.j = 1
me.d = data
if lat then me.l = Regions.encode_latencies(lat) end
redis.call('HSET', k.players, player, Parties.party_state(party_id))
if not complete then
  Parties.save_party(k, party)
  add_note(k, Parties.party_players(party, player), Parties.party_update(party), now)
  return { 'JOINED', cjson.encode(Parties.party_view(party)) }
end

-- The last member: the party becomes one ticket.
local ticket_id = Players.PARTY_MARK .. party_id
local seq = redis.call('INCR', k.ticket_seq)
local deadline = now + cfg.ticket_ttl
party.state = 'QUEUED'
party.expires = deadline
Parties.save_party(k, party)
redis.call('ZREM', k.party_expiry, party_id)
Parties.count_queued_party(k, 1)
redis.call('ZADD', k.queue, seq, ticket_id)
redis.call('ZADD', k.deadlines, deadline, ticket_id)
redis.call('HSET', k.players, ticket_id, Players.encode_ticket(world, seq, now, deadline))
local shown_rating = ''
local rating = nil
if rules then
  local sum, top = 0, -math.huge
  for _, m in ipairs(party.members) do
    local r = tonumber(m.r)
    sum = sum + r
    if r > top then top = r end
  end
  rating = cfg.party_rating == 'max' and top or sum / #party.members
  redis.call('ZADD', k.ratings, num(rating), Players.rating_member(seq, ticket_id))
  shown_rating = num(rating)
end
if cfg.regions then Regions.add_regional(ctx, ticket_id, seq, Regions.party_latencies(party), rating) end
if cfg.attributes then
  party_attrs = MatchRules.party_attributes(cfg, party.members)
  RuleIndex.add(ctx, ticket_id, party_attrs, seq)
end
if cfg.anchored then redis.call('ZADD', k.due, Rated.next_due(cfg, now), ticket_id) end

local records, ids = {}, {}
if cfg.instant then
  if cfg.anchored then
    local _, more_expired = Tickets.sweep_expired(ctx, Matching.MATCH_SWEEP_LIMIT)
    if not more_expired then
      local items = Rated.anchored_attempt(ctx, ticket_id)
      if items then
        records, ids = Rated.record_rated(ctx, { items })
      end
    end
  else
    records, ids = Fifo.form_matches(ctx, {
      max_groups = 0, scan = Fifo.INSTANT_SCAN * cfg.seats, only = ticket_id, parties_queued = 1,
    })
  end
end
local view = cjson.encode(Parties.party_view(party))
local waiting = Players.waiting_ticket(k, ticket_id) ~= nil
if not waiting and cfg.accept then
  local p = Proposals.proposal_of(k, 'party', party_id)
  if p then return { 'PROPOSED', Proposals.proposal_view(p) } end
end
if not waiting then
  local reply = { 'MATCHED', view, redis.call('ZCARD', k.queue), shown_rating, #records }
  for _, r in ipairs(records) do reply[#reply + 1] = r end
  if args.claim == '1' then
    Outbox.claim_entries(k, ids, { now = now, lease = cfg.claim.lease, young = cfg.claim.young }, reply, #reply)
  end
  return reply
end
add_note(k, Parties.party_players(party, player), Parties.party_update(party), now)
return { 'QUEUED', view, redis.call('ZRANK', k.queue, ticket_id) + 1, redis.call('ZCARD', k.queue), shown_rating }
