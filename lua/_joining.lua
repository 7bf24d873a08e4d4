-- _joining.lua: what a join does in each world of a queueGroup it files a
-- ticket in beside the first: file the ticket, then try to match it at
-- once. join.lua runs these once per other world; it joins the first world
-- itself, with the same writes in the same order, its state in locals (the
-- join into one world is the hot path: docs/benchmark.md row 10), so a
-- change here is a change there too. They live here, not in the
-- operation, so a join makes no closures, and the ticket's fields are
-- arguments, not table fields.
--
-- c: the world's context { k, world, now, cfg, world_of, stats, size (the
-- queue's size before the join), rating, shown (its text), lat, attrs,
-- attempt (set by file_ticket) }.
-- @include _lib _backfill _fifo _lifecycle _match_rules _matching _outbox _players _proposals _rated _regions _rule_index _tickets

local Joining = {}
do

-- Files `player`'s ticket in world `c` at sequence `seq_text` with the
-- deadline `deadline_text`, and tells whether its instant attempt is to be
-- made (c.attempt): parties (tickets of several seats) and teams need the
-- general matching.
local function file_ticket(c, player, data, seq_text, deadline_text)
  local ck, ccfg, now = c.k, c.cfg, c.now
  local seq = nil
  if ccfg.rules or ccfg.regions or ccfg.attributes then seq = tonumber(seq_text) end
  c.shown = c.shown or ''
  local general = ccfg.teams > 1 or ccfg.accept ~= nil or c.stats.parties > 0
  c.attempt = ccfg.instant and (general or c.size + 1 >= ccfg.seats)
  redis.call('ZADD', ck.queue, seq_text, player)
  -- A shared ticket lives as long as the first world's tickets do.
  redis.call('ZADD', ck.deadlines, deadline_text, player)
  Players.set_ticket_data(c, player, data)
  if ccfg.rules then redis.call('ZADD', ck.ratings, c.shown, Players.rating_member(seq, player)) end
  if ccfg.regions then Regions.add_regional(c, player, seq, c.lat, c.rating) end
  if ccfg.attributes then RuleIndex.add(c, player, c.attrs, seq) end
  -- The matcher sleeps only with every queue empty, and every script that
  -- files a ticket wakes it: a ticket waiting here means it is awake.
  if c.size == 0 then wake_matcher() end
  -- An attempt that fails schedules the anchor itself (retry_later).
  if ccfg.anchored and not c.attempt then
    redis.call('ZADD', ck.due, Rated.next_due(ccfg, now), player)
  end
end

-- The reply of a join that took the player out of the queue in world `c`
-- (a match, a proposal or a backfill seat), or nil while it still waits;
-- and whether the world's queue changed otherwise (a sweep or others
-- matched ahead).
local function try_world(c, player, data, seq, claim)
  local now = c.now
  local ck, ccfg, stats, rating = c.k, c.cfg, c.stats, c.rating
  local seats, teams, rules = ccfg.seats, ccfg.teams, ccfg.rules
  -- Open backfills take a joiner that fits before any new match forms.
  if ccfg.instant and stats.backfills > 0 then
    local joiner = {
      ticket = player, size = 1, players = { player }, data = { data }, lat = c.lat,
      ratings = rating and { rating } or nil, sum = rating or 0, rating = rating,
      attrs_text = c.attrs, attrs = ccfg.attributes and MatchRules.decode_stored(c.attrs, ccfg.attributes.by_name),
    }
    local entry, match_id = Backfill.backfill_joiner(c, joiner)
    if entry == '' then
      -- A ready check: the seat is held by a proposal to the player.
      local p = Proposals.proposal_of(ck, Players.player_state(redis.call('HGET', ck.players, player)))
      if p then return { 'PROPOSED', Proposals.proposal_view(p) } end
    elseif entry then
      local reply = {
        'BACKFILLED', redis.call('HGET', ck.matches, match_id), Lifecycle.encode_lifecycle(Lifecycle.load_lifecycle(ck, match_id)),
      }
      if claim then
        Outbox.claim_entries(ck, { entry }, { now = now, lease = ccfg.claim.lease, young = ccfg.claim.young }, reply, 3)
      end
      return reply
    end
  end
  if not c.attempt then return nil, false end
  local records, ids, still_queued = {}, {}, true
  local unchanged = false
  if ccfg.anchored then
    -- One attempt with the joiner as the anchor (window: the base), unless
    -- too few tickets lie in its window to fill the match at all.
    local items = nil
    local more_expired = false
    local fits = ccfg.regions or not rules
      or Rated.rated_may_match(c, rating, 0, seats - 1, stats.parties > 0 and seats / teams or 1)
    if fits then
      local _
      _, more_expired = Tickets.sweep_expired(c, Matching.MATCH_SWEEP_LIMIT)
    end
    if not fits or more_expired then
      Rated.retry_later(c, player)
      unchanged = not fits and stats.backfills == 0
    else
      items = Rated.anchored_attempt(c, player, {
        seq = seq, rating = rating, joined = now, data = data, lat = c.lat, attrs = c.attrs,
      })
      if items then
        records, ids = Rated.record_rated(c, { items })
      end
    end
    if items and (teams > 1 or ccfg.accept) then
      -- Packed teams and proposals are recorded by the general path.
      still_queued = Players.waiting_ticket(ck, player) ~= nil
    else
      -- The joiner passed the presence check: only a match takes its ticket.
      still_queued = items == nil
    end
  else
    records, ids = Fifo.form_matches(c, {
      max_groups = 0, scan = Fifo.INSTANT_SCAN * seats, only = player, parties_queued = stats.parties,
    })
    still_queued = Players.waiting_ticket(ck, player) ~= nil
  end
  if not still_queued and ccfg.accept then
    local p = Proposals.proposal_of(ck, Players.player_state(redis.call('HGET', ck.players, player)))
    if p then return { 'PROPOSED', Proposals.proposal_view(p) } end
  end
  if not still_queued then
    local reply = { 'MATCHED', c.world, redis.call('ZCARD', ck.queue), c.shown, #records }
    local n = 5
    for _, r in ipairs(records) do
      n = n + 1
      reply[n] = r
    end
    if claim then
      Outbox.claim_entries(ck, ids, { now = now, lease = ccfg.claim.lease, young = ccfg.claim.young }, reply, n)
    end
    return reply
  end
  return nil, not unchanged and (#records > 0 or c.size + 1 ~= redis.call('ZCARD', ck.queue))
end

-- The module's face: what other files reach as Joining.<name>.
Joining.file_ticket = file_ticket
Joining.try_world = try_world
end
