-- _backfill_store.lua: a backfill's storage, its fills and, in a world
-- with a ready check, the proposals that hold seats for new players (see
-- _backfill.lua for what a backfill is and how its seats are matched).
-- Loaded before _proposals.lua, which finalizes and cancels those
-- proposals through these functions.
--
-- A backfill proposal is a proposal (_proposals.lua) whose `backfill` names
-- the match, with `parts` (each ticket's addition, without its fill) and
-- `seats` ({ team, size, sum } per ticket); its id is an id of its own. The
-- seats it holds stay taken in the backfill (`pending` lists the
-- proposals); when it is cancelled they open again.
-- @include _lib _lifecycle _parties _players

local BackfillStore = {}
do

local function load_backfill(k, id)
  local raw = redis.call('HGET', k.backfills, id)
  if not raw then return nil end
  return cjson.decode(raw)
end

local function open_seats(b)
  local n = 0
  for _, seats in ipairs(b.open) do n = n + seats end
  return n
end

-- The average rating of the players the backfill's match has now.
local function backfill_ref(b)
  if not b.sums then return nil end
  local sum, n = 0, 0
  for t, s in ipairs(b.sums) do
    sum, n = sum + s, n + b.counts[t]
  end
  if n == 0 then return nil end
  return sum / n
end

-- Stores `b` and files it in its world's indices (`wk`).
local function save_backfill(k, wk, b)
  b.ref = backfill_ref(b)
  redis.call('HSET', k.backfills, b.match, cjson.encode(b))
  redis.call('ZADD', k.backfill_expiry, b.expires, b.world .. '|' .. b.match)
  if redis.call('ZADD', wk.backfill_queue, b.created, b.match) == 1 then
    redis.call('HINCRBY', wk.stats, 'backfills', 1)
  end
  if b.ref then redis.call('ZADD', wk.backfill_ratings, b.ref, b.match) end
end

-- Takes backfill `id` out of its world's indices (`wk`), counted out of
-- the world's backfills (stats field `backfills`: entries of
-- backfill_queue) when it was there.
local function unindex_backfill(wk, id)
  if redis.call('ZREM', wk.backfill_queue, id) == 1 then
    redis.call('HINCRBY', wk.stats, 'backfills', -1)
  end
  -- Rated worlds only: a call in another is not given this key.
  if has(wk, 'backfill_ratings') then redis.call('ZREM', wk.backfill_ratings, id) end
end

-- Deletes backfill `id` of `world` (its world keys `wk`; nil: the index
-- entries are dropped lazily when met, see serve_backfills).
local function drop_backfill(k, wk, world, id)
  redis.call('HDEL', k.backfills, id)
  redis.call('ZREM', k.backfill_expiry, world .. '|' .. id)
  if wk then unindex_backfill(wk, id) end
end

-- One addition (see _lifecycle.lua) without its fill: the ticket's
-- players, team, ratings, data (verbatim JSON) and latencies in the
-- match's region, as the rest of a JSON object ('"players":...}').
local function addition_body(it, b)
  local players, ratings, data, lats = {}, {}, {}, {}
  for j, p in ipairs(it.players) do
    players[j] = quote(p)
    if it.ratings then ratings[j] = num(it.ratings[j]) end
    local d = it.data and it.data[j] or ''
    data[j] = d ~= '' and d or 'null'
    if b.region then
      local own = it.member_lats and it.member_lats[j] and it.member_lats[j][b.region]
      lats[j] = num(own or it.lat[b.region])
    end
  end
  local s = '"players":[' .. table.concat(players, ',') .. '],"team":' .. it.team
    .. ',"data":[' .. table.concat(data, ',') .. ']'
  if it.ratings then s = s .. ',"ratings":[' .. table.concat(ratings, ',') .. ']' end
  if b.region then s = s .. ',"latencies":[' .. table.concat(lats, ',') .. ']' end
  if it.attrs_json then s = s .. ',"attributes":[' .. table.concat(it.attrs_json, ',') .. ']' end
  if it.roles then
    local roles = {}
    for j, r in ipairs(it.roles) do roles[j] = r ~= '' and quote(r) or 'null' end
    s = s .. ',"roles":[' .. table.concat(roles, ',') .. ']'
  end
  return s .. '}'
end

-- Seats the players of `tickets` ({ players } each, out of the queue
-- already) in backfill `b`'s match with their addition `parts`: their
-- states point at the match, the additions grow, one "B|<match>|<fill>"
-- entry tells them; a backfill left without open seats or pending
-- proposals is done. `ctx.k` holds the world's keys. Returns the outbox id.
local function add_fill(ctx, b, tickets, parts)
  local k, now = ctx.k, ctx.now
  b.fills = b.fills + 1
  local states, objects, n = {}, {}, 0
  for i, t in ipairs(tickets) do
    objects[i] = '{"fill":' .. b.fills .. ',' .. parts[i]
    if b.left then
      -- Said once, by the first addition after the request.
      objects[i] = '{"fill":' .. b.fills .. ',"left":' .. cjson.encode(b.left) .. ',' .. parts[i]
      b.left = nil
    end
    for _, p in ipairs(t.players) do
      states[#states + 1] = p
      states[#states + 1] = b.match
      b.members[#b.members + 1] = p
      n = n + 1
    end
  end
  chunked('HSET', k.players, states, 2)
  local life = Lifecycle.load_lifecycle(k, b.match)
  local joined = table.concat(objects, ',')
  life.additions = life.additions == '' and ('[' .. joined .. ']')
    or (string.sub(life.additions, 1, -2) .. ',' .. joined .. ']')
  Lifecycle.save_lifecycle(k, b.match, life)
  if open_seats(b) == 0 and #(b.pending or {}) == 0 then
    drop_backfill(k, k, b.world, b.match)
  else
    save_backfill(k, k, b)
  end
  record_rate(k.stats, now, ctx.cfg.window, n)
  local id = 'B|' .. b.match .. '|' .. b.fills
  outbox_add(k.outbox, { id }, 1, now)
  return id
end

-- Takes `id` out of backfill `b`'s pending proposals.
local function unpend(b, id)
  local kept = {}
  for _, q in ipairs(b.pending or {}) do
    if q ~= id then kept[#kept + 1] = q end
  end
  b.pending = kept
end

-- A cancelled backfill proposal `p`: its seats open again in the backfill,
-- if it still exists (`wk`: the world's keys, nil when gone).
local function release_backfill_seats(k, wk, p)
  local b = load_backfill(k, p.backfill)
  if not b or not wk then return end
  unpend(b, p.id)
  for _, seat in ipairs(p.seats) do
    b.open[seat.team] = b.open[seat.team] + seat.size
    b.counts[seat.team] = b.counts[seat.team] - seat.size
    if b.sums then b.sums[seat.team] = b.sums[seat.team] - seat.sum end
    if b.totals and seat.totals then
      for i, taken in ipairs(seat.totals) do b.totals[i][seat.team] = b.totals[i][seat.team] - taken end
    end
    -- The roles the seats held are open again too.
    local list = b.team_roles and b.team_roles[seat.team]
    for _, r in ipairs(list and seat.roles or {}) do
      for i = #list, 1, -1 do
        if list[i] == r then
          table.remove(list, i)
          break
        end
      end
    end
  end
  save_backfill(k, wk, b)
end

-- Everyone of backfill proposal `p` accepted: its players take their seats
-- in the match, if the backfill is still there (else nil: the caller
-- cancels the proposal). Returns the fill's outbox id.
local function finalize_backfill(ctx, p)
  local k = ctx.k
  local b = load_backfill(k, p.backfill)
  if not b or b.expires <= ctx.now then return nil end
  unpend(b, p.id)
  local tickets = {}
  for i, e in ipairs(p.tickets) do
    tickets[i] = { players = e.p }
    if Players.is_party_ticket(e.t) then Parties.dissolve_party(k, string.sub(e.t, 2), k) end
  end
  return add_fill(ctx, b, tickets, p.parts)
end

-- The module's face: what other files reach as BackfillStore.<name>.
BackfillStore.load_backfill = load_backfill
BackfillStore.open_seats = open_seats
BackfillStore.backfill_ref = backfill_ref
BackfillStore.save_backfill = save_backfill
BackfillStore.unindex_backfill = unindex_backfill
BackfillStore.drop_backfill = drop_backfill
BackfillStore.addition_body = addition_body
BackfillStore.add_fill = add_fill
BackfillStore.unpend = unpend
BackfillStore.release_backfill_seats = release_backfill_seats
BackfillStore.finalize_backfill = finalize_backfill
end
