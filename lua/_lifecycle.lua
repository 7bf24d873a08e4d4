-- _lifecycle.lua: what happens to a match after it formed. A match is
-- FORMED (its record; `match_lifecycle` has no entry), then ASSIGNED (the
-- studio's allocator named a server: match_assign.lua), then FINISHED (the
-- game server reported its result: match_result.lua; a result may come
-- without an assignment), and lives as long as its record (housekeeping
-- deletes both).
--
-- match_lifecycle: HASH match id -> five lines, "<state> <since_ms>",
-- the assignment JSON, the result JSON (as reported), the rating changes
-- JSON and the additions (each "" while absent): the players backfills
-- added (_backfill.lua), a JSON array of { players, team, fill, left?
-- (the players who had left by then, on the first addition after a
-- backfill request), data (verbatim ticket data JSON or null per player),
-- ratings?, latencies? }
-- built by concatenation, so ticket data is never re-encoded. The JSON documents come from the
-- store, canonical (the same content is the same string), and are kept
-- verbatim: comparing them tells an identical repeat from a different
-- report, and nothing is re-encoded (cjson would round numbers).
-- @include _lib

local Lifecycle = {}
do

local function load_lifecycle(k, id)
  local raw = redis.call('HGET', k.match_lifecycle, id)
  if not raw then
    return { state = 'FORMED', since = 0, assignment = '', result = '', changes = '', additions = '' }
  end
  local state, since, assignment, result, changes, additions =
    string.match(raw, '^(%u+) (%d+)\n([^\n]*)\n([^\n]*)\n([^\n]*)\n([^\n]*)$')
  return {
    state = state or 'FORMED', since = tonumber(since) or 0, assignment = assignment or '',
    result = result or '', changes = changes or '', additions = additions or '',
  }
end

local function encode_lifecycle(life)
  return life.state .. ' ' .. life.since .. '\n' .. life.assignment .. '\n' .. life.result .. '\n'
    .. life.changes .. '\n' .. life.additions
end

-- The match's participants: its record's, then those its backfills added
-- (`record`: the decoded record).
local function match_players(record, life)
  local out = {}
  for i, p in ipairs(record.participants) do out[i] = p end
  if life.additions ~= '' then
    for _, a in ipairs(cjson.decode(life.additions)) do
      for _, p in ipairs(a.players) do out[#out + 1] = p end
    end
  end
  return out
end

local function save_lifecycle(k, id, life)
  redis.call('HSET', k.match_lifecycle, id, encode_lifecycle(life))
end

-- The record of match `id` while it lives, else nil (the sweep deletes
-- expired records in batches; none is used past its time).
local function live_record(k, id, now)
  local expires = tonumber(redis.call('ZSCORE', k.match_expiry, id))
  if not expires or expires <= now then return nil end
  return redis.call('HGET', k.matches, id)
end

-- The lifecycle of the match `id` a player's state points at while that
-- match is unfinished, else nil. Unfinished: ASSIGNED (the game is on) and,
-- where game servers are configured (`formed_holds`), FORMED too (its
-- server is yet to be named), until its result or its record's end. A
-- player holds a seat in at most one unfinished match: admission
-- (_admission.lua) refuses a new place meanwhile, so a match formed before
-- another is assigned can never share a player with it.
local function unfinished_match(k, id, now, formed_holds)
  local raw = redis.call('HGET', k.match_lifecycle, id)
  local state = raw and string.match(raw, '^(%u+) ') or 'FORMED'
  if state ~= 'ASSIGNED' and not (state == 'FORMED' and formed_holds) then return nil end
  local expires = tonumber(redis.call('ZSCORE', k.match_expiry, id))
  if not expires or expires <= now then return nil end
  return raw or encode_lifecycle(load_lifecycle(k, id))
end

-- A claimed rating (the caller's token claim, as Rust writes an f64) must
-- be a plain decimal: tonumber alone would also take hex, exponents,
-- spaces, "nan" and "inf", which Redis and Rust read otherwise. The
-- message, or nil when the claim is fine or absent ("").
local function bad_claim(claimed)
  if claimed ~= '' and not string.find(claimed, '^%-?%d+%.?%d*$') then
    return 'claimed rating is not a plain decimal number'
  end
  return nil
end

-- The rating text of a ratings-store entry: a number, or "<value> <mean>
-- <uncertainty> <games>[ <volatility>]" once results have updated it (see
-- match_result.lua), whose value matching uses. nil for none.
local function stored_rating_text(stored)
  return stored and string.match(stored, '^%S+')
end

-- A joining player's rating in `world`, from the first source that has
-- one: the ratings store's entry for this world, its entry for every world
-- ("*"), the claim (checked by bad_claim), the configured default. Returns
-- the number and the text its source wrote it in, which a join passes on
-- (to ZADD, to its reply) instead of formatting the number again: float
-- formatting is one of a join's largest costs. Every source writes a plain
-- decimal that Redis, Lua and Rust read as the same number (rating_set.lua
-- and the default: num; match_result.lua and the claim: Rust's f64). nil
-- when no source has one.
local function joining_rating(k, world, player, claimed, cfg)
  local stored = redis.call('HMGET', k.player_ratings, world .. '|' .. player, '*|' .. player)
  for i = 1, 2 do
    local text = stored_rating_text(stored[i])
    local v = tonumber(text)
    if v then return v, text end
  end
  local v = tonumber(claimed)
  if v then return v, claimed end
  return cfg.default_rating, cfg.default_rating_text
end

-- The module's face: what other files reach as Lifecycle.<name>.
Lifecycle.load_lifecycle = load_lifecycle
Lifecycle.encode_lifecycle = encode_lifecycle
Lifecycle.match_players = match_players
Lifecycle.save_lifecycle = save_lifecycle
Lifecycle.live_record = live_record
Lifecycle.unfinished_match = unfinished_match
Lifecycle.bad_claim = bad_claim
Lifecycle.stored_rating_text = stored_rating_text
Lifecycle.joining_rating = joining_rating
end
