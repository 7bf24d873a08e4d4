-- _blocks.lua: block lists. A player's avoid list (PUT /v1/avoid/{playerId},
-- avoid_set.lua) is kept as pairs, so that a match can be checked without a
-- key per player (a key discovered inside a script cannot be declared):
--
--   block_pairs  HASH `<lo>\n<hi>` (the two ids in byte order) -> 1 when lo
--                avoids hi, 2 when hi avoids lo, 3 both
--   block_counts HASH player -> pairs the player is in (either side); no
--                field at 0, so HLEN is 0 when nobody avoids anybody
--
-- Two players in one pair are never put in one match or backfill, in any
-- world. Most players are in no pair: one HMGET of counts over the players
-- at hand usually ends a check; otherwise only pairs of two counted players
-- are read. The keys exist in calls of namespaces with block lists only
-- (Features 'b'); without them every check is false at no cost. A party
-- is formed by its members' own choice: pairs inside one ticket are never
-- checked.
-- @include _lib

local Blocks = {}
do

-- The pair field of players `a` and `b`, and the bit that says `a` avoids
-- `b`.
local function pair_field(a, b)
  if a < b then return a .. '\n' .. b, 1 end
  return b .. '\n' .. a, 2
end

-- Whether anyone in the namespace avoids anyone: read once per call.
local function any_blocks(ctx)
  local on = ctx.blocks_on
  if on == nil then
    on = has(ctx.k, 'block_counts') and redis.call('HLEN', ctx.k.block_counts) > 0
    ctx.blocks_on = on
  end
  return on
end

-- What flagged returns when no player is in a pair (never written to).
local NO_PLAYERS = {}

-- The players among `players` who are in some pair, as a list; counts are
-- read once per player and call (ctx.block_flags). Called for every ticket
-- a match is formed from, so it makes no table it does not return.
local function flagged(ctx, players)
  local flags = ctx.block_flags
  if not flags then
    flags = {}
    ctx.block_flags = flags
  end
  local unknown, n = nil, 0
  for _, p in ipairs(players) do
    if flags[p] == nil then
      unknown = unknown or {}
      n = n + 1
      unknown[n] = p
    end
  end
  local i = 1
  while i <= n do
    local last = math.min(i + CHUNK - 1, n)
    local counts = redis.call('HMGET', ctx.k.block_counts, unpack(unknown, i, last))
    for j = i, last do flags[unknown[j]] = counts[j - i + 1] ~= false end
    i = last + 1
  end
  local out = NO_PLAYERS
  for _, p in ipairs(players) do
    if flags[p] then
      if out == NO_PLAYERS then out = {} end
      out[#out + 1] = p
    end
  end
  return out
end

-- Whether a player of `a` and one of `b` (lists of players in some pair,
-- from flagged) are in one pair: one HMGET of their pair fields.
local function paired(ctx, a, b)
  local fields = {}
  for _, x in ipairs(a) do
    for _, y in ipairs(b) do
      if x ~= y then fields[#fields + 1] = pair_field(x, y) end
    end
  end
  local i = 1
  while i <= #fields do
    local last = math.min(i + CHUNK - 1, #fields)
    for _, v in ipairs(redis.call('HMGET', ctx.k.block_pairs, unpack(fields, i, last))) do
      if v then return true end
    end
    i = last + 1
  end
  return false
end

-- Whether any player of `these` and any of `those` (player id lists) are
-- in one pair.
local function blocked_between(ctx, these, those)
  if not any_blocks(ctx) then return false end
  local a = flagged(ctx, these)
  if #a == 0 then return false end
  local b = flagged(ctx, those)
  return #b > 0 and paired(ctx, a, b)
end

-- Whether the players of ticket info `info` and those of the infos `items`
-- are in one pair. Most tickets have no player in any pair: that is found
-- before the others' players are gathered.
local function blocked_with(ctx, info, items)
  if not any_blocks(ctx) then return false end
  local a = flagged(ctx, info.players)
  if #a == 0 then return false end
  -- The others' players were flagged when they were chosen.
  local flags, b = ctx.block_flags, nil
  for _, it in ipairs(items) do
    if it ~= info then
      for _, p in ipairs(it.players) do
        local f = flags[p]
        if f == nil then f = #flagged(ctx, { p }) > 0 end
        if f then
          b = b or {}
          b[#b + 1] = p
        end
      end
    end
  end
  return b ~= nil and paired(ctx, a, b)
end

-- Whether two of the infos `items` (different tickets) hold a pair.
local function blocked_among(ctx, items)
  if not any_blocks(ctx) then return false end
  local before = {}
  for i = 2, #items do
    for _, p in ipairs(items[i - 1].players) do before[#before + 1] = p end
    if blocked_between(ctx, items[i].players, before) then return true end
  end
  return false
end

-- The module's face: what other files reach as Blocks.<name>.
Blocks.pair_field = pair_field
Blocks.any_blocks = any_blocks
Blocks.flagged = flagged
Blocks.blocked_between = blocked_between
Blocks.blocked_with = blocked_with
Blocks.blocked_among = blocked_among
end
