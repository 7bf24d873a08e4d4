-- match_record.lua: a match record while it lives (GET /v1/matching/matches/{id}),
-- with what happened to the match since (its lifecycle: assignment, result).
--
-- KEYS   matches match_expiry match_lifecycle
-- ARGV   match_id  the match id
--
-- Reply: { match_json, lifecycle } while the record lives (lifecycle: see
-- _lifecycle.lua), { } otherwise (the sweep deletes expired records in
-- batches; none is shown past its time).

local id = args.match_id
if id == '' then return fail('match id is empty') end
local record = live_record(k, id, now_ms())
if not record then return {} end
return { record, encode_lifecycle(load_lifecycle(k, id)) }
