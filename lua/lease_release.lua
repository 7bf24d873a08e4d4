-- lease_release.lua: give the matcher lease back if the caller still holds it.
--
-- KEYS   matcher_lease
-- ARGV   token    holder token
--
-- Reply: 1 when released, 0 when the caller did not hold it.

if args.token == '' then return fail('token is empty') end
if redis.call('GET', k.matcher_lease) == args.token then
  return redis.call('DEL', k.matcher_lease)
end
return 0
