-- backfill_cancel.lua: the server cancels its match's backfill (DELETE
-- /v1/matching/matches/{matchId}/backfill); seats filled so far stay,
-- proposals holding seats (ready checks) are cancelled and their tickets
-- requeued at their places.
--
-- KEYS   players outbox notes counters parties party_expiry proposals proposal_expiry
-- KEYS   matcher_asleep backfills backfill_expiry
-- WORLDS the backfill's world (the store reads it from the match record)
-- ARGV   match_id   the match id
--
-- Reply: a status, then exactly that status's fields:
--   CANCELLED, backfill_json   (as it was)
--   OTHER_WORLD, world         the backfill is of `world` (the store asks again)
--   NOT_FOUND                  no open backfill for that match

local id = args.match_id
if id == '' then return fail('match id is empty') end
local b = BackfillStore.load_backfill(k, id)
if not b or b.expires <= now_ms() then return { 'NOT_FOUND' } end
if b.world ~= worlds[1] then return { 'OTHER_WORLD', b.world } end
Backfill.end_backfill({ k = k, world = b.world, now = now_ms(), world_of = world_of }, k, b)
return { 'CANCELLED', cjson.encode(b) }
