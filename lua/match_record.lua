-- match_record.lua: a match record while it lives (GET /v1/matching/matches/{id}).
--
-- KEYS   matches match_expiry
-- ARGV   match_id  the match id
--
-- Reply: { match_json } while the record lives, { } otherwise (the sweep
-- deletes expired records in batches; none is shown past its time).

local id = args.match_id
if id == '' then return fail('match id is empty') end
local expires = tonumber(redis.call('ZSCORE', k.match_expiry, id))
if not expires or expires <= now_ms() then
  return {}
end
local record = redis.call('HGET', k.matches, id)
if not record then
  return {}
end
return { record }
