-- match_result.lua: the game server reports how a match ended
-- (POST /v1/matching/matches/{matchId}/result): stored with the match,
-- once, the participants' ratings updated in the same step, every
-- participant told (MATCH_RESULT, one "R|<match>" outbox entry) and the
-- match FINISHED, which releases its players. The store computes the new
-- ratings from what it read; this script applies them only if nothing it
-- read has changed meanwhile (another result updating the same players, a
-- backfill changing the match), else answers RETRY and writes nothing.
-- A finished match takes no more players: its backfill ends, and the
-- proposals holding its seats in a ready-check world are cancelled, their
-- players requeued at their places (MATCH_CANCELLED, reason BACKFILL_ENDED),
-- rather than asked to accept seats in a game that is over.
--
-- KEYS   players matches match_expiry match_lifecycle outbox notes counters parties
-- KEYS   party_expiry proposals proposal_expiry player_ratings matcher_asleep backfills
-- KEYS   backfill_expiry
-- WORLDS the match's world, when it is still configured (none otherwise:
--        its backfill's proposals then requeue nobody, as in housekeeping)
-- ARGV   match_id    the match id
-- ARGV   result      the result as reported, canonical JSON (ranks)
-- ARGV   changes     the rating changes it makes, JSON ("" for none)
-- ARGV   record_sha  SHA1 of the match the ratings were computed from: its
--                    record, a newline and its additions (_lifecycle.lua)
-- ARGV   ratings     JSON: { "<world>|<player>": [ value read (null: none), new value ] }
--
-- Reply: a status, then exactly that status's fields:
--   FINISHED, record_json, lifecycle   stored, ratings updated, players told
--   ALREADY, record_json, lifecycle    the same result was stored already
--   CONFLICT, lifecycle                another result is stored
--   RETRY                              what the ratings were computed from changed
--   NOT_FOUND                          no such match, or its record expired
-- (lifecycle: see _lifecycle.lua)

local id, result = args.match_id, args.result
if id == '' then return fail('match id is empty') end
if string.find(result, '\n', 1, true) then return fail('result must be one line') end
local ok, decoded = pcall(cjson.decode, result)
if not ok or type(decoded) ~= 'table' then return fail('result must be a JSON object') end
if string.find(args.changes, '\n', 1, true) then return fail('changes must be one line') end
local ok_r, ratings = pcall(cjson.decode, args.ratings)
if not ok_r or type(ratings) ~= 'table' then return fail('ratings must be a JSON object') end
for field, change in pairs(ratings) do
  if type(field) ~= 'string' or type(change) ~= 'table' or type(change[2]) ~= 'string' then
    return fail('ratings must map fields to [read, new]')
  end
end
local now = now_ms()
local record = Lifecycle.live_record(k, id, now)
if not record then return { 'NOT_FOUND' } end
local life = Lifecycle.load_lifecycle(k, id)
if life.result ~= '' then
  if life.result == result then return { 'ALREADY', record, Lifecycle.encode_lifecycle(life) } end
  return { 'CONFLICT', Lifecycle.encode_lifecycle(life) }
end
-- The match as the ratings were computed from it: the record and the
-- players backfills added.
if redis.sha1hex(record .. '\n' .. life.additions) ~= args.record_sha then return { 'RETRY' } end
for field, change in pairs(ratings) do
  local current = redis.call('HGET', k.player_ratings, field)
  local read = change[1]
  if read == cjson.null then read = false end
  if current ~= read then return { 'RETRY' } end
end

-- Everything it was computed from holds: from here on only writes.
for field, change in pairs(ratings) do
  redis.call('HSET', k.player_ratings, field, change[2])
end
life.state, life.since, life.result, life.changes = 'FINISHED', now, result, args.changes
local backfill = BackfillStore.load_backfill(k, id)
if backfill then
  Backfill.end_backfill({ k = world_of(backfill.world), world = backfill.world, now = now }, k, backfill)
end
Lifecycle.save_lifecycle(k, id, life)
outbox_add(k.outbox, { 'R|' .. id }, 1, now)
return { 'FINISHED', record, Lifecycle.encode_lifecycle(life) }
