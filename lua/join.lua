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
-- The first world is joined here, its state in locals and its context
-- holding only what the library reads (the hot path: a join into one
-- world, which costs what it did before tickets could wait in several;
-- docs/benchmark.md row 10). The other worlds go through _joining.lua,
-- which does for each what this file does for the first (a change to one
-- is a change to both).
local ctx = { k = k, world = world, now = now, cfg = cfg, world_of = world_of, attributes = args.attributes }
-- The other worlds joined with the first (nil for none): their contexts.
local also = nil
if #rest > 0 then
  if #rest % 2 ~= 0 then return fail('also must be a configuration and attributes per world') end
  local bad_also
  also, bad_also = Admission.other_worlds(ctx, worlds, rest, #rest / 2, args.latencies)
  if bad_also then return fail(bad_also) end
end

local stats = world_stats(k.stats)
local size = redis.call('ZCARD', k.queue)
local refusal, rating, shown, expired, attrs = Admission.admit(ctx, player, lat, claimed, size)
if refusal then return refusal end
shown = shown or ''
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
  size = redis.call('ZCARD', k.queue)
  if also then
    for _, a in ipairs(also) do a.size = redis.call('ZCARD', a.k.queue) end
  end
end
local seq = redis.call('INCR', k.ticket_seq)
local seq_text, deadline_text = Players.int_text(seq), Players.int_text(now + cfg.ticket_ttl)

-- The ticket is filed in the first world as Joining.file_ticket files it
-- in the others (the same writes, in the same order). Parties (tickets of
-- several seats) and teams need the general matching.
local rules, seats, teams = cfg.rules, cfg.seats, cfg.teams
local general = teams > 1 or cfg.accept ~= nil or stats.parties > 0
local attempt = cfg.instant and (general or size + 1 >= seats)
redis.call('ZADD', k.queue, seq_text, player)
-- A shared ticket lives as long as the first world's tickets do.
redis.call('ZADD', k.deadlines, deadline_text, player)
Players.set_ticket_data(ctx, player, data)
if rules then redis.call('ZADD', k.ratings, shown, Players.rating_member(seq, player)) end
if cfg.regions then Regions.add_regional(ctx, player, seq, lat, rating) end
if cfg.attributes then RuleIndex.add(ctx, player, attrs, seq) end
-- The matcher sleeps only with every queue empty, and every script that
-- files a ticket wakes it: a ticket waiting here means it is awake.
if size == 0 then wake_matcher() end
-- An attempt that fails schedules the anchor itself (retry_later).
if cfg.anchored and not attempt then
  redis.call('ZADD', k.due, Rated.next_due(cfg, now), player)
end
redis.call('HSET', k.players, player, Players.ticket_of_texts(field, seq_text, Players.int_text(now), deadline_text))
if also then
  for _, a in ipairs(also) do Joining.file_ticket(a, player, data, seq_text, deadline_text) end
end

-- The first world's attempt, as Joining.try_world makes it in the others.
local claim = args.claim == '1'
-- Whether the queue changed but for the join (a sweep, others matched).
local changed = false
-- Open backfills take a joiner that fits before any new match forms.
if cfg.instant and stats.backfills > 0 then
  local joiner = {
    ticket = player, size = 1, players = { player }, data = { data }, lat = lat,
    ratings = rating and { rating } or nil, sum = rating or 0, rating = rating,
    attrs_text = attrs, attrs = cfg.attributes and MatchRules.decode_stored(attrs, cfg.attributes.by_name),
  }
  local entry, match_id = Backfill.backfill_joiner(ctx, joiner)
  if entry == '' then
    -- A ready check: the seat is held by a proposal to the player.
    local p = Proposals.proposal_of(k, Players.player_state(redis.call('HGET', k.players, player)))
    if p then return { 'PROPOSED', Proposals.proposal_view(p) } end
  elseif entry then
    local reply = {
      'BACKFILLED', redis.call('HGET', k.matches, match_id), Lifecycle.encode_lifecycle(Lifecycle.load_lifecycle(k, match_id)),
    }
    if claim then
      Outbox.claim_entries(k, { entry }, { now = now, lease = cfg.claim.lease, young = cfg.claim.young }, reply, 3)
    end
    return reply
  end
end
if attempt then
  local records, ids, still_queued = {}, {}, true
  local unchanged = false
  if cfg.anchored then
    -- One attempt with the joiner as the anchor (window: the base), unless
    -- too few tickets lie in its window to fill the match at all.
    local items = nil
    local more_expired = false
    local fits = cfg.regions or not rules
      or Rated.rated_may_match(ctx, rating, 0, seats - 1, stats.parties > 0 and seats / teams or 1)
    if fits then
      local _
      _, more_expired = Tickets.sweep_expired(ctx, Matching.MATCH_SWEEP_LIMIT)
    end
    if not fits or more_expired then
      Rated.retry_later(ctx, player)
      unchanged = not fits and stats.backfills == 0
    else
      items = Rated.anchored_attempt(ctx, player, {
        seq = seq, rating = rating, joined = now, data = data, lat = lat, attrs = attrs,
      })
      if items then
        records, ids = Rated.record_rated(ctx, { items })
      end
    end
    if items and (teams > 1 or cfg.accept) then
      -- Packed teams and proposals are recorded by the general path.
      still_queued = Players.waiting_ticket(k, player) ~= nil
    else
      -- The joiner passed the presence check: only a match takes its ticket.
      still_queued = items == nil
    end
  else
    records, ids = Fifo.form_matches(ctx, {
      max_groups = 0, scan = Fifo.INSTANT_SCAN * seats, only = player, parties_queued = stats.parties,
    })
    still_queued = Players.waiting_ticket(k, player) ~= nil
  end
  if not still_queued and cfg.accept then
    local p = Proposals.proposal_of(k, Players.player_state(redis.call('HGET', k.players, player)))
    if p then return { 'PROPOSED', Proposals.proposal_view(p) } end
  end
  if not still_queued then
    local reply = { 'MATCHED', world, redis.call('ZCARD', k.queue), shown, #records }
    local n = 5
    for _, r in ipairs(records) do
      n = n + 1
      reply[n] = r
    end
    if claim then
      Outbox.claim_entries(k, ids, { now = now, lease = cfg.claim.lease, young = cfg.claim.young }, reply, n)
    end
    return reply
  end
  changed = not unchanged and (#records > 0 or size + 1 ~= redis.call('ZCARD', k.queue))
end
if also then
  -- The shared ticket is tried in each world in turn; whichever forms a
  -- match first takes it from all. Position and size are read back in the
  -- first world (matches elsewhere may have taken tickets from it).
  for _, a in ipairs(also) do
    local reply = Joining.try_world(a, player, data, seq, claim)
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
    shown, conns, others,
  }
end
local wp, ws = wait_estimate(stats, now, cfg.window)
return { 'QUEUED', world, size + 1, size + 1, wp, ws, shown, conns, others }
