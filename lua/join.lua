-- join.lua: put a player in a world's queue (at most one state per player in
-- the whole namespace: see _players.lua) and, when instant matching is on
-- and the queue holds a full group, form the match in the same atomic step.
--
-- KEYS   players ticket_seq match_seq matches match_expiry match_lifecycle outbox
-- KEYS   outbox_meta notes counters parties party_expiry proposals proposal_expiry
-- KEYS   player_ratings player_attributes conns player_conns presence matcher_asleep
-- KEYS   backfills backfill_expiry block_pairs block_counts
-- WORLDS the joined world, the other worlds joined with it (a queueGroup's;
--        as many as `also` describes), then the worlds of the player's
--        ticket when they are others (the store learns them from a STALE
--        answer) and, in a grouped world, the rest of its group
-- ARGV   player   the player id
-- ARGV   data     ticket data JSON, "" for none (already validated and size-capped)
-- ARGV   claimed  the rating from the caller's verified token claim, a plain
--                 decimal ("" for none)
-- ARGV   latencies the player's latency to each region, "name=ms,..."
--                  (worlds with regions; "" for none)
-- ARGV   attributes the player's client attributes as the store encodes them
--                  (worlds with attributes; "" for none; see _match_rules.lua)
-- ARGV   config   the joined world's configuration (see _config.lua)
-- ARGV   claim    "1": claim the outbox entries of matches formed, for the
--                 caller to deliver at once; "0": leave them to the matcher
-- REST   also     per other world joined (world blocks 2, 3, ...): its
--                 configuration, then the player's client attributes there
--
-- One ticket may wait in several worlds of a queueGroup: it is admitted by
-- every one (any refusal refuses the join), filed in each at one sequence,
-- and tried in each in order; the first match takes it from all (see
-- _tickets.lua leave_other_worlds).
--
-- A rated world's rating is, in this order: the ratings store's entry for
-- this world, its entry for every world ("*"), the token claim, the default.
--
-- Reply: a status, then exactly that status's fields:
--   QUEUED, world, position, queue_size, window_players, window_span_ms,
--           rating ("" in FIFO worlds), connections (the player's
--           space-separated connection ids, for the QUEUED push), also
--           (the other worlds joined, comma-separated; "" for none)
--   MATCHED, world, queue_size, rating, match_count, match_json...,
--           claimed_entry...: the join formed matches (one holds the
--           player); with `claim`, their outbox entries follow, claimed for
--           delivery at once (see _outbox.lua claim_entries)
--   BACKFILLED, match_json, lifecycle, claimed_entry...: the player took a
--           seat of a running match's backfill (see _backfill.lua); with
--           `claim`, its outbox entry follows, claimed for delivery at once
--   PROPOSED, proposal_json: the join made a match proposal (a ready check)
--           holding the player (see _proposals.lua proposal_view)
--   STALE, world: the player holds a ticket of `world`, whose keys were not
--           given; nothing was written (the caller joins again with that
--           world's keys too, or, when the world is no longer configured,
--           drops that ticket with drop_stale_ticket.lua first)
--   or a refusal of admit (_admission.lua: ALREADY_QUEUED, PROPOSAL_PENDING,
--   IN_PARTY, COOLING_DOWN, IN_MATCH, QUEUE_FULL, NOT_CONNECTED,
--   LATENCY_REQUIRED, RATING_REQUIRED, INVALID_RATING, ATTRIBUTES_REQUIRED)
-- Every status but QUEUED, MATCHED and BACKFILLED writes nothing. window_* are the
-- world's wait statistics (see _lib.lua wait_estimate). A ticket past its
-- deadline counts as gone: it is swept (TICKET_EXPIRED) and the join goes
-- ahead.

local player, data, claimed = args.player, args.data, args.claimed
local cfg, bad_config = Config.world_config(args.config)
if player == '' then return fail('player id is empty') end
if not cfg then return fail(bad_config) end
local bad_claimed = Lifecycle.bad_claim(claimed)
if bad_claimed then return fail(bad_claimed) end
if args.claim ~= '0' and args.claim ~= '1' then return fail('claim must be 0 or 1') end
-- Latencies of a ticket joining several worlds are for those with regions.
local lat, bad_latencies = Regions.joining_latencies(cfg, (#rest == 0 or cfg.regions) and args.latencies or '')
if bad_latencies then return fail(bad_latencies) end
if args.attributes ~= '' then
  local bad_attributes = MatchRules.bad_argument(cfg, args.attributes)
  if bad_attributes then return fail(bad_attributes) end
end
local world = worlds[1]
local now = now_ms()
-- The first world's context (see _joining.lua): every field is named here,
-- so the table is sized once (growing it field by field would rehash it on
-- every join).
local ctx = {
  k = k, world = world, now = now, cfg = cfg, world_of = world_of, attributes = args.attributes, lat = lat,
  stats = false, size = 0, rating = false, shown = '', attrs = '', attempt = false,
}
-- The other worlds joined with the first (nil for none): their contexts.
local also = nil
if #rest > 0 then
  local n = #rest / 2
  if #rest % 2 ~= 0 or n >= #worlds then return fail('also must be a configuration and attributes per world') end
  if not cfg.group then return fail('only worlds of a queueGroup are joined together') end
  also = {}
  for i = 1, n do
    local c, bad = Config.world_config(rest[2 * i - 1])
    if not c then return fail(bad) end
    local name, text = worlds[i + 1], rest[2 * i]
    local in_group = false
    for _, w in ipairs(cfg.group) do
      if w == name then in_group = true end
    end
    if not in_group then return fail('world ' .. name .. ' is not in the queueGroup of ' .. world) end
    for j = 1, i do
      if worlds[j] == name then return fail('world ' .. name .. ' joined twice') end
    end
    local l, bad_l = Regions.joining_latencies(c, c.regions and args.latencies or '')
    if bad_l then return fail(bad_l) end
    if text ~= '' then
      bad = MatchRules.bad_argument(c, text)
      if bad then return fail(bad) end
    end
    also[i] = { k = world_keys(i + 1), world = name, now = now, cfg = c, world_of = world_of, attributes = text, lat = l }
  end
end

ctx.stats = world_stats(k.stats)
ctx.size = redis.call('ZCARD', k.queue)
local refusal, expired, _
refusal, ctx.rating, ctx.shown, expired, ctx.attrs = Admission.admit(ctx, player, lat, claimed, ctx.size)
if refusal then return refusal end
local field = world
if also then
  for _, a in ipairs(also) do
    a.stats = world_stats(a.k.stats)
    a.size = redis.call('ZCARD', a.k.queue)
    refusal, a.rating, a.shown, _, a.attrs = Admission.admit(a, player, a.lat, claimed, a.size)
    if refusal then return refusal end
    field = field .. ',' .. a.world
  end
end

-- All checks passed: from here on the script only writes.
if expired then
  -- Past its deadline but not swept yet: it expires now, as the sweep would.
  Tickets.remove_tickets({ k = expired.k, world = expired.world, now = now, world_of = world_of }, { player }, 'X')
  -- A shared ticket left every world it waited in: count the queues again.
  ctx.size = redis.call('ZCARD', k.queue)
  if also then
    for _, a in ipairs(also) do a.size = redis.call('ZCARD', a.k.queue) end
  end
end
local seq = redis.call('INCR', k.ticket_seq)
local seq_text, deadline_text = Players.int_text(seq), Players.int_text(now + cfg.ticket_ttl)

Joining.file_ticket(ctx, player, data, seq_text, deadline_text)
redis.call('HSET', k.players, player, Players.ticket_of_texts(field, seq_text, Players.int_text(now), deadline_text))
if also then
  for _, a in ipairs(also) do Joining.file_ticket(a, player, data, seq_text, deadline_text) end
end

local claim = args.claim == '1'
local reply, changed = Joining.try_world(ctx, player, data, seq, claim)
if reply then return reply end
if also then
  -- The shared ticket is tried in each world in turn; whichever forms a
  -- match first takes it from all. Position and size are read back in the
  -- first world (matches elsewhere may have taken tickets from it).
  for _, a in ipairs(also) do
    reply = Joining.try_world(a, player, data, seq, claim)
    if reply then return reply end
  end
  changed = true
end
-- The new ticket has the highest sequence, so it is last: rank `size`. The
-- reply is computed rather than read back, to keep the hot path short.
local conns = redis.call('HGET', k.player_conns, player) or ''
local others = also and string.sub(field, #world + 2) or ''
if changed then
  local wp, ws = wait_stats(k.stats, now, cfg.window)
  return {
    'QUEUED', world, redis.call('ZRANK', k.queue, player) + 1, redis.call('ZCARD', k.queue), wp, ws,
    ctx.shown, conns, others,
  }
end
local wp, ws = wait_estimate(ctx.stats, now, cfg.window)
return { 'QUEUED', world, ctx.size + 1, ctx.size + 1, wp, ws, ctx.shown, conns, others }
