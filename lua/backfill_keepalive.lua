-- backfill_keepalive.lua: the server renews its match's backfill (POST
-- /v1/matching/matches/{matchId}/backfill/keepalive): it lives `keepalive`
-- ms more. A backfill that lapsed (even before housekeeping swept it) or
-- was cancelled or filled is not renewed.
--
-- KEYS   backfills backfill_expiry
-- ARGV   match_id   the match id
-- ARGV   keepalive  ms it lives from now (> 0)
--
-- Reply: a status, then exactly that status's fields:
--   RENEWED, backfill_json
--   NOT_FOUND          no open backfill for that match

local id = args.match_id
local keepalive = int_arg(args.keepalive)
if id == '' then return fail('match id is empty') end
if not keepalive or keepalive < 1 then return fail('keepalive must be an integer > 0') end
local now = now_ms()
local b = BackfillStore.load_backfill(k, id)
if not b or b.expires <= now then return { 'NOT_FOUND' } end
b.expires = now + keepalive
redis.call('HSET', k.backfills, id, cjson.encode(b))
redis.call('ZADD', k.backfill_expiry, b.expires, b.world .. '|' .. id)
return { 'RENEWED', cjson.encode(b) }
