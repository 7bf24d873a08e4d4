-- _admission.lua: who may take a new place in a world (a ticket, or a seat
-- in a party): the one gate join.lua, party_create.lua and party_join.lua
-- pass a player through, so an admission rule is written once and every
-- route refuses alike.
--
-- admit(ctx, player, lat, claimed, queue_size): nil when `player` may take
-- a place in ctx's world, else the refusal reply. ctx: { k, world, now,
-- cfg, world_of } of the world joined (world_of: the operation's accessor,
-- for the world of a ticket the player holds elsewhere); lat: the joining
-- latencies (nil for none); claimed: the claimed rating text; queue_size:
-- the world's queue size when a new ticket would enter it now (nil: no
-- capacity check; positional, not a table: a join makes no garbage for
-- it); ctx.attributes: the player's client attributes as the store
-- encodes them ("" or nil for none; see _match_rules.lua joining). On
-- admission it also returns:
--   rating, rating_text   rated worlds: the player's rating and the text its
--                         source wrote (joining_rating)
--   expired               the player's ticket past its deadline but not
--                         swept yet, { k = its world's keys, world = name },
--                         for the caller to remove before writing
--   attrs                 worlds with attributes: the player's attributes
--                         as stored (client and trusted, defaults applied)
--
-- Refusals, a status named like the API's error code, then exactly its
-- fields (the same on every route; shared/src/domain/outcome.rs Rejection
-- decodes them):
--   ALREADY_QUEUED, world, position, queue_size, window_players, window_span_ms,
--                   also   the player holds a live ticket of `world` (and of
--                   the worlds `also` names, comma-separated: "" for none)
--   PROPOSAL_PENDING, proposal_json   the player (or their party) is in a
--                   pending ready check (_proposals.lua proposal_view)
--   IN_PARTY, party_id, world         the player belongs to a party
--   COOLING_DOWN, retry_after_ms      the player declined or missed a ready check
--   IN_MATCH, match_id, lifecycle     the player's match is unfinished
--                   (unfinished_match, _lifecycle.lua)
--   QUEUE_FULL, world, queue_size     the queue is at capacity
--   NOT_CONNECTED, world              presence required, no live connection
--   LATENCY_REQUIRED, world           regions, no latencies, no default region
--   RATING_REQUIRED, world            a rated world and no rating from any source
--   INVALID_RATING, world, rating     the rating found is outside [min, max]
--   ATTRIBUTES_REQUIRED, world, name  an attribute that must be set (missing:
--                   refuse) has no value from its source
-- and STALE, world: the player holds a ticket of `world`, whose keys the
-- call was not given (the store calls again with them; see store/admission.rs).
-- Nothing is written either way.
--
-- other_worlds(ctx, worlds, rest, n, latencies): the other worlds of ctx's
-- queueGroup a ticket joins with it, worlds[2..n+1], each described in
-- `rest` by its configuration and the player's client attributes there
-- (rest[2i-1], rest[2i]): their contexts (as ctx, with lat and
-- attributes; nil for none), or nil and why the arguments are wrong (a
-- world outside the group, one twice, a bad configuration, latencies or
-- attributes).
-- @include _lib _config _lifecycle _match_rules _parties _players _proposals _regions

local Admission = {}
do

-- Where a player stands (`state`: their players-hash value), as a refusal,
-- or nil (and their expired ticket). Without `player`, only whether the
-- state keeps its player from a new place matters (an invited member's
-- check): a live ticket is then { 'ALREADY_QUEUED', world } alone.
local function admit_state(ctx, state, player)
  local k, now = ctx.k, ctx.now
  local kind, value = Players.player_state(state)
  if kind == 'ticket' then
    local other, _, _, deadline, all = Players.decode_ticket(value)
    if not player then
      if deadline > now then return { 'ALREADY_QUEUED', other } end
      return nil
    end
    local wk = ctx.world_of(other)
    if not wk then return { 'STALE', other or '' } end
    if all ~= other then
      -- A ticket shared by several worlds: the call needs all their keys.
      for _, w in ipairs(Players.ticket_worlds(all)) do
        if not ctx.world_of(w) then return { 'STALE', w } end
      end
    end
    if deadline > now then
      local rank = redis.call('ZRANK', wk.queue, player)
      local wp, ws = wait_stats(wk.stats, now, ctx.cfg.window)
      local also = all ~= other and string.sub(all, #other + 2) or ''
      return { 'ALREADY_QUEUED', other, (rank or -1) + 1, redis.call('ZCARD', wk.queue), wp, ws, also }
    end
    return nil, { k = wk, world = other }
  elseif kind == 'party' or kind == 'proposal' then
    local p = Proposals.proposal_of(k, kind, value)
    if p then return { 'PROPOSAL_PENDING', Proposals.proposal_view(p) } end
    if kind == 'party' then
      -- A party that is gone holds nobody.
      local party = Parties.load_party(k, value)
      if party then return { 'IN_PARTY', value, party.world } end
    end
  elseif kind == 'cooldown' and value > now then
    return { 'COOLING_DOWN', value - now }
  elseif kind == 'match' then
    local life = Lifecycle.unfinished_match(k, value, now, ctx.cfg.formed_holds)
    if life then return { 'IN_MATCH', value, life } end
  end
  return nil
end

-- Whether an invited member's state (`state`) keeps them from a party.
local function member_busy(ctx, state)
  return admit_state(ctx, state) ~= nil
end

local function admit(ctx, player, lat, claimed, queue_size)
  local refusal, expired = admit_state(ctx, redis.call('HGET', ctx.k.players, player), player)
  if refusal then return refusal end
  local cfg, world = ctx.cfg, ctx.world
  if queue_size and cfg.capacity > 0 and queue_size >= cfg.capacity then
    return { 'QUEUE_FULL', world, queue_size }
  end
  if cfg.presence and not is_present(ctx.k.presence, player, ctx.now) then return { 'NOT_CONNECTED', world } end
  if cfg.regions and not lat then return { 'LATENCY_REQUIRED', world } end
  local rating, text = nil, nil
  if cfg.rules then
    rating, text = Lifecycle.joining_rating(ctx.k, world, player, claimed, cfg)
    if not rating then return { 'RATING_REQUIRED', world } end
    if rating < cfg.min_rating or rating > cfg.max_rating then
      return { 'INVALID_RATING', world, num(rating) }
    end
  end
  if not cfg.attributes then return nil, rating, text, expired, '' end
  local attrs, required, bad = MatchRules.joining(ctx, player, ctx.attributes or '')
  if bad then return fail(bad) end
  if required then return { 'ATTRIBUTES_REQUIRED', world, required } end
  return nil, rating, text, expired, attrs
end

local function other_worlds(ctx, worlds, rest, n, latencies)
  local cfg, out = ctx.cfg, {}
  if n == 0 then return nil end
  if n >= #worlds then return nil, 'more worlds described than given' end
  if not cfg.group then return nil, 'only worlds of a queueGroup are joined together' end
  for i = 1, n do
    local c, bad = Config.world_config(rest[2 * i - 1])
    if not c then return nil, bad end
    local name, text = worlds[i + 1], rest[2 * i]
    local in_group = false
    for _, w in ipairs(cfg.group) do
      if w == name then in_group = true end
    end
    if not in_group then return nil, 'world ' .. name .. ' is not in the queueGroup of ' .. ctx.world end
    for j = 1, i do
      if worlds[j] == name then return nil, 'world ' .. name .. ' joined twice' end
    end
    local l, bad_l = Regions.joining_latencies(c, c.regions and latencies or '')
    if bad_l then return nil, bad_l end
    if text ~= '' then
      bad = MatchRules.bad_argument(c, text)
      if bad then return nil, bad end
    end
    out[i] = { k = ctx.world_of(name), world = name, now = ctx.now, cfg = c, world_of = ctx.world_of, attributes = text, lat = l }
  end
  return out
end

-- The module's face: what other files reach as Admission.<name>.
Admission.admit_state = admit_state
Admission.member_busy = member_busy
Admission.admit = admit
Admission.other_worlds = other_worlds
end
