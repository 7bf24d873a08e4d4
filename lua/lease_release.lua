-- lease_release.lua: give the matcher lease back if the caller still holds it.
--
-- KEYS[1]  lease          STRING holder token
--
-- ARGV[1]  holder token
--
-- Reply: 1 when released, 0 when the caller did not hold it.

if #KEYS ~= 1 then return fail('expected 1 key') end
if ARGV[1] == nil or ARGV[1] == '' then return fail('token is empty') end
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
