-- lease_acquire.lua: take or renew the matcher lease so one matcher loop is
-- active at a time. Correctness never depends on it (every script is atomic,
-- so two matchers cannot double-match); it only avoids wasted work.
--
-- KEYS[1]  lease          STRING holder token, with a PX expiry
--
-- ARGV[1]  holder token
-- ARGV[2]  lease lifetime ms (> 0)
--
-- Reply: 1 when the caller holds the lease now, 0 when someone else does.

if #KEYS ~= 1 then return fail('expected 1 key') end
local token = ARGV[1]
local ttl = int_arg(ARGV[2])
if token == nil or token == '' then return fail('token is empty') end
if ttl == nil or ttl == 0 then return fail('lifetime must be an integer > 0') end
local holder = redis.call('GET', KEYS[1])
if holder and holder ~= token then
  return 0
end
redis.call('SET', KEYS[1], token, 'PX', ttl)
return 1
