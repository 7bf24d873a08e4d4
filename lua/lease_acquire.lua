-- lease_acquire.lua: take or renew the matcher lease so one matcher loop is
-- active at a time. Correctness never depends on it (every script is atomic,
-- so two matchers cannot double-match); it only avoids wasted work.
--
-- KEYS   matcher_lease matcher_asleep
-- ARGV   token    holder token
-- ARGV   ttl      lease lifetime ms (> 0)
--
-- Reply: 1 when the caller holds the lease now, 0 when someone else does.

local token = args.token
local ttl = int_arg(args.ttl)
if token == '' then return fail('token is empty') end
if ttl == nil or ttl == 0 then return fail('lifetime must be an integer > 0') end
local holder = redis.call('GET', k.matcher_lease)
if holder and holder ~= token then
  return 0
end
redis.call('SET', k.matcher_lease, token, 'PX', ttl)
-- A running matcher is awake, whoever started it (a wake-up or its schedule).
redis.call('DEL', k.matcher_asleep)
return 1
