-- match_record.lua: a match record while it lives (GET /v1/matching/matches/{id}),
-- with what happened to the match since (its lifecycle: assignment, result)
-- and its open backfill (what the game server sees).
--
-- KEYS   matches match_expiry match_lifecycle backfills
-- ARGV   match_id  the match id
--
-- Reply: { match_json, lifecycle, backfill_json } while the record lives
-- (lifecycle: see _lifecycle.lua; backfill_json: its open backfill, see
-- _backfill.lua, "" for none), { } otherwise (the sweep deletes expired
-- records in batches; none is shown past its time).

local id = args.match_id
if id == '' then return fail('match id is empty') end
local now = now_ms()
local record = Lifecycle.live_record(k, id, now)
if not record then return {} end
local backfill = redis.call('HGET', k.backfills, id)
if backfill and cjson.decode(backfill).expires <= now then backfill = false end
return { record, Lifecycle.encode_lifecycle(Lifecycle.load_lifecycle(k, id)), backfill or '' }
