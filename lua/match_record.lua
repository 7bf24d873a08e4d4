-- match_record.lua: a match record while it lives (GET /v1/matching/matches/{id}).
--
-- KEYS[1]  matches        HASH match id -> match record JSON
-- KEYS[2]  match_expiry   ZSET match id -> expiry ms
--
-- ARGV[1]  match id
--
-- Reply: { match_json } while the record lives, { } otherwise (the sweep
-- deletes expired records in batches; none is shown past its time).

if #KEYS ~= 2 then return fail('expected 2 keys') end
local id = ARGV[1]
if id == nil or id == '' then return fail('match id is empty') end
local expires = tonumber(redis.call('ZSCORE', KEYS[2], id))
if not expires or expires <= now_ms() then
  return {}
end
local record = redis.call('HGET', KEYS[1], id)
if not record then
  return {}
end
return { record }
